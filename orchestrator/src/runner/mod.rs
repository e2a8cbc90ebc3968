//! The plan runner: turns an approved plan into escrowed sub-tasks, in
//! dependency order, and settles each through the review gate.
//!
//! Each live run is driven by its own supervised task that wakes on a new
//! block, on a user decision, or once a second. Every wake-up re-reads the
//! chain: a sub-task's on-chain id is `keccak(sponsor, ref)` with `ref =
//! keccak(plan, index, attempt)`, so the runner always knows where to look,
//! and a restarted runner finds the tasks it created before it died instead
//! of funding them twice (the escrow refuses a second task with the same
//! reference anyway). Events come from the escrow's own logs, stored once
//! per log.
//!
//! - [`config`]: how the runner behaves;
//! - [`error`]: why an operation failed;
//! - [`chain`]: the sponsor's account, reads and transactions;
//! - `book`: the escrow's logs of the sponsor's tasks, reorganisations
//!   dropped;
//! - [`commands`]: propose, edit, confirm, approve, cancel, decide;
//! - [`views`]: a run as the API shows it;
//! - [`driver`]: the supervised driver tasks, the head follower, shutdown;
//! - [`step`]: the pure transition from a run's state to its next actions;
//! - `resolve`: what a decision comes to (pure, re-exported by `step`);
//! - [`tick`]: one look at a run, carrying the step's actions out;
//! - `ctx`: the run and plan one look reads once and keeps current;
//! - `fund`: creations checked against the budget and sent with the
//!   approvals in the head's wave;
//! - [`sync`]: chain sync into progress rows and run events;
//! - `lane`: replica mode's side of the runner (the lease fence, taking
//!   and losing the lane; see [`crate::replica`]);
//! - `gates`: checkpoints reached, decided and timed out;
//! - `recover`: the plan's recovery policies applied without a person;
//! - [`money`]: what bounds a run's money (the spend cap, approved costs,
//!   a person's raise);
//! - `refused`: a sub-task's creation the escrow refused, answered for it
//!   alone;
//! - `wave`: every run's approvals and creations due at a head sent
//!   together;
//! - `granted`: runs funded by a sponsor's grant (operator mode): the
//!   grant loaded with the run, what the chain will check before its
//!   creations go out.

mod book;
pub mod chain;
pub mod commands;
pub mod config;
mod ctx;
pub mod driver;
pub mod error;
mod fund;
mod gates;
mod granted;
mod lane;
pub mod money;
pub mod reach;
mod recover;
pub mod refusal;
mod refused;
mod resolve;
pub mod step;
pub mod sync;
pub mod tick;
pub mod views;
mod wave;

use std::sync::Arc;

pub use chain::{Chain, Funding, GrantPermit, PermitShape};
pub use commands::{Decision, Edit};
#[cfg(feature = "test-utils")]
pub use config::FaultHook;
pub use config::{DEFAULT_MAX_PLAN_SPEND, RunnerConfig};
use ctx::RunCtx;
pub use error::RunError;
pub use refusal::Refusal;
pub use sync::readable;
use tessera_bindings::{
    catalogue::{Catalogue, CatalogueError, CatalogueSource},
    envelope::{BlobSources, BlobStore, FetchLimits},
};
use tokio::sync::{broadcast, watch};
pub use views::{ConfirmationTerms, NestedState, NestedView, RunView};

use crate::{
    choose::AgentRecords,
    plan::Plan,
    state::{CloseReason, Progress, Reason, Run, RunEvent, RunId, RunState},
    store::{EventRow, Store},
};

/// How far a look goes for a document an executor or the arbiter wrote
/// that it reads on its own path (a decline's reason, a ruling's
/// rationale): one request, a few seconds.
pub const QUICK: FetchLimits = FetchLimits {
    max_bytes: tessera_bindings::envelope::HARD_MAX_BYTES,
    timeout: std::time::Duration::from_secs(2),
    connect_timeout: std::time::Duration::from_secs(1),
    redirects: 3,
    attempts: 1,
    backoff: std::time::Duration::from_millis(100),
    max_retry_after: std::time::Duration::from_secs(1),
    source_budget: std::time::Duration::from_secs(2),
};

/// The orchestrator: the store, the chain, and one supervised driver task
/// per live run.
pub struct Orchestrator {
    store: Store,
    chain: Chain,
    /// Where envelopes and results are kept (the local store), read from
    /// (URI hints, gateways) and published with a hint.
    sources: BlobSources,
    /// The local store alone: what a look reads results from.
    local: BlobSources,
    /// The sources within [`QUICK`]: decline reasons and rationales, read
    /// once on a look's path.
    quick: BlobSources,
    /// Delivered results fetched off the looks' path.
    reach: reach::Reach,
    config: RunnerConfig,
    events: broadcast::Sender<EventRow>,
    head: watch::Sender<u64>,
    drivers: driver::Supervisor,
    /// Where agents' records come from when executors are chosen.
    records: std::sync::RwLock<Option<Arc<dyn AgentRecords>>>,
    /// Where the live capability catalogue comes from when briefs are
    /// planned.
    catalogue: std::sync::RwLock<Option<Arc<dyn CatalogueSource>>>,
    /// In replica mode, the sponsor lane and whether its lease is held.
    lane: std::sync::OnceLock<Arc<crate::replica::Lane>>,
    /// Bumped when live subscribers should read the store again.
    resync: watch::Sender<u64>,
    /// Event keys known to be stored (see [`Known`]).
    stored: Known,
}

