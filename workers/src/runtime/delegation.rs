//! Delegation: the part of a task another agent does, as a child task this
//! worker funds from its own wallet, and the rules that keep that wallet
//! from being drained by whoever hires the worker.
//!
//! - The own task is accepted before its child is funded, and never funded
//!   if accepting fails: an accepted task can no longer be cancelled, nor
//!   reassigned before its deadline, so the child serves a task that stands.
//! - The child is paid only while the own task still is this worker's,
//!   accepted and before its deadline; otherwise it is cancelled if nobody
//!   accepted it yet, disputed if it delivered, and left to expire (then
//!   refunded) otherwise.
//! - The child's result is checked against the capability bought
//!   ([`check_result`]: readable, hash-verified, well formed) before it is
//!   paid, and disputed with the reason if it fails.
//! - The child tasks funded and not settled yet count against the card's
//!   cap on delegated spend outstanding
//!   ([`tessera_bindings::card::AgentCard::delegated_outstanding_cap`]); a
//!   task whose child would go over it is left alone until a child settles.
//! - A task that cannot be delegated (nobody offers the part under the
//!   card's limit, too close to its deadline, a wallet that cannot pay),
//!   or whose delegated part failed, is declined on chain while before its
//!   deadline: its funder is refunded at once.
//! - Children are followed from the chain, not from memory: the child's
//!   reference derives from the own task, and its creation log (client and
//!   funder this worker, parent the own task) is found again by a restarted
//!   worker reading the escrow's logs, which follows, pays or disputes it.

use alloy::{
    primitives::{Address, B256, U256, aliases::U40, keccak256},
    sol_types::SolValue,
};
use tessera_bindings::{
    AgentRegistry,
    ITaskEscrow::CreateParams,
    MockUSDC, capability,
    client::{ClientError, map_call},
    envelope::{Envelope, Parent},
    offers,
    task::{Status, TaskRecord},
};

use super::{Handled, RuntimeError, Worker};
use crate::{
    Output,
    offline::{Composite, DelegatedWork, brief_of, check_result},
};

/// Seconds of a task's deadline kept for the local work after a
/// delegated child task delivers: the child is due this long before.
pub const DELEGATION_MARGIN_SECS: u64 = 120;

/// The longest a child task may run, seconds: a day, whatever the own
/// task's deadline. With the child's review window (at most
/// [`MAX_CHILD_REVIEW_SECS`]) and the escrow's dispute window, it bounds how
/// long a child's price counts against the card's cap, so a client and a
/// child in league cannot pin the cap for the year a deadline may run.
pub const MAX_CHILD_SECS: u64 = 24 * 60 * 60;

/// The longest review window a child task gets, seconds: an hour (the
/// worker reviews a delivery at once; the window only matters while it is
/// down).
pub const MAX_CHILD_REVIEW_SECS: u32 = 60 * 60;

/// The deadline and review window of the child of a task due at
/// `own_deadline` with review window `own_review`, funded at chain time
/// `now`; `None` when too close to the deadline to delegate.
pub fn child_terms(own_deadline: u64, own_review: u32, now: u64) -> Option<(u64, u32)> {
    let deadline =
        own_deadline.saturating_sub(DELEGATION_MARGIN_SECS).min(now.saturating_add(MAX_CHILD_SECS));
    (deadline > now + 60).then_some((deadline, own_review.min(MAX_CHILD_REVIEW_SECS)))
}

/// A task waiting on the child task this worker created for part of it.
#[derive(Debug, Clone)]
pub(super) struct Delegation {
    /// The worker's own task.
    pub(super) own: TaskRecord,
    /// Its spec, for the local work on the child's result.
    spec: String,
    /// The child task.
    pub(super) child: U256,
    /// The capability delegated.
    capability: String,
    /// What the child escrows, base units: counted against the card's cap
    /// until the child settles.
    pub(super) amount: u128,
    /// The block the child's logs start at, at the earliest.
    from_block: u64,
}

/// A child task's creation seen in the escrow's logs: this worker funded it
/// for part of its task `parent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ChildLog {
    /// The child task.
    pub(super) child: U256,
    /// The own task it serves.
    pub(super) parent: U256,
    /// The capability it bought.
    pub(super) capability: B256,
    /// The block of its creation.
    pub(super) block: u64,
}

