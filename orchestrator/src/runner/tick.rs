//! One look at a run: sync every sub-task from the chain, apply the queued
//! decisions, take the steps [`super::step`] says are due, then decide
//! whether the run is over. This is where the step's actions meet the chain
//! and the store.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy::primitives::{U256, aliases::U40};
use tessera_bindings::{
    ITaskEscrow::CreateParams,
    capability,
    envelope::{Envelope, Input, Parent},
    task::{Status, TaskRecord},
    usdc::Usdc,
};

use super::{
    Chain, Orchestrator, RunError,
    error::revert_text,
    step::{self, Action, Call, Ending, OnChain, Resolution, Snapshot},
    wave::Part,
};
use crate::{
    plan::{Group, Plan, PlanError, StepPath},
    state::{CloseReason, DecisionKind, Gate, Pending, Phase, Progress, RunEvent, RunState, Spend},
    store::DecisionOutcome,
};

impl Orchestrator {
    /// One look at a run. True when the run is over.
    pub(super) async fn tick(&self, id: &str) -> Result<bool, RunError> {
        self.config.inject_fault(id);
        // In replica mode, nothing is done for a lane this replica no
        // longer holds (each send checks again).
        self.fence()?;
        let (run, plan) = self.load(id).await?;
        if !run.state.is_live() {
            return Ok(true);
        }
        // One read of the escrow's new logs serves every run at this head.
        let head = self.chain.head().await?;
        self.chain.read_to(head.number).await?;
        let mut rows = self.progress(id).await?;
        let mut records: HashMap<u32, TaskRecord> = HashMap::new();
        for task in &plan.subtasks {
            let index = task.index;
            let row = rows
                .get_mut(&index)
                .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
            if let Some(rec) = self.sync(&plan, row).await? {
                records.insert(index, rec);
            }
        }
        let now = head.timestamp;
        // What the run has spent, as the chain says: kept for the views and
        // for the budget check before any creation.
        let spend = self.spend(&plan, rows.values()).await?;
        if self.store.spend(id).await? != Some(spend) {
            self.store.set_spend(id, &spend).await?;
        }
        // Skipped leaves count as done only when the plan skipped them.
        if run.state != RunState::Cancelling {
            self.settle_nested(id, &plan, &rows).await?;
        }

        for row in self.store.pending_decisions(id).await? {
            let decision = Pending::from_row(&row)?;
            // Resolved against the chain time it was first taken at: taken
            // again after an interruption, it sends what it sent before.
            let Some(taken) = self.store.take_decision(id, decision.seq, now).await? else {
                continue;
            };
            let result = self.apply(id, &plan, &mut rows, &mut records, &decision, taken).await;
            let outcome = outcome_of(result);
            if !outcome.ok {
                tracing::warn!(
                    decision = %decision.kind,
                    index = ?decision.index,
                    error = outcome.error.as_deref().unwrap_or_default(),
                    revert = outcome.revert.as_deref().unwrap_or_default(),
                    "decision failed"
                );
            }
            if !self.store.record_decision(id, decision.seq, &outcome).await? {
                // Another runner recorded it first; its outcome stands.
                continue;
            }
            crate::ops::decision_applied(decision.kind.as_str(), outcome.ok);
            let event = RunEvent::DecisionApplied {
                plan_id: plan.id,
                index: decision.index,
                decision: decision.kind,
                outcome: outcome.outcome,
                ok: outcome.ok,
                error: outcome.error,
                revert: outcome.revert,
            };
            self.emit(id, &format!("decision:{}", decision.seq), &event).await?;
        }

        // Decisions may have moved the run, and changed a sub-task's cost.
        let (_, plan) = self.load(id).await?;
        let gates = self.gates_step(id, &plan, &rows, now).await?;
        let (run, plan) = self.load(id).await?;
        let chain = self.on_chain(&records).await?;
        let results = self.condition_inputs(&plan, &rows).await?;
        let held = step::held(&plan, &gates);
        let snapshot = Snapshot {
            state: run.state,
            plan: &plan,
            rows: &rows,
            chain: &chain,
            now,
            results: &results,
            held: &held,
        };
        // Approvals and creations due now go out together, each kind in one
        // call, so a wave of sub-tasks (and, with auto review, the next
        // wave's creation beside this one's approval) lands in one block.
        let mut approvals = Vec::new();
        let mut creations = Vec::new();
        for action in step::steps(&snapshot)? {
            match action {
                Action::Send { index, call: Call::Approve } => approvals.push(index),
                Action::Create { index, inputs } => creations.push((index, inputs)),
                action => self.act(id, &plan, &mut rows, &records, action, now).await?,
            }
        }
        self.send_wave(id, &plan, &mut rows, &records, &approvals, creations, now).await?;

        // Completion is decided on stored phases only: sync picks up what
        // the steps did at the next wake-up.
        let stored: Vec<Progress> = self.progress(id).await?.into_values().collect();
        let (run, _) = self.load(id).await?;
        let timeout = self.config.decision_timeout.as_secs();
        // A checkpoint waiting for an approver has its own timeout; once
        // escalated, the run's decision timeout runs from the escalation.
        // Both in chain seconds, from the head's timestamp when the wait
        // began: never a replica's wall clock.
        let gates = self.store.gates(id).await?;
        let open: Vec<Gate> = gates.values().copied().filter(|g| g.is_open()).collect();
        let paused_for = if open.iter().any(|g| matches!(g, Gate::Reached { .. })) {
            None
        } else if let Some(since) = open.iter().find_map(|g| match g {
            Gate::Escalated { chain_at, .. } => Some(*chain_at),
            _ => None,
        }) {
            Some(since.map_or(0, |s| now.saturating_sub(s)))
        } else if run.state == RunState::Paused {
            self.store.pause_began(id, now).await?.map(|s| now.saturating_sub(s))
        } else {
            None
        };
        match step::ending(
            run.state,
            run.reason.as_deref(),
            &stored,
            paused_for,
            timeout,
            !open.is_empty(),
        ) {
            // On a chain that reorganises, over only once every settlement
            // is as deep as asked: until then the settled rows are read again.
            Some(Ending::Completed | Ending::Closed { .. })
                if !self.settled_deep(&plan, &stored).await =>
            {
                Ok(false)
            }
            Some(Ending::Completed) => {
                let settled = self.spend(&plan, &stored).await?;
                self.store.set_spend(id, &settled).await?;
                self.transition(id, &RunState::LIVE, RunState::Completed, None).await?;
                self.chain.forget(&self.task_ids(&plan, &stored)).await;
                let event = RunEvent::PlanCompleted {
                    plan_id: plan.id,
                    subtasks: stored.len(),
                    total_cost: settled.paid,
                    paid: settled.paid,
                    refunded: settled.refunded,
                };
                self.emit_once(id, &event).await?;
                Ok(true)
            }
            Some(Ending::Closed { state, reason }) => {
                for row in stored.iter().filter(|r| r.phase == Phase::Waiting) {
                    let row = Progress { phase: Phase::Skipped, ..row.clone() };
                    self.store.put_subtask(id, &row.to_row()).await?;
                }
                let text = reason.as_str();
                self.transition(id, &[RunState::Cancelling], state, Some(text)).await?;
                self.chain.forget(&self.task_ids(&plan, &stored)).await;
                let event = RunEvent::PlanFailed { plan_id: plan.id, reason: text.to_owned() };
                self.emit_once(id, &event).await?;
                Ok(true)
            }
            Some(Ending::TimedOut) => {
                tracing::info!("no decision in time; cancelling");
                self.close(id, &plan, &CloseReason::Cancelled).await?;
                self.wake(id);
                Ok(false)
            }
            None => Ok(false),
        }
    }

