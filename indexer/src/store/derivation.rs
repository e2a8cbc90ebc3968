//! Derivation: tasks and their checked transitions folded from their
//! stored events behind a derivation mark, written through one column list;
//! parent cycles flagged.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::{Duration, Instant},
};

use alloy::rpc::types::Log;
use futures_util::TryStreamExt;
use sqlx::{Any, Row, Transaction};
use tessera_bindings::envelope::BlobStore;
use tessera_db::{Backend, DbError};

use super::{
    Derived, INSERT_CHUNK, IndexStore, MAX_LINEAGE_DEPTH, PARENT_CYCLE,
    bulk::SET_ASIDE_FROM_BLOCKS,
    codecs::{
        Columns, Param, amount_to_column, groups_column, history_column, id_decimal, int,
        stored_content, values,
    },
    totals::{self, Facts},
    writes::set_cursor,
};
use crate::derive::{self, TaskFold, TransitionRow};

/// Tasks a derivation folds from which PostgreSQL's statistics of the
/// tasks are taken again.
const ANALYZE_AFTER: usize = 1_000;

/// A folded task with its transitions, as `ix_tasks` stores it.
type TaskEntry = (TaskFold, Vec<TransitionRow>);

/// The columns of `ix_tasks`; `history`, last, is read for one task only.
pub(super) static TASK_COLUMNS: Columns<TaskEntry> = Columns {
    table: "ix_tasks",
    columns: &[
        ("task_id", |(f, _)| Ok(Param::Text(f.row().task_id.clone()))),
        ("plan_id", |(f, _)| Ok(Param::Text(f.row().plan_id.to_lowercase()))),
        ("parent_id", |(f, _)| Ok(Param::Text(f.row().parent_id.clone()))),
        ("funder", |(f, _)| Ok(Param::Text(f.row().funder.clone()))),
        ("client", |(f, _)| Ok(Param::Text(f.row().client.clone()))),
        ("executor", |(f, _)| Ok(Param::Text(f.row().executor.clone()))),
        ("amount", |(f, _)| Ok(Param::Text(f.row().amount.base_units().to_string()))),
        ("amount_units", |(f, _)| {
            Ok(Param::Int(amount_to_column(f.row().amount, "ix_tasks", "amount_units")?))
        }),
        ("status", |(f, _)| Ok(Param::Text(f.row().status.clone()))),
        ("spec_uri", |(f, _)| Ok(Param::Text(f.row().spec_uri.clone()))),
        ("result_uri", |(f, _)| Ok(Param::OptText(f.row().result_uri.clone()))),
        ("capability", |(f, _)| Ok(Param::OptText(f.row().capability.clone()))),
        ("spec", |(f, _)| Ok(Param::OptText(f.row().spec.clone()))),
        ("envelope_error", |(f, _)| Ok(Param::OptText(f.row().envelope_error.clone()))),
        ("flagged", |(f, _)| Ok(Param::OptText(f.row().flagged.clone()))),
        ("created_block", |(f, _)| Ok(Param::Int(int(f.row().created_block)?))),
        ("updated_block", |(f, _)| Ok(Param::Int(int(f.row().updated_block)?))),
        ("created_at", |(f, _)| Ok(Param::Int(int(f.row().created_at)?))),
        ("accepted_at", |(f, _)| Ok(Param::OptInt(f.row().accepted_at.map(int).transpose()?))),
        ("completed_at", |(f, _)| Ok(Param::OptInt(f.row().completed_at.map(int).transpose()?))),
        ("settled_at", |(f, _)| Ok(Param::OptInt(f.row().settled_at.map(int).transpose()?))),
        ("disputed", |(f, _)| Ok(Param::Int(i64::from(f.row().disputed)))),
        ("executor_paid", |(f, _)| {
            Ok(Param::Int(amount_to_column(f.row().executor_paid, "ix_tasks", "executor_paid")?))
        }),
        ("path", |(f, _)| Ok(Param::OptText(f.row().path.clone()))),
        ("groups", |(f, _)| Ok(Param::OptText(groups_column(&f.row().groups)))),
        ("decline_reason_uri", |(f, _)| Ok(Param::OptText(f.row().decline_reason_uri.clone()))),
        ("decline_reason", |(f, _)| Ok(Param::OptText(f.row().decline_reason.clone()))),
        ("decline_error", |(f, _)| Ok(Param::OptText(f.row().decline_error.clone()))),
        ("late_decline", |(f, _)| Ok(Param::Int(i64::from(f.row().late_decline)))),
        ("settlement", |(f, _)| Ok(Param::OptText(f.row().settlement.clone()))),
        ("rating", |(f, _)| Ok(Param::OptInt(f.row().rating.map(i64::from)))),
        ("disputed_at", |(f, _)| opt_int(dispute(f).map(|d| d.disputed_at))),
        ("dispute_reason_uri", |(f, _)| {
            Ok(Param::OptText(dispute(f).map(|d| d.reason_uri.clone())))
        }),
        ("ruled_at", |(f, _)| opt_int(ruling(f).map(|r| r.at))),
        ("ruling_share_bps", |(f, _)| {
            Ok(Param::OptInt(ruling(f).map(|r| i64::from(r.executor_share_bps))))
        }),
        ("ruling_rationale_uri", |(f, _)| {
            Ok(Param::OptText(ruling(f).map(|r| r.rationale_uri.clone())))
        }),
        ("ruling_arbiter", |(f, _)| Ok(Param::OptText(ruling(f).map(|r| r.arbiter.clone())))),
        ("appealed_at", |(f, _)| opt_int(appeal(f).map(|a| a.at))),
        ("appellant", |(f, _)| Ok(Param::OptText(appeal(f).map(|a| a.appellant.clone())))),
        ("appeal_reason_uri", |(f, _)| Ok(Param::OptText(appeal(f).map(|a| a.reason_uri.clone())))),
        ("appeal_ruled_at", |(f, _)| opt_int(appeal_ruling(f).map(|r| r.at))),
        ("appeal_share_bps", |(f, _)| {
            Ok(Param::OptInt(appeal_ruling(f).map(|r| i64::from(r.executor_share_bps))))
        }),
        ("appeal_rationale_uri", |(f, _)| {
            Ok(Param::OptText(appeal_ruling(f).map(|r| r.rationale_uri.clone())))
        }),
        ("appeal_arbiter", |(f, _)| {
            Ok(Param::OptText(appeal_ruling(f).map(|r| r.arbiter.clone())))
        }),
        ("history", |(_, t)| Ok(Param::Text(history_column(t)))),
    ],
};

