//! Delegation: the parts of a task other agents do, as child tasks this
//! worker funds from its own wallet when its brain answers `hire`, and the
//! rules that keep that wallet from being drained by whoever hires the
//! worker.
//!
//! - A hire names capabilities the card `delegates`, at most
//!   [`crate::brain::MAX_HIRES`] per answer and each once per task (checked
//!   with the answer, [`crate::brain::wire`]); each child costs at most its
//!   delegate's `max_price` (the cheapest active offer under it is taken).
//! - The own task is accepted before its children are funded, and never
//!   funded if accepting fails: an accepted task can no longer be
//!   cancelled, nor reassigned before its deadline, so the children serve
//!   a task that stands.
//! - A child is paid only while the own task still is this worker's,
//!   accepted and before its deadline; otherwise it is cancelled if nobody
//!   accepted it yet, disputed if it delivered, and left to expire (then
//!   refunded) otherwise.
//! - A child's result is checked against the capability bought — readable,
//!   hash-verified, passing the capability's published result schema and,
//!   for a built-in capability, well formed
//!   ([`crate::offline::check_delivered`]) — before it is paid, and
//!   disputed with the reason if it fails.
//! - The child tasks funded and not settled yet count against the card's
//!   cap on delegated spend outstanding
//!   ([`tessera_bindings::card::AgentCard::delegated_outstanding_cap`]); a
//!   task whose children would go over it is left alone until a child
//!   settles.
//! - A task that cannot be delegated (nobody offers a part under the
//!   card's limit, too close to its deadline, a wallet that cannot pay),
//!   or one of whose children failed, is declined on chain while before its
//!   deadline: its funder is refunded at once. Its other children are
//!   followed until they settle, never paid for nothing.
//! - The children of one answer are funded together; once every one of
//!   them is paid, the brain is asked again with their results (`hired`),
//!   and its final answer delivers, declines, or hires more (capabilities
//!   not hired yet).
//! - Children are followed from the chain, not from memory: a child's
//!   reference derives from the own task and its capability, and its
//!   creation log (client and funder this worker, parent the own task) is
//!   found again by a restarted worker reading the escrow's logs, which
//!   follows, pays or disputes it (`runtime::children`); the brain, asked
//!   again, hires the same children, which are followed, not funded twice.

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
use crate::brain::Hire;

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

/// A task waiting on the child tasks this worker created for it.
#[derive(Debug, Clone)]
pub(super) struct Delegation {
    /// The worker's own task.
    pub(super) own: TaskRecord,
    /// Its children, in the order they were hired.
    pub(super) children: Vec<Child>,
    /// Why the own task is given up (a child failed), once one did.
    pub(super) failed: Option<String>,
    /// Whether it was given up (declined, or left): its other children are
    /// followed until they settle, never finished with.
    pub(super) gave_up: bool,
}

impl Delegation {
    /// A delegation of `own` to nobody yet.
    pub(super) fn new(own: TaskRecord) -> Self {
        Self { own, children: Vec::new(), failed: None, gave_up: false }
    }

    /// Follows `child` too, unless it is followed already.
    pub(super) fn add(&mut self, child: Child) {
        if !self.children.iter().any(|c| c.id == child.id) {
            self.children.push(child);
        }
    }
}