/// What following a child did this pass.
enum Next {
    /// Nothing to do yet.
    Waiting,
    /// Acted on the child (disputed it); still followed until it settles.
    Acted(Handled),
    /// The child is settled and the own task delivered or given up.
    Settled(Handled),
}

/// The id of the child task `funder` creates for the `capability` part of
/// its task `own`, and the reference it is created with.
pub fn child_of(funder: Address, own: U256, capability: &str) -> (U256, B256) {
    let reference = keccak256(("tessera-delegate", own, capability.to_owned()).abi_encode());
    (U256::from_be_bytes(keccak256((funder, reference).abi_encode()).0), reference)
}

impl Worker {
    /// The amount of every child task funded and not settled yet, base units.
    pub(super) fn delegated_outstanding(&self) -> u128 {
        self.delegations.values().fold(0u128, |sum, d| sum.saturating_add(d.amount))
    }

    /// Hands `part` of task `rec` to another agent: accepts the own task,
    /// then creates the child task (parent: `rec`, same plan) from this
    /// worker's wallet, paying the cheapest active offer of at most
    /// `limit`, and waits for it in later passes. Declined on chain,
    /// nothing funded, when nobody offers the part under the limit, the
    /// deadline is too close, or the wallet cannot pay; left alone when
    /// the child would take the delegated spend outstanding over the
    /// card's cap (looked at again once a child settles) or the own task
    /// can no longer be accepted (it moved).
    pub(super) async fn delegate(
        &mut self,
        rec: TaskRecord,
        envelope: Envelope,
        part: Composite,
        limit: u128,
    ) -> Result<Handled, RuntimeError> {
        let id = rec.id;
        let leave = |reason: String| Ok(super::decline::leave(id, reason));
        let (child, reference) = child_of(self.me, id, part.delegable);
        let mut delegation = Delegation {
            own: rec.clone(),
            spec: envelope.spec.clone(),
            child,
            capability: part.delegable.to_owned(),
            amount: 0,
            from_block: self.deployment.deploy_block,
        };
        let escrow = self.escrow.contract();
        let existing = escrow.taskHash(child).call().await.map_err(map_call)?;
        if !existing.is_zero() {
            // Created by an earlier life of this worker: wait for it.
            tracing::info!(task = %id, %child, "following the child task created before");
            let child_rec = self.escrow.fetch(child, self.deployment.deploy_block).await?;
            let status = child_rec.status();
            if status.is_terminal() && status != Status::Paid {
                // Nothing left to follow, and no result to finish with.
                let reason = format!("its {} child task ended {status}", part.delegable);
                return self.decline(rec, reason).await;
            }
            // Settled children hold nothing: a paid one is only finished.
            if !status.is_terminal() {
                delegation.amount = child_rec.task.amount;
            }
            self.delegations.insert(id, delegation);
            return Ok(Handled::Delegated {
                task: id,
                child,
                executor: child_rec.task.executor,
                price: child_rec.task.amount,
            });
        }
        if !self.caught_up {
            // The children of an earlier life count against the cap: they
            // are all known only once the logs are read up to the head.
            self.deferred.insert(id);
            return leave("reading the escrow's past logs before funding a child task".into());
        }
        let word = capability::encode(part.delegable).expect("delegable names are valid");
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let listed = offers::offers_for(&registry, word, 200).await?;
        let others: Vec<_> = listed.offers.into_iter().filter(|o| o.agent != self.me).collect();
        let Some((executor, price)) = offers::cheapest_active(&others, Some(limit)) else {
            let reason =
                format!("nobody offers {} for at most {} base units", part.delegable, limit);
            return self.decline(rec, reason).await;
        };
        let now = self.chain_time().await?;
        let own_deadline = rec.task.deadline.to::<u64>();
        let Some((deadline, review_window)) = child_terms(own_deadline, rec.task.reviewWindow, now)
        else {
            return self.decline(rec, "too close to its deadline to delegate".into()).await;
        };
        let (outstanding, cap) =
            (self.delegated_outstanding(), self.card.delegated_outstanding_cap());
        if outstanding.saturating_add(price) > cap {
            // Looked at again once a child settles.
            self.deferred.insert(id);
            return leave(format!(
                "its {} child task would cost {price} base units with {outstanding} out in \
                 child tasks already, over the card's max_delegated_outstanding of {cap}",
                part.delegable
            ));
        }
        let token = MockUSDC::new(self.deployment.token, self.provider.clone());
        let balance = token.balanceOf(self.me).call().await.map_err(map_call)?;
        if balance < U256::from(price) {
            let reason = format!(
                "its wallet holds {balance} base units, the {} child task costs {price}",
                part.delegable
            );
            return self.decline(rec, reason).await;
        }
        self.ensure_allowance().await?;
        // Accepted first: from here on the client can neither cancel the
        // task nor hand it to someone else before its deadline.
        let mut rec = rec;
        if rec.status() == Status::Created {
            match self.escrow.accept(self.me, &mut rec).await {
                Ok(_) => tracing::info!(task = %id, "accepted before funding its child task"),
                Err(ClientError::Revert(r)) => {
                    return leave(format!("it could not be accepted ({r}); no child funded"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        delegation.own = rec.clone();
        let child_envelope = Envelope {
            parent: Parent::Task(id.to_string()),
            spec: envelope.spec.clone(),
            capability: Some(part.delegable.to_owned()),
            source: envelope.source.clone(),
            inputs: envelope.inputs.clone(),
            // A delegated part is no step of the plan: it hangs under the
            // task it serves, by its parent link.
            path: None,
            groups: Vec::new(),
        };
        let spec_uri = self.sources.encode(&child_envelope).map_err(RuntimeError::Blob)?;
        let params = CreateParams {
            r#ref: reference,
            planId: rec.plan_id,
            parentId: id,
            capability: word,
            client: self.me,
            executor,
            amount: price,
            deadline: U40::from(deadline),
            reviewWindow: review_window,
            specURI: spec_uri,
        };
        match self.escrow.create(self.me, params).await {
            Ok((_, receipt)) => {
                delegation.from_block = receipt.block_number.unwrap_or(delegation.from_block);
            }
            // A creation of an earlier life, mined meanwhile: follow it.
            Err(ClientError::Revert(r)) if r.is_duplicate_reference() => {}
            Err(e) => return Err(e.into()),
        }
        tracing::info!(task = %id, %child, %executor, price, capability = part.delegable, "delegated");
        delegation.amount = price;
        self.delegations.insert(id, delegation);
        Ok(Handled::Delegated { task: id, child, executor, price })
    }

    /// Follows a child task found in the escrow's logs (a restarted worker
    /// has nothing of it in memory): unless it is followed already or
    /// settled, it is followed from now on, whatever became of the own
    /// task ([`Handled::Delegated`] says so).
    pub(super) async fn adopt(&mut self, log: ChildLog) -> Result<Option<Handled>, RuntimeError> {
        if self.delegations.contains_key(&log.parent) {
            return Ok(None);
        }
        let Some(name) = capability::decode(log.capability) else { return Ok(None) };
        // Only the child this worker derives from the task: anything else
        // it funded is no delegation.
        if child_of(self.me, log.parent, &name).0 != log.child {
            return Ok(None);
        }
        let child = self.escrow.fetch(log.child, log.block).await?;
        if child.status().is_terminal() {
            return Ok(None);
        }
        let own = self.escrow.fetch(log.parent, self.deployment.deploy_block).await?;
        // Without its spec the own task cannot be finished, but the child
        // is still followed: cancelled, disputed or refunded, never paid
        // for nothing. A spec out of reach for now is read next pass.
        let spec = match self.sources.decode(&own.spec_uri).await {
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
        self.delegations.insert(
            own.id,
            Delegation {
                own,
                spec,
                child: log.child,
                capability: name,
                amount: child.task.amount,
                from_block: log.block,
            },
        );
        Ok(Some(handled))
    }

    /// Follows every child task this worker waits on (see [`Self::advance`]).
    /// Returns what was done, and whether a child settled (freeing room
    /// under the cap).
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
            // One delegation failing (the node, a refused transaction) must
            // not hold up the others; it is followed again next pass.
            match self.advance(&d, now).await {
                Ok(Next::Settled(done)) => {
                    self.delegations.remove(&d.own.id);
                    handled.push(done);
                    settled = true;
                }
                Ok(Next::Acted(done)) => handled.push(done),
                Ok(Next::Waiting) => {}
                Err(e) => tracing::warn!(
                    task = %d.own.id,
                    child = %d.child,
                    error = %e,
                    "following the delegated part failed; will retry"
                ),
            }
        }
        Ok((handled, settled))
    }

    /// One delegation's next step at chain time `now`. A delivered child
    /// is paid only while the own task stands and its result is what was
    /// bought, then its result is worked on and the own task delivered;
    /// otherwise it is disputed. A child nobody accepted is cancelled once
    /// the own task is withdrawn; one past its deadline is refunded. A
    /// disputed child is followed until it settles (its default claimed
    /// once the arbiter's window passed, a ruling finalized once its appeal
    /// window passed). A child that ends without a result it paid for gives
    /// the own task up: declined on chain while before its deadline.
    async fn advance(&mut self, d: &Delegation, now: u64) -> Result<Next, RuntimeError> {
        let own = d.own.id;
        let mut child = self.escrow.fetch(d.child, d.from_block).await?;
        let stopped = |status: Status, reason: String| {
            tracing::warn!(task = %own, child = %d.child, %status, %reason, "child task not paid");
            Handled::ChildStopped { task: own, child: d.child, status, reason }
        };
        let updated = child.task.updatedAt.to::<u64>();
        match child.status() {
            Status::Created | Status::Accepted => {
                if child.status() == Status::Created
                    && let Some(why) = self.withdrawn(d, now).await?
                {
                    self.escrow.cancel(self.me, &mut child).await?;
                    return Ok(Next::Settled(stopped(Status::Cancelled, why)));
                }
                if now <= child.task.deadline.to::<u64>() {
                    return Ok(Next::Waiting);
                }
                self.escrow.refund_expired(self.me, &mut child).await?;
                let reason = format!("the delegated {} expired", d.capability);
                return self.give_up(own, reason).await.map(Next::Settled);
            }
            Status::Completed => {
                let refused = match self.withdrawn(d, now).await? {
                    Some(why) => Some(why),
                    None => self.check_child(d, &child).await?.err(),
                };
                if let Some(reason) = refused {
                    if now > updated + u64::from(child.task.reviewWindow) {
                        // Too late to dispute (this worker was down past the
                        // review window): the escrow releases it to whoever asks.
                        tracing::debug!(task = %own, child = %d.child, %reason, "past the review window");
                        return Ok(Next::Waiting);
                    }
                    let uri = self.publish_reason(&reason)?;
                    self.escrow.dispute(self.me, &mut child, &uri).await?;
                    return Ok(Next::Acted(stopped(Status::Disputed, reason)));
                }
                self.escrow.approve(self.me, &mut child).await?;
            }
            Status::Disputed => {
                if now > updated + u64::from(child.task.disputeWindow) {
                    self.escrow.claim_default(self.me, &mut child).await?;
                    return self.after_dispute(d, &child).await;
                }
                return Ok(Next::Waiting);
            }
            Status::Ruled | Status::Appealed => {
                let window = if child.status() == Status::Ruled {
                    child.task.appealWindow
                } else {
                    child.task.appealRulingWindow
                };
                if now > updated + u64::from(window) {
                    self.escrow.finalize(self.me, &mut child).await?;
                    return self.after_dispute(d, &child).await;
                }
                return Ok(Next::Waiting);
            }
            Status::Paid => {}
            other => {
                let reason = format!("the delegated {} ended {other}", d.capability);
                return self.give_up(own, reason).await.map(Next::Settled);
            }
        }
        self.finish(d, &child).await.map(Next::Settled)
    }

    /// A child settled by its dispute: its result is used if it was paid
    /// in full (the arbiter found it good), else the own task is given up.
    /// A failure is followed again next pass (the child is settled by then:
    /// [`Self::advance`] finishes or gives up from its status).
    async fn after_dispute(
        &mut self,
        d: &Delegation,
        child: &TaskRecord,
    ) -> Result<Next, RuntimeError> {
        if child.status() == Status::Paid {
            return self.finish(d, child).await.map(Next::Settled);
        }
        let reason =
            format!("the delegated {} ended {} after a dispute", d.capability, child.status());
        self.give_up(d.own.id, reason).await.map(Next::Settled)
    }

    /// Why the own task no longer stands behind its child, if it does not:
    /// a child is paid only while its parent is this worker's, accepted and
    /// before its deadline. A parent still `Created` (a child funded before
    /// its parent was accepted, by an earlier version of this worker) is
    /// accepted here first.
    async fn withdrawn(
        &mut self,
        d: &Delegation,
        now: u64,
    ) -> Result<Option<String>, RuntimeError> {
        // An accepted task stays this worker's until its deadline: nobody
        // else can move it, so it needs no reading.
        if d.own.status() == Status::Accepted
            && d.own.task.executor == self.me
            && now < d.own.task.deadline.to::<u64>()
        {
            return Ok(None);
        }
        let mut own = self.escrow.fetch(d.own.id, self.deployment.deploy_block).await?;
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
    /// hash-verified) and a well-formed result of the capability
    /// ([`check_result`]). A result out of reach for now is no verdict:
    /// [`RuntimeError::BlobUnavailable`], looked at again next pass.
    async fn check_child(
        &self,
        d: &Delegation,
        child: &TaskRecord,
    ) -> Result<Result<(), String>, RuntimeError> {
        let Some(uri) = child.result_uri.as_deref() else {
            return Ok(Err(format!("the delegated {} delivered no result", d.capability)));
        };
        let delivered = match self.fetch_result(uri).await? {
            Ok(json) => json,
            Err(e) => {
                // A category only: nothing of what answered is published.
                let what = format!("the delegated {} result", d.capability);
                return Ok(Err(super::fetching::unreadable(&what, &e)));
            }
        };
        Ok(check_result(&d.capability, &d.spec, &delivered).map_err(|e| e.to_string()))
    }

    /// Works on a paid child's result and delivers the own task; gives
    /// the own task up (on chain, see [`Self::give_up`]) when the result
    /// cannot be worked on.
    async fn finish(
        &mut self,
        d: &Delegation,
        child: &TaskRecord,
    ) -> Result<Handled, RuntimeError> {
        let own = d.own.id;
        let Some(uri) = child.result_uri.as_deref() else {
            return self.give_up(own, "the delegated part delivered no result".into()).await;
        };
        let delivered = match self.fetch_result(uri).await? {
            Ok(json) => json,
            Err(e) => {
                let reason = super::fetching::unreadable("the delegated result", &e);
                return self.give_up(own, reason).await;
            }
        };
        let Some(text) = delivered.get("text").and_then(|t| t.as_str()) else {
            return self.give_up(own, "the delegated result has no text".into()).await;
        };
        let work = DelegatedWork {
            capability: d.capability.clone(),
            task: child.id.to_string(),
            executor: child.task.executor.to_string(),
            paid: child.task.amount.to_string(),
        };
        let brief = match brief_of(text, &d.spec, Some(work)) {
            Ok(b) => b,
            Err(e) => return self.give_up(own, e.to_string()).await,
        };
        let result_uri = self.store_result(&Output::Brief(brief).to_json())?;
        let mut rec = self.escrow.fetch(own, self.deployment.deploy_block).await?;
        let leave = |status: Status| {
            Ok(super::decline::leave(own, format!("no longer mine to deliver ({status})")))
        };
        if rec.task.executor != self.me {
            return leave(rec.status());
        }
        match rec.status() {
            Status::Accepted => self.escrow.complete(self.me, &mut rec, &result_uri).await?,
            Status::Created => self.escrow.deliver(self.me, &mut rec, &result_uri).await?,
            other => return leave(other),
        };
        let (earned, paid) = (rec.task.amount, child.task.amount);
        tracing::info!(
            task = %own,
            child = %child.id,
            earned,
            paid,
            profit = i128::try_from(earned).unwrap_or(i128::MAX) - i128::try_from(paid).unwrap_or(0),
            "delivered with a delegated part"
        );
        self.delivered.insert(own, rec);
        Ok(Handled::Delivered { task: own, result_uri })
    }

    /// Lets the escrow take this worker's tokens for the child tasks it
    /// creates (one standing allowance, set once).
    async fn ensure_allowance(&mut self) -> Result<(), RuntimeError> {
        if self.allowance_set {
            return Ok(());
        }
        let token = MockUSDC::new(self.deployment.token, self.provider.clone());
        let escrow = self.deployment.task_escrow;
        let current = token.allowance(self.me, escrow).call().await.map_err(map_call)?;
        if current < U256::MAX >> 1 {
            // Through the sender that counts this worker's nonces.
            self.escrow.transact(token.approve(escrow, U256::MAX), self.me).await?;
        }
        self.allowance_set = true;
        Ok(())
    }
}

#[cfg(test)]
#[path = "delegation_tests.rs"]
mod tests;
