//! The tasks created for this worker in the newest block (or pushed by the
//! log feed), exactly as their creation events say: every delivery and
//! every decline of the batch is sent before any is waited for, so they
//! land in one block.

use alloy::primitives::U256;
use tessera_bindings::{client::ClientError, sender::Pending, task::TaskRecord};

use super::{Handled, RuntimeError, Work, Worker, decline};

impl Worker {
    /// Works on the freshly created tasks `created`: runs each, sends its
    /// delivery or its decline, delegates or leaves it; then waits for what
    /// was sent. A task whose turn failed is read whole next pass.
    pub(super) async fn work_fresh(&mut self, created: Vec<TaskRecord>) -> Vec<Handled> {
        let mut handled = Vec::new();
        let mut deliveries: Vec<(TaskRecord, String, Pending)> = Vec::new();
        let mut declines: Vec<(U256, String, String, Pending)> = Vec::new();
        for rec in created {
            let id = rec.id;
            // Seen again while its delegated parts are out, its blob is
            // fetched or its handler asked: followed already.
            if self.delegations.contains_key(&id) || self.fetches.has(id) || self.calls.has(id) {
                continue;
            }
            let done = match self.prepare(rec).await {
                Ok(Work::Leave(done)) => Ok(vec![done]),
                Ok(Work::Decline { rec, reason }) => match self.ready(*rec, reason).await {
                    Ok(decline::Ready::Left(done)) => Ok(vec![done]),
                    Ok(decline::Ready::Send { rec, reason, reason_uri }) => {
                        match self.escrow.send_decline(self.me, &rec, &reason_uri).await {
                            Ok(pending) => {
                                declines.push((id, reason, reason_uri, pending));
                                Ok(Vec::new())
                            }
                            Err(e) => {
                                decline::sent(id, reason, reason_uri, Err(e)).map(|d| vec![d])
                            }
                        }
                    }
                    Err(e) => Err(e),
                },
                Ok(Work::Wait { rec, upstream }) => Ok(vec![self.wait_for(*rec, upstream)]),
                Ok(Work::Fetch { rec, uri, what }) => Ok(vec![self.fetch_later(*rec, uri, what)]),
                Ok(Work::Hire { rec, hires }) => self.delegate(*rec, hires).await,
                Ok(Work::Ask { rec, request, end }) => {
                    Ok(vec![self.ask_later(*rec, *request, end)])
                }
                Ok(Work::Deliver { rec, result_uri }) => {
                    match self.escrow.send_delivery(self.me, &rec, &result_uri).await {
                        Ok(pending) => {
                            deliveries.push((*rec, result_uri, pending));
                            Ok(Vec::new())
                        }
                        Err(e) => Err(e.into()),
                    }
                }
                Err(e) => Err(e),
            };
            self.record(id, done, &mut handled);
        }
        for (mut rec, result_uri, pending) in deliveries {
            let id = rec.id;
            let folded = match self.escrow.mined(pending).await {
                Ok(receipt) => rec
                    .apply_receipt(self.escrow.address(), &receipt)
                    .map_err(|e| RuntimeError::from(ClientError::from(e))),
                Err(e) => Err(e.into()),
            };
            let done = folded.map(|()| {
                tracing::info!(task = %id, "delivered");
                self.delivered.insert(id, rec);
                vec![Handled::Delivered { task: id, result_uri }]
            });
            self.record(id, done, &mut handled);
        }
        for (id, reason, reason_uri, pending) in declines {
            // A mined revert may be a record gone stale meanwhile: read
            // whole next pass.
            let result = self.escrow.mined(pending).await.map(drop);
            let done = decline::sent(id, reason, reason_uri, result).map(|d| vec![d]);
            self.record(id, done, &mut handled);
        }
        handled
    }

    /// Keeps what was done with task `id`, or marks it for another look
    /// next pass (read whole: the chain may have moved on).
    fn record(
        &mut self,
        id: U256,
        done: Result<Vec<Handled>, RuntimeError>,
        handled: &mut Vec<Handled>,
    ) {
        match done {
            Ok(done) => handled.extend(done),
            Err(e) => {
                tracing::warn!(task = %id, error = %e, "working on the task failed; will retry");
                self.retry.insert(id);
            }
        }
    }
}
