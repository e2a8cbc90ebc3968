//! The step function: from a run's typed state (the run, its plan, the
//! sub-task rows, their on-chain records, the time) to what should happen
//! next. Pure: no chain, no store, no clock; [`super::tick`] reads the
//! inputs, calls these, and carries the actions out.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy::primitives::Address;
use serde_json::Value;
use tessera_bindings::{
    envelope::{Input, Upstream},
    task::{Status, TaskRecord},
};

use super::RunError;
pub use super::resolve::{Resolution, resolve};
use crate::{
    plan::{DisputePolicy, Plan, PlanError, Policy, ReviewMode},
    state::{CloseReason, Gate, Gates, Phase, Progress, RunState},
};

/// What the runner needs to know of a sub-task's current on-chain task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnChain {
    /// Its status.
    pub status: Status,
    /// Its executor.
    pub executor: Address,
    /// Its deadline, chain seconds.
    pub deadline: u64,
    /// When it last changed, chain seconds.
    pub updated_at: u64,
    /// Its review window, seconds.
    pub review_window: u64,
    /// Its dispute window, seconds.
    pub dispute_window: u64,
    /// Whether its executor accepted it (an expiry then means work not
    /// delivered in time; otherwise nobody accepted).
    pub accepted: bool,
    /// The block its executor was last offered it in (its creation or
    /// latest reassignment); 0 when not read.
    pub offered_block: u64,
    /// The block of its latest change; 0 when not read.
    pub last_block: u64,
}

impl OnChain {
    /// The facts of `rec`; `accepted` is read from its logs by the caller.
    pub fn of(rec: &TaskRecord) -> Self {
        Self {
            status: rec.status(),
            executor: rec.task.executor,
            deadline: rec.task.deadline.to::<u64>(),
            updated_at: rec.task.updatedAt.to::<u64>(),
            review_window: u64::from(rec.task.reviewWindow),
            dispute_window: u64::from(rec.task.disputeWindow),
            accepted: false,
            offered_block: 0,
            last_block: 0,
        }
    }
}

/// A transaction the sponsor sends on a sub-task's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Approve and pay a delivered task.
    Approve,
    /// Release payment after a silent review window.
    Release,
    /// Cancel a task nobody accepted yet.
    Cancel,
    /// Take back the money of a task past its deadline.
    RefundExpired,
    /// Take the default refund of a dispute nobody ruled in time.
    ClaimDefault,
    /// Dispute a delivery, with this reason.
    Dispute(String),
    /// Appeal a ruling, with this reason.
    Appeal(String),
    /// Give the task to `executor` until `deadline`.
    Reassign {
        /// The executor.
        executor: Address,
        /// The new deadline, chain seconds.
        deadline: u64,
    },
}

/// One thing a step does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Mark a sub-task that never started as skipped (the run is closing).
    Skip(u32),
    /// Skip a sub-task the plan itself leaves out: its condition is false,
    /// or everything it depends on was skipped. Never funded.
    Leave {
        /// The sub-task.
        index: u32,
        /// Why, in words.
        reason: String,
        /// The condition that decided, if one did.
        condition: Option<String>,
    },
    /// Create the escrowed task of a sub-task whose dependencies are paid.
    Create {
        /// The sub-task.
        index: u32,
        /// The dependencies' outputs.
        inputs: Vec<Input>,
    },
    /// Send a transaction on a sub-task's task. A refusal means someone
    /// moved first: the next look at the chain tells what happened.
    Send {
        /// The sub-task.
        index: u32,
        /// The transaction.
        call: Call,
    },
    /// Wait for a recovery decision about a stuck sub-task.
    Pause {
        /// The sub-task.
        index: u32,
        /// Its attempt.
        attempt: u32,
        /// What to decide.
        reason: String,
    },
    /// Recover a sub-task on its own by the plan's policy (never `pause`,
    /// which is [`Action::Pause`]).
    Recover {
        /// The sub-task.
        index: u32,
        /// Its attempt that ended.
        attempt: u32,
        /// What happened to it.
        failure: Failure,
        /// The policy that applies.
        policy: Policy,
    },
    /// Cancel a task its executor left silent past the plan's accept
    /// window (see [`Snapshot::silent_for`]), telling who and how long.
    Silent {
        /// The sub-task.
        index: u32,
        /// Its attempt.
        attempt: u32,
        /// The executor that showed no sign of life.
        executor: Address,
        /// Blocks it could have started in.
        blocks: u64,
    },
    /// Start closing the run.
    Close(CloseReason),
    /// Upfront funding: move a dependant whose upstream did not deliver to
    /// its next attempt, waiting (no policy applies, and no person is
    /// asked): it is funded again with its upstream's next attempt.
    Rewind {
        /// The sub-task.
        index: u32,
        /// Its attempt that ended.
        attempt: u32,
    },
}

