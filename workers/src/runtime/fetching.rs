//! Blobs a task needs that are not here yet (its envelope, an upstream's
//! result), fetched off the pass. Whoever funds a task writes its spec URI
//! and hint, so a hint may be a tarpit (it accepts and never answers). A
//! pass never waits on one: a task whose blob is not in the local store is
//! handed here, its fetch runs in the background, and the task is worked
//! on once the blob is local.
//!
//! Bounds: at most [`PER_FUNDER`] fetches in flight per funder and
//! [`IN_FLIGHT`] in all (the others queue, in task order), at most
//! [`MAX_JOBS`] tasks waiting here (beyond it a task is looked at again
//! next pass); each fetch is bounded by the blob sources' own limits. A
//! pass waits at most [`GRACE`] for the fetches it started itself (so a
//! blob a few milliseconds away is worked on in the same pass), never for
//! older ones. So one funder's tarpits hold up that funder's tasks only.
//!
//! A fetch that fails for good (not found, a refused address, too large,
//! tampered) declines the task at once; one that fails for now is tried
//! again with backoff until [`WAIT_SHARE_PCT`] percent of the task's time
//! (from its last update to its deadline) has passed, then declined — well
//! before the last fifth of its time, where a decline counts as an expiry.
//! The published reason names a category only ([`unreadable`]): never
//! the URL, status, length or hash of what answered.

use std::{collections::BTreeMap, time::Duration};

use alloy::primitives::{Address, U256};
use tessera_bindings::{
    envelope::{BlobRef, BlobSources, FetchCategory, FetchError, HARD_MAX_BYTES},
    task::TaskRecord,
};
use tokio::{task::AbortHandle, time::Instant};

pub use super::inbox::GRACE;
use super::inbox::Inbox;

/// Fetches in flight per funder.
pub const PER_FUNDER: usize = 2;
/// Fetches in flight in all.
pub const IN_FLIGHT: usize = 32;
/// Tasks waiting for a blob, at most.
pub const MAX_JOBS: usize = 4096;
/// The share of a task's time, in percent, its blobs are waited for.
pub const WAIT_SHARE_PCT: u64 = 50;
/// The first wait before a fetch that failed for now is tried again;
/// doubled each time, up to [`MAX_BACKOFF`].
const BACKOFF: Duration = Duration::from_secs(2);
const MAX_BACKOFF: Duration = Duration::from_secs(120);

/// The reason published when `what` (`envelope`, `upstream task 7's
/// result`) cannot be read: its category, nothing of what answered.
pub fn unreadable(what: &str, e: &FetchError) -> String {
    match e.category() {
        FetchCategory::TooLarge => format!("{what} too large"),
        category => format!("{what} unreadable: {category}"),
    }
}

/// Whether the blob behind `uri` needs no fetch: inline, malformed (its
/// decoding says why) or in the local store.
pub(super) fn is_local(sources: &BlobSources, uri: &str) -> bool {
    match BlobRef::of_uri(uri) {
        Ok(Some(blob)) => {
            sources.local().get(&blob.hash, HARD_MAX_BYTES).is_ok_and(|b| b.is_some())
        }
        Ok(None) | Err(_) => true,
    }
}

/// One task waiting for one blob.
#[derive(Debug)]
struct Job {
    rec: TaskRecord,
    uri: String,
    /// What the blob is, for the reason: `envelope`, `upstream task 7's result`.
    what: String,
    /// Chain time past which a fetch failing for now declines the task.
    give_up_at: u64,
    running: Option<AbortHandle>,
    /// Not tried again before this (after a failure for now).
    retry_at: Option<Instant>,
    failures: u32,
    /// The last failure for now, for the reason when it comes to that.
    last: Option<FetchError>,
}

/// What came of a task's wait.
#[derive(Debug)]
pub(super) enum Outcome {
    /// The blob is local: work on the task.
    Ready(Box<TaskRecord>),
    /// It cannot be read: decline with this reason.
    Unreadable(Box<TaskRecord>, String),
}

/// The tasks waiting for a blob, and their fetches.
#[derive(Debug, Default)]
pub(super) struct Fetches {
    jobs: BTreeMap<U256, Job>,
    /// Where the fetches' outcomes land.
    pub(super) done: Inbox<Result<(), FetchError>>,
}

