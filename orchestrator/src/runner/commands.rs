//! What users ask of the orchestrator: propose, edit, confirm, approve,
//! cancel, and decisions about a running plan (queued for its driver).

use std::sync::Arc;

use alloy::primitives::{Address, keccak256};
use serde_json::Value;
use tessera_bindings::{task::Status, usdc::Usdc};

use super::{Orchestrator, Refusal, RunError, RunView, error::Unconfirmed};
use crate::{
    plan::{InMemoryContext, Plan, PlanError, ReviewMode},
    state::{DecisionKind, Phase, Progress, RunEvent, RunId, RunState, Stakes},
    store::now_ms,
};

/// A user decision about a running plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve and pay a delivered sub-task.
    Approve(u32),
    /// Dispute a delivered sub-task, with a reason.
    Dispute(u32, String),
    /// Run a sub-task again with its executor and a fresh deadline.
    Retry(u32),
    /// Give a sub-task to another executor.
    ChangeExecutor(u32, Address),
    /// Appeal a ruling on a sub-task, with a reason.
    Appeal(u32, String),
    /// Stop the plan: settled stays settled, sub-tasks not yet accepted are
    /// cancelled and refunded.
    Cancel,
    /// Pass (`approve`) or stop at the checkpoint `name`, with an optional
    /// reason.
    Checkpoint {
        /// The checkpoint's name.
        name: String,
        /// Approve (the run goes on) or reject (the run closes).
        approve: bool,
        /// Why, in words.
        reason: Option<String>,
    },
}

impl Decision {
    /// The sub-task, the kind and the argument, as queued.
    pub fn parts(&self) -> (Option<u32>, DecisionKind, Option<String>) {
        match self {
            Self::Approve(i) => (Some(*i), DecisionKind::Approve, None),
            Self::Dispute(i, reason) => (Some(*i), DecisionKind::Dispute, Some(reason.clone())),
            Self::Retry(i) => (Some(*i), DecisionKind::Retry, None),
            Self::ChangeExecutor(i, a) => (Some(*i), DecisionKind::Executor, Some(a.to_string())),
            Self::Appeal(i, reason) => (Some(*i), DecisionKind::Appeal, Some(reason.clone())),
            Self::Cancel => (None, DecisionKind::Cancel, None),
            Self::Checkpoint { name, approve, reason } => {
                let kind = if *approve { DecisionKind::Pass } else { DecisionKind::Stop };
                let arg = match reason {
                    Some(r) => format!("{name}:{r}"),
                    None => name.clone(),
                };
                (None, kind, Some(arg))
            }
        }
    }
}

/// An edit of a proposed plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Edit {
    /// New order of the current indexes.
    Reorder {
        /// The current indexes in their new order.
        order: Vec<u32>,
    },
    /// Another executor for one sub-task.
    Reassign {
        /// The sub-task.
        index: u32,
        /// The new executor.
        executor: Address,
    },
    /// Remove a sub-task nothing depends on.
    Drop {
        /// The sub-task.
        index: u32,
    },
    /// Switch between automatic payment and manual review.
    Review {
        /// The new mode.
        review: ReviewMode,
    },
}

pub(super) fn plan_json(plan: &Plan) -> Result<String, RunError> {
    serde_json::to_string(plan).map_err(RunError::PlanEncoding)
}