/// The (run, dedup key) pairs this process stored, or found stored: a run
/// looks at itself on every head and emits what it finds again, and an
/// event stored once is stored for good, so one already known is not
/// asked of the database again (a numbering transaction of four round
/// trips each time). Forgotten whole past [`Known::MAX`] keys: the store
/// stays the truth, the set only saves asking it.
#[derive(Debug, Default)]
struct Known(std::sync::Mutex<std::collections::HashSet<(String, String)>>);

impl Known {
    /// Keys kept before the set starts over.
    const MAX: usize = 100_000;

    fn has(&self, run: &RunId, dedup: &str) -> bool {
        let set = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        set.contains(&(run.to_string(), dedup.to_owned()))
    }

    fn add(&self, run: &RunId, dedup: &str) {
        let mut set = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if set.len() >= Self::MAX {
            set.clear();
        }
        set.insert((run.to_string(), dedup.to_owned()));
    }
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator").field("chain", &self.chain).finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// An orchestrator over `store` and `chain`, storing envelopes in `blobs`
    /// (and reading results written elsewhere through their URI's hint).
    pub fn new(
        store: Store,
        chain: Chain,
        blobs: Arc<dyn BlobStore + Send + Sync>,
        config: RunnerConfig,
    ) -> Arc<Self> {
        Self::with_sources(store, chain, BlobSources::new(blobs), config)
    }

    /// An orchestrator keeping blobs in `sources`' local store, reading
    /// results through its hints and gateways, and publishing envelopes and
    /// reasons with its public URL as the hint.
    pub fn with_sources(
        store: Store,
        mut chain: Chain,
        sources: BlobSources,
        config: RunnerConfig,
    ) -> Arc<Self> {
        chain.set_confirmations(config.confirmations);
        let sources = sources.on_chain(chain.deployment().chain_id);
        let local = sources.clone().follow_hints(false).with_gateways(Vec::new());
        let quick = sources.clone().with_limits(QUICK);
        Arc::new(Self {
            store,
            chain,
            local,
            quick,
            reach: reach::Reach::default(),
            sources,
            config,
            events: broadcast::channel(1024).0,
            head: watch::channel(0).0,
            drivers: driver::Supervisor::default(),
            records: std::sync::RwLock::new(None),
            catalogue: std::sync::RwLock::new(None),
            lane: std::sync::OnceLock::new(),
            resync: watch::channel(0).0,
            stored: Known::default(),
        })
    }

    /// Reads agents' records from `records` when choosing executors (see
    /// [`crate::select`]); without a source every agent has the prior only,
    /// and every policy picks the cheapest.
    pub fn with_records(&self, records: Arc<dyn AgentRecords>) -> &Self {
        *self.records.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(records);
        self
    }

    /// Plans briefs from the capabilities `source` lists (an indexer's
    /// store): without one, only the built-in capabilities are known.
    pub fn with_catalogue(&self, source: Arc<dyn CatalogueSource>) -> &Self {
        *self.catalogue.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(source);
        self
    }

    /// The live capability catalogue: the source's, or the built-in
    /// capabilities alone when there is none. A source that cannot be read
    /// is an error (a plan made from a partial catalogue would silently
    /// leave capabilities out).
    pub async fn catalogue(&self) -> Result<Catalogue, CatalogueError> {
        let source =
            self.catalogue.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        match source {
            Some(s) => s.catalogue().await,
            None => Ok(Catalogue::builtins()),
        }
    }

    /// Whether a catalogue source was handed in
    /// ([`Orchestrator::with_catalogue`]); without one the catalogue is the
    /// built-in capabilities.
    pub fn reads_catalogue(&self) -> bool {
        self.catalogue.read().unwrap_or_else(std::sync::PoisonError::into_inner).is_some()
    }

