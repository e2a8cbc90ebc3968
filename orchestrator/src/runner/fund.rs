//! Funding: a head's approvals and creations handed to the wave, each
//! creation checked against the plan's budget and its nested plans'
//! shares first; what the run has spent; a reference held outside the run;
//! the escrow's parameters of a new attempt.

use std::collections::{BTreeMap, HashMap};

use alloy::primitives::{U256, aliases::U40};
use tessera_bindings::{
    ITaskEscrow::CreateParams,
    capability,
    envelope::{Envelope, Input, Parent},
    task::TaskRecord,
    usdc::Usdc,
};

use super::{Orchestrator, RunCtx, RunError, tick::refused, wave::Part};
use crate::{
    plan::{Group, Plan, PlanError, StepPath},
    state::{Phase, Progress, RecoveryStep, RunEvent, Spend},
};

impl Orchestrator {
    /// Hands the approvals of `approvals` and the creations of `creations`
    /// (each with its dependencies' outputs) to the head's wave, which sends
    /// them with every other run's in one call of each kind (see
    /// [`super::wave`]), then records the created tasks. A refused approval
    /// is logged (usually someone moved first; the next look at the chain
    /// tells); a refused creation is its sub-task's (see
    /// [`Orchestrator::creation_refused`]); any other failure fails the step.
    pub(super) async fn send_wave(
        &self,
        ctx: &RunCtx,
        rows: &mut BTreeMap<u32, Progress>,
        records: &HashMap<u32, TaskRecord>,
        approvals: &[u32],
        creations: Vec<(u32, Vec<Input>)>,
        now: u64,
    ) -> Result<(), RunError> {
        let (id, plan) = (ctx.id(), ctx.plan());
        let plan = &*plan;
        let recs = approvals
            .iter()
            .map(|&index| {
                records
                    .get(&index)
                    .cloned()
                    .ok_or(RunError::Inconsistent { index, what: "no on-chain task" })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut wave = Vec::new();
        // Each creation must fit in the budget with everything funded
        // before it, this wave's earlier ones included; one that does not is
        // not sent, and the run pauses with the reason.
        let mut spend = if creations.is_empty() {
            Spend::default()
        } else {
            self.spend(plan, rows.values()).await?
        };
        // A nested plan's leaves also fit in its budget share.
        let mut shares: HashMap<StepPath, Spend> = HashMap::new();
        'creations: for (index, mut inputs) in creations {
            // Named upstreams (upfront funding): their current attempt's
            // task, derived from its reference, so known before it is mined.
            for input in inputs.iter_mut().filter(|i| i.upstream.is_some()) {
                let from = rows
                    .get(&input.from)
                    .ok_or(RunError::Inconsistent { index: input.from, what: "no progress row" })?;
                let task = self.task_of(plan.id, from.idx, from.attempt);
                input.task_id = Some(task.to_string());
            }
            let row = rows
                .get(&index)
                .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
            let cost = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?.cost;
            if !spend.fits(cost, plan.budget) {
                self.over_budget(ctx, row, cost, &spend, None).await?;
                continue;
            }
            let groups = plan.groups_of(index);
            for g in &groups {
                if !shares.contains_key(&g.path) {
                    let inside = members_of(plan, g, rows);
                    shares.insert(g.path.clone(), self.spend(plan, &inside).await?);
                }
                let share = shares[&g.path];
                if !share.fits(cost, g.budget) {
                    self.over_budget(ctx, row, cost, &share, Some(g)).await?;
                    continue 'creations;
                }
            }
            for g in &groups {
                if let Some(share) = shares.get_mut(&g.path) {
                    share.committed = share.committed.checked_add(cost).unwrap_or(share.committed);
                }
            }
            spend.committed = spend.committed.checked_add(cost).unwrap_or(spend.committed);
            match self.create_params(plan, row, inputs, now).await {
                Ok(params) => wave.push(params),
                Err(RunError::Spend(refused)) => {
                    tracing::error!(index, error = %refused, "not funded");
                    self.pause(ctx, index, row.attempt, refused.to_string()).await?;
                }
                Err(e) => return Err(e),
            }
        }
        // A sponsor's grant funds them: what the chain will check first.
        let grant = self.chain.funding(plan.id);
        if let Some(funding) = &grant {
            self.check_grant(ctx, rows, funding, &mut wave).await?;
        }
        if recs.is_empty() && wave.is_empty() {
            return Ok(());
        }
        self.fence()?;
        let part = Part { run: id.to_string(), approvals: recs, creations: wave, grant };
        let outcome = self.chain.wave(part, &|| self.fence()).await;
        if let Err(e) = outcome.approved {
            refused(approvals, e)?;
        }
        for &index in &outcome.held {
            self.held_reference(ctx, rows, index).await?;
        }
        for (index, error) in &outcome.refused {
            self.creation_refused(ctx, rows, *index, error).await?;
        }
        for index in outcome.created? {
            let mut row = rows
                .get(&index)
                .cloned()
                .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
            let id = self.task_of(plan.id, index, row.attempt);
            let found = self.chain.task(id).await?;
            self.sync_record(plan, &mut row, found, now).await?;
            rows.insert(index, row);
        }
        Ok(())
    }

    /// Sub-task `index`'s creation was refused: the escrow holds its
    /// reference already. Sent before by this run and not mined yet: wait
    /// (the logs tell once it is). Created, but not among the logs read
    /// from this run's approval on: the task was made outside this run —
    /// the plan id was used before with this sponsor, by an earlier
    /// database or another orchestrator — and is not this run's to drive.
    /// The sub-task moves to its next attempt (a new reference), with a
    /// `recovery_applied` event saying why; after
    /// [`super::recover::MAX_AUTOMATIC_ATTEMPTS`] the run pauses instead.
    async fn held_reference(
        &self,
        ctx: &RunCtx,
        rows: &mut BTreeMap<u32, Progress>,
        index: u32,
    ) -> Result<(), RunError> {
        let (id, plan) = (ctx.id(), ctx.plan());
        let row = rows
            .get(&index)
            .cloned()
            .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
        let task = self.task_of(plan.id, index, row.attempt);
        if !self.chain.exists(task).await? {
            tracing::info!(index, "creation sent before and not mined yet; waiting");
            return Ok(());
        }
        // Everything up to the node's newest block first: it may be ours,
        // mined a moment ago.
        let newest = self.chain.newest_block().await?;
        self.chain.read_to(newest).await?;
        if self.chain.task(task).await?.is_some() {
            return Ok(());
        }
        let since = self.store.from_block(id).await?.unwrap_or_default();
        // This run created it before a reorganisation took its logs (or a
        // provider's read left them out): its logs are read again, from
        // the run's first block; never a new attempt for it.
        if self.chain.reorgs(task).await > 0 {
            self.chain.reread(task, since, newest).await?;
            tracing::info!(index, %task, "created by this run before a reorganisation");
            return Ok(());
        }
        let what = format!(
            "sub-task {index}: escrow task {task} (attempt {}) was created before this run \
             began at block {since}: plan {} was used before with this sponsor",
            row.attempt, plan.id
        );
        tracing::warn!(index, %task, "a task of this run's reference was created outside it");
        let next = row.attempt + 1;
        if next >= super::recover::MAX_AUTOMATIC_ATTEMPTS {
            let reason = format!("{what}; retry with a new attempt, or cancel the run");
            return self.pause(ctx, index, row.attempt, reason).await;
        }
        let moved = Progress { attempt: next, ..row };
        self.store.put_subtask(id, &moved.to_row()).await?;
        rows.insert(index, moved);
        let reason = format!("{what}; funding attempt {next} under a new reference");
        self.recovery_event(&plan, index, next, RecoveryStep::NewReference, reason).await
    }

    /// The escrow's parameters for a sub-task's current attempt, its
    /// envelope published: its index, task id and parameters.
    async fn create_params(
        &self,
        plan: &Plan,
        row: &Progress,
        inputs: Vec<Input>,
        now: u64,
    ) -> Result<(u32, U256, CreateParams), RunError> {
        let task = plan.subtask(row.idx).ok_or(PlanError::UnknownIndex(row.idx))?;
        let reference = self.reference_of(plan.id, row.idx, row.attempt);
        let id = self.task_of(plan.id, row.idx, row.attempt);
        let parent_id = inputs
            .first()
            .and_then(|i: &Input| i.task_id.as_deref())
            .and_then(|t| t.parse::<U256>().ok())
            .unwrap_or_default();
        let envelope = Envelope {
            parent: if parent_id.is_zero() {
                Parent::Plan(plan.id.into())
            } else {
                Parent::Task(parent_id.to_string())
            },
            spec: task.spec.clone(),
            capability: Some(task.capability.clone()),
            source: if task.depends_on.is_empty() { plan.source.clone() } else { None },
            inputs,
            path: plan.is_nested().then(|| plan.path_of(row.idx).to_string()),
            groups: plan.groups_of(row.idx).iter().map(|g| label(&g.spec)).collect(),
        };
        let sources = self.sources.clone();
        let spec_uri = tokio::task::spawn_blocking(move || sources.encode(&envelope))
            .await?
            .map_err(|source| RunError::Envelope { index: row.idx, source })?;
        // Upfront, a dependant's deadline also covers its upstream chain.
        let deadline = now + plan.deadline_offset_of(row.idx);
        let params = CreateParams {
            r#ref: reference,
            planId: plan.id.into_inner(),
            parentId: parent_id,
            capability: capability::encode(&task.capability)
                .map_err(|source| PlanError::InvalidCapability { index: row.idx, source })?,
            client: self.chain.sponsor(),
            executor: row.executor,
            // Never more than the sub-task's approved cost.
            amount: super::money::funding(task)?.base_units(),
            deadline: U40::from(deadline),
            reviewWindow: plan.review_window_secs,
            specURI: spec_uri,
        };
        Ok((row.idx, id, params))
    }

    /// What the run has spent: every attempt of every sub-task that was
    /// funded, and what its settlement paid out and returned (a split
    /// ruling pays part and refunds the rest; an expired or cancelled
    /// attempt refunds all of it). From the logs the runner holds: no request.
    pub(super) async fn spend(
        &self,
        plan: &Plan,
        rows: impl IntoIterator<Item = &Progress>,
    ) -> Result<Spend, RunError> {
        let overflow = || RunError::SpentOverflow;
        let add = |a: Usdc, b: Usdc| a.checked_add(b).ok_or_else(overflow);
        let mut total = Spend::default();
        for row in rows {
            for attempt in 0..=row.attempt {
                let id = self.task_of(plan.id, row.idx, attempt);
                let Some((rec, _)) = self.chain.task(id).await? else { continue };
                total.committed = add(total.committed, Usdc::from_base_units(rec.task.amount))?;
                if let Some(s) = self.chain.settlement(id).await? {
                    total.paid = add(total.paid, s.paid)?;
                    total.refunded = add(total.refunded, s.refunded)?;
                }
            }
        }
        Ok(total)
    }

    /// Reports each nested plan whose leaves are all paid (or skipped by the
    /// plan), once: the nested step is settled, and its dependants have its
    /// output.
    pub(super) async fn settle_nested(
        &self,
        plan: &Plan,
        rows: &BTreeMap<u32, Progress>,
    ) -> Result<(), RunError> {
        for g in &plan.groups {
            let members = plan.members(&g.path);
            let inside = members_of(plan, g, rows);
            let done = |r: &Progress| r.phase.is_paid() || r.phase == Phase::Skipped;
            if inside.len() != members.len() || !inside.iter().all(done) {
                continue;
            }
            let spent = self.spend(plan, &inside).await?;
            let event = RunEvent::NestedCompleted {
                plan_id: plan.id,
                path: g.path.to_string(),
                nested_plan_id: g.plan_id(plan.id),
                subtasks: members.len(),
                paid: spent.paid,
                budget: g.budget,
            };
            self.emit(plan, &format!("nested:{}", g.path), &event).await?;
        }
        Ok(())
    }

    /// Refuses to fund sub-task `row`, whose `cost` would take the plan
    /// (or, with `group`, that nested plan's share) over its budget: an
    /// event and a pause with the reason, nothing sent.
    async fn over_budget(
        &self,
        ctx: &RunCtx,
        row: &Progress,
        cost: Usdc,
        spend: &Spend,
        group: Option<&Group>,
    ) -> Result<(), RunError> {
        let index = row.idx;
        let plan = ctx.plan();
        let budget = group.map_or(plan.budget, |g| g.budget);
        tracing::warn!(index, %cost, %budget, charged = %spend.charged(), "over budget");
        let event = RunEvent::BudgetExceeded {
            plan_id: plan.id,
            index,
            cost,
            budget,
            committed: spend.committed,
            refunded: spend.refunded,
        };
        self.emit(&plan, &format!("budget:{index}:{}", row.attempt), &event).await?;
        let whose = match group {
            Some(g) => format!("the {} share of nested plan `{}`", budget.with_unit(), g.path),
            None => format!("the {} budget", budget.with_unit()),
        };
        let reason = format!(
            "sub-task {index} costs {} but {} of {whose} is spent or locked: cancel, or \
             wait for refunds",
            cost.with_unit(),
            spend.charged().with_unit(),
        );
        self.pause(ctx, index, row.attempt, reason).await
    }
}

/// The progress rows of nested plan `group`'s leaves.
fn members_of(plan: &Plan, group: &Group, rows: &BTreeMap<u32, Progress>) -> Vec<Progress> {
    let members = plan.members(&group.path);
    rows.values().filter(|r| members.contains(&r.idx)).cloned().collect()
}

/// A nested plan's label as an envelope carries it: its step's spec, cut
/// at a character boundary to the envelope's limit.
fn label(spec: &str) -> String {
    let max = tessera_bindings::envelope::MAX_GROUP_LABEL_BYTES;
    if spec.len() <= max {
        return spec.to_owned();
    }
    let mut end = max;
    while !spec.is_char_boundary(end) {
        end -= 1;
    }
    spec[..end].to_owned()
}