impl Orchestrator {
    /// Validates `plan` against the registry and stores it as a proposed run.
    ///
    /// A sub-task without an executor gets the one the plan's selection
    /// policy picks among the active agents offering its capability (at no
    /// more than its cost, when it names one; a zero cost becomes the
    /// chosen price), and the plan keeps why (`choices`). One nobody offers
    /// stays unassigned: approval refuses it until one is picked.
    pub async fn propose(&self, mut plan: Plan) -> Result<RunView, RunError> {
        for i in 0..plan.subtasks.len() {
            let t = &plan.subtasks[i];
            if t.executor.is_some() || t.capability.is_empty() {
                continue;
            }
            let max_price = (t.cost != Usdc::ZERO).then_some(t.cost);
            let Some(choice) =
                self.choose(t.index, &t.capability, plan.selection, &[], max_price).await?
            else {
                continue;
            };
            let t = &mut plan.subtasks[i];
            t.executor = Some(choice.executor);
            if t.cost == Usdc::ZERO {
                t.cost = choice.price;
            }
            plan.choices.retain(|c| c.index != choice.index);
            plan.choices.push(choice);
        }
        plan.choices.sort_by_key(|c| c.index);
        self.propose_with(plan, false, None).await
    }

    /// [`Orchestrator::propose`] with the stakes and the classification the
    /// plan came from. Executors may still be unassigned (approval checks);
    /// high-stakes plans are always reviewed by hand.
    pub async fn propose_with(
        &self,
        mut plan: Plan,
        high_stakes: bool,
        classification: Option<&Value>,
    ) -> Result<RunView, RunError> {
        if high_stakes {
            plan.review = ReviewMode::Manual;
        }
        // Only approval sets what is approved.
        for t in &mut plan.subtasks {
            t.approved = None;
        }
        let max_depth = self.config.max_nesting_depth.min(crate::plan::MAX_NESTING_DEPTH);
        if let Some(g) = plan.groups.iter().find(|g| g.depth() > max_depth) {
            return Err(PlanError::NestingTooDeep {
                path: g.path.to_string(),
                depth: g.depth(),
                max: max_depth,
            }
            .into());
        }
        plan.validate_draft(&self.plan_context(&plan).await?)?;
        self.check_spend_cap(&plan)?;
        let id = RunId::from(plan.id);
        let json = plan_json(&plan)?;
        let classification = classification.map(Value::to_string);
        let stakes = if high_stakes { Stakes::High } else { Stakes::Low };
        // The run belongs to this sponsor's lane (see `crate::replica`).
        let sponsor = crate::replica::lane_of(self.chain.sponsor());
        self.store
            .insert_run_for(
                &id,
                &json,
                RunState::Proposed,
                stakes,
                classification.as_deref(),
                Some(&sponsor),
            )
            .await?;
        let event = RunEvent::PlanProposed { plan_id: plan.id, stakes };
        self.emit_run(&id, event.kind().as_str(), &event).await?;
        self.view(&id).await
    }

    /// What a proposed or edited plan is checked against: the registry's
    /// facts and, when a condition reads a field of a result, the
    /// capability catalogue whose result schemas say which fields there
    /// are (see [`crate::plan`]'s `reads`). Approval and a change of
    /// executor check the registry only: the fields were checked here.
    async fn plan_context(&self, plan: &Plan) -> Result<InMemoryContext, RunError> {
        let ctx = self.chain.context(plan).await?;
        if !plan.reads_fields() {
            return Ok(ctx);
        }
        Ok(ctx.with_catalogue(self.catalogue().await?))
    }

    /// Checks what the user typed against a high-stakes plan's terms and
    /// returns the confirmation token for approval.
    pub async fn confirm(
        &self,
        id: impl Into<RunId>,
        amount: &str,
        recipients: &[Address],
    ) -> Result<String, RunError> {
        let id = &id.into();
        let (run, plan) = self.load(id).await?;
        if run.state != RunState::Proposed {
            return Err(RunError::wrong_state(id, run.state, "confirmation"));
        }
        if run.stakes != Stakes::High {
            return Err(Refusal::NoConfirmationNeeded.into());
        }
        if let Some(t) = plan.subtasks.iter().find(|t| t.executor.is_none()) {
            return Err(PlanError::ExecutorUnassigned(t.index).into());
        }
        let terms = Self::confirmation_terms(&plan)?;
        let typed = Usdc::parse(amount)
            .map_err(|source| RunError::Amount { text: amount.into(), source })?;
        if typed.to_string() != terms.amount {
            return Err(Refusal::AmountMismatch(typed).into());
        }
        let mut typed_recipients = recipients.to_vec();
        typed_recipients.sort();
        typed_recipients.dedup();
        if typed_recipients != terms.recipients {
            return Err(Refusal::RecipientsMismatch.into());
        }
        Ok(self.confirmation_token(&plan))
    }

