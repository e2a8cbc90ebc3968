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
//!
//! A plan's summary uses the compact form, [`CompactProof`]:
//! `data:,tessera.settlement.v2;<chainId>;<escrow>;<id>,<id>…`, each task id
//! in lower-case hex without `0x` or leading zeros; its hash is the keccak256
//! of what follows `data:,`. It names the tasks only: their settlements are
//! on chain, and an indexer checks them there as for the long form (save the
//! transaction, which the long form names and this one leaves to the index).
//! [`AnyProof::decode`] reads both forms.

use alloy::primitives::{Address, B256, U256, keccak256};
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
/// The [`CompactProof`] kind, first field of its URI.
pub const KIND_V2: &str = "tessera.settlement.v2";
/// The URI prefix of a [`CompactProof`].
pub const URI_PREFIX_V2: &str = "data:,";

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

/// A plan's settlement proof in brief: the chain, the escrow and the tasks,
/// nothing an indexer cannot read on chain (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactProof {
    /// The chain the escrow lives on.
    pub chain_id: u64,
    /// The escrow the tasks settled in.
    pub escrow: Address,
    /// The tasks, in the order given.
    pub task_ids: Vec<U256>,
}

impl CompactProof {
    /// The feedback URI and hash of this proof.
    pub fn encode(&self) -> (String, B256) {
        let ids: Vec<String> = self.task_ids.iter().map(|id| format!("{id:x}")).collect();
        let body = format!(
            "{KIND_V2};{};{};{}",
            self.chain_id,
            format!("{:x}", self.escrow).trim_start_matches("0x"),
            ids.join(",")
        );
        let hash = keccak256(body.as_bytes());
        (format!("{URI_PREFIX_V2}{body}"), hash)
    }

