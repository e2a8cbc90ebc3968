//! The runner's typed state and its one text boundary.
//!
//! Run states, sub-task phases, decision kinds, stakes and run events are
//! enums everywhere in the runner; the store and the wire hold them as text.
//! This module is the only place that spells that text: every conversion
//! both ways is here, with a round-trip test, so a typo cannot compile and a
//! new phase is one variant added here.
//!
//! - this file: run states, stakes, decision kinds, phases, close reasons,
//!   recovery steps;
//! - `event`: run events and their kinds;
//! - `rows`: the typed rows the runner works on, read from and written
//!   to the store's text rows.

use std::fmt;

use serde::{Deserialize, Serialize};
use tessera_bindings::task::Status;

/// A stored word this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {text:?}")]
pub struct UnknownWord {
    /// What kind of word (run state, phase, …).
    pub what: &'static str,
    /// The text found.
    pub text: String,
}

macro_rules! words {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The word as stored and sent.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// Reads the stored word.
            pub fn parse(text: &str) -> Result<Self, UnknownWord> {
                match text {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(UnknownWord { what: $what, text: text.to_owned() }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownWord;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

mod event;
mod gate;
mod ids;
mod rows;
mod spend;

pub use event::{EventKind, Fields, RunEvent};
pub use gate::{Decider, Gate, Gates, outlasted};
pub use ids::RunId;
pub use rows::{Pending, Progress, RowError, Run};
pub use spend::Spend;

words!(
    /// Where a run stands.
    RunState, "run state", {
        /// Stored, waiting for approval or edits.
        Proposed => "proposed",
        /// Approved; sub-tasks are created and settled.
        Running => "running",
        /// Waiting for a recovery decision (retry, change executor, cancel).
        Paused => "paused",
        /// Closing: no new sub-tasks; what is in flight settles.
        Cancelling => "cancelling",
        /// Every sub-task paid.
        Completed => "completed",
        /// Stopped by the user.
        Cancelled => "cancelled",
        /// Stopped for another reason (a refunded dispute).
        Failed => "failed",
    }
);

impl RunState {
    /// States in which a driver works on the run.
    pub const LIVE: [Self; 3] = [Self::Running, Self::Paused, Self::Cancelling];

    /// Whether a driver works on a run in this state.
    pub fn is_live(self) -> bool {
        Self::LIVE.contains(&self)
    }

    /// The states a run ends in.
    pub const ENDED: [Self; 3] = [Self::Completed, Self::Cancelled, Self::Failed];

    /// Whether a run in this state has ended.
    pub fn is_ended(self) -> bool {
        Self::ENDED.contains(&self)
    }

    /// The stored words of `states`.
    pub fn words(states: &[Self]) -> Vec<&'static str> {
        states.iter().map(|s| s.as_str()).collect()
    }
}

words!(
    /// A plan's stakes: a high-stakes run needs a confirmation to approve.
    Stakes, "stakes", {
        /// The default.
        Low => "low",
        /// Manual review and a typed confirmation.
        High => "high",
    }
);

words!(
    /// What a user decided about a running plan.
    DecisionKind, "decision kind", {
        /// Approve and pay a delivered sub-task.
        Approve => "approve",
        /// Dispute a delivered sub-task.
        Dispute => "dispute",
        /// Run a sub-task again with its executor.
        Retry => "retry",
        /// Give a sub-task to another executor.
        Executor => "executor",
        /// Appeal a ruling.
        Appeal => "appeal",
        /// Stop the plan.
        Cancel => "cancel",
        /// Pass a checkpoint.
        Pass => "checkpoint_approve",
        /// Stop at a checkpoint: the run closes.
        Stop => "checkpoint_reject",
    }
);

impl DecisionKind {
    /// What a decision that sent its transaction did, in one word
    /// (`approved`, `disputed`, `appealed`, …).
    pub fn done(self) -> &'static str {
        match self {
            Self::Approve => "approved",
            Self::Dispute => "disputed",
            Self::Retry => "retried",
            Self::Executor => "reassigned",
            Self::Appeal => "appealed",
            Self::Cancel => "cancelling",
            Self::Pass => "passed",
            Self::Stop => "stopped",
        }
    }
}

/// What came of a decision; its text form ([`fmt::Display`]) is the
/// `outcome` the store keeps and the `decision_applied` event sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It did what it was for (`approved`, `disputed`, `cancelling`, …).
    Done(DecisionKind),
    /// The task went to `executor` with a fresh deadline.
    Reassigned {
        /// The executor it went to.
        executor: alloy::primitives::Address,
        /// The new deadline (chain seconds).
        deadline: u64,
    },
    /// A new attempt was queued.
    Queued {
        /// The attempt queued.
        attempt: u32,
    },
    /// It did not apply when it was taken.
    Ignored(Ignored),
    /// It failed: its transaction was refused, or it could not be carried
    /// out.
    Failed {
        /// Why.
        error: String,
        /// The contract's decoded refusal, when the chain refused.
        revert: Option<String>,
    },
}

impl Outcome {
    /// Whether it worked (anything but a failure).
    pub fn ok(&self) -> bool {
        !matches!(self, Self::Failed { .. })
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Done(kind) => f.write_str(kind.done()),
            Self::Reassigned { executor, deadline } => {
                write!(f, "reassigned to {executor} until {deadline}")
            }
            Self::Queued { attempt } => write!(f, "attempt {attempt} queued"),
            Self::Ignored(why) => write!(f, "ignored: {why}"),
            Self::Failed { error, .. } => write!(f, "failed: {error}"),
        }
    }
}