    /// The source of agents' records, if any.
    pub fn records(&self) -> Option<Arc<dyn AgentRecords>> {
        self.records.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The configuration.
    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The chain handle.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The blob store behind content-addressed envelopes and results.
    pub fn blobs(&self) -> &(dyn BlobStore + Send + Sync) {
        self.sources.local().as_ref()
    }

    /// Where blobs are kept, read from and published with.
    pub fn blob_sources(&self) -> &BlobSources {
        &self.sources
    }

    /// Live events of every run, as they are stored (in replica mode,
    /// those other replicas store too). A subscriber that must miss none
    /// also watches [`Orchestrator::resyncs`] and reads the store again
    /// when it changes.
    pub fn subscribe(&self) -> broadcast::Receiver<EventRow> {
        self.events.subscribe()
    }

    /// The run `id` (typed) and its plan.
    async fn load(&self, id: &RunId) -> Result<(Run, Plan), RunError> {
        let row = self.store.run(id).await?.ok_or_else(|| RunError::NotFound(id.into()))?;
        let plan = Plan::from_json(&row.plan_json)?;
        Ok((Run::from_row(&row)?, plan))
    }

    /// The run's sub-task progress, typed, by index.
    async fn progress(
        &self,
        id: &RunId,
    ) -> Result<std::collections::BTreeMap<u32, Progress>, RunError> {
        let mut rows = std::collections::BTreeMap::new();
        for row in self.store.subtasks(id).await? {
            rows.insert(row.idx, Progress::from_row(&row)?);
        }
        Ok(rows)
    }

    /// Moves run `id` from one of `from` to `to`; false when it was in none.
    async fn transition(
        &self,
        id: &RunId,
        from: &[RunState],
        to: RunState,
        reason: Option<&Reason>,
    ) -> Result<bool, RunError> {
        Ok(self.store.transition(id, from, to, reason).await?)
    }

    /// Stores `event` for the run of root plan `plan` unless one with
    /// `dedup` exists, and sends it to live subscribers when new. An event
    /// about a sub-task of a nested plan gets its step path (`2.1.0`), so
    /// the root run's one stream tells the levels apart.
    async fn emit(&self, plan: &Plan, dedup: &str, event: &RunEvent) -> Result<(), RunError> {
        let mut body = event.to_body();
        if plan.is_nested()
            && body.get("path").is_none()
            && let Some(index) = body.get("index").and_then(serde_json::Value::as_u64)
            && let Ok(index) = u32::try_from(index)
            && let Some(obj) = body.as_object_mut()
        {
            obj.insert("path".into(), plan.path_of(index).to_string().into());
        }
        self.store_event(&RunId::from(plan.id), event.kind(), dedup, &body).await
    }

    /// Stores the run-level `event` (one about no sub-task) for run `id`
    /// unless one with `dedup` exists.
    async fn emit_run(&self, id: &RunId, dedup: &str, event: &RunEvent) -> Result<(), RunError> {
        self.store_event(id, event.kind(), dedup, &event.to_body()).await
    }

    /// Stores an event's `body` for run `id` unless one with `dedup`
    /// exists, and sends it to live subscribers when new.
    async fn store_event(
        &self,
        id: &RunId,
        kind: crate::state::EventKind,
        dedup: &str,
        body: &serde_json::Value,
    ) -> Result<(), RunError> {
        if self.stored.has(id, dedup) {
            return Ok(());
        }
        if let Some(ev) = self.store.append_event(id, kind, dedup, body).await? {
            tracing::info!(event = %kind, seq = ev.seq, "run event");
            let _ = self.events.send(ev);
        }
        self.stored.add(id, dedup);
        Ok(())
    }

    /// Stores `event`, of a kind a run has at most once (keyed by its kind).
    async fn emit_once(&self, plan: &Plan, event: &RunEvent) -> Result<(), RunError> {
        self.emit(plan, event.kind().as_str(), event).await
    }

    /// Starts closing a run: no new sub-tasks; what is not accepted yet is
    /// cancelled; what is in flight settles.
    async fn close(&self, ctx: &RunCtx, reason: &CloseReason) -> Result<(), RunError> {
        let live = [RunState::Running, RunState::Paused];
        let why = Reason::Close(reason.clone());
        if self.move_run(ctx, &live, RunState::Cancelling, Some(&why)).await? {
            let event = RunEvent::PlanCancelling { plan_id: ctx.plan().id, reason: reason.clone() };
            self.emit_once(&ctx.plan(), &event).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use alloy::primitives::B256;

    use super::*;
    use crate::plan::PlanId;

    #[test]
    fn references_differ_per_index_and_attempt() {
        let plan = PlanId::from(B256::repeat_byte(1));
        let r = Chain::reference(plan, 0, 0);
        assert_ne!(r, Chain::reference(plan, 1, 0));
        assert_ne!(r, Chain::reference(plan, 0, 1));
        assert_ne!(r, Chain::reference(B256::repeat_byte(2).into(), 0, 0));
        assert_eq!(r, Chain::reference(plan, 0, 0));
    }

    #[test]
    fn known_event_keys_are_kept_per_run_and_forgotten_whole_past_the_bound() {
        let known = Known::default();
        let (a, b) = (RunId::from("0xa"), RunId::from("0xb"));
        known.add(&a, "subtask_created:0:0");
        assert!(known.has(&a, "subtask_created:0:0"));
        assert!(!known.has(&b, "subtask_created:0:0"), "another run's key is not this one's");
        assert!(!known.has(&a, "subtask_paid:0:0"));
        for i in 1..Known::MAX {
            known.add(&b, &format!("k{i}"));
        }
        assert!(known.has(&a, "subtask_created:0:0"), "kept up to the bound");
        known.add(&b, "one more");
        assert!(!known.has(&a, "subtask_created:0:0"), "past the bound the set starts over");
        assert!(known.has(&b, "one more"));
    }
}