    /// The proof `uri` holds, checked against the feedback's `hash`.
    pub fn decode(uri: &str, hash: B256) -> Result<Self, ProofError> {
        if uri.len() > MAX_URI_BYTES {
            return Err(ProofError::NotAProof);
        }
        let body = uri.strip_prefix(URI_PREFIX_V2).ok_or(ProofError::NotAProof)?;
        if keccak256(body.as_bytes()) != hash {
            return Err(ProofError::HashMismatch);
        }
        let malformed = |what: &str| ProofError::Malformed(what.to_owned());
        let mut fields = body.split(';');
        let kind = fields.next().unwrap_or_default();
        if kind != KIND_V2 {
            return Err(ProofError::Kind(kind.to_owned()));
        }
        let chain_id = fields
            .next()
            .and_then(|c| c.parse::<u64>().ok())
            .ok_or_else(|| malformed("no decimal chain id"))?;
        let escrow = fields
            .next()
            .filter(|e| e.len() == 40)
            .and_then(|e| e.parse::<Address>().ok())
            .ok_or_else(|| malformed("no escrow address (40 hex digits)"))?;
        let ids = fields.next().ok_or_else(|| malformed("no task ids"))?;
        if fields.next().is_some() {
            return Err(malformed("more than four fields"));
        }
        let task_ids = if ids.is_empty() {
            Vec::new()
        } else {
            ids.split(',')
                .map(|id| {
                    let hex = !id.is_empty()
                        && id.len() <= 64
                        && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                    hex.then(|| U256::from_str_radix(id, 16).ok())
                        .flatten()
                        .ok_or_else(|| malformed("a task id is not lower-case hex"))
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        if task_ids.is_empty() || task_ids.len() > MAX_TASKS {
            return Err(ProofError::TaskCount(task_ids.len()));
        }
        Ok(Self { chain_id, escrow, task_ids })
    }
}

/// A proof in either form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyProof {
    /// The long form, [`Proof`]: each settlement as the funder saw it.
    Full(Proof),
    /// The compact form, [`CompactProof`]: the tasks only.
    Compact(CompactProof),
}

impl AnyProof {
    /// The proof `uri` holds in either form, checked against `hash`.
    pub fn decode(uri: &str, hash: B256) -> Result<Self, ProofError> {
        if uri.starts_with(URI_PREFIX_V2) {
            CompactProof::decode(uri, hash).map(Self::Compact)
        } else {
            Proof::decode(uri, hash).map(Self::Full)
        }
    }

    /// The tasks it names (decimal ids).
    pub fn task_ids(&self) -> Vec<String> {
        match self {
            Self::Full(p) => p.tasks.iter().map(|t| t.task_id.clone()).collect(),
            Self::Compact(p) => p.task_ids.iter().map(U256::to_string).collect(),
        }
    }

    /// The chain the escrow lives on.
    pub fn chain_id(&self) -> u64 {
        match self {
            Self::Full(p) => p.chain_id,
            Self::Compact(p) => p.chain_id,
        }
    }

    /// The escrow the tasks settled in.
    pub fn escrow(&self) -> Address {
        match self {
            Self::Full(p) => p.escrow,
            Self::Compact(p) => p.escrow,
        }
    }
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

    /// This proof in the compact form (the chain, the escrow and the task
    /// ids; `None` when a task id is not a decimal number).
    pub fn compact(&self) -> Option<CompactProof> {
        let task_ids = self
            .tasks
            .iter()
            .map(|t| t.task_id.parse::<U256>().ok())
            .collect::<Option<Vec<_>>>()?;
        Some(CompactProof { chain_id: self.chain_id, escrow: self.escrow, task_ids })
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

    /// The compact URI `body` with its hash.
    fn v2(body: &str) -> (String, B256) {
        (format!("{URI_PREFIX_V2}{body}"), keccak256(body.as_bytes()))
    }

    #[test]
    fn a_compact_proof_round_trips_and_names_the_same_tasks() {
        let big = U256::from_be_bytes(keccak256("task 0").0);
        let p = Proof::new(
            31337,
            Address::repeat_byte(0xab),
            Some("0x01".into()),
            vec![task(&big.to_string(), "Paid", 5, 0), task("255", "Split", 1, 1)],
        );
        let compact = p.compact().unwrap();
        let (uri, hash) = compact.encode();
        assert_eq!(
            uri,
            format!("data:,tessera.settlement.v2;31337;{};{big:x},ff", "ab".repeat(20)),
        );
        let (long, _) = p.encode();
        assert!(uri.len() * 2 < long.len(), "{} bytes against {}", uri.len(), long.len());
        let decoded = AnyProof::decode(&uri, hash).unwrap();
        assert_eq!(decoded, AnyProof::Compact(compact));
        assert_eq!(decoded.task_ids(), vec![big.to_string(), "255".to_owned()]);
        assert_eq!(decoded.chain_id(), 31337);
        assert_eq!(decoded.escrow(), Address::repeat_byte(0xab));
        // Both forms through one door, each with its own hash.
        let (long, long_hash) = p.encode();
        assert_eq!(AnyProof::decode(&long, long_hash), Ok(AnyProof::Full(p.clone())));
        assert_eq!(AnyProof::decode(&uri, long_hash), Err(ProofError::HashMismatch));
        let mut odd = p;
        odd.tasks[0].task_id = "task 12".into();
        assert_eq!(odd.compact(), None);
    }

    #[test]
    fn a_compact_proof_refuses_what_is_not_one() {
        let escrow = "ab".repeat(20);
        let malformed = |body: &str| {
            let (uri, hash) = v2(body);
            matches!(CompactProof::decode(&uri, hash), Err(ProofError::Malformed(_)))
        };
        assert!(malformed(&format!("{KIND_V2};x;{escrow};1")), "chain id not decimal");
        assert!(malformed(&format!("{KIND_V2};1;{escrow}")), "no ids field");
        assert!(malformed(&format!("{KIND_V2};1;0x{escrow};1")), "escrow with 0x");
        assert!(malformed(&format!("{KIND_V2};1;{};1", "ab".repeat(19))), "short escrow");
        assert!(malformed(&format!("{KIND_V2};1;{escrow};1;2")), "five fields");
        assert!(malformed(&format!("{KIND_V2};1;{escrow};1,,2")), "empty id");
        assert!(malformed(&format!("{KIND_V2};1;{escrow};1F")), "upper-case hex");
        assert!(malformed(&format!("{KIND_V2};1;{escrow};0x1")), "0x id");
        assert!(malformed(&format!("{KIND_V2};1;{escrow};{}", "1".repeat(65))), "id past 256 bits");
        let (uri, hash) = v2(&format!("{KIND_V2};1;{escrow};"));
        assert_eq!(CompactProof::decode(&uri, hash), Err(ProofError::TaskCount(0)));
        let many = vec!["1"; MAX_TASKS + 1].join(",");
        let (uri, hash) = v2(&format!("{KIND_V2};1;{escrow};{many}"));
        assert_eq!(CompactProof::decode(&uri, hash), Err(ProofError::TaskCount(MAX_TASKS + 1)));
        let (uri, hash) = v2(&format!("tessera.settlement.v3;1;{escrow};1"));
        assert_eq!(
            CompactProof::decode(&uri, hash),
            Err(ProofError::Kind("tessera.settlement.v3".into()))
        );
        let (uri, _) = v2(&format!("{KIND_V2};1;{escrow};1"));
        assert_eq!(CompactProof::decode(&uri, B256::ZERO), Err(ProofError::HashMismatch));
        assert_eq!(
            CompactProof::decode("data:application/json,{}", B256::ZERO),
            Err(ProofError::NotAProof)
        );
        let (uri, hash) = v2(&format!("{KIND_V2};1;{escrow};{}", "1,".repeat(MAX_URI_BYTES / 2)));
        assert_eq!(CompactProof::decode(&uri, hash), Err(ProofError::NotAProof));
        let (uri, hash) = v2(&format!("{KIND_V2};1;{escrow};0,{}", "f".repeat(64)));
        assert_eq!(CompactProof::decode(&uri, hash).unwrap().task_ids, vec![U256::ZERO, U256::MAX]);
    }
}