/// Why a decision did not apply when it was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    /// The sub-task is past (or not yet at) where the decision acts.
    NotApplicable {
        /// What was decided.
        kind: DecisionKind,
        /// Where the sub-task stood.
        phase: Phase,
    },
    /// The checkpoint was decided already.
    CheckpointDecided {
        /// The checkpoint.
        name: String,
        /// Its state (`approved`, `rejected`).
        state: &'static str,
    },
    /// The checkpoint was not reached yet.
    CheckpointNotReached {
        /// The checkpoint.
        name: String,
    },
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotApplicable { kind, phase } => {
                write!(f, "{kind} does not apply to a sub-task that is {phase}")
            }
            Self::CheckpointDecided { name, state } => write!(f, "checkpoint {name} is {state}"),
            Self::CheckpointNotReached { name } => {
                write!(f, "checkpoint {name} is not reached yet")
            }
        }
    }
}

/// Where one sub-task stands: not created yet, skipped, or the on-chain
/// status of its current attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not created yet (waits for its dependencies, or for a new attempt).
    Waiting,
    /// Never created: the run closed first.
    Skipped,
    /// The current attempt's status on chain.
    Chain(Status),
}

impl Phase {
    /// The word as stored and sent: `waiting`, `skipped`, or the status in
    /// lower case (`created`, `paid`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Waiting => "waiting",
            Self::Skipped => "skipped",
            Self::Chain(s) => match s {
                Status::None => "none",
                Status::Created => "created",
                Status::Accepted => "accepted",
                Status::Completed => "completed",
                Status::Disputed => "disputed",
                Status::Ruled => "ruled",
                Status::Appealed => "appealed",
                Status::Paid => "paid",
                Status::Refunded => "refunded",
                Status::Split => "split",
                Status::Cancelled => "cancelled",
                Status::Expired => "expired",
                Status::Declined => "declined",
            },
        }
    }

    /// Reads the stored word.
    pub fn parse(text: &str) -> Result<Self, UnknownWord> {
        match text {
            "waiting" => Ok(Self::Waiting),
            "skipped" => Ok(Self::Skipped),
            _ => Status::ALL
                .iter()
                .map(|s| Self::Chain(*s))
                .find(|p| p.as_str() == text)
                .ok_or_else(|| UnknownWord { what: "phase", text: text.to_owned() }),
        }
    }

    /// The on-chain status, once created.
    pub fn status(self) -> Option<Status> {
        match self {
            Self::Chain(s) => Some(s),
            _ => None,
        }
    }

    /// Paid in whole or in part: dependants may start.
    pub fn is_paid(self) -> bool {
        matches!(self, Self::Chain(Status::Paid | Status::Split))
    }

    /// Holds escrowed money.
    pub fn in_flight(self) -> bool {
        matches!(
            self,
            Self::Chain(
                Status::Created
                    | Status::Accepted
                    | Status::Completed
                    | Status::Disputed
                    | Status::Ruled
                    | Status::Appealed
            )
        )
    }

    /// Over for good: skipped, or settled with the money moved (paid,
    /// split, refunded). Expired, cancelled and declined attempts may be
    /// retried.
    pub fn is_settled(self) -> bool {
        matches!(self, Self::Skipped | Self::Chain(Status::Paid | Status::Split | Status::Refunded))
    }

    /// Ended without delivery (expired, cancelled, or declined by its
    /// executor on chain): needs a decision, or the plan's recovery policy.
    pub fn is_stuck(self) -> bool {
        matches!(self, Self::Chain(Status::Expired | Status::Cancelled | Status::Declined))
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The reason a run closes or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// The user cancelled, the plan's policy cancelled, or a pause timed
    /// out.
    Cancelled,
    /// A dispute ended in a full refund: the plan cannot go on.
    DisputeRefunded,
    /// An approver (or a checkpoint's timeout) rejected checkpoint `.0`.
    CheckpointRejected(String),
    /// Proposed, and approved by nobody before the proposal expired
    /// (`tessera serve --proposal-ttl-secs`).
    ProposalExpired,
}

