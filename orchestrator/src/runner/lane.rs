//! The runner's side of replica mode (see [`crate::replica`]): whether this
//! process may drive its sponsor lane's runs and send for them (the fence),
//! taking the lane over (its live runs resumed) and losing it (every driver
//! stopped at once), runs approved on other replicas started on a
//! notification, and events other replicas stored passed to the local
//! subscribers. Outside replica mode there is no lane: every check passes
//! and nothing here runs.

use std::sync::Arc;

use super::{Orchestrator, RunError, driver::lock};
use crate::{
    replica::Lane,
    state::{RunId, RunState},
};

impl Orchestrator {
    /// Makes this orchestrator one replica of `lane`: from now on it drives
    /// and sends only while it holds the lane's lease. Once only.
    pub(crate) fn join_lane(&self, lane: Arc<Lane>) {
        // The sender checks the lease too, before every send and every
        // replacement of a stuck transaction.
        let held = Arc::clone(&lane);
        self.chain.fence_sends(move || held.holds());
        let _ = self.lane.set(lane);
    }

    /// The lane this replica belongs to, in replica mode.
    pub fn lane(&self) -> Option<&Arc<Lane>> {
        self.lane.get()
    }

    /// Whether this process may drive runs and send for them now: always
    /// outside replica mode; in it, while the lane's lease is held (and
    /// its last renewal's deadline has not passed).
    pub fn may_drive(&self) -> bool {
        self.lane.get().is_none_or(|l| l.holds())
    }

    /// The fence every send passes: an error, and nothing sent, once the
    /// lease is lost or its deadline passed without a renewal.
    pub(super) fn fence(&self) -> Result<(), RunError> {
        match self.lane.get() {
            Some(lane) if !lane.holds() => Err(RunError::LeaseLost(lane.sponsor())),
            _ => Ok(()),
        }
    }

    /// This replica took the lane: the sponsor's nonces are read from the
    /// node again (the previous holder sent meanwhile), and every live run
    /// of the lane gets a driver. Returns how many.
    pub(crate) async fn take_lane(self: &Arc<Self>) -> Result<usize, RunError> {
        self.chain.forget_nonces().await;
        self.resume_all().await
    }

    /// This replica lost the lane (or is giving it up): every driver is
    /// stopped at once — dropped at its next await, however far its step
    /// got; what it did not do, the next holder does from the chain's
    /// truth — and this returns once they are gone (a few seconds at most).
    pub(crate) async fn drop_lane(&self) {
        {
            let mut token = lock(&self.drivers.lane);
            std::mem::take(&mut *token).cancel();
        }
        for _ in 0..500 {
            if self.drivers.driving() == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        tracing::warn!(driving = self.drivers.driving(), "drivers still stopping after 5 s");
    }

    /// Run `id` has something new (an approval or a decision, maybe on
    /// another replica): its driver is woken, or started when the run is
    /// live, of this lane, and has none. Nothing unless this replica holds
    /// the lane.
    pub(crate) async fn adopt(self: &Arc<Self>, id: &RunId) -> Result<(), RunError> {
        let Some(lane) = self.lane.get() else { return Ok(()) };
        if !self.may_drive() {
            return Ok(());
        }
        if self.drivers.is_driving(id) {
            self.wake(id);
            return Ok(());
        }
        if self.store.run_sponsor(id).await?.as_deref() != Some(lane.name()) {
            return Ok(());
        }
        let Some(run) = self.store.run(id).await? else { return Ok(()) };
        if !RunState::words(&RunState::LIVE).contains(&run.state.as_str()) {
            return Ok(());
        }
        let plan = crate::plan::Plan::from_json(&run.plan_json)?;
        self.load_funding(id, plan.id).await?;
        let from = self.store.from_block(id).await?.unwrap_or_default();
        self.chain.read_from(from).await;
        tracing::info!(plan = %id, state = %run.state, "driving a run of this lane");
        self.spawn(id);
        Ok(())
    }

    /// Starts a driver for every live run of the lane that has none (a
    /// notification may have been missed while the listener reconnected).
    pub(crate) async fn rescan(self: &Arc<Self>) -> Result<(), RunError> {
        let Some(lane) = self.lane.get() else { return Ok(()) };
        if !self.may_drive() {
            return Ok(());
        }
        for (id, _) in self.store.live_runs_of(lane.name()).await? {
            if !self.drivers.is_driving(&id) {
                self.adopt(&RunId::from(id)).await?;
            }
        }
        Ok(())
    }

    /// Passes event `seq` of run `id`, stored by another replica, to this
    /// replica's live subscribers.
    pub(crate) async fn relay(&self, id: &RunId, seq: i64) -> Result<(), RunError> {
        if let Some(ev) = self.store.event(id, seq).await? {
            let _ = self.events.send(ev);
        }
        Ok(())
    }

    /// Tells live subscribers that some events may not have reached them
    /// (the listener reconnected): they read the store again from their
    /// last event.
    pub(crate) fn resync(&self) {
        self.resync.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Changes each time live subscribers should read the store again
    /// (see [`Orchestrator::subscribe`]): the stored events are the truth,
    /// the live feed a shortcut.
    pub fn resyncs(&self) -> tokio::sync::watch::Receiver<u64> {
        self.resync.subscribe()
    }

    /// Wakes run `id`'s driver here and, in replica mode, on the replica
    /// holding the lane (`NOTIFY tessera_wake`). A failed notification is
    /// logged: the holder's driver looks at the run within a second anyway.
    pub(super) async fn nudge(&self, id: &RunId) {
        self.wake(id);
        if let Err(e) = self.store.notify_wake(id).await {
            tracing::warn!(plan = %id, error = %e, "notifying the lane holder");
        }
    }
}
