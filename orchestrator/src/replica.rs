//! Replicas: several `tessera serve --replica` processes on one PostgreSQL
//! database, any of which answers the API.
//!
//! # One lease per sponsor lane
//!
//! A replica holds one sponsor key, as a single process does. The unit of
//! ownership is the sponsor's **lane** — its address — not a run: the
//! sponsor's nonces are counted by the one process that sends for it, and
//! every run's creations and approvals due at a head go out together in one
//! `createTasks` / `approvePayments` call (see [`crate::runner::chain`]). A
//! lease per run would need a nonce allocator shared across processes and
//! would split those batches into one call per run and process. So:
//!
//! - replicas configured with the **same key** are hot standbys for one
//!   lane: exactly one holds the lane's lease and drives every live run of
//!   that sponsor; the others serve the API (reads come from the shared
//!   database; decisions and approvals are rows, announced to the holder)
//!   and take the lane over when the holder stops renewing;
//! - replicas with **different keys** scale out: each lane its own runs
//!   (a run belongs to the sponsor of the replica that proposed it).
//!
//! # The lease
//!
//! A row of `leases` (lane, owner, expires_at, heartbeat_at, epoch), on the
//! database's clock. Every heartbeat (`--lease-heartbeat-ms`, 1 s by
//! default) a standby tries to claim it — `SELECT … FOR UPDATE SKIP LOCKED`,
//! taken when free, released or lapsed, `epoch + 1` — and the holder renews
//! it for another TTL (`--lease-ttl-ms`, 5 s), only while it is still the
//! owner and the lease has not lapsed. A renewal that finds another owner
//! means the lane is lost: the fence closes and every driver is dropped at
//! once, before any further send. On SIGTERM the holder drains its drivers
//! (each finishes its current step) and releases the lease, so a standby
//! takes over at its next heartbeat; after a `kill -9` the lease lapses and
//! a standby takes over within the TTL (plus at most one heartbeat).
//!
//! # The fence, and the window it leaves
//!
//! Each tick, and each send within it, first checks the lease in memory:
//! held, and the deadline of its last renewal (the renewal's start plus the
//! TTL, on this process's clock) not passed. A holder that cannot renew —
//! paused, partitioned from the database — stops sending when its
//! deadline passes, before any other replica can claim the lapsed lease.
//! What remains is a send that passed the fence just before the deadline
//! and reaches the node after another replica took over: at most the TTL
//! minus the heartbeat after the last renewal. In that window the escrow
//! itself prevents double funding: a sub-task's task id is
//! `keccak(sponsor, keccak(plan, index, attempt))`, and the escrow refuses
//! a second creation with the same reference; a second approval of a
//! settled task reverts. The new holder reads the chain before it acts.
//!
//! # Any replica answers
//!
//! - a queued decision or an approval is followed by `NOTIFY tessera_wake,
//!   '<run id>'`; the lane holder `LISTEN`s and wakes that run's driver, or
//!   starts it (a run approved on a standby);
//! - a stored event is announced in its own transaction with `NOTIFY
//!   tessera_events, '<run id>:<seq>:<replica>'`; every replica `LISTEN`s
//!   and passes the events other replicas stored to its local subscribers,
//!   so an SSE stream opened on a standby sees every event live;
//! - the listener reconnects by itself; after a reconnection live
//!   subscribers read the store again from their last event (nothing is
//!   lost: the table is the truth), and the holder looks for live runs of
//!   its lane without a driver (so it does every few seconds anyway).
//!
//! SQLite keeps the single-process mode (no leases, no notifications):
//! `tessera serve` holds an exclusive lock on `<db file>.lock` for its
//! lifetime and a second one on the same file is refused.

use std::{sync::Arc, time::Duration};

use alloy::primitives::Address;
use sqlx::postgres::PgListener;
use tessera_http::tasks::Tasks;
use tokio::{
    sync::{oneshot, watch},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use crate::{
    runner::Orchestrator,
    state::RunId,
    store::{Claim, EVENTS_CHANNEL, Store, StoreError, WAKE_CHANNEL, parse_event_payload},
};

/// How long a lease lasts without a renewal, by default.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_millis(5_000);

/// How often the holder renews (and a standby tries to claim), by default.
pub const DEFAULT_LEASE_HEARTBEAT: Duration = Duration::from_millis(1_000);

/// How often the holder looks for live runs of its lane without a driver.
const RESCAN_EVERY: Duration = Duration::from_secs(5);

/// How a replica takes part.
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// The PostgreSQL database the replicas share (the run store's), for
    /// the listener's own connection.
    pub database_url: String,
    /// How long a lease lasts without a renewal.
    pub ttl: Duration,
    /// How often the holder renews and a standby tries to claim.
    pub heartbeat: Duration,
}

