//! The index through sqlx: raw events and the cursor written in one
//! transaction (exactly once); agents folded in that transaction; tasks and
//! their checked transitions folded from their stored events behind a
//! derivation mark ([`IndexStore::derive`]), so a backfill folds each task
//! once; rollbacks for reorganisations; and the queries the API serves
//! (recursive lineage queries that run on SQLite and PostgreSQL alike).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use alloy::{
    primitives::{B256, U256},
    rpc::types::Log,
};
use futures_util::TryStreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use sqlx::{Any, AnyPool, Row, Transaction, any::AnyRow};
use tessera_bindings::{envelope::BlobStore, task::decode_log};
use tessera_orchestrator::store::{
    Backend, StoreError, now_ms, open_api_pool, open_pool_with, open_read_pool,
};

use crate::derive::{self, TaskFold};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Rows per multi-row insert (9 parameters each, well under SQLite's limit).
const INSERT_CHUNK: usize = 500;

/// Levels a lineage answer follows at most. Parents are chosen by whoever
/// creates a task, so chains of any depth (and cycles: a task id is known
/// before its creation) can be written to the chain; no plan of ours nests
/// anywhere near this deep.
pub const MAX_LINEAGE_DEPTH: i64 = 64;

/// Tasks a lineage answer (a plan's tree, a task's descendants) lists at
/// most; anyone can hang any number of tasks under any parent.
pub const MAX_LINEAGE_TASKS: i64 = 2_000;

/// The flag of a task on a parent cycle.
pub const PARENT_CYCLE: &str =
    "parent cycle: following parent links from this task comes back to it";

/// Rows a list without paging (agents, disputes, reorgs) answers at most.
pub const MAX_LISTED: i64 = 500;

/// Latest tasks an agent's latency medians are taken over.
const MEDIAN_SAMPLE: i64 = 1_000;

/// Tasks found by a bounded walk along parent links.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Lineage {
    /// The tasks, nearest first.
    pub tasks: Vec<String>,
    /// The walk came back to a task it had passed (a parent cycle) and
    /// stopped there.
    pub cycle: bool,
    /// More lies beyond [`MAX_LINEAGE_DEPTH`] or [`MAX_LINEAGE_TASKS`].
    pub truncated: bool,
}

/// One ingested range: its logs and the block hashes to remember.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The range's first block.
    pub from: u64,
    /// The range's last block; the cursor moves past it.
    pub to: u64,
    /// Parent hash of the range's first block, to check it continues the
    /// indexed chain.
    pub parent: Option<B256>,
    /// Escrow and registry logs of the range, in chain order.
    pub logs: Vec<Log>,
    /// Block hashes seen (blocks with logs, and the range's last block).
    pub hashes: Vec<(u64, B256)>,
}

/// What a batch changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Events newly stored.
    pub events: usize,
}

/// What a derivation folded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Derived {
    /// Events below this block are folded into tasks.
    pub through: u64,
    /// Tasks folded, with their plan id.
    pub tasks: Vec<(String, String)>,
}

/// A reorganisation and what it took away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reorg {
    /// Journal position.
    pub seq: i64,
    /// Head when it was noticed.
    pub detected_head: u64,
    /// First block that changed.
    pub fork_block: u64,
    /// Blocks rolled back.
    pub depth: u64,
    /// Events removed.
    pub orphaned_events: u64,
    /// Tasks whose history changed.
    pub affected_tasks: Vec<String>,
}

/// Filters of the task list.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct TaskFilter {
    /// Status name (`Paid`, `Disputed`, …).
    pub status: Option<String>,
    /// Executor address.
    pub executor: Option<String>,
    /// Client address.
    pub client: Option<String>,
    /// Plan id.
    pub plan: Option<String>,
    /// Continue after this task id (from the previous page's `next`).
    pub cursor: Option<String>,
    /// Page size (default 50, at most 500).
    pub limit: Option<i64>,
}

/// The index store.
#[derive(Debug, Clone)]
pub struct IndexStore {
    pool: AnyPool,
    /// Long reads (a derivation's events) beside the writer: a second
    /// connection on SQLite, the same pool on PostgreSQL.
    reader: AnyPool,
    /// The reader is the writer's own single connection (SQLite in memory).
    shared_reader: bool,
    /// API reads, on connections of their own so that no request can starve
    /// ingestion (the writer's pool on SQLite in memory).
    api: AnyPool,
    backend: Backend,
}

/// A task id as stored with its events: 32 big-endian bytes.
fn id_bytes(id: U256) -> Vec<u8> {
    id.to_be_bytes::<32>().to_vec()
}

/// A task id as the API shows it (decimal), from its stored bytes.
fn id_decimal(bytes: &[u8]) -> String {
    U256::try_from_be_slice(bytes).unwrap_or_default().to_string()
}

