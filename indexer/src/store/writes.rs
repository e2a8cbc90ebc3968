//! Ingestion's writes: a batch's events and block hashes with the cursor
//! in one transaction (exactly once), the agents its registry events
//! touch, and the remembered block hashes.

use std::collections::BTreeSet;

use alloy::{primitives::B256, rpc::types::Log};
use sqlx::{Any, Row, Transaction};
use tessera_db::{Backend, DbError};

use super::{
    Applied, Batch, INSERT_CHUNK, IndexStore,
    codecs::{Columns, Param, classify, encode_raw, id_bytes, int, stored_content},
};
use crate::derive;

/// An event as `ix_events` stores it.
#[derive(Debug)]
pub(super) struct EventRow {
    block: u64,
    log_index: u64,
    block_hash: Vec<u8>,
    tx_hash: Vec<u8>,
    contract: &'static str,
    kind: &'static str,
    task_id: Option<Vec<u8>>,
    agent: Option<String>,
    /// A feedback's giver (its `clientAddress`), as 20 bytes.
    giver: Option<Vec<u8>>,
    raw: Vec<u8>,
}

impl EventRow {
    /// The row of `log`.
    fn of(log: &Log) -> Self {
        let (contract, kind, task, agent) = classify(log);
        let hash = |h: Option<B256>| h.map(|h| h.to_vec()).unwrap_or_default();
        Self {
            block: log.block_number.unwrap_or_default(),
            log_index: log.log_index.unwrap_or_default(),
            block_hash: hash(log.block_hash),
            tx_hash: hash(log.transaction_hash),
            contract,
            kind,
            task_id: task.map(id_bytes),
            agent,
            giver: super::codecs::feedback_giver(log),
            raw: encode_raw(log),
        }
    }
}

/// The columns of `ix_events`.
static EVENT_COLUMNS: Columns<EventRow> = Columns {
    table: "ix_events",
    columns: &[
        ("block", |e| Ok(Param::Int(int(e.block)?))),
        ("log_index", |e| Ok(Param::Int(int(e.log_index)?))),
        ("block_hash", |e| Ok(Param::Bytes(e.block_hash.clone()))),
        ("tx_hash", |e| Ok(Param::Bytes(e.tx_hash.clone()))),
        ("contract", |e| Ok(Param::Text(e.contract.to_owned()))),
        ("kind", |e| Ok(Param::Text(e.kind.to_owned()))),
        ("task_id", |e| Ok(Param::OptBytes(e.task_id.clone()))),
        ("agent", |e| Ok(Param::OptText(e.agent.clone()))),
        ("giver", |e| Ok(Param::OptBytes(e.giver.clone()))),
        ("raw", |e| Ok(Param::Bytes(e.raw.clone()))),
    ],
};

/// The columns of `ix_blocks`.
static BLOCK_COLUMNS: Columns<(u64, B256)> = Columns {
    table: "ix_blocks",
    columns: &[
        ("number", |(n, _)| Ok(Param::Int(int(*n)?))),
        ("hash", |(_, h)| Ok(Param::Text(h.to_string()))),
    ],
};

/// The columns of `ix_agents`.
static AGENT_COLUMNS: Columns<derive::AgentRow> = Columns {
    table: "ix_agents",
    columns: &[
        ("agent", |a| Ok(Param::Text(a.agent.clone()))),
        ("status", |a| Ok(Param::Text(a.status.as_str().to_owned()))),
        ("metadata_uri", |a| Ok(Param::Text(a.metadata_uri.clone()))),
        ("offers", |a| {
            Ok(Param::Text(serde_json::to_string(&a.offers).expect("offers serialize")))
        }),
        ("registered_block", |a| Ok(Param::Int(int(a.registered_block)?))),
    ],
};

