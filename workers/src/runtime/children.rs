//! Following the child tasks this worker funded (see [`super::delegation`]
//! for the rules): each pass reads every child, pays a delivery that is
//! what was bought while its own task stands, disputes one that is not,
//! cancels or takes back the money of one that cannot serve any more, and
//! follows a disputed one until it settles. A child that ends without a
//! result to use gives its own task up (declined on chain while before
//! its deadline); once every child of a task is paid, the task's brain is
//! asked again with their results.

use alloy::primitives::Address;
use tessera_bindings::{
    AgentRegistry, capability,
    client::{ClientError, map_call},
    describe::{self, ResultSchema},
    task::{Status, TaskRecord},
};

use super::{
    Handled, RuntimeError, Worker,
    delegation::{Child, ChildLog, Delegation, Ended, child_of},
};
use crate::{AgentCard, brain::Hired, offline::check_delivered};

/// What following a child did this pass.
enum Step {
    /// Nothing to do yet.
    Waiting,
    /// Acted on the child (disputed it); still followed until it settles.
    Acted(Handled),
    /// The child settled: paid (its result to use) or not (then the own
    /// task is given up for `reason`, when it has one).
    Ended {
        /// How.
        ended: Ended,
        /// Why the own task is given up, when it is.
        reason: Option<String>,
        /// What was done, when worth reporting.
        done: Option<Handled>,
    },
}

impl Step {
    fn failed(reason: String) -> Self {
        Self::Ended { ended: Ended::Failed, reason: Some(reason), done: None }
    }
}

impl Worker {
    /// Follows a child task found in the escrow's logs (a restarted worker
    /// has nothing of it in memory): unless it is followed already or
    /// settled, it is followed from now on, whatever became of the own
    /// task ([`Handled::Delegated`] says so).
    pub(super) async fn adopt(&mut self, log: ChildLog) -> Result<Option<Handled>, RuntimeError> {
        let followed = |d: &Delegation| d.children.iter().any(|c| c.id == log.child);
        if self.delegations.get(&log.parent).is_some_and(followed) {
            return Ok(None);
        }
        let Some(name) = capability::decode(log.capability) else { return Ok(None) };
        // Only a child this worker derives from the task: anything else
        // it funded is no delegation.
        if child_of(self.me, log.parent, &name).0 != log.child {
            return Ok(None);
        }
        let child = self.escrow.fetch(log.child, log.block).await?;
        if child.status().is_terminal() {
            return Ok(None);
        }
        let own = match self.delegations.get(&log.parent) {
            Some(d) => d.own.clone(),
            None => self.escrow.fetch(log.parent, self.deployment.deploy_block).await?,
        };
        // Without its spec the child's result is checked against its
        // schema alone; a spec out of reach for now is read next pass.
        let spec = match self.sources.decode(&child.spec_uri).await {
            Ok(envelope) => envelope.spec,
            Err(e) if e.is_transient() => return Err(RuntimeError::BlobUnavailable(Box::new(e))),
            Err(_) => String::new(),
        };
        tracing::info!(task = %own.id, child = %log.child, status = %child.status(), "following a child task found on chain");
        let handled = Handled::Delegated {
            task: own.id,
            child: log.child,
            executor: child.task.executor,
            price: child.task.amount,
        };
        let mut delegation =
            self.delegations.remove(&own.id).unwrap_or_else(|| Delegation::new(own));
        delegation.add(Child {
            id: log.child,
            capability: name,
            spec,
            amount: child.task.amount,
            from_block: log.block,
            ended: None,
        });
        self.follow_children(delegation);
        Ok(Some(handled))
    }

    /// Follows every child task this worker waits on. Returns what was
    /// done, and whether a child settled (freeing room under the cap).
    pub(super) async fn advance_delegations(
        &mut self,
    ) -> Result<(Vec<Handled>, bool), RuntimeError> {
        if self.delegations.is_empty() {
            return Ok((Vec::new(), false));
        }
        let now = self.chain_time().await?;
        let mut handled = Vec::new();
        let mut settled = false;
        let waiting: Vec<Delegation> = self.delegations.values().cloned().collect();
        for d in waiting {
            settled |= self.advance(d, now, &mut handled).await;
        }
        Ok((handled, settled))
    }