    /// Carries out one step action.
    async fn act(
        &self,
        id: &str,
        plan: &Plan,
        rows: &mut BTreeMap<u32, Progress>,
        records: &HashMap<u32, TaskRecord>,
        action: Action,
        now: u64,
    ) -> Result<(), RunError> {
        let row_of = |rows: &mut BTreeMap<u32, Progress>, index: u32| {
            rows.get(&index)
                .cloned()
                .ok_or(RunError::Inconsistent { index, what: "no progress row" })
        };
        match action {
            Action::Skip(index) => {
                let row = Progress { phase: Phase::Skipped, ..row_of(rows, index)? };
                self.store.put_subtask(id, &row.to_row()).await?;
                rows.insert(index, row);
            }
            Action::Leave { index, reason, condition } => {
                let row = Progress { phase: Phase::Skipped, ..row_of(rows, index)? };
                self.store.put_subtask(id, &row.to_row()).await?;
                rows.insert(index, row);
                tracing::info!(index, %reason, "sub-task skipped");
                let event = RunEvent::SubtaskSkipped { plan_id: plan.id, index, reason, condition };
                self.emit(id, &format!("skipped:{index}"), &event).await?;
            }
            Action::Recover { index, attempt, failure, policy } => {
                self.recover(id, plan, rows, index, attempt, failure, policy).await?;
            }
            Action::Create { index, inputs } => {
                self.send_wave(id, plan, rows, records, &[], vec![(index, inputs)], now).await?;
            }
            Action::Send { index, call } => {
                let rec = records
                    .get(&index)
                    .ok_or(RunError::Inconsistent { index, what: "no on-chain task" })?;
                match self.transact(rec, &call, false).await {
                    Ok(_) => {}
                    // Not a user decision: usually someone moved the task
                    // first; the next look at the chain tells.
                    Err(e) if e.is_refusal() => tracing::warn!(
                        index,
                        ?call,
                        error = %e,
                        revert = e.revert().map(revert_text).unwrap_or_default(),
                        "transaction refused; re-reading the chain"
                    ),
                    Err(e) => return Err(e),
                }
            }
            Action::Pause { index, attempt, reason } => {
                self.pause(id, plan, index, attempt, reason).await?;
            }
            Action::Close(reason) => self.close(id, plan, &reason).await?,
            Action::Rewind { index, attempt } => {
                let row = row_of(rows, index)?;
                if row.attempt == attempt {
                    let next = Progress {
                        attempt: attempt + 1,
                        phase: Phase::Waiting,
                        task_id: None,
                        result_uri: None,
                        output: None,
                        ..row
                    };
                    self.store.put_subtask(id, &next.to_row()).await?;
                    rows.insert(index, next);
                    let reason = format!(
                        "attempt {attempt} ended before its upstream delivered; attempt {} is                          funded with its upstream's next attempt",
                        attempt + 1
                    );
                    self.recovery_event(plan, id, index, attempt + 1, "await upstream", reason)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Applies one decision taken at chain time `now`; returns what came of
    /// it, or why it failed (a refused transaction is a failure, with its
    /// decoded revert). A reassignment the chain already shows (sent
    /// before an interruption, with the same deadline since `now` is the
    /// time the decision was first taken) is not sent again.
    async fn apply(
        &self,
        id: &str,
        plan: &Plan,
        rows: &mut BTreeMap<u32, Progress>,
        records: &mut HashMap<u32, TaskRecord>,
        decision: &Pending,
        now: u64,
    ) -> Result<String, RunError> {
        if matches!(decision.kind, DecisionKind::Pass | DecisionKind::Stop) {
            return self.checkpoint_decision(id, plan, rows, decision).await;
        }
        let chain: HashMap<u32, OnChain> =
            records.iter().map(|(i, rec)| (*i, OnChain::of(rec))).collect();
        let state = self.load(id).await?.0.state;
        let (results, held) = (HashMap::new(), BTreeSet::new());
        let snapshot =
            Snapshot { state, plan, rows, chain: &chain, now, results: &results, held: &held };
        match step::resolve(&snapshot, decision)? {
            Resolution::Close => {
                self.close(id, plan, &CloseReason::Cancelled).await?;
                Ok(RunState::Cancelling.as_str().to_owned())
            }
            Resolution::Send { index, call, outcome, executor } => {
                let rec = records
                    .get(&index)
                    .ok_or(RunError::Inconsistent { index, what: "no on-chain task" })?;
                // A reassignment leaves the task `Created` for its executor
                // and deadline, changed no earlier than the decision.
                let shown = matches!(call, Call::Reassign { executor, deadline }
                    if rec.status() == Status::Created
                        && rec.task.executor == executor
                        && rec.task.deadline.to::<u64>() == deadline
                        && rec.task.updatedAt.to::<u64>() >= now);
                if shown {
                    tracing::info!(index, seq = decision.seq, "reassignment already on chain");
                } else {
                    let resent = self.transact(rec, &call, true).await?;
                    if resent > 0
                        && let Some(row) = rows.get(&index)
                    {
                        let dedup = format!("reorged:decision:{}:{resent}", decision.seq);
                        let kind = Some(decision.kind.as_str());
                        self.reorged(plan, row, rec.id, row.phase, &dedup, kind).await?;
                    }
                }
                if let Some(executor) = executor
                    && let Some(row) = rows.get_mut(&index)
                {
                    row.executor = executor;
                    self.store.put_subtask(id, &row.to_row()).await?;
                }
                Ok(outcome)
            }
            Resolution::Requeue(row) => {
                let index = row.idx;
                let attempt = row.attempt;
                self.apply_raise(id, &row, decision).await?;
                self.store.put_subtask(id, &row.to_row()).await?;
                rows.insert(index, row);
                records.remove(&index);
                let gates = self.store.gates(id).await?;
                let dedup = format!("resumed:{}", decision.seq);
                self.resume_if_clear(id, plan, rows, &gates, &dedup).await?;
                Ok(format!("attempt {attempt} queued"))
            }
            Resolution::Ignore(why) => Ok(why),
        }
    }

    /// What the step needs of each on-chain task, with whether it was ever
    /// accepted (read from its logs).
    async fn on_chain(
        &self,
        records: &HashMap<u32, TaskRecord>,
    ) -> Result<HashMap<u32, OnChain>, RunError> {
        let mut out = HashMap::with_capacity(records.len());
        for (index, rec) in records {
            let mut facts = OnChain::of(rec);
            if matches!(facts.status, Status::Expired | Status::Cancelled) {
                facts.accepted = self.chain.accepted(rec.id).await?;
            }
            out.insert(*index, facts);
        }
        Ok(out)
    }

    /// The result documents the conditions of waiting sub-tasks read, for
    /// those whose dependencies are done (paid, or delivered under auto
    /// review).
    async fn condition_inputs(
        &self,
        plan: &Plan,
        rows: &BTreeMap<u32, Progress>,
    ) -> Result<HashMap<u32, serde_json::Value>, RunError> {
        let mut wanted = BTreeSet::new();
        for task in &plan.subtasks {
            if rows.get(&task.index).is_none_or(|r| r.phase != Phase::Waiting) {
                continue;
            }
            // Its own condition and those of the nested steps it lies in.
            for (_, when) in plan.conditions_of(task.index) {
                if let Ok(c) = crate::condition::Condition::parse(when) {
                    wanted.extend(c.references());
                }
            }
        }
        let mut docs = HashMap::new();
        for index in wanted {
            let Some(uri) = rows.get(&index).and_then(|r| r.result_uri.as_deref()) else {
                continue;
            };
            docs.insert(index, self.result_doc(uri).await?);
        }
        Ok(docs)
    }

    /// Sends `call` on `rec`, publishing a dispute's or an appeal's reason
    /// first. A person's `decision` is seen through reorganisations (see
    /// [`Chain::send_deep`]); a step's is answered by the next look at the
    /// chain. Returns how many times it was sent again.
    async fn transact(
        &self,
        rec: &TaskRecord,
        call: &Call,
        decision: bool,
    ) -> Result<u32, RunError> {
        self.fence()?;
        let uri = match call {
            Call::Dispute(reason) | Call::Appeal(reason) => {
                Some(self.publish_reason(reason).await?)
            }
            _ => None,
        };
        self.fence()?;
        if decision {
            return Ok(self.chain.send_deep(rec, call, uri).await?);
        }
        self.chain.send(rec, call, uri).await?;
        Ok(0)
    }

    /// Publishes a dispute or appeal reason as `{"reason": …}` (off the
    /// runtime's threads: the blob store syncs to disk); returns its URI.
    async fn publish_reason(&self, reason: &str) -> Result<String, RunError> {
        let body = serde_json::json!({ "reason": reason }).to_string();
        let sources = self.sources.clone();
        tokio::task::spawn_blocking(move || sources.publish(body.as_bytes()))
            .await?
            .map_err(|e| RunError::Invalid(e.to_string()))
    }

    /// Hands the approvals of `approvals` and the creations of `creations`
    /// (each with its dependencies' outputs) to the head's wave, which sends
    /// them with every other run's in one call of each kind (see
    /// [`super::wave`]), then records the created tasks. A refused approval
    /// is logged (usually someone moved first; the next look at the chain
    /// tells); a refused creation is its sub-task's (see
    /// [`Orchestrator::creation_refused`]); any other failure fails the step.
    #[allow(clippy::too_many_arguments)]
    async fn send_wave(
        &self,
        id: &str,
        plan: &Plan,
        rows: &mut BTreeMap<u32, Progress>,
        records: &HashMap<u32, TaskRecord>,
        approvals: &[u32],
        creations: Vec<(u32, Vec<Input>)>,
        now: u64,
    ) -> Result<(), RunError> {
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
                let task = self.chain.task_id(Chain::reference(plan.id, from.idx, from.attempt));
                input.task_id = Some(task.to_string());
            }
            let row = rows
                .get(&index)
                .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
            let cost = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?.cost;
            if !spend.fits(cost, plan.budget) {
                self.over_budget(id, plan, row, cost, &spend, None).await?;
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
                    self.over_budget(id, plan, row, cost, &share, Some(g)).await?;
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
                    self.pause(id, plan, index, row.attempt, refused.to_string()).await?;
                }
                Err(e) => return Err(e),
            }
        }
        if recs.is_empty() && wave.is_empty() {
            return Ok(());
        }
        self.fence()?;
        let part = Part { run: id.to_owned(), approvals: recs, creations: wave };
        let outcome = self.chain.wave(part, &|| self.fence()).await;
        if let Err(e) = outcome.approved {
            refused(approvals, e)?;
        }
        for &index in &outcome.held {
            self.held_reference(id, plan, rows, index).await?;
        }
        for (index, error) in &outcome.refused {
            self.creation_refused(id, plan, rows, *index, error).await?;
        }
        for index in outcome.created? {
            let mut row = rows
                .get(&index)
                .cloned()
                .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
            let id = self.chain.task_id(Chain::reference(plan.id, index, row.attempt));
            let found = self.chain.task(id).await?;
            self.sync_record(plan, &mut row, found).await?;
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
        id: &str,
        plan: &Plan,
        rows: &mut BTreeMap<u32, Progress>,
        index: u32,
    ) -> Result<(), RunError> {
        let row = rows
            .get(&index)
            .cloned()
            .ok_or(RunError::Inconsistent { index, what: "no progress row" })?;
        let task = self.chain.task_id(Chain::reference(plan.id, index, row.attempt));
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
            return self.pause(id, plan, index, row.attempt, reason).await;
        }
        let moved = Progress { attempt: next, ..row };
        self.store.put_subtask(id, &moved.to_row()).await?;
        rows.insert(index, moved);
        let reason = format!("{what}; funding attempt {next} under a new reference");
        self.recovery_event(plan, id, index, next, "new reference", reason).await
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
        let reference = Chain::reference(plan.id, row.idx, row.attempt);
        let id = self.chain.task_id(reference);
        let parent_id = inputs
            .first()
            .and_then(|i: &Input| i.task_id.as_deref())
            .and_then(|t| t.parse::<U256>().ok())
            .unwrap_or_default();
        let envelope = Envelope {
            parent: if parent_id.is_zero() {
                Parent::Plan(plan.id)
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
            .map_err(|e| RunError::Invalid(format!("sub-task {}: envelope: {e}", row.idx)))?;
        // Upfront, a dependant's deadline also covers its upstream chain.
        let deadline = now + plan.deadline_offset_of(row.idx);
        let params = CreateParams {
            r#ref: reference,
            planId: plan.id,
            parentId: parent_id,
            capability: capability::encode(&task.capability)
                .map_err(|e| RunError::Invalid(format!("sub-task {}: {e}", row.idx)))?,
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

    /// The task ids of every attempt of every sub-task of `plan`.
    fn task_ids(&self, plan: &Plan, rows: &[Progress]) -> Vec<U256> {
        rows.iter()
            .flat_map(|r| {
                (0..=r.attempt).map(|a| self.chain.task_id(Chain::reference(plan.id, r.idx, a)))
            })
            .collect()
    }

    /// What the run has spent: every attempt of every sub-task that was
    /// funded, and what its settlement paid out and returned (a split
    /// ruling pays part and refunds the rest; an expired or cancelled
    /// attempt refunds all of it). From the logs the runner holds: no request.
    async fn spend(
        &self,
        plan: &Plan,
        rows: impl IntoIterator<Item = &Progress>,
    ) -> Result<Spend, RunError> {
        let overflow = || RunError::Invalid("spent amounts overflow".into());
        let add = |a: Usdc, b: Usdc| a.checked_add(b).ok_or_else(overflow);
        let mut total = Spend::default();
        for row in rows {
            for attempt in 0..=row.attempt {
                let id = self.chain.task_id(Chain::reference(plan.id, row.idx, attempt));
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
    async fn settle_nested(
        &self,
        id: &str,
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
            self.emit(id, &format!("nested:{}", g.path), &event).await?;
        }
        Ok(())
    }

    /// Refuses to fund sub-task `row`, whose `cost` would take the plan
    /// (or, with `group`, that nested plan's share) over its budget: an
    /// event and a pause with the reason, nothing sent.
    async fn over_budget(
        &self,
        id: &str,
        plan: &Plan,
        row: &Progress,
        cost: Usdc,
        spend: &Spend,
        group: Option<&Group>,
    ) -> Result<(), RunError> {
        let index = row.idx;
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
        self.emit(id, &format!("budget:{index}:{}", row.attempt), &event).await?;
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
        self.pause(id, plan, index, row.attempt, reason).await
    }

    /// Pauses a running run for a decision about sub-task `index`.
    pub(super) async fn pause(
        &self,
        id: &str,
        plan: &Plan,
        index: u32,
        attempt: u32,
        reason: String,
    ) -> Result<(), RunError> {
        let paused =
            self.transition(id, &[RunState::Running], RunState::Paused, Some(&reason)).await?;
        if paused {
            let event = RunEvent::PlanPaused { plan_id: plan.id, index, reason };
            self.emit(id, &format!("paused:{index}:{attempt}"), &event).await?;
        }
        Ok(())
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

/// Logs a refused transaction on `indices` and carries on; any other
/// failure (the node unreachable, say) fails the step.
fn refused(indices: &[u32], e: RunError) -> Result<(), RunError> {
    if !e.is_refusal() {
        return Err(e);
    }
    tracing::warn!(
        ?indices,
        error = %e,
        revert = e.revert().map(revert_text).unwrap_or_default(),
        "transaction refused; re-reading the chain"
    );
    Ok(())
}

/// A decision's result as stored and sent.
fn outcome_of(result: Result<String, RunError>) -> DecisionOutcome {
    match result {
        Ok(outcome) => DecisionOutcome { outcome, ok: true, error: None, revert: None },
        Err(e) => DecisionOutcome {
            outcome: format!("failed: {e}"),
            ok: false,
            error: Some(e.to_string()),
            revert: e.revert().map(revert_text),
        },
    }
}

#[cfg(test)]
mod tests {
    use alloy::primitives::U256;
    use tessera_bindings::{
        TaskEscrow::{TaskEscrowErrors, TaskEscrowTooEarly},
        client::ClientError,
        revert::ContractRevert,
    };

    use super::*;

    #[test]
    fn a_refused_transaction_is_a_failed_decision_with_its_revert() {
        let refused =
            ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowTooEarly(TaskEscrowTooEarly {
                notBefore: U256::from(9),
            }));
        let outcome = outcome_of(Err(RunError::Chain(ClientError::Revert(Box::new(refused)))));
        assert!(!outcome.ok);
        assert!(outcome.outcome.starts_with("failed: chain: "), "{outcome:?}");
        assert_eq!(
            outcome.revert.as_deref(),
            Some("TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 9 })")
        );
        assert!(outcome.error.unwrap().contains("TaskEscrowTooEarly"));
        let fine = outcome_of(Ok("approved".into()));
        assert_eq!(
            (fine.ok, fine.outcome.as_str(), fine.error, fine.revert),
            (true, "approved", None, None)
        );
        let other = outcome_of(Err(RunError::Invalid("not an address: x".into())));
        assert_eq!((other.ok, other.revert), (false, None));
    }

    #[test]
    fn a_dropped_transaction_is_passed_over_like_a_refusal_and_a_node_error_is_not() {
        let dropped = ClientError::Dropped { nonce: 3, hashes: Vec::new() };
        assert!(RunError::Chain(dropped).is_refusal());
        let dropped = ClientError::Dropped { nonce: 3, hashes: Vec::new() };
        assert!(refused(&[0], RunError::Chain(dropped)).is_ok(), "the chain is read again");
        let rpc = alloy::transports::TransportErrorKind::custom_str("down");
        assert!(refused(&[0], RunError::Chain(ClientError::Rpc(rpc))).is_err(), "fails the step");
    }
}
