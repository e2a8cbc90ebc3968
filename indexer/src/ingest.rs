//! Ingestion: backfill from the deploy block in ranges that shrink when the
//! node refuses them and grow when it answers, then follow the head (a
//! websocket subscription to new blocks, or polling). Before each pass the
//! newest remembered block hash is compared with the chain; on a mismatch
//! the fork point is found among the remembered hashes and everything from
//! it on is rolled back, journalled and ingested again.
//!
//! Ingest never waits on a blob. A task is folded from what the local store
//! has; a content-addressed spec it lacks is offered to the spec queue
//! ([`crate::fetch`]), which fetches it in the background (from its URI's
//! hint and the configured gateways, see [`BlobSources`]), keeps it only if
//! it is an envelope, and reports the task: the next pass folds it again,
//! so the spec shows then. Until then the task notes its spec as out of
//! reach.

use std::{sync::Arc, time::Duration};
use tessera_bindings::logs::{LogRange, is_range_error};

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{B256, BloomInput},
    providers::{DynProvider, Provider},
    rpc::types::Filter,
};
use serde::Serialize;
use tessera_bindings::{
    TaskEscrow::TaskEscrowEvents,
    deployment::Deployment,
    envelope::{BlobError, BlobRef, BlobSources, BlobStore},
    heads::Follow,
    task::decode_log,
};
use tokio::sync::{broadcast, watch};

use crate::{
    fetch::{SpecQueue, SpecQueueConfig},
    store::{Batch, IndexStore, Reorg},
};

/// Times a range is read again when its last block's bloom names one of
/// our contracts but the log query returned nothing from that block.
const MAX_BLOOM_REREADS: u32 = 5;

/// Blocks before a range's last whose blooms are checked against the logs
/// served for them (only those the logs left out: a header each).
const TAIL_BLOOM_BLOCKS: u64 = 7;

/// Log requests a backfill range is read in, one after the other, once
/// the range before it held [`READ_SPLIT_LOGS`] logs or more: a response is
/// held twice while it is read (the HTTP client's buffer and the body
/// collected from it), and a range of 5,000 logs made those copies a third
/// of the indexer's peak memory. Sparse ranges, and the head followed
/// live, take one request.
const READ_PARTS: u64 = 8;

/// Logs in a range past which the next one is read in [`READ_PARTS`].
const READ_SPLIT_LOGS: usize = 1_000;

/// How the indexer reads the chain.
#[derive(Debug, Clone)]
pub struct IndexerConfig {
    /// How many recent block hashes are kept to find a fork point.
    pub reorg_depth: u64,
    /// First backfill range, in blocks.
    pub initial_range: u64,
    /// Largest backfill range.
    pub max_range: u64,
    /// Logs a backfill range aims at: the range follows the density of
    /// the blocks read so far, so a batch (and the memory it takes) stays
    /// near this size however busy the chain is.
    pub target_logs: u64,
    /// Attempts per range before a pass gives up (shrinking each time).
    pub attempts: u32,
    /// Tasks folded per transaction when deriving.
    pub derive_chunk: usize,
    /// During a backfill, fold the touched tasks once this many events are
    /// stored unfolded (and always at the end of a pass): a task touched by
    /// several batches is then folded once.
    pub derive_every_events: usize,
}

impl Default for IndexerConfig {
    fn default() -> Self {
        Self {
            reorg_depth: 64,
            initial_range: 8,
            max_range: 50_000,
            target_logs: 5_000,
            attempts: 8,
            derive_chunk: 250,
            derive_every_events: 500_000,
        }
    }
}

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The node failed.
    #[error("rpc: {0}")]
    Rpc(#[from] alloy::transports::TransportError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] tessera_db::DbError),
}

/// What changed in one commit, for live subscribers.
#[derive(Debug, Clone, Serialize)]
pub struct Update {
    /// Highest block indexed after the commit.
    pub block: u64,
    /// Tasks rebuilt, with their plan id.
    pub tasks: Vec<(String, String)>,
    /// Set when the commit was a rollback.
    pub reorg: Option<Reorg>,
}

/// Where the index stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Chain head at the last pass.
    pub head: u64,
    /// Highest block indexed.
    pub indexed: u64,
}