impl CloseReason {
    /// Reads a stored reason (`cancelled`, `dispute_refunded`,
    /// `checkpoint <name> rejected`).
    pub fn parse(text: &str) -> Result<Self, UnknownWord> {
        match text {
            "cancelled" => Ok(Self::Cancelled),
            "dispute_refunded" => Ok(Self::DisputeRefunded),
            "proposal expired" => Ok(Self::ProposalExpired),
            other => other
                .strip_prefix("checkpoint ")
                .and_then(|rest| rest.strip_suffix(" rejected"))
                .map(|name| Self::CheckpointRejected(name.to_owned()))
                .ok_or_else(|| UnknownWord { what: "close reason", text: text.to_owned() }),
        }
    }

    /// The state a run closed for this reason ends in.
    pub fn final_state(&self) -> RunState {
        match self {
            Self::Cancelled | Self::ProposalExpired => RunState::Cancelled,
            Self::DisputeRefunded | Self::CheckpointRejected(_) => RunState::Failed,
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cancelled => f.write_str("cancelled"),
            Self::DisputeRefunded => f.write_str("dispute_refunded"),
            Self::CheckpointRejected(name) => write!(f, "checkpoint {name} rejected"),
            Self::ProposalExpired => f.write_str("proposal expired"),
        }
    }
}

impl Serialize for CloseReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CloseReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Why a run waits for a person: what happened and what to decide, in
/// words (`sub-task 0 attempt 1: expired; retry, change executor or
/// cancel`). Kept apart from a [`CloseReason`]: a pause is answered, a
/// close is final.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PauseReason(pub String);

impl fmt::Display for PauseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for PauseReason {
    fn from(text: String) -> Self {
        Self(text)
    }
}

/// Why a run moves to a state, when it needs a reason: a pause's, or a
/// close's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The run waits for a person.
    Pause(PauseReason),
    /// The run closes, or closed.
    Close(CloseReason),
}

/// The step a `recovery_applied` event names: what the runner did on its
/// own about a sub-task that ended without delivery (or whose reference was
/// taken). Its text form (`retry(2)`, `retry(2) then reassign`,
/// `reassign`, …) is the event's `policy` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecoveryStep {
    /// The plan's policy closes the run.
    Cancel,
    /// The same executor again (`retry(n)`).
    Retry(u32),
    /// Retries used up: the next executor (`retry(n) then reassign`).
    RetryThenReassign(u32),
    /// The next executor the selection policy picks.
    Reassign,
    /// A lost dispute: another executor.
    RetryOther,
    /// A dependant's attempt ended before its upstream delivered: funded
    /// again with its upstream's next attempt.
    AwaitUpstream,
    /// The reference was used outside this run: a new attempt.
    NewReference,
}

impl RecoveryStep {
    /// The recovery a plan's `policy` gives when it does not retry (any
    /// more): a reassignment, named after the policy it replaces.
    pub fn reassigning(policy: crate::plan::Policy, dispute_lost: bool) -> Self {
        match policy {
            _ if dispute_lost => Self::RetryOther,
            crate::plan::Policy::Retry(n) => Self::RetryThenReassign(n),
            _ => Self::Reassign,
        }
    }

    /// Reads the text form.
    pub fn parse(text: &str) -> Result<Self, UnknownWord> {
        let unknown = || UnknownWord { what: "recovery", text: text.to_owned() };
        let retries = |s: &str| {
            s.strip_prefix("retry(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|n| n.parse::<u32>().ok())
        };
        Ok(match text {
            "cancel" => Self::Cancel,
            "reassign" => Self::Reassign,
            "retry_other" => Self::RetryOther,
            "await upstream" => Self::AwaitUpstream,
            "new reference" => Self::NewReference,
            other => match other.strip_suffix(" then reassign") {
                Some(retry) => Self::RetryThenReassign(retries(retry).ok_or_else(unknown)?),
                None => Self::Retry(retries(other).ok_or_else(unknown)?),
            },
        })
    }
}

impl fmt::Display for RecoveryStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cancel => f.write_str("cancel"),
            Self::Retry(n) => write!(f, "retry({n})"),
            Self::RetryThenReassign(n) => write!(f, "retry({n}) then reassign"),
            Self::Reassign => f.write_str("reassign"),
            Self::RetryOther => f.write_str("retry_other"),
            Self::AwaitUpstream => f.write_str("await upstream"),
            Self::NewReference => f.write_str("new reference"),
        }
    }
}

impl Serialize for RecoveryStep {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RecoveryStep {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use alloy::primitives::{Address, B256};
    use serde_json::json;
    use tessera_bindings::usdc::Usdc;

    use super::*;
    use crate::store::SubtaskRow;

