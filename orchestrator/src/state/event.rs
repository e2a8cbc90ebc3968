//! Run events: what the runner reports, typed per kind, and the one
//! conversion to and from the JSON bodies the store keeps and the stream
//! sends.

use crate::plan::PlanId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tessera_bindings::usdc::Usdc;

use super::{CloseReason, DecisionKind, PauseReason, RecoveryStep, Stakes, UnknownWord};

/// The fields of an event derived from an escrow log (sub-task fields, the
/// transaction, and the log's own data), as sent.
pub type Fields = Map<String, Value>;

/// A run event, as stored and streamed: `kind` names it, the other fields
/// are its payload. The store adds `seq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEvent {
    /// A plan was stored as proposed.
    PlanProposed {
        /// The plan.
        plan_id: PlanId,
        /// Its stakes.
        stakes: Stakes,
    },
    /// A proposed plan was edited.
    PlanEdited {
        /// The plan.
        plan_id: PlanId,
        /// The edit, as debug text.
        edit: String,
    },
    /// A plan was approved and starts running.
    PlanApproved {
        /// The plan.
        plan_id: PlanId,
        /// The planned total (a string of base units).
        total_cost: Usdc,
    },
    /// A sub-task's task was created (from the escrow's log).
    SubtaskCreated(Fields),
    /// The executor accepted.
    SubtaskAccepted(Fields),
    /// The executor delivered.
    SubtaskCompleted(Fields),
    /// A delivered sub-task waits for the user's review.
    ReviewRequired(Fields),
    /// A delivered result carries text aimed at a later agent or the judge.
    OutputFlagged(Fields),
    /// A delivered result cannot be read (no source has it, what they
    /// answer is refused, or it stayed out of reach past the runner's
    /// wait): `reason` says which, in a category.
    ResultUnreadable(Fields),
    /// A sub-task's executor neither accepted nor delivered within the
    /// plan's accept window: its task is cancelled at full refund and the
    /// sub-task goes to its `on_decline` policy. `executor` names the
    /// silent agent, `blocks` how long it could have started.
    SubtaskSilent(Fields),
    /// Paid in whole or in part.
    SubtaskPaid(Fields),
    /// The client disputed.
    SubtaskDisputed(Fields),
    /// A dispute was opened (for the UI's drawer).
    DisputeOpened(Fields),
    /// The arbiter ruled.
    DisputeRuled(Fields),
    /// A ruling was appealed.
    RulingAppealed(Fields),
    /// The appeal arbiter ruled.
    AppealRuled(Fields),
    /// A dispute ended: verdict and share.
    DisputeResolved(Fields),
    /// The task went to another executor or got a new deadline.
    SubtaskReassigned(Fields),
    /// Refunded to the funder after a dispute.
    SubtaskRefunded(Fields),
    /// Cancelled before acceptance.
    SubtaskCancelled(Fields),
    /// Expired before delivery.
    SubtaskExpired(Fields),
    /// Its executor declined it on chain, with a reason (read from the
    /// reason URI, bounded); the funder was refunded at once.
    SubtaskDeclined(Fields),
    /// A user decision was taken; `ok` says whether it worked.
    DecisionApplied {
        /// The plan.
        plan_id: PlanId,
        /// The sub-task, when the decision is about one.
        index: Option<u32>,
        /// What was decided.
        decision: DecisionKind,
        /// What came of it, in words.
        outcome: String,
        /// Whether it worked.
        ok: bool,
        /// Why not, when it did not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The contract's decoded refusal, when the chain refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        revert: Option<String>,
    },
    /// The run waits for a recovery decision.
    PlanPaused {
        /// The plan.
        plan_id: PlanId,
        /// The stuck sub-task.
        index: u32,
        /// What to decide.
        reason: PauseReason,
    },
    /// A sub-task was not funded: its cost would take the plan over its
    /// budget. The run pauses with the reason; nothing was sent.
    BudgetExceeded {
        /// The plan.
        plan_id: PlanId,
        /// The sub-task refused.
        index: u32,
        /// Its cost.
        cost: Usdc,
        /// The plan's budget.
        budget: Usdc,
        /// Funded so far (every attempt).
        committed: Usdc,
        /// Returned so far.
        refunded: Usdc,
    },
    /// A person's change of executor raised a sub-task's cost to the new
    /// executor's price (within the budget and the spend cap); nothing but
    /// such a decision raises a cost.
    CostRaised {
        /// The plan.
        plan_id: PlanId,
        /// The sub-task.
        index: u32,
        /// The executor whose price it now costs.
        executor: alloy::primitives::Address,
        /// Its cost before.
        from: Usdc,
        /// Its cost (and approved cost) now.
        to: Usdc,
        /// The decision that raised it.
        decision: i64,
    },
    /// A recovery decision let the run go on.
    PlanResumed {
        /// The plan.
        plan_id: PlanId,
    },
    /// The run closes: in-flight work settles, nothing new starts.
    PlanCancelling {
        /// The plan.
        plan_id: PlanId,
        /// Why.
        reason: CloseReason,
    },
    /// Every sub-task was paid.
    PlanCompleted {
        /// The plan.
        plan_id: PlanId,
        /// How many sub-tasks.
        subtasks: usize,
        /// What the executors were paid (equals `paid`; a string of base
        /// units, as every amount).
        total_cost: Usdc,
        /// What the executors were paid, read from the settlements.
        paid: Usdc,
        /// What went back to the sponsor (split rulings, expired or
        /// cancelled attempts), read from the settlements.
        refunded: Usdc,
    },
    /// A sub-task was skipped, never funded: its condition was false, or
    /// everything it depends on was skipped.
    SubtaskSkipped {
        /// The plan.
        plan_id: PlanId,
        /// The sub-task.
        index: u32,
        /// Why, in words.
        reason: String,
        /// The condition, when one decided.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
    },
    /// The run reached a checkpoint and waits for an approver.
    CheckpointReached {
        /// The plan.
        plan_id: PlanId,
        /// The checkpoint.
        name: String,
        /// The sub-tasks it follows.
        after: Vec<u32>,
        /// Their outputs so far, by index.
        #[serde(with = "outputs")]
        outputs: std::collections::BTreeMap<u32, String>,
        /// Seconds an approver has before its timeout policy applies.
        timeout_secs: u64,
        /// That policy.
        on_timeout: crate::plan::OnTimeout,
    },
    /// A checkpoint was passed.
    CheckpointApproved {
        /// The plan.
        plan_id: PlanId,
        /// The checkpoint.
        name: String,
        /// An approver, or the checkpoint's timeout policy.
        by: super::Decider,
    },
    /// A checkpoint stopped the run.
    CheckpointRejected {
        /// The plan.
        plan_id: PlanId,
        /// The checkpoint.
        name: String,
        /// An approver, or the checkpoint's timeout policy.
        by: super::Decider,
        /// The approver's reason, if given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A checkpoint's timeout passed it to a person; the run's decision
    /// timeout runs from now.
    CheckpointEscalated {
        /// The plan.
        plan_id: PlanId,
        /// The checkpoint.
        name: String,
    },
    /// The runner recovered a sub-task on its own, by the plan's policy.
    RecoveryApplied {
        /// The plan.
        plan_id: PlanId,
        /// The sub-task.
        index: u32,
        /// The policy step applied (`retry(2)`, `reassign`).
        policy: RecoveryStep,
        /// The new attempt.
        attempt: u32,
        /// Why, in words (what happened, and to whom the work went).
        reason: String,
    },
    /// A sub-task's task, or part of its history, was reorganised out of
    /// the chain (a block holding its creation, its settlement or another
    /// step was replaced): the runner goes back to where the chain now has
    /// it and sends again (a creation under the same reference, so the same
    /// task id), or sends a decision's transaction again. Told once per
    /// reorganisation seen.
    SubtaskReorged {
        /// The plan.
        plan_id: PlanId,
        /// The sub-task.
        index: u32,
        /// Its attempt.
        attempt: u32,
        /// The escrow task id.
        task_id: String,
        /// Its phase before (`created`, `paid`, …).
        was: String,
        /// Its phase now (`waiting` when its creation went).
        now: String,
        /// For a person's decision whose transaction went: the decision,
        /// sent again before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sent_again: Option<String>,
    },
    /// Every leaf of a nested plan was paid: the nested step is settled and
    /// its output is its last leaves' output.
    NestedCompleted {
        /// The root plan.
        plan_id: PlanId,
        /// The nested step's path (`1`, `2.1`).
        path: String,
        /// The nested plan's own id.
        nested_plan_id: PlanId,
        /// Its leaves.
        subtasks: usize,
        /// What its executors were paid.
        paid: Usdc,
        /// Its budget share.
        budget: Usdc,
    },
    /// The run ended without completing.
    PlanFailed {
        /// The plan.
        plan_id: PlanId,
        /// Why.
        reason: CloseReason,
    },
    /// The run's driver failed or panicked and was started again.
    DriverRestarted {
        /// The plan.
        plan_id: PlanId,
        /// The error or panic message.
        error: String,
        /// Restarts so far in this process.
        restarts: u32,
    },
}

