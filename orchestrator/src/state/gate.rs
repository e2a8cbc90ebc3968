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

/// One checkpoint of a run, once reached. Times are wall-clock
/// milliseconds, as the run's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Gate {
    /// The run waits here since `at`.
    Reached {
        /// Since when.
        at: i64,
    },
    /// The timeout passed it to a person at `at`; the run's decision
    /// timeout runs from then.
    Escalated {
        /// Since when.
        at: i64,
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
        gates.insert("review".into(), Gate::Reached { at: 5 });
        gates.insert("legal".into(), Gate::Approved { at: 9, by: Decider::Timeout });
        let json = serde_json::to_value(&gates).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"legal": {"state": "approved", "at": 9, "by": "timeout"},
                               "review": {"state": "reached", "at": 5}})
        );
        assert_eq!(serde_json::from_value::<Gates>(json).unwrap(), gates);
        assert!(Gate::Escalated { at: 1 }.is_open());
        assert!(!Gate::Rejected { at: 1, by: Decider::Approver }.is_open());
    }
}
