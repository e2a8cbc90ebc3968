//! One task assigned to the worker, looked at: its envelope read, the
//! offer and price checked, its brain asked (inline, or off the pass: see
//! [`super::calls`]), then delivered, declined on chain, its children
//! hired, waited on or left alone.

use alloy::primitives::U256;
use tessera_bindings::{
    capability,
    envelope::{EnvelopeError, FetchError},
    task::{Status, TaskRecord},
};
use tokio::time::Instant;

use super::{Handled, RuntimeError, Worker, decline, fetching, upstream};
use crate::brain::{self, HandlerRequest, Hire};

/// A task looked at: left alone, to decline on chain, its result ready to
/// deliver, children to hire first, or its brain to ask off the pass.
pub(super) enum Work {
    /// Left alone, off chain (see [`Handled::Declined`]).
    Leave(Handled),
    /// Cannot be done: declined on chain with the reason ([`Worker::decline`]).
    Decline {
        rec: Box<TaskRecord>,
        reason: String,
    },
    Deliver {
        rec: Box<TaskRecord>,
        result_uri: String,
    },
    /// Its brain asked for child tasks (see [`super::delegation`]).
    Hire {
        rec: Box<TaskRecord>,
        hires: Vec<Hire>,
    },
    /// Its named inputs' upstream tasks have not delivered: kept, nothing
    /// sent (see [`upstream`]).
    Wait {
        rec: Box<TaskRecord>,
        upstream: Vec<U256>,
    },
    /// A blob it needs is not here: fetched off the pass, nothing sent
    /// (see [`fetching`]).
    Fetch {
        rec: Box<TaskRecord>,
        uri: String,
        what: String,
    },
    /// Its brain is asked off the pass, before `end` (see [`super::calls`]).
    Ask {
        rec: Box<TaskRecord>,
        request: Box<HandlerRequest>,
        end: Instant,
    },
}

impl Worker {
    /// Asks its brain, then delivers (accept and complete in one call), or
    /// completes a task accepted before a restart — or declines it, on
    /// chain when it cannot be done, hires its children, or waits.
    pub(super) async fn work(&mut self, rec: TaskRecord) -> Result<Vec<Handled>, RuntimeError> {
        let work = self.prepare(rec).await?;
        self.execute(work).await
    }

    /// Does what `work` says.
    pub(super) async fn execute(&mut self, work: Work) -> Result<Vec<Handled>, RuntimeError> {
        match work {
            Work::Leave(done) => Ok(vec![done]),
            Work::Decline { rec, reason } => {
                let id = rec.id;
                let done = self.decline(*rec, reason).await?;
                self.hired.remove(&id);
                Ok(vec![done])
            }
            Work::Hire { rec, hires } => self.delegate(*rec, hires).await,
            Work::Wait { rec, upstream } => Ok(vec![self.wait_for(*rec, upstream)]),
            Work::Fetch { rec, uri, what } => Ok(vec![self.fetch_later(*rec, uri, what)]),
            Work::Ask { rec, request, end } => Ok(vec![self.ask_later(*rec, *request, end)]),
            Work::Deliver { rec, result_uri } => {
                let mut rec = *rec;
                let id = rec.id;
                if rec.status() == Status::Created {
                    // The work is done: accept and complete in one call.
                    self.escrow.deliver(self.me, &mut rec, &result_uri).await?;
                } else {
                    self.escrow.complete(self.me, &mut rec, &result_uri).await?;
                }
                match self.hired.remove(&id) {
                    Some(hired) => {
                        let paid: u128 =
                            hired.iter().filter_map(|h| h.paid.parse::<u128>().ok()).sum();
                        tracing::info!(
                            task = %id,
                            earned = rec.task.amount,
                            paid,
                            children = hired.len(),
                            "delivered with hired parts"
                        );
                    }
                    None => tracing::info!(task = %id, "delivered"),
                }
                self.delivered.insert(id, rec);
                Ok(vec![Handled::Delivered { task: id, result_uri }])
            }
        }
    }