impl ReplicaConfig {
    /// Replica mode on `database_url`, with the default TTL and heartbeat.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self {
            database_url: database_url.into(),
            ttl: DEFAULT_LEASE_TTL,
            heartbeat: DEFAULT_LEASE_HEARTBEAT,
        }
    }

    /// Why this configuration cannot work, if it cannot: replicas need
    /// PostgreSQL, and a heartbeat well inside the TTL.
    pub fn check(&self) -> Result<(), String> {
        let url = &self.database_url;
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err("replicas coordinate through PostgreSQL: --replica needs a \
                 postgres:// database URL (SQLite runs one process, without --replica)"
                .into());
        }
        if self.heartbeat.is_zero() || self.heartbeat >= self.ttl {
            return Err(format!(
                "the lease heartbeat ({} ms) must be above 0 and below the lease TTL ({} ms)",
                self.heartbeat.as_millis(),
                self.ttl.as_millis()
            ));
        }
        Ok(())
    }
}

/// A sponsor's lane as stored: its address in lower-case hex.
pub fn lane_of(sponsor: Address) -> String {
    sponsor.to_string().to_lowercase()
}

/// A fresh replica id: 16 hex digits, different for every process start.
pub fn replica_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker = 0u8;
    let seed = format!("{}:{nanos}:{:p}", std::process::id(), &marker);
    alloy::hex::encode(&alloy::primitives::keccak256(seed.as_bytes())[..8])
}

/// The lease, held: its epoch and until when this process may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holding {
    /// The lease's epoch.
    pub epoch: i64,
    /// The last renewal's start plus the TTL, on this process's clock.
    pub until: Instant,
}

/// This replica's lane and whether it holds the lease (see the module docs).
#[derive(Debug)]
pub struct Lane {
    id: String,
    sponsor: Address,
    name: String,
    config: ReplicaConfig,
    holding: watch::Sender<Option<Holding>>,
}

impl Lane {
    /// Replica mode for `sponsor`'s lane, under a fresh replica id.
    pub fn new(config: ReplicaConfig, sponsor: Address) -> Self {
        let (id, name, holding) = (replica_id(), lane_of(sponsor), watch::channel(None).0);
        Self { id, sponsor, name, config, holding }
    }

    /// The sponsor whose lane it is.
    pub fn sponsor(&self) -> Address {
        self.sponsor
    }

    /// This replica's id (the lease's owner when it holds it).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The lane: the sponsor's address, lower-case.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How this replica takes part.
    pub fn config(&self) -> &ReplicaConfig {
        &self.config
    }

    /// Whether this replica holds the lease and may send: held, and the
    /// last renewal's deadline not passed.
    pub fn holds(&self) -> bool {
        matches!(*self.holding.borrow(), Some(h) if Instant::now() < h.until)
    }

    /// The epoch of the lease while held.
    pub fn epoch(&self) -> Option<i64> {
        self.holding.borrow().map(|h| h.epoch)
    }

    /// Follows the lease as the heartbeat loop sees it.
    pub fn watch(&self) -> watch::Receiver<Option<Holding>> {
        self.holding.subscribe()
    }

    fn set(&self, holding: Option<Holding>) {
        self.holding.send_replace(holding);
    }
}

/// Why replica mode could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// The configuration cannot work.
    #[error("{0}")]
    Config(String),
    /// The store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The listener could not connect or listen.
    #[error("listening on the database: {0}")]
    Listen(#[source] sqlx::Error),
}

/// The lease's metrics ([`crate::ops`]): whether this replica owns
/// `lane` now.
fn report_owned(lane: &str, owned: bool) {
    crate::ops::lease_owned(lane, owned);
}

/// The lease's metrics: this replica took `lane` over from another that
/// stopped renewing.
fn report_takeover(lane: &str) {
    crate::ops::lease_takeover(lane);
}

