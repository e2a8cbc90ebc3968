//! Delivered results read off the look's path.
//!
//! A result URI is an executor's input: its location hint may answer
//! slowly, never, or with something else. A look at a run never waits on
//! it. The look reads a result from the local store only (inline `data:`
//! URIs and blobs already kept); a result not there yet is fetched in the
//! background, from its hint and the gateways, within [`FetchLimits`], and
//! kept in the local store where the next look finds it. Until then the
//! look sees it as pending, and decisions, approvals of other sub-tasks and
//! cancels go on as usual.
//!
//! Bounds, so that one executor's URIs cost that executor only:
//! - at most [`PER_EXECUTOR`] fetches of one executor's results run at
//!   once, and [`IN_FLIGHT`] in all (a result over the bound waits for a
//!   later look);
//! - a fetch that failed for now is tried again no sooner than
//!   [`RETRY_AFTER`];
//! - at most [`SLOTS`] results are remembered (the oldest finished ones go
//!   first);
//! - how long a delivered result may stay pending is the runner's
//!   [`super::RunnerConfig::result_wait`], in chain seconds from its
//!   delivery: past that it is unreadable (see [`super::sync`]).
//!
//! [`FetchLimits`]: tessera_bindings::envelope::FetchLimits

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use alloy::primitives::Address;
use tessera_bindings::envelope::{BlobSources, FetchError};

/// Fetches of one executor's results running at once.
pub const PER_EXECUTOR: usize = 2;
/// Fetches running at once, every executor's.
pub const IN_FLIGHT: usize = 32;
/// The least time between two fetches of a result that failed for now.
pub const RETRY_AFTER: Duration = Duration::from_secs(5);
/// Results remembered at most.
pub const SLOTS: usize = 4096;

/// Why a result cannot be read: the category of its fetch failure, in a
/// few words that name no address, status or hash of the executor's source.
pub use tessera_bindings::envelope::FetchCategory as Unreadable;

/// What a look knows of a result.
#[derive(Debug)]
pub enum Read {
    /// Its bytes, verified.
    Ready(Vec<u8>),
    /// Not local yet: a fetch runs, waits for its turn, or failed for now
    /// (`last` says how, when it did).
    Pending {
        /// The last failure, when a fetch failed for now.
        last: Option<Unreadable>,
    },
    /// It cannot be read: no source has it, or what they answered is
    /// refused. Trying again would not help.
    Gone(Unreadable),
}

#[derive(Debug)]
enum State {
    Running,
    Failed { transient: bool, why: Unreadable, at: Instant },
}

#[derive(Debug)]
struct Slot {
    executor: Address,
    state: State,
}

