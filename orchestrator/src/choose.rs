//! Choosing executors on the chain's offers and the agents' records: the
//! registry says who offers a capability at what price (and whether they
//! are active), an [`AgentRecords`] source says what their settled tasks
//! show, and [`crate::select`] scores them.
//!
//! The records come from the indexer (its store implements
//! [`AgentRecords`], handed in with [`Orchestrator::with_records`]); an
//! orchestrator without a source gives every agent the
//! empty record (the prior only), so every policy then picks the cheapest.
//! A record that cannot be read is logged and taken as empty: a choice never
//! fails because the index is behind or down.
//!
//! With records, agents seen working in the last day of chain time (a
//! task accepted, delivered or declined) rank before quiet ones under every
//! policy: a registered agent nobody runs is chosen only when no live one
//! offers the capability, and the choice then says so.

use alloy::primitives::Address;
use tessera_bindings::{AgentRegistry, capability, offers, usdc::Usdc};
pub use tessera_records::{AgentRecords, RecordFuture, RecordsError};

use crate::{
    plan::{Choice, Plan, PlanError, Selection},
    runner::{Orchestrator, Refusal, RunError},
    select::{self, AgentRecord, Limits, Offer},
    state::Run,
};

/// Most offers of one capability that are scored: the cheapest eligible
/// ones (each needs a record read). An offer beyond them is never chosen.
pub const MAX_SCORED: usize = 64;

impl Orchestrator {
    /// The executor `policy` picks for sub-task `index` of `capability`
    /// among the registry's active offers (at most `max_price`, none of
    /// `exclude`), scored on each agent's record (see [`crate::select`]),
    /// with the reasons and the runner-up; `None` when no eligible agent
    /// offers it (or the capability name cannot be registered at all).
    pub async fn choose(
        &self,
        index: u32,
        capability: &str,
        policy: Selection,
        exclude: &[Address],
        max_price: Option<Usdc>,
    ) -> Result<Option<Choice>, RunError> {
        let Ok(word) = capability::encode(capability) else { return Ok(None) };
        let limits = Limits { exclude, max_price };
        let candidates = self.candidates(word, limits).await?;
        Ok(select::select(index, policy, &candidates, limits))
    }

    /// Every eligible agent offering `capability`, ranked by `policy` best
    /// first with the reasons (see [`select::explain`]): what
    /// [`Orchestrator::choose`] would pick, and why each other ranks where
    /// it does. Refused when the name cannot be a capability at all.
    pub async fn ranking(
        &self,
        capability: &str,
        policy: Selection,
    ) -> Result<Vec<select::Ranked>, RunError> {
        let word = capability::encode(capability)?;
        let limits = Limits::default();
        let candidates = self.candidates(word, limits).await?;
        Ok(select::explain(policy, &candidates, limits))
    }

    /// The registry's offers of capability `word` that `limits` admits, the
    /// cheapest [`MAX_SCORED`], each with its agent's record.
    async fn candidates(
        &self,
        word: alloy::primitives::B256,
        limits: Limits<'_>,
    ) -> Result<Vec<Offer>, RunError> {
        let registry =
            AgentRegistry::new(self.chain().deployment().agent_registry, self.chain().provider());
        let read = offers::offers_for(&registry, word, offers::DEFAULT_MAX_OFFERS).await?;
        let mut candidates: Vec<Offer> = read
            .offers
            .iter()
            .map(|o| Offer {
                agent: o.agent,
                price: Usdc::from_base_units(o.price),
                active: o.active,
                record: AgentRecord::default(),
                quiet: false,
            })
            .filter(|o| limits.admits(o))
            .collect();
        candidates.sort_by_key(|o| (o.price, o.agent));
        candidates.truncate(MAX_SCORED);
        if let Some(records) = self.records() {
            let sponsor = self.chain().sponsor();
            let now = self.chain().head().await?.timestamp;
            let reads = candidates.iter().map(|o| records.record(o.agent, sponsor));
            let read = futures_util::future::join_all(reads).await;
            for (offer, record) in candidates.iter_mut().zip(read) {
                match record {
                    Ok(r) => {
                        offer.record = r;
                        offer.quiet = !r.seen_recently(now);
                    }
                    Err(error) => {
                        tracing::warn!(agent = %offer.agent, %error, "agent record unreadable; prior only");
                    }
                }
            }
        }
        // A refusal of this sponsor's feedback by an approval game (see
        // `crate::feedback`) weighs as a task failed: whatever the
        // feedback would have said, the agent chose to shed it.
        for offer in &mut candidates {
            match self.store().approval_games(&offer.agent.to_string()).await {
                Ok(0) => {}
                Ok(n) => {
                    offer.record.refunded = offer.record.refunded.saturating_add(n);
                    offer.record.weight.failed += n as f64;
                }
                Err(error) => {
                    tracing::warn!(agent = %offer.agent, %error, "feedback ledger unreadable");
                }
            }
        }
        Ok(candidates)
    }

    /// Another executor for sub-task `index` of live run `id`, by `policy`:
    /// anyone but the current executor. Refused when no other active agent
    /// offers the capability.
    pub async fn choose_other(
        &self,
        id: impl Into<crate::state::RunId>,
        index: u32,
        policy: Selection,
    ) -> Result<Choice, RunError> {
        let id = &id.into();
        let row = self.store().run(id).await?.ok_or_else(|| RunError::NotFound(id.into()))?;
        let run = Run::from_row(&row)?;
        if !run.state.is_live() {
            return Err(RunError::wrong_state(id, run.state, "a decision"));
        }
        let plan = Plan::from_json(&row.plan_json)?;
        let task = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
        let exclude: Vec<Address> = task.executor.into_iter().collect();
        self.choose(index, &task.capability, policy, &exclude, None).await?.ok_or_else(|| {
            let capability = task.capability.clone();
            Refusal::NoOtherAgent { capability, index, besides: task.executor }.into()
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[tokio::test]
    async fn fixed_records_answer_per_agent() {
        let a = Address::repeat_byte(1);
        let known = AgentRecord { completed: 2, ..Default::default() };
        let records: HashMap<Address, AgentRecord> = [(a, known)].into();
        let source: &dyn AgentRecords = &records;
        assert_eq!(source.record(a, a).await.unwrap(), known);
        assert_eq!(source.record(Address::ZERO, a).await.unwrap(), AgentRecord::default());
    }
}