    /// Applies an edit to a proposed plan; the result is validated again.
    pub async fn edit(&self, id: impl Into<RunId>, edit: Edit) -> Result<RunView, RunError> {
        let id = &id.into();
        let (run, plan) = self.load(id).await?;
        if run.state != RunState::Proposed {
            return Err(RunError::wrong_state(id, run.state, "an edit"));
        }
        let edited = match &edit {
            Edit::Reorder { order } => plan.reorder(order)?,
            Edit::Reassign { index, executor } => {
                let mut edited = plan.reassign(*index, *executor)?;
                // The cost follows the registry: the new executor's price.
                if let Some(t) = edited.subtasks.iter_mut().find(|t| t.index == *index)
                    && let Some(price) = self.chain.price_of(*executor, &t.capability).await?
                {
                    t.cost = price;
                }
                edited
            }
            Edit::Drop { index } => plan.drop_subtask(*index)?,
            Edit::Review { review } => {
                if run.stakes == Stakes::High && *review != ReviewMode::Manual {
                    return Err(Refusal::ManualReviewKept.into());
                }
                Plan { review: *review, ..plan.clone() }
            }
        };
        edited.validate_draft(&self.plan_context(&edited).await?)?;
        self.check_spend_cap(&edited)?;
        if !self.store.update_plan(id, &plan_json(&edited)?, RunState::Proposed).await? {
            return Err(RunError::changed(id, "an edit"));
        }
        let event = RunEvent::PlanEdited { plan_id: plan.id, edit: format!("{edit:?}") };
        self.emit_run(id, &format!("edit:{}", now_ms()), &event).await?;
        self.view(id).await
    }

    /// Approves a proposed plan: checks it once more against the registry,
    /// the spend cap and the sponsor's balance — and, for a high-stakes plan,
    /// the confirmation token — then starts running it.
    pub async fn approve(
        self: &Arc<Self>,
        id: impl Into<RunId>,
        confirmation: Option<&str>,
    ) -> Result<RunView, RunError> {
        let id = &id.into();
        let (run, plan) = self.load(id).await?;
        if run.state != RunState::Proposed {
            return Err(RunError::wrong_state(id, run.state, "approval"));
        }
        plan.validate(&self.chain.context(&plan).await?)?;
        self.check_spend_cap(&plan)?;
        if run.stakes == Stakes::High {
            match confirmation {
                None => {
                    return Err(Unconfirmed::Required(id.clone()).into());
                }
                Some(token) if token != self.confirmation_token(&plan) => {
                    return Err(Unconfirmed::Mismatch.into());
                }
                Some(_) => {}
            }
        }
        // A run approved in operator mode is funded by its sponsor's grant
        // (stored with it at approval); the grant's sponsor pays.
        if self.config.grants_required && self.store.grant(id).await?.is_none() {
            return Err(Refusal::GrantMissing(id.clone()).into());
        }
        let payer = self.payer(id, plan.id).await?;
        let balance = self.chain.balance_of(payer).await?;
        let total = plan.total_cost()?;
        if balance < total.to_u256() {
            return Err(Refusal::BalanceShort { balance, cost: total.base_units() }.into());
        }
        // What the sponsor approves is what each sub-task may be funded
        // with (see `super::money`).
        let mut approved = plan.clone();
        for t in &mut approved.subtasks {
            t.approved = Some(t.cost);
        }
        if !self.store.update_plan(id, &plan_json(&approved)?, RunState::Proposed).await? {
            return Err(RunError::changed(id, "approval"));
        }
        for task in &plan.subtasks {
            let executor = task.executor.ok_or(PlanError::ExecutorUnassigned(task.index))?;
            self.store.put_subtask(id, &Progress::waiting(task.index, executor).to_row()).await?;
        }
        // The run's tasks are created from here on: its logs are read from here.
        let head = self.chain.head().await?.number;
        self.store.set_from_block(id, head).await?;
        self.chain.read_from(head).await;
        if !self.transition(id, &[RunState::Proposed], RunState::Running, None).await? {
            return Err(RunError::changed(id, "approval"));
        }
        let event = RunEvent::PlanApproved { plan_id: plan.id, total_cost: total };
        self.emit_run(id, event.kind().as_str(), &event).await?;
        // Driven here, or (in replica mode, by a standby) on the replica
        // holding the lane, told so.
        self.spawn(id);
        self.nudge(id).await;
        self.view(id).await
    }