/// One child task.
#[derive(Debug, Clone)]
pub(super) struct Child {
    /// The child task.
    pub(super) id: U256,
    /// The capability bought.
    pub(super) capability: String,
    /// Its spec, for checking its result (a translation in the language asked).
    pub(super) spec: String,
    /// What the child escrows, base units: counted against the card's cap
    /// until the child settles (zero once it has).
    pub(super) amount: u128,
    /// The block the child's logs start at, at the earliest.
    pub(super) from_block: u64,
    /// How it ended, once it did.
    pub(super) ended: Option<Ended>,
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ended {
    /// Paid: its result is the own task's to use.
    Paid,
    /// Settled without a result to use.
    Failed,
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

/// The id of the child task `funder` creates for the `capability` part of
/// its task `own`, and the reference it is created with.
pub fn child_of(funder: Address, own: U256, capability: &str) -> (U256, B256) {
    let reference = keccak256(("tessera-delegate", own, capability.to_owned()).abi_encode());
    (U256::from_be_bytes(keccak256((funder, reference).abi_encode()).0), reference)
}

/// A child to fund: what was hired, its id, reference, executor and price.
struct Fresh {
    hire: Hire,
    child: U256,
    reference: B256,
    executor: Address,
    price: u128,
}

impl Worker {
    /// The amount of every child task funded and not settled yet, base units.
    pub(super) fn delegated_outstanding(&self) -> u128 {
        self.delegations
            .values()
            .flat_map(|d| &d.children)
            .fold(0u128, |sum, c| sum.saturating_add(c.amount))
    }

    /// Hands the parts `hires` of task `rec` to other agents: follows the
    /// children an earlier life created already; accepts the own task,
    /// then creates the others (parent: `rec`, same plan) from this
    /// worker's wallet, each paying the cheapest active offer of at most
    /// its delegate's `max_price`, and waits for them in later passes.
    /// Declined on chain, nothing funded, when nobody offers a part under
    /// its limit, the deadline is too close, or the wallet cannot pay;
    /// left alone when the children would take the delegated spend
    /// outstanding over the card's cap (looked at again once a child
    /// settles) or the own task can no longer be accepted (it moved).
    pub(super) async fn delegate(
        &mut self,
        rec: TaskRecord,
        hires: Vec<Hire>,
    ) -> Result<Vec<Handled>, RuntimeError> {
        let id = rec.id;
        let mut delegation =
            self.delegations.get(&id).cloned().unwrap_or_else(|| Delegation::new(rec.clone()));
        let mut handled = Vec::new();
        let mut fresh = Vec::new();
        let mut ended = None;
        let escrow = self.escrow.contract();
        for hire in hires {
            let (child, reference) = child_of(self.me, id, &hire.capability);
            let existing = escrow.taskHash(child).call().await.map_err(map_call)?;
            if existing.is_zero() {
                fresh.push((hire, child, reference));
                continue;
            }
            // Created by an earlier life of this worker: follow it.
            tracing::info!(task = %id, %child, "following the child task created before");
            let child_rec = self.escrow.fetch(child, self.deployment.deploy_block).await?;
            let status = child_rec.status();
            if status.is_terminal() && status != Status::Paid {
                // Nothing left to follow, and no result to finish with.
                ended.get_or_insert(format!("its {} child task ended {status}", hire.capability));
                continue;
            }
            handled.push(Handled::Delegated {
                task: id,
                child,
                executor: child_rec.task.executor,
                price: child_rec.task.amount,
            });
            delegation.add(Child {
                id: child,
                capability: hire.capability,
                spec: hire.spec,
                // Settled children hold nothing: a paid one is only finished.
                amount: if status.is_terminal() { 0 } else { child_rec.task.amount },
                from_block: self.deployment.deploy_block,
                ended: None,
            });
        }
        if let Some(reason) = ended {
            return self.give_up_with(rec, delegation, handled, reason).await;
        }
        if fresh.is_empty() {
            self.follow_children(delegation);
            return Ok(handled);
        }
        if !self.caught_up {
            // The children of an earlier life count against the cap: they
            // are all known only once the logs are read up to the head.
            let why = "reading the escrow's past logs before funding a child task".to_owned();
            return Ok(self.defer(delegation, handled, why));
        }
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let mut funding = Vec::with_capacity(fresh.len());
        for (hire, child, reference) in fresh {
            let limit =
                self.card.delegate(&hire.capability).map_or(0, |d| d.max_price.base_units());
            let Ok(word) = capability::encode(&hire.capability) else {
                let reason = format!("{:?} is no capability name", hire.capability);
                return self.give_up_with(rec, delegation, handled, reason).await;
            };
            let listed = offers::offers_for(&registry, word, 200).await?;
            let others: Vec<_> = listed.offers.into_iter().filter(|o| o.agent != self.me).collect();
            let Some((executor, price)) = offers::cheapest_active(&others, Some(limit)) else {
                let reason =
                    format!("nobody offers {} for at most {limit} base units", hire.capability);
                return self.give_up_with(rec, delegation, handled, reason).await;
            };
            funding.push(Fresh { hire, child, reference, executor, price });
        }
        let now = self.chain_time().await?;
        let own_deadline = rec.task.deadline.to::<u64>();
        let Some((deadline, review_window)) = child_terms(own_deadline, rec.task.reviewWindow, now)
        else {
            let reason = "too close to its deadline to delegate".to_owned();
            return self.give_up_with(rec, delegation, handled, reason).await;
        };
        let names: Vec<&str> = funding.iter().map(|f| f.hire.capability.as_str()).collect();
        let names = names.join(", ");
        let plural = if funding.len() > 1 { "s" } else { "" };
        let total = funding.iter().fold(0u128, |sum, f| sum.saturating_add(f.price));
        let (outstanding, cap) =
            (self.delegated_outstanding(), self.card.delegated_outstanding_cap());
        if outstanding.saturating_add(total) > cap {
            // Looked at again once a child settles.
            let why = format!(
                "its {names} child task{plural} would cost {total} base units with \
                 {outstanding} out in child tasks already, over the card's \
                 max_delegated_outstanding of {cap}"
            );
            return Ok(self.defer(delegation, handled, why));
        }
        let token = MockUSDC::new(self.deployment.token, self.provider.clone());
        let balance = token.balanceOf(self.me).call().await.map_err(map_call)?;
        if balance < U256::from(total) {
            let reason = if plural.is_empty() {
                format!(
                    "its wallet holds {balance} base units, the {names} child task costs {total}"
                )
            } else {
                format!(
                    "its wallet holds {balance} base units, the {names} child tasks cost {total}"
                )
            };
            return self.give_up_with(rec, delegation, handled, reason).await;
        }
        self.ensure_allowance().await?;
        // Accepted first: from here on the client can neither cancel the
        // task nor hand it to someone else before its deadline.
        let mut rec = rec;
        if rec.status() == Status::Created {
            match self.escrow.accept(self.me, &mut rec).await {
                Ok(_) => tracing::info!(task = %id, "accepted before funding its child tasks"),
                Err(ClientError::Revert(r)) => {
                    let why = format!("it could not be accepted ({r}); no child funded");
                    self.follow_children(delegation);
                    handled.push(super::decline::leave(id, why));
                    return Ok(handled);
                }
                Err(e) => return Err(e.into()),
            }
        }
        delegation.own = rec.clone();
        for f in funding {
            let created = self.fund(&rec, &f, deadline, review_window).await;
            let from_block = match created {
                Ok(block) => block.unwrap_or(self.deployment.deploy_block),
                Err(e) => {
                    // The children funded so far are followed; the brain,
                    // asked again once they are paid, hires the rest.
                    self.follow_children(delegation);
                    return Err(e);
                }
            };
            tracing::info!(task = %id, child = %f.child, executor = %f.executor, price = f.price, capability = %f.hire.capability, "delegated");
            handled.push(Handled::Delegated {
                task: id,
                child: f.child,
                executor: f.executor,
                price: f.price,
            });
            delegation.add(Child {
                id: f.child,
                capability: f.hire.capability,
                spec: f.hire.spec,
                amount: f.price,
                from_block,
                ended: None,
            });
        }
        self.follow_children(delegation);
        Ok(handled)
    }

    /// Creates child `f` of own task `rec` due at `deadline`; the block of
    /// its creation, when this call mined it.
    async fn fund(
        &mut self,
        rec: &TaskRecord,
        f: &Fresh,
        deadline: u64,
        review_window: u32,
    ) -> Result<Option<u64>, RuntimeError> {
        let child_envelope = Envelope {
            parent: Parent::Task(rec.id.to_string()),
            spec: f.hire.spec.clone(),
            capability: Some(f.hire.capability.clone()),
            source: f.hire.source.clone(),
            inputs: Vec::new(),
            // A delegated part is no step of the plan: it hangs under the
            // task it serves, by its parent link.
            path: None,
            groups: Vec::new(),
        };
        let spec_uri = self.sources.encode(&child_envelope).map_err(RuntimeError::Blob)?;
        let params = CreateParams {
            r#ref: f.reference,
            planId: rec.plan_id,
            parentId: rec.id,
            capability: capability::encode(&f.hire.capability).expect("checked before"),
            client: self.me,
            executor: f.executor,
            amount: f.price,
            deadline: U40::from(deadline),
            reviewWindow: review_window,
            specURI: spec_uri,
        };
        match self.escrow.create(self.me, params).await {
            Ok((_, receipt)) => Ok(receipt.block_number),
            // A creation of an earlier life, mined meanwhile: follow it.
            Err(ClientError::Revert(r)) if r.is_duplicate_reference() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Follows `delegation`'s children from now on (nothing when it has none).
    pub(super) fn follow_children(&mut self, delegation: Delegation) {
        if !delegation.children.is_empty() {
            self.delegations.insert(delegation.own.id, delegation);
        }
    }

    /// New children cannot be funded now (`why`): the task is left alone
    /// until a child settles — unless children of an earlier life are
    /// followed already: once they are paid, the brain is asked again and
    /// hires the rest then.
    fn defer(
        &mut self,
        delegation: Delegation,
        mut handled: Vec<Handled>,
        why: String,
    ) -> Vec<Handled> {
        let id = delegation.own.id;
        if delegation.children.is_empty() {
            self.deferred.insert(id);
            handled.push(super::decline::leave(id, why));
        } else {
            self.follow_children(delegation);
        }
        handled
    }

    /// Declines own task `rec` for `reason` (see [`Self::decline`]); the
    /// children `delegation` follows already are followed until they
    /// settle, never finished with (a decline failing for now is sent
    /// again as they are followed).
    async fn give_up_with(
        &mut self,
        rec: TaskRecord,
        mut delegation: Delegation,
        mut handled: Vec<Handled>,
        reason: String,
    ) -> Result<Vec<Handled>, RuntimeError> {
        let id = rec.id;
        delegation.failed = Some(reason.clone());
        self.follow_children(delegation);
        let done = self.decline(rec, reason).await;
        if let Some(d) = self.delegations.get_mut(&id) {
            d.gave_up = done.is_ok();
        }
        handled.push(done?);
        Ok(handled)
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
