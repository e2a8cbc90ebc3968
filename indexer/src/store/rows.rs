//! The typed rows the index's queries answer, decoded from their columns
//! in one place each; serialized, they are the API's JSON.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::{Row, any::AnyRow};
use tessera_bindings::usdc::Usdc;
use tessera_db::DbError;

use crate::{
    derive::{AppealRow, DisputeRow, RulingRow, TaskRow},
    store::codecs::{amount_from_column, amount_from_text, groups_from_column},
};

/// A task as listed (every column but its history): the same row the fold
/// writes, read back.
pub type TaskView = TaskRow;

/// Decodes a row of `ix_tasks` read with the listed columns.
pub(super) fn task_from_row(r: &AnyRow) -> Result<TaskView, DbError> {
    const TABLE: &str = "ix_tasks";
    let to_u64 = |column: &'static str, v: i64| {
        u64::try_from(v)
            .map_err(|_| DbError::Corrupt { table: TABLE, detail: format!("{column} = {v}") })
    };
    let uint = |column: &'static str| to_u64(column, r.try_get(column)?);
    let opt_uint = |column: &'static str| -> Result<Option<u64>, DbError> {
        r.try_get::<Option<i64>, _>(column)?.map(|v| to_u64(column, v)).transpose()
    };
    Ok(TaskRow {
        task_id: r.try_get("task_id")?,
        plan_id: r.try_get("plan_id")?,
        parent_id: r.try_get("parent_id")?,
        funder: r.try_get("funder")?,
        client: r.try_get("client")?,
        executor: r.try_get("executor")?,
        amount: amount_from_text(&r.try_get::<String, _>("amount")?, TABLE)?,
        status: r.try_get("status")?,
        spec_uri: r.try_get("spec_uri")?,
        result_uri: r.try_get("result_uri")?,
        capability: r.try_get("capability")?,
        spec: r.try_get("spec")?,
        // Edges live in `ix_task_inputs`; a lineage answer reads them.
        inputs: Vec::new(),
        path: r.try_get("path")?,
        groups: groups_from_column(r.try_get("groups")?)?,
        envelope_error: r.try_get("envelope_error")?,
        flagged: r.try_get("flagged")?,
        created_block: uint("created_block")?,
        updated_block: uint("updated_block")?,
        created_at: uint("created_at")?,
        accepted_at: opt_uint("accepted_at")?,
        completed_at: opt_uint("completed_at")?,
        settled_at: opt_uint("settled_at")?,
        disputed: r.try_get::<i64, _>("disputed")? == 1,
        executor_paid: amount_from_column(r.try_get("executor_paid")?, TABLE)?,
        decline_reason_uri: r.try_get("decline_reason_uri")?,
        decline_reason: r.try_get("decline_reason")?,
        decline_error: r.try_get("decline_error")?,
        late_decline: r.try_get::<i64, _>("late_decline")? == 1,
        settlement: r.try_get("settlement")?,
        rating: r
            .try_get::<Option<i64>, _>("rating")?
            .map(|v| {
                u8::try_from(v)
                    .ok()
                    .filter(|v| *v <= tessera_bindings::task::MAX_RATING)
                    .ok_or_else(|| DbError::Corrupt {
                        table: TABLE,
                        detail: format!("rating = {v}"),
                    })
            })
            .transpose()?,
        dispute: dispute_from_row(r)?,
        envelope: None,
        result: None,
    })
    .map(|mut row| {
        crate::content::fill(&mut row, None);
        row
    })
}

/// A task's dispute from its columns; `None` when it was never disputed.
fn dispute_from_row(r: &AnyRow) -> Result<Option<DisputeRow>, DbError> {
    let Some(disputed_at) = r.try_get::<Option<i64>, _>("disputed_at")? else { return Ok(None) };
    let time = |column: &'static str, v: i64| {
        u64::try_from(v)
            .map_err(|_| DbError::Corrupt { table: "ix_tasks", detail: format!("{column} = {v}") })
    };
    let ruling = |at: &'static str, share: &'static str, uri: &'static str, by: &'static str| {
        let Some(when) = r.try_get::<Option<i64>, _>(at)? else { return Ok(None) };
        let bps: i64 = r.try_get::<Option<i64>, _>(share)?.unwrap_or_default();
        let bps = u16::try_from(bps).map_err(|_| DbError::Corrupt {
            table: "ix_tasks",
            detail: format!("{share} = {bps}"),
        })?;
        Ok::<_, DbError>(Some(RulingRow::new(
            bps,
            r.try_get::<Option<String>, _>(by)?.unwrap_or_default(),
            time(at, when)?,
            r.try_get::<Option<String>, _>(uri)?.unwrap_or_default(),
        )))
    };
    let appeal = match r.try_get::<Option<i64>, _>("appealed_at")? {
        Some(at) => Some(AppealRow {
            appellant: r.try_get::<Option<String>, _>("appellant")?.unwrap_or_default(),
            at: time("appealed_at", at)?,
            reason_uri: r.try_get::<Option<String>, _>("appeal_reason_uri")?.unwrap_or_default(),
            reason: None,
            ruling: ruling(
                "appeal_ruled_at",
                "appeal_share_bps",
                "appeal_rationale_uri",
                "appeal_arbiter",
            )?,
        }),
        None => None,
    };
    Ok(Some(DisputeRow {
        state: String::new(),
        disputed_at: time("disputed_at", disputed_at)?,
        reason_uri: r.try_get::<Option<String>, _>("dispute_reason_uri")?.unwrap_or_default(),
        reason: None,
        ruling: ruling("ruled_at", "ruling_share_bps", "ruling_rationale_uri", "ruling_arbiter")?,
        appeal,
    }))
}