/// Whether an upstream in `phase` may still deliver, or has: funded and
/// not ended, delivered, or paid.
fn upstream_live(phase: Phase) -> bool {
    matches!(phase, Phase::Chain(Status::Created | Status::Accepted | Status::Completed))
        || phase.is_paid()
}

/// How a sub-task's attempt ended without a paid result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Nobody accepted it before its deadline (or it was cancelled).
    Declined,
    /// Its executor declined it on chain (`declineTask`: it cannot do it;
    /// the funder was refunded at once). Recovered by the `on_decline`
    /// policy, in the next block rather than at the deadline.
    DeclinedByExecutor,
    /// Accepted, but not delivered before its deadline.
    Expired,
    /// Its dispute ended in a full refund.
    DisputeLost,
    /// The escrow refused to create it for its executor (no longer offering
    /// the capability at no more than the cost: paused, a raised price,
    /// gone), with the decoded revert; never created, nothing spent.
    Refused(String),
    /// Its executor neither accepted nor delivered within the plan's accept
    /// window: cancelled at full refund. Recovered by the `on_decline`
    /// policy.
    Silent {
        /// The executor that showed no sign of life.
        executor: Address,
    },
}

impl Failure {
    /// In words, for events and pauses.
    pub fn describe(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Self::Declined => "nobody accepted it before its deadline".into(),
            Self::DeclinedByExecutor => "its executor declined it on chain".into(),
            Self::Expired => "it was accepted but not delivered before its deadline".into(),
            Self::DisputeLost => "its dispute ended in a full refund".into(),
            Self::Refused(revert) => {
                format!("the escrow refused to create it for its executor: {revert}").into()
            }
            Self::Silent { executor } => format!(
                "its executor {executor} neither accepted nor delivered within the accept window"
            )
            .into(),
        }
    }
}

/// A run's state as one step sees it.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// Where the run stands.
    pub state: RunState,
    /// The plan.
    pub plan: &'a Plan,
    /// Each sub-task's progress.
    pub rows: &'a BTreeMap<u32, Progress>,
    /// Each created sub-task's current on-chain task.
    pub chain: &'a HashMap<u32, OnChain>,
    /// Chain time, seconds.
    pub now: u64,
    /// The head's block number.
    pub head_block: u64,
    /// The result documents of paid or delivered sub-tasks a waiting
    /// sub-task's condition reads (missing ones read as `null`).
    pub results: &'a HashMap<u32, Value>,
    /// Sub-tasks held back by a checkpoint not yet passed (see [`held`]).
    pub held: &'a BTreeSet<u32>,
    /// Delivered sub-tasks whose result cannot be read, and why (see
    /// [`super::reach`]): under auto review they are disputed, never paid.
    pub unreadable: &'a BTreeMap<u32, super::reach::Unreadable>,
}

