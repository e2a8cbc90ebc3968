//! Checkpoints as the runner meets them: reached once the sub-tasks they
//! follow are paid (the run pauses, `checkpoint_reached` carries the
//! outputs so far), passed or stopped by an approver's decision, and, when
//! nobody decides in time, by their `on_timeout` policy.

use std::collections::BTreeMap;

use super::{Orchestrator, Refusal, RunCtx, RunError, step};
use crate::{
    plan::{Checkpoint, OnTimeout},
    state::{
        CloseReason, Decider, DecisionKind, Gate, Gates, Ignored, Outcome, PauseReason, Pending,
        Progress, Reason, RunEvent, RunState, outlasted,
    },
    store::now_ms,
};

impl Orchestrator {
    /// Marks the checkpoints reached now (pausing the run) and applies the
    /// timeout policy of those nobody decided in time. Returns the gates as
    /// they stand. `now` is chain time (the head's timestamp): a wait is
    /// measured from the chain time it began, so a replica whose clock runs
    /// ahead times nothing out early.
    pub(super) async fn gates_step(
        &self,
        ctx: &RunCtx,
        rows: &BTreeMap<u32, Progress>,
        now: u64,
    ) -> Result<Gates, RunError> {
        let (id, plan) = (ctx.id(), ctx.plan());
        let mut gates = self.store.gates(id).await?;
        if plan.checkpoints.is_empty() {
            return Ok(gates);
        }
        let state = ctx.state();
        if !matches!(state, RunState::Running | RunState::Paused) {
            return Ok(gates);
        }
        let stamp = now_ms();
        // Gates stored before waits were measured on chain time wait from
        // this look on.
        let mut unstamped = false;
        for gate in gates.values_mut() {
            if let Gate::Reached { chain_at: since @ None, .. }
            | Gate::Escalated { chain_at: since @ None, .. } = gate
            {
                *since = Some(now);
                unstamped = true;
            }
        }
        if unstamped {
            self.store.set_gates(id, &gates).await?;
        }
        for cp in step::reached(&plan, &gates, rows) {
            gates.insert(cp.name.clone(), Gate::Reached { at: stamp, chain_at: Some(now) });
            self.store.set_gates(id, &gates).await?;
            let outputs = cp
                .after
                .iter()
                .filter_map(|i| rows.get(i).map(|r| (*i, r.output.clone().unwrap_or_default())))
                .collect();
            let event = RunEvent::CheckpointReached {
                plan_id: plan.id,
                name: cp.name.clone(),
                after: cp.after.clone(),
                outputs,
                timeout_secs: self.timeout_secs(cp),
                on_timeout: cp.on_timeout,
            };
            self.emit(&plan, &format!("checkpoint:{}", cp.name), &event).await?;
            self.hold(ctx, cp).await?;
        }
        for cp in &plan.checkpoints {
            let Some(Gate::Reached { chain_at: Some(since), .. }) = gates.get(&cp.name).copied()
            else {
                continue;
            };
            if !outlasted(since, now, self.timeout_secs(cp)) {
                continue;
            }
            tracing::info!(checkpoint = %cp.name, policy = ?cp.on_timeout, "checkpoint timed out");
            match cp.on_timeout {
                OnTimeout::Approve => {
                    self.pass(ctx, rows, &mut gates, cp, Decider::Timeout).await?;
                }
                OnTimeout::Reject => {
                    self.stop_at(ctx, &mut gates, cp, Decider::Timeout, None).await?;
                }
                OnTimeout::Escalate => {
                    let escalated = Gate::Escalated { at: stamp, chain_at: Some(now) };
                    gates.insert(cp.name.clone(), escalated);
                    self.store.set_gates(id, &gates).await?;
                    let event =
                        RunEvent::CheckpointEscalated { plan_id: plan.id, name: cp.name.clone() };
                    self.emit(&plan, &format!("checkpoint-escalated:{}", cp.name), &event).await?;
                }
            }
        }
        Ok(gates)
    }