    /// One delegation's next step at chain time `now`: each of its
    /// children followed ([`Self::follow`]); the own task given up when
    /// one failed; the brain asked again once every one is paid. What was
    /// done goes to `handled`; whether a child settled is returned.
    async fn advance(&mut self, mut d: Delegation, now: u64, handled: &mut Vec<Handled>) -> bool {
        let own = d.own.id;
        let mut settled = false;
        for i in 0..d.children.len() {
            if d.children[i].ended.is_some() {
                continue;
            }
            // One child failing to move (the node, a refused transaction)
            // must not hold up the others; it is followed again next pass.
            match self.follow(&d.own, &d.children[i], now).await {
                Ok(Step::Waiting) => {}
                Ok(Step::Acted(done)) => handled.push(done),
                Ok(Step::Ended { ended, reason, done }) => {
                    handled.extend(done);
                    let child = &mut d.children[i];
                    (child.ended, child.amount) = (Some(ended), 0);
                    settled = true;
                    if d.failed.is_none() {
                        d.failed = reason;
                    }
                }
                Err(e) => tracing::warn!(
                    task = %own,
                    child = %d.children[i].id,
                    error = %e,
                    "following a delegated part failed; will retry"
                ),
            }
        }
        if let Some(reason) = d.failed.clone()
            && !d.gave_up
        {
            match self.give_up(own, reason).await {
                Ok(done) => {
                    handled.push(done);
                    d.gave_up = true;
                }
                Err(e) => {
                    tracing::warn!(task = %own, error = %e, "giving the task up failed; will retry")
                }
            }
        }
        let all_ended = d.children.iter().all(|c| c.ended.is_some());
        if !all_ended || (d.failed.is_some() && !d.gave_up) {
            self.delegations.insert(own, d);
            return settled;
        }
        let all_paid = d.children.iter().all(|c| c.ended == Some(Ended::Paid));
        if d.failed.is_some() || !all_paid {
            // Given up, or withdrawn: nothing to finish.
            self.delegations.remove(&own);
            return settled;
        }
        // Out of the followed before the brain is asked again: an answer
        // hiring more follows its new children under the same task.
        self.delegations.remove(&own);
        match self.finish(&d).await {
            Ok(done) => handled.extend(done),
            Err(e) => {
                tracing::warn!(task = %own, error = %e, "finishing with the hired parts failed; will retry");
                self.delegations.entry(own).or_insert(d);
            }
        }
        settled
    }

