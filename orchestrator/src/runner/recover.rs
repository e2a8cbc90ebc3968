//! Recovery without a person, by the plan's policies (per sub-task
//! overrides over the plan's):
//!
//! - `retry(n)`: the same executor again, with a fresh deadline, while the
//!   sub-task has had at most `n` attempts beyond its first; then as
//!   `reassign`;
//! - `reassign`: the next executor the plan's selection policy picks among
//!   the agents offering the capability at no more than the sub-task's
//!   cost, every executor tried before left out; when there is none, the
//!   run pauses for a person;
//! - `cancel`: the run closes;
//! - `retry_other` (a lost dispute): as `reassign`; when nobody else offers
//!   the capability at all the run fails as with `fail`.
//!
//! No automatic step changes what a sub-task costs: a new executor is
//! funded with the cost the sponsor approved, and one asking more is never
//! picked (the run pauses, saying so; only a person's change of executor
//! raises a cost, see [`super::money`]). Each automatic step is a
//! `recovery_applied` event with its reason; the budget is checked when the
//! new attempt is funded, as for any other.

use std::collections::BTreeMap;

use alloy::primitives::Address;

use super::{Orchestrator, RunCtx, RunError, step::Failure};
use crate::{
    plan::{Choice, MAX_RETRIES, Plan, PlanError, Policy},
    state::{CloseReason, Phase, Progress, RecoveryStep, RunEvent},
};

/// Most attempts the runner starts on its own for one sub-task, whatever
/// the policies say (retries and reassignments together).
pub(super) const MAX_AUTOMATIC_ATTEMPTS: u32 = 2 * MAX_RETRIES + 2;

/// A sub-task to recover: its attempt `attempt` ended by `failure`, and
/// `policy` applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Recover {
    /// The sub-task.
    pub index: u32,
    /// The attempt that ended.
    pub attempt: u32,
    /// How it ended.
    pub failure: Failure,
    /// The policy that applies.
    pub policy: Policy,
}

impl Orchestrator {
    /// Applies the policy of `what` to its sub-task.
    pub(super) async fn recover(
        &self,
        ctx: &RunCtx,
        rows: &mut BTreeMap<u32, Progress>,
        what: Recover,
    ) -> Result<(), RunError> {
        let Recover { index, attempt, failure, policy } = what;
        let (id, plan) = (ctx.id(), ctx.plan());
        let task = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
        let row = rows
            .get(&index)
            .cloned()
            .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
        if row.attempt != attempt {
            return Ok(());
        }
        let what = format!("sub-task {index} attempt {attempt}: {}", failure.describe());
        if policy == Policy::Cancel {
            let why = format!("{what}; cancelling");
            self.recovery_event(&plan, index, attempt, RecoveryStep::Cancel, why).await?;
            return self.close(ctx, &CloseReason::Cancelled).await;
        }
        if attempt >= MAX_AUTOMATIC_ATTEMPTS {
            let reason = format!(
                "{what}; {MAX_AUTOMATIC_ATTEMPTS} attempts started without a person: retry, \
                 change executor or cancel"
            );
            return self.pause(ctx, index, attempt, reason).await;
        }
        let (executor, step, why) = match policy {
            Policy::Retry(n) if attempt < n => (
                row.executor,
                RecoveryStep::Retry(n),
                format!("{what}; retry {} of {n} with {}", attempt + 1, row.executor),
            ),
            _ => {
                let tried = self.tried(&plan, &row).await?;
                let (capability, cost) = (&task.capability, task.cost);
                let choice =
                    self.choose(index, capability, plan.selection, &tried, Some(cost)).await?;
                let step = RecoveryStep::reassigning(policy, failure == Failure::DisputeLost);
                match choice {
                    Some(choice) => {
                        let why =
                            format!("{what}; reassigned to {}: {}", choice.executor, choice.reason);
                        let executor = choice.executor;
                        self.record_choice(ctx, choice).await?;
                        (executor, step, why)
                    }
                    None => {
                        // Someone asking more is for a person to raise to.
                        let dearer =
                            self.choose(index, capability, plan.selection, &tried, None).await?;
                        if let Some(dearer) = dearer {
                            tracing::info!(index, %cost, "only dearer agents offer it; pausing");
                            let reason = format!(
                                "{what}; no other agent offers {capability} at or under {} \
                                 ({} asks {}): change executor to raise the cost, retry or \
                                 cancel",
                                cost.with_unit(),
                                dearer.executor,
                                dearer.price.with_unit()
                            );
                            return self.pause(ctx, index, attempt, reason).await;
                        }
                        if failure == Failure::DisputeLost {
                            tracing::info!(index, "no other executor offers it; the run fails");
                            return self.close(ctx, &CloseReason::DisputeRefunded).await;
                        }
                        let reason = format!(
                            "{what}; no other active agent offers {} ({} tried): change \
                             executor, retry or cancel",
                            task.capability,
                            tried.len()
                        );
                        return self.pause(ctx, index, attempt, reason).await;
                    }
                }
            }
        };
        let mut next = row.clone();
        next.executor = executor;
        next.attempt += 1;
        next.phase = Phase::Waiting;
        next.task_id = None;
        next.result_uri = None;
        next.output = None;
        self.store.put_subtask(id, &next.to_row()).await?;
        rows.insert(index, next);
        tracing::info!(index, attempt = attempt + 1, %executor, policy = %step, "recovered");
        self.recovery_event(&plan, index, attempt + 1, step, why).await
    }

    /// Keeps `choice` as the plan's reason for its sub-task's executor.
    async fn record_choice(&self, ctx: &RunCtx, choice: Choice) -> Result<(), RunError> {
        let mut plan = Plan::clone(&ctx.plan());
        plan.choices.retain(|c| c.index != choice.index);
        plan.choices.push(choice);
        plan.choices.sort_by_key(|c| c.index);
        let json = super::commands::plan_json(&plan)?;
        self.store.update_plan(ctx.id(), &json, ctx.state()).await?;
        ctx.set_plan(plan);
        Ok(())
    }

    /// Every executor sub-task `row` had, over all its attempts.
    async fn tried(&self, plan: &Plan, row: &Progress) -> Result<Vec<Address>, RunError> {
        let mut tried = vec![row.executor];
        if let Some(e) = plan.subtask(row.idx).and_then(|t| t.executor) {
            tried.push(e);
        }
        for a in 0..=row.attempt {
            let id = self.task_of(plan.id, row.idx, a);
            if let Some((rec, _)) = self.chain.task(id).await? {
                tried.push(rec.task.executor);
            }
        }
        tried.sort_unstable();
        tried.dedup();
        Ok(tried)
    }

    /// Reports recovery step `policy` on sub-task `index`, now at `attempt`.
    pub(super) async fn recovery_event(
        &self,
        plan: &Plan,
        index: u32,
        attempt: u32,
        policy: RecoveryStep,
        reason: String,
    ) -> Result<(), RunError> {
        let event = RunEvent::RecoveryApplied { plan_id: plan.id, index, policy, attempt, reason };
        self.emit(plan, &format!("recovery:{index}:{attempt}"), &event).await
    }
}
