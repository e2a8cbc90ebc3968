//! The index as a source of agents' records for the orchestrator's
//! choice ([`AgentRecords`]): each agent's statistics as an
//! [`AgentRecord`], weighed for the sponsor choosing; and the same record
//! weighed for no one, as the capability catalogue lists an offerer's
//! ([`IndexStore::offerer_record`]).

use alloy::primitives::Address;
use tessera_bindings::catalogue::OffererRecord;
use tessera_db::DbError;
use tessera_records::{AgentRecord, AgentRecords, RecordFuture};

use super::{AgentStats, IndexStore};

impl IndexStore {
    /// `agent`'s record as the catalogue lists it: its settled and
    /// completed tasks, and the reliability the executor choice scores,
    /// weighed for no sponsor in particular. `None` for an agent the index
    /// does not know.
    pub async fn offerer_record(&self, agent: &str) -> Result<Option<OffererRecord>, DbError> {
        Ok(self.agent(agent).await?.map(|view| offerer_record_of(&record_of(&view.stats))))
    }
}

/// What the catalogue shows of `record`.
pub fn offerer_record_of(record: &AgentRecord) -> OffererRecord {
    OffererRecord {
        settled: record.settled(),
        completed: record.completed,
        reliability: record.reliability(),
    }
}

/// The record of an agent no task was ever settled with: the prior alone.
pub(super) fn empty_record() -> OffererRecord {
    offerer_record_of(&AgentRecord::default())
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

/// The record the indexer's statistics give: completed (paid or split),
/// disputes lost (refunded) and expired tasks, the median delivery time,
/// and the same tasks weighed with no sponsor's own history.
/// Declines in time are not counted, as cancels are not: an executor that
/// says no at once costs the sponsor a block, not a deadline, and should
/// not be taught to let a task expire instead. A late decline (past the
/// deadline, or after acceptance past the grace share of the time to it:
/// [`tessera_records::decline_is_late`]) held the task as an expiry would
/// have, and is counted among the expired.
pub fn record_of(stats: &AgentStats) -> AgentRecord {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    AgentRecord {
        completed: count(stats.completed),
        refunded: count(stats.refunded),
        expired: count(stats.expired),
        median_completion_secs: stats.median_completion_secs.and_then(|m| u64::try_from(m).ok()),
        weight: stats.evidence,
        last_active_at: stats.last_active_at.and_then(|t| u64::try_from(t).ok()),
    }
}

#[cfg(test)]
mod tests {
    use tessera_bindings::usdc::Usdc;
    use tessera_records::evidence::Evidence;

    use super::*;

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
            last_active_at: Some(1_700),
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
                last_active_at: Some(1_700),
            }
        );
        assert_eq!(r.settled(), 8);
        let odd = AgentStats { completed: -1, median_completion_secs: Some(-5), ..stats };
        assert_eq!(record_of(&odd).completed, 0);
        assert_eq!(record_of(&odd).median_completion_secs, None);
    }
}
