//! Spec fetching, off the ingest path. A task's spec URI is chosen by
//! whoever funds the task, and its location hint may name a server that
//! never answers (a tarpit) or answers anything that hashes right. So
//! ingest never waits on a blob: it applies chain events and folds tasks
//! from what the local store has, and hands each content-addressed spec it
//! does not have to this queue. The queue fetches in the background and
//! reports the tasks whose spec arrived; the next pass folds them again
//! ([`crate::Indexer::sync_once`]), so the lineage shows the spec then.
//!
//! Bounds ([`SpecQueueConfig`]): the jobs waiting (in all, and per funder:
//! a new job past either is refused and counted, `outcome="dropped"`), the
//! fetches running (in all, and per funder), and every fetch's time and
//! size ([`tessera_bindings::envelope::FetchLimits`] of the sources given).
//! Funders are served round-robin, so one funder's tarpits hold at most its
//! own share of the fetch slots and never delay another funder's specs.
//! Only bytes that parse as an envelope are kept: anything else that
//! hashes right is refused before it reaches the local store.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{Arc, Mutex, PoisonError},
};

use alloy::primitives::{Address, U256};
use tessera_bindings::envelope::{BlobError, BlobHash, BlobSources, BlobStore, Envelope};
use tokio::sync::Notify;

/// Why an envelope gate refused bytes; found in the fetch error's text.
const NOT_AN_ENVELOPE: &str = "not an envelope";

/// How much the spec queue holds and runs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecQueueConfig {
    /// Jobs waiting, in all; a new job past this is refused.
    pub capacity: usize,
    /// Jobs waiting per funder; a new job past this is refused.
    pub per_funder: usize,
    /// Fetches running at once, in all.
    pub concurrency: usize,
    /// Fetches running at once for one funder's tasks.
    pub per_funder_concurrency: usize,
}

impl Default for SpecQueueConfig {
    fn default() -> Self {
        Self { capacity: 4_096, per_funder: 256, concurrency: 8, per_funder_concurrency: 2 }
    }
}

/// One spec to fetch.
#[derive(Debug, Clone)]
struct Job {
    task: U256,
    uri: String,
    funder: Address,
}

/// The queue's state, behind one lock.
#[derive(Debug, Default)]
struct Queue {
    /// Waiting jobs per funder.
    waiting: HashMap<Address, VecDeque<Job>>,
    /// Funders with waiting jobs, in turn.
    turns: VecDeque<Address>,
    /// Fetches running per funder.
    running: HashMap<Address, usize>,
    /// Spec URIs waiting or running (one fetch each).
    known: HashSet<String>,
    /// Jobs waiting, in all.
    len: usize,
    /// Fetches running, in all.
    in_flight: usize,
    /// Tasks whose spec arrived, for the next pass to fold again.
    arrived: Vec<U256>,
    /// The dispatcher was started.
    started: bool,
}

impl Queue {
    /// The next job a free slot may run: the first funder in turn below its
    /// own running bound, moved to the back of the turns.
    fn next(&mut self, cfg: &SpecQueueConfig) -> Option<Job> {
        if self.in_flight >= cfg.concurrency.max(1) {
            return None;
        }
        for _ in 0..self.turns.len() {
            let funder = self.turns.pop_front()?;
            let running = self.running.get(&funder).copied().unwrap_or(0);
            if running >= cfg.per_funder_concurrency.max(1) {
                self.turns.push_back(funder);
                continue;
            }
            let queue = self.waiting.get_mut(&funder)?;
            let job = queue.pop_front()?;
            if queue.is_empty() {
                self.waiting.remove(&funder);
            } else {
                self.turns.push_back(funder);
            }
            self.len -= 1;
            self.in_flight += 1;
            *self.running.entry(funder).or_default() += 1;
            return Some(job);
        }
        None
    }

    /// A fetch of `job` ended.
    fn done(&mut self, job: &Job, arrived: bool) {
        self.in_flight -= 1;
        if let Some(n) = self.running.get_mut(&job.funder) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(&job.funder);
            }
        }
        self.known.remove(&job.uri);
        if arrived {
            self.arrived.push(job.task);
        }
    }
}

/// What became of a job offered to the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Queued.
    Queued,
    /// The same spec is already waiting or being fetched.
    Known,
    /// The queue, or the funder's share of it, is full: refused.
    Dropped,
}

/// State shared with the dispatcher and the fetches.
struct Shared {
    queue: Mutex<Queue>,
    cfg: SpecQueueConfig,
    /// The sources as given.
    given_sources: BlobSources,
    /// The sources over the envelope gate: what fetches use.
    gated: BlobSources,
    /// A job was queued or a fetch ended: the dispatcher looks again.
    work: Notify,
    /// A spec arrived: a pass is due.
    arrived: Notify,
    /// A fetch ended: those waiting for the queue to empty look again.
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // Every update is a few counters and collections left consistent
        // before any call that could panic.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The spec queue: cheap to clone (a handle).
#[derive(Clone)]
pub struct SpecQueue {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SpecQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = self.shared.lock();
        f.debug_struct("SpecQueue")
            .field("waiting", &q.len)
            .field("in_flight", &q.in_flight)
            .finish_non_exhaustive()
    }
}