/// Serde for a checkpoint's outputs by index: the JSON object's keys are
/// strings, read back as indexes (inside the tagged enum serde buffers
/// them, and a buffered key does not parse as a number by itself).
mod outputs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(
        outputs: &BTreeMap<u32, String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        outputs.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<u32, String>, D::Error> {
        BTreeMap::<String, String>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| k.parse().map(|k| (k, v)).map_err(D::Error::custom))
            .collect()
    }
}

words!(
    /// The name of a run event.
    EventKind, "event kind", {
        /// See [`RunEvent::PlanProposed`].
        PlanProposed => "plan_proposed",
        /// See [`RunEvent::PlanEdited`].
        PlanEdited => "plan_edited",
        /// See [`RunEvent::PlanApproved`].
        PlanApproved => "plan_approved",
        /// See [`RunEvent::SubtaskCreated`].
        SubtaskCreated => "subtask_created",
        /// See [`RunEvent::SubtaskAccepted`].
        SubtaskAccepted => "subtask_accepted",
        /// See [`RunEvent::SubtaskCompleted`].
        SubtaskCompleted => "subtask_completed",
        /// See [`RunEvent::ReviewRequired`].
        ReviewRequired => "review_required",
        /// See [`RunEvent::OutputFlagged`].
        OutputFlagged => "output_flagged",
        /// See [`RunEvent::ResultUnreadable`].
        ResultUnreadable => "result_unreadable",
        /// See [`RunEvent::SubtaskSilent`].
        SubtaskSilent => "subtask_silent",
        /// See [`RunEvent::SubtaskPaid`].
        SubtaskPaid => "subtask_paid",
        /// See [`RunEvent::SubtaskDisputed`].
        SubtaskDisputed => "subtask_disputed",
        /// See [`RunEvent::DisputeOpened`].
        DisputeOpened => "dispute_opened",
        /// See [`RunEvent::DisputeRuled`].
        DisputeRuled => "dispute_ruled",
        /// See [`RunEvent::RulingAppealed`].
        RulingAppealed => "ruling_appealed",
        /// See [`RunEvent::AppealRuled`].
        AppealRuled => "appeal_ruled",
        /// See [`RunEvent::DisputeResolved`].
        DisputeResolved => "dispute_resolved",
        /// See [`RunEvent::SubtaskReassigned`].
        SubtaskReassigned => "subtask_reassigned",
        /// See [`RunEvent::SubtaskRefunded`].
        SubtaskRefunded => "subtask_refunded",
        /// See [`RunEvent::SubtaskCancelled`].
        SubtaskCancelled => "subtask_cancelled",
        /// See [`RunEvent::SubtaskExpired`].
        SubtaskExpired => "subtask_expired",
        /// See [`RunEvent::SubtaskDeclined`].
        SubtaskDeclined => "subtask_declined",
        /// See [`RunEvent::DecisionApplied`].
        DecisionApplied => "decision_applied",
        /// See [`RunEvent::PlanPaused`].
        PlanPaused => "plan_paused",
        /// See [`RunEvent::BudgetExceeded`].
        BudgetExceeded => "budget_exceeded",
        /// See [`RunEvent::CostRaised`].
        CostRaised => "cost_raised",
        /// See [`RunEvent::PlanResumed`].
        PlanResumed => "plan_resumed",
        /// See [`RunEvent::PlanCancelling`].
        PlanCancelling => "plan_cancelling",
        /// See [`RunEvent::PlanCompleted`].
        PlanCompleted => "plan_completed",
        /// See [`RunEvent::SubtaskSkipped`].
        SubtaskSkipped => "subtask_skipped",
        /// See [`RunEvent::CheckpointReached`].
        CheckpointReached => "checkpoint_reached",
        /// See [`RunEvent::CheckpointApproved`].
        CheckpointApproved => "checkpoint_approved",
        /// See [`RunEvent::CheckpointRejected`].
        CheckpointRejected => "checkpoint_rejected",
        /// See [`RunEvent::CheckpointEscalated`].
        CheckpointEscalated => "checkpoint_escalated",
        /// See [`RunEvent::RecoveryApplied`].
        RecoveryApplied => "recovery_applied",
        /// See [`RunEvent::SubtaskReorged`].
        SubtaskReorged => "subtask_reorged",
        /// See [`RunEvent::NestedCompleted`].
        NestedCompleted => "nested_completed",
        /// See [`RunEvent::PlanFailed`].
        PlanFailed => "plan_failed",
        /// See [`RunEvent::DriverRestarted`].
        DriverRestarted => "driver_restarted",
    }
);