impl IndexStore {
    /// Connects and migrates.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        // Checkpoints in larger steps: a backfill writes the WAL fast.
        let (pool, backend) =
            open_pool_with(url, &MIGRATOR, &["wal_autocheckpoint = 16384"]).await?;
        let reader = open_read_pool(url).await?;
        let shared_reader = reader.is_none() && backend == Backend::Sqlite;
        let reader = reader.unwrap_or_else(|| pool.clone());
        let api = open_api_pool(url).await?.unwrap_or_else(|| pool.clone());
        Ok(Self { pool, reader, shared_reader, api, backend })
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Where ingestion resumes.
    pub async fn cursor(&self) -> Result<Option<u64>, StoreError> {
        let row = sqlx::query("SELECT next_block FROM ix_cursor WHERE id = 'ingest'")
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<i64, _>("next_block")).transpose()?.map(|b| b as u64))
    }

    /// Stores a batch and moves the cursor past it in one transaction, with
    /// the agents its registry events touch. Tasks are folded by
    /// [`IndexStore::derive`].
    pub async fn apply(&self, batch: &Batch) -> Result<Applied, StoreError> {
        let t0 = std::time::Instant::now();
        let mut tx = self.pool.begin().await?;
        let mut agents: BTreeSet<String> = BTreeSet::new();
        let mut stored = 0;
        for chunk in batch.logs.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO ix_events (block, log_index, block_hash, tx_hash, contract, kind, task_id, agent, raw) \
                 VALUES {} ON CONFLICT (block, log_index) DO NOTHING",
                values(self.backend, chunk.len(), 9)
            );
            let mut q = sqlx::query(&sql);
            for log in chunk {
                let (contract, kind, task, agent) = classify(log);
                if let Some(a) = &agent {
                    agents.insert(a.clone());
                }
                let hash = |h: Option<B256>| h.map(|h| h.to_vec()).unwrap_or_default();
                q = q
                    .bind(log.block_number.unwrap_or_default() as i64)
                    .bind(log.log_index.unwrap_or_default() as i64)
                    .bind(hash(log.block_hash))
                    .bind(hash(log.transaction_hash))
                    .bind(contract)
                    .bind(kind)
                    .bind(task.map(id_bytes))
                    .bind(agent)
                    .bind(encode_raw(log));
            }
            stored += q.execute(&mut *tx).await?.rows_affected() as usize;
        }
        for chunk in batch.hashes.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO ix_blocks (number, hash) VALUES {} \
                 ON CONFLICT (number) DO UPDATE SET hash = excluded.hash",
                values(self.backend, chunk.len(), 2)
            );
            let mut q = sqlx::query(&sql);
            for (number, hash) in chunk {
                q = q.bind(*number as i64).bind(hash.to_string());
            }
            q.execute(&mut *tx).await?;
        }
        set_cursor(&mut tx, "ingest", batch.to + 1).await?;
        let t1 = std::time::Instant::now();
        rebuild_agents(&mut tx, &agents).await?;
        tx.commit().await?;
        tracing::debug!(
            insert_ms = (t1 - t0).as_millis(),
            commit_ms = t1.elapsed().as_millis(),
            events = stored,
            "applied"
        );
        Ok(Applied { events: stored })
    }

    /// Where derivation resumes: tasks touched by events below this block
    /// are folded.
    pub async fn derived(&self) -> Result<Option<u64>, StoreError> {
        let row = sqlx::query("SELECT next_block FROM ix_cursor WHERE id = 'derive'")
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<i64, _>("next_block")).transpose()?.map(|b| b as u64))
    }

    /// Folds every task touched by events stored since the last derivation
    /// (from all their stored events), then moves the derivation mark to the
    /// ingest cursor. A task is folded once per call however many batches
    /// touched it. The events stream in task order from the reader while
    /// folded tasks are written `chunk` per transaction, so reading, folding
    /// and writing overlap. Interrupted, the next call folds the same tasks
    /// again: a fold is a pure function of the events.
    pub async fn derive(
        &self,
        blobs: Option<Arc<dyn BlobStore + Send + Sync>>,
        chunk: usize,
    ) -> Result<Derived, StoreError> {
        let Some(to) = self.cursor().await? else { return Ok(Derived::default()) };
        let from = self.derived().await?.unwrap_or(0);
        if from >= to {
            return Ok(Derived { through: to, tasks: Vec::new() });
        }
        let t0 = std::time::Instant::now();
        // PostgreSQL plans from table statistics, which a backfill outdates:
        // without them its lookups scan whole tables.
        if self.backend == Backend::Postgres && to - from > 64 {
            sqlx::query("ANALYZE ix_events").execute(&self.pool).await?;
        }
        // Nothing stored below the mark (a first backfill): every task is
        // touched, and the index alone gives them in order.
        let fresh = sqlx::query("SELECT block FROM ix_events WHERE block < $1 LIMIT 1")
            .bind(from as i64)
            .fetch_optional(&self.reader)
            .await?
            .is_none();
        let sql = if fresh {
            "SELECT task_id, block, log_index, raw FROM ix_events WHERE task_id IS NOT NULL \
             ORDER BY task_id, block, log_index"
        } else {
            "SELECT task_id, block, log_index, raw FROM ix_events WHERE task_id IN \
             (SELECT task_id FROM ix_events WHERE block >= $1 AND block < $2 AND task_id IS NOT NULL) \
             ORDER BY task_id, block, log_index"
        };
        let chunk = chunk.max(1);
        // Two folded chunks wait at most; on a single shared connection the
        // reader must finish before the writer starts, so they all wait.
        let waiting = if self.shared_reader { 1 << 32 } else { 2 };
        let (parts, mut folded) = tokio::sync::mpsc::channel::<Folded>(waiting);
        // Reading and folding run on a task of their own, so they go on
        // while this one feeds the writer.
        let reader = self.reader.clone();
        let read = tokio::spawn(async move {
            let mut query = sqlx::query(sql);
            if !fresh {
                query = query.bind(from as i64).bind(to as i64);
            }
            let blobs = || blobs.as_deref().map(|b| b as &dyn BlobStore);
            let mut rows = query.fetch(&reader);
            let mut part = Folded::default();
            let mut task: Option<(Vec<u8>, Vec<Log>)> = None;
            while let Some(r) = rows.try_next().await? {
                let id: Vec<u8> = r.try_get("task_id")?;
                let log = stored_content(&r)?;
                match &mut task {
                    Some((current, logs)) if *current == id => logs.push(log),
                    _ => {
                        if let Some((done, logs)) = task.replace((id, vec![log])) {
                            part.fold(&done, &logs, blobs());
                            if part.len() >= chunk
                                && parts.send(std::mem::take(&mut part)).await.is_err()
                            {
                                // The writer stopped: its error is the one to report.
                                return Ok(());
                            }
                        }
                    }
                }
            }
            if let Some((done, logs)) = task {
                part.fold(&done, &logs, blobs());
            }
            if part.len() > 0 {
                let _ = parts.send(part).await;
            }
            Ok::<_, StoreError>(())
        });
        let write = async {
            let mut tasks = Vec::new();
            while let Some(part) = folded.recv().await {
                let mut tx = self.pool.begin().await?;
                part.write(&mut tx, self.backend).await?;
                tx.commit().await?;
                tasks.extend(part.tasks());
            }
            Ok::<_, StoreError>(tasks)
        };
        let tasks = match write.await {
            Ok(tasks) => tasks,
            Err(e) => {
                read.abort();
                return Err(e);
            }
        };
        match read.await {
            Ok(read) => read?,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Err(sqlx::Error::WorkerCrashed.into()),
        }
        let cyclic = self.flag_cycles(&tasks).await?;
        let mut tx = self.pool.begin().await?;
        set_cursor(&mut tx, "derive", to).await?;
        tx.commit().await?;
        tracing::debug!(
            from,
            to,
            tasks = tasks.len(),
            cyclic,
            ms = t0.elapsed().as_millis(),
            "derived"
        );
        Ok(Derived { through: to, tasks })
    }

    /// Flags every task on a parent cycle that one of `touched` lies on.
    /// Parents are caller-chosen and a task id is known before its creation,
    /// so a task can name itself, or two tasks each other, as parent; such a
    /// task is indexed like any other, flagged, and lineage answers stop at
    /// the cycle. A fold rewrites the flag, so every derivation checks the
    /// tasks it folded again. Returns how many tasks were flagged.
    async fn flag_cycles(&self, touched: &[(String, String)]) -> Result<usize, StoreError> {
        let mut flagged = 0;
        for chunk in touched.chunks(INSERT_CHUNK) {
            let marks = (1..=chunk.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
            let sql = format!(
                "WITH RECURSIVE walk (start, cur, depth) AS ( \
                   SELECT task_id, parent_id, CAST(1 AS BIGINT) FROM ix_tasks \
                     WHERE parent_id <> '0' AND task_id IN ({marks}) \
                   UNION ALL \
                   SELECT walk.start, t.parent_id, walk.depth + 1 FROM walk \
                     JOIN ix_tasks t ON t.task_id = walk.cur \
                     WHERE walk.cur <> walk.start AND walk.depth < {MAX_LINEAGE_DEPTH} \
                 ) SELECT DISTINCT cur FROM walk \
                   WHERE start IN (SELECT start FROM walk WHERE cur = start)"
            );
            let mut q = sqlx::query(&sql);
            for (id, _) in chunk {
                q = q.bind(id.as_str());
            }
            let cyclic: Vec<String> = q
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| r.try_get("cur"))
                .collect::<Result<_, _>>()?;
            if cyclic.is_empty() {
                continue;
            }
            let marks =
                (2..=cyclic.len() + 1).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
            let sql = format!(
                "UPDATE ix_tasks SET flagged = $1 WHERE flagged IS NULL AND task_id IN ({marks})"
            );
            let mut q = sqlx::query(&sql).bind(PARENT_CYCLE);
            for id in &cyclic {
                q = q.bind(id.as_str());
            }
            q.execute(&self.pool).await?;
            flagged += cyclic.len();
        }
        Ok(flagged)
    }

    /// Rolls back every event from `fork` on, rebuilds what they touched and
    /// journals the reorganisation; the cursor returns to `fork`.
    pub async fn rollback(
        &self,
        fork: u64,
        detected_head: u64,
        blobs: Option<&dyn BlobStore>,
    ) -> Result<Reorg, StoreError> {
        let mut tx = self.pool.begin().await?;
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
        rebuild_tasks(&mut tx, self.backend, &tasks, blobs).await?;
        rebuild_agents(&mut tx, &agents).await?;
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
        sqlx::query(
            "INSERT INTO ix_reorgs (seq, detected_head, fork_block, depth, orphaned_events, affected_tasks, at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(seq)
        .bind(detected_head as i64)
        .bind(fork as i64)
        .bind(reorg.depth as i64)
        .bind(reorg.orphaned_events as i64)
        .bind(serde_json::to_string(&reorg.affected_tasks).expect("strings serialize"))
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(reorg)
    }

    /// The remembered hash of block `number`, if any.
    pub async fn block_hash(&self, number: u64) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT hash FROM ix_blocks WHERE number = $1")
            .bind(number as i64)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get("hash")).transpose()?)
    }

    /// Stored block hashes, newest first.
    pub async fn recent_blocks(&self, limit: i64) -> Result<Vec<(u64, String)>, StoreError> {
        let rows = sqlx::query("SELECT number, hash FROM ix_blocks ORDER BY number DESC LIMIT $1")
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get::<i64, _>("number")? as u64, r.try_get("hash")?)))
            .collect()
    }

    /// Forgets block hashes below `keep_from` (older than the reorg depth).
    pub async fn prune_blocks(&self, keep_from: u64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM ix_blocks WHERE number < $1")
            .bind(keep_from as i64)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Tasks matching `f`, ordered by id, one page.
    pub async fn tasks(&self, f: &TaskFilter) -> Result<(Vec<Value>, Option<String>), StoreError> {
        let limit = f.limit.unwrap_or(50).clamp(1, 500);
        let mut sql = format!("SELECT {} FROM ix_tasks WHERE 1 = 1", listed_task_columns(""));
        let mut binds: Vec<String> = Vec::new();
        let mut push = |sql: &mut String, cond: &str, v: &str| {
            binds.push(v.to_owned());
            sql.push_str(&format!(" AND {cond} ${}", binds.len()));
        };
        if let Some(v) = &f.status {
            push(&mut sql, "status =", v);
        }
        if let Some(v) = &f.executor {
            push(&mut sql, "LOWER(executor) =", &v.to_lowercase());
        }
        if let Some(v) = &f.client {
            push(&mut sql, "LOWER(client) =", &v.to_lowercase());
        }
        if let Some(v) = &f.plan {
            push(&mut sql, "plan_id =", &v.to_lowercase());
        }
        if let Some(v) = &f.cursor {
            push(&mut sql, "task_id >", v);
        }
        sql.push_str(&format!(" ORDER BY task_id LIMIT {}", limit + 1));
        let mut q = sqlx::query(&sql);
        for b in &binds {
            q = q.bind(b.clone());
        }
        let rows = q.fetch_all(&self.api).await?;
        let mut out: Vec<Value> = rows.iter().map(task_json).collect::<Result<_, _>>()?;
        let next = if out.len() as i64 > limit {
            out.truncate(limit as usize);
            out.last().and_then(|t| t["task_id"].as_str().map(str::to_owned))
        } else {
            None
        };
        Ok((out, next))
    }

    /// One task with its transitions and the transactions of its first
    /// [`MAX_LISTED`] events (a funder can reassign a task any number of
    /// times, each an event).
    pub async fn task(&self, id: &str) -> Result<Option<Value>, StoreError> {
        let Some(row) = sqlx::query("SELECT * FROM ix_tasks WHERE task_id = $1")
            .bind(id)
            .fetch_optional(&self.api)
            .await?
        else {
            return Ok(None);
        };
        let mut task = task_json(&row)?;
        let stored: String = row.try_get("history")?;
        let history = history_json(&stored)?;
        let Ok(key) = id.parse::<U256>() else { return Ok(None) };
        let txs = sqlx::query(&format!(
            "SELECT block, tx_hash, kind FROM ix_events WHERE task_id = $1 \
             ORDER BY block, log_index LIMIT {MAX_LISTED}"
        ))
        .bind(id_bytes(key))
        .fetch_all(&self.api)
        .await?;
        let txs: Vec<Value> = txs
            .iter()
            .map(|r| {
                Ok(json!({
                    "block": r.try_get::<i64, _>("block")?,
                    "event": r.try_get::<String, _>("kind")?,
                    "tx_hash": bytes_hex(&r.try_get::<Vec<u8>, _>("tx_hash")?),
                }))
            })
            .collect::<Result<_, StoreError>>()?;
        task["history"] = Value::Array(history);
        task["transactions"] = Value::Array(txs);
        Ok(Some(task))
    }

    /// A plan's lineage: every task of the plan with its depth under the plan
    /// and the cost of its subtree; tasks whose parent is not indexed (yet)
    /// are listed as pending. Parents are caller-chosen on chain, so the
    /// walk is bounded ([`MAX_LINEAGE_DEPTH`] levels, [`MAX_LINEAGE_TASKS`]
    /// tasks) and a task in or under a parent cycle, or deeper than the
    /// limit, is listed `detached` with no depth instead of being followed.
    pub async fn plan_tree(&self, plan: &str) -> Result<Value, StoreError> {
        let plan = plan.to_lowercase();
        let rows = sqlx::query(&format!(
            "WITH RECURSIVE tree (task_id, depth, path) AS ( \
               SELECT task_id, CAST(0 AS BIGINT), ',' || task_id || ',' FROM ix_tasks t \
                 WHERE plan_id = $1 AND (parent_id = '0' \
                 OR NOT EXISTS (SELECT 1 FROM ix_tasks p WHERE p.task_id = t.parent_id)) \
               UNION ALL \
               SELECT c.task_id, tree.depth + 1, tree.path || c.task_id || ',' \
                 FROM ix_tasks c JOIN tree ON c.parent_id = tree.task_id \
                 WHERE tree.depth < {MAX_LINEAGE_DEPTH} AND tree.path NOT LIKE '%,' || c.task_id || ',%' {} \
             ) SELECT {}, tree.depth AS depth FROM (SELECT task_id, depth FROM tree LIMIT {}) tree \
               JOIN ix_tasks t ON t.task_id = tree.task_id",
            self.recursive_limit(),
            listed_task_columns("t."),
            MAX_LINEAGE_TASKS + 1,
        ))
        .bind(&plan)
        .fetch_all(&self.api)
        .await?;
        let mut truncated = rows.len() as i64 > MAX_LINEAGE_TASKS;
        let mut nodes = Vec::with_capacity(rows.len());
        for r in rows.iter().take(MAX_LINEAGE_TASKS as usize) {
            let mut t = task_json(r)?;
            t["depth"] = json!(r.try_get::<i64, _>("depth")?);
            nodes.push(t);
        }
        nodes.sort_by(|a, b| {
            let key = |t: &Value| (t["depth"].as_i64(), t["created_block"].as_i64());
            key(a).cmp(&key(b)).then_with(|| a["task_id"].as_str().cmp(&b["task_id"].as_str()))
        });
        let reached: BTreeSet<String> =
            nodes.iter().filter_map(|t| t["task_id"].as_str().map(str::to_owned)).collect();
        for t in &mut nodes {
            let parent = t["parent_id"].as_str().unwrap_or("0");
            t["pending_parent"] = json!(parent != "0" && !reached.contains(parent));
            t["detached"] = json!(false);
        }
        // The plan's tasks no root reaches: in or under a parent cycle, or
        // below the depth limit.
        if !truncated {
            let rows = sqlx::query(&format!(
                "SELECT {} FROM ix_tasks WHERE plan_id = $1 ORDER BY created_block, task_id LIMIT {}",
                listed_task_columns(""),
                MAX_LINEAGE_TASKS + 1,
            ))
            .bind(&plan)
            .fetch_all(&self.api)
            .await?;
            truncated = rows.len() as i64 > MAX_LINEAGE_TASKS;
            for r in &rows {
                let id: String = r.try_get("task_id")?;
                if !reached.contains(&id) && nodes.len() < MAX_LINEAGE_TASKS as usize {
                    let mut t = task_json(r)?;
                    t["depth"] = Value::Null;
                    t["pending_parent"] = json!(false);
                    t["detached"] = json!(true);
                    nodes.push(t);
                }
            }
        }
        subtree_costs(&mut nodes);
        Ok(json!({ "plan_id": plan, "tasks": nodes, "truncated": truncated }))
    }

    /// Ancestors of a task, nearest first, at most [`MAX_LINEAGE_DEPTH`];
    /// the walk stops where it would come back to a task it passed.
    pub async fn ancestors(&self, id: &str) -> Result<Lineage, StoreError> {
        let rows = sqlx::query(&format!(
            "WITH RECURSIVE up (task_id, parent_id, depth, path, cyc) AS ( \
               SELECT task_id, parent_id, CAST(0 AS BIGINT), ',' || task_id || ',', CAST(0 AS BIGINT) \
                 FROM ix_tasks WHERE task_id = $1 \
               UNION ALL \
               SELECT p.task_id, p.parent_id, up.depth + 1, up.path || p.task_id || ',', \
                 CAST(CASE WHEN up.path LIKE '%,' || p.task_id || ',%' THEN 1 ELSE 0 END AS BIGINT) \
                 FROM ix_tasks p JOIN up ON p.task_id = up.parent_id \
                 WHERE up.cyc = 0 AND up.depth < {MAX_LINEAGE_DEPTH} \
             ) SELECT task_id, parent_id, depth, cyc FROM up WHERE depth > 0 ORDER BY depth",
        ))
        .bind(id)
        .fetch_all(&self.api)
        .await?;
        let mut out = Lineage::default();
        for r in &rows {
            if r.try_get::<i64, _>("cyc")? == 1 {
                out.cycle = true;
                break;
            }
            out.tasks.push(r.try_get("task_id")?);
        }
        // Self-parented: the first step already comes back.
        if rows.is_empty() {
            let own = sqlx::query("SELECT parent_id FROM ix_tasks WHERE task_id = $1")
                .bind(id)
                .fetch_optional(&self.api)
                .await?;
            if let Some(r) = own {
                out.cycle = r.try_get::<String, _>("parent_id")? == id;
            }
        }
        if let Some(last) = rows.last()
            && !out.cycle
            && last.try_get::<i64, _>("depth")? >= MAX_LINEAGE_DEPTH
        {
            out.truncated = last.try_get::<String, _>("parent_id")? != "0";
        }
        Ok(out)
    }

    /// Descendants of a task, breadth first, at most [`MAX_LINEAGE_DEPTH`]
    /// levels and [`MAX_LINEAGE_TASKS`] tasks; the walk stops where it
    /// would come back to a task it passed.
    pub async fn descendants(&self, id: &str) -> Result<Lineage, StoreError> {
        let rows = sqlx::query(&format!(
            "WITH RECURSIVE down (task_id, depth, path, cyc) AS ( \
               SELECT task_id, CAST(0 AS BIGINT), ',' || task_id || ',', CAST(0 AS BIGINT) FROM ix_tasks WHERE task_id = $1 \
               UNION ALL \
               SELECT c.task_id, down.depth + 1, down.path || c.task_id || ',', \
                 CAST(CASE WHEN down.path LIKE '%,' || c.task_id || ',%' THEN 1 ELSE 0 END AS BIGINT) \
                 FROM ix_tasks c JOIN down ON c.parent_id = down.task_id \
                 WHERE down.cyc = 0 AND down.depth < {MAX_LINEAGE_DEPTH} {} \
             ) SELECT task_id, depth, cyc FROM down WHERE depth > 0 LIMIT {}",
            self.recursive_limit(),
            MAX_LINEAGE_TASKS + 1,
        ))
        .bind(id)
        .fetch_all(&self.api)
        .await?;
        let mut out =
            Lineage { truncated: rows.len() as i64 > MAX_LINEAGE_TASKS, ..Lineage::default() };
        let mut found: Vec<(i64, String)> = Vec::with_capacity(rows.len());
        for r in rows.iter().take(MAX_LINEAGE_TASKS as usize) {
            if r.try_get::<i64, _>("cyc")? == 1 {
                out.cycle = true;
                continue;
            }
            let depth: i64 = r.try_get("depth")?;
            out.truncated |= depth >= MAX_LINEAGE_DEPTH;
            found.push((depth, r.try_get("task_id")?));
        }
        found.sort();
        out.tasks = found.into_iter().map(|(_, t)| t).collect();
        Ok(out)
    }

    /// The row cap of a recursive query's recursive step, where the
    /// database takes one (SQLite); PostgreSQL stops the recursion once the
    /// outer `LIMIT` has its rows.
    fn recursive_limit(&self) -> String {
        match self.backend {
            Backend::Sqlite => format!("LIMIT {}", MAX_LINEAGE_TASKS + 1),
            Backend::Postgres => String::new(),
        }
    }

    /// Registry state of the first [`MAX_LISTED`] agents (by address), with
    /// derived stats. Anyone can register an agent, so the list is capped.
    pub async fn agents(&self) -> Result<Vec<Value>, StoreError> {
        let rows =
            sqlx::query(&format!("SELECT agent FROM ix_agents ORDER BY agent LIMIT {MAX_LISTED}"))
                .fetch_all(&self.api)
                .await?;
        let mut out = Vec::new();
        for r in rows {
            if let Some(a) = self.agent(&r.try_get::<String, _>("agent")?).await? {
                out.push(a);
            }
        }
        Ok(out)
    }

    /// One agent with its stats: completed, disputed, refunded, earnings and
    /// success rate over all its tasks (aggregated in the database), median
    /// accept and completion latency over its latest [`MEDIAN_SAMPLE`].
    pub async fn agent(&self, agent: &str) -> Result<Option<Value>, StoreError> {
        let Some(row) = sqlx::query("SELECT * FROM ix_agents WHERE LOWER(agent) = $1")
            .bind(agent.to_lowercase())
            .fetch_optional(&self.api)
            .await?
        else {
            return Ok(None);
        };
        let address: String = row.try_get("agent")?;
        let count = |cond: &str| {
            format!("CAST(COALESCE(SUM(CASE WHEN {cond} THEN 1 ELSE 0 END), 0) AS BIGINT)")
        };
        let totals = sqlx::query(&format!(
            "SELECT CAST(COUNT(*) AS BIGINT) AS n, {} AS completed, {} AS disputed, {} AS refunded, \
               {} AS settled, CAST(COALESCE(SUM(executor_paid), 0) AS BIGINT) AS earnings \
             FROM ix_tasks WHERE executor = $1",
            count("status IN ('Paid', 'Split')"),
            count("disputed = 1"),
            count("status = 'Refunded'"),
            count("status IN ('Paid', 'Split', 'Refunded', 'Expired', 'Cancelled')"),
        ))
        .bind(&address)
        .fetch_one(&self.api)
        .await?;
        let latest = sqlx::query(&format!(
            "SELECT created_at, accepted_at, completed_at FROM ix_tasks \
             WHERE executor = $1 AND accepted_at IS NOT NULL \
             ORDER BY created_block DESC, task_id LIMIT {MEDIAN_SAMPLE}"
        ))
        .bind(&address)
        .fetch_all(&self.api)
        .await?;
        let mut accept = Vec::new();
        let mut complete = Vec::new();
        for t in &latest {
            let created: i64 = t.try_get("created_at")?;
            if let Some(a) = t.try_get::<Option<i64>, _>("accepted_at")? {
                accept.push(a - created);
                if let Some(c) = t.try_get::<Option<i64>, _>("completed_at")? {
                    complete.push(c - a);
                }
            }
        }
        let total = |k: &str| -> Result<i64, StoreError> { Ok(totals.try_get::<i64, _>(k)?) };
        let (completed, settled) = (total("completed")?, total("settled")?);
        let offers: Value =
            serde_json::from_str(&row.try_get::<String, _>("offers")?).unwrap_or(Value::Null);
        Ok(Some(json!({
            "agent": address,
            "status": row.try_get::<String, _>("status")?,
            "metadata_uri": row.try_get::<String, _>("metadata_uri")?,
            "offers": offers,
            "registered_block": row.try_get::<i64, _>("registered_block")?,
            "stats": {
                "tasks": total("n")?,
                "completed": completed,
                "disputed": total("disputed")?,
                "refunded": total("refunded")?,
                "earnings": total("earnings")?.to_string(),
                "median_accept_secs": median(&mut accept),
                "median_completion_secs": median(&mut complete),
                "success_rate": if settled == 0 { Value::Null } else { json!(completed as f64 / settled as f64) },
            },
        })))
    }

    /// The latest [`MAX_LISTED`] tasks that were ever disputed, newest first.
    pub async fn disputes(&self) -> Result<Vec<Value>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {} FROM ix_tasks WHERE disputed = 1 ORDER BY updated_block DESC, task_id LIMIT {MAX_LISTED}",
            listed_task_columns("")
        ))
        .fetch_all(&self.api)
        .await?;
        rows.iter().map(task_json).collect()
    }

    /// The latest [`MAX_LISTED`] entries of the reorganisation journal,
    /// newest first.
    pub async fn reorgs(&self) -> Result<Vec<Reorg>, StoreError> {
        let rows =
            sqlx::query(&format!("SELECT * FROM ix_reorgs ORDER BY seq DESC LIMIT {MAX_LISTED}"))
                .fetch_all(&self.api)
                .await?;
        rows.iter()
            .map(|r| {
                Ok(Reorg {
                    seq: r.try_get("seq")?,
                    detected_head: r.try_get::<i64, _>("detected_head")? as u64,
                    fork_block: r.try_get::<i64, _>("fork_block")? as u64,
                    depth: r.try_get::<i64, _>("depth")? as u64,
                    orphaned_events: r.try_get::<i64, _>("orphaned_events")? as u64,
                    affected_tasks: serde_json::from_str(
                        &r.try_get::<String, _>("affected_tasks")?,
                    )
                    .unwrap_or_default(),
                })
            })
            .collect()
    }

    /// Number of stored events.
    pub async fn event_count(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query("SELECT COUNT(*) AS n FROM ix_events")
            .fetch_one(&self.api)
            .await?
            .try_get("n")?)
    }
}