/// Replica mode running: the heartbeat loop keeping (or claiming) the
/// lease, and the listener.
#[derive(Debug)]
pub struct Replica {
    lane: Arc<Lane>,
    store: Store,
    resumed: usize,
    stop: CancellationToken,
    /// Each resolves once its task (the heartbeat loop, the listener) is over.
    ended: Vec<oneshot::Receiver<()>>,
}

impl Replica {
    /// Starts replica mode for `orch` (whose store publishes as
    /// `lane.id()`): runs stored without a sponsor are given to this lane,
    /// the listener listens, the first claim is made (the lane's live runs
    /// resumed when it wins), then the heartbeat loop and the listener run
    /// until [`Replica::shutdown`], as the critical tasks `lease` and
    /// `notifications` of `tasks`.
    pub async fn start(
        orch: &Arc<Orchestrator>,
        lane: Arc<Lane>,
        tasks: &mut Tasks,
    ) -> Result<Self, ReplicaError> {
        lane.config.check().map_err(ReplicaError::Config)?;
        let store = orch.store().clone();
        let adopted = store.adopt_runs(lane.name()).await?;
        if adopted > 0 {
            tracing::info!(
                lane = lane.name(),
                adopted,
                "runs without a sponsor given to this lane"
            );
        }
        orch.join_lane(Arc::clone(&lane));
        // Listening before the first claim: an approval after it is heard,
        // one before it is found by the claim's resume.
        let listener = listen_on(&lane.config.database_url).await.map_err(ReplicaError::Listen)?;
        let mut keeper = Keeper { orch: Arc::clone(orch), lane: Arc::clone(&lane), held: None };
        let resumed = keeper.beat().await;
        tracing::info!(
            lane = lane.name(),
            replica = lane.id(),
            holds = lane.holds(),
            "replica mode: {}",
            if lane.holds() { "holding the lane" } else { "standing by" }
        );
        // Stopped by `shutdown` once the drivers are drained, not by the
        // root: the lease is held while they finish.
        let stop = CancellationToken::new();
        let (kept, keeper_ended) = oneshot::channel::<()>();
        let (heard, listener_ended) = oneshot::channel::<()>();
        tasks.spawn_critical("lease", {
            let stop = stop.clone();
            async move {
                keeper.run(stop).await;
                drop(kept);
            }
        });
        tasks.spawn_critical("notifications", {
            let (orch, lane, stop) = (Arc::clone(orch), Arc::clone(&lane), stop.clone());
            async move {
                listen(orch, lane, listener, stop).await;
                drop(heard);
            }
        });
        let ended = vec![keeper_ended, listener_ended];
        Ok(Self { lane, store, resumed, stop, ended })
    }

    /// The lane.
    pub fn lane(&self) -> &Arc<Lane> {
        &self.lane
    }

    /// How many runs the first claim resumed (none on a standby).
    pub fn resumed(&self) -> usize {
        self.resumed
    }

    /// Stops the heartbeat loop and the listener and releases the lease
    /// when held (call once the drivers are drained): a standby takes the
    /// lane at its next heartbeat.
    pub async fn shutdown(&mut self) {
        self.stop.cancel();
        // Over when the task returned, panicked or was aborted alike.
        for ended in self.ended.drain(..) {
            let _ = ended.await;
        }
        let held = self.lane.epoch().is_some();
        self.lane.set(None);
        if held {
            match self.store.release_lease(self.lane.name(), self.lane.id()).await {
                Ok(true) => tracing::info!(lane = self.lane.name(), "lane lease released"),
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "releasing the lane lease (it lapses)"),
            }
            report_owned(self.lane.name(), false);
        }
    }
}

impl Drop for Replica {
    /// Dropped without [`Replica::shutdown`]: the loops stop and the lease
    /// lapses by itself.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The heartbeat loop's state.
struct Keeper {
    orch: Arc<Orchestrator>,
    lane: Arc<Lane>,
    /// The epoch of the lease while this replica holds it.
    held: Option<i64>,
}

impl Keeper {
    /// Claims or renews every heartbeat until `stop`; looks for runs
    /// without a driver every few seconds while holding.
    async fn run(mut self, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(self.lane.config.heartbeat);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        let mut scanned = Instant::now();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            self.beat().await;
            if self.held.is_some() && scanned.elapsed() >= RESCAN_EVERY {
                scanned = Instant::now();
                if let Err(e) = self.orch.rescan().await {
                    tracing::warn!(error = %e, "looking for runs without a driver");
                }
            }
        }
    }

