//! The worker loop: an agent account that registers its card in the
//! AgentRegistry, finds tasks assigned to it, runs the asked
//! capability on the envelope and delivers the result (`deliver`: accept and
//! complete in one call), and later claims
//! payment of delivered work the client left unreviewed past its window. A
//! task it cannot do (an unreadable envelope, a capability not offered, a
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
//! Every task goes through the card's brain ([`crate::brain`]): the
//! built-in runners answer on the pass, a handler off it ([`calls`]), so a
//! slow one never holds up the other tasks. A brain that answers `hire`
//! has the worker fund child tasks from its own wallet ([`delegation`]'s
//! rules: accept before funding, pay only for a parent that stands and a
//! result that is what was bought, a cap on what is out, children followed
//! from the chain's logs), and is asked again with their results.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, U256},
    providers::{DynProvider, Provider},
};
use tessera_bindings::{
    client::{ClientError, EscrowClient, map_call},
    deployment::Deployment,
    envelope::{BlobSources, BlobStore, BlobUrl, EnvelopeCodec, EnvelopeError},
    feed::FEED_CAPACITY,
    heads::Follow,
    logs::LogScan,
    task::TaskRecord,
};

mod ask;
pub mod calls;
mod children;
mod decline;
pub mod delegation;
mod error;
pub mod fetching;
mod fresh;
mod handled;
pub mod identity;
mod inbox;
mod pass;
mod register;
mod upstream;
mod work;

pub use decline::{MAX_REASON_CHARS, one_line};
use delegation::{ChildLog, Delegation};
pub use delegation::{DELEGATION_MARGIN_SECS, child_of};
pub use error::RuntimeError;
pub use handled::{Handled, Registration};
use pass::Feed;
use work::Work;

use crate::{
    AgentCard,
    brain::{self, Brain, Hired},
};

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
    /// The escrow's logs read block range by block range, from the
    /// deployment on (while no feed serves them).
    scan: LogScan,
    /// The escrow's logs pushed over a websocket, while that lives.
    feed: Option<Feed>,
    delivered: BTreeMap<U256, TaskRecord>,
    /// Own tasks waiting on the child tasks created for parts of them, and
    /// the children found in the escrow's logs (a restarted worker's).
    delegations: BTreeMap<U256, Delegation>,
    /// Own tasks whose children are all paid, with their results: what
    /// their brain is asked again with, until delivered or declined.
    hired: BTreeMap<U256, Vec<Hired>>,
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
    /// What does the work: the card's handler, the LLM or the offline runner.
    brain: Arc<dyn Brain>,
    /// Own tasks waiting for the upstream deliveries their envelope names.
    awaiting: BTreeMap<U256, upstream::Awaiting>,
    /// Deliveries seen in the escrow's logs (task, result URI) of tasks
    /// not settled yet: what a waiting task's named inputs resolve to.
    deliveries: BTreeMap<U256, String>,
    /// Tasks whose creation this pass took from a fresh log batch: not
    /// delivered unless a delivery log says so.
    born: BTreeSet<U256>,
    /// Tasks waiting for a blob fetched off the pass.
    fetches: fetching::Fetches,
    /// Tasks waiting for their brain's answer, asked off the pass.
    calls: calls::Calls,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("address", &self.me)
            .field("card", &self.card.id)
            .field("brain", &self.brain.describe())
            .field("next_block", &self.scan.next_block())
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
        let chain_id = deployment.chain_id;
        let brain = brain::for_card(&card, None, None);
        Self {
            escrow: EscrowClient::new(provider.clone(), deployment.task_escrow),
            scan: LogScan::new(deployment.deploy_block),
            feed: None,
            provider,
            me,
            card,
            deployment,
            // On a local chain hints may name loopback and private
            // addresses; elsewhere they reach public ones only.
            sources: BlobSources::new(blobs).on_chain(chain_id),
            delivered: BTreeMap::new(),
            delegations: BTreeMap::new(),
            hired: BTreeMap::new(),
            unadopted: Vec::new(),
            deferred: BTreeSet::new(),
            caught_up: false,
            allowance_set: false,
            retry: BTreeSet::new(),
            head: None,
            brain,
            awaiting: BTreeMap::new(),
            deliveries: BTreeMap::new(),
            born: BTreeSet::new(),
            fetches: fetching::Fetches::default(),
            calls: calls::Calls::default(),
        }
    }

    /// Runs capabilities through the LLM at `config` (unless the card's
    /// model is `offline`, which always runs the built-in algorithms, or
    /// it names a handler, which does the work).
    pub fn with_llm(mut self, config: &crate::llm::LlmConfig) -> Self {
        self.brain = brain::for_card(&self.card, None, Some(config));
        self
    }

    /// Does the work with `brain` ([`brain::for_card`] builds the card's,
    /// a `command` resolved against the card file's directory).
    pub fn with_brain(mut self, brain: Arc<dyn Brain>) -> Self {
        self.brain = brain;
        self
    }

    /// What does the work.
    pub fn brain(&self) -> &dyn Brain {
        self.brain.as_ref()
    }

    /// Reads and keeps blobs through `sources` (its local store replaces
    /// the one given to [`Worker::new`]): gateways, whether hints are
    /// followed (and may reach private addresses: yes on a local chain
    /// unless `sources` said otherwise), the public URL results are
    /// published with.
    pub fn with_blob_sources(mut self, sources: BlobSources) -> Self {
        self.sources = sources.on_chain(self.deployment.chain_id);
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
        tracing::info!(card = %self.card.id, brain = %self.brain.describe(), "working with");
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
            // Boxed: a pass's future (tasks worked, children followed,
            // brains asked) is large; the loop's stays small.
            let pass = Box::pin(self.poll_once())
                .await
                .map(|handled| handled.iter().for_each(&mut on_handled));
            // A pass is due on each head, on each log pushed, when a blob
            // fetched off the pass arrives and when a handler answers.
            let feed = self.feed.as_ref();
            let fetched = self.fetches.done.waker();
            let answered = self.calls.done.waker();
            let pushed = async {
                let arrived = async {
                    match feed {
                        Some(f) => f.logs.arrived().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = arrived => {}
                    () = fetched.notified() => {}
                    () = answered.notified() => {}
                }
            };
            if !follow.next_or(pass, shutdown.as_mut(), pushed).await {
                return;
            }
        }
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