    /// One child's next step at chain time `now`. A delivered child is
    /// paid only while the own task stands and its result is what was
    /// bought; otherwise it is disputed. A child nobody accepted is
    /// cancelled once the own task is withdrawn; one past its deadline is
    /// refunded. A disputed child is followed until it settles (its default
    /// claimed once the arbiter's window passed, a ruling finalized once
    /// its appeal window passed). A child that ends without a result it
    /// paid for gives the own task up.
    async fn follow(
        &mut self,
        own: &TaskRecord,
        c: &Child,
        now: u64,
    ) -> Result<Step, RuntimeError> {
        let mut child = self.escrow.fetch(c.id, c.from_block).await?;
        let stopped = |status: Status, reason: String| {
            tracing::warn!(task = %own.id, child = %c.id, %status, %reason, "child task not paid");
            Handled::ChildStopped { task: own.id, child: c.id, status, reason }
        };
        let updated = child.task.updatedAt.to::<u64>();
        match child.status() {
            Status::Created | Status::Accepted => {
                if child.status() == Status::Created
                    && let Some(why) = self.withdrawn(own, now).await?
                {
                    self.escrow.cancel(self.me, &mut child).await?;
                    let done = Some(stopped(Status::Cancelled, why));
                    return Ok(Step::Ended { ended: Ended::Failed, reason: None, done });
                }
                if now <= child.task.deadline.to::<u64>() {
                    return Ok(Step::Waiting);
                }
                self.escrow.refund_expired(self.me, &mut child).await?;
                return Ok(Step::failed(format!("the delegated {} expired", c.capability)));
            }
            Status::Completed => {
                let refused = match self.withdrawn(own, now).await? {
                    Some(why) => Some(why),
                    None => self.check_child(c, &child).await?.err(),
                };
                if let Some(reason) = refused {
                    if now > updated + u64::from(child.task.reviewWindow) {
                        // Too late to dispute (this worker was down past the
                        // review window): the escrow releases it to whoever asks.
                        tracing::debug!(task = %own.id, child = %c.id, %reason, "past the review window");
                        return Ok(Step::Waiting);
                    }
                    let uri = self.publish_reason(&reason)?;
                    self.escrow.dispute(self.me, &mut child, &uri).await?;
                    return Ok(Step::Acted(stopped(Status::Disputed, reason)));
                }
                self.escrow.approve(self.me, &mut child).await?;
            }
            Status::Disputed => {
                if now > updated + u64::from(child.task.disputeWindow) {
                    self.escrow.claim_default(self.me, &mut child).await?;
                    return Ok(after_dispute(c, &child));
                }
                return Ok(Step::Waiting);
            }
            Status::Ruled | Status::Appealed => {
                let window = if child.status() == Status::Ruled {
                    child.task.appealWindow
                } else {
                    child.task.appealRulingWindow
                };
                if now > updated + u64::from(window) {
                    self.escrow.finalize(self.me, &mut child).await?;
                    return Ok(after_dispute(c, &child));
                }
                return Ok(Step::Waiting);
            }
            Status::Paid => {}
            other => {
                return Ok(Step::failed(format!("the delegated {} ended {other}", c.capability)));
            }
        }
        Ok(Step::Ended { ended: Ended::Paid, reason: None, done: None })
    }

    /// Why the own task no longer stands behind its children, if it does
    /// not: a child is paid only while its parent is this worker's,
    /// accepted and before its deadline. A parent still `Created` (a child
    /// funded before its parent was accepted, by an earlier version of
    /// this worker) is accepted here first.
    async fn withdrawn(
        &mut self,
        own: &TaskRecord,
        now: u64,
    ) -> Result<Option<String>, RuntimeError> {
        // An accepted task stays this worker's until its deadline: nobody
        // else can move it, so it needs no reading.
        if own.status() == Status::Accepted
            && own.task.executor == self.me
            && now < own.task.deadline.to::<u64>()
        {
            return Ok(None);
        }
        let mut own = self.escrow.fetch(own.id, self.deployment.deploy_block).await?;
        let id = own.id;
        if own.task.executor != self.me {
            return Ok(Some(format!(
                "the parent task {id} was withdrawn: reassigned to {}",
                own.task.executor
            )));
        }
        if now >= own.task.deadline.to::<u64>() {
            return Ok(Some(format!(
                "the parent task {id} was withdrawn: past its deadline ({})",
                own.status()
            )));
        }
        match own.status() {
            Status::Accepted => Ok(None),
            Status::Created => match self.escrow.accept(self.me, &mut own).await {
                Ok(_) => Ok(None),
                Err(ClientError::Revert(r)) => Ok(Some(format!(
                    "the parent task {id} was withdrawn: it could not be accepted ({r})"
                ))),
                Err(e) => Err(e.into()),
            },
            other => Ok(Some(format!("the parent task {id} was withdrawn: it is {other}"))),
        }
    }

