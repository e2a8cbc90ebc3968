//! Rebuilding a task from its events.
//!
//! The escrow stores only `keccak256(abi.encode(Task))` per task and every call
//! takes the full [`Task`]; each transition emits an event carrying what changed.
//! [`TaskRecord`] folds those events back into the exact [`Task`] the contract
//! hashed, validating each transition on the way, so callers can act on a task
//! and indexers can rebuild state with no `eth_call`.
//!
//! How each event changes the task (`at` is the event's timestamp field):
//!
//! | event | status | other fields |
//! |---|---|---|
//! | `TaskCreated` | Created | the full initial `Task` is in the event |
//! | `TaskAccepted` | Accepted | `updatedAt = at` |
//! | `TaskCompleted` | Completed (from Accepted, or from Created by `deliver`) | `updatedAt = at`, `resultHash = keccak256(resultURI)` |
//! | `TaskDisputed` | Disputed | `updatedAt = at` |
//! | `DisputeRuled` | Ruled | `updatedAt = at`, `executorShareBps` |
//! | `RulingAppealed` | Appealed | `updatedAt = at` |
//! | `AppealRuled` | (unchanged) | `executorShareBps`; `TaskSettled` follows |
//! | `TaskReassigned` | Created | `executor`, `deadline`, `updatedAt = at` |
//! | `TaskDeclined` | (unchanged; from Created, or Accepted) | the record keeps `reasonURI`; `TaskSettled` (Declined) follows |
//! | `TaskSettled` | the event's status | `updatedAt = at`; `executorShareBps` = 10000 when approved or auto-released, the ruling's share after a ruling, 0 for a default, cancel, expiry or decline |

use alloy::{
    primitives::{Address, B256, U256, keccak256},
    rpc::types::{Log, TransactionReceipt},
    sol_types::{SolEvent, SolValue},
};

use serde::{Deserialize, Serialize};

use crate::{
    ITaskEscrow::Task,
    TaskEscrow::{self, TaskEscrowEvents},
};

/// The escrow's task statuses (`ITaskEscrow.Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Status {
    /// No such task.
    None = 0,
    /// Funded, waiting for the executor to accept.
    Created = 1,
    /// Accepted, waiting for delivery.
    Accepted = 2,
    /// Delivered, in its review window.
    Completed = 3,
    /// Disputed by the client, waiting for the arbiter.
    Disputed = 4,
    /// Ruled, in its appeal window.
    Ruled = 5,
    /// Appealed, waiting for the appeal arbiter.
    Appealed = 6,
    /// Terminal: the executor received the whole amount.
    Paid = 7,
    /// Terminal: the funder received the whole amount back after a dispute.
    Refunded = 8,
    /// Terminal: the amount was split between executor and funder.
    Split = 9,
    /// Terminal: cancelled before acceptance; funder refunded.
    Cancelled = 10,
    /// Terminal: deadline passed before completion; funder refunded.
    Expired = 11,
    /// Terminal: the executor declined before delivering; funder refunded.
    Declined = 12,
}

impl Status {
    /// Every status, in contract order.
    pub const ALL: [Self; 13] = [
        Self::None,
        Self::Created,
        Self::Accepted,
        Self::Completed,
        Self::Disputed,
        Self::Ruled,
        Self::Appealed,
        Self::Paid,
        Self::Refunded,
        Self::Split,
        Self::Cancelled,
        Self::Expired,
        Self::Declined,
    ];

    /// Whether the task is over and holds no funds.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Paid
                | Self::Refunded
                | Self::Split
                | Self::Cancelled
                | Self::Expired
                | Self::Declined
        )
    }

    /// The status name as the contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Created => "Created",
            Self::Accepted => "Accepted",
            Self::Completed => "Completed",
            Self::Disputed => "Disputed",
            Self::Ruled => "Ruled",
            Self::Appealed => "Appealed",
            Self::Paid => "Paid",
            Self::Refunded => "Refunded",
            Self::Split => "Split",
            Self::Cancelled => "Cancelled",
            Self::Expired => "Expired",
            Self::Declined => "Declined",
        }
    }
}

