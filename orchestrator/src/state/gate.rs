//! Where a run's checkpoints stand: reached (the run waits for an
//! approver), escalated (its timeout passed it to a person), approved or
//! rejected, and by whom.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Who passed or stopped a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// An approver's decision.
    Approver,
    /// The checkpoint's timeout policy.
    Timeout,
}

impl Decider {
    /// The word as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approver => "approver",
            Self::Timeout => "timeout",
        }
    }
}

/// One checkpoint of a run, once reached. `at` is wall-clock
/// milliseconds, as the run's own times, for people to read; a wait is
/// measured in chain seconds from `chain_at` (the head's timestamp when it
/// began), so that no replica's clock decides a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Gate {
    /// The run waits here since `at`.
    Reached {
        /// Since when.
        at: i64,
        /// Since when, chain seconds; `None` for a gate stored before waits
        /// were measured on chain time (its wait counts from the runner's
        /// next look).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chain_at: Option<u64>,
    },
    /// The timeout passed it to a person at `at`; the run's decision
    /// timeout runs from then.
    Escalated {
        /// Since when.
        at: i64,
        /// Since when, chain seconds (as [`Gate::Reached`]'s).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chain_at: Option<u64>,
    },
    /// Passed: the run goes on.
    Approved {
        /// When.
        at: i64,
        /// By whom.
        by: Decider,
    },
    /// Stopped: the run closes.
    Rejected {
        /// When.
        at: i64,
        /// By whom.
        by: Decider,
    },
}

/// Whether a wait that began at chain time `since` has lasted longer than
/// `limit` seconds at chain time `now`. Saturating: a head older than
/// `since` has waited nothing, and a limit near `u64::MAX` never passes.
pub fn outlasted(since: u64, now: u64, limit: u64) -> bool {
    now.saturating_sub(since) > limit
}

impl Gate {
    /// Whether the run waits at it.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Reached { .. } | Self::Escalated { .. })
    }

    /// The state as a word (`reached`, `escalated`, `approved`, `rejected`).
    pub fn word(self) -> &'static str {
        match self {
            Self::Reached { .. } => "reached",
            Self::Escalated { .. } => "escalated",
            Self::Approved { .. } => "approved",
            Self::Rejected { .. } => "rejected",
        }
    }
}

/// A run's checkpoints that were reached, by name.
pub type Gates = BTreeMap<String, Gate>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_keep_their_stored_shape() {
        let mut gates = Gates::new();
        gates.insert("review".into(), Gate::Reached { at: 5, chain_at: None });
        gates.insert("legal".into(), Gate::Approved { at: 9, by: Decider::Timeout });
        let json = serde_json::to_value(&gates).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"legal": {"state": "approved", "at": 9, "by": "timeout"},
                               "review": {"state": "reached", "at": 5}})
        );
        assert_eq!(serde_json::from_value::<Gates>(json).unwrap(), gates);
        assert!(Gate::Escalated { at: 1, chain_at: Some(3) }.is_open());
        assert!(!Gate::Rejected { at: 1, by: Decider::Approver }.is_open());
    }

    #[test]
    fn a_gate_keeps_the_chain_time_its_wait_began() {
        let gate = Gate::Escalated { at: 5, chain_at: Some(1_700_000_000) };
        let json = serde_json::to_value(gate).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"state": "escalated", "at": 5, "chain_at": 1_700_000_000u64})
        );
        assert_eq!(serde_json::from_value::<Gate>(json).unwrap(), gate);
    }

    /// Waits are measured between two chain times: a replica's wall clock
    /// plays no part, and no limit overflows.
    #[test]
    fn a_wait_outlasts_its_limit_on_chain_time_only() {
        assert!(!outlasted(1_000, 1_060, 60), "exactly the limit is not past it");
        assert!(outlasted(1_000, 1_061, 60));
        assert!(!outlasted(1_000, 900, 60), "a head older than the wait's start");
        assert!(!outlasted(1_000, u64::MAX, u64::MAX), "a limit near u64::MAX never passes");
        assert!(outlasted(0, u64::MAX, u64::MAX - 1));
    }
}