impl Snapshot<'_> {
    pub(super) fn row(&self, index: u32) -> Result<&Progress, RunError> {
        self.rows.get(&index).ok_or(RunError::Inconsistent { index, what: "no progress row" })
    }

    pub(super) fn on_chain(&self, index: u32) -> Result<&OnChain, RunError> {
        self.chain.get(&index).ok_or(RunError::Inconsistent { index, what: "no on-chain task" })
    }

    /// Whether every upstream of `task` may still deliver, or has.
    /// A delivered result that cannot be read stands for nothing: a
    /// dependant cannot work on it.
    fn upstream_stands(&self, task: &crate::plan::SubTask) -> Result<bool, RunError> {
        for dep in &task.depends_on {
            if !upstream_live(self.row(*dep)?.phase) || self.unreadable.contains_key(dep) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// How many blocks the created, unaccepted task of `task` has waited
    /// past the plan's accept window, when it has: counted from when its
    /// executor could start (offered the task, every upstream delivered),
    /// and never before as many chain seconds have passed, so a chain that
    /// mines a block per transaction does not end the window early.
    pub fn silent_for(&self, task: &crate::plan::SubTask) -> Result<Option<u64>, RunError> {
        let rec = self.on_chain(task.index)?;
        let Some(blocks) = self.waited(task, self.head_block)? else { return Ok(None) };
        let window = u64::from(self.plan.accept_window_blocks);
        Ok((self.now.saturating_sub(rec.updated_at) > window).then_some(blocks))
    }

    /// Blocks from when `task`'s executor could start to `until`, when
    /// more than the plan's accept window.
    fn waited(&self, task: &crate::plan::SubTask, until: u64) -> Result<Option<u64>, RunError> {
        let window = u64::from(self.plan.accept_window_blocks);
        let rec = self.on_chain(task.index)?;
        if window == 0 || rec.offered_block == 0 || !self.upstream_delivered(task)? {
            return Ok(None);
        }
        let mut since = rec.offered_block;
        for dep in &task.depends_on {
            since = since.max(self.chain.get(dep).map_or(0, |d| d.last_block));
        }
        let blocks = until.saturating_sub(since);
        Ok((blocks > window).then_some(blocks))
    }

    /// Whether every upstream of `task` has delivered (or been paid).
    fn upstream_delivered(&self, task: &crate::plan::SubTask) -> Result<bool, RunError> {
        for dep in &task.depends_on {
            let phase = self.row(*dep)?.phase;
            if !(phase.is_paid() || phase == Phase::Chain(Status::Completed)) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Every step that is due, in the plan's dependency order.
pub fn steps(s: &Snapshot<'_>) -> Result<Vec<Action>, RunError> {
    let closing = s.state == RunState::Cancelling;
    let running = s.state == RunState::Running;
    let upfront = s.plan.is_upfront();
    // Upfront: the sub-tasks created in this step, so their dependants go
    // out in the same batch, naming them.
    let mut creating = BTreeSet::new();
    let mut actions = Vec::new();
    for index in s.plan.topological_order()? {
        let task = s.plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
        let row = s.row(index)?;
        match row.phase {
            Phase::Waiting if closing => actions.push(Action::Skip(index)),
            Phase::Waiting if running && upfront => {
                let deps =
                    task.depends_on.iter().map(|d| s.row(*d)).collect::<Result<Vec<_>, _>>()?;
                if !deps.iter().all(|d| creating.contains(&d.idx) || upstream_live(d.phase)) {
                    continue;
                }
                creating.insert(index);
                let inputs = deps
                    .iter()
                    .map(|d| Input {
                        from: d.idx,
                        // Filled in from the upstream's current attempt when
                        // the creation is sent (see the tick).
                        task_id: None,
                        output: String::new(),
                        upstream: Some(Upstream {
                            plan: s.plan.id.into(),
                            path: s.plan.path_of(d.idx).to_string(),
                        }),
                    })
                    .collect();
                actions.push(Action::Create { index, inputs });
            }
            Phase::Waiting if running && !s.held.contains(&index) => {
                let deps =
                    task.depends_on.iter().map(|d| s.row(*d)).collect::<Result<Vec<_>, _>>()?;
                // A delivered dependency under auto review is approved in
                // this same step, so its dependants go out beside the approval.
                let ready = |d: &Progress| {
                    d.phase.is_paid()
                        || d.phase == Phase::Skipped
                        || (s.plan.review_of(d.idx) == ReviewMode::Auto
                            && d.phase == Phase::Chain(Status::Completed)
                            && d.output.is_some())
                };
                if !deps.iter().all(|d| ready(d)) {
                    continue;
                }
                // A sub-task whose dependencies were all skipped is
                // skipped; one with some skipped runs on the others' outputs.
                if !deps.is_empty() && deps.iter().all(|d| d.phase == Phase::Skipped) {
                    actions.push(Action::Leave {
                        index,
                        reason: "everything it depends on was skipped".into(),
                        condition: None,
                    });
                    continue;
                }
                // The conditions of the nested steps it lies in, then its own.
                let mut false_one = None;
                for (whose, when) in s.plan.conditions_of(index) {
                    let condition = when
                        .condition()
                        .map_err(|source| RunError::Condition { step: whose.clone(), source })?;
                    if !condition.eval(s.results) {
                        false_one = Some((whose, when));
                        break;
                    }
                }
                if let Some((whose, when)) = false_one {
                    let shown = s.plan.condition_by_path(when);
                    let reason = if whose == s.plan.path_of(index) {
                        format!("its condition `{shown}` is false")
                    } else {
                        format!("the condition `{shown}` of nested step {whose} is false")
                    };
                    actions.push(Action::Leave { index, reason, condition: Some(shown) });
                    continue;
                }
                let inputs = deps
                    .iter()
                    .filter(|d| d.phase != Phase::Skipped)
                    .map(|d| {
                        Input::carried(
                            d.idx,
                            d.task_id.clone(),
                            d.output.clone().unwrap_or_default(),
                        )
                    })
                    .collect();
                actions.push(Action::Create { index, inputs });
            }
            Phase::Chain(Status::Created) if closing => {
                actions.push(Action::Send { index, call: Call::Cancel });
            }
            // Upfront: an upstream that will not deliver (declined, expired,
            // cancelled, disputed, or gone back to wait for a new attempt)
            // has its dependants still waiting cancelled and refunded:
            // nobody is paid for work on a missing input.
            Phase::Chain(Status::Created) if upfront && !s.upstream_stands(task)? => {
                actions.push(Action::Send { index, call: Call::Cancel });
            }
            Phase::Chain(status @ (Status::Created | Status::Accepted)) => {
                let rec = s.on_chain(index)?;
                if s.now > rec.deadline {
                    actions.push(Action::Send { index, call: Call::RefundExpired });
                } else if status == Status::Created
                    && running
                    && let Some(blocks) = s.silent_for(task)?
                {
                    let (attempt, executor) = (row.attempt, rec.executor);
                    actions.push(Action::Silent { index, attempt, executor, blocks });
                }
            }
            Phase::Chain(Status::Completed) => {
                let rec = s.on_chain(index)?;
                let auto = s.plan.review_of(index) == ReviewMode::Auto;
                if let Some(why) = s.unreadable.get(&index).filter(|_| auto) {
                    let reason = format!("the delivered result cannot be read: {why}");
                    actions.push(Action::Send { index, call: Call::Dispute(reason) });
                } else if auto {
                    // Paid only once read: a result still out of reach
                    // waits (within the runner's result wait).
                    if row.output.is_some() {
                        actions.push(Action::Send { index, call: Call::Approve });
                    }
                } else if s.now > rec.updated_at + rec.review_window {
                    actions.push(Action::Send { index, call: Call::Release });
                }
            }
            Phase::Chain(Status::Disputed) => {
                // Nobody ruled in time: anyone may claim the default refund.
                let rec = s.on_chain(index)?;
                if s.now > rec.updated_at + rec.dispute_window {
                    actions.push(Action::Send { index, call: Call::ClaimDefault });
                }
            }
            // Upfront: a dependant cancelled for its upstream (or ended
            // while its upstream had not delivered) waits for the
            // upstream's next attempt, under a new reference of its own,
            // rather than going to its own recovery policy.
            phase if phase.is_stuck() && !closing && upfront && !s.upstream_delivered(task)? => {
                actions.push(Action::Rewind { index, attempt: row.attempt });
            }
            phase if phase.is_stuck() && !closing => {
                let accepted = s.chain.get(&index).is_some_and(|c| c.accepted);
                let recovery = s.plan.recovery.with(task.recovery.as_ref());
                let (failure, policy) = if phase == Phase::Chain(Status::Declined) {
                    (Failure::DeclinedByExecutor, recovery.on_decline)
                } else if phase == Phase::Chain(Status::Cancelled)
                    && !accepted
                    && let Some(rec) = s.chain.get(&index)
                    && s.waited(task, rec.last_block)?.is_some()
                {
                    // Cancelled once its accept window had passed.
                    (Failure::Silent { executor: rec.executor }, recovery.on_decline)
                } else if accepted && phase == Phase::Chain(Status::Expired) {
                    (Failure::Expired, recovery.on_expiry)
                } else {
                    (Failure::Declined, recovery.on_decline)
                };
                // What happened, in words, where the phase alone does not say.
                let what = match &failure {
                    Failure::Silent { .. } => format!(" ({})", failure.describe()),
                    _ => String::new(),
                };
                match policy {
                    Policy::Pause if running => actions.push(Action::Pause {
                        index,
                        attempt: row.attempt,
                        reason: format!(
                            "sub-task {index} {phase}{what}: retry, change executor or cancel"
                        ),
                    }),
                    Policy::Pause => {}
                    policy => actions.push(Action::Recover {
                        index,
                        attempt: row.attempt,
                        failure,
                        policy,
                    }),
                }
            }
            Phase::Chain(Status::Refunded) if !closing => {
                let recovery = s.plan.recovery.with(task.recovery.as_ref());
                actions.push(match recovery.on_dispute_lost {
                    DisputePolicy::Fail => Action::Close(CloseReason::DisputeRefunded),
                    DisputePolicy::RetryOther => Action::Recover {
                        index,
                        attempt: row.attempt,
                        failure: Failure::DisputeLost,
                        policy: Policy::Reassign,
                    },
                });
            }
            _ => {}
        }
    }
    Ok(actions)
}

/// How a run ends, decided on stored progress after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Every sub-task paid or skipped by the plan, no checkpoint waiting.
    Completed,
    /// Closing and nothing in flight: skip what never started, end in
    /// `state` for `reason`.
    Closed {
        /// `cancelled` or `failed`.
        state: RunState,
        /// Why.
        reason: CloseReason,
    },
    /// Paused longer than the decision timeout: close as cancelled.
    TimedOut,
}

/// Whether the run is over (or must start closing), given its stored rows;
/// `paused_secs` is how long, in chain seconds, it has waited for a
/// decision (`None` while a checkpoint's own timeout governs),
/// `timeout_secs` how long it may; `gate_open` whether a checkpoint waits
/// for an approver.
pub fn ending(
    state: RunState,
    reason: Option<&CloseReason>,
    rows: &[Progress],
    paused_secs: Option<u64>,
    timeout_secs: u64,
    gate_open: bool,
) -> Option<Ending> {
    if rows.iter().all(|r| r.phase.is_paid()) && !gate_open {
        return Some(Ending::Completed);
    }
    // Skipped rows end a run only when the plan skipped them, not when a
    // cancel did.
    if state != RunState::Cancelling
        && !gate_open
        && rows.iter().all(|r| r.phase.is_paid() || r.phase == Phase::Skipped)
    {
        return Some(Ending::Completed);
    }
    if state == RunState::Cancelling && !rows.iter().any(|r| r.phase.in_flight()) {
        let reason = reason.cloned().unwrap_or(CloseReason::Cancelled);
        return Some(Ending::Closed { state: reason.final_state(), reason });
    }
    if state == RunState::Paused && paused_secs.is_some_and(|p| p > timeout_secs) {
        return Some(Ending::TimedOut);
    }
    None
}

/// The sub-tasks held back by checkpoints not yet passed: everything that
/// depends, directly or through others, on a sub-task a checkpoint follows,
/// until that checkpoint is approved. (The run also pauses once a
/// checkpoint is reached; holding its dependants keeps an auto-approved
/// upstream from starting them in the same step.)
pub fn held(plan: &Plan, gates: &Gates) -> BTreeSet<u32> {
    let mut held = BTreeSet::new();
    for cp in &plan.checkpoints {
        if matches!(gates.get(&cp.name), Some(Gate::Approved { .. })) {
            continue;
        }
        let mut frontier: Vec<u32> = cp.after.clone();
        while let Some(i) = frontier.pop() {
            for t in plan.subtasks.iter().filter(|t| t.depends_on.contains(&i)) {
                if held.insert(t.index) {
                    frontier.push(t.index);
                }
            }
        }
    }
    held
}

/// The checkpoints of `plan` reached now: not reached before, and every
/// sub-task they follow paid or skipped.
pub fn reached<'p>(
    plan: &'p Plan,
    gates: &Gates,
    rows: &BTreeMap<u32, Progress>,
) -> Vec<&'p crate::plan::Checkpoint> {
    plan.checkpoints
        .iter()
        .filter(|cp| !gates.contains_key(&cp.name))
        .filter(|cp| {
            let phases: Vec<Phase> =
                cp.after.iter().filter_map(|i| rows.get(i).map(|r| r.phase)).collect();
            phases.len() == cp.after.len()
                && phases.iter().all(|p| p.is_paid() || *p == Phase::Skipped)
        })
        .collect()
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;