impl IndexStore {
    /// Where ingestion resumes.
    pub async fn cursor(&self) -> Result<Option<u64>, DbError> {
        let row = sqlx::query("SELECT next_block FROM ix_cursor WHERE id = 'ingest'")
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<i64, _>("next_block")).transpose()?.map(|b| b as u64))
    }

    /// Stores a batch and moves the cursor past it in one transaction, with
    /// the agents its registry events touch. Tasks are folded by
    /// [`IndexStore::derive`].
    pub async fn apply(&self, batch: &Batch) -> Result<Applied, DbError> {
        let t0 = std::time::Instant::now();
        let mut tx = self.pool.begin().await?;
        let rows: Vec<EventRow> = batch.logs.iter().map(EventRow::of).collect();
        let agents: BTreeSet<String> = rows.iter().filter_map(|e| e.agent.clone()).collect();
        let mut stored = 0;
        for chunk in rows.chunks(INSERT_CHUNK) {
            let sql = EVENT_COLUMNS.insert(
                self.backend,
                chunk.len(),
                "ON CONFLICT (block, log_index) DO NOTHING",
            );
            let q = EVENT_COLUMNS.bind(sqlx::query(&sql), chunk)?;
            stored += q.execute(&mut *tx).await?.rows_affected() as usize;
        }
        for chunk in batch.hashes.chunks(INSERT_CHUNK) {
            let sql = BLOCK_COLUMNS.insert(
                self.backend,
                chunk.len(),
                &format!("ON CONFLICT (number) DO UPDATE SET {}", BLOCK_COLUMNS.updates()),
            );
            BLOCK_COLUMNS.bind(sqlx::query(&sql), chunk)?.execute(&mut *tx).await?;
        }
        // Deliveries of the new events, in their transaction: a crash
        // loses none and a replay of the batch enqueues none twice.
        let deliveries =
            if stored > 0 { self.enqueue_deliveries(&mut tx, &batch.logs).await? } else { 0 };
        set_cursor(&mut tx, "ingest", batch.to + 1).await?;
        let t1 = std::time::Instant::now();
        rebuild_agents(&mut tx, self.backend, &agents).await?;
        tx.commit().await?;
        if deliveries > 0 {
            self.outbox_wake();
        }
        tracing::debug!(
            insert_ms = (t1 - t0).as_millis(),
            commit_ms = t1.elapsed().as_millis(),
            events = stored,
            deliveries,
            "applied"
        );
        Ok(Applied { events: stored, deliveries })
    }

    /// Where derivation resumes: tasks touched by events below this block
    /// are folded.
    pub async fn derived(&self) -> Result<Option<u64>, DbError> {
        let row = sqlx::query("SELECT next_block FROM ix_cursor WHERE id = 'derive'")
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<i64, _>("next_block")).transpose()?.map(|b| b as u64))
    }

    /// The remembered hash of block `number`, if any.
    pub async fn block_hash(&self, number: u64) -> Result<Option<String>, DbError> {
        let row = sqlx::query("SELECT hash FROM ix_blocks WHERE number = $1")
            .bind(number as i64)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get("hash")).transpose()?)
    }

    /// Stored block hashes, newest first.
    pub async fn recent_blocks(&self, limit: i64) -> Result<Vec<(u64, String)>, DbError> {
        let rows = sqlx::query("SELECT number, hash FROM ix_blocks ORDER BY number DESC LIMIT $1")
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get::<i64, _>("number")? as u64, r.try_get("hash")?)))
            .collect()
    }

    /// Forgets block hashes below `keep_from` (older than the reorg depth),
    /// and the webhook deliveries done of events below it.
    pub async fn prune_blocks(&self, keep_from: u64) -> Result<(), DbError> {
        sqlx::query("DELETE FROM ix_blocks WHERE number < $1")
            .bind(keep_from as i64)
            .execute(&self.pool)
            .await?;
        self.prune_deliveries(keep_from).await
    }
}

pub(super) async fn set_cursor(
    tx: &mut Transaction<'_, Any>,
    id: &str,
    next: u64,
) -> Result<(), DbError> {
    sqlx::query(
        "INSERT INTO ix_cursor (id, next_block) VALUES ($1, $2) \
         ON CONFLICT (id) DO UPDATE SET next_block = excluded.next_block",
    )
    .bind(id)
    .bind(next as i64)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Folds `agents` again from their stored registry events.
pub(super) async fn rebuild_agents(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    agents: &BTreeSet<String>,
) -> Result<(), DbError> {
    // Reputation events are filed under `erc8004:<id>`, not an agent.
    for agent in agents.iter().filter(|a| a.starts_with("0x")) {
        let rows = sqlx::query(
            "SELECT block, log_index, raw FROM ix_events WHERE agent = $1 ORDER BY block, log_index",
        )
        .bind(agent)
        .fetch_all(&mut **tx)
        .await?;
        let logs: Vec<Log> = rows.iter().map(stored_content).collect::<Result<_, _>>()?;
        sqlx::query("DELETE FROM ix_agents WHERE agent = $1")
            .bind(agent)
            .execute(&mut **tx)
            .await?;
        if let Some(a) = derive::fold_agent(&logs) {
            let sql = AGENT_COLUMNS.insert(backend, 1, "");
            AGENT_COLUMNS.bind(sqlx::query(&sql), &[a])?.execute(&mut **tx).await?;
        }
    }
    Ok(())
}
