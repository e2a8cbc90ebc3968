//! What a person's decision comes to, given where its sub-task stands:
//! pure, like [`super::step`] (which re-exports it), on the same
//! [`Snapshot`].

use alloy::primitives::Address;
use tessera_bindings::task::Status;

use super::{
    RunError,
    step::{Call, Snapshot},
};
use crate::{
    plan::PlanError,
    state::{DecisionKind, Ignored, Outcome, Pending, Phase, Progress, RowError, RunState},
};

/// What a decision comes to, given where its sub-task stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Close the run (a cancel).
    Close,
    /// Send `call`; on success the outcome is `outcome`, and `executor`
    /// (when set) becomes the sub-task's executor.
    Send {
        /// The sub-task.
        index: u32,
        /// The transaction.
        call: Call,
        /// What it means once it worked.
        outcome: Outcome,
        /// The executor to record once it worked.
        executor: Option<Address>,
    },
    /// Start a new attempt of a sub-task that expired, was cancelled or
    /// was declined.
    Requeue(Progress),
    /// Nothing to do: the decision does not apply now.
    Ignore(Ignored),
}

/// What `decision` comes to for the run in `s`.
pub fn resolve(s: &Snapshot<'_>, decision: &Pending) -> Result<Resolution, RunError> {
    if decision.kind == DecisionKind::Cancel {
        return Ok(Resolution::Close);
    }
    let index = decision.index.ok_or(RowError::DecisionIndex)?;
    let task = s.plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
    let row = s.row(index)?;
    let fresh_deadline = s.now + task.deadline_offset_secs;
    let reason = || decision.arg.clone().unwrap_or_default();
    let new_executor =
        || parse_address(super::money::parse_executor_arg(decision.arg.as_deref()).0);
    use DecisionKind as D;
    Ok(match (decision.kind, row.phase) {
        (D::Approve, Phase::Chain(Status::Completed)) => Resolution::Send {
            index,
            call: Call::Approve,
            outcome: Outcome::Done(decision.kind),
            executor: None,
        },
        (D::Appeal, Phase::Chain(Status::Ruled)) => Resolution::Send {
            index,
            call: Call::Appeal(reason()),
            outcome: Outcome::Done(decision.kind),
            executor: None,
        },
        (D::Dispute, Phase::Chain(Status::Completed)) => Resolution::Send {
            index,
            call: Call::Dispute(reason()),
            outcome: Outcome::Done(decision.kind),
            executor: None,
        },
        (D::Retry | D::Executor, Phase::Chain(Status::Created | Status::Accepted)) => {
            let executor = match decision.kind {
                D::Executor => new_executor()?,
                _ => s.on_chain(index)?.executor,
            };
            Resolution::Send {
                index,
                call: Call::Reassign { executor, deadline: fresh_deadline },
                outcome: Outcome::Reassigned { executor, deadline: fresh_deadline },
                executor: Some(executor),
            }
        }
        (D::Retry | D::Executor, phase) if phase.is_stuck() => {
            let mut next = row.clone();
            if decision.kind == D::Executor {
                next.executor = new_executor()?;
            }
            next.attempt += 1;
            next.phase = Phase::Waiting;
            next.task_id = None;
            next.result_uri = None;
            Resolution::Requeue(next)
        }
        // Not created, the run paused about it (the escrow refused its
        // creation, say): queued again as it is, or for another executor.
        (D::Retry | D::Executor, Phase::Waiting) if s.state == RunState::Paused => {
            let mut next = row.clone();
            if decision.kind == D::Executor {
                next.executor = new_executor()?;
            }
            Resolution::Requeue(next)
        }
        (kind, phase) => Resolution::Ignore(Ignored::NotApplicable { kind, phase }),
    })
}

/// `s` as an address, or why it is not one.
fn parse_address(s: Option<&str>) -> Result<Address, RunError> {
    s.and_then(|s| s.parse().ok())
        .ok_or_else(|| RowError::DecisionAddress(s.map(str::to_owned)).into())
}
