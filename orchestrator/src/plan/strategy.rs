//! A plan's execution strategy beside its graph: checkpoints where the run
//! waits for an approver, recovery policies for work nobody does in time or
//! a lost dispute, and how executors are chosen (and why).

use std::{fmt, str::FromStr};

use alloy::primitives::Address;
use serde::{Deserialize, Serialize};
use tessera_bindings::usdc::Usdc;

use super::PlanError;

/// Most checkpoints a plan may hold.
pub const MAX_CHECKPOINTS: usize = 16;
/// Most automatic retries a `retry(n)` policy may ask for.
pub const MAX_RETRIES: u32 = 5;

/// A gate after given sub-tasks: once they are all paid the run pauses
/// (`checkpoint_reached`, with the outputs so far) until an approver
/// approves (the run goes on) or rejects (the run closes), or the timeout
/// applies its policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// A short name, unique in the plan (`compliance_review`).
    pub name: String,
    /// The sub-tasks it follows (indexes); it is reached once all are paid.
    pub after: Vec<u32>,
    /// Seconds an approver has; none means the run's decision timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// What the timeout does.
    #[serde(default)]
    pub on_timeout: OnTimeout,
}

/// What a checkpoint's timeout does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// The run goes on as if approved.
    Approve,
    /// The run closes as if rejected.
    Reject,
    /// The run stays paused for a person (`checkpoint_escalated`); the
    /// run's decision timeout then cancels it.
    #[default]
    Escalate,
}

/// What the runner does on its own when a sub-task's attempt ends without
/// delivery, or a dispute is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Recovery {
    /// Nobody accepted before the deadline.
    #[serde(default)]
    pub on_decline: Policy,
    /// Accepted, but not delivered before the deadline.
    #[serde(default)]
    pub on_expiry: Policy,
    /// A dispute ended in a full refund.
    #[serde(default)]
    pub on_dispute_lost: DisputePolicy,
}

/// A recovery step for work not done in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Run it again with the same executor, at most `n` times, then pause.
    Retry(u32),
    /// Give it to the next executor the selection policy picks (within
    /// budget), then pause when there is none.
    Reassign,
    /// Wait for a person (retry, change executor or cancel).
    #[default]
    Pause,
    /// Close the run.
    Cancel,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retry(n) => write!(f, "retry({n})"),
            Self::Reassign => f.write_str("reassign"),
            Self::Pause => f.write_str("pause"),
            Self::Cancel => f.write_str("cancel"),
        }
    }
}

impl FromStr for Policy {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || PlanError::InvalidPolicy(s.chars().take(40).collect());
        match s.trim() {
            "reassign" => Ok(Self::Reassign),
            "pause" => Ok(Self::Pause),
            "cancel" => Ok(Self::Cancel),
            other => {
                let n = other
                    .strip_prefix("retry(")
                    .and_then(|r| r.strip_suffix(')'))
                    .and_then(|n| n.trim().parse::<u32>().ok())
                    .ok_or_else(bad)?;
                if n == 0 || n > MAX_RETRIES {
                    return Err(bad());
                }
                Ok(Self::Retry(n))
            }
        }
    }
}

impl Serialize for Policy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// What a lost dispute does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DisputePolicy {
    /// Run the sub-task again with another executor.
    RetryOther,
    /// The run fails (today's behaviour).
    #[default]
    Fail,
}

/// A sub-task's own recovery, over the plan's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RecoveryOverride {
    /// Nobody accepted before the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_decline: Option<Policy>,
    /// Accepted, but not delivered before the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_expiry: Option<Policy>,
    /// A dispute ended in a full refund.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_dispute_lost: Option<DisputePolicy>,
}

impl Recovery {
    /// The plan's recovery with a sub-task's `over`rides applied.
    pub fn with(self, over: Option<&RecoveryOverride>) -> Self {
        let Some(o) = over else { return self };
        Self {
            on_decline: o.on_decline.unwrap_or(self.on_decline),
            on_expiry: o.on_expiry.unwrap_or(self.on_expiry),
            on_dispute_lost: o.on_dispute_lost.unwrap_or(self.on_dispute_lost),
        }
    }
}

/// How the orchestrator picks an executor where the plan leaves the choice
/// to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// The lowest price.
    Cheapest,
    /// The best record, price aside.
    Reliable,
    /// Record and price weighed together.
    #[default]
    Balanced,
}

/// Why an executor was chosen for a sub-task, and who came next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The sub-task.
    pub index: u32,
    /// The policy that chose.
    pub policy: Selection,
    /// The executor chosen.
    pub executor: Address,
    /// Its price.
    #[serde(with = "tessera_bindings::usdc::as_integer")]
    pub price: Usdc,
    /// Its score, in basis points (0–10000).
    pub score_bps: u32,
    /// Why, in words.
    pub reason: String,
    /// The best of the others, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_up: Option<RunnerUp>,
    /// The chosen agent showed no sign of life in the last day (no task
    /// accepted, delivered or declined): nobody better was seen working.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quiet: bool,
}

/// The executor that came second.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerUp {
    /// The agent.
    pub executor: Address,
    /// Its price.
    #[serde(with = "tessera_bindings::usdc::as_integer")]
    pub price: Usdc,
    /// Its score, in basis points.
    pub score_bps: u32,
    /// Why it lost, in words.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_and_write_as_words() {
        for (text, p) in [
            ("retry(2)", Policy::Retry(2)),
            ("reassign", Policy::Reassign),
            ("pause", Policy::Pause),
            ("cancel", Policy::Cancel),
        ] {
            assert_eq!(text.parse::<Policy>().unwrap(), p);
            assert_eq!(p.to_string(), text);
            assert_eq!(serde_json::to_value(p).unwrap(), text);
        }
        for bad in ["retry(0)", "retry(6)", "retry", "retry(x)", "again", ""] {
            assert!(bad.parse::<Policy>().is_err(), "{bad:?}");
        }
        let plan = Recovery::default();
        assert_eq!(plan.on_decline, Policy::Pause);
        let over = RecoveryOverride { on_decline: Some(Policy::Retry(2)), ..Default::default() };
        let mixed = plan.with(Some(&over));
        assert_eq!((mixed.on_decline, mixed.on_expiry), (Policy::Retry(2), Policy::Pause));
        let json: Recovery = serde_json::from_str(r#"{"on_expiry": "reassign"}"#).unwrap();
        assert_eq!(json.on_expiry, Policy::Reassign);
        assert_eq!(json.on_dispute_lost, DisputePolicy::Fail);
    }
}