/// One checked transition of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    /// Block.
    pub block: u64,
    /// Log index.
    pub log_index: u64,
    /// Event name.
    pub event: String,
    /// Status before.
    pub from: String,
    /// Status after (unchanged when refused).
    pub to: String,
    /// Whether the state machine allows it.
    pub valid: bool,
    /// Why not, when not.
    pub problem: Option<String>,
}

/// A transaction that emitted one of a task's events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskTransaction {
    /// Block.
    pub block: i64,
    /// Event name.
    pub event: String,
    /// Transaction hash (0x hex).
    pub tx_hash: String,
}

/// One task with its history and transactions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskDetail {
    /// The task.
    #[serde(flatten)]
    pub task: TaskView,
    /// Its checked transitions, in chain order.
    pub history: Vec<HistoryEntry>,
    /// The transactions of its first events.
    pub transactions: Vec<TaskTransaction>,
}

/// A task in a plan's lineage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeNode {
    /// The task.
    #[serde(flatten)]
    pub task: TaskView,
    /// Depth under the plan; `None` when no root reaches it (detached).
    pub depth: Option<i64>,
    /// Its parent is not indexed (yet).
    pub pending_parent: bool,
    /// In or under a parent cycle, or deeper than the walk goes.
    pub detached: bool,
    /// Its amount and those of its descendants in the tree.
    pub subtree_cost: Usdc,
    /// The upstream tasks its envelope names as inputs (every dependency
    /// edge besides the parent link), in the envelope's order.
    pub inputs: Vec<String>,
    /// It depends on two or more tasks (parent and inputs together): a
    /// merge in the plan's graph.
    pub merge: bool,
}

/// A plan's lineage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanTree {
    /// The plan id (lower case).
    pub plan_id: String,
    /// The address whose tasks make the plan (the funder of its first
    /// task, unless the caller named it); `None` when no task names it.
    pub sponsor: Option<String>,
    /// Its tasks, by depth, then creation block, then id; detached last:
    /// the sponsor's, and under each task those its executor funded.
    pub tasks: Vec<TreeNode>,
    /// More tasks than a lineage answer lists.
    pub truncated: bool,
    /// Tasks naming the plan, or one of its tasks as parent, funded by
    /// someone else: listed apart, by creation, never in the tree's costs
    /// or its bound.
    pub foreign: Vec<TaskView>,
    /// More foreign tasks than are listed.
    pub foreign_truncated: bool,
}

/// An agent's registry state and statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentView {
    /// Address.
    pub agent: String,
    /// Where it stands (`active`, `paused` or `left`).
    pub status: crate::derive::AgentStatus,
    /// Card URI.
    pub metadata_uri: String,
    /// The card's id, when the URI holds a valid agent card (read with the
    /// one card decoder, `tessera_bindings::card`); `None` otherwise.
    pub name: Option<String>,
    /// Capability name → price (base units); `None` when unreadable.
    pub offers: Option<BTreeMap<String, String>>,
    /// Block of registration.
    pub registered_block: i64,
    /// What its tasks show.
    pub stats: AgentStats,
    /// Its ERC-8004 identity, when it linked one.
    pub identity: Option<super::feedback::IdentityView>,
    /// ERC-8004 feedback on that identity, matched against settlements.
    pub feedback: super::feedback::FeedbackSummary,
}

/// An agent's statistics over its tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentStats {
    /// Tasks it executes or executed.
    pub tasks: i64,
    /// Paid or split.
    pub completed: i64,
    /// Ever disputed.
    pub disputed: i64,
    /// Refunded in full after a dispute (a dispute the agent lost).
    pub refunded: i64,
    /// Expired: not accepted, or not delivered, before the deadline; or
    /// declined late ([`tessera_records::decline_is_late`]).
    pub expired: i64,
    /// Declined by the agent before it delivered, in time (a late decline
    /// counts as expired).
    pub declined: i64,
    /// Everything it was paid.
    pub earnings: Usdc,
    /// Median seconds from creation to acceptance.
    pub median_accept_secs: Option<i64>,
    /// Median seconds from acceptance to delivery.
    pub median_completion_secs: Option<i64>,
    /// Completed over settled, when any settled.
    pub success_rate: Option<f64>,
    /// The record weighed by the money and the distinct funders behind it
    /// (no sponsor's own history weighed up): what selection scores.
    pub evidence: super::evidence::Evidence,
    /// Chain seconds of its latest sign of life as an executor: a task
    /// accepted, delivered or declined (`None`: never seen working).
    pub last_active_at: Option<i64>,
}
