//! One pass of the worker: the escrow's logs since the last (pushed by a
//! websocket feed, or read range by range with a
//! [`tessera_bindings::logs::LogScan`]), what each says about the tasks
//! assigned to this worker and the children it funded, and the payments
//! of delivered work that came due.

use alloy::{
    primitives::U256,
    providers::Provider,
    rpc::types::{Filter, Log},
    sol_types::SolEvent,
};
use tessera_bindings::{
    TaskEscrow,
    TaskEscrow::TaskEscrowEvents,
    feed::{FEED_CAPACITY, LogFeed},
    logs::Chunk,
    task::{Status, TaskRecord, decode_log},
};

use super::{Handled, RuntimeError, Worker, delegation::ChildLog, fetching::Outcome};

/// A log subscription and the blocks it serves.
pub(super) struct Feed {
    pub(super) logs: LogFeed,
    /// The first block whose logs come from the feed (earlier ones were
    /// read in ranges).
    pub(super) from: u64,
    /// Where to read ranges from if the feed ends: the block of the last
    /// log taken from it.
    pub(super) floor: u64,
}

impl Worker {
    /// The escrow's logs a worker follows: creations, deliveries (for the
    /// inputs a dependent task names), reassignments and settlements.
    fn filter(&self) -> Filter {
        Filter::new().address(self.deployment.task_escrow).event_signature(vec![
            TaskEscrow::TaskCreated::SIGNATURE_HASH,
            TaskEscrow::TaskCompleted::SIGNATURE_HASH,
            TaskEscrow::TaskReassigned::SIGNATURE_HASH,
            TaskEscrow::TaskSettled::SIGNATURE_HASH,
        ])
    }

    /// Follows the escrow's logs pushed over the websocket at `ws_url`
    /// instead of asking for each block's: blocks up to the head at the
    /// moment of subscribing are still read in ranges, later ones come from
    /// the feed, which ends when more than `capacity` logs wait (then ranges
    /// are read again from the block of the last log taken). Without the
    /// subscription, ranges it is. [`Worker::run`] calls this with
    /// [`FEED_CAPACITY`].
    pub async fn subscribe_logs(&mut self, ws_url: &str, capacity: usize) {
        let filter = self.filter();
        let subscribed = async {
            let feed = LogFeed::subscribe(ws_url, &filter, capacity).await?;
            let at = self.provider.get_block_number().await?;
            Ok::<_, alloy::transports::TransportError>((feed, at))
        };
        match subscribed.await {
            Ok((logs, at)) => {
                tracing::info!(from = at + 1, "following the escrow's logs over websocket");
                self.feed = Some(Feed { logs, from: at + 1, floor: at + 1 });
            }
            Err(e) => tracing::warn!(error = %e, "no log subscription; reading log ranges"),
        }
    }

    /// Whether the escrow's logs come from a live subscription.
    pub fn following_logs(&self) -> bool {
        self.feed.is_some()
    }

    /// The logs to look at this pass, and whether they are fresh (the
    /// newest block alone, or pushed by the feed): a fresh creation is
    /// exactly what its event says; any other is read whole from the chain.
    async fn next_logs(&mut self) -> Result<(Vec<Log>, bool), RuntimeError> {
        if let Some(feed) = self.feed.as_mut()
            && self.scan.next_block() >= feed.from
        {
            match feed.logs.drain(FEED_CAPACITY) {
                Ok(logs) => {
                    let logs: Vec<Log> = logs
                        .into_iter()
                        .filter(|l| !l.removed && l.block_number.is_some_and(|b| b >= feed.from))
                        .collect();
                    if let Some(b) = logs.last().and_then(|l| l.block_number) {
                        feed.floor = feed.floor.max(b);
                    }
                    // Ranges were read up to where the feed starts.
                    self.caught_up = true;
                    return Ok((logs, true));
                }
                Err(ended) => {
                    // Read ranges again from the block of the last log taken.
                    tracing::warn!(error = %ended, from = feed.floor, "reading log ranges");
                    self.scan.seek(feed.floor);
                    self.feed = None;
                }
            }
        }
        let head = match self.head {
            Some(h) => h.number,
            None => self.provider.get_block_number().await?,
        };
        let filter = self.filter();
        // The one block left to read, whose bloom rules out every log the
        // worker follows: read as empty without asking (what an idle
        // worker costs is its head).
        if let Some(h) = self.head
            && h.number == self.scan.next_block()
            && !h.may_match(&filter)
        {
            self.scan.advance(h.number);
            self.caught_up = true;
            return Ok((Vec::new(), true));
        }
        // A bounded range: a worker far behind (restarted on a long chain)
        // catches up a chunk per pass.
        let Some(Chunk { from, to, logs }) = self.scan.next(&self.provider, &filter, head).await?
        else {
            return Ok((Vec::new(), false));
        };
        if to == head {
            self.caught_up = true;
        }
        Ok((logs, from == to))
    }