/// Each node's `subtree_cost`: its amount plus those of its descendants in
/// `nodes` (a bounded tree; detached nodes count for themselves only).
fn subtree_costs(nodes: &mut [Value]) {
    let index: BTreeMap<String, usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t["task_id"].as_str().map(|id| (id.to_owned(), i)))
        .collect();
    let mut cost: Vec<u128> = nodes
        .iter()
        .map(|t| t["amount"].as_str().and_then(|a| a.parse().ok()).unwrap_or_default())
        .collect();
    // Deepest first, so a child's total is complete before its parent's.
    let mut order: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i]["depth"].is_i64()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(nodes[i]["depth"].as_i64()));
    for i in order {
        if nodes[i]["depth"].as_i64().unwrap_or(0) == 0 {
            continue;
        }
        let parent = nodes[i]["parent_id"].as_str().and_then(|p| index.get(p)).copied();
        if let Some(p) = parent.filter(|&p| nodes[p]["depth"].is_i64()) {
            cost[p] = cost[p].saturating_add(cost[i]);
        }
    }
    for (t, c) in nodes.iter_mut().zip(cost) {
        t["subtree_cost"] = json!(c.to_string());
    }
}

fn median(v: &mut [i64]) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_unstable();
    json!(v[v.len() / 2])
}

