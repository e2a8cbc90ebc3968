//! Supervised drivers: one task per live run in a [`JoinSet`], under a
//! cancellation token the orchestrator owns. A driver that errors out or
//! panics is restarted with backoff, and each restart is a
//! `driver_restarted` run event; shutdown stops new steps, lets the current
//! ones finish, and waits for every driver. In replica mode a driver is
//! started only while the lane's lease is held, and losing the lease stops
//! every driver at once (see [`super::lane`]).

use std::{
    collections::{HashMap, HashSet},
    panic::AssertUnwindSafe,
    sync::{Arc, Mutex as StdMutex, MutexGuard, PoisonError},
    time::Duration,
};

use alloy::providers::Provider;
use futures_util::FutureExt;
use tessera_bindings::heads::{Follow, Head};
use tokio::{sync::Notify, task::JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{Orchestrator, RunError};
use crate::{
    state::{RunEvent, RunId, RunState},
    store::now_ms,
};

/// The driver tasks of the live runs, and what wakes them.
#[derive(Debug, Default)]
pub struct Supervisor {
    tasks: StdMutex<JoinSet<()>>,
    token: CancellationToken,
    driving: StdMutex<HashSet<String>>,
    wakers: StdMutex<HashMap<String, Arc<Notify>>>,
    /// Each driven run's escrow tasks, as its last look found them: a new
    /// head wakes the run only when it changed one of them (see
    /// [`Orchestrator::drive`]).
    watched: StdMutex<HashMap<String, Vec<alloy::primitives::U256>>>,
    /// Cancelled (and replaced) when this replica loses its lane: every
    /// driver started under it stops at once. Apart from `token`, so a
    /// graceful shutdown still lets the current steps finish.
    pub(super) lane: StdMutex<CancellationToken>,
}

/// A lock that survives a panic elsewhere (the data stays consistent: every
/// critical section is one map operation).
pub(super) fn lock<T>(m: &StdMutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Supervisor {
    fn waker(&self, id: &RunId) -> Arc<Notify> {
        Arc::clone(lock(&self.wakers).entry(id.to_string()).or_default())
    }

    /// Forgets a run whose driver ended.
    fn finish(&self, id: &RunId) {
        lock(&self.driving).remove(id.as_str());
        lock(&self.wakers).remove(id.as_str());
        lock(&self.watched).remove(id.as_str());
    }

    /// Records run `id`'s escrow tasks, as a look found them.
    pub(super) fn watch(&self, id: &RunId, tasks: Vec<alloy::primitives::U256>) {
        lock(&self.watched).insert(id.to_string(), tasks);
    }

    /// Run `id`'s escrow tasks as its last look found them (empty when it
    /// has none yet, or was not looked at).
    fn watched(&self, id: &RunId) -> Vec<alloy::primitives::U256> {
        lock(&self.watched).get(id.as_str()).cloned().unwrap_or_default()
    }

    /// Runs with a driver now.
    pub fn driving(&self) -> usize {
        lock(&self.driving).len()
    }

    /// Whether run `id` has a driver now.
    pub fn is_driving(&self, id: &str) -> bool {
        lock(&self.driving).contains(id)
    }

    /// Runs that can be woken now (one per driver).
    pub fn wakers(&self) -> usize {
        lock(&self.wakers).len()
    }
}

/// The message of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

impl Orchestrator {
    /// The driver tasks.
    pub fn drivers(&self) -> &Supervisor {
        &self.drivers
    }

    /// Starts driver tasks for every live run (after a restart).
    pub async fn resume_all(self: &Arc<Self>) -> Result<usize, RunError> {
        // In replica mode, the live runs of this replica's lane only.
        let live: Vec<(String, String)> = match self.lane() {
            Some(lane) => self.store.live_runs_of(lane.name()).await?,
            None => self
                .store
                .runs_in(&RunState::LIVE)
                .await?
                .into_iter()
                .map(|r| (r.id, r.state))
                .collect(),
        };
        // Read the escrow's logs from the earliest approval among them (a run
        // approved before approvals were recorded: from the deployment).
        let mut from: Option<u64> = None;
        for (id, _) in &live {
            // A run funded by a grant: its sponsor's logs are kept from the first read.
            let rid = RunId::from(id);
            let (_, plan) = self.load(&rid).await?;
            self.load_funding(&rid, plan.id).await?;
            let at = self.store.from_block(id).await?.unwrap_or_default();
            from = Some(from.map_or(at, |f| f.min(at)));
        }
        if let Some(from) = from {
            self.chain.read_from(from).await;
        }
        for (id, state) in &live {
            tracing::info!(plan = %id, %state, "resuming run");
            self.spawn(&RunId::from(id));
        }
        Ok(live.len())
    }

    /// Follows the chain head until shutdown: over a websocket subscription
    /// when `ws_url` is given and answers, else by polling the newest block
    /// every poll interval, announced the same way. Every new block wakes
    /// the runs.
    pub async fn follow_heads(self: Arc<Self>, ws_url: Option<String>) {
        let shutdown = self.drivers.token.clone().cancelled_owned();
        tokio::pin!(shutdown);
        let mut follow = Follow::connect_or_poll(
            ws_url.as_deref(),
            self.config.poll_interval,
            "reading the chain head",
            self.chain.provider().clone(),
        )
        .await;
        self.chain.follow(follow.watch());
        loop {
            let pass = self.read_head(follow.head()).await;
            if !follow.next(pass, shutdown.as_mut()).await {
                return;
            }
        }
    }

    /// Publishes the head: `announced` by the subscription, else asked of
    /// the node. The escrow's logs up to it are read first, once for every
    /// run, so a run woken by it knows whether it changed its tasks.
    async fn read_head(&self, announced: Option<Head>) -> Result<(), RunError> {
        let n = match announced {
            Some(head) => {
                self.chain.saw_head(head);
                head.number
            }
            None => self.chain.provider().get_block_number().await?,
        };
        if *self.head.borrow() != n {
            self.chain.read_to(n).await?;
        }
        self.head.send_if_modified(|h| std::mem::replace(h, n) != n);
        Ok(())
    }

    /// Stops taking new steps, lets every driver finish its current step,
    /// and waits for them (and for the head follower to notice).
    pub async fn shutdown(&self) {
        self.drivers.token.cancel();
        let mut tasks = std::mem::take(&mut *lock(&self.drivers.tasks));
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = done {
                tracing::warn!(error = %e, "run driver ended abnormally");
            }
        }
    }

    /// Tells every driver and the head follower to stop after their current
    /// step, without waiting (see [`Self::shutdown`]).
    pub fn stop(&self) {
        self.drivers.token.cancel();
    }

    /// Whether shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.drivers.token.is_cancelled()
    }

    /// Starts the supervised driver of run `id`, unless it has one (or,
    /// in replica mode, this replica does not hold the lane).
    pub(super) fn spawn(self: &Arc<Self>, id: &RunId) {
        // Checked under the lane's lock: a lane lost meanwhile cancels the
        // token this driver takes.
        let lane = lock(&self.drivers.lane);
        if self.drivers.token.is_cancelled()
            || !self.may_drive()
            || !lock(&self.drivers.driving).insert(id.to_string())
        {
            return;
        }
        let lane = lane.clone();
        let span = tracing::info_span!("run", plan = %id);
        let mut tasks = lock(&self.drivers.tasks);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(Arc::clone(self).supervise(id.clone(), lane).instrument(span));
    }

    /// Wakes run `id`'s driver, when it has one.
    pub(super) fn wake(&self, id: &RunId) {
        if let Some(waker) = lock(&self.drivers.wakers).get(id.as_str()) {
            waker.notify_one();
        }
    }

    /// Drives run `id` until it ends, shutdown, or the loss of the lane
    /// (`lane` cancelled: the driver is dropped wherever it is).
    async fn supervise(self: Arc<Self>, id: RunId, lane: CancellationToken) {
        tokio::select! {
            biased;
            () = lane.cancelled() => tracing::info!("lane lost: driver stopped"),
            () = self.supervise_steps(&id) => {}
        }
        self.drivers.finish(&id);
    }

    /// Drives run `id` until it ends or shutdown, restarting the driver
    /// with backoff when it fails or panics.
    async fn supervise_steps(&self, id: &RunId) {
        let token = self.drivers.token.clone();
        let mut restarts = 0u32;
        loop {
            let error = match AssertUnwindSafe(self.drive(id)).catch_unwind().await {
                Ok(Ok(())) => break,
                Ok(Err(e)) => e.to_string(),
                Err(panic) => format!("panic: {}", panic_text(panic.as_ref())),
            };
            restarts += 1;
            tracing::error!(%error, restarts, "run driver failed; restarting it");
            // The restart is recorded against the run's own plan, read from
            // the store (whatever the id's text is); a run that cannot be
            // read is logged only.
            match self.load(id).await {
                Ok((_, plan)) => {
                    let event = RunEvent::DriverRestarted { plan_id: plan.id, error, restarts };
                    let dedup = format!("driver_restarted:{}:{restarts}", now_ms());
                    if let Err(e) = self.emit_run(id, &dedup, &event).await {
                        tracing::warn!(error = %e, "recording the driver restart");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "reading the run to record its restart"),
            }
            if token.is_cancelled() {
                break;
            }
            let backoff =
                Duration::from_millis(100u64 << restarts.min(7)).min(Duration::from_secs(10));
            tokio::select! {
                () = token.cancelled() => break,
                () = tokio::time::sleep(backoff) => {}
            }
        }
    }

    /// Steps run `id` until it is over or shutdown begins; an error after
    /// [`super::RunnerConfig::max_step_failures`] consecutive failed steps.
    async fn drive(&self, id: &RunId) -> Result<(), RunError> {
        let token = self.drivers.token.clone();
        let waker = self.drivers.waker(id);
        let mut heads = self.head.subscribe();
        let mut failures = 0u32;
        while !token.is_cancelled() {
            // What the held logs had seen before this look: a change after
            // it is new to the run.
            let stamp = self.chain.stamp().await;
            match self.tick(id).await {
                Ok(true) => return Ok(()),
                Ok(false) => failures = 0,
                // The lease lapsed before a renewal: nothing was sent. Either
                // it is renewed and the next look goes on, or the lane is
                // lost and this driver is stopped.
                Err(RunError::LeaseLost(_)) => {}
                Err(e) => {
                    failures += 1;
                    if failures >= self.config.max_step_failures.max(1) {
                        return Err(e);
                    }
                    tracing::warn!(error = %e, failures, "run step failed; will retry");
                    let backoff = Duration::from_millis(200 * u64::from(failures.min(10)));
                    tokio::select! {
                        () = token.cancelled() => return Ok(()),
                        () = tokio::time::sleep(backoff) => {}
                    }
                }
            }
            // The next look: when told (a decision, an approval), at least
            // every idle tick (what time alone moves: deadlines, windows,
            // confirmations, results fetched off the look), and on a new
            // head only when its logs changed one of the run's tasks (or
            // the run has none yet). A run waiting on others is not looked
            // at on every block the others make.
            let idle = tokio::time::Instant::now() + self.config.idle_tick;
            let watched = self.drivers.watched(id);
            loop {
                tokio::select! {
                    () = token.cancelled() => break,
                    () = waker.notified() => break,
                    () = tokio::time::sleep_until(idle) => break,
                    changed = heads.changed() => {
                        if changed.is_err()
                            || watched.is_empty()
                            || self.chain.touched_since(&watched, stamp).await
                        {
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
