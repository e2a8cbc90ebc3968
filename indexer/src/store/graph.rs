//! The reads GraphQL adds to the API's ([`crate::graphql`]): a task page
//! under every filter the schema offers, a page of agent addresses, and a
//! disputed task's dispute as its events tell it (the client's reason, the
//! ruling, the appeal, the appeal's ruling), decoded from the stored logs.

use alloy::primitives::U256;
use sqlx::Row;
use tessera_bindings::{TaskEscrow::TaskEscrowEvents, task::decode_log};
use tessera_db::DbError;

use super::{
    IndexStore, MAX_LISTED,
    codecs::{bytes_hex, id_bytes, stored_content},
    queries::listed_task_columns,
    rows::{TaskView, task_from_row},
};

/// Every filter of a task page; `None` is no filter. Values are checked by
/// the caller (the schema): addresses and plan ids as hex, ids as decimal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Status names, any of them (`Paid`, `Disputed`, …).
    pub status: Vec<String>,
    /// Executor address.
    pub executor: Option<String>,
    /// Client address.
    pub client: Option<String>,
    /// Funder address.
    pub funder: Option<String>,
    /// Plan id (0x + 64 hex).
    pub plan: Option<String>,
    /// Parent task id (decimal; `0` for roots).
    pub parent: Option<String>,
    /// Capability name, as the envelope names it.
    pub capability: Option<String>,
    /// Created at or after this block.
    pub created_block_from: Option<u64>,
    /// Created at or before this block.
    pub created_block_to: Option<u64>,
    /// Created at or after this chain time (seconds).
    pub created_at_from: Option<u64>,
    /// Created at or before this chain time (seconds).
    pub created_at_to: Option<u64>,
    /// Ever disputed, or never.
    pub disputed: Option<bool>,
    /// Continue after this task id (a previous page's end cursor).
    pub after: Option<String>,
    /// Page size (the caller bounds it).
    pub limit: i64,
}

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
    /// Tasks matching `q`, ordered by id, one page of `q.limit` and the
    /// cursor of the next page when there is one.
    pub async fn task_page(
        &self,
        q: &TaskQuery,
    ) -> Result<(Vec<TaskView>, Option<String>), DbError> {
        let limit = q.limit.max(1);
        let mut sql = format!("SELECT {} FROM ix_tasks WHERE 1 = 1", listed_task_columns(""));
        let mut texts: Vec<(usize, String)> = Vec::new();
        let mut ints: Vec<(usize, i64)> = Vec::new();
        let mut n = 0;
        if !q.status.is_empty() {
            let mut places = Vec::new();
            for st in &q.status {
                n += 1;
                places.push(format!("${n}"));
                texts.push((n, st.clone()));
            }
            sql.push_str(&format!(" AND status IN ({})", places.join(", ")));
        }
        let mut text = |sql: &mut String, cond: &str, v: String| {
            n += 1;
            sql.push_str(&format!(" AND {cond} ${n}"));
            texts.push((n, v));
        };
        if let Some(v) = &q.executor {
            text(&mut sql, "LOWER(executor) =", v.to_lowercase());
        }
        if let Some(v) = &q.client {
            text(&mut sql, "LOWER(client) =", v.to_lowercase());
        }
        if let Some(v) = &q.funder {
            text(&mut sql, "LOWER(funder) =", v.to_lowercase());
        }
        if let Some(v) = &q.plan {
            text(&mut sql, "plan_id =", v.to_lowercase());
        }
        if let Some(v) = &q.parent {
            text(&mut sql, "parent_id =", v.clone());
        }
        if let Some(v) = &q.capability {
            text(&mut sql, "capability =", v.clone());
        }
        if let Some(v) = &q.after {
            text(&mut sql, "task_id >", v.clone());
        }
        for (cond, v) in [
            ("created_block >=", q.created_block_from),
            ("created_block <=", q.created_block_to),
            ("created_at >=", q.created_at_from),
            ("created_at <=", q.created_at_to),
        ] {
            if let Some(v) = v {
                n += 1;
                sql.push_str(&format!(" AND {cond} ${n}"));
                ints.push((n, i64::try_from(v).unwrap_or(i64::MAX)));
            }
        }
        if let Some(d) = q.disputed {
            sql.push_str(&format!(" AND disputed = {}", i64::from(d)));
        }
        sql.push_str(&format!(" ORDER BY task_id LIMIT {}", limit + 1));
        // Binds in placeholder order, whatever their type.
        let mut all: Vec<(usize, Result<String, i64>)> = texts
            .into_iter()
            .map(|(i, v)| (i, Ok(v)))
            .chain(ints.into_iter().map(|(i, v)| (i, Err(v))))
            .collect();
        all.sort_by_key(|(i, _)| *i);
        let mut query = sqlx::query(&sql);
        for (_, v) in all {
            query = match v {
                Ok(s) => query.bind(s),
                Err(i) => query.bind(i),
            };
        }
        let rows = query.fetch_all(&self.api).await?;
        let mut out: Vec<TaskView> = rows.iter().map(task_from_row).collect::<Result<_, _>>()?;
        let next = if out.len() as i64 > limit {
            out.truncate(limit as usize);
            out.last().map(|t| t.task_id.clone())
        } else {
            None
        };
        Ok((out, next))
    }

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
        let mut out: Vec<String> =
            rows.iter().map(|r| r.try_get("agent")).collect::<Result<_, _>>()?;
        let next = if out.len() as i64 > limit {
            out.truncate(limit as usize);
            out.last().cloned()
        } else {
            None
        };
        Ok((out, next))
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