    #[test]
    fn every_word_round_trips() {
        for s in RunState::ALL {
            assert_eq!(RunState::parse(s.as_str()), Ok(*s));
        }
        for k in DecisionKind::ALL {
            assert_eq!(k.as_str().parse::<DecisionKind>(), Ok(*k));
        }
        for k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Ok(*k));
        }
        for s in Stakes::ALL {
            assert_eq!(Stakes::parse(s.as_str()), Ok(*s));
        }
        let mut phases = vec![Phase::Waiting, Phase::Skipped];
        phases.extend(Status::ALL.iter().map(|s| Phase::Chain(*s)));
        for p in phases {
            assert_eq!(Phase::parse(p.as_str()), Ok(p));
            let json = serde_json::to_value(p).unwrap();
            assert_eq!(serde_json::from_value::<Phase>(json).unwrap(), p);
        }
        assert_eq!(Phase::Chain(Status::Paid).as_str(), "paid");
        assert!(RunState::parse("runing").is_err());
        assert!(Phase::parse("Paid").is_err());
        let row = SubtaskRow {
            idx: 1,
            attempt: 2,
            executor: Address::repeat_byte(7).to_string(),
            phase: "split".into(),
            task_id: Some("12".into()),
            result_uri: None,
            output: Some("text".into()),
        };
        assert_eq!(Progress::from_row(&row).unwrap().to_row(), row);
        assert!(Progress::from_row(&SubtaskRow { phase: "paied".into(), ..row }).is_err());
        for r in [
            RecoveryStep::Cancel,
            RecoveryStep::Retry(2),
            RecoveryStep::RetryThenReassign(1),
            RecoveryStep::Reassign,
            RecoveryStep::RetryOther,
            RecoveryStep::AwaitUpstream,
            RecoveryStep::NewReference,
        ] {
            assert_eq!(RecoveryStep::parse(&r.to_string()), Ok(r));
        }
        assert_eq!(RecoveryStep::RetryThenReassign(2).to_string(), "retry(2) then reassign");
        assert!(RecoveryStep::parse("retry(x)").is_err());
        for r in ["cancelled", "dispute_refunded", "checkpoint review rejected", "proposal expired"]
        {
            assert_eq!(CloseReason::parse(r).unwrap().to_string(), r);
        }
        assert_eq!(
            CloseReason::parse("checkpoint review rejected"),
            Ok(CloseReason::CheckpointRejected("review".into()))
        );
        assert!(CloseReason::parse("other").is_err());
        assert_eq!(CloseReason::ProposalExpired.final_state(), RunState::Cancelled);
    }

    #[test]
    fn events_keep_their_wire_shape() {
        let plan_id = crate::plan::PlanId::from(B256::repeat_byte(1));
        let ev = RunEvent::DecisionApplied {
            plan_id,
            index: Some(2),
            decision: DecisionKind::Retry,
            outcome: "failed: refused".into(),
            ok: false,
            error: Some("refused".into()),
            revert: Some("TaskEscrowTooEarly(..)".into()),
        };
        let body = ev.to_body();
        assert_eq!(
            body,
            json!({"kind": "decision_applied", "plan_id": plan_id, "index": 2, "decision": "retry",
                   "outcome": "failed: refused", "ok": false, "error": "refused",
                   "revert": "TaskEscrowTooEarly(..)"})
        );
        assert_eq!(RunEvent::from_body(&body.to_string()).unwrap(), ev);
        let ok = RunEvent::DecisionApplied {
            plan_id,
            index: None,
            decision: DecisionKind::Cancel,
            outcome: "cancelling".into(),
            ok: true,
            error: None,
            revert: None,
        };
        assert_eq!(ok.to_body()["ok"], true);
        assert!(ok.to_body().get("error").is_none());

        let mut fields = Fields::new();
        fields.insert("index".into(), json!(0));
        fields.insert("tx_hash".into(), json!("0xab"));
        for kind in EventKind::ALL {
            let Some(ev) = RunEvent::from_chain(*kind, fields.clone()) else { continue };
            assert_eq!(ev.kind(), *kind);
            let body = ev.to_body();
            assert_eq!(body["kind"], kind.as_str());
            assert_eq!(body["tx_hash"], "0xab");
            assert_eq!(RunEvent::from_body(&body.to_string()).unwrap(), ev);
        }
        let done = RunEvent::PlanCompleted {
            plan_id,
            subtasks: 2,
            total_cost: Usdc::from_base_units(5),
            paid: Usdc::from_base_units(5),
            refunded: Usdc::from_base_units(1),
        };
        assert_eq!(done.to_body()["kind"], "plan_completed");
        assert_eq!(done.to_body()["total_cost"], "5");
        assert_eq!(done.to_body()["refunded"], "1");
        assert!(done.kind().is_final());
        assert_eq!(RunEvent::from_body(&done.to_body().to_string()).unwrap(), done);
    }
}