    /// Applies an approver's decision on a checkpoint (`arg` is `name` or
    /// `name:reason`); what came of it.
    pub(super) async fn checkpoint_decision(
        &self,
        ctx: &RunCtx,
        rows: &BTreeMap<u32, Progress>,
        decision: &Pending,
    ) -> Result<Outcome, RunError> {
        let (id, plan) = (ctx.id(), ctx.plan());
        let arg = decision.arg.as_deref().unwrap_or_default();
        let (name, reason) = match arg.split_once(':') {
            Some((name, reason)) => (name, Some(reason.to_owned())),
            None => (arg, None),
        };
        let cp = plan
            .checkpoints
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Refusal::NoCheckpoint(name.to_owned()))?;
        let mut gates = self.store.gates(id).await?;
        match gates.get(name) {
            Some(g) if g.is_open() => {}
            Some(g) => {
                let state = g.word();
                return Ok(Outcome::Ignored(Ignored::CheckpointDecided {
                    name: name.into(),
                    state,
                }));
            }
            None => {
                return Ok(Outcome::Ignored(Ignored::CheckpointNotReached { name: name.into() }));
            }
        }
        if decision.kind == DecisionKind::Pass {
            self.pass(ctx, rows, &mut gates, cp, Decider::Approver).await?;
        } else {
            self.stop_at(ctx, &mut gates, cp, Decider::Approver, reason).await?;
        }
        Ok(Outcome::Done(decision.kind))
    }

    /// Seconds an approver has at `cp`.
    fn timeout_secs(&self, cp: &Checkpoint) -> u64 {
        cp.timeout_secs.unwrap_or_else(|| self.config.decision_timeout.as_secs().max(1))
    }

    /// Pauses the run at `cp`.
    async fn hold(&self, ctx: &RunCtx, cp: &Checkpoint) -> Result<(), RunError> {
        let reason = PauseReason(format!("checkpoint {}: approve or reject", cp.name));
        let why = Reason::Pause(reason.clone());
        let paused = self
            .move_run(ctx, &[RunState::Running, RunState::Paused], RunState::Paused, Some(&why))
            .await?;
        if paused {
            let index = cp.after.iter().copied().max().unwrap_or_default();
            let plan = ctx.plan();
            let event = RunEvent::PlanPaused { plan_id: plan.id, index, reason };
            self.emit(&plan, &format!("paused:checkpoint:{}", cp.name), &event).await?;
        }
        Ok(())
    }

    /// Passes `cp`: the run goes on unless something else holds it.
    async fn pass(
        &self,
        ctx: &RunCtx,
        rows: &BTreeMap<u32, Progress>,
        gates: &mut Gates,
        cp: &Checkpoint,
        by: Decider,
    ) -> Result<(), RunError> {
        gates.insert(cp.name.clone(), Gate::Approved { at: now_ms(), by });
        self.store.set_gates(ctx.id(), gates).await?;
        let plan = ctx.plan();
        let event = RunEvent::CheckpointApproved { plan_id: plan.id, name: cp.name.clone(), by };
        self.emit(&plan, &format!("checkpoint-approved:{}", cp.name), &event).await?;
        self.resume_if_clear(ctx, rows, gates, &format!("resumed:checkpoint:{}", cp.name)).await
    }

    /// Stops the run at `cp`: it closes, failed.
    async fn stop_at(
        &self,
        ctx: &RunCtx,
        gates: &mut Gates,
        cp: &Checkpoint,
        by: Decider,
        reason: Option<String>,
    ) -> Result<(), RunError> {
        gates.insert(cp.name.clone(), Gate::Rejected { at: now_ms(), by });
        self.store.set_gates(ctx.id(), gates).await?;
        let plan = ctx.plan();
        let event =
            RunEvent::CheckpointRejected { plan_id: plan.id, name: cp.name.clone(), by, reason };
        self.emit(&plan, &format!("checkpoint-rejected:{}", cp.name), &event).await?;
        let why = CloseReason::CheckpointRejected(cp.name.clone());
        self.close(ctx, &why).await
    }

    /// Resumes a paused run when nothing holds it any more: no sub-task
    /// stuck and no checkpoint waiting.
    pub(super) async fn resume_if_clear(
        &self,
        ctx: &RunCtx,
        rows: &BTreeMap<u32, Progress>,
        gates: &Gates,
        dedup: &str,
    ) -> Result<(), RunError> {
        let stuck = rows.values().any(|r| r.phase.is_stuck());
        let waiting = gates.values().any(|g| g.is_open());
        if !stuck
            && !waiting
            && self.move_run(ctx, &[RunState::Paused], RunState::Running, None).await?
        {
            let plan = ctx.plan();
            let event = RunEvent::PlanResumed { plan_id: plan.id };
            self.emit(&plan, dedup, &event).await?;
        }
        Ok(())
    }
}