/// The indexer.
pub struct Indexer {
    provider: DynProvider,
    deployment: Deployment,
    store: IndexStore,
    blobs: Option<Arc<dyn BlobStore + Send + Sync>>,
    /// Where specs not in `blobs` are fetched from, off the ingest path.
    specs: Option<SpecQueue>,
    cfg: IndexerConfig,
    range: u64,
    /// The most blocks the provider accepts in one read, as learnt from
    /// its refusals (the policy every log reader shares): the range above
    /// never grows past it.
    limit: LogRange,
    updates: broadcast::Sender<Update>,
    progress: watch::Sender<Progress>,
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("range", &self.range)
            .field("progress", &*self.progress.borrow())
            .finish_non_exhaustive()
    }
}

impl Indexer {
    /// An indexer of `deployment` into `store`; envelopes too large to
    /// inline are read from `blobs` when given (and fetched into it from
    /// their URI's hint when missing; see [`Indexer::with_blob_sources`]).
    pub fn new(
        provider: DynProvider,
        deployment: Deployment,
        store: IndexStore,
        blobs: Option<Arc<dyn BlobStore + Send + Sync>>,
        cfg: IndexerConfig,
    ) -> Self {
        let chain_id = deployment.chain_id;
        // Webhook deliveries' keys name the chain.
        store.set_chain_id(chain_id);
        Self {
            range: cfg.initial_range.max(1),
            limit: LogRange::new(cfg.max_range, 1, cfg.max_range),
            provider,
            deployment,
            store,
            specs: blobs.clone().map(|b| {
                SpecQueue::new(BlobSources::new(b).on_chain(chain_id), SpecQueueConfig::default())
            }),
            blobs,
            cfg,
            updates: broadcast::channel(1024).0,
            progress: watch::channel(Progress::default()).0,
        }
    }

    /// Reads envelopes through `sources`: its local store (replacing the
    /// one given to [`Indexer::new`]), then hints and gateways as it says.
    #[must_use]
    pub fn with_blob_sources(mut self, sources: BlobSources) -> Self {
        self.blobs = Some(Arc::clone(sources.local()));
        let sources = sources.on_chain(self.deployment.chain_id);
        self.specs = Some(SpecQueue::new(sources, SpecQueueConfig::default()));
        self
    }

    /// Other bounds for the spec queue than [`SpecQueueConfig::default`]
    /// (after [`Indexer::with_blob_sources`], which sets the sources).
    #[must_use]
    pub fn with_spec_queue(mut self, cfg: SpecQueueConfig) -> Self {
        if let Some(blobs) = &self.blobs {
            let sources = self.specs.take().map_or_else(
                || BlobSources::new(Arc::clone(blobs)).on_chain(self.deployment.chain_id),
                |q| q.sources().clone(),
            );
            self.specs = Some(SpecQueue::new(sources, cfg));
        }
        self
    }

    /// The spec queue, when envelopes are read at all.
    pub fn spec_queue(&self) -> Option<&SpecQueue> {
        self.specs.as_ref()
    }

    /// Waits until the spec queue has nothing waiting or running, then
    /// folds again the tasks whose spec arrived (a one-shot index, or a
    /// test, that wants every reachable spec in).
    pub async fn settle_specs(&mut self) -> Result<(), IngestError> {
        if let Some(q) = &self.specs {
            q.idle().await;
        }
        self.refold_arrived().await
    }

    /// Folds again the tasks whose spec arrived since the last pass, and
    /// tells subscribers.
    async fn refold_arrived(&mut self) -> Result<(), IngestError> {
        let Some(q) = &self.specs else { return Ok(()) };
        let arrived = q.take_arrived();
        if arrived.is_empty() {
            return Ok(());
        }
        let tasks = self.store.refold(&arrived, self.blobs.clone()).await?;
        tracing::debug!(tasks = tasks.len(), "tasks folded again with their arrived spec");
        if !tasks.is_empty() {
            let block = self.progress.borrow().indexed;
            let _ = self.updates.send(Update { block, tasks, reorg: None });
        }
        Ok(())
    }

    /// The local blob store, if envelopes are read at all.
    pub fn blobs(&self) -> Option<&Arc<dyn BlobStore + Send + Sync>> {
        self.blobs.as_ref()
    }

    /// The store.
    pub fn store(&self) -> &IndexStore {
        &self.store
    }

