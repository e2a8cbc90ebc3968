//! The reads GraphQL adds to the API's ([`crate::graphql`]): a page of
//! agent addresses, and a
//! disputed task's dispute as its events tell it (the client's reason, the
//! ruling, the appeal, the appeal's ruling), decoded from the stored logs.

use alloy::primitives::U256;
use sqlx::Row;
use tessera_bindings::{TaskEscrow::TaskEscrowEvents, task::decode_log};
use tessera_db::DbError;

use super::{
    IndexStore, MAX_LISTED,
    codecs::{bytes_hex, id_bytes, stored_content},
};

/// One dispute event of a task, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisputeEvent {
    /// The client disputed the result.
    Disputed {
        /// Who disputed.
        client: String,
        /// Why (URI).
        reason_uri: String,
        /// Chain time.
        at: u64,
    },
    /// The arbiter, or on appeal the appeal arbiter, ruled.
    Ruled {
        /// Whether this is the appeal's ruling (final).
        appeal: bool,
        /// Who ruled.
        arbiter: String,
        /// The executor's share, in basis points.
        executor_share_bps: u16,
        /// The ruling's rationale (URI).
        rationale_uri: String,
        /// Chain time.
        at: u64,
    },
    /// A party appealed the ruling.
    Appealed {
        /// Who appealed.
        appellant: String,
        /// Why (URI).
        reason_uri: String,
        /// Chain time.
        at: u64,
    },
}

/// A dispute event where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedDisputeEvent {
    /// Block.
    pub block: u64,
    /// Transaction hash (0x hex).
    pub tx_hash: String,
    /// The event.
    pub event: DisputeEvent,
}

impl IndexStore {
    /// Agent addresses by address, after `after`, one page of `limit`, of
    /// the agents in `status` when given, and the cursor of the next page
    /// when there is one.
    pub async fn agent_page(
        &self,
        after: Option<&str>,
        status: Option<crate::derive::AgentStatus>,
        limit: i64,
    ) -> Result<(Vec<String>, Option<String>), DbError> {
        let limit = limit.max(1);
        let rows = sqlx::query(&format!(
            "SELECT agent FROM ix_agents WHERE agent > $1 {} ORDER BY agent LIMIT {}",
            status.map_or(String::new(), |s| format!("AND status = '{}'", s.as_str())),
            limit + 1
        ))
        .bind(after.unwrap_or(""))
        .fetch_all(&self.api)
        .await?;
        let out: Vec<String> = rows.iter().map(|r| r.try_get("agent")).collect::<Result<_, _>>()?;
        Ok(super::queries::page_of(out, limit, Clone::clone))
    }

    /// The dispute events of task `id` (at most [`MAX_LISTED`]), in chain
    /// order.
    pub async fn dispute_events(&self, id: &str) -> Result<Vec<PlacedDisputeEvent>, DbError> {
        let Ok(key) = id.parse::<U256>() else { return Ok(Vec::new()) };
        let rows = sqlx::query(&format!(
            "SELECT block, log_index, tx_hash, raw FROM ix_events WHERE task_id = $1 \
             AND kind IN ('TaskDisputed', 'DisputeRuled', 'RulingAppealed', 'AppealRuled') \
             ORDER BY block, log_index LIMIT {MAX_LISTED}"
        ))
        .bind(id_bytes(key))
        .fetch_all(&self.api)
        .await?;
        let mut out = Vec::new();
        for r in &rows {
            let log = stored_content(r)?;
            let event = match decode_log(&log) {
                Some(TaskEscrowEvents::TaskDisputed(e)) => DisputeEvent::Disputed {
                    client: e.client.to_string(),
                    reason_uri: e.reasonURI,
                    at: e.at.to::<u64>(),
                },
                Some(TaskEscrowEvents::DisputeRuled(e)) => DisputeEvent::Ruled {
                    appeal: false,
                    arbiter: e.arbiter.to_string(),
                    executor_share_bps: e.executorShareBps,
                    rationale_uri: e.rationaleURI,
                    at: e.at.to::<u64>(),
                },
                Some(TaskEscrowEvents::RulingAppealed(e)) => DisputeEvent::Appealed {
                    appellant: e.appellant.to_string(),
                    reason_uri: e.reasonURI,
                    at: e.at.to::<u64>(),
                },
                Some(TaskEscrowEvents::AppealRuled(e)) => DisputeEvent::Ruled {
                    appeal: true,
                    arbiter: e.appealArbiter.to_string(),
                    executor_share_bps: e.executorShareBps,
                    rationale_uri: e.rationaleURI,
                    at: e.at.to::<u64>(),
                },
                _ => {
                    return Err(DbError::Corrupt {
                        table: "ix_events",
                        detail: format!("task {id}: a dispute event that does not decode"),
                    });
                }
            };
            out.push(PlacedDisputeEvent {
                block: u64::try_from(r.try_get::<i64, _>("block")?).unwrap_or(0),
                tx_hash: bytes_hex(&r.try_get::<Vec<u8>, _>("tx_hash")?),
                event,
            });
        }
        Ok(out)
    }
}