impl TryFrom<u8> for Status {
    type Error = FoldError;
    fn try_from(v: u8) -> Result<Self, FoldError> {
        Self::ALL.get(v as usize).copied().ok_or(FoldError::UnknownStatus(v))
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a task was settled (`ITaskEscrow.Settlement`), decoded once from a
/// The highest rating a client gives in an approval (`TaskSettled.rating`,
/// percent; the escrow's `MAX_RATING`).
pub const MAX_RATING: u8 = 100;

/// The rating of an approval in full: what the orchestrator gives a result
/// it approves (the work is worth its whole price, as the payment says).
pub const FULL_RATING: u8 = MAX_RATING;

/// `TaskSettled` log; its text form ([`Settlement::as_str`], also its serde
/// form) is what events and the store carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Settlement {
    /// The client approved the result.
    Approved = 0,
    /// The review window passed with no dispute.
    AutoReleased = 1,
    /// The arbiter's ruling, final at once (an appeal window of zero).
    Ruling = 2,
    /// The appeal arbiter's ruling.
    AppealRuling = 3,
    /// The ruling stood: the appeal window passed, or the appeal went undecided.
    RulingFinalized = 4,
    /// The arbiter never ruled before the dispute deadline: refund.
    DisputeDefault = 5,
    /// The client cancelled before acceptance.
    Cancelled = 6,
    /// The deadline passed before completion.
    Expired = 7,
    /// The executor said no before delivering.
    Declined = 8,
}

impl Settlement {
    /// Every settlement kind, in contract order.
    pub const ALL: [Self; 9] = [
        Self::Approved,
        Self::AutoReleased,
        Self::Ruling,
        Self::AppealRuling,
        Self::RulingFinalized,
        Self::DisputeDefault,
        Self::Cancelled,
        Self::Expired,
        Self::Declined,
    ];

    /// The settlement's text form (snake case, as events carry it).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::AutoReleased => "auto_released",
            Self::Ruling => "ruling",
            Self::AppealRuling => "appeal_ruling",
            Self::RulingFinalized => "ruling_finalized",
            Self::DisputeDefault => "dispute_default",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
            Self::Declined => "declined",
        }
    }

    /// The settlement a text form names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether a dispute ended with it (a ruling, an appeal ruling, a
    /// finalized ruling or the default refund).
    pub fn ends_dispute(self) -> bool {
        matches!(
            self,
            Self::Ruling | Self::AppealRuling | Self::RulingFinalized | Self::DisputeDefault
        )
    }

    /// Whether the funder gets everything back (a default, cancel, expiry or
    /// decline).
    pub fn refunds_in_full(self) -> bool {
        matches!(self, Self::DisputeDefault | Self::Cancelled | Self::Expired | Self::Declined)
    }
}

impl TryFrom<u8> for Settlement {
    type Error = FoldError;
    fn try_from(v: u8) -> Result<Self, FoldError> {
        Self::ALL.get(v as usize).copied().ok_or(FoldError::UnknownSettlement(v))
    }
}

impl std::fmt::Display for Settlement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an event could not be applied to a task.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FoldError {
    /// The event belongs to another task.
    #[error("event for task {event} applied to task {task}")]
    WrongTask {
        /// The task being folded.
        task: U256,
        /// The task the event names.
        event: U256,
    },
    /// The event is not allowed from the task's current status.
    #[error("{event} is not allowed from status {from}")]
    InvalidTransition {
        /// Status before the event.
        from: Status,
        /// The event's name.
        event: &'static str,
    },
    /// A status byte outside the contract's enum.
    #[error("unknown status {0}")]
    UnknownStatus(u8),
    /// A settlement byte outside the contract's enum.
    #[error("unknown settlement {0}")]
    UnknownSettlement(u8),
    /// A task's history must start with `TaskCreated`.
    #[error("no TaskCreated event for task {0}")]
    NotCreated(U256),
    /// The folded task does not hash to what the contract stores.
    #[error("task {0}: folded state does not match the stored hash")]
    HashMismatch(U256),
}