    /// Live updates.
    pub fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.updates.subscribe()
    }

    /// The sender of live updates, for an API that subscribes per request.
    pub fn updates(&self) -> broadcast::Sender<Update> {
        self.updates.clone()
    }

    /// Progress, as it changes.
    pub fn progress(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    /// The chain the indexer reads.
    pub fn provider(&self) -> &DynProvider {
        &self.provider
    }

    /// The reorg depth configured.
    pub fn reorg_depth(&self) -> u64 {
        self.cfg.reorg_depth
    }

    /// One pass: handle a reorganisation if there was one, then index every
    /// block up to the head. Returns the number of events stored.
    pub async fn sync_once(&mut self) -> Result<usize, IngestError> {
        let head = self.provider.get_block_number().await?;
        self.observe_head(head);
        self.roll_back_reorg(head).await?;
        self.refold_arrived().await?;
        let mut from = self.store.cursor().await?.unwrap_or(self.deployment.deploy_block);
        let mut stored = 0;
        let mut unfolded = 0usize;
        // The next range, read while the current one is written.
        let mut ahead: Option<(u64, u64, Result<Batch, IngestError>)> = None;
        while from <= head {
            let started = std::time::Instant::now();
            let (to, read) = match ahead.take() {
                Some((f, t, read)) if f == from => (t, read),
                _ => {
                    let to = from.saturating_add(self.range - 1).min(head);
                    (to, self.read(from, to, 1).await)
                }
            };
            let batch = match read {
                Ok(b) => b,
                Err(e) if self.range > 1 => {
                    if let IngestError::Rpc(rpc) = &e
                        && is_range_error(rpc)
                    {
                        self.limit.shrink(to - from + 1);
                    }
                    self.range = (self.range / 2).min(self.limit.size()).max(1);
                    tracing::info!(from, to, range = self.range, error = %e, "range refused; shrinking");
                    continue;
                }
                Err(e) => return Err(e),
            };
            // The batch must continue the chain already indexed: its first
            // block's parent is the block before it, as remembered.
            if from > 0
                && let (Some(parent), Some(known)) =
                    (batch.parent, self.store.block_hash(from - 1).await?)
                && parent.to_string() != known
            {
                self.roll_back_reorg(head).await?;
                from = self.store.cursor().await?.unwrap_or(self.deployment.deploy_block);
                continue;
            }
            self.offer_specs(&batch.logs);
            let read_ms = started.elapsed().as_millis();
            self.limit.succeeded();
            self.range =
                self.next_range(to - from + 1, batch.logs.len() as u64).min(self.limit.size());
            let next = to + 1;
            let next_to = next.saturating_add(self.range - 1).min(head);
            let applied = if next <= head {
                let parts = if batch.logs.len() >= READ_SPLIT_LOGS { READ_PARTS } else { 1 };
                let (applied, read) =
                    tokio::join!(self.store.apply(&batch), self.read(next, next_to, parts));
                ahead = Some((next, next_to, read));
                applied?
            } else {
                self.store.apply(&batch).await?
            };
            tracing::debug!(
                from,
                to,
                logs = batch.logs.len(),
                read_ms,
                apply_ms = started.elapsed().as_millis() - read_ms,
                "batch indexed"
            );
            stored += applied.events;
            crate::metrics::events_indexed(applied.events as u64);
            unfolded += applied.events;
            // A long backfill folds its tasks now and then, so the API
            // does not wait for the whole range.
            if unfolded >= self.cfg.derive_every_events.max(1) {
                self.derive(head).await?;
                unfolded = 0;
            }
            from = next;
        }
        self.derive(head).await?;
        self.store.prune_blocks(head.saturating_sub(self.cfg.reorg_depth)).await?;
        Ok(stored)
    }

    /// Offers the content-addressed specs the batch's creations name, and
    /// the local store lacks, to the spec queue: nothing here waits on a
    /// blob.
    fn offer_specs(&self, logs: &[alloy::rpc::types::Log]) {
        let (Some(queue), Some(local)) = (&self.specs, &self.blobs) else { return };
        for log in logs {
            let Some(TaskEscrowEvents::TaskCreated(c)) = decode_log(log) else { continue };
            let Ok(Some(blob)) = BlobRef::of_uri(&c.specURI) else { continue };
            // A header's worth of I/O at most: the store is asked whether
            // it has the blob, and the blob is not read past one byte.
            if matches!(local.get(&blob.hash, 0), Ok(Some(_)) | Err(BlobError::TooLarge { .. })) {
                continue;
            }
            queue.offer(c.taskId, &c.specURI, c.task.funder);
        }
    }

    /// Folds the tasks the stored events touched, then reports the block
    /// the index now reflects and the tasks that changed.
    async fn derive(&mut self, head: u64) -> Result<(), IngestError> {
        let derived = self.store.derive(self.blobs.clone(), self.cfg.derive_chunk).await?;
        let indexed = derived.through.saturating_sub(1);
        self.progress.send_replace(Progress { head, indexed });
        crate::metrics::indexer_progress(head, indexed);
        if !derived.tasks.is_empty() {
            let _ = self.updates.send(Update { block: indexed, tasks: derived.tasks, reorg: None });
        }
        Ok(())
    }

    /// Sets the head (and the lag, once a pass told the indexed block) for
    /// `/metrics` at the start of a pass, so a pass that then fails still
    /// shows how far behind the index is.
    fn observe_head(&self, head: u64) {
        let known = *self.progress.borrow();
        if known == Progress::default() {
            crate::metrics::indexer_head(head);
        } else {
            crate::metrics::indexer_progress(head, known.indexed);
        }
    }

    /// The range after one of `blocks` blocks that held `logs` logs: twice
    /// as long while the logs stay under the target, else as long as the
    /// target at that density.
    fn next_range(&self, blocks: u64, logs: u64) -> u64 {
        let grown = blocks.max(self.range).saturating_mul(2);
        let fit = match logs {
            0 => grown,
            n => blocks.saturating_mul(self.cfg.target_logs.max(1)) / n,
        };
        fit.min(grown).clamp(1, self.cfg.max_range.max(1))
    }

    /// Rolls back a reorganisation if there was one, and tells subscribers.
    async fn roll_back_reorg(&mut self, head: u64) -> Result<(), IngestError> {
        if let Some((reorg, rebuilt)) = self.check_reorg(head).await? {
            tracing::warn!(
                fork = reorg.fork_block,
                depth = reorg.depth,
                orphaned = reorg.orphaned_events,
                "reorganisation rolled back"
            );
            let _ = self.updates.send(Update {
                block: reorg.fork_block.saturating_sub(1),
                tasks: rebuilt,
                reorg: Some(reorg),
            });
        }
        Ok(())
    }

    /// Reads one range, retrying with backoff.
    /// The contracts whose logs are indexed: the escrow, the registry and,
    /// when deployed, the ERC-8004 reputation registry.
    fn contracts(&self) -> Vec<alloy::primitives::Address> {
        let mut out = vec![self.deployment.task_escrow, self.deployment.agent_registry];
        out.extend(self.deployment.reputation_registry);
        out
    }

    async fn read(&self, from: u64, to: u64, parts: u64) -> Result<Batch, IngestError> {
        let filter = Filter::new().address(self.contracts()).from_block(from).to_block(to);
        let mut attempt = 0;
        // Times the newest block's bloom promised logs of ours that the log
        // query did not return (a node whose log index lags its blocks, or
        // a load balancer answering from two nodes); bounded, because a
        // bloom can also match by chance.
        let mut rereads = 0;
        loop {
            // The range's last block is read before and after its logs: a
            // reorganisation during the read changes its hash (hashes chain),
            // and the read is done again rather than mixing two chains.
            let result = async {
                let before =
                    self.provider.get_block_by_number(BlockNumberOrTag::Number(to)).await?;
                let first =
                    self.provider.get_block_by_number(BlockNumberOrTag::Number(from)).await?;
                let mut logs = Vec::new();
                for (a, b) in split(from, to, parts) {
                    let part = filter.clone().from_block(a).to_block(b);
                    logs.extend(self.provider.get_logs(&part).await?);
                }
                let end = self.provider.get_block_by_number(BlockNumberOrTag::Number(to)).await?;
                let stable = before.as_ref().map(|b| b.header.hash)
                    == end.as_ref().map(|b| b.header.hash)
                    && logs.iter().all(|l| {
                        l.block_number != Some(to)
                            || l.block_hash == end.as_ref().map(|b| b.header.hash)
                    });
                let parent = first.map(|b| b.header.parent_hash);
                let ours = |bloom: &alloy::primitives::Bloom| {
                    self.contracts()
                        .iter()
                        .any(|a| bloom.contains_input(BloomInput::Raw(a.as_slice())))
                };
                let served = |n: u64| logs.iter().any(|l| l.block_number == Some(n));
                let mut promised =
                    end.as_ref().is_some_and(|b| ours(&b.header.logs_bloom)) && !served(to);
                // The blocks just before the last may lag too (a node mining
                // back to back stores receipts behind its blocks): their
                // blooms are read as well, a few headers per range.
                if !promised && rereads < MAX_BLOOM_REREADS {
                    for n in to.saturating_sub(TAIL_BLOOM_BLOCKS).max(from)..to {
                        if served(n) {
                            continue;
                        }
                        let b =
                            self.provider.get_block_by_number(BlockNumberOrTag::Number(n)).await?;
                        if b.is_some_and(|b| ours(&b.header.logs_bloom)) {
                            promised = true;
                            break;
                        }
                    }
                }
                let stable = stable && !(promised && rereads < MAX_BLOOM_REREADS);
                Ok::<_, IngestError>((logs, end, stable, parent))
            }
            .await;
            match result {
                Ok((_, _, false, _)) => {
                    tracing::info!(
                        from,
                        to,
                        "the chain changed during the read, or the last block's logs were not served yet; reading again"
                    );
                    rereads += 1;
                    tokio::time::sleep(Duration::from_millis(20 * rereads as u64)).await;
                    continue;
                }
                Ok((logs, end, true, parent)) => {
                    let mut hashes: Vec<(u64, B256)> = Vec::new();
                    for l in &logs {
                        if let (Some(n), Some(h)) = (l.block_number, l.block_hash)
                            && hashes.last().is_none_or(|(last, _)| *last != n)
                        {
                            hashes.push((n, h));
                        }
                    }
                    if let Some(b) = end {
                        // The last block may already be there, from its logs.
                        hashes.retain(|(n, _)| *n != to);
                        hashes.push((to, b.header.hash));
                    }
                    return Ok(Batch { from, to, parent, logs, hashes });
                }
                Err(e) if attempt + 1 < self.cfg.attempts && to == from => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(50 << attempt.min(6))).await;
                    tracing::debug!(error = %e, attempt, "retrying");
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Compares remembered hashes with the chain, newest first; rolls back to
    /// the fork point when they differ.
    async fn check_reorg(
        &mut self,
        head: u64,
    ) -> Result<Option<(Reorg, Vec<(String, String)>)>, IngestError> {
        let remembered = self.store.recent_blocks(self.cfg.reorg_depth as i64).await?;
        let Some((newest, _)) = remembered.first() else { return Ok(None) };
        let mut fork = None;
        for (i, (number, hash)) in remembered.iter().enumerate() {
            let on_chain =
                self.provider.get_block_by_number(BlockNumberOrTag::Number(*number)).await?;
            let same = on_chain.is_some_and(|b| b.header.hash.to_string() == *hash);
            if same {
                if i > 0 {
                    fork = Some(number + 1);
                }
                break;
            }
            // Nothing remembered matches: roll back to the oldest remembered block.
            fork = Some(*number);
        }
        match fork {
            None => Ok(None),
            Some(fork) => {
                let rolled = self
                    .store
                    .rollback_rebuilding(fork, (*newest).max(head), self.blobs.as_deref())
                    .await?;
                Ok(Some(rolled))
            }
        }
    }

    /// Works until `shutdown`: a pass per new block (websocket at `ws_url`)
    /// and at least every `poll`.
    pub async fn run(
        &mut self,
        ws_url: Option<&str>,
        poll: Duration,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let mut follow = Follow::connect(ws_url, poll, "indexing pass").await;
        // A spec that arrives makes a pass due, so its task shows it soon.
        let specs = self.specs.clone();
        let arrival = || {
            let specs = specs.clone();
            async move {
                match specs {
                    Some(q) => q.arrival().await,
                    None => std::future::pending().await,
                }
            }
        };
        while follow.next_or(self.sync_once().await, shutdown.as_mut(), arrival()).await {}
    }
}

/// `from..=to` cut into `n` consecutive ranges as even as the blocks allow
/// (fewer when there are fewer blocks), in order.
fn split(from: u64, to: u64, n: u64) -> impl Iterator<Item = (u64, u64)> {
    let blocks = to.saturating_sub(from) + 1;
    let n = n.clamp(1, blocks);
    (0..n).map(move |i| (from + blocks * i / n, from + blocks * (i + 1) / n - 1))
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_range_is_read_in_even_consecutive_parts() {
        let all = |from, to, n| split(from, to, n).collect::<Vec<_>>();
        assert_eq!(all(10, 10, 4), [(10, 10)]);
        assert_eq!(all(10, 12, 4), [(10, 10), (11, 11), (12, 12)]);
        assert_eq!(all(0, 9, 4), [(0, 1), (2, 4), (5, 6), (7, 9)]);
        assert_eq!(all(5, 104, 1), [(5, 104)]);
        for (from, to, n) in [(0, 0, 4), (3, 1_000, 4), (7, 8, 4), (1, 99, 3)] {
            let got = all(from, to, n);
            assert_eq!(got.first().unwrap().0, from);
            assert_eq!(got.last().unwrap().1, to);
            assert!(got.windows(2).all(|w| w[0].1 + 1 == w[1].0), "{got:?}");
        }
    }
}