    /// Whether a delivered child's result is what was bought: readable
    /// (content-addressed results are fetched from wherever they are and
    /// hash-verified), passing its capability's published result schema
    /// and, for a built-in capability, well formed ([`check_delivered`]).
    /// A result out of reach for now is no verdict:
    /// [`RuntimeError::BlobUnavailable`], looked at again next pass.
    async fn check_child(
        &self,
        c: &Child,
        child: &TaskRecord,
    ) -> Result<Result<(), String>, RuntimeError> {
        let Some(uri) = child.result_uri.as_deref() else {
            return Ok(Err(format!("the delegated {} delivered no result", c.capability)));
        };
        let delivered = match self.fetch_result(uri).await? {
            Ok(json) => json,
            Err(e) => {
                // A category only: nothing of what answered is published.
                let what = format!("the delegated {} result", c.capability);
                return Ok(Err(super::fetching::unreadable(&what, &e)));
            }
        };
        let schema = self.published_schema(&c.capability, child.task.executor).await?;
        Ok(check_delivered(&c.capability, &c.spec, schema.as_ref(), &delivered)
            .map_err(|e| e.to_string()))
    }

    /// The result schema `executor` publishes for `capability`: a built-in
    /// capability's own, else its card's (none when its card is unreadable
    /// or describes no result).
    async fn published_schema(
        &self,
        capability: &str,
        executor: Address,
    ) -> Result<Option<ResultSchema>, RuntimeError> {
        if let Some(builtin) = describe::builtin(capability) {
            return Ok(builtin.result);
        }
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let agent = registry.getAgent(executor).call().await.map_err(map_call)?;
        Ok(AgentCard::from_data_uri(&agent.metadataURI)
            .ok()
            .and_then(|card| card.capability(capability).and_then(|o| o.descriptor().result)))
    }

    /// Every child of `d` is paid: their results read and handed to the
    /// own task's brain, asked again ([`Self::work`]). The own task is
    /// given up (on chain, see [`Self::give_up`]) when a result cannot be
    /// read, and left alone when it is no longer this worker's.
    async fn finish(&mut self, d: &Delegation) -> Result<Vec<Handled>, RuntimeError> {
        let own = d.own.id;
        let mut hired = Vec::with_capacity(d.children.len());
        for c in &d.children {
            let child = self.escrow.fetch(c.id, c.from_block).await?;
            let Some(uri) = child.result_uri.as_deref() else {
                let reason = format!("the delegated {} delivered no result", c.capability);
                return Ok(vec![self.give_up(own, reason).await?]);
            };
            let result = match self.fetch_result(uri).await? {
                Ok(json) => json,
                Err(e) => {
                    let what = format!("the delegated {} result", c.capability);
                    let reason = super::fetching::unreadable(&what, &e);
                    return Ok(vec![self.give_up(own, reason).await?]);
                }
            };
            hired.push(Hired {
                capability: c.capability.clone(),
                task: c.id.to_string(),
                executor: child.task.executor.to_string(),
                paid: child.task.amount.to_string(),
                spec: c.spec.clone(),
                result,
            });
        }
        let rec = self.escrow.fetch(own, self.deployment.deploy_block).await?;
        let status = rec.status();
        if rec.task.executor != self.me || !matches!(status, Status::Created | Status::Accepted) {
            let why = format!("no longer mine to deliver ({status})");
            return Ok(vec![super::decline::leave(own, why)]);
        }
        tracing::info!(task = %own, children = hired.len(), "every hired part is paid; asking again");
        let entry = self.hired.entry(own).or_default();
        for h in hired {
            if !entry.iter().any(|e| e.task == h.task) {
                entry.push(h);
            }
        }
        // Boxed: the work (a hire among it) nests in the following of
        // children, and would make every pass's future as large.
        Box::pin(self.work(rec)).await
    }
}

/// A child settled by its dispute: its result is used if it was paid in
/// full (the arbiter found it good), else the own task is given up.
fn after_dispute(c: &Child, child: &TaskRecord) -> Step {
    if child.status() == Status::Paid {
        return Step::Ended { ended: Ended::Paid, reason: None, done: None };
    }
    Step::failed(format!("the delegated {} ended {} after a dispute", c.capability, child.status()))
}
