//! The worker loop: an agent account that registers its card in the
//! AgentRegistry, finds tasks assigned to it, runs the asked
//! capability on the envelope and delivers the result (`deliver`: accept and
//! complete in one call), and later claims
//! payment of delivered work the client left unreviewed past its window. A
//! task it cannot do (unreadable envelope, a capability not offered, a
//! price not met, a failed run) is declined on chain with its reason
//! (`decline`): the funder is refunded at once.
//!
//! Tasks are found in the escrow's `TaskCreated`, `TaskReassigned` and
//! `TaskSettled` logs. With a websocket ([`Worker::run`]) the node pushes
//! them (a block with nothing for the escrow costs no request) and a pass
//! runs on each head and each pushed log; without one, or once the feed
//! ends, they are read block range by block range from a cursor, on each
//! head or on a timer. A task created in the newest block is exactly what
//! its creation event says; any other candidate is rebuilt from its own logs
//! and checked against the stored hash before anything is sent, so a
//! restarted worker simply resumes from the chain's truth.
//!
//! A card that delegates part of a capability has the worker fund a child
//! task for it from its own wallet ([`delegation`]'s rules: accept before
//! funding, pay only for a parent that stands and a result that is what was
//! bought, a cap on what is out, children followed from the chain's logs).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, U256},
    providers::{DynProvider, Provider},
    rpc::types::{Filter, Log},
    sol_types::SolEvent,
};
use tessera_bindings::{
    TaskEscrow,
    TaskEscrow::TaskEscrowEvents,
    capability,
    client::{ClientError, EscrowClient, map_call},
    deployment::Deployment,
    envelope::{
        BlobSources, BlobStore, BlobUrl, Envelope, EnvelopeCodec, EnvelopeError, FetchError,
    },
    feed::{FEED_CAPACITY, LogFeed},
    heads::Follow,
    task::{Status, TaskRecord, decode_log},
};

mod decline;
pub mod delegation;
mod fresh;
pub mod identity;
mod register;
mod upstream;

pub use decline::{MAX_REASON_CHARS, one_line};
use delegation::{ChildLog, Delegation};
pub use delegation::{DELEGATION_MARGIN_SECS, child_of};

/// A task looked at: left alone, to decline on chain, its result ready to
/// deliver, or a part of it to hand to another agent first.
enum Work {
    /// Left alone, off chain (see [`Handled::Declined`]).
    Leave(Handled),
    /// Cannot be done: declined on chain with the reason ([`Worker::decline`]).
    Decline {
        rec: Box<TaskRecord>,
        reason: String,
    },
    Deliver {
        rec: Box<TaskRecord>,
        result_uri: String,
    },
    Delegate {
        rec: Box<TaskRecord>,
        envelope: Box<Envelope>,
        part: Composite,
        limit: u128,
    },
    /// Its named inputs' upstream tasks have not delivered: kept, nothing
    /// sent (see [`upstream`]).
    Wait {
        rec: Box<TaskRecord>,
        upstream: Vec<U256>,
    },
}

/// A log subscription and the blocks it serves.
struct Feed {
    logs: LogFeed,
    /// The first block whose logs come from the feed (earlier ones were
    /// read in ranges).
    from: u64,
    /// Where to read ranges from if the feed ends: the block of the last
    /// log taken from it.
    floor: u64,
}

use crate::{
    AgentCard, TaskInput,
    offline::{Composite, composite},
    run,
};