    /// Looks at the task and asks its brain; or says why it cannot be done
    /// (to decline on chain), or why it is left alone. An error is
    /// transient (the node, a store): the task is looked at again next pass.
    pub(super) async fn prepare(&self, rec: TaskRecord) -> Result<Work, RuntimeError> {
        let id = rec.id;
        // Cannot be done: declined on chain (see [`Worker::decline`]).
        let decline = |rec: TaskRecord, reason: String| {
            tracing::warn!(task = %id, %reason, "cannot be done; declining");
            Ok(Work::Decline { rec: Box::new(rec), reason })
        };
        // Fetched from wherever it is (its hint, the gateways) off the
        // pass first (see [`fetching`]): a stranger's hint never holds up
        // the other tasks.
        if !fetching::is_local(&self.sources, &rec.spec_uri) {
            let uri = rec.spec_uri.clone();
            return Ok(Work::Fetch { rec: Box::new(rec), uri, what: "envelope".into() });
        }
        let envelope = match self.sources.decode(&rec.spec_uri).await {
            Ok(e) => e,
            // The local store's disk: tried next pass.
            Err(e) if e.is_transient() => return Err(RuntimeError::BlobUnavailable(Box::new(e))),
            // Malformed, tampered with: never readable here. The reason
            // names the category only.
            Err(e) => return decline(rec, fetching::unreadable("envelope", &e)),
        };
        let offer = match &envelope.capability {
            Some(name) => self.card.capability(name),
            None if self.card.capabilities.len() == 1 => self.card.capabilities.first(),
            None => return decline(rec, "the envelope names no capability".into()),
        };
        let Some(offer) = offer.cloned() else {
            let asked = envelope.capability.as_deref().unwrap_or_default();
            return decline(rec, format!("capability {asked:?} is not offered"));
        };
        // The escrow checked this worker's offer of the capability the task
        // was funded for; work for another one would be paid at the wrong price.
        if let Some(funded) = capability::decode(rec.capability)
            && funded != offer.name
        {
            let reason = format!(
                "the envelope asks for {} but the task was funded for {funded}",
                offer.name
            );
            return decline(rec, reason);
        }
        if rec.task.amount < offer.price.base_units() {
            let reason = format!(
                "pays {} but {} costs {}",
                rec.task.amount,
                offer.name,
                offer.price.base_units()
            );
            return decline(rec, reason);
        }
        let now = self.chain_time().await?;
        if now >= rec.task.deadline.to::<u64>() {
            // Its funder takes it back with refundExpired.
            return Ok(Work::Leave(decline::leave(id, "deadline passed".into())));
        }
        // Inputs named rather than carried: read from the upstream
        // deliveries, or waited for.
        let envelope = match self.resolve_inputs(envelope).await? {
            upstream::Resolved::Ready(envelope) => *envelope,
            upstream::Resolved::Wait(upstream) => {
                return Ok(Work::Wait { rec: Box::new(rec), upstream });
            }
            upstream::Resolved::Gone(reason) => {
                return Ok(Work::Leave(decline::leave(id, reason)));
            }
            upstream::Resolved::Unreadable(reason) => return decline(rec, reason),
            upstream::Resolved::Fetch { uri, what } => {
                return Ok(Work::Fetch { rec: Box::new(rec), uri, what });
            }
        };
        let request = self.request(&rec, &envelope, &offer, now);
        // The built-in runners answer at once, here; a handler is asked
        // off the pass.
        if self.brain.inline() {
            let verdict = brain::think(self.brain.as_ref(), &request).await;
            return self.judged(rec, &request.task.capability, verdict);
        }
        let left = rec.task.deadline.to::<u64>().saturating_sub(now);
        let usable = left.saturating_sub(super::calls::HANDLER_MARGIN_SECS);
        if usable == 0 {
            let reason = format!("too close to its deadline to ask the handler ({left} s left)");
            return decline(rec, reason);
        }
        let end = Instant::now() + std::time::Duration::from_secs(usable);
        Ok(Work::Ask { rec: Box::new(rec), request: Box::new(request), end })
    }

    /// Hands `rec` to the fetches off the pass until the blob at `uri` is
    /// here; looked at again next pass when too many tasks wait already.
    pub(super) fn fetch_later(&mut self, rec: TaskRecord, uri: String, what: String) -> Handled {
        let task = rec.id;
        if !self.fetches.want(rec, uri, what) {
            tracing::warn!(%task, "too many tasks wait for blobs; looking again next pass");
            self.retry.insert(task);
        }
        Handled::Fetching { task }
    }

    /// Publishes a result, content-addressed ones with this worker's hint.
    pub(super) fn store_result(&self, json: &serde_json::Value) -> Result<String, RuntimeError> {
        let bytes = serde_json::to_vec(json).expect("a JSON value serializes");
        self.sources.publish(&bytes).map_err(RuntimeError::Blob)
    }

    /// The JSON result behind `uri`, fetched from wherever it is: a source
    /// failing for now is [`RuntimeError::BlobUnavailable`], anything else
    /// (nowhere to be found, refused, not JSON) the inner error.
    pub(super) async fn fetch_result(
        &self,
        uri: &str,
    ) -> Result<Result<serde_json::Value, FetchError>, RuntimeError> {
        let bytes = match self.sources.fetch(uri).await {
            Ok(bytes) => bytes,
            Err(e) if e.is_transient() => return Err(RuntimeError::BlobUnavailable(Box::new(e))),
            Err(e) => return Ok(Err(e)),
        };
        Ok(serde_json::from_slice(&bytes).map_err(|e| FetchError::Refused {
            at: "the result".into(),
            reason: EnvelopeError::Json(e),
        }))
    }
}