/// A folded task's dispute, if any.
fn dispute(f: &TaskFold) -> Option<&derive::DisputeRow> {
    f.row().dispute.as_ref()
}

/// A folded task's ruling, if any.
fn ruling(f: &TaskFold) -> Option<&derive::RulingRow> {
    dispute(f).and_then(|d| d.ruling.as_ref())
}

/// A folded task's appeal, if any.
fn appeal(f: &TaskFold) -> Option<&derive::AppealRow> {
    dispute(f).and_then(|d| d.appeal.as_ref())
}

/// A folded task's appeal ruling, if any.
fn appeal_ruling(f: &TaskFold) -> Option<&derive::RulingRow> {
    appeal(f).and_then(|a| a.ruling.as_ref())
}

/// A chain time or block for a nullable `BIGINT` column.
fn opt_int(v: Option<u64>) -> Result<Param, DbError> {
    Ok(Param::OptInt(v.map(int).transpose()?))
}

impl IndexStore {
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
    ) -> Result<Derived, DbError> {
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
        // A first backfill of a long range: the task table's indexes are
        // built once at the end instead of row by row ([`super::bulk`]).
        let long = to - from >= SET_ASIDE_FROM_BLOCKS;
        if fresh && long {
            self.set_aside_indexes().await?;
        }
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
            // Time spent folding, and waiting for the writer to take a
            // chunk (for the debug log).
            let (mut fold, mut blocked) = (Duration::ZERO, Duration::ZERO);
            while let Some(r) = rows.try_next().await? {
                let id: Vec<u8> = r.try_get("task_id")?;
                let log = stored_content(&r)?;
                match &mut task {
                    Some((current, logs)) if *current == id => logs.push(log),
                    _ => {
                        if let Some((done, logs)) = task.replace((id, vec![log])) {
                            let t = Instant::now();
                            part.fold(&done, &logs, blobs());
                            fold += t.elapsed();
                            if part.len() >= chunk {
                                let t = Instant::now();
                                if parts.send(std::mem::take(&mut part)).await.is_err() {
                                    // The writer stopped: its error is the one to report.
                                    return Ok((fold, blocked));
                                }
                                blocked += t.elapsed();
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
            Ok::<_, DbError>((fold, blocked))
        });
        let mut writing = Duration::ZERO;
        let write = async {
            let mut tasks = Vec::new();
            while let Some(part) = folded.recv().await {
                let t = Instant::now();
                let mut tx = self.pool.begin().await?;
                part.write(&mut tx, self.backend).await?;
                tx.commit().await?;
                writing += t.elapsed();
                tasks.extend(part.tasks());
            }
            Ok::<_, DbError>(tasks)
        };
        let tasks = match write.await {
            Ok(tasks) => tasks,
            Err(e) => {
                read.abort();
                return Err(e);
            }
        };
        let (fold, blocked) = match read.await {
            Ok(read) => read?,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Err(sqlx::Error::WorkerCrashed.into()),
        };
        let cyclic = self.flag_cycles(&tasks).await?;
        if long {
            // Also after a long derivation that failed before this one.
            self.build_set_aside().await?;
        }
        // As for the events above: the task lists' and agents' pages are
        // planned from statistics a backfill of tasks outdates.
        if self.backend == Backend::Postgres && tasks.len() >= ANALYZE_AFTER {
            sqlx::query("ANALYZE ix_tasks").execute(&self.pool).await?;
            sqlx::query("ANALYZE ix_agent_totals").execute(&self.pool).await?;
        }
        let mut tx = self.pool.begin().await?;
        set_cursor(&mut tx, "derive", to).await?;
        tx.commit().await?;
        tracing::debug!(
            from,
            to,
            tasks = tasks.len(),
            cyclic,
            ms = t0.elapsed().as_millis(),
            fold_ms = fold.as_millis(),
            fold_blocked_ms = blocked.as_millis(),
            write_ms = writing.as_millis(),
            "derived"
        );
        Ok(Derived { through: to, tasks })
    }

    /// Folds `tasks` again from their stored events (a spec that arrived
    /// after their fold is read now) and writes their rows; returns the
    /// tasks written, with their plan. A task not stored (rolled back, or
    /// never indexed) gets no row.
    pub async fn refold(
        &self,
        tasks: &[alloy::primitives::U256],
        blobs: Option<Arc<dyn BlobStore + Send + Sync>>,
    ) -> Result<Vec<(String, String)>, DbError> {
        let ids: BTreeSet<Vec<u8>> = tasks.iter().map(|t| super::codecs::id_bytes(*t)).collect();
        let mut tx = self.pool.begin().await?;
        let written = rebuild_tasks(&mut tx, self.backend, &ids, blobs.as_deref()).await?;
        tx.commit().await?;
        self.flag_cycles(&written).await?;
        Ok(written)
    }

    /// Flags every task on a parent cycle that one of `touched` lies on.
    /// Parents are caller-chosen and a task id is known before its creation,
    /// so a task can name itself, or two tasks each other, as parent; such a
    /// task is indexed like any other, flagged, and lineage answers stop at
    /// the cycle. A fold rewrites the flag, so every derivation checks the
    /// tasks it folded again. Returns how many tasks were flagged.
    async fn flag_cycles(&self, touched: &[(String, String)]) -> Result<usize, DbError> {
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
}

/// Folded tasks on their way to the database: rows with their transitions,
/// and the tasks whose creation is not stored (their rows go).
#[derive(Debug, Default)]
struct Folded {
    rows: Vec<TaskEntry>,
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

    /// Writes the rows, deletes the gone, rewrites their input edges and
    /// moves their executors' totals by the difference.
    async fn write(&self, tx: &mut Transaction<'_, Any>, backend: Backend) -> Result<(), DbError> {
        let before = totals::before(tx, backend, &self.touched()).await?;
        let after: Vec<(String, Facts)> = self
            .rows
            .iter()
            .map(|(f, _)| Ok((f.row().task_id.clone(), Facts::of(f.row())?)))
            .collect::<Result<_, DbError>>()?;
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
        upsert_tasks(tx, backend, &self.rows).await?;
        self.write_inputs(tx, backend).await?;
        totals::apply(tx, backend, before, &after).await
    }

    /// Every task written or deleted here.
    fn touched(&self) -> Vec<&str> {
        self.gone
            .iter()
            .map(String::as_str)
            .chain(self.rows.iter().map(|(f, _)| f.row().task_id.as_str()))
            .collect()
    }

    /// Rewrites the input edges of every task folded here (none for a
    /// task that is gone).
    async fn write_inputs(
        &self,
        tx: &mut Transaction<'_, Any>,
        backend: Backend,
    ) -> Result<(), DbError> {
        for chunk in self.touched().chunks(INSERT_CHUNK) {
            let sql = format!(
                "DELETE FROM ix_task_inputs WHERE task_id IN {}",
                values(backend, 1, chunk.len())
            );
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(*id);
            }
            q.execute(&mut **tx).await?;
        }
        let edges: Vec<(&str, i64, &str)> = self
            .rows
            .iter()
            .flat_map(|(f, _)| {
                let row = f.row();
                row.inputs
                    .iter()
                    .enumerate()
                    .map(|(i, input)| (row.task_id.as_str(), i as i64, input.as_str()))
            })
            .collect();
        for chunk in edges.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO ix_task_inputs (task_id, position, input_id) VALUES {}",
                values(backend, chunk.len(), 3)
            );
            let mut q = sqlx::query(&sql);
            for (task, position, input) in chunk {
                q = q.bind(*task).bind(*position).bind(*input);
            }
            q.execute(&mut **tx).await?;
        }
        Ok(())
    }
}

/// Folds `tasks` (ids as stored with their events) again from their stored
/// events and writes their rows; a task whose creation is not stored has
/// none.
pub(super) async fn rebuild_tasks(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tasks: &BTreeSet<Vec<u8>>,
    blobs: Option<&(dyn BlobStore + Send + Sync)>,
) -> Result<Vec<(String, String)>, DbError> {
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
        folded.fold(id, &logs, blobs.map(|b| b as &dyn BlobStore));
    }
    folded.write(tx, backend).await?;
    Ok(folded.tasks().collect())
}

/// Writes task rows with their histories; a row already there is updated
/// in place.
async fn upsert_tasks(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    folds: &[TaskEntry],
) -> Result<(), DbError> {
    let conflict = format!("ON CONFLICT (task_id) DO UPDATE SET {}", TASK_COLUMNS.updates());
    for chunk in folds.chunks(40) {
        let sql = TASK_COLUMNS.insert(backend, chunk.len(), &conflict);
        TASK_COLUMNS.bind(sqlx::query(&sql), chunk)?.execute(&mut **tx).await?;
    }
    Ok(())
}