    /// Looks at new logs once: delivers every task newly assigned to this
    /// worker, and claims payment of delivered tasks whose review window passed.
    pub async fn poll_once(&mut self) -> Result<Vec<Handled>, RuntimeError> {
        let mut handled = Vec::new();
        let was_caught_up = self.caught_up;
        let (logs, fresh) = self.next_logs().await?;
        if self.caught_up && !was_caught_up {
            // Every child of an earlier life is known from this pass on.
            self.retry.append(&mut self.deferred);
        }
        self.born.clear();
        {
            let mut created: Vec<TaskRecord> = Vec::new();
            let mut ids: Vec<U256> = std::mem::take(&mut self.retry).into_iter().collect();
            let mut children = std::mem::take(&mut self.unadopted);
            for log in logs {
                let event = decode_log(&log);
                // Where tasks live, so reading one starts there, not at the deployment.
                if let (Some(ev), Some(block)) = (&event, log.block_number) {
                    match ev {
                        TaskEscrowEvents::TaskCreated(c) => {
                            self.escrow.note_birth(c.taskId, block);
                            if fresh {
                                self.born.insert(c.taskId);
                            }
                        }
                        ev => {
                            if let Some(id) = TaskRecord::event_task_id(ev) {
                                self.escrow.note_seen(id, block);
                            }
                        }
                    }
                }
                match event {
                    Some(TaskEscrowEvents::TaskCreated(ev)) if ev.task.executor == self.me => {
                        if fresh {
                            created.push(TaskRecord::from_created(&ev));
                        } else if !ids.contains(&ev.taskId) {
                            ids.push(ev.taskId);
                        }
                    }
                    // A child task this worker funded for part of its task.
                    Some(TaskEscrowEvents::TaskCreated(ev))
                        if ev.task.client == self.me
                            && ev.task.funder == self.me
                            && !ev.parentId.is_zero() =>
                    {
                        children.push(ChildLog {
                            child: ev.taskId,
                            parent: ev.parentId,
                            capability: ev.capability,
                            block: log.block_number.unwrap_or(self.deployment.deploy_block),
                        });
                    }
                    Some(TaskEscrowEvents::TaskCompleted(ev)) => {
                        self.note_delivery(ev.taskId, ev.resultURI);
                    }
                    Some(TaskEscrowEvents::TaskReassigned(ev)) => {
                        self.note_settled(ev.taskId);
                        created.retain(|r| r.id != ev.taskId);
                        if ev.newExecutor == self.me && !ids.contains(&ev.taskId) {
                            ids.push(ev.taskId);
                        }
                    }
                    Some(TaskEscrowEvents::TaskSettled(ev)) => {
                        // Settled: nothing left to do or claim; stop watching it.
                        self.note_settled(ev.taskId);
                        self.delivered.remove(&ev.taskId);
                        created.retain(|r| r.id != ev.taskId);
                        ids.retain(|id| *id != ev.taskId);
                    }
                    _ => {}
                }
            }
            // Children first: their own tasks are followed through them.
            for c in children {
                match self.adopt(c).await {
                    Ok(followed) => handled.extend(followed),
                    Err(e) => {
                        tracing::warn!(task = %c.parent, child = %c.child, error = %e, "reading a child task failed; will retry");
                        self.unadopted.push(c);
                    }
                }
            }
            // Tasks whose upstream delivered (or settled) since they were
            // kept, as they were kept: nothing else moved them.
            let now = self.head.map(|h| h.timestamp);
            created.extend(self.due_awaiting(now));
            // Every delivery and decline of the block goes out before any is
            // waited for.
            handled.extend(self.work_fresh(created).await);
            for id in ids {
                if self.delegations.contains_key(&id) || self.fetches.has(id) || self.calls.has(id)
                {
                    continue;
                }
                let rec = match self.escrow.fetch(id, self.deployment.deploy_block).await {
                    Ok(rec) => rec,
                    Err(e) => {
                        // One unreadable task must not hold up the others.
                        tracing::warn!(task = %id, error = %e, "reading task failed; will retry");
                        self.retry.insert(id);
                        continue;
                    }
                };
                // Accepted-by-me covers a worker restarted between accept and complete.
                let mine = rec.task.executor == self.me;
                if mine && matches!(rec.status(), Status::Created | Status::Accepted) {
                    // One failure (a decline or a delivery not sent) must
                    // not hold up the others: tried again next pass.
                    match self.work(rec).await {
                        Ok(done) => handled.extend(done),
                        Err(e) => {
                            tracing::warn!(task = %id, error = %e, "working on the task failed; will retry");
                            self.retry.insert(id);
                        }
                    }
                }
            }
        }
        handled.extend(self.fetched().await);
        handled.extend(self.answered().await);
        let (followed, settled) = self.advance_delegations().await?;
        handled.extend(followed);
        if settled {
            // Room under the cap: the tasks declined for it are looked at again.
            self.retry.append(&mut self.deferred);
        }
        handled.extend(self.release_due().await?);
        Ok(handled)
    }