    /// Cancels a proposed plan at once, or asks a running one to stop.
    pub async fn cancel(&self, id: impl Into<RunId>) -> Result<RunView, RunError> {
        let id = &id.into();
        let (run, plan) = self.load(id).await?;
        match run.state {
            RunState::Proposed => {
                let reason = crate::state::CloseReason::Cancelled;
                let why = crate::state::Reason::Close(reason.clone());
                self.transition(id, &[RunState::Proposed], RunState::Cancelled, Some(&why)).await?;
                let event = RunEvent::PlanFailed { plan_id: plan.id, reason };
                self.emit_run(id, event.kind().as_str(), &event).await?;
            }
            s if s.is_live() => {
                self.store.push_decision(id, None, DecisionKind::Cancel, None).await?;
                self.nudge(id).await;
            }
            s => return Err(RunError::wrong_state(id, s, "a cancellation")),
        }
        self.view(id).await
    }

    /// Closes every run proposed at least `ttl` before `now` (wall-clock
    /// ms) that nobody approved: cancelled (nothing was funded), with the
    /// reason `proposal expired` and a `plan_failed` event. A run approved
    /// or cancelled meanwhile is left alone. The runs it closed.
    pub async fn expire_proposals(
        &self,
        ttl: std::time::Duration,
        now: i64,
    ) -> Result<Vec<RunId>, RunError> {
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let mut expired = Vec::new();
        for run in self.store.runs_in(&[RunState::Proposed]).await? {
            if now.saturating_sub(run.created_at) < ttl {
                continue;
            }
            let id = RunId::from(&run.id);
            // One run that cannot be expired (its plan does not load, a
            // write fails) is logged and tried again next sweep; the
            // others expire meanwhile.
            match self.expire_one(&id).await {
                Ok(true) => expired.push(id),
                Ok(false) => {}
                Err(e) => tracing::warn!(run = %id, error = %e, "expiring a proposal"),
            }
        }
        Ok(expired)
    }

    /// Cancels proposed run `id` as expired; whether this call did.
    async fn expire_one(&self, id: &RunId) -> Result<bool, RunError> {
        let (_, plan) = self.load(id).await?;
        let reason = crate::state::CloseReason::ProposalExpired;
        let why = crate::state::Reason::Close(reason.clone());
        if !self.transition(id, &[RunState::Proposed], RunState::Cancelled, Some(&why)).await? {
            return Ok(false);
        }
        let event = RunEvent::PlanFailed { plan_id: plan.id, reason };
        self.emit_run(id, event.kind().as_str(), &event).await?;
        tracing::info!(run = %id, "proposal expired: nobody approved it");
        Ok(true)
    }

    /// Queues a decision about a running plan.
    pub async fn decide(&self, id: impl Into<RunId>, decision: Decision) -> Result<i64, RunError> {
        let id = &id.into();
        self.decide_typed(id, decision, None).await
    }

