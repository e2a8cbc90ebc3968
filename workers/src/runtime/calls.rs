//! A brain's calls off the pass: a handler is the operator's code, so it
//! may be slow, hang or never answer. A pass never waits on one: a task
//! whose brain runs off the pass ([`crate::brain::Brain::inline`] false)
//! is handed here, its call runs in the background, and the task is
//! delivered, declined or its children hired once the answer is in — the
//! same shape as the blob fetches of [`super::fetching`].
//!
//! Bounds: at most [`IN_FLIGHT`] calls at once per worker (the others
//! queue, in task order), at most [`MAX_JOBS`] tasks waiting here (beyond
//! it a task is looked at again next pass). Each call is bounded by its
//! request's `timeout_ms`, cut at launch to the time left before the
//! task's deadline less [`HANDLER_MARGIN_SECS`] (kept to publish the
//! result or the decline); a task whose time ran out in the queue is
//! declined without a call. A pass waits at most [`GRACE`] for the calls
//! it started itself, never for older ones; the worker's loop wakes when
//! a call ends.
//!
//! A call still running [`ACCEPT_AFTER`] after it started has its task
//! accepted on chain (when it is still only created): the sponsor then
//! sees the agent at work, and the plan's accept window (counted in
//! blocks, see the orchestrator) does not cancel it for silence.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use alloy::primitives::U256;
use tessera_bindings::task::{Status, TaskRecord};
use tokio::{task::AbortHandle, time::Instant};

pub use super::inbox::GRACE;
use super::inbox::Inbox;
use crate::brain::{self, Brain, HandlerRequest, Verdict};

/// Calls in flight at once, per worker.
pub const IN_FLIGHT: usize = 4;
/// Tasks waiting for a call, at most.
pub const MAX_JOBS: usize = 1024;
/// Seconds before a task's deadline kept for publishing what the handler
/// answered (or declining): its calls end this long before.
pub const HANDLER_MARGIN_SECS: u64 = 30;
/// How long a handler runs before its task is accepted on chain.
pub const ACCEPT_AFTER: Duration = Duration::from_secs(10);

/// One task waiting for its brain's answer.
#[derive(Debug)]
struct Job {
    rec: TaskRecord,
    request: HandlerRequest,
    /// No call runs past this (the deadline less the margin).
    end: Instant,
    running: Option<AbortHandle>,
    /// When its call started.
    started: Option<Instant>,
    /// Whether it was offered for acceptance ([`Calls::slow`]).
    claimed: bool,
}

/// The tasks waiting for their brain, and its calls.
#[derive(Debug, Default)]
pub(super) struct Calls {
    jobs: BTreeMap<U256, Job>,
    /// Where the calls' answers land.
    pub(super) done: Inbox<Verdict>,
}

impl Calls {
    /// Task `rec` waits for the answer to `request`, which must come
    /// before `end`; false when too many tasks wait already (look again
    /// next pass).
    pub(super) fn want(&mut self, rec: TaskRecord, request: HandlerRequest, end: Instant) -> bool {
        if self.jobs.contains_key(&rec.id) {
            return true;
        }
        if self.jobs.len() >= MAX_JOBS {
            return false;
        }
        self.jobs.insert(
            rec.id,
            Job { rec, request, end, running: None, started: None, claimed: false },
        );
        true
    }

    /// Whether task `id` waits here.
    pub(super) fn has(&self, id: U256) -> bool {
        self.jobs.contains_key(&id)
    }

    /// Stops waiting for task `id` (it settled or moved); its call is dropped.
    pub(super) fn forget(&mut self, id: U256) {
        if let Some(job) = self.jobs.remove(&id)
            && let Some(h) = job.running
        {
            h.abort();
        }
    }

    /// Starts the queued calls the bound allows; how many it started.
    pub(super) fn launch(&mut self, brain: &Arc<dyn Brain>) -> usize {
        let mut in_flight = self.jobs.values().filter(|j| j.running.is_some()).count();
        let now = Instant::now();
        let mut started = 0;
        for (id, job) in &mut self.jobs {
            if in_flight >= IN_FLIGHT {
                break;
            }
            if job.running.is_some() {
                continue;
            }
            let id = *id;
            let left = job.end.saturating_duration_since(now);
            let mut request = job.request.clone();
            let asked = Duration::from_millis(request.limits.timeout_ms);
            request.limits.timeout_ms = u64::try_from(asked.min(left).as_millis()).unwrap_or(0);
            let brain = Arc::clone(brain);
            let handle = self.done.spawn(id, async move {
                if request.limits.timeout_ms == 0 {
                    Verdict::Decline(format!(
                        "{} not asked: too close to the task's deadline",
                        brain.label()
                    ))
                } else {
                    brain::think(brain.as_ref(), &request).await
                }
            });
            tracing::debug!(task = %id, timeout_ms = job.request.limits.timeout_ms, "asking the handler");
            job.running = Some(handle);
            job.started = Some(now);
            in_flight += 1;
            started += 1;
        }
        started
    }

    /// The tasks still only created whose call has run `after` or longer
    /// at `now`, each given once: to accept on chain while the handler
    /// works.
    pub(super) fn slow(&mut self, now: Instant, after: Duration) -> Vec<TaskRecord> {
        self.jobs
            .values_mut()
            .filter(|j| !j.claimed && j.rec.status() == Status::Created)
            .filter(|j| j.started.is_some_and(|s| now.saturating_duration_since(s) >= after))
            .map(|j| {
                j.claimed = true;
                j.rec.clone()
            })
            .collect()
    }

    /// Task `rec` was accepted on chain: its job delivers on that record.
    pub(super) fn accepted(&mut self, rec: TaskRecord) {
        if let Some(job) = self.jobs.get_mut(&rec.id) {
            job.rec = rec;
        }
    }

    /// Waits up to [`GRACE`] for calls to end, when `started` were
    /// started this pass (older ones are never waited for).
    pub(super) async fn grace(&self, started: usize) {
        self.done.grace(started).await;
    }

    /// The tasks whose answer is in, with the capability asked and what to
    /// do with each.
    pub(super) fn collect(&mut self) -> Vec<(TaskRecord, String, Verdict)> {
        self.done
            .take()
            .into_iter()
            .filter_map(|(id, verdict)| {
                self.jobs.remove(&id).map(|job| (job.rec, job.request.task.capability, verdict))
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "calls_tests.rs"]
mod tests;