impl SpecQueue {
    /// A queue fetching through `sources`, keeping only envelopes in their
    /// local store.
    pub fn new(sources: BlobSources, cfg: SpecQueueConfig) -> Self {
        let gate: Arc<dyn BlobStore + Send + Sync> =
            Arc::new(EnvelopesOnly(Arc::clone(sources.local())));
        Self {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue::default()),
                cfg,
                given_sources: sources.clone(),
                gated: sources.with_local(gate),
                work: Notify::new(),
                arrived: Notify::new(),
                changed: Notify::new(),
            }),
        }
    }

    /// Offers the spec `uri` of `task`, funded by `funder`, for fetching.
    /// Needs a tokio runtime (the first offer starts the dispatcher).
    pub fn offer(&self, task: U256, uri: &str, funder: Address) -> Offer {
        let cfg = self.shared.cfg;
        let start = {
            let mut q = self.shared.lock();
            if q.known.contains(uri) {
                return Offer::Known;
            }
            let theirs = q.waiting.get(&funder).map_or(0, VecDeque::len);
            if q.len >= cfg.capacity || theirs >= cfg.per_funder {
                drop(q);
                crate::metrics::spec_fetch("dropped");
                tracing::warn!(task = %task, %funder, "spec fetch queue full; spec not fetched");
                return Offer::Dropped;
            }
            q.known.insert(uri.to_owned());
            if theirs == 0 {
                q.turns.push_back(funder);
            }
            q.waiting.entry(funder).or_default().push_back(Job {
                task,
                uri: uri.to_owned(),
                funder,
            });
            q.len += 1;
            crate::metrics::spec_queue(q.len, q.in_flight);
            !std::mem::replace(&mut q.started, true)
        };
        if start {
            tokio::spawn(dispatch(Arc::clone(&self.shared)));
        }
        self.shared.work.notify_one();
        Offer::Queued
    }

    /// The sources fetched from, as given to [`SpecQueue::new`].
    pub fn sources(&self) -> &BlobSources {
        &self.shared.given_sources
    }

    /// Jobs waiting and fetches running.
    pub fn pending(&self) -> (usize, usize) {
        let q = self.shared.lock();
        (q.len, q.in_flight)
    }

    /// The tasks whose spec arrived since the last call.
    pub fn take_arrived(&self) -> Vec<U256> {
        std::mem::take(&mut self.shared.lock().arrived)
    }

    /// Resolves when a spec arrives (or arrived since the last call).
    pub async fn arrival(&self) {
        self.shared.arrived.notified().await;
    }

    /// Resolves once nothing waits and nothing runs.
    pub async fn idle(&self) {
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let q = self.shared.lock();
                if q.len == 0 && q.in_flight == 0 {
                    return;
                }
            }
            changed.await;
        }
    }
}

/// Starts fetches while slots are free; runs as long as the queue lives.
async fn dispatch(shared: Arc<Shared>) {
    loop {
        let work = shared.work.notified();
        tokio::pin!(work);
        work.as_mut().enable();
        while let Some(job) = shared.lock().next(&shared.cfg) {
            tokio::spawn(fetch(Arc::clone(&shared), job));
        }
        // Only the queue's handles and fetches hold `shared`: once every
        // handle is gone nothing can be offered again.
        if Arc::strong_count(&shared) == 1 {
            return;
        }
        work.await;
    }
}

/// One fetch: the spec made local if it is an envelope.
async fn fetch(shared: Arc<Shared>, job: Job) {
    let outcome = match shared.gated.ensure(&job.uri).await {
        Ok(()) => "fetched",
        Err(e) if e.to_string().contains(NOT_AN_ENVELOPE) => {
            tracing::warn!(task = %job.task, uri = %job.uri, "spec is not an envelope; not kept");
            "refused"
        }
        Err(e) => {
            tracing::warn!(task = %job.task, uri = %job.uri, error = %e, "spec out of reach");
            if matches!(e, tessera_bindings::envelope::FetchError::Refused { .. }) {
                "refused"
            } else {
                "failed"
            }
        }
    };
    crate::metrics::spec_fetch(outcome);
    {
        let mut q = shared.lock();
        q.done(&job, outcome == "fetched");
        crate::metrics::spec_queue(q.len, q.in_flight);
    }
    if outcome == "fetched" {
        shared.arrived.notify_one();
    }
    shared.work.notify_one();
    shared.changed.notify_waiters();
}

/// A local store that keeps only envelopes: whatever else a source answers
/// (bytes that hash right but are no envelope) is refused.
struct EnvelopesOnly(Arc<dyn BlobStore + Send + Sync>);

