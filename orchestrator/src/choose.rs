//! Choosing executors on the chain's offers and the agents' records: the
//! registry says who offers a capability at what price (and whether they
//! are active), an [`AgentRecords`] source says what their settled tasks
//! show, and [`crate::select`] scores them.
//!
//! The records come from the indexer ([`IndexStore`] implements
//! [`AgentRecords`]); an orchestrator without a source gives every agent the
//! empty record (the prior only), so every policy then picks the cheapest.
//! A record that cannot be read is logged and taken as empty: a choice never
//! fails because the index is behind or down.

use std::{collections::HashMap, future::Future, pin::Pin};

use alloy::primitives::Address;
use tessera_bindings::{AgentRegistry, capability, offers, usdc::Usdc};
use tessera_indexer::{IndexStore, store::AgentStats};

use crate::{
    plan::{Choice, Plan, PlanError, Selection},
    runner::{Orchestrator, RunError},
    select::{self, AgentRecord, Limits, Offer},
    state::Run,
};

/// Most offers of one capability that are scored: the cheapest eligible
/// ones (each needs a record read). An offer beyond them is never chosen.
pub const MAX_SCORED: usize = 64;

/// Why a record could not be read.
pub type RecordsError = Box<dyn std::error::Error + Send + Sync>;

/// A record being read.
pub type RecordFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AgentRecord, RecordsError>> + Send + 'a>>;

/// Where agents' records come from.
pub trait AgentRecords: Send + Sync {
    /// What `agent`'s settled tasks show, weighed for `sponsor` (its own
    /// tasks count double, see [`tessera_indexer::store::evidence`]); the
    /// empty record when it has none.
    fn record(&self, agent: Address, sponsor: Address) -> RecordFuture<'_>;
}

impl AgentRecords for IndexStore {
    fn record(&self, agent: Address, sponsor: Address) -> RecordFuture<'_> {
        Box::pin(async move {
            let Some(view) = self.agent(&agent.to_string()).await? else {
                return Ok(AgentRecord::default());
            };
            let mut record = record_of(&view.stats);
            record.weight = self.evidence(&view.agent, Some(&sponsor.to_string())).await?;
            Ok(record)
        })
    }
}

/// Fixed records (tests, or a snapshot); an agent not listed has none.
impl AgentRecords for HashMap<Address, AgentRecord> {
    fn record(&self, agent: Address, _sponsor: Address) -> RecordFuture<'_> {
        let record = self.get(&agent).copied().unwrap_or_default();
        Box::pin(async move { Ok(record) })
    }
}

/// The record the indexer's statistics give: completed (paid or split),
/// disputes lost (refunded) and expired tasks, the median delivery time,
/// and the same tasks weighed with no sponsor's own history.
/// Declines are not counted, as cancels are not: an executor that says no
/// at once costs the sponsor a block, not a deadline, and should not be
/// taught to let a task expire instead.
pub fn record_of(stats: &AgentStats) -> AgentRecord {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    AgentRecord {
        completed: count(stats.completed),
        refunded: count(stats.refunded),
        expired: count(stats.expired),
        median_completion_secs: stats.median_completion_secs.and_then(|m| u64::try_from(m).ok()),
        weight: stats.evidence,
    }
}

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
            })
            .filter(|o| limits.admits(o))
            .collect();
        candidates.sort_by_key(|o| (o.price, o.agent));
        candidates.truncate(MAX_SCORED);
        if let Some(records) = self.records() {
            let sponsor = self.chain().sponsor();
            let reads = candidates.iter().map(|o| records.record(o.agent, sponsor));
            let read = futures_util::future::join_all(reads).await;
            for (offer, record) in candidates.iter_mut().zip(read) {
                match record {
                    Ok(r) => offer.record = r,
                    Err(error) => {
                        tracing::warn!(agent = %offer.agent, %error, "agent record unreadable; prior only");
                    }
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
            let besides = task.executor.map(|e| format!(" besides {e}")).unwrap_or_default();
            RunError::Invalid(format!(
                "no other active agent offers {:?} for sub-task {index}{besides}",
                task.capability
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::Evidence;

    #[test]
    fn index_stats_read_as_records() {
        let stats = AgentStats {
            tasks: 9,
            completed: 4,
            disputed: 2,
            refunded: 1,
            expired: 3,
            declined: 5,
            earnings: Usdc::ZERO,
            median_accept_secs: Some(2),
            median_completion_secs: Some(7),
            success_rate: Some(0.5),
            evidence: Evidence { completed: 1.5, failed: 0.5, funders: 2, ..Evidence::default() },
        };
        let r = record_of(&stats);
        assert_eq!(
            r,
            AgentRecord {
                completed: 4,
                refunded: 1,
                expired: 3,
                median_completion_secs: Some(7),
                weight: stats.evidence,
            }
        );
        assert_eq!(r.settled(), 8);
        let odd = AgentStats { completed: -1, median_completion_secs: Some(-5), ..stats };
        assert_eq!(record_of(&odd).completed, 0);
        assert_eq!(record_of(&odd).median_completion_secs, None);
    }

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
