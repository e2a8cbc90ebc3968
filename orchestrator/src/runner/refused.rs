//! A sub-task's creation the escrow refused: one party's refusal, answered
//! for its sub-task alone (the wave sent every other call; see
//! [`super::wave`]), never sent again as it is.

use std::collections::BTreeMap;

use tessera_bindings::client::ClientError;

use super::{Orchestrator, RunCtx, RunError, error::revert_text, recover::Recover, step::Failure};
use crate::{
    plan::{PlanError, Policy},
    state::Progress,
};

impl Orchestrator {
    /// The escrow refused to create sub-task `index`'s current attempt,
    /// the call alone in its transaction, for `error`: foreseen at
    /// estimation, or reverted when mined. When the refusal is its
    /// executor's — no longer active and offering the capability at no
    /// more than the cost (paused, a raised price, gone), or a creation
    /// that reverted when mined and would go through now (someone moved
    /// before it and back after it) — the sub-task's `on_decline` policy
    /// answers it as [`Failure::Refused`], as when nobody accepts a task
    /// (`retry(n)`, `reassign`, `cancel`; every automatic attempt counts
    /// against the same limit). Under `pause`, or for any other refusal (the
    /// sponsor's balance, say), the run pauses with the decoded revert in
    /// the reason.
    pub(super) async fn creation_refused(
        &self,
        ctx: &RunCtx,
        rows: &mut BTreeMap<u32, Progress>,
        index: u32,
        error: &ClientError,
    ) -> Result<(), RunError> {
        let row = rows
            .get(&index)
            .cloned()
            .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
        let plan = ctx.plan();
        let task = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
        let revert = error.revert();
        // Under a sponsor's grant, the grant's refusal said in words.
        let granted =
            self.chain.funding(plan.id).and(revert).and_then(super::granted::grant_refusal);
        let text = revert.map_or_else(
            || format!("{error}, though it would go through now (moved before it and back)"),
            |r| granted.clone().unwrap_or_else(|| revert_text(r)),
        );
        tracing::warn!(
            plan = %plan.id,
            index,
            attempt = row.attempt,
            executor = %row.executor,
            revert = %text,
            "the escrow refused a creation"
        );
        let executors = revert.is_none_or(|r| r.is_executor_refusal());
        let policy = plan.recovery.with(task.recovery.as_ref()).on_decline;
        if executors && policy != Policy::Pause {
            let failure = Failure::Refused(text);
            return self
                .recover(ctx, rows, Recover { index, attempt: row.attempt, failure, policy })
                .await;
        }
        let reason = format!(
            "sub-task {index}: the escrow refused to create it for {}: {text}: change \
             executor or cancel",
            row.executor
        );
        self.pause(ctx, index, row.attempt, reason).await
    }
}