/// A task as rebuilt from its events: the contract's [`Task`] plus what only
/// events carry (plan, parent, reference, URIs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// The task id.
    pub id: U256,
    /// The plan the task belongs to.
    pub plan_id: B256,
    /// The parent task id (zero for a root task).
    pub parent_id: U256,
    /// The funder's reference the id derives from.
    pub reference: B256,
    /// The capability the executor was checked against at creation.
    pub capability: B256,
    /// The spec envelope URI.
    pub spec_uri: String,
    /// The result URI, once delivered.
    pub result_uri: Option<String>,
    /// Why the executor declined (`TaskDeclined`'s reason URI), once it did.
    pub decline_reason_uri: Option<String>,
    /// The client's rating in its approval (0 to [`MAX_RATING`] percent), once
    /// it approved.
    pub rating: Option<u8>,
    /// The state the contract hashes.
    pub task: Task,
}

impl TaskRecord {
    /// Starts a record from its creation event.
    pub fn from_created(ev: &TaskEscrow::TaskCreated) -> Self {
        Self {
            id: ev.taskId,
            plan_id: ev.planId,
            parent_id: ev.parentId,
            reference: ev.r#ref,
            capability: ev.capability,
            spec_uri: ev.specURI.clone(),
            result_uri: None,
            decline_reason_uri: None,
            rating: None,
            task: ev.task.clone(),
        }
    }

    /// The current status.
    pub fn status(&self) -> Status {
        Status::try_from(self.task.status).unwrap_or(Status::None)
    }

    /// `keccak256(abi.encode(task))`: what the contract stores for this task.
    pub fn hash(&self) -> B256 {
        hash_task(&self.task)
    }

    /// The task id an event refers to, if it is a task event.
    pub fn event_task_id(ev: &TaskEscrowEvents) -> Option<U256> {
        use TaskEscrowEvents as E;
        Some(match ev {
            E::TaskCreated(e) => e.taskId,
            E::TaskAccepted(e) => e.taskId,
            E::TaskCompleted(e) => e.taskId,
            E::TaskDisputed(e) => e.taskId,
            E::DisputeRuled(e) => e.taskId,
            E::RulingAppealed(e) => e.taskId,
            E::AppealRuled(e) => e.taskId,
            E::TaskReassigned(e) => e.taskId,
            E::TaskDeclined(e) => e.taskId,
            E::TaskSettled(e) => e.taskId,
            _ => return None,
        })
    }