fn task_json(r: &AnyRow) -> Result<Value, StoreError> {
    let opt =
        |k: &str| -> Result<Value, StoreError> { Ok(json!(r.try_get::<Option<String>, _>(k)?)) };
    let opt_i =
        |k: &str| -> Result<Value, StoreError> { Ok(json!(r.try_get::<Option<i64>, _>(k)?)) };
    Ok(json!({
        "task_id": r.try_get::<String, _>("task_id")?,
        "plan_id": r.try_get::<String, _>("plan_id")?,
        "parent_id": r.try_get::<String, _>("parent_id")?,
        "funder": r.try_get::<String, _>("funder")?,
        "client": r.try_get::<String, _>("client")?,
        "executor": r.try_get::<String, _>("executor")?,
        "amount": r.try_get::<String, _>("amount")?,
        "status": r.try_get::<String, _>("status")?,
        "spec_uri": r.try_get::<String, _>("spec_uri")?,
        "result_uri": opt("result_uri")?,
        "capability": opt("capability")?,
        "spec": opt("spec")?,
        "envelope_error": opt("envelope_error")?,
        "flagged": opt("flagged")?,
        "created_block": r.try_get::<i64, _>("created_block")?,
        "updated_block": r.try_get::<i64, _>("updated_block")?,
        "accepted_at": opt_i("accepted_at")?,
        "completed_at": opt_i("completed_at")?,
        "settled_at": opt_i("settled_at")?,
        "disputed": r.try_get::<i64, _>("disputed")? == 1,
        "executor_paid": r.try_get::<i64, _>("executor_paid")?.to_string(),
    }))
}