/// The results being fetched in the background, and those that failed.
/// Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl Reach {
    /// What is known of `uri`, delivered by `executor`: its bytes when the
    /// local store has them (or the URI is inline), else pending (a
    /// background fetch is started when none runs and the bounds allow),
    /// or gone for good.
    pub async fn read(
        &self,
        local: &BlobSources,
        remote: &BlobSources,
        uri: &str,
        executor: Address,
    ) -> Read {
        match local.fetch(uri).await {
            Ok(bytes) => {
                self.lock().remove(uri);
                return Read::Ready(bytes);
            }
            // A malformed URI or a local copy over the size limit.
            Err(e @ FetchError::Refused { .. }) => return Read::Gone(e.category()),
            // Not local (or the local store failing for now): see below.
            Err(_) => {}
        }
        let mut slots = self.lock();
        if let Some(slot) = slots.get(uri) {
            match slot.state {
                State::Running => return Read::Pending { last: None },
                State::Failed { transient: false, why, .. } => return Read::Gone(why),
                State::Failed { why, at, .. } if at.elapsed() < RETRY_AFTER => {
                    return Read::Pending { last: Some(why) };
                }
                State::Failed { why, .. } => {
                    if !Self::room(&slots, executor) {
                        return Read::Pending { last: Some(why) };
                    }
                }
            }
        } else if !Self::room(&slots, executor) {
            return Read::Pending { last: None };
        }
        let last = slots.get(uri).and_then(|s| match s.state {
            State::Failed { why, .. } => Some(why),
            State::Running => None,
        });
        if slots.len() >= SLOTS {
            Self::evict(&mut slots);
        }
        slots.insert(uri.to_owned(), Slot { executor, state: State::Running });
        drop(slots);
        let (this, remote, uri) = (self.clone(), remote.clone(), uri.to_owned());
        tokio::spawn(async move {
            let outcome = remote.ensure(&uri).await;
            let mut slots = this.lock();
            match outcome {
                Ok(()) => {
                    slots.remove(&uri);
                }
                Err(e) => {
                    tracing::warn!(%uri, error = %e, "a delivered result could not be fetched");
                    let state = State::Failed {
                        transient: e.is_transient(),
                        why: e.category(),
                        at: Instant::now(),
                    };
                    if let Some(slot) = slots.get_mut(&uri) {
                        slot.state = state;
                    }
                }
            }
        });
        Read::Pending { last }
    }

    /// Forgets `uris` (their runs are over).
    pub fn forget<'a>(&self, uris: impl IntoIterator<Item = &'a str>) {
        let mut slots = self.lock();
        for uri in uris {
            slots.remove(uri);
        }
    }

    /// Fetches running now (for tests and metrics).
    pub fn running(&self) -> usize {
        self.lock().values().filter(|s| matches!(s.state, State::Running)).count()
    }

    /// Whether one more fetch of `executor`'s may start.
    fn room(slots: &HashMap<String, Slot>, executor: Address) -> bool {
        let running = slots.values().filter(|s| matches!(s.state, State::Running));
        let (mut all, mut theirs) = (0, 0);
        for slot in running {
            all += 1;
            theirs += usize::from(slot.executor == executor);
        }
        all < IN_FLIGHT && theirs < PER_EXECUTOR
    }

    /// Drops the oldest finished slot (running ones are bounded by
    /// [`IN_FLIGHT`]).
    fn evict(slots: &mut HashMap<String, Slot>) {
        let oldest = slots
            .iter()
            .filter_map(|(uri, s)| match s.state {
                State::Failed { at, .. } => Some((at, uri.clone())),
                State::Running => None,
            })
            .min();
        if let Some((_, uri)) = oldest {
            slots.remove(&uri);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use tessera_bindings::envelope::{BlobHash, BlobStore, MemoryBlobStore};

    use super::*;

    /// A server that accepts and never answers.
    async fn tarpit() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        format!("http://{addr}/blobs")
    }

    fn sources() -> (BlobSources, BlobSources, Arc<MemoryBlobStore>) {
        let store = Arc::new(MemoryBlobStore::new());
        // The test's servers are on loopback: hints there are allowed.
        let remote = BlobSources::new(store.clone()).allow_private_hints(true);
        let local = remote.clone().follow_hints(false);
        (local, remote, store)
    }

    #[tokio::test]
    async fn one_executors_silent_hints_take_at_most_its_share_of_fetches() {
        let (local, remote, _) = sources();
        let hint = tarpit().await;
        let reach = Reach::default();
        let (hostile, honest) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let uri = |i: u32| format!("sha256:{}?src={hint}", BlobHash::of(&i.to_be_bytes()));
        for i in 0..5 {
            let read = reach.read(&local, &remote, &uri(i), hostile).await;
            assert!(matches!(read, Read::Pending { last: None }), "{read:?}");
        }
        assert_eq!(reach.running(), PER_EXECUTOR, "the rest wait for a later look");
        // Another executor's result is fetched at once.
        let read = reach.read(&local, &remote, &uri(99), honest).await;
        assert!(matches!(read, Read::Pending { .. }), "{read:?}");
        assert_eq!(reach.running(), PER_EXECUTOR + 1);
    }

    #[tokio::test]
    async fn a_local_result_is_ready_and_a_missing_one_is_gone_for_good() {
        let (local, remote, store) = sources();
        let reach = Reach::default();
        let exec = Address::repeat_byte(3);
        let hash = store.put(br#"{"text":"kept"}"#).unwrap();
        let read = reach.read(&local, &remote, &format!("sha256:{hash}"), exec).await;
        assert!(matches!(read, Read::Ready(ref b) if b == br#"{"text":"kept"}"#), "{read:?}");
        // No hint, no gateway: nowhere to look, and looking again will not help.
        let missing = format!("sha256:{}", BlobHash::of(b"nobody has it"));
        assert!(matches!(reach.read(&local, &remote, &missing, exec).await, Read::Pending { .. }));
        let mut waited = 0;
        let gone = loop {
            match reach.read(&local, &remote, &missing, exec).await {
                Read::Gone(why) => break why,
                _ if waited < 100 => waited += 1,
                other => panic!("never gone: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(gone, Unreadable::NotFound);
        assert_eq!(reach.running(), 0);
        // A malformed URI is refused at once.
        assert!(matches!(
            reach.read(&local, &remote, "sha256:zz", exec).await,
            Read::Gone(Unreadable::Malformed)
        ));
    }
}
