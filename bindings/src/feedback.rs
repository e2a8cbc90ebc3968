//! Feedback with a receipt: ERC-8004 feedback whose URI and hash name the
//! escrow settlements it speaks of, so that anyone can check it against the
//! escrow's `TaskSettled` events.
//!
//! The funder's side gives it once its tasks settle: the orchestrator for
//! its sponsor (one feedback per task, or one per plan and executor). The
//! URI is a `data:application/json,` URI holding a [`Proof`]; the feedback
//! hash is the keccak256 of that JSON. The value is the executor's share in
//! percent for a paid or split task and −100 for a task refunded after a
//! dispute the executor lost or left to expire ([`task_value`]); a proof of
//! several tasks carries their mean. An indexer matches a feedback when its
//! hash is right, its giver funded every task it names, each task settled
//! as it says in the transaction it names with the executor the feedback's
//! agent id belongs to, and its value has the settlements' sign.

use alloy::primitives::{Address, B256, keccak256};
use serde::{Deserialize, Serialize};

/// `tag1` of every settlement-backed feedback.
pub const TAG: &str = "tessera.settlement";
/// The [`Proof::kind`] of this format.
pub const KIND: &str = "tessera.settlement.v1";
/// The URI prefix of a proof.
pub const URI_PREFIX: &str = "data:application/json,";
/// Tasks one proof names at most (a plan's tasks for one executor).
pub const MAX_TASKS: usize = 256;
/// Bytes a proof's URI has at most.
pub const MAX_URI_BYTES: usize = 64 * 1024;

/// Why a feedback URI is not a proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// Not a `data:application/json,` URI, or too long.
    #[error("not a settlement proof URI (data:application/json, at most {MAX_URI_BYTES} bytes)")]
    NotAProof,
    /// The JSON does not read as a proof.
    #[error("the proof does not parse: {0}")]
    Malformed(String),
    /// The hash on chain is not the proof's.
    #[error("the feedback hash is not the keccak256 of the proof")]
    HashMismatch,
    /// Another kind of document.
    #[error("the proof is of kind {0:?}, not {KIND}")]
    Kind(String),
    /// No task, or more than [`MAX_TASKS`].
    #[error("a proof names 1 to {MAX_TASKS} tasks, this one {0}")]
    TaskCount(usize),
}

/// One settlement a feedback speaks of, as the escrow's `TaskSettled` told it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettledTask {
    /// The task id (decimal).
    pub task_id: String,
    /// `Paid`, `Split`, `Refunded` or `Expired`.
    pub status: String,
    /// The executor's amount, in base units (decimal).
    pub executor_amount: String,
    /// The amount returned to the funder, in base units (decimal).
    pub funder_amount: String,
    /// The transaction the task settled in.
    pub tx: B256,
}

/// The document a feedback's URI holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// [`KIND`].
    pub kind: String,
    /// The chain the escrow lives on.
    pub chain_id: u64,
    /// The escrow the tasks settled in.
    pub escrow: Address,
    /// The plan the tasks belong to, when the proof sums up a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// The settlements.
    pub tasks: Vec<SettledTask>,
}

/// The value a settlement is worth: the executor's share in whole percent
/// for a paid or split task, −100 for a refunded or expired one; `None`
/// for a status that says nothing about the executor's work.
pub fn task_value(status: &str, executor_amount: u128, funder_amount: u128) -> Option<i128> {
    match status {
        "Paid" | "Split" => {
            let total = executor_amount as f64 + funder_amount as f64;
            if total == 0.0 {
                return Some(0);
            }
            let share = executor_amount as f64 / total;
            Some((share * 100.0).round().clamp(0.0, 100.0) as i128)
        }
        "Refunded" | "Expired" => Some(-100),
        _ => None,
    }
}

impl Proof {
    /// A proof of `tasks` on `escrow` of chain `chain_id`.
    pub fn new(
        chain_id: u64,
        escrow: Address,
        plan: Option<String>,
        tasks: Vec<SettledTask>,
    ) -> Self {
        Self { kind: KIND.to_owned(), chain_id, escrow, plan, tasks }
    }