/// Which contract a log is from, its event name, task and agent.
fn classify(log: &Log) -> (&'static str, &'static str, Option<U256>, Option<String>) {
    if let Some(ev) = decode_log(log) {
        let task = tessera_bindings::task::TaskRecord::event_task_id(&ev);
        return ("escrow", derive::escrow_kind(&ev), task, None);
    }
    if let Some(ev) = derive::decode_registry(log) {
        let (agent, kind) = derive::registry_subject(&ev);
        return ("registry", kind, None, Some(agent.to_string()));
    }
    ("unknown", "Unknown", None, None)
}

/// `0x` hex of stored bytes (a hash); empty when none was stored.
fn bytes_hex(b: &[u8]) -> String {
    if b.is_empty() { String::new() } else { format!("0x{}", alloy::hex::encode(b)) }
}

/// A log's content as stored in `raw`: the address (20 bytes), the number
/// of topics (1 byte), the topics (32 bytes each), the data. Its position
/// (block, index, block and transaction hash) has its own columns.
fn encode_raw(log: &Log) -> Vec<u8> {
    let topics = log.topics();
    let data = &log.data().data;
    let mut out = Vec::with_capacity(21 + topics.len() * 32 + data.len());
    out.extend_from_slice(log.address().as_slice());
    // A log has at most four topics.
    out.push(topics.len() as u8);
    for t in topics {
        out.extend_from_slice(t.as_slice());
    }
    out.extend_from_slice(data);
    out
}

