//! Asking a task's brain: the request built from the task and its
//! verified envelope ([`HandlerRequest`]), the answer turned into what the
//! worker does ([`Work`]), and the calls run off the pass collected.

use std::time::Duration;

use alloy::primitives::U256;
use serde_json::Value;
use tessera_bindings::{
    card::{CapabilityOffer, DEFAULT_HANDLER_TIMEOUT_SECS, Handler},
    describe,
    envelope::Envelope,
    task::TaskRecord,
};
use tokio::time::Instant;

use super::{Handled, RuntimeError, Work, Worker, calls::HANDLER_MARGIN_SECS};
use crate::brain::{
    Verdict,
    wire::{HandlerRequest, InputItem, Limits, MayHire, TaskInfo, WIRE_VERSION},
};

impl Worker {
    /// The request for task `rec` (its verified envelope `envelope`, asking
    /// for `offer`) at chain time `now`: with the results of the children
    /// hired for it, when there are. Its timeout is the card's, cut to the
    /// time left before the deadline less [`HANDLER_MARGIN_SECS`] (at least
    /// a second).
    pub(super) fn request(
        &self,
        rec: &TaskRecord,
        envelope: &Envelope,
        offer: &CapabilityOffer,
        now: u64,
    ) -> HandlerRequest {
        let card_timeout = self
            .card
            .handler
            .as_ref()
            .map_or(Duration::from_secs(DEFAULT_HANDLER_TIMEOUT_SECS), Handler::timeout);
        let left = rec.task.deadline.to::<u64>().saturating_sub(now);
        let usable = Duration::from_secs(left.saturating_sub(HANDLER_MARGIN_SECS).max(1));
        let timeout_ms = u64::try_from(card_timeout.min(usable).as_millis()).unwrap_or(u64::MAX);
        HandlerRequest {
            tessera: WIRE_VERSION,
            task: TaskInfo {
                id: rec.id.to_string(),
                capability: offer.name.clone(),
                amount: rec.task.amount.to_string(),
                funder: rec.task.funder.to_string(),
                client: rec.task.client.to_string(),
                plan: rec.plan_id.to_string(),
                parent: rec.parent_id.to_string(),
                deadline: rec.task.deadline.to::<u64>(),
                chain_id: self.deployment.chain_id,
            },
            spec: envelope.spec.clone(),
            source: envelope.source.clone(),
            inputs: envelope
                .inputs
                .iter()
                .map(|i| InputItem {
                    from: i.from,
                    task: i.task_id.clone(),
                    output: i.output.clone(),
                })
                .collect(),
            hired: self.hired.get(&rec.id).cloned(),
            limits: Limits {
                timeout_ms,
                max_answer_bytes: self.brain.max_answer_bytes(),
                may_hire: self
                    .card
                    .delegates
                    .iter()
                    .map(|d| MayHire {
                        capability: d.capability.clone(),
                        max_price: d.max_price.base_units().to_string(),
                    })
                    .collect(),
            },
            result_schema: offer.descriptor().result,
        }
    }

    /// What to do with task `rec` after its brain's checked answer: a
    /// result published (a built-in capability's tagged with its name, as
    /// the built-in runners tag theirs, so its buyers' checks read it),
    /// children to hire, or a decline on chain.
    pub(super) fn judged(
        &self,
        rec: TaskRecord,
        capability: &str,
        verdict: Verdict,
    ) -> Result<Work, RuntimeError> {
        match verdict {
            Verdict::Deliver(mut result) => {
                if describe::BUILTIN.contains(&capability)
                    && let Value::Object(map) = &mut result
                {
                    map.entry("capability").or_insert_with(|| Value::from(capability));
                }
                let result_uri = self.store_result(&result)?;
                tracing::info!(task = %rec.id, "work done");
                Ok(Work::Deliver { rec: Box::new(rec), result_uri })
            }
            Verdict::Hire(hires) => {
                tracing::info!(task = %rec.id, children = hires.len(), "the brain hires");
                Ok(Work::Hire { rec: Box::new(rec), hires })
            }
            Verdict::Decline(reason) => {
                tracing::warn!(task = %rec.id, %reason, "cannot be done; declining");
                Ok(Work::Decline { rec: Box::new(rec), reason })
            }
        }
    }

    /// Hands `rec` to the calls off the pass; looked at again next pass
    /// when too many tasks wait already.
    pub(super) fn ask_later(
        &mut self,
        rec: TaskRecord,
        request: HandlerRequest,
        end: Instant,
    ) -> Handled {
        let task = rec.id;
        if !self.calls.want(rec, request, end) {
            tracing::warn!(%task, "too many tasks wait for the handler; looking again next pass");
            self.retry.insert(task);
        }
        Handled::Asking { task }
    }

    /// Starts the calls the bound allows, waits briefly for those just
    /// started, then acts on every answer that came in.
    pub(super) async fn answered(&mut self) -> Vec<Handled> {
        let started = self.calls.launch(&self.brain);
        self.calls.grace(started).await;
        self.accept_slow().await;
        let mut handled = Vec::new();
        for (rec, capability, verdict) in self.calls.collect() {
            let id: U256 = rec.id;
            let done = match self.judged(rec, &capability, verdict) {
                Ok(work) => Box::pin(self.execute(work)).await,
                Err(e) => Err(e),
            };
            match done {
                Ok(done) => handled.extend(done),
                Err(e) => {
                    tracing::warn!(task = %id, error = %e, "acting on the handler's answer failed; will retry");
                    self.retry.insert(id);
                }
            }
        }
        // Calls freed by those that ended start now, not next pass.
        self.calls.launch(&self.brain);
        handled
    }

    /// Accepts on chain the tasks whose handler has worked
    /// [`super::calls::ACCEPT_AFTER`] without answering: a sign of life
    /// for the sponsor. A refusal (the task moved on) is logged, not retried.
    async fn accept_slow(&mut self) {
        for mut rec in self.calls.slow(Instant::now(), super::calls::ACCEPT_AFTER) {
            let task = rec.id;
            match self.escrow.accept(self.me, &mut rec).await {
                Ok(_) => {
                    tracing::info!(%task, "the handler is still working; accepted on chain");
                    self.calls.accepted(rec);
                }
                Err(error) => {
                    tracing::warn!(%task, %error, "accepting a task its handler works on failed")
                }
            }
        }
    }
}