    /// Applies one escrow event, checking that the transition is allowed.
    /// Events that are not about tasks (admin events) are ignored.
    pub fn apply(&mut self, ev: &TaskEscrowEvents) -> Result<(), FoldError> {
        use Status as S;
        use TaskEscrowEvents as E;
        let Some(id) = Self::event_task_id(ev) else { return Ok(()) };
        if id != self.id {
            return Err(FoldError::WrongTask { task: self.id, event: id });
        }
        let from = self.status();
        let bad = |event| Err(FoldError::InvalidTransition { from, event });
        let t = &mut self.task;
        match ev {
            E::TaskCreated(_) => return bad("TaskCreated"),
            E::TaskAccepted(e) => {
                if from != S::Created {
                    return bad("TaskAccepted");
                }
                t.status = S::Accepted as u8;
                t.updatedAt = e.at;
            }
            E::TaskCompleted(e) => {
                if from != S::Accepted && from != S::Created {
                    return bad("TaskCompleted");
                }
                t.status = S::Completed as u8;
                t.updatedAt = e.at;
                t.resultHash = keccak256(e.resultURI.as_bytes());
                self.result_uri = Some(e.resultURI.clone());
            }
            E::TaskDisputed(e) => {
                if from != S::Completed {
                    return bad("TaskDisputed");
                }
                t.status = S::Disputed as u8;
                t.updatedAt = e.at;
            }
            E::DisputeRuled(e) => {
                if from != S::Disputed {
                    return bad("DisputeRuled");
                }
                t.status = S::Ruled as u8;
                t.updatedAt = e.at;
                t.executorShareBps = e.executorShareBps;
            }
            E::RulingAppealed(e) => {
                if from != S::Ruled {
                    return bad("RulingAppealed");
                }
                t.status = S::Appealed as u8;
                t.updatedAt = e.at;
            }
            E::AppealRuled(e) => {
                if from != S::Appealed {
                    return bad("AppealRuled");
                }
                t.executorShareBps = e.executorShareBps;
            }
            E::TaskReassigned(e) => {
                if from != S::Created && from != S::Accepted {
                    return bad("TaskReassigned");
                }
                t.executor = e.newExecutor;
                t.deadline = e.newDeadline;
                t.status = S::Created as u8;
                t.updatedAt = e.at;
            }
            E::TaskDeclined(e) => {
                if !matches!(from, S::Created | S::Accepted)
                    || e.executor != t.executor
                    || self.decline_reason_uri.is_some()
                {
                    return bad("TaskDeclined");
                }
                self.decline_reason_uri = Some(e.reasonURI.clone());
            }
            E::TaskSettled(e) => {
                let to = Status::try_from(e.status)?;
                use Settlement as K;
                let settlement = Settlement::try_from(e.settlement)?;
                let allowed = match settlement {
                    K::Approved | K::AutoReleased => from == S::Completed && to == S::Paid,
                    // In the same transaction as DisputeRuled.
                    K::Ruling => from == S::Ruled && matches!(to, S::Paid | S::Refunded | S::Split),
                    K::AppealRuling => {
                        from == S::Appealed && matches!(to, S::Paid | S::Refunded | S::Split)
                    }
                    K::RulingFinalized => {
                        matches!(from, S::Ruled | S::Appealed)
                            && matches!(to, S::Paid | S::Refunded | S::Split)
                    }
                    K::DisputeDefault => from == S::Disputed && to == S::Refunded,
                    K::Cancelled => from == S::Created && to == S::Cancelled,
                    K::Expired => matches!(from, S::Created | S::Accepted) && to == S::Expired,
                    // In the same transaction as TaskDeclined.
                    K::Declined => {
                        matches!(from, S::Created | S::Accepted)
                            && to == S::Declined
                            && self.decline_reason_uri.is_some()
                    }
                };
                if !allowed {
                    return bad("TaskSettled");
                }
                if e.executorAmount.checked_add(e.funderAmount) != Some(t.amount) {
                    return bad("TaskSettled");
                }
                // A default, cancel, expiry or decline refunds the funder in full.
                if settlement.refunds_in_full() && e.executorAmount != 0 {
                    return bad("TaskSettled");
                }
                // Only an approval carries a rating, at most MAX_RATING.
                let rated = settlement == K::Approved;
                if e.rating > MAX_RATING || (!rated && e.rating != 0) {
                    return bad("TaskSettled");
                }
                self.rating = rated.then_some(e.rating);
                t.executorShareBps = match settlement {
                    K::Approved | K::AutoReleased => 10_000,
                    K::Ruling | K::AppealRuling | K::RulingFinalized => t.executorShareBps,
                    _ => 0,
                };
                t.status = to as u8;
                t.updatedAt = e.at;
            }
            _ => {}
        }
        Ok(())
    }

    /// Folds a task's whole history (its logs in chain order).
    pub fn from_logs<'a>(
        id: U256,
        logs: impl IntoIterator<Item = &'a Log>,
    ) -> Result<Self, FoldError> {
        let mut record: Option<Self> = None;
        for log in logs {
            let Some(ev) = decode_log(log) else { continue };
            if Self::event_task_id(&ev) != Some(id) {
                continue;
            }
            match (&mut record, &ev) {
                (None, TaskEscrowEvents::TaskCreated(created)) => {
                    record = Some(Self::from_created(created));
                }
                (None, _) => return Err(FoldError::NotCreated(id)),
                (Some(r), ev) => r.apply(ev)?,
            }
        }
        record.ok_or(FoldError::NotCreated(id))
    }

    /// Applies the escrow events of a receipt that concern this task.
    pub fn apply_receipt(
        &mut self,
        escrow: Address,
        receipt: &TransactionReceipt,
    ) -> Result<(), FoldError> {
        for log in receipt.inner.logs() {
            if log.address() != escrow {
                continue;
            }
            if let Some(ev) = decode_log(log)
                && Self::event_task_id(&ev) == Some(self.id)
            {
                self.apply(&ev)?;
            }
        }
        Ok(())
    }
}