impl Fetches {
    /// Task `rec` needs the blob at `uri` (`what`, for the reason); false
    /// when too many tasks wait already (look again next pass).
    pub(super) fn want(&mut self, rec: TaskRecord, uri: String, what: String) -> bool {
        if let Some(job) = self.jobs.get_mut(&rec.id) {
            if job.uri != uri && job.running.is_none() {
                (job.uri, job.what, job.failures, job.last) = (uri, what, 0, None);
            }
            return true;
        }
        if self.jobs.len() >= MAX_JOBS {
            return false;
        }
        let start = rec.task.updatedAt.to::<u64>();
        let deadline = rec.task.deadline.to::<u64>();
        let give_up_at = start + deadline.saturating_sub(start) * WAIT_SHARE_PCT / 100;
        let job = Job {
            rec,
            uri,
            what,
            give_up_at,
            running: None,
            retry_at: None,
            failures: 0,
            last: None,
        };
        self.jobs.insert(job.rec.id, job);
        true
    }

    /// Whether task `id` waits here.
    pub(super) fn has(&self, id: U256) -> bool {
        self.jobs.contains_key(&id)
    }

    /// Stops waiting for task `id` (it settled or moved).
    pub(super) fn forget(&mut self, id: U256) {
        if let Some(job) = self.jobs.remove(&id)
            && let Some(h) = job.running
        {
            h.abort();
        }
    }

    /// Starts the queued fetches the bounds allow; how many it started.
    pub(super) fn launch(&mut self, sources: &BlobSources) -> usize {
        let now = Instant::now();
        let mut per_funder: BTreeMap<Address, usize> = BTreeMap::new();
        for job in self.jobs.values().filter(|j| j.running.is_some()) {
            *per_funder.entry(job.rec.task.funder).or_default() += 1;
        }
        let mut in_flight: usize = per_funder.values().sum();
        let mut started = 0;
        for (id, job) in &mut self.jobs {
            if in_flight >= IN_FLIGHT {
                break;
            }
            let funder = job.rec.task.funder;
            let busy = per_funder.entry(funder).or_default();
            if job.running.is_some() || *busy >= PER_FUNDER || job.retry_at.is_some_and(|t| t > now)
            {
                continue;
            }
            let (sources, uri, id) = (sources.clone(), job.uri.clone(), *id);
            tracing::debug!(task = %id, %funder, "fetching a blob the task needs");
            job.running = Some(self.done.spawn(id, async move { sources.ensure(&uri).await }));
            *busy += 1;
            in_flight += 1;
            started += 1;
        }
        started
    }

    /// Waits up to [`GRACE`] for fetches to end, when `started` were
    /// started this pass (older ones are never waited for).
    pub(super) async fn grace(&self, started: usize) {
        self.done.grace(started).await;
    }

    /// The tasks whose wait ended: fetched, failed for good, or past their
    /// share of time at chain time `now` (when known).
    pub(super) fn collect(&mut self, now: Option<u64>) -> Vec<Outcome> {
        let finished = self.done.take();
        let mut out = Vec::new();
        for (id, got) in finished {
            let Some(job) = self.jobs.get_mut(&id) else { continue };
            job.running = None;
            match got {
                Ok(()) => {
                    let job = self.jobs.remove(&id).expect("present");
                    out.push(Outcome::Ready(Box::new(job.rec)));
                }
                Err(e) if e.is_transient() => {
                    job.failures += 1;
                    let pause =
                        BACKOFF.saturating_mul(1 << (job.failures - 1).min(8)).min(MAX_BACKOFF);
                    tracing::info!(task = %id, failures = job.failures, "a blob the task needs is out of reach for now; trying again later");
                    job.retry_at = Some(Instant::now() + pause);
                    job.last = Some(e);
                }
                Err(e) => {
                    let job = self.jobs.remove(&id).expect("present");
                    tracing::warn!(task = %id, error = %e, "a blob the task needs cannot be read");
                    out.push(Outcome::Unreadable(Box::new(job.rec), unreadable(&job.what, &e)));
                }
            }
        }
        if let Some(now) = now {
            let late: Vec<U256> =
                self.jobs.iter().filter(|(_, j)| now >= j.give_up_at).map(|(id, _)| *id).collect();
            for id in late {
                let job = self.jobs.remove(&id).expect("present");
                if let Some(h) = &job.running {
                    h.abort();
                }
                let reason = match &job.last {
                    Some(e) => unreadable(&job.what, e),
                    None => format!("{} unreadable: {}", job.what, FetchCategory::Unavailable),
                };
                tracing::warn!(task = %id, "a blob the task needs stayed out of reach; giving up");
                out.push(Outcome::Unreadable(Box::new(job.rec), reason));
            }
        }
        out
    }
}
