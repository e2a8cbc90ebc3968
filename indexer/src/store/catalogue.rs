//! The live capability catalogue as the index knows it
//! ([`tessera_bindings::catalogue`]): the active agents in registration
//! order (at most [`MAX_CATALOGUE_AGENTS`]), each one's card read from its
//! metadata URI (an invalid card is no card: its on-chain offers are still
//! listed), built into a [`Catalogue`], then each listed offerer's record
//! filled in as the executor choice weighs it, for no sponsor in particular
//! ([`IndexStore::offerer_record`]).
//!
//! Two caches keep this cheap:
//!
//! - parsed cards, by agent and the hash of its metadata URI: a card is
//!   parsed once per URI, and only the cards of the agents last listed are
//!   kept (so at most [`MAX_CATALOGUE_AGENTS`]);
//! - the whole catalogue, by the index's state (its last event, its last
//!   reorganisation, how far derivation has folded those events): it is
//!   built again only when something was indexed since.
//!
//! An agent that never had a task settled has the empty record (the prior
//! alone) without a query of its own, so a flood of fresh registrations
//! costs one query, not one per agent.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use alloy::primitives::{B256, keccak256};
use sqlx::Row;
use tessera_bindings::{
    card::AgentCard,
    catalogue::{Catalogue, CatalogueError, CatalogueFuture, CatalogueSource, ListedAgent},
};
use tessera_db::DbError;

use super::IndexStore;
use crate::derive::AgentStatus;

/// Most active agents a catalogue is built from (the first registered).
pub const MAX_CATALOGUE_AGENTS: i64 = 4096;

/// Statuses of a task that may count in its executor's record.
const SETTLED: &str = "status IN ('Paid', 'Split', 'Refunded', 'Expired', 'Declined')";

/// Where the index stands: a catalogue built at one mark holds until the
/// next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    /// The last stored event, `(block, log index)`.
    event: Option<(i64, i64)>,
    /// The last reorganisation journalled.
    reorg: Option<i64>,
    /// How far derivation folded, no further than past the last event's
    /// block (it moves on with every block, events or not).
    derived: Option<i64>,
}

/// The catalogue's caches (see the module docs).
#[derive(Debug, Default)]
pub(super) struct CatalogueCache {
    /// Cards by agent and metadata URI hash; `None` when the URI holds no
    /// valid card.
    cards: HashMap<(String, B256), Option<AgentCard>>,
    /// The last catalogue built, and the mark it was built at.
    built: Option<(Mark, Catalogue)>,
}

impl IndexStore {
    /// The live capability catalogue (see the module docs).
    pub async fn catalogue(&self) -> Result<Catalogue, DbError> {
        // Held while building: callers arriving meanwhile get the result.
        let mut cache = self.catalogue.lock().await;
        let mark = self.mark().await?;
        if let Some((at, catalogue)) = &cache.built
            && *at == mark
        {
            return Ok(catalogue.clone());
        }
        let rows = sqlx::query(&format!(
            "SELECT agent, metadata_uri, offers FROM ix_agents WHERE status = '{}' \
             ORDER BY registered_block, agent LIMIT {MAX_CATALOGUE_AGENTS}",
            AgentStatus::Active.as_str()
        ))
        .fetch_all(&self.api)
        .await?;
        let mut listed = Vec::with_capacity(rows.len());
        let mut seen = HashSet::with_capacity(rows.len());
        for r in &rows {
            let agent: String = r.try_get("agent")?;
            let uri: String = r.try_get("metadata_uri")?;
            let offers = offers_of(&agent, &r.try_get::<String, _>("offers")?)?;
            let key = (agent.clone(), keccak256(uri.as_bytes()));
            let card = cache
                .cards
                .entry(key.clone())
                .or_insert_with(|| AgentCard::from_uri(&uri).ok())
                .clone();
            seen.insert(key);
            listed.push(ListedAgent { agent, card, offers });
        }
        cache.cards.retain(|key, _| seen.contains(key));
        let mut catalogue = Catalogue::build(listed);
        self.fill_records(&mut catalogue).await?;
        cache.built = Some((mark, catalogue.clone()));
        Ok(catalogue)
    }

    /// Each listed offerer's record; the empty one, unread, for an agent
    /// that never had a task settled.
    async fn fill_records(&self, catalogue: &mut Catalogue) -> Result<(), DbError> {
        let listed: BTreeSet<String> = catalogue
            .entries
            .iter()
            .flat_map(|e| e.offerers.iter().map(|o| o.agent.to_lowercase()))
            .collect();
        if listed.is_empty() {
            return Ok(());
        }
        let with_history: HashSet<String> =
            sqlx::query(&format!("SELECT DISTINCT executor FROM ix_tasks WHERE {SETTLED}"))
                .fetch_all(&self.api)
                .await?
                .iter()
                .map(|r| r.try_get::<String, _>("executor").map(|a| a.to_lowercase()))
                .collect::<Result<_, _>>()?;
        let mut records = HashMap::with_capacity(listed.len());
        for agent in &listed {
            let record =
                if with_history.contains(agent) { self.offerer_record(agent).await? } else { None };
            records.insert(agent.clone(), record.unwrap_or_else(super::records::empty_record));
        }
        for entry in &mut catalogue.entries {
            for o in &mut entry.offerers {
                o.record = records.get(&o.agent.to_lowercase()).cloned();
            }
        }
        Ok(())
    }

    /// Where the index stands now (see [`Mark`]).
    async fn mark(&self) -> Result<Mark, DbError> {
        let last = "FROM ix_events ORDER BY block DESC, log_index DESC LIMIT 1";
        let row = sqlx::query(&format!(
            "SELECT (SELECT block {last}) AS block, (SELECT log_index {last}) AS log_index, \
               (SELECT MAX(seq) FROM ix_reorgs) AS reorg, \
               (SELECT next_block FROM ix_cursor WHERE id = 'derive') AS derived"
        ))
        .fetch_one(&self.api)
        .await?;
        let block: Option<i64> = row.try_get("block")?;
        let log_index: Option<i64> = row.try_get("log_index")?;
        let derived: Option<i64> = row.try_get("derived")?;
        Ok(Mark {
            event: block.zip(log_index),
            reorg: row.try_get("reorg")?,
            derived: block.zip(derived).map(|(b, d)| d.min(b + 1)),
        })
    }
}

/// An agent row's offers: capability → price in base units.
fn offers_of(agent: &str, column: &str) -> Result<BTreeMap<String, u128>, DbError> {
    let corrupt = |detail: String| DbError::Corrupt { table: "ix_agents", detail };
    let offers: BTreeMap<String, String> = serde_json::from_str(column)
        .map_err(|e| corrupt(format!("offers of {agent} {column:?}: {e}")))?;
    offers
        .into_iter()
        .map(|(name, price)| match price.parse::<u128>() {
            Ok(units) => Ok((name, units)),
            Err(_) => Err(corrupt(format!("offer {name} of {agent}: price {price:?}"))),
        })
        .collect()
}

/// The index as the orchestrator's catalogue source.
impl CatalogueSource for IndexStore {
    fn catalogue(&self) -> CatalogueFuture<'_> {
        Box::pin(async move {
            IndexStore::catalogue(self).await.map_err(|e| {
                // The cause stays in the log; callers are told what to do.
                tracing::warn!(error = %e, "the capability catalogue could not be read");
                CatalogueError(if e.is_overload() {
                    "the index is busy; try again".into()
                } else {
                    "the index's store failed; see its log".into()
                })
            })
        })
    }
}

#[cfg(test)]
#[path = "catalogue_tests.rs"]
mod tests;