/// `keccak256(abi.encode(task))`, the value `TaskEscrow.taskHash` stores.
pub fn hash_task(task: &Task) -> B256 {
    keccak256(task.abi_encode())
}

/// Decodes an escrow log, `None` if it is not one of the escrow's events.
pub fn decode_log(log: &Log) -> Option<TaskEscrowEvents> {
    use alloy::sol_types::SolEventInterface;
    TaskEscrowEvents::decode_log(&log.inner).ok().map(|l| l.data)
}

/// Finds the `TaskCreated` event in a receipt (the one a create call emitted).
pub fn created_in(escrow: Address, receipt: &TransactionReceipt) -> Option<TaskRecord> {
    receipt.inner.logs().iter().filter(|l| l.address() == escrow).find_map(|l| {
        TaskEscrow::TaskCreated::decode_log(&l.inner)
            .ok()
            .map(|e| TaskRecord::from_created(&e.data))
    })
}

/// Every `TaskCreated` event in a receipt, in log order (a batch create emits
/// one per task, in the order of its parameters).
pub fn all_created_in(escrow: Address, receipt: &TransactionReceipt) -> Vec<TaskRecord> {
    receipt
        .inner
        .logs()
        .iter()
        .filter(|l| l.address() == escrow)
        .filter_map(|l| TaskEscrow::TaskCreated::decode_log(&l.inner).ok())
        .map(|e| TaskRecord::from_created(&e.data))
        .collect()
}

#[cfg(test)]
mod tests {
    use alloy::primitives::{U256, address, aliases::U40};

    use super::*;
    use crate::TaskEscrow as E;

    fn created() -> TaskRecord {
        let task = Task {
            funder: address!("0x00000000000000000000000000000000000000f1"),
            client: address!("0x00000000000000000000000000000000000000c1"),
            executor: address!("0x00000000000000000000000000000000000000e1"),
            amount: 1_000,
            deadline: U40::from(2_000),
            updatedAt: U40::from(1_000),
            reviewWindow: 60,
            disputeWindow: 120,
            appealWindow: 30,
            appealRulingWindow: 90,
            executorShareBps: 0,
            status: Status::Created as u8,
            specHash: keccak256("spec"),
            resultHash: B256::ZERO,
        };
        TaskRecord::from_created(&E::TaskCreated {
            taskId: U256::from(7),
            planId: keccak256("plan"),
            parentId: U256::ZERO,
            r#ref: keccak256("ref"),
            capability: keccak256("summarize"),
            task,
            specURI: "spec".into(),
        })
    }

    fn id() -> U256 {
        U256::from(7)
    }

    fn at(t: u64) -> U40 {
        U40::from(t)
    }

    fn settled(status: Status, settlement: u8, to_exec: u128, to_funder: u128) -> TaskEscrowEvents {
        TaskEscrowEvents::TaskSettled(E::TaskSettled {
            taskId: id(),
            status: status as u8,
            settlement,
            executorAmount: to_exec,
            funderAmount: to_funder,
            rating: if settlement == Settlement::Approved as u8 { FULL_RATING } else { 0 },
            at: at(1_500),
        })
    }

    fn deliver(rec: &mut TaskRecord) {
        let executor = rec.task.executor;
        rec.apply(&TaskEscrowEvents::TaskAccepted(E::TaskAccepted {
            taskId: id(),
            executor,
            at: at(1_100),
        }))
        .unwrap();
        rec.apply(&TaskEscrowEvents::TaskCompleted(E::TaskCompleted {
            taskId: id(),
            executor,
            resultURI: "result".into(),
            at: at(1_200),
        }))
        .unwrap();
    }