/// A log's content from its `raw` bytes ([`encode_raw`]); `None` when they
/// are not of that form.
fn decode_raw(raw: &[u8]) -> Option<alloy::primitives::Log> {
    let n = usize::from(*raw.get(20)?);
    let body = 21 + n * 32;
    if n > 4 || raw.len() < body {
        return None;
    }
    let address = alloy::primitives::Address::from_slice(&raw[..20]);
    let topics = raw[21..body].chunks_exact(32).map(B256::from_slice).collect();
    let data = alloy::primitives::Bytes::copy_from_slice(&raw[body..]);
    Some(alloy::primitives::Log::new_unchecked(address, topics, data))
}

/// A log's position and content read back (`block`, `log_index`, `raw`),
/// without its hashes.
fn stored_content(r: &AnyRow) -> Result<Log, StoreError> {
    let raw: Vec<u8> = r.try_get("raw")?;
    let inner = decode_raw(&raw).ok_or_else(|| StoreError::Corrupt {
        table: "ix_events",
        detail: format!(
            "raw log 0x{} is not address, topic count, topics, data",
            alloy::hex::encode(&raw)
        ),
    })?;
    Ok(Log {
        inner,
        block_number: Some(r.try_get::<i64, _>("block")? as u64),
        log_index: Some(r.try_get::<i64, _>("log_index")? as u64),
        ..Log::default()
    })
}