    /// One heartbeat: renews the lease when held, else tries to claim it.
    /// Returns how many runs a won claim resumed.
    async fn beat(&mut self) -> usize {
        let (name, id) = (self.lane.name(), self.lane.id());
        let ttl = self.lane.config.ttl;
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        // The deadline counts from before the request: never later than
        // the expiry the database records.
        let until = Instant::now() + ttl;
        let store = self.orch.store();
        if let Some(epoch) = self.held {
            match tokio::time::timeout(ttl, store.renew_lease(name, id, ttl_ms)).await {
                Ok(Ok(true)) => self.lane.set(Some(Holding { epoch, until })),
                Ok(Ok(false)) => self.lose("another replica holds it, or it lapsed").await,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "renewing the lane lease");
                    if !self.lane.holds() {
                        self.lose("not renewed before its deadline").await;
                    }
                }
                Err(_) => {
                    tracing::warn!("renewing the lane lease timed out");
                    if !self.lane.holds() {
                        self.lose("not renewed before its deadline").await;
                    }
                }
            }
            return 0;
        }
        match tokio::time::timeout(ttl, store.claim_lease(name, id, ttl_ms)).await {
            Ok(Ok(Claim::Held { epoch, took_over })) => {
                self.held = Some(epoch);
                self.lane.set(Some(Holding { epoch, until }));
                report_owned(name, true);
                if took_over {
                    report_takeover(name);
                }
                tracing::info!(lane = name, epoch, took_over, "lane lease taken: driving its runs");
                match self.orch.take_lane().await {
                    Ok(n) => n,
                    Err(e) => {
                        // The rescan tries again in a few seconds.
                        tracing::warn!(error = %e, "resuming the lane's runs");
                        0
                    }
                }
            }
            Ok(Ok(Claim::Taken)) => 0,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "claiming the lane lease");
                0
            }
            Err(_) => {
                tracing::warn!("claiming the lane lease timed out");
                0
            }
        }
    }

    /// The lease is lost: the fence closes, then every driver stops.
    async fn lose(&mut self, why: &str) {
        self.held = None;
        self.lane.set(None);
        self.orch.drop_lane().await;
        report_owned(self.lane.name(), false);
        tracing::warn!(lane = self.lane.name(), why, "lane lease lost: its drivers stopped");
    }
}

/// A listener on both channels.
async fn listen_on(url: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect(url).await?;
    listener.listen_all([WAKE_CHANNEL, EVENTS_CHANNEL]).await?;
    Ok(listener)
}

/// Passes notifications on until `stop`: wake-ups to the lane's drivers
/// (while holding), other replicas' events to the local subscribers.
async fn listen(
    orch: Arc<Orchestrator>,
    lane: Arc<Lane>,
    mut listener: PgListener,
    stop: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = listener.try_recv() => next,
        };
        match next {
            Ok(Some(n)) => match n.channel() {
                WAKE_CHANNEL if lane.holds() => {
                    let (orch, id) = (Arc::clone(&orch), n.payload().to_owned());
                    tokio::spawn(async move {
                        if let Err(e) = orch.adopt(&RunId::from(&id)).await {
                            tracing::warn!(plan = %id, error = %e, "waking a run");
                        }
                    });
                }
                EVENTS_CHANNEL => {
                    let Some((run, seq, origin)) = parse_event_payload(n.payload()) else {
                        continue;
                    };
                    if origin != lane.id()
                        && let Err(e) = orch.relay(&RunId::from(run), seq).await
                    {
                        tracing::warn!(plan = %run, seq, error = %e, "relaying an event");
                        orch.resync();
                    }
                }
                _ => {}
            },
            // The connection dropped and was made again: whatever was
            // announced in between is read from the store.
            Ok(None) => {
                tracing::warn!("database listener reconnected");
                caught_up(&orch).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "database listener failed; reconnecting");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                match listen_on(&lane.config.database_url).await {
                    Ok(l) => {
                        listener = l;
                        caught_up(&orch).await;
                    }
                    Err(e) => tracing::warn!(error = %e, "reconnecting the database listener"),
                }
            }
        }
    }
}

/// After the listener missed notifications: subscribers read the store
/// again, and the holder starts drivers for runs it has not heard of.
async fn caught_up(orch: &Arc<Orchestrator>) {
    orch.resync();
    if let Err(e) = orch.rescan().await {
        tracing::warn!(error = %e, "looking for runs without a driver");
    }
}