    #[test]
    fn happy_path_folds_to_the_contract_state() {
        let mut rec = created();
        deliver(&mut rec);
        assert_eq!(rec.status(), Status::Completed);
        assert_eq!(rec.task.resultHash, keccak256("result"));
        assert_eq!(rec.task.updatedAt, at(1_200));
        rec.apply(&settled(Status::Paid, 0, 1_000, 0)).unwrap();
        assert_eq!(rec.status(), Status::Paid);
        assert_eq!(rec.task.executorShareBps, 10_000, "approval records the full share");
        assert_eq!(rec.task.updatedAt, at(1_500));
    }

    #[test]
    fn deliver_completes_straight_from_created_and_only_once() {
        let mut rec = created();
        let completed = TaskEscrowEvents::TaskCompleted(E::TaskCompleted {
            taskId: id(),
            executor: rec.task.executor,
            resultURI: "fast".into(),
            at: at(1_050),
        });
        rec.apply(&completed).unwrap();
        assert_eq!(rec.status(), Status::Completed);
        assert_eq!(rec.task.resultHash, keccak256("fast"));
        assert_eq!(rec.result_uri.as_deref(), Some("fast"));
        assert_eq!(
            rec.apply(&completed).unwrap_err(),
            FoldError::InvalidTransition { from: Status::Completed, event: "TaskCompleted" }
        );
    }

    #[test]
    fn ruling_then_finalize_keeps_the_ruled_share() {
        let mut rec = created();
        deliver(&mut rec);
        rec.apply(&TaskEscrowEvents::TaskDisputed(E::TaskDisputed {
            taskId: id(),
            client: rec.task.client,
            reasonURI: "why".into(),
            at: at(1_250),
        }))
        .unwrap();
        rec.apply(&TaskEscrowEvents::DisputeRuled(E::DisputeRuled {
            taskId: id(),
            arbiter: Address::ZERO,
            executorShareBps: 2_500,
            rationaleURI: "r".into(),
            at: at(1_300),
        }))
        .unwrap();
        assert_eq!(rec.status(), Status::Ruled);
        rec.apply(&settled(Status::Split, 4, 250, 750)).unwrap();
        assert_eq!(rec.status(), Status::Split);
        assert_eq!(rec.task.executorShareBps, 2_500);
    }

    #[test]
    fn impossible_transitions_are_refused() {
        let mut rec = created();
        // Disputed before delivery.
        let err = rec
            .apply(&TaskEscrowEvents::TaskDisputed(E::TaskDisputed {
                taskId: id(),
                client: rec.task.client,
                reasonURI: "r".into(),
                at: at(1),
            }))
            .unwrap_err();
        assert_eq!(
            err,
            FoldError::InvalidTransition { from: Status::Created, event: "TaskDisputed" }
        );
        // Paid straight from Created.
        assert!(rec.apply(&settled(Status::Paid, 0, 1_000, 0)).is_err());
        // Amounts that do not add up to the escrowed amount.
        deliver(&mut rec);
        assert!(rec.apply(&settled(Status::Paid, 0, 999, 0)).is_err());
        // A settlement kind that does not match the status it claims.
        assert!(rec.apply(&settled(Status::Refunded, 0, 0, 1_000)).is_err());
        assert_eq!(rec.status(), Status::Completed, "refused events change nothing");
        // A second creation of the same task.
        let again = TaskEscrowEvents::TaskCreated(E::TaskCreated {
            taskId: id(),
            planId: B256::ZERO,
            parentId: U256::ZERO,
            r#ref: B256::ZERO,
            capability: B256::ZERO,
            task: rec.task.clone(),
            specURI: String::new(),
        });
        assert!(rec.apply(&again).is_err());
    }