    /// The mean of the tasks' [`task_value`]s (0 when none speaks).
    pub fn value(&self) -> i128 {
        let values: Vec<i128> = self
            .tasks
            .iter()
            .filter_map(|t| {
                let a = t.executor_amount.parse().ok()?;
                let b = t.funder_amount.parse().ok()?;
                task_value(&t.status, a, b)
            })
            .collect();
        if values.is_empty() {
            return 0;
        }
        values.iter().sum::<i128>() / values.len() as i128
    }

    /// The feedback URI and the feedback hash of this proof.
    pub fn encode(&self) -> (String, B256) {
        let json = serde_json::to_string(self).expect("a proof serializes");
        let hash = keccak256(json.as_bytes());
        (format!("{URI_PREFIX}{json}"), hash)
    }

    /// The proof `uri` holds, checked against the feedback's `hash`.
    pub fn decode(uri: &str, hash: B256) -> Result<Self, ProofError> {
        if uri.len() > MAX_URI_BYTES {
            return Err(ProofError::NotAProof);
        }
        let json = uri.strip_prefix(URI_PREFIX).ok_or(ProofError::NotAProof)?;
        if keccak256(json.as_bytes()) != hash {
            return Err(ProofError::HashMismatch);
        }
        let proof: Self =
            serde_json::from_str(json).map_err(|e| ProofError::Malformed(e.to_string()))?;
        if proof.kind != KIND {
            return Err(ProofError::Kind(proof.kind));
        }
        if proof.tasks.is_empty() || proof.tasks.len() > MAX_TASKS {
            return Err(ProofError::TaskCount(proof.tasks.len()));
        }
        Ok(proof)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: &str, exec: u128, funder: u128) -> SettledTask {
        SettledTask {
            task_id: id.into(),
            status: status.into(),
            executor_amount: exec.to_string(),
            funder_amount: funder.to_string(),
            tx: B256::repeat_byte(9),
        }
    }

    #[test]
    fn values_follow_the_settlement() {
        assert_eq!(task_value("Paid", 500_000, 0), Some(100));
        assert_eq!(task_value("Split", 300_000, 700_000), Some(30));
        assert_eq!(task_value("Split", 1, 2), Some(33));
        assert_eq!(task_value("Split", 2, 1), Some(67));
        assert_eq!(task_value("Refunded", 0, 500_000), Some(-100));
        assert_eq!(task_value("Expired", 0, 500_000), Some(-100));
        assert_eq!(task_value("Cancelled", 0, 500_000), None);
        assert_eq!(task_value("Split", u128::MAX, u128::MAX), Some(50));
        let p = Proof::new(
            1,
            Address::ZERO,
            Some("0x01".into()),
            vec![task("1", "Paid", 5, 0), task("2", "Refunded", 0, 5)],
        );
        assert_eq!(p.value(), 0);
    }

    #[test]
    fn a_proof_round_trips_and_its_hash_is_checked() {
        let p = Proof::new(31337, Address::repeat_byte(1), None, vec![task("7", "Paid", 5, 0)]);
        let (uri, hash) = p.encode();
        assert!(uri.starts_with(URI_PREFIX));
        assert_eq!(Proof::decode(&uri, hash).unwrap(), p);
        assert_eq!(Proof::decode(&uri, B256::ZERO), Err(ProofError::HashMismatch));
        assert_eq!(Proof::decode("ipfs://x", hash), Err(ProofError::NotAProof));
        let other = format!("{URI_PREFIX}{{\"kind\":\"x\"}}");
        let h = keccak256(&other.as_bytes()[URI_PREFIX.len()..]);
        assert!(matches!(Proof::decode(&other, h), Err(ProofError::Malformed(_))));
        let empty = Proof::new(1, Address::ZERO, None, vec![]);
        let (uri, hash) = empty.encode();
        assert_eq!(Proof::decode(&uri, hash), Err(ProofError::TaskCount(0)));
        let mut wrong = p;
        wrong.kind = "other".into();
        let (uri, hash) = wrong.encode();
        assert_eq!(Proof::decode(&uri, hash), Err(ProofError::Kind("other".into())));
    }
}