    /// Starts the fetches the bounds allow, waits briefly for those just
    /// started, then works on the tasks whose blob arrived and declines
    /// those whose blob cannot be read (see [`super::fetching`]).
    async fn fetched(&mut self) -> Vec<Handled> {
        let started = self.fetches.launch(&self.sources);
        self.fetches.grace(started).await;
        let now = match self.head {
            Some(h) => Some(h.timestamp),
            None => self.chain_time().await.ok(),
        };
        let mut handled = Vec::new();
        for outcome in self.fetches.collect(now) {
            let (id, done) = match outcome {
                Outcome::Ready(rec) => (rec.id, self.work(*rec).await),
                Outcome::Unreadable(rec, reason) => {
                    (rec.id, self.decline(*rec, reason).await.map(|d| vec![d]))
                }
            };
            match done {
                Ok(done) => handled.extend(done),
                Err(e) => {
                    tracing::warn!(task = %id, error = %e, "working on the task failed; will retry");
                    self.retry.insert(id);
                }
            }
        }
        // Fetches freed by those that ended start now, not next pass.
        self.fetches.launch(&self.sources);
        handled
    }

    /// Claims payment of delivered tasks whose review window has passed.
    async fn release_due(&mut self) -> Result<Vec<Handled>, RuntimeError> {
        if self.delivered.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.chain_time().await?;
        let mut released = Vec::new();
        let ids: Vec<U256> = self.delivered.keys().copied().collect();
        for id in ids {
            let rec = &self.delivered[&id];
            let due = rec.task.updatedAt.to::<u64>() + u64::from(rec.task.reviewWindow);
            if now <= due {
                continue;
            }
            // The client may have approved or disputed since: act on the chain's state.
            let mut fresh = self.escrow.fetch(id, self.deployment.deploy_block).await?;
            if fresh.status() == Status::Completed {
                self.escrow.release(self.me, &mut fresh).await?;
                released.push(Handled::Released { task: id });
            }
            self.delivered.remove(&id);
        }
        Ok(released)
    }
}