    #[test]
    fn events_of_other_tasks_are_refused() {
        let mut rec = created();
        let err = rec
            .apply(&TaskEscrowEvents::TaskAccepted(E::TaskAccepted {
                taskId: U256::from(8),
                executor: rec.task.executor,
                at: at(1),
            }))
            .unwrap_err();
        assert_eq!(err, FoldError::WrongTask { task: id(), event: U256::from(8) });
    }

    #[test]
    fn reassignment_returns_to_created_with_the_new_executor() {
        let mut rec = created();
        let new_executor = address!("0x00000000000000000000000000000000000000e2");
        rec.apply(&TaskEscrowEvents::TaskReassigned(E::TaskReassigned {
            taskId: id(),
            previousExecutor: rec.task.executor,
            newExecutor: new_executor,
            newDeadline: at(9_000),
            at: at(1_010),
        }))
        .unwrap();
        assert_eq!(rec.task.executor, new_executor);
        assert_eq!(rec.task.deadline, at(9_000));
        assert_eq!(rec.status(), Status::Created);
    }

    #[test]
    fn status_bytes_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::try_from(s as u8).unwrap(), s);
        }
        assert_eq!(Status::try_from(12), Ok(Status::Declined));
        assert_eq!(Status::try_from(13), Err(FoldError::UnknownStatus(13)));
        assert!(Status::Split.is_terminal() && !Status::Ruled.is_terminal());
        assert!(Status::Declined.is_terminal());
        assert_eq!(Status::Declined.to_string(), "Declined");
    }

    fn declined(executor: Address) -> TaskEscrowEvents {
        TaskEscrowEvents::TaskDeclined(E::TaskDeclined {
            taskId: id(),
            executor,
            reasonURI: "data:application/json,{\"reason\":\"no\"}".into(),
            at: at(1_500),
        })
    }

    #[test]
    fn a_decline_refunds_the_funder_and_keeps_the_reason() {
        for accept_first in [false, true] {
            let mut rec = created();
            if accept_first {
                rec.apply(&TaskEscrowEvents::TaskAccepted(E::TaskAccepted {
                    taskId: id(),
                    executor: rec.task.executor,
                    at: at(1_100),
                }))
                .unwrap();
            }
            let from = rec.status();
            rec.apply(&declined(rec.task.executor)).unwrap();
            assert_eq!(rec.status(), from, "TaskSettled sets the status");
            assert_eq!(
                rec.decline_reason_uri.as_deref(),
                Some("data:application/json,{\"reason\":\"no\"}")
            );
            rec.apply(&settled(Status::Declined, 8, 0, 1_000)).unwrap();
            assert_eq!(rec.status(), Status::Declined);
            assert!(rec.status().is_terminal());
            assert_eq!(rec.task.executorShareBps, 0);
            assert_eq!(rec.task.updatedAt, at(1_500));
            // Nothing follows a decline.
            assert!(rec.apply(&declined(rec.task.executor)).is_err());
        }
    }

    #[test]
    fn a_decline_out_of_turn_is_refused() {
        // Not by anyone but the executor.
        let mut rec = created();
        let stranger = address!("0x00000000000000000000000000000000000000e9");
        assert_eq!(
            rec.apply(&declined(stranger)).unwrap_err(),
            FoldError::InvalidTransition { from: Status::Created, event: "TaskDeclined" }
        );
        // No Declined settlement without its TaskDeclined, nor one that pays the executor.
        assert!(rec.apply(&settled(Status::Declined, 8, 0, 1_000)).is_err());
        rec.apply(&declined(rec.task.executor)).unwrap();
        assert!(rec.apply(&settled(Status::Declined, 8, 1, 999)).is_err());
        assert!(rec.apply(&settled(Status::Expired, 8, 0, 1_000)).is_err());
        assert_eq!(rec.status(), Status::Created);
        // Not once delivered.
        let mut rec = created();
        deliver(&mut rec);
        assert_eq!(
            rec.apply(&declined(rec.task.executor)).unwrap_err(),
            FoldError::InvalidTransition { from: Status::Completed, event: "TaskDeclined" }
        );
        assert_eq!(rec.decline_reason_uri, None);
    }
}