    /// [`Orchestrator::decide`] with an amount the person typed: a change
    /// of executor that raises the sub-task's cost to the new executor's
    /// price needs it on a high-stakes run, and a typed amount must be the
    /// cost the change gives (see [`super::money`]). Such a raise is
    /// refused here, before anything is queued, when it would take the plan
    /// over its budget, an enclosing nested plan over its share, or either
    /// over the spend cap.
    pub async fn decide_typed(
        &self,
        id: impl Into<RunId>,
        decision: Decision,
        typed: Option<&str>,
    ) -> Result<i64, RunError> {
        let id = &id.into();
        let (run, plan) = self.load(id).await?;
        if decision == Decision::Cancel {
            self.cancel(id).await?;
            return Ok(0);
        }
        if !run.state.is_live() {
            return Err(RunError::wrong_state(id, run.state, "a decision"));
        }
        let (idx, kind, mut arg) = decision.parts();
        if let Some(i) = idx
            && plan.subtask(i).is_none()
        {
            return Err(PlanError::UnknownIndex(i).into());
        }
        if let Decision::Dispute(_, reason) | Decision::Appeal(_, reason) = &decision
            && reason.trim().is_empty()
        {
            return Err(Refusal::ReasonMissing.into());
        }
        // Only a ruling can be appealed: refused at once rather than queued
        // and ignored.
        if let Decision::Appeal(i, _) = &decision {
            let phase = self.progress(id).await?.get(i).map(|r| r.phase);
            if phase != Some(Phase::Chain(Status::Ruled)) {
                let phase = phase.map_or("not started", |p| p.as_str());
                return Err(Refusal::NotRuled { index: *i, phase }.into());
            }
        }
        if let Decision::Checkpoint { name, .. } = &decision
            && !plan.checkpoints.iter().any(|c| &c.name == name)
        {
            return Err(Refusal::NoCheckpoint(name.clone()).into());
        }
        if let Decision::ChangeExecutor(i, executor) = decision {
            let mut edited = plan.reassign(i, executor)?;
            // A dearer executor raises the cost only as the person accepts
            // it, within the budget, the shares and the cap; the raise
            // travels with the decision and is applied (and checked again)
            // when the sub-task is queued again.
            let raised = self.executor_raise(&plan, run.stakes, i, executor, typed).await?;
            if let Some(t) = edited.subtasks.iter_mut().find(|t| t.index == i)
                && let Some(cost) = raised
            {
                t.cost = cost;
            }
            edited.validate(&self.chain.context(&edited).await?)?;
            arg = Some(super::money::executor_arg(executor, raised));
        } else if typed.is_some() {
            return Err(Refusal::AmountWithoutChange.into());
        }
        let seq = self.store.push_decision(id, idx, kind, arg.as_deref()).await?;
        self.nudge(id).await;
        Ok(seq)
    }

    /// The token that confirms exactly this plan: keyed by the service's
    /// secret over the plan id, its budget, every nested plan's (path,
    /// budget share) and every (index, executor, cost).
    pub fn confirmation_token(&self, plan: &Plan) -> String {
        let mut bytes = Vec::with_capacity(80 + plan.subtasks.len() * 56);
        bytes.extend_from_slice(self.config.confirm_secret.as_slice());
        bytes.extend_from_slice(plan.id.as_slice());
        bytes.extend_from_slice(&plan.budget.base_units().to_be_bytes());
        for g in &plan.groups {
            // Paths are length-prefixed: no two lists write the same bytes.
            let path = g.path.to_string();
            bytes.extend_from_slice(&(path.len() as u64).to_be_bytes());
            bytes.extend_from_slice(path.as_bytes());
            bytes.extend_from_slice(&g.budget.base_units().to_be_bytes());
        }
        bytes.extend_from_slice(&(plan.subtasks.len() as u64).to_be_bytes());
        for t in &plan.subtasks {
            bytes.extend_from_slice(&t.index.to_be_bytes());
            bytes.extend_from_slice(t.executor.unwrap_or_default().as_slice());
            bytes.extend_from_slice(&t.cost.base_units().to_be_bytes());
        }
        keccak256(&bytes).to_string()
    }
}