impl EventKind {
    /// Whether a run's stream ends after this event.
    pub fn is_final(self) -> bool {
        matches!(self, Self::PlanCompleted | Self::PlanFailed)
    }
}

impl RunEvent {
    /// The event for a chain-derived `kind` with `fields`; `None` for kinds
    /// the runner makes itself.
    pub fn from_chain(kind: EventKind, fields: Fields) -> Option<Self> {
        use EventKind as K;
        Some(match kind {
            K::SubtaskCreated => Self::SubtaskCreated(fields),
            K::SubtaskAccepted => Self::SubtaskAccepted(fields),
            K::SubtaskCompleted => Self::SubtaskCompleted(fields),
            K::ReviewRequired => Self::ReviewRequired(fields),
            K::OutputFlagged => Self::OutputFlagged(fields),
            K::SubtaskPaid => Self::SubtaskPaid(fields),
            K::SubtaskDisputed => Self::SubtaskDisputed(fields),
            K::DisputeOpened => Self::DisputeOpened(fields),
            K::DisputeRuled => Self::DisputeRuled(fields),
            K::RulingAppealed => Self::RulingAppealed(fields),
            K::AppealRuled => Self::AppealRuled(fields),
            K::DisputeResolved => Self::DisputeResolved(fields),
            K::SubtaskReassigned => Self::SubtaskReassigned(fields),
            K::SubtaskRefunded => Self::SubtaskRefunded(fields),
            K::SubtaskCancelled => Self::SubtaskCancelled(fields),
            K::SubtaskExpired => Self::SubtaskExpired(fields),
            K::SubtaskDeclined => Self::SubtaskDeclined(fields),
            _ => return None,
        })
    }

    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        use EventKind as K;
        match self {
            Self::PlanProposed { .. } => K::PlanProposed,
            Self::PlanEdited { .. } => K::PlanEdited,
            Self::PlanApproved { .. } => K::PlanApproved,
            Self::SubtaskCreated(_) => K::SubtaskCreated,
            Self::SubtaskAccepted(_) => K::SubtaskAccepted,
            Self::SubtaskCompleted(_) => K::SubtaskCompleted,
            Self::ReviewRequired(_) => K::ReviewRequired,
            Self::OutputFlagged(_) => K::OutputFlagged,
            Self::ResultUnreadable(_) => K::ResultUnreadable,
            Self::SubtaskSilent(_) => K::SubtaskSilent,
            Self::SubtaskPaid(_) => K::SubtaskPaid,
            Self::SubtaskDisputed(_) => K::SubtaskDisputed,
            Self::DisputeOpened(_) => K::DisputeOpened,
            Self::DisputeRuled(_) => K::DisputeRuled,
            Self::RulingAppealed(_) => K::RulingAppealed,
            Self::AppealRuled(_) => K::AppealRuled,
            Self::DisputeResolved(_) => K::DisputeResolved,
            Self::SubtaskReassigned(_) => K::SubtaskReassigned,
            Self::SubtaskRefunded(_) => K::SubtaskRefunded,
            Self::SubtaskCancelled(_) => K::SubtaskCancelled,
            Self::SubtaskExpired(_) => K::SubtaskExpired,
            Self::SubtaskDeclined(_) => K::SubtaskDeclined,
            Self::DecisionApplied { .. } => K::DecisionApplied,
            Self::PlanPaused { .. } => K::PlanPaused,
            Self::BudgetExceeded { .. } => K::BudgetExceeded,
            Self::CostRaised { .. } => K::CostRaised,
            Self::PlanResumed { .. } => K::PlanResumed,
            Self::PlanCancelling { .. } => K::PlanCancelling,
            Self::PlanCompleted { .. } => K::PlanCompleted,
            Self::SubtaskSkipped { .. } => K::SubtaskSkipped,
            Self::CheckpointReached { .. } => K::CheckpointReached,
            Self::CheckpointApproved { .. } => K::CheckpointApproved,
            Self::CheckpointRejected { .. } => K::CheckpointRejected,
            Self::CheckpointEscalated { .. } => K::CheckpointEscalated,
            Self::RecoveryApplied { .. } => K::RecoveryApplied,
            Self::SubtaskReorged { .. } => K::SubtaskReorged,
            Self::NestedCompleted { .. } => K::NestedCompleted,
            Self::PlanFailed { .. } => K::PlanFailed,
            Self::DriverRestarted { .. } => K::DriverRestarted,
        }
    }

    /// The body as stored (without `seq`, which the store adds).
    pub fn to_body(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// Reads a stored body back.
    pub fn from_body(body: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(body)
    }
}
