//! Where work a pass hands off lands: the blob fetches of
//! [`super::fetching`] and the brain calls of [`super::calls`] run in the
//! background, each posting its outcome here by task and waking the
//! worker's loop, and a pass takes what arrived.

use std::{
    future::Future,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use alloy::primitives::U256;
use tokio::{sync::Notify, task::AbortHandle, time::Instant};

/// The longest a pass waits for the work it started itself.
pub const GRACE: Duration = Duration::from_millis(500);

/// Outcomes of work run off the pass, by task, not taken yet.
#[derive(Debug)]
pub(super) struct Inbox<T> {
    done: Arc<Mutex<Vec<(U256, T)>>>,
    /// Woken when an outcome arrives.
    wake: Arc<Notify>,
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Self { done: Arc::default(), wake: Arc::default() }
    }
}

impl<T: Send + 'static> Inbox<T> {
    /// Runs `work` for task `id` in the background; its outcome lands here.
    pub(super) fn spawn(
        &self,
        id: U256,
        work: impl Future<Output = T> + Send + 'static,
    ) -> AbortHandle {
        let (done, wake) = (Arc::clone(&self.done), Arc::clone(&self.wake));
        tokio::spawn(async move {
            let outcome = work.await;
            done.lock().unwrap_or_else(PoisonError::into_inner).push((id, outcome));
            wake.notify_one();
        })
        .abort_handle()
    }

    /// Waits up to [`GRACE`] for outcomes, when `started` pieces of work
    /// were started this pass (older ones are never waited for).
    pub(super) async fn grace(&self, started: usize) {
        if started == 0 {
            return;
        }
        let until = Instant::now() + GRACE;
        loop {
            let arrived = self.done.lock().unwrap_or_else(PoisonError::into_inner).len();
            if arrived >= started || Instant::now() >= until {
                return;
            }
            let _ = tokio::time::timeout_at(until, self.wake.notified()).await;
        }
    }

    /// The outcomes arrived since last taken.
    pub(super) fn take(&self) -> Vec<(U256, T)> {
        std::mem::take(&mut *self.done.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// What wakes when an outcome arrives.
    pub(super) fn waker(&self) -> Arc<Notify> {
        Arc::clone(&self.wake)
    }
}