impl BlobStore for EnvelopesOnly {
    fn put(&self, bytes: &[u8]) -> Result<BlobHash, BlobError> {
        Envelope::from_json(bytes).map_err(|e| BlobError::Io {
            path: std::path::PathBuf::from("<fetched spec>"),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{NOT_AN_ENVELOPE}: {e}"),
            ),
        })?;
        self.0.put(bytes)
    }

    fn get(&self, hash: &BlobHash, max_len: usize) -> Result<Option<Vec<u8>>, BlobError> {
        self.0.get(hash, max_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(task: u64, funder: u8) -> Job {
        Job {
            task: U256::from(task),
            uri: format!("sha256:{task}"),
            funder: Address::repeat_byte(funder),
        }
    }

    fn push(q: &mut Queue, j: Job) {
        if q.waiting.get(&j.funder).is_none_or(VecDeque::is_empty) {
            q.turns.push_back(j.funder);
        }
        q.known.insert(j.uri.clone());
        q.waiting.entry(j.funder).or_default().push_back(j);
        q.len += 1;
    }

    #[test]
    fn one_funder_holds_at_most_its_share_of_the_slots() {
        let cfg = SpecQueueConfig {
            capacity: 100,
            per_funder: 100,
            concurrency: 4,
            per_funder_concurrency: 2,
        };
        let mut q = Queue::default();
        // A hostile funder queues ten tarpits before an honest funder's one.
        for t in 0..10 {
            push(&mut q, job(t, 1));
        }
        push(&mut q, job(100, 2));
        let mut started = Vec::new();
        while let Some(j) = q.next(&cfg) {
            started.push(j);
        }
        let hostile = started.iter().filter(|j| j.funder == Address::repeat_byte(1)).count();
        assert_eq!(hostile, 2, "the hostile funder's share");
        assert!(started.iter().any(|j| j.task == U256::from(100)), "the honest spec runs at once");
        // The tarpits never end; the honest fetch does, and its slot goes
        // to nobody else of the hostile funder.
        let honest = started.iter().find(|j| j.task == U256::from(100)).unwrap().clone();
        q.done(&honest, true);
        assert!(q.next(&cfg).is_none());
        assert_eq!(q.take_arrived_for_test(), vec![U256::from(100)]);
    }

    impl Queue {
        fn take_arrived_for_test(&mut self) -> Vec<U256> {
            std::mem::take(&mut self.arrived)
        }
    }

    #[tokio::test]
    async fn a_full_queue_refuses_new_jobs_per_funder_and_in_all() {
        let local: Arc<dyn BlobStore + Send + Sync> =
            Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
        // Hints are not followed and there are no gateways: nothing is
        // fetched, so what waits is what the bounds let in. Concurrency 1,
        // and the first job takes it at once or waits.
        let cfg = SpecQueueConfig {
            capacity: 3,
            per_funder: 2,
            concurrency: 1,
            per_funder_concurrency: 1,
        };
        let q = SpecQueue::new(BlobSources::new(local).follow_hints(false), cfg);
        // The dispatcher is not started by hand: jobs are checked on offer.
        let (a, b, c) = (Address::repeat_byte(1), Address::repeat_byte(2), Address::repeat_byte(3));
        let uri = |n: u8| format!("sha256:{}", alloy::hex::encode([n; 32]));
        {
            // Hold the lock's view stable: fill the queue before any
            // fetch can start by taking the slot ourselves.
            q.shared.lock().in_flight = 1;
        }
        assert_eq!(q.offer(U256::from(1), &uri(1), a), Offer::Queued);
        assert_eq!(q.offer(U256::from(1), &uri(1), a), Offer::Known);
        assert_eq!(q.offer(U256::from(2), &uri(2), a), Offer::Queued);
        assert_eq!(q.offer(U256::from(3), &uri(3), a), Offer::Dropped, "the funder's share");
        assert_eq!(q.offer(U256::from(4), &uri(4), b), Offer::Queued);
        assert_eq!(q.offer(U256::from(5), &uri(5), c), Offer::Dropped, "the whole queue");
        assert_eq!(q.pending(), (3, 1));
    }

    #[test]
    fn only_envelopes_are_kept() {
        let inner = Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
        let gate = EnvelopesOnly(inner.clone());
        let junk = b"{\"not\":\"an envelope\"}";
        let err = gate.put(junk).unwrap_err();
        assert!(err.to_string().contains(NOT_AN_ENVELOPE), "{err}");
        assert!(inner.get(&BlobHash::of(junk), 1 << 20).unwrap().is_none());
        let envelope = Envelope::new(tessera_bindings::envelope::Parent::Task("1".into()), "do it");
        let bytes = envelope.to_json().unwrap();
        let hash = gate.put(&bytes).unwrap();
        assert!(inner.get(&hash, 1 << 20).unwrap().is_some());
    }
}