/// Why the worker loop failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A contract call failed.
    #[error(transparent)]
    Client(#[from] Box<ClientError>),
    /// An RPC request failed.
    #[error("rpc: {0}")]
    Rpc(#[from] alloy::transports::TransportError),
    /// Storing a large result failed.
    #[error("storing a result: {0}")]
    Blob(String),
    /// The key given to prove the agent wallet is not the worker's.
    #[error("the wallet key is {key}'s, not the worker's ({worker})")]
    WalletKey {
        /// The key's address.
        key: Address,
        /// The worker's address.
        worker: Address,
    },
    /// Signing the agent wallet proof failed.
    #[error("signing the agent wallet proof: {0}")]
    WalletProof(#[source] alloy::signers::Error),
    /// An ERC-8004 agent id too large for a registration file.
    #[error("agent id {0} does not fit a registration file")]
    AgentIdRange(U256),
    /// A registration's receipt has no `Registered` event for the worker.
    #[error("transaction {0} registered no agent for this worker")]
    NoRegisteredEvent(alloy::primitives::B256),
    /// A blob (an envelope, a child's result) could not be fetched for now
    /// (a source failed transiently after retries): tried again next pass.
    #[error("blob unavailable for now, will retry: {0}")]
    BlobUnavailable(#[source] Box<FetchError>),
}

impl From<ClientError> for RuntimeError {
    fn from(e: ClientError) -> Self {
        Self::Client(Box::new(e))
    }
}

/// What the worker did with one task in a poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Accepted, ran and delivered; the result URI.
    Delivered {
        /// The task.
        task: U256,
        /// Where the result is.
        result_uri: String,
    },
    /// Left alone, off chain, with the reason: past its deadline (its
    /// funder takes the money back with `refundExpired`), deferred under
    /// the card's cap on delegated spend (looked at again once a child
    /// settles), or no longer this worker's to decline (moved meanwhile).
    Declined {
        /// The task.
        task: U256,
        /// Why.
        reason: String,
    },
    /// Declined on chain (`declineTask`): this worker cannot do it (an
    /// unreadable envelope, a capability it does not offer or the task was
    /// not funded for, a price not met, a failed run, or — for a task
    /// accepted to delegate part of it — that part failed). Its funder is
    /// refunded at once; the reason is published at `reason_uri`.
    DeclinedOnChain {
        /// The task.
        task: U256,
        /// Why, one line.
        reason: String,
        /// Where the reason is published (`{"reason": …}`).
        reason_uri: String,
    },
    /// Waiting, off chain, for the upstream tasks its envelope names to
    /// deliver (a pipeline funded up front): worked on once they have.
    Waiting {
        /// The task.
        task: U256,
        /// The upstream tasks not delivered yet.
        upstream: Vec<U256>,
    },
    /// Claimed payment after the review window.
    Released {
        /// The task.
        task: U256,
    },
    /// Part of the task handed to another agent: a child task created and
    /// paid for from this worker's wallet, waited for before delivering.
    Delegated {
        /// The task.
        task: U256,
        /// The child task.
        child: U256,
        /// Its executor.
        executor: Address,
        /// What the child task costs this worker, base units.
        price: u128,
    },
    /// A child task this worker funded, stopped without paying it:
    /// cancelled before anyone accepted it, or its delivery disputed (its
    /// own task withdrawn meanwhile, or a result that is not what was
    /// bought). A disputed child is followed until it settles.
    ChildStopped {
        /// The own task.
        task: U256,
        /// The child task.
        child: U256,
        /// The child's status now: `Cancelled` or `Disputed`.
        status: Status,
        /// Why it was not paid.
        reason: String,
    },
}

/// What registration did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    /// Registered anew.
    Registered,
    /// Already registered; this many changes (prices, capabilities, card) were sent.
    Updated(usize),
}

/// One worker: an agent account, its card and its view of the chain.
pub struct Worker {
    provider: DynProvider,
    me: Address,
    card: AgentCard,
    deployment: Deployment,
    escrow: EscrowClient,
    /// Where envelopes and children's results are read from (the local
    /// store, URI hints, gateways), and the hint results are published with.
    sources: BlobSources,
    next_block: u64,
    /// Blocks per `eth_getLogs`: shrinks when the provider refuses a range.
    range: tessera_bindings::logs::LogRange,
    /// The escrow's logs pushed over a websocket, while that lives.
    feed: Option<Feed>,
    delivered: BTreeMap<U256, TaskRecord>,
    /// Own tasks waiting on the child task created for part of them, and
    /// the children found in the escrow's logs (a restarted worker's).
    delegations: BTreeMap<U256, Delegation>,
    /// Child task creations read from the logs, not followed yet (reading
    /// them failed; tried again next pass).
    unadopted: Vec<ChildLog>,
    /// Own tasks declined because their child would have gone over the
    /// card's cap on delegated spend outstanding, or before the logs were
    /// read up to the head: looked at again once a child settles or the
    /// logs are read.
    deferred: BTreeSet<U256>,
    /// Whether the escrow's logs were read up to the head once: before
    /// that, children of an earlier life may still be unknown.
    caught_up: bool,
    /// Whether the escrow may take this worker's tokens for child tasks.
    allowance_set: bool,
    retry: BTreeSet<U256>,
    /// The newest block the subscription announced, while it is live: no
    /// need to ask the node for the head or its time.
    head: Option<tessera_bindings::heads::Head>,
    llm: Option<crate::llm::LlmRunner>,
    /// Own tasks waiting for the upstream deliveries their envelope names.
    awaiting: BTreeMap<U256, upstream::Awaiting>,
    /// Deliveries seen in the escrow's logs (task, result URI) of tasks
    /// not settled yet: what a waiting task's named inputs resolve to.
    deliveries: BTreeMap<U256, String>,
    /// Tasks whose creation this pass took from a fresh log batch: not
    /// delivered unless a delivery log says so.
    born: BTreeSet<U256>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("address", &self.me)
            .field("card", &self.card.id)
            .field("next_block", &self.next_block)
            .field("delivered", &self.delivered.len())
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker sending from `me` (the provider's wallet must sign for it),
    /// keeping blobs in `blobs` and reading others' through the hints of
    /// their URIs (see [`Worker::with_blob_sources`]).
    pub fn new(
        provider: DynProvider,
        me: Address,
        card: AgentCard,
        deployment: Deployment,
        blobs: Arc<dyn BlobStore + Send + Sync>,
    ) -> Self {
        Self {
            escrow: EscrowClient::new(provider.clone(), deployment.task_escrow),
            next_block: deployment.deploy_block,
            range: tessera_bindings::logs::LogRange::default(),
            feed: None,
            provider,
            me,
            card,
            deployment,
            sources: BlobSources::new(blobs),
            delivered: BTreeMap::new(),
            delegations: BTreeMap::new(),
            unadopted: Vec::new(),
            deferred: BTreeSet::new(),
            caught_up: false,
            allowance_set: false,
            retry: BTreeSet::new(),
            head: None,
            llm: None,
            awaiting: BTreeMap::new(),
            deliveries: BTreeMap::new(),
            born: BTreeSet::new(),
        }
    }

    /// Runs capabilities through the LLM at `config` (unless the card's model
    /// is `offline`, which always runs the built-in algorithms).
    pub fn with_llm(mut self, config: &crate::llm::LlmConfig) -> Self {
        self.llm = Some(crate::llm::LlmRunner::new(config));
        self
    }

    /// Reads and keeps blobs through `sources` (its local store replaces
    /// the one given to [`Worker::new`]): gateways, whether hints are
    /// followed, the public URL results are published with.
    pub fn with_blob_sources(mut self, sources: BlobSources) -> Self {
        self.sources = sources;
        self
    }

    /// Publishes content-addressed results (and child envelopes, dispute
    /// reasons) with the hint `?src=<url>`: where this worker serves its
    /// store (`GET <url>/<hex>`).
    pub fn with_public_blobs(mut self, url: BlobUrl) -> Self {
        self.sources = self.sources.with_public_url(Some(url));
        self
    }

    /// Where blobs are read from and published to.
    pub fn blob_sources(&self) -> &BlobSources {
        &self.sources
    }

    /// The worker's address.
    pub fn address(&self) -> Address {
        self.me
    }

    /// The escrow's logs a worker follows: creations, deliveries (for the
    /// inputs a dependent task names), reassignments and settlements.
    fn filter(&self) -> Filter {
        Filter::new().address(self.deployment.task_escrow).event_signature(vec![
            TaskEscrow::TaskCreated::SIGNATURE_HASH,
            TaskEscrow::TaskCompleted::SIGNATURE_HASH,
            TaskEscrow::TaskReassigned::SIGNATURE_HASH,
            TaskEscrow::TaskSettled::SIGNATURE_HASH,
        ])
    }

    /// Follows the escrow's logs pushed over the websocket at `ws_url`
    /// instead of asking for each block's: blocks up to the head at the
    /// moment of subscribing are still read in ranges, later ones come from
    /// the feed, which ends when more than `capacity` logs wait (then ranges
    /// are read again from the block of the last log taken). Without the
    /// subscription, ranges it is. [`Worker::run`] calls this with
    /// [`FEED_CAPACITY`].
    pub async fn subscribe_logs(&mut self, ws_url: &str, capacity: usize) {
        let filter = self.filter();
        let subscribed = async {
            let feed = LogFeed::subscribe(ws_url, &filter, capacity).await?;
            let at = self.provider.get_block_number().await?;
            Ok::<_, alloy::transports::TransportError>((feed, at))
        };
        match subscribed.await {
            Ok((logs, at)) => {
                tracing::info!(from = at + 1, "following the escrow's logs over websocket");
                self.feed = Some(Feed { logs, from: at + 1, floor: at + 1 });
            }
            Err(e) => tracing::warn!(error = %e, "no log subscription; reading log ranges"),
        }
    }

    /// Whether the escrow's logs come from a live subscription.
    pub fn following_logs(&self) -> bool {
        self.feed.is_some()
    }

    /// The logs to look at this pass, and whether they are fresh (the
    /// newest block alone, or pushed by the feed): a fresh creation is
    /// exactly what its event says; any other is read whole from the chain.
    async fn next_logs(&mut self) -> Result<(Vec<Log>, bool), RuntimeError> {
        if let Some(feed) = self.feed.as_mut()
            && self.next_block >= feed.from
        {
            match feed.logs.drain(FEED_CAPACITY) {
                Ok(logs) => {
                    let logs: Vec<Log> = logs
                        .into_iter()
                        .filter(|l| !l.removed && l.block_number.is_some_and(|b| b >= feed.from))
                        .collect();
                    if let Some(b) = logs.last().and_then(|l| l.block_number) {
                        feed.floor = feed.floor.max(b);
                    }
                    // Ranges were read up to where the feed starts.
                    self.caught_up = true;
                    return Ok((logs, true));
                }
                Err(ended) => {
                    // Read ranges again from the block of the last log taken.
                    tracing::warn!(error = %ended, from = feed.floor, "reading log ranges");
                    self.next_block = feed.floor;
                    self.feed = None;
                }
            }
        }
        let head = match self.head {
            Some(h) => h.number,
            None => self.provider.get_block_number().await?,
        };
        if head < self.next_block {
            return Ok((Vec::new(), false));
        }
        // A bounded range: a worker far behind (restarted on a long chain)
        // catches up a chunk per pass.
        let filter = self.filter();
        let (to, logs) = tessera_bindings::logs::read_chunk(
            &self.provider,
            &filter,
            self.next_block,
            head,
            &mut self.range,
        )
        .await?;
        let single_block = self.next_block == to;
        self.next_block = to + 1;
        if to == head {
            self.caught_up = true;
        }
        Ok((logs, single_block))
    }

    /// Looks at new logs once: delivers every task newly assigned to this
    /// worker, and claims payment of delivered tasks whose review window passed.
    pub async fn poll_once(&mut self) -> Result<Vec<Handled>, RuntimeError> {
        let mut handled = Vec::new();
        let was_caught_up = self.caught_up;
        let (logs, fresh) = self.next_logs().await?;
        if self.caught_up && !was_caught_up {
            // Every child of an earlier life is known from this pass on.
            self.retry.append(&mut self.deferred);
        }
        self.born.clear();
        {
            let mut created: Vec<TaskRecord> = Vec::new();
            let mut ids: Vec<U256> = std::mem::take(&mut self.retry).into_iter().collect();
            let mut children = std::mem::take(&mut self.unadopted);
            for log in logs {
                let event = decode_log(&log);
                // Where tasks live, so reading one starts there, not at the deployment.
                if let (Some(ev), Some(block)) = (&event, log.block_number) {
                    match ev {
                        TaskEscrowEvents::TaskCreated(c) => {
                            self.escrow.note_birth(c.taskId, block);
                            if fresh {
                                self.born.insert(c.taskId);
                            }
                        }
                        ev => {
                            if let Some(id) = TaskRecord::event_task_id(ev) {
                                self.escrow.note_seen(id, block);
                            }
                        }
                    }
                }
                match event {
                    Some(TaskEscrowEvents::TaskCreated(ev)) if ev.task.executor == self.me => {
                        if fresh {
                            created.push(TaskRecord::from_created(&ev));
                        } else if !ids.contains(&ev.taskId) {
                            ids.push(ev.taskId);
                        }
                    }
                    // A child task this worker funded for part of its task.
                    Some(TaskEscrowEvents::TaskCreated(ev))
                        if ev.task.client == self.me
                            && ev.task.funder == self.me
                            && !ev.parentId.is_zero() =>
                    {
                        children.push(ChildLog {
                            child: ev.taskId,
                            parent: ev.parentId,
                            capability: ev.capability,
                            block: log.block_number.unwrap_or(self.deployment.deploy_block),
                        });
                    }
                    Some(TaskEscrowEvents::TaskCompleted(ev)) => {
                        self.note_delivery(ev.taskId, ev.resultURI);
                    }
                    Some(TaskEscrowEvents::TaskReassigned(ev)) => {
                        self.note_settled(ev.taskId);
                        created.retain(|r| r.id != ev.taskId);
                        if ev.newExecutor == self.me && !ids.contains(&ev.taskId) {
                            ids.push(ev.taskId);
                        }
                    }
                    Some(TaskEscrowEvents::TaskSettled(ev)) => {
                        // Settled: nothing left to do or claim; stop watching it.
                        self.note_settled(ev.taskId);
                        self.delivered.remove(&ev.taskId);
                        created.retain(|r| r.id != ev.taskId);
                        ids.retain(|id| *id != ev.taskId);
                    }
                    _ => {}
                }
            }
            // Children first: their own tasks are followed through them.
            for c in children {
                match self.adopt(c).await {
                    Ok(followed) => handled.extend(followed),
                    Err(e) => {
                        tracing::warn!(task = %c.parent, child = %c.child, error = %e, "reading a child task failed; will retry");
                        self.unadopted.push(c);
                    }
                }
            }
            // Tasks whose upstream delivered (or settled) since they were
            // kept, as they were kept: nothing else moved them.
            let now = self.head.map(|h| h.timestamp);
            created.extend(self.due_awaiting(now));
            // Every delivery and decline of the block goes out before any is
            // waited for.
            handled.extend(self.work_fresh(created).await);
            for id in ids {
                if self.delegations.contains_key(&id) {
                    continue;
                }
                let rec = match self.escrow.fetch(id, self.deployment.deploy_block).await {
                    Ok(rec) => rec,
                    Err(e) => {
                        // One unreadable task must not hold up the others.
                        tracing::warn!(task = %id, error = %e, "reading task failed; will retry");
                        self.retry.insert(id);
                        continue;
                    }
                };
                // Accepted-by-me covers a worker restarted between accept and complete.
                let mine = rec.task.executor == self.me;
                if mine && matches!(rec.status(), Status::Created | Status::Accepted) {
                    // One failure (a decline or a delivery not sent) must
                    // not hold up the others: tried again next pass.
                    match self.work(rec).await {
                        Ok(done) => handled.push(done),
                        Err(e) => {
                            tracing::warn!(task = %id, error = %e, "working on the task failed; will retry");
                            self.retry.insert(id);
                        }
                    }
                }
            }
        }
        let (followed, settled) = self.advance_delegations().await?;
        handled.extend(followed);
        if settled {
            // Room under the cap: the tasks declined for it are looked at again.
            self.retry.append(&mut self.deferred);
        }
        handled.extend(self.release_due().await?);
        Ok(handled)
    }

    /// Works until `shutdown` resolves: scans once per new block announced
    /// over a websocket subscription at `ws_url` (so a task is picked up the
    /// moment it is mined), and at least every `poll`, which is also the
    /// whole cadence when no websocket answers (the head then polled). Failed scans are logged and
    /// retried; `on_handled` sees every delivery, decline and release.
    pub async fn run(
        &mut self,
        ws_url: Option<&str>,
        poll: std::time::Duration,
        mut on_handled: impl FnMut(&Handled),
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        // Without a websocket, heads polled every `poll` still pace the
        // receipts its transactions wait for (one look a head).
        let mut follow = Follow::connect_or_poll(ws_url, poll, "scan", self.provider.clone()).await;
        self.escrow.follow(follow.watch());
        if let Some(url) = ws_url
            && follow.subscribed()
        {
            self.subscribe_logs(url, FEED_CAPACITY).await;
        }
        loop {
            self.head = follow.head();
            let pass =
                self.poll_once().await.map(|handled| handled.iter().for_each(&mut on_handled));
            // A pass is due on each head and on each log pushed.
            let feed = self.feed.as_ref();
            let pushed = async {
                match feed {
                    Some(f) => f.logs.arrived().await,
                    None => std::future::pending().await,
                }
            };
            if !follow.next_or(pass, shutdown.as_mut(), pushed).await {
                return;
            }
        }
    }

    /// Run, then deliver (accept and complete in one call), or complete a
    /// task accepted before a restart — or decline it, on chain when it
    /// cannot be done.
    async fn work(&mut self, rec: TaskRecord) -> Result<Handled, RuntimeError> {
        match self.prepare(rec).await? {
            Work::Leave(done) => Ok(done),
            Work::Decline { rec, reason } => self.decline(*rec, reason).await,
            Work::Delegate { rec, envelope, part, limit } => {
                self.delegate(*rec, *envelope, part, limit).await
            }
            Work::Wait { rec, upstream } => Ok(self.wait_for(*rec, upstream)),
            Work::Deliver { rec, result_uri } => {
                let mut rec = *rec;
                let id = rec.id;
                if rec.status() == Status::Created {
                    // The work is done: accept and complete in one call.
                    self.escrow.deliver(self.me, &mut rec, &result_uri).await?;
                } else {
                    self.escrow.complete(self.me, &mut rec, &result_uri).await?;
                }
                tracing::info!(task = %id, "delivered");
                self.delivered.insert(id, rec);
                Ok(Handled::Delivered { task: id, result_uri })
            }
        }
    }

    /// Runs the task's capability; or says why it cannot be done (to
    /// decline on chain), or why it is left alone. An error is transient
    /// (the node, a store): the task is looked at again next pass.
    async fn prepare(&self, rec: TaskRecord) -> Result<Work, RuntimeError> {
        let id = rec.id;
        // Cannot be done: declined on chain (see [`Worker::decline`]).
        let decline = |rec: TaskRecord, reason: String| {
            tracing::warn!(task = %id, %reason, "cannot be done; declining");
            Ok(Work::Decline { rec: Box::new(rec), reason })
        };
        // Fetched from wherever it is (its hint, the gateways) first; a
        // source failing for now is no reason to decline: tried next pass.
        let envelope = match self.sources.decode(&rec.spec_uri).await {
            Ok(e) => e,
            Err(e) if e.is_transient() => return Err(RuntimeError::BlobUnavailable(Box::new(e))),
            // Not found, tampered with or malformed: never readable here.
            Err(e) => return decline(rec, format!("unreadable envelope: {e}")),
        };
        let offer = match &envelope.capability {
            Some(name) => self.card.capability(name),
            None if self.card.capabilities.len() == 1 => self.card.capabilities.first(),
            None => return decline(rec, "the envelope names no capability".into()),
        };
        let Some(offer) = offer.cloned() else {
            let asked = envelope.capability.as_deref().unwrap_or_default();
            return decline(rec, format!("capability {asked:?} is not offered"));
        };
        // The escrow checked this worker's offer of the capability the task
        // was funded for; work for another one would be paid at the wrong price.
        if let Some(funded) = capability::decode(rec.capability)
            && funded != offer.name
        {
            let reason = format!(
                "the envelope asks for {} but the task was funded for {funded}",
                offer.name
            );
            return decline(rec, reason);
        }
        if rec.task.amount < offer.price.base_units() {
            let reason = format!(
                "pays {} but {} costs {}",
                rec.task.amount,
                offer.name,
                offer.price.base_units()
            );
            return decline(rec, reason);
        }
        let now = self.chain_time().await?;
        if now >= rec.task.deadline.to::<u64>() {
            // Its funder takes it back with refundExpired.
            return Ok(Work::Leave(decline::leave(id, "deadline passed".into())));
        }
        // Inputs named rather than carried: read from the upstream
        // deliveries, or waited for.
        let envelope = match self.resolve_inputs(envelope).await? {
            upstream::Resolved::Ready(envelope) => *envelope,
            upstream::Resolved::Wait(upstream) => {
                return Ok(Work::Wait { rec: Box::new(rec), upstream });
            }
            upstream::Resolved::Gone(reason) => {
                return Ok(Work::Leave(decline::leave(id, reason)));
            }
            upstream::Resolved::Unreadable(reason) => return decline(rec, reason),
        };
        // Part of the work is another agent's when the card delegates it.
        if let Some(part) = composite(&offer.name)
            && let Some(delegate) = self.card.delegate(part.delegable)
        {
            let limit = delegate.max_price.base_units();
            return Ok(Work::Delegate {
                rec: Box::new(rec),
                envelope: Box::new(envelope),
                part,
                limit,
            });
        }
        let inputs: Vec<String> = envelope.inputs.iter().map(|i| i.output.clone()).collect();
        let input =
            TaskInput { spec: &envelope.spec, source: envelope.source.as_deref(), inputs: &inputs };
        // Run before accepting: material the capability cannot work on is
        // declined on chain, its funder refunded at once.
        let output = match &self.llm {
            Some(llm) if !self.card.is_offline() => {
                match llm.run(&self.card, &offer.name, &input).await {
                    Ok(json) => json,
                    Err(e) => return decline(rec, format!("LLM: {e}")),
                }
            }
            _ => match run(&offer.name, &input) {
                Ok(o) => o.to_json(),
                Err(e) => return decline(rec, e.to_string()),
            },
        };
        let result_uri = self.store_result(&output)?;
        tracing::info!(task = %id, capability = %offer.name, "work done");
        Ok(Work::Deliver { rec: Box::new(rec), result_uri })
    }

    /// Claims payment of delivered tasks whose review window has passed.
    async fn release_due(&mut self) -> Result<Vec<Handled>, RuntimeError> {
        if self.delivered.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.chain_time().await?;
        let mut released = Vec::new();
        let ids: Vec<U256> = self.delivered.keys().copied().collect();
        for id in ids {
            let rec = &self.delivered[&id];
            let due = rec.task.updatedAt.to::<u64>() + u64::from(rec.task.reviewWindow);
            if now <= due {
                continue;
            }
            // The client may have approved or disputed since: act on the chain's state.
            let mut fresh = self.escrow.fetch(id, self.deployment.deploy_block).await?;
            if fresh.status() == Status::Completed {
                self.escrow.release(self.me, &mut fresh).await?;
                released.push(Handled::Released { task: id });
            }
            self.delivered.remove(&id);
        }
        Ok(released)
    }

    /// Publishes a result, content-addressed ones with this worker's hint.
    fn store_result(&self, json: &serde_json::Value) -> Result<String, RuntimeError> {
        let bytes = serde_json::to_vec(json).expect("a JSON value serializes");
        self.sources.publish(&bytes).map_err(|e| RuntimeError::Blob(e.to_string()))
    }

    /// The JSON result behind `uri`, fetched from wherever it is: a source
    /// failing for now is [`RuntimeError::BlobUnavailable`], anything else
    /// (nowhere to be found, refused, not JSON) the inner error.
    async fn fetch_result(
        &self,
        uri: &str,
    ) -> Result<Result<serde_json::Value, FetchError>, RuntimeError> {
        let bytes = match self.sources.fetch(uri).await {
            Ok(bytes) => bytes,
            Err(e) if e.is_transient() => return Err(RuntimeError::BlobUnavailable(Box::new(e))),
            Err(e) => return Ok(Err(e)),
        };
        Ok(serde_json::from_slice(&bytes).map_err(|e| FetchError::Refused {
            at: "the result".into(),
            reason: EnvelopeError::Json(e),
        }))
    }

    async fn chain_time(&self) -> Result<u64, RuntimeError> {
        if let Some(h) = self.head {
            return Ok(h.timestamp);
        }
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Latest).await?;
        Ok(block.map(|b| b.header.timestamp).unwrap_or_default())
    }
}

/// The JSON result behind a result URI written by [`Worker`] (inline or
/// content-addressed, hash verified).
pub fn read_result(uri: &str, blobs: &dyn BlobStore) -> Result<serde_json::Value, EnvelopeError> {
    Ok(serde_json::from_slice(&EnvelopeCodec::default().fetch(uri, blobs)?)?)
}

async fn confirm(
    sent: Result<
        alloy::providers::PendingTransactionBuilder<alloy::network::Ethereum>,
        alloy::contract::Error,
    >,
) -> Result<(), RuntimeError> {
    let pending = sent.map_err(map_call)?;
    let receipt = pending
        .with_timeout(Some(tessera_bindings::client::RECEIPT_TIMEOUT))
        .get_receipt()
        .await
        .map_err(ClientError::from)?;
    if !receipt.status() {
        return Err(ClientError::Reverted(receipt.transaction_hash).into());
    }
    Ok(())
}