async fn set_cursor(tx: &mut Transaction<'_, Any>, id: &str, next: u64) -> Result<(), StoreError> {
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

/// Folded tasks on their way to the database: rows with their transitions,
/// and the tasks whose creation is not stored (their rows go).
#[derive(Debug, Default)]
struct Folded {
    rows: Vec<(TaskFold, Vec<derive::TransitionRow>)>,
    gone: Vec<String>,
}

impl Folded {
    fn len(&self) -> usize {
        self.rows.len() + self.gone.len()
    }

    /// Folds one task's logs (in chain order).
    fn fold(&mut self, id: &[u8], logs: &[Log], blobs: Option<&dyn BlobStore>) {
        match derive::fold_task(logs, blobs) {
            Some(folded) => self.rows.push(folded),
            None => self.gone.push(id_decimal(id)),
        }
    }

    /// The tasks written, with their plan.
    fn tasks(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.rows.iter().map(|(f, _)| (f.row().task_id.clone(), f.row().plan_id.clone()))
    }

    async fn write(
        &self,
        tx: &mut Transaction<'_, Any>,
        backend: Backend,
    ) -> Result<(), StoreError> {
        for chunk in self.gone.chunks(INSERT_CHUNK) {
            let sql = format!(
                "DELETE FROM ix_tasks WHERE task_id IN {}",
                values(backend, 1, chunk.len())
            );
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id.clone());
            }
            q.execute(&mut **tx).await?;
        }
        upsert_tasks(tx, backend, &self.rows).await
    }
}

/// Folds `tasks` (ids as stored with their events) again from their stored
/// events and writes their rows; a task whose creation is not stored has
/// none.
async fn rebuild_tasks(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tasks: &BTreeSet<Vec<u8>>,
    blobs: Option<&dyn BlobStore>,
) -> Result<Vec<(String, String)>, StoreError> {
    let ids: Vec<&Vec<u8>> = tasks.iter().collect();
    let mut stored_logs: BTreeMap<Vec<u8>, Vec<Log>> = BTreeMap::new();
    for chunk in ids.chunks(INSERT_CHUNK) {
        let sql = format!(
            "SELECT task_id, block, log_index, raw FROM ix_events WHERE task_id IN {}",
            values(backend, 1, chunk.len())
        );
        let mut q = sqlx::query(&sql);
        for id in chunk {
            q = q.bind((*id).clone());
        }
        for r in q.fetch_all(&mut **tx).await? {
            stored_logs.entry(r.try_get("task_id")?).or_default().push(stored_content(&r)?);
        }
    }
    let mut folded = Folded::default();
    for id in ids {
        let mut logs = stored_logs.remove(id).unwrap_or_default();
        logs.sort_unstable_by_key(|l| (l.block_number, l.log_index));
        folded.fold(id, &logs, blobs);
    }
    folded.write(tx, backend).await?;
    Ok(folded.tasks().collect())
}

