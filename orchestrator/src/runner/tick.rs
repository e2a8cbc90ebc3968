//! One look at a run: sync every sub-task from the chain, apply the queued
//! decisions, take the steps [`super::step`] says are due, then decide
//! whether the run is over. This is where the step's actions meet the chain
//! and the store.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy::primitives::U256;
use tessera_bindings::task::{Status, TaskRecord};

use super::{
    Orchestrator, RunCtx, RunError,
    error::revert_text,
    reach::Unreadable,
    recover::Recover,
    step::{self, Action, Call, Ending, OnChain, Resolution, Snapshot},
};
use crate::{
    events,
    plan::Plan,
    state::{
        CloseReason, DecisionKind, Gate, Outcome, PauseReason, Pending, Phase, Progress, Reason,
        RecoveryStep, RunEvent, RunId, RunState,
    },
    store::DecisionOutcome,
};

impl Orchestrator {
    /// One look at a run. True when the run is over.
    pub(super) async fn tick(&self, id: &RunId) -> Result<bool, RunError> {
        self.config.inject_fault(id);
        // In replica mode, nothing is done for a lane this replica no
        // longer holds (each send checks again).
        self.fence()?;
        // The run and its plan, read once: this look keeps them current.
        let ctx = self.context(id).await?;
        let plan = ctx.plan();
        if !ctx.state().is_live() {
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
            if let Some(rec) = self.sync(&plan, row, head.timestamp).await? {
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
        if ctx.state() != RunState::Cancelling {
            self.settle_nested(&plan, &rows).await?;
        }

        for row in self.store.pending_decisions(id).await? {
            let decision = Pending::from_row(&row)?;
            // Resolved against the chain time it was first taken at: taken
            // again after an interruption, it sends what it sent before.
            let Some(taken) = self.store.take_decision(id, decision.seq, now).await? else {
                continue;
            };
            let result = self.apply(&ctx, &mut rows, &mut records, &decision, taken).await;
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
            self.emit(&plan, &format!("decision:{}", decision.seq), &event).await?;
        }

        // Decisions may have moved the run, and changed a sub-task's cost.
        let gates = self.gates_step(&ctx, &rows, now).await?;
        let plan = ctx.plan();
        let chain = self.on_chain(&records).await?;
        let results = self.condition_inputs(&plan, &rows).await?;
        let unreadable = self.unreadable_results(&plan, &rows, &records, now).await?;
        let held = step::held(&plan, &gates);
        let snapshot = Snapshot {
            state: ctx.state(),
            plan: &plan,
            rows: &rows,
            chain: &chain,
            now,
            head_block: head.number,
            results: &results,
            held: &held,
            unreadable: &unreadable,
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
                action => self.act(&ctx, &mut rows, &records, action, now).await?,
            }
        }
        self.send_wave(&ctx, &mut rows, &records, &approvals, creations, now).await?;

        // Completion is decided on stored phases only: sync picks up what
        // the steps did at the next wake-up.
        let stored: Vec<Progress> = self.progress(id).await?.into_values().collect();
        self.drivers
            .watch(id, stored.iter().filter_map(|p| p.task_id.as_deref()?.parse().ok()).collect());
        let run = ctx.run();
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
            run.close.as_ref(),
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
                self.move_run(&ctx, &RunState::LIVE, RunState::Completed, None).await?;
                self.chain.forget(&self.task_ids(&plan, &stored)).await;
                self.chain.unfund(plan.id);
                self.reach.forget(stored.iter().filter_map(|r| r.result_uri.as_deref()));
                let event = RunEvent::PlanCompleted {
                    plan_id: plan.id,
                    subtasks: stored.len(),
                    total_cost: settled.paid,
                    paid: settled.paid,
                    refunded: settled.refunded,
                };
                self.emit_once(&plan, &event).await?;
                Ok(true)
            }
            Some(Ending::Closed { state, reason }) => {
                for row in stored.iter().filter(|r| r.phase == Phase::Waiting) {
                    let row = Progress { phase: Phase::Skipped, ..row.clone() };
                    self.store.put_subtask(id, &row.to_row()).await?;
                }
                let why = Reason::Close(reason.clone());
                self.move_run(&ctx, &[RunState::Cancelling], state, Some(&why)).await?;
                self.chain.forget(&self.task_ids(&plan, &stored)).await;
                self.chain.unfund(plan.id);
                self.reach.forget(stored.iter().filter_map(|r| r.result_uri.as_deref()));
                let event = RunEvent::PlanFailed { plan_id: plan.id, reason };
                self.emit_once(&plan, &event).await?;
                Ok(true)
            }
            Some(Ending::TimedOut) => {
                tracing::info!("no decision in time; cancelling");
                self.close(&ctx, &CloseReason::Cancelled).await?;
                self.wake(id);
                Ok(false)
            }
            None => Ok(false),
        }
    }

    /// Carries out one step action.
    async fn act(
        &self,
        ctx: &RunCtx,
        rows: &mut BTreeMap<u32, Progress>,
        records: &HashMap<u32, TaskRecord>,
        action: Action,
        now: u64,
    ) -> Result<(), RunError> {
        let (id, plan) = (ctx.id(), ctx.plan());
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
                self.emit(&plan, &format!("skipped:{index}"), &event).await?;
            }
            Action::Recover { index, attempt, failure, policy } => {
                self.recover(ctx, rows, Recover { index, attempt, failure, policy }).await?;
            }
            Action::Create { index, inputs } => {
                self.send_wave(ctx, rows, records, &[], vec![(index, inputs)], now).await?;
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
            Action::Silent { index, attempt, executor, blocks } => {
                let rec = records
                    .get(&index)
                    .ok_or(RunError::Inconsistent { index, what: "no on-chain task" })?;
                let task_id = rec.id.to_string();
                let window = plan.accept_window_blocks;
                tracing::warn!(index, task = %task_id, %executor, blocks, window, "executor silent; cancelling");
                // Told once the cancel is in: an executor that moved in the
                // same block (accepted, delivered) was not silent after all.
                match self.transact(rec, &Call::Cancel, false).await {
                    Ok(_) => {}
                    Err(e) if e.is_refusal() => {
                        tracing::info!(index, task = %task_id, error = %e, "the silent executor moved first");
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                }
                let mut body = events::subtask_fields(plan.id, index, attempt, &task_id);
                events::merge(
                    &mut body,
                    serde_json::json!({
                        "executor": executor,
                        "blocks": blocks,
                        "window": window,
                        "reason": format!(
                            "{executor} neither accepted nor delivered in {blocks} blocks \
                             (accept window {window}): cancelled at full refund"
                        ),
                    }),
                );
                let event = RunEvent::SubtaskSilent(events::fields(body));
                self.emit(&plan, &format!("silent:{task_id}"), &event).await?;
            }
            Action::Pause { index, attempt, reason } => {
                self.pause(ctx, index, attempt, reason).await?;
            }
            Action::Close(reason) => self.close(ctx, &reason).await?,
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
                        "attempt {attempt} ended before its upstream delivered; attempt {} is \
                         funded with its upstream's next attempt",
                        attempt + 1
                    );
                    self.recovery_event(
                        &plan,
                        index,
                        attempt + 1,
                        RecoveryStep::AwaitUpstream,
                        reason,
                    )
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
        ctx: &RunCtx,
        rows: &mut BTreeMap<u32, Progress>,
        records: &mut HashMap<u32, TaskRecord>,
        decision: &Pending,
        now: u64,
    ) -> Result<Outcome, RunError> {
        if matches!(decision.kind, DecisionKind::Pass | DecisionKind::Stop) {
            return self.checkpoint_decision(ctx, rows, decision).await;
        }
        let (id, plan) = (ctx.id(), ctx.plan());
        let chain: HashMap<u32, OnChain> =
            records.iter().map(|(i, rec)| (*i, OnChain::of(rec))).collect();
        let state = ctx.state();
        let (results, held, unreadable) = (HashMap::new(), BTreeSet::new(), BTreeMap::new());
        let snapshot = Snapshot {
            state,
            plan: &plan,
            rows,
            chain: &chain,
            now,
            head_block: 0,
            results: &results,
            held: &held,
            unreadable: &unreadable,
        };
        match step::resolve(&snapshot, decision)? {
            Resolution::Close => {
                self.close(ctx, &CloseReason::Cancelled).await?;
                Ok(Outcome::Done(DecisionKind::Cancel))
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
                        self.reorged(&plan, row, rec.id, row.phase, &dedup, kind).await?;
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
                self.apply_raise(ctx, &row, decision).await?;
                self.store.put_subtask(id, &row.to_row()).await?;
                rows.insert(index, row);
                records.remove(&index);
                let gates = self.store.gates(id).await?;
                let dedup = format!("resumed:{}", decision.seq);
                self.resume_if_clear(ctx, rows, &gates, &dedup).await?;
                Ok(Outcome::Queued { attempt })
            }
            Resolution::Ignore(why) => Ok(Outcome::Ignored(why)),
        }
    }

    /// What the step needs of each on-chain task, with whether it was ever
    /// accepted and the blocks it was offered and last changed in (read
    /// from its logs).
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
            (facts.offered_block, facts.last_block) = self.chain.offered_and_last(rec.id).await;
            out.insert(*index, facts);
        }
        Ok(out)
    }

    /// The delivered results that cannot be read (see [`super::reach`]),
    /// each told once with a `result_unreadable` event.
    async fn unreadable_results(
        &self,
        plan: &Plan,
        rows: &BTreeMap<u32, Progress>,
        records: &HashMap<u32, TaskRecord>,
        now: u64,
    ) -> Result<BTreeMap<u32, Unreadable>, RunError> {
        let mut out = BTreeMap::new();
        for (index, rec) in records {
            let Some(row) = rows.get(index) else { continue };
            let Some(why) = self.unreadable(row, rec, now).await else { continue };
            let task_id = rec.id.to_string();
            tracing::warn!(index, task = %task_id, %why, "a delivered result cannot be read");
            let mut body = events::subtask_fields(plan.id, *index, row.attempt, &task_id);
            events::merge(
                &mut body,
                serde_json::json!({
                    "result_uri": rec.result_uri,
                    "executor": rec.task.executor,
                    "reason": why.as_str(),
                }),
            );
            let event = RunEvent::ResultUnreadable(events::fields(body));
            self.emit(plan, &format!("unreadable:{task_id}"), &event).await?;
            out.insert(*index, why);
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
                if let Ok(c) = when.condition() {
                    wanted.extend(c.references());
                }
            }
        }
        let mut docs = HashMap::new();
        for index in wanted {
            let Some(uri) = rows.get(&index).and_then(|r| r.result_uri.as_deref()) else {
                continue;
            };
            docs.insert(index, self.result_doc(uri).await);
        }
        Ok(docs)
    }

    /// Sends `call` on `rec`, publishing a dispute's or an appeal's reason
    /// first. A person's `decision` is seen through reorganisations (see
    /// [`super::Chain::send_deep`]); a step's is answered by the next look at the
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
            .map_err(RunError::Reason)
    }

    /// The task ids of every attempt of every sub-task of `plan`.
    fn task_ids(&self, plan: &Plan, rows: &[Progress]) -> Vec<U256> {
        rows.iter().flat_map(|r| (0..=r.attempt).map(|a| self.task_of(plan.id, r.idx, a))).collect()
    }

    /// Pauses a running run for a decision about sub-task `index`.
    pub(super) async fn pause(
        &self,
        ctx: &RunCtx,
        index: u32,
        attempt: u32,
        reason: String,
    ) -> Result<(), RunError> {
        let reason = PauseReason(reason);
        let why = Reason::Pause(reason.clone());
        let paused = self.move_run(ctx, &[RunState::Running], RunState::Paused, Some(&why)).await?;
        if paused {
            let plan = ctx.plan();
            let event = RunEvent::PlanPaused { plan_id: plan.id, index, reason };
            self.emit(&plan, &format!("paused:{index}:{attempt}"), &event).await?;
        }
        Ok(())
    }
}

/// Logs a refused transaction on `indices` and carries on; any other
/// failure (the node unreachable, say) fails the step.
pub(super) fn refused(indices: &[u32], e: RunError) -> Result<(), RunError> {
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
fn outcome_of(result: Result<Outcome, RunError>) -> DecisionOutcome {
    match result {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Failed { error: e.to_string(), revert: e.revert().map(revert_text) },
    }
    .to_stored()
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
        let fine = outcome_of(Ok(Outcome::Done(DecisionKind::Approve)));
        assert_eq!(
            (fine.ok, fine.outcome.as_str(), fine.error, fine.revert),
            (true, "approved", None, None)
        );
        let other = outcome_of(Err(crate::runner::Refusal::ReasonMissing.into()));
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
