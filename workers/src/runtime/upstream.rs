//! Inputs named instead of carried: in a pipeline funded up front, a
//! dependent task's envelope names its upstream tasks (`inputs[].upstream`
//! and `task_id`, the output empty) and this worker reads their deliveries
//! from the escrow's `TaskCompleted` logs — or, for an upstream delivered
//! before it looked, from the task's own logs — then fetches each result
//! through its blob sources, hash-verified, and works.
//!
//! While an upstream has not delivered, the task waits in memory and the
//! worker sends nothing: it neither accepts nor declines. Accepting early
//! would buy nothing (the task is delivered with `deliver`, accept and
//! complete in one call) and would make failure dear: an accepted task can
//! no longer be cancelled by its funder, so an upstream that never
//! delivers would leave the dependant's money locked until its deadline
//! and cost this worker an acceptance it cannot honour. Left unaccepted,
//! it is the funder's to cancel and refund at once. The wait costs no
//! request while the log feed is live (the delivery arrives with the
//! logs), is bounded by the task's deadline (past it the task is dropped;
//! the funder takes its money back), and ends without a word when the
//! upstream settles without a delivery (declined, cancelled, expired): the
//! funder cancels the dependant.

use std::collections::BTreeSet;

use alloy::primitives::U256;
use tessera_bindings::{
    envelope::{Envelope, readable},
    task::{Status, TaskRecord},
};

use super::{Handled, RuntimeError, Worker};

/// Upstream deliveries kept in memory at most (see [`Worker::note_delivery`]).
pub(super) const MAX_DELIVERIES: usize = 1024;

/// A task waiting for its upstream deliveries.
#[derive(Debug)]
pub(super) struct Awaiting {
    /// The task as its creation (or last read) showed it.
    pub rec: TaskRecord,
    /// The upstream tasks not delivered when it was last looked at.
    pub upstream: Vec<U256>,
    /// One of them delivered or settled since: look again.
    pub due: bool,
}

/// What came of resolving an envelope's named inputs.
pub(super) enum Resolved {
    /// Every input has its output.
    Ready(Box<Envelope>),
    /// These upstream tasks have not delivered yet.
    Wait(Vec<U256>),
    /// An upstream ended without a delivery: left alone (its funder
    /// cancels this task).
    Gone(String),
    /// An upstream's delivery cannot be read here (not found, tampered
    /// with): declined on chain.
    Unreadable(String),
    /// An upstream's delivery is not here: fetched off the pass first.
    Fetch {
        /// Its URI.
        uri: String,
        /// What it is, for a reason.
        what: String,
    },
}

impl Worker {
    /// Fills in the outputs `envelope` names rather than carries, from
    /// the upstream tasks' deliveries. An error is transient (the node, a
    /// blob source): tried again next pass.
    pub(super) async fn resolve_inputs(
        &self,
        mut envelope: Envelope,
    ) -> Result<Resolved, RuntimeError> {
        let mut wait = Vec::new();
        for input in &mut envelope.inputs {
            let Some(named) = input.unresolved() else { continue };
            let Ok(task) = named.parse::<U256>() else {
                return Ok(Resolved::Unreadable(format!("upstream task {named:?} is no task id")));
            };
            let uri = match self.deliveries.get(&task) {
                Some(uri) => uri.clone(),
                // Created in the batch this pass took: not delivered yet.
                None if self.born.contains(&task) => {
                    wait.push(task);
                    continue;
                }
                None => {
                    let rec = self.escrow.fetch(task, self.deployment.deploy_block).await?;
                    match (rec.status(), rec.result_uri) {
                        (Status::Completed | Status::Paid | Status::Split, Some(uri)) => uri,
                        (Status::Created | Status::Accepted, _) => {
                            wait.push(task);
                            continue;
                        }
                        (status, _) => {
                            return Ok(Resolved::Gone(format!(
                                "upstream task {task} ended {status} without a delivery"
                            )));
                        }
                    }
                }
            };
            // The URI is the escrow's (its log, or checked against the
            // task's stored hash); a content-addressed blob is checked
            // against its hash as it is fetched, off the pass.
            let what = format!("upstream task {task}'s result");
            if !super::fetching::is_local(&self.sources, &uri) {
                return Ok(Resolved::Fetch { uri, what });
            }
            let bytes = match self.sources.fetch(&uri).await {
                Ok(bytes) => bytes,
                Err(e) if e.is_transient() => {
                    return Err(RuntimeError::BlobUnavailable(Box::new(e)));
                }
                Err(e) => {
                    return Ok(Resolved::Unreadable(super::fetching::unreadable(&what, &e)));
                }
            };
            input.output = match serde_json::from_slice(&bytes) {
                Ok(v) => readable(&v),
                Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
            };
        }
        if wait.is_empty() {
            Ok(Resolved::Ready(Box::new(envelope)))
        } else {
            Ok(Resolved::Wait(wait))
        }
    }

    /// Keeps `rec` until its `upstream` tasks deliver; nothing is sent.
    pub(super) fn wait_for(&mut self, rec: TaskRecord, upstream: Vec<U256>) -> Handled {
        let task = rec.id;
        tracing::info!(%task, ?upstream, "waiting for upstream deliveries; nothing sent");
        self.awaiting.insert(task, Awaiting { rec, upstream: upstream.clone(), due: false });
        Handled::Waiting { task, upstream }
    }

    /// A `TaskCompleted` log: task `id` delivered `uri`.
    /// Kept only while a waiting task names it, and at most
    /// [`MAX_DELIVERIES`] (the oldest task ids go first): any other is read
    /// from the chain when a task asks for it.
    pub(super) fn note_delivery(&mut self, id: U256, uri: String) {
        self.born.remove(&id);
        if !self.awaiting.values().any(|w| w.upstream.contains(&id)) {
            return;
        }
        self.wake_awaiting(id);
        self.deliveries.insert(id, uri);
        while self.deliveries.len() > MAX_DELIVERIES {
            self.deliveries.pop_first();
        }
    }

    /// A `TaskSettled` or `TaskReassigned` log of task `id`: no longer
    /// this worker's to wait on if it was its own; looked at again by
    /// those waiting on it (it may have settled without a delivery).
    pub(super) fn note_settled(&mut self, id: U256) {
        self.awaiting.remove(&id);
        self.fetches.forget(id);
        self.calls.forget(id);
        self.hired.remove(&id);
        self.deliveries.remove(&id);
        self.born.remove(&id);
        self.wake_awaiting(id);
    }

    fn wake_awaiting(&mut self, upstream: U256) {
        for waiting in self.awaiting.values_mut().filter(|w| w.upstream.contains(&upstream)) {
            waiting.due = true;
        }
    }

    /// The waiting tasks to look at again this pass (one of their
    /// upstreams moved), as they were kept; those past their deadline at
    /// chain time `now` are dropped (their funder takes the money back).
    pub(super) fn due_awaiting(&mut self, now: Option<u64>) -> Vec<TaskRecord> {
        if let Some(now) = now {
            self.awaiting.retain(|task, w| {
                let live = now < w.rec.task.deadline.to::<u64>();
                if !live {
                    tracing::info!(%task, "deadline passed while waiting for upstream deliveries");
                }
                live
            });
        }
        let due: BTreeSet<U256> =
            self.awaiting.iter().filter(|(_, w)| w.due).map(|(id, _)| *id).collect();
        due.iter().filter_map(|id| self.awaiting.remove(id)).map(|w| w.rec).collect()
    }
}