/// Folds `agents` again from their stored registry events.
async fn rebuild_agents(
    tx: &mut Transaction<'_, Any>,
    agents: &BTreeSet<String>,
) -> Result<(), StoreError> {
    for agent in agents {
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
            sqlx::query(
                "INSERT INTO ix_agents (agent, status, metadata_uri, offers, registered_block) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&a.agent)
            .bind(&a.status)
            .bind(&a.metadata_uri)
            .bind(serde_json::to_string(&a.offers).expect("offers serialize"))
            .bind(a.registered_block as i64)
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(())
}

/// `($1, $2, …), …` groups for a multi-row insert of `rows` rows of `cols`
/// columns. SQLite gets anonymous `?` parameters: sqlx resolves every named
/// parameter through `sqlite3_bind_parameter_name`, a linear scan, which
/// makes binding a statement with thousands of `$N` quadratic.
fn values(backend: Backend, rows: usize, cols: usize) -> String {
    let mut out = String::with_capacity(rows * (cols * 6 + 3));
    for r in 0..rows {
        if r > 0 {
            out.push(',');
        }
        out.push('(');
        for c in 0..cols {
            if c > 0 {
                out.push(',');
            }
            match backend {
                Backend::Sqlite => out.push('?'),
                Backend::Postgres => {
                    out.push('$');
                    out.push_str(&(r * cols + c + 1).to_string());
                }
            }
        }
        out.push(')');
    }
    out
}

/// A task's transitions as stored in its row: a JSON array of
/// `[block, log_index, event, from, to, valid (0/1), problem]`.
fn history_column(transitions: &[derive::TransitionRow]) -> String {
    let rows: Vec<_> = transitions
        .iter()
        .map(|t| {
            (
                t.block,
                t.log_index,
                &t.kind,
                &t.from_status,
                &t.to_status,
                u8::from(t.valid),
                &t.problem,
            )
        })
        .collect();
    serde_json::to_string(&rows).expect("transitions serialize")
}

/// The API's view of a stored history column.
fn history_json(stored: &str) -> Result<Vec<Value>, StoreError> {
    type Stored = (u64, u64, String, String, String, u8, Option<String>);
    let rows: Vec<Stored> = serde_json::from_str(stored).map_err(|e| StoreError::Corrupt {
        table: "ix_tasks",
        detail: format!("history {stored:?}: {e}"),
    })?;
    Ok(rows
        .into_iter()
        .map(|(block, log_index, event, from, to, valid, problem)| {
            json!({
                "block": block,
                "log_index": log_index,
                "event": event,
                "from": from,
                "to": to,
                "valid": valid == 1,
                "problem": problem,
            })
        })
        .collect())
}

/// The columns of a task row; `history`, last, is read for one task only.
const TASK_COLUMNS: [&str; 24] = [
    "task_id",
    "plan_id",
    "parent_id",
    "funder",
    "client",
    "executor",
    "amount",
    "amount_units",
    "status",
    "spec_uri",
    "result_uri",
    "capability",
    "spec",
    "envelope_error",
    "flagged",
    "created_block",
    "updated_block",
    "created_at",
    "accepted_at",
    "completed_at",
    "settled_at",
    "disputed",
    "executor_paid",
    "history",
];

/// The columns a list of tasks reads (all but `history`), with `prefix`.
fn listed_task_columns(prefix: &str) -> String {
    let listed = &TASK_COLUMNS[..TASK_COLUMNS.len() - 1];
    listed.iter().map(|c| format!("{prefix}{c}")).collect::<Vec<_>>().join(", ")
}

/// Writes task rows with their histories; a row already there is updated
/// in place.
async fn upsert_tasks(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    folds: &[(TaskFold, Vec<derive::TransitionRow>)],
) -> Result<(), StoreError> {
    let updates: Vec<String> =
        TASK_COLUMNS[1..].iter().map(|c| format!("{c} = excluded.{c}")).collect();
    for chunk in folds.chunks(40) {
        let sql = format!(
            "INSERT INTO ix_tasks ({}) VALUES {} ON CONFLICT (task_id) DO UPDATE SET {}",
            TASK_COLUMNS.join(", "),
            values(backend, chunk.len(), TASK_COLUMNS.len()),
            updates.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for (f, transitions) in chunk {
            let t = f.row();
            q = q
                .bind(t.task_id.clone())
                .bind(t.plan_id.to_lowercase())
                .bind(t.parent_id.clone())
                .bind(t.funder.clone())
                .bind(t.client.clone())
                .bind(t.executor.clone())
                .bind(t.amount.clone())
                .bind(
                    i64::try_from(t.amount.parse::<u128>().unwrap_or_default()).unwrap_or(i64::MAX),
                )
                .bind(t.status.clone())
                .bind(t.spec_uri.clone())
                .bind(t.result_uri.clone())
                .bind(t.capability.clone())
                .bind(t.spec.clone())
                .bind(t.envelope_error.clone())
                .bind(t.flagged.clone())
                .bind(t.created_block as i64)
                .bind(t.updated_block as i64)
                .bind(t.created_at as i64)
                .bind(t.accepted_at.map(|v| v as i64))
                .bind(t.completed_at.map(|v| v as i64))
                .bind(t.settled_at.map(|v| v as i64))
                .bind(i64::from(t.disputed))
                .bind(i64::try_from(t.executor_paid).unwrap_or(i64::MAX))
                .bind(history_column(transitions));
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use alloy::primitives::{Address, Bytes};

    use super::*;

    fn log(topics: usize, data: &[u8]) -> Log {
        let topics = (0..topics).map(|i| B256::repeat_byte(i as u8 + 1)).collect();
        Log {
            inner: alloy::primitives::Log::new_unchecked(
                Address::repeat_byte(0xaa),
                topics,
                Bytes::copy_from_slice(data),
            ),
            ..Log::default()
        }
    }

    #[test]
    fn raw_logs_round_trip() {
        for (topics, data) in [(0, &[][..]), (1, &[7u8; 3][..]), (4, &[0u8; 600][..])] {
            let l = log(topics, data);
            let raw = encode_raw(&l);
            assert_eq!(raw.len(), 21 + 32 * topics + data.len());
            assert_eq!(decode_raw(&raw).as_ref(), Some(&l.inner));
        }
    }

    #[test]
    fn malformed_raw_logs_are_refused() {
        let raw = encode_raw(&log(2, b"xyz"));
        assert_eq!(decode_raw(&raw[..20]), None, "no topic count");
        assert_eq!(decode_raw(&raw[..21 + 32 + 5]), None, "topics cut short");
        let mut five = raw;
        five[20] = 5;
        five.extend_from_slice(&[0; 96]);
        assert_eq!(decode_raw(&five), None, "more topics than a log can have");
    }

    #[test]
    fn histories_read_back_as_the_api_shows_them() {
        let t = |valid: bool, problem: Option<&str>| derive::TransitionRow {
            block: 9,
            log_index: 2,
            kind: "TaskSettled".into(),
            from_status: "Created".into(),
            to_status: if valid { "Paid" } else { "Created" }.into(),
            valid,
            problem: problem.map(str::to_owned),
        };
        let stored = history_column(&[t(true, None), t(false, Some("not accepted"))]);
        let history = history_json(&stored).unwrap();
        assert_eq!(
            history[0],
            json!({"block": 9, "log_index": 2, "event": "TaskSettled", "from": "Created",
                   "to": "Paid", "valid": true, "problem": null})
        );
        assert_eq!(history[1]["valid"], false);
        assert_eq!(history[1]["problem"], "not accepted");
        assert!(history_json("[[1,2]]").is_err(), "a malformed column is reported");
    }

    #[tokio::test]
    async fn an_index_of_the_first_layout_is_emptied_and_indexed_again() {
        // A database as the first layout (2001) left it, with rows.
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("migrations");
        std::fs::create_dir(&first).unwrap();
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(manifest.join("migrations/2001_index.sql"), first.join("2001_index.sql"))
            .unwrap();
        let url = format!("sqlite://{}", dir.path().join("index.db").display());
        let (pool, _) = open_pool_with(
            &url,
            &sqlx::migrate::Migrator::new(first.as_path()).await.unwrap(),
            &[],
        )
        .await
        .unwrap();
        for sql in [
            "INSERT INTO ix_events VALUES (5, 0, '0xaa', '0xbb', 'escrow', 'TaskCreated', '7', NULL, '0x01::0x')",
            "INSERT INTO ix_transitions VALUES ('7', 5, 0, 'TaskCreated', 'None', 'Created', 1, NULL)",
            "INSERT INTO ix_cursor VALUES ('ingest', 6), ('derive', 6)",
            "INSERT INTO ix_reorgs VALUES (1, 9, 8, 2, 3, '[]', 0)",
        ] {
            sqlx::query(sql).execute(&pool).await.unwrap();
        }
        pool.close().await;

        let store = IndexStore::connect(&url).await.unwrap();
        assert_eq!(store.cursor().await.unwrap(), None, "indexed again from the deploy block");
        assert_eq!(store.derived().await.unwrap(), None);
        assert_eq!(store.event_count().await.unwrap(), 0);
        assert_eq!(store.reorgs().await.unwrap().len(), 1, "the journal is kept");
        // The new layout takes rows.
        let log = log(2, b"data");
        let batch = Batch {
            from: 1,
            to: 1,
            logs: vec![Log { block_number: Some(1), log_index: Some(0), ..log }],
            ..Batch::default()
        };
        assert_eq!(store.apply(&batch).await.unwrap().events, 1);
        assert_eq!(store.cursor().await.unwrap(), Some(2));
    }

    #[test]
    fn task_ids_keep_their_value_as_bytes() {
        let id = U256::from_str_radix("123456789012345678901234567890", 10).unwrap();
        let bytes = id_bytes(id);
        assert_eq!(bytes.len(), 32);
        assert_eq!(id_decimal(&bytes), id.to_string());
        assert_eq!(bytes_hex(&[]), "");
        assert_eq!(bytes_hex(&[0xab, 0x01]), "0xab01");
    }
}
