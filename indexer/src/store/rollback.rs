//! Reorganisations: every event from the fork on removed, the tasks and
//! agents they touched rebuilt from what remains, the reorganisation
//! journalled, the cursor moved back, and every webhook delivery of an
//! event taken away retracted.

use std::collections::BTreeSet;

use sqlx::Row;
use tessera_bindings::envelope::BlobStore;
use tessera_db::{DbError, now_ms};

use super::{
    IndexStore, Reorg,
    codecs::{Columns, Param, id_decimal, int},
    derivation::rebuild_tasks,
    writes::{rebuild_agents, set_cursor},
};

/// The columns of `ix_reorgs`: a journal entry and when it was written.
static REORG_COLUMNS: Columns<(Reorg, i64)> = Columns {
    table: "ix_reorgs",
    columns: &[
        ("seq", |(r, _)| Ok(Param::Int(r.seq))),
        ("detected_head", |(r, _)| Ok(Param::Int(int(r.detected_head)?))),
        ("fork_block", |(r, _)| Ok(Param::Int(int(r.fork_block)?))),
        ("depth", |(r, _)| Ok(Param::Int(int(r.depth)?))),
        ("orphaned_events", |(r, _)| Ok(Param::Int(int(r.orphaned_events)?))),
        ("affected_tasks", |(r, _)| {
            Ok(Param::Text(serde_json::to_string(&r.affected_tasks).expect("strings serialize")))
        }),
        ("at", |(_, at)| Ok(Param::Int(*at))),
    ],
};

impl IndexStore {
    /// Rolls back every event from `fork` on, rebuilds what they touched and
    /// journals the reorganisation; the cursor returns to `fork`.
    pub async fn rollback(
        &self,
        fork: u64,
        detected_head: u64,
        blobs: Option<&(dyn BlobStore + Send + Sync)>,
    ) -> Result<Reorg, DbError> {
        Ok(self.rollback_rebuilding(fork, detected_head, blobs).await?.0)
    }

    /// [`IndexStore::rollback`], and the tasks it rebuilt from the events
    /// that remain, each with its plan id (what live subscribers are told:
    /// a task whose later events were taken away changed too).
    pub async fn rollback_rebuilding(
        &self,
        fork: u64,
        detected_head: u64,
        blobs: Option<&(dyn BlobStore + Send + Sync)>,
    ) -> Result<(Reorg, Vec<(String, String)>), DbError> {
        // Serialised with any other rollback on this database (indexers
        // sharing it), so the journal's next number is read once.
        let mut tx = tessera_db::begin_numbering(&self.pool, self.backend, "ix_reorgs").await?;
        // Every delivery of an event taken away is retracted, in this
        // transaction: after a crash either both or neither happened.
        let retractions = self.enqueue_retractions(&mut tx, fork).await?;
        let rows = sqlx::query("SELECT task_id, agent FROM ix_events WHERE block >= $1")
            .bind(fork as i64)
            .fetch_all(&mut *tx)
            .await?;
        let mut tasks = BTreeSet::new();
        let mut agents = BTreeSet::new();
        for r in &rows {
            if let Some(t) = r.try_get::<Option<Vec<u8>>, _>("task_id")? {
                tasks.insert(t);
            }
            if let Some(a) = r.try_get::<Option<String>, _>("agent")? {
                agents.insert(a);
            }
        }
        sqlx::query("DELETE FROM ix_events WHERE block >= $1")
            .bind(fork as i64)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM ix_blocks WHERE number >= $1")
            .bind(fork as i64)
            .execute(&mut *tx)
            .await?;
        set_cursor(&mut tx, "ingest", fork).await?;
        // Tasks below the fork not derived yet stay for the next derivation.
        sqlx::query("UPDATE ix_cursor SET next_block = $1 WHERE id = 'derive' AND next_block > $1")
            .bind(fork as i64)
            .execute(&mut *tx)
            .await?;
        let rebuilt = rebuild_tasks(&mut tx, self.backend, &tasks, blobs).await?;
        rebuild_agents(&mut tx, self.backend, &agents).await?;
        let seq: i64 = sqlx::query("SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM ix_reorgs")
            .fetch_one(&mut *tx)
            .await?
            .try_get("next")?;
        let reorg = Reorg {
            seq,
            detected_head,
            fork_block: fork,
            depth: detected_head.saturating_sub(fork) + 1,
            orphaned_events: rows.len() as u64,
            affected_tasks: tasks.iter().map(|t| id_decimal(t)).collect(),
        };
        let entry = [(reorg, now_ms())];
        let sql = REORG_COLUMNS.insert(self.backend, 1, "");
        REORG_COLUMNS.bind(sqlx::query(&sql), &entry)?.execute(&mut *tx).await?;
        let [(reorg, _)] = entry;
        tx.commit().await?;
        if retractions > 0 {
            self.outbox_wake();
        }
        Ok((reorg, rebuilt))
    }
}
