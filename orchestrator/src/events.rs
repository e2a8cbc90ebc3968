//! Run events: what the runner reports over SSE and stores for replay.
//!
//! Chain transitions become events straight from the escrow's logs, keyed by
//! transaction hash and log index, so an event is stored exactly once however
//! often (or after however many restarts) the runner reads the same logs.

use alloy::{primitives::B256, rpc::types::Log};
use serde_json::{Value, json};
use tessera_bindings::{
    TaskEscrow::TaskEscrowEvents,
    task::{Status, decode_log},
};

/// Names of the settlement kinds, in contract order.
pub const SETTLEMENTS: [&str; 8] = [
    "approved",
    "auto_released",
    "ruling",
    "appeal_ruling",
    "ruling_finalized",
    "dispute_default",
    "cancelled",
    "expired",
];

/// Every event kind a run emits.
pub const KINDS: &[&str] = &[
    "plan_proposed",
    "plan_edited",
    "plan_approved",
    "subtask_created",
    "subtask_accepted",
    "subtask_completed",
    "review_required",
    "subtask_paid",
    "subtask_disputed",
    "dispute_opened",
    "dispute_ruled",
    "ruling_appealed",
    "appeal_ruled",
    "dispute_resolved",
    "subtask_reassigned",
    "subtask_refunded",
    "subtask_cancelled",
    "subtask_expired",
    "decision_applied",
    "plan_paused",
    "plan_resumed",
    "plan_cancelling",
    "plan_completed",
    "plan_failed",
];

/// Kinds after which a run's stream ends.
pub fn is_final(kind: &str) -> bool {
    matches!(kind, "plan_completed" | "plan_failed")
}

/// An event derived from one escrow log.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainEvent {
    /// Event kind.
    pub kind: &'static str,
    /// `<tx hash>:<log index>`: unique per log.
    pub dedup: String,
    /// Body fields (tx hash, block and the event's own data).
    pub body: Value,
}

/// The run event for an escrow log, or `None` for logs of other contracts.
pub fn from_log(log: &Log) -> Option<ChainEvent> {
    let ev = decode_log(log)?;
    let tx = log.transaction_hash.unwrap_or_default();
    let block = log.block_number.unwrap_or_default();
    let mut body = json!({ "tx_hash": tx, "block": block });
    let extra = match &ev {
        TaskEscrowEvents::TaskCreated(e) => (
            "subtask_created",
            json!({
                "executor": e.task.executor,
                "amount": e.task.amount.to_string(),
                "deadline": e.task.deadline.to::<u64>(),
                "spec_uri": e.specURI,
                "parent_id": e.parentId.to_string(),
            }),
        ),
        TaskEscrowEvents::TaskAccepted(e) => {
            ("subtask_accepted", json!({ "executor": e.executor }))
        }
        TaskEscrowEvents::TaskCompleted(e) => (
            "subtask_completed",
            json!({ "executor": e.executor, "result_uri": e.resultURI, "at": e.at.to::<u64>() }),
        ),
        TaskEscrowEvents::TaskDisputed(e) => {
            ("subtask_disputed", json!({ "reason_uri": e.reasonURI, "at": e.at.to::<u64>() }))
        }
        TaskEscrowEvents::DisputeRuled(e) => (
            "dispute_ruled",
            json!({ "executor_share_bps": e.executorShareBps, "rationale_uri": e.rationaleURI }),
        ),
        TaskEscrowEvents::RulingAppealed(e) => {
            ("ruling_appealed", json!({ "appellant": e.appellant, "reason_uri": e.reasonURI }))
        }
        TaskEscrowEvents::AppealRuled(e) => (
            "appeal_ruled",
            json!({ "executor_share_bps": e.executorShareBps, "rationale_uri": e.rationaleURI }),
        ),
        TaskEscrowEvents::TaskReassigned(e) => (
            "subtask_reassigned",
            json!({
                "previous_executor": e.previousExecutor,
                "executor": e.newExecutor,
                "deadline": e.newDeadline.to::<u64>(),
            }),
        ),
        TaskEscrowEvents::TaskSettled(e) => {
            let status = Status::try_from(e.status).ok()?;
            let kind = match status {
                Status::Paid | Status::Split => "subtask_paid",
                Status::Refunded => "subtask_refunded",
                Status::Cancelled => "subtask_cancelled",
                Status::Expired => "subtask_expired",
                _ => return None,
            };
            (
                kind,
                json!({
                    "status": status.as_str(),
                    "settlement": SETTLEMENTS.get(usize::from(e.settlement)).copied().unwrap_or("unknown"),
                    "executor_amount": e.executorAmount.to_string(),
                    "funder_amount": e.funderAmount.to_string(),
                }),
            )
        }
        _ => return None,
    };
    let (kind, fields) = extra;
    merge(&mut body, fields);
    Some(ChainEvent { kind, dedup: format!("{tx}:{}", log.log_index.unwrap_or_default()), body })
}

/// For a settlement that ended a dispute (a ruling, an appeal ruling, a
/// finalized ruling or the default refund): the verdict and share.
pub fn dispute_resolution(body: &Value) -> Option<Value> {
    let settlement = body.get("settlement")?.as_str()?;
    if !matches!(settlement, "ruling" | "appeal_ruling" | "ruling_finalized" | "dispute_default") {
        return None;
    }
    let verdict = match body.get("status")?.as_str()? {
        "Paid" => "worker",
        "Refunded" => "client",
        "Split" => "split",
        _ => return None,
    };
    let executor: u128 = body.get("executor_amount")?.as_str()?.parse().ok()?;
    let funder: u128 = body.get("funder_amount")?.as_str()?.parse().ok()?;
    let total = executor + funder;
    let share = (executor * 10_000).checked_div(total).unwrap_or(0);
    Some(json!({ "verdict": verdict, "executor_share_bps": share }))
}

/// The fields every sub-task event carries besides the chain ones.
pub fn subtask_fields(plan: B256, index: u32, attempt: u32, task_id: &str) -> Value {
    json!({ "plan_id": plan, "index": index, "attempt": attempt, "task_id": task_id })
}

/// Adds `extra`'s fields to `body` (both objects).
pub fn merge(body: &mut Value, extra: Value) {
    if let (Some(obj), Value::Object(extra)) = (body.as_object_mut(), extra) {
        obj.extend(extra);
    }
}
