//! Each executor's totals, kept as its tasks are folded: per executor,
//! funder and client, how many tasks, how they ended, what they paid, what
//! they weigh ([`super::evidence`]: the units of a task its client approved
//! at a rating below full are counted part failed, as
//! [`rated_failed_units`] says), and when the executor was last seen
//! working. An agent's page, its weight and its feedback's givers add up
//! these few rows instead of every task it ever executed.
//!
//! Every write of `ix_tasks` goes through the derivation's one writer,
//! which reads the rows it replaces ([`before`]) and moves the totals by
//! the difference ([`apply`]). A maximum that may have gone down (a
//! reorganisation took a task, or its later events, away) is counted again
//! from its key's tasks. Writers sharing a database are serialised on
//! [`TOTALS_LOCK`], so each reads what the one before wrote. An index
//! migrated from a layout without totals counts them once on opening
//! ([`IndexStore::count_totals`]). Sums saturate at `i64::MAX` (only pay
//! could get there, on a chain whose token mints freely).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures_util::TryStreamExt;
use sqlx::{Any, Row, Transaction, any::AnyRow};
use tessera_db::{Backend, DbError, serialize_on};

use super::{
    INSERT_CHUNK, IndexStore,
    codecs::{Columns, Param, amount_to_column, int, values},
    evidence::{EVIDENCE_CAP_UNITS, EVIDENCE_FLOOR_UNITS, FULL_RATING, rated_failed_units},
};
use crate::derive::TaskRow;

/// The key every writer of `ix_tasks` (and so of the totals) is serialised
/// on ([`serialize_on`]).
pub(super) const TOTALS_LOCK: &str = "ix_agent_totals";

/// The columns of `ix_tasks` a task's part of the totals is read from.
const FACT_COLUMNS: &str = "task_id, executor, funder, client, status, disputed, late_decline, \
     amount_units, executor_paid, accepted_at, completed_at, settled_at, created_block, rating";

/// Whose totals: an executor's tasks for one funder and one client.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// The executor.
    pub executor: String,
    /// The tasks' funder.
    pub funder: String,
    /// The tasks' client.
    pub client: String,
}

impl Key {
    /// The key of a row of `ix_tasks` or `ix_agent_totals`.
    fn read(r: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            executor: r.try_get("executor")?,
            funder: r.try_get("funder")?,
            client: r.try_get("client")?,
        })
    }
}

/// What one task tells of its executor's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Facts {
    key: Key,
    status: String,
    disputed: bool,
    late_decline: bool,
    amount_units: i64,
    executor_paid: i64,
    accepted_at: Option<i64>,
    completed_at: Option<i64>,
    settled_at: Option<i64>,
    created_block: i64,
    /// The client's rating in its approval (percent), when it approved.
    rating: Option<i64>,
}

impl Facts {
    /// The facts of a folded task.
    pub(super) fn of(row: &TaskRow) -> Result<Self, DbError> {
        let at = |t: Option<u64>| t.map(int).transpose();
        Ok(Self {
            key: Key {
                executor: row.executor.clone(),
                funder: row.funder.clone(),
                client: row.client.clone(),
            },
            status: row.status.clone(),
            disputed: row.disputed,
            late_decline: row.late_decline,
            amount_units: amount_to_column(row.amount, "ix_tasks", "amount_units")?,
            executor_paid: amount_to_column(row.executor_paid, "ix_tasks", "executor_paid")?,
            accepted_at: at(row.accepted_at)?,
            completed_at: at(row.completed_at)?,
            settled_at: at(row.settled_at)?,
            created_block: int(row.created_block)?,
            rating: row.rating.map(i64::from),
        })
    }

    /// The facts of a stored task read with [`FACT_COLUMNS`], with its id.
    fn read(r: &AnyRow) -> Result<(String, Self), DbError> {
        Ok((
            r.try_get("task_id")?,
            Self {
                key: Key::read(r)?,
                status: r.try_get("status")?,
                disputed: r.try_get::<i64, _>("disputed")? != 0,
                late_decline: r.try_get::<i64, _>("late_decline")? != 0,
                amount_units: r.try_get("amount_units")?,
                executor_paid: r.try_get("executor_paid")?,
                accepted_at: r.try_get("accepted_at")?,
                completed_at: r.try_get("completed_at")?,
                settled_at: r.try_get("settled_at")?,
                created_block: r.try_get("created_block")?,
                rating: r.try_get("rating")?,
            },
        ))
    }

    /// The executor's latest sign of life in this task: its decline, else
    /// its delivery, else its acceptance.
    fn last_active(&self) -> Option<i64> {
        if self.status == "Declined" {
            self.settled_at
        } else {
            self.completed_at.or(self.accepted_at)
        }
    }

    /// This task's part of its key's totals.
    fn totals(&self) -> Totals {
        let s = self.status.as_str();
        let done = matches!(s, "Paid" | "Split");
        let declined = s == "Declined";
        let expired = s == "Expired" || (declined && self.late_decline);
        let failed = s == "Refunded" || expired;
        let weighed = if self.amount_units >= EVIDENCE_FLOOR_UNITS {
            self.amount_units.min(EVIDENCE_CAP_UNITS)
        } else {
            0
        };
        // The client's word on work it approved: what its rating leaves
        // short of full counts failed (none for an unrated task).
        let rated = match self.rating {
            Some(r) if done => {
                let r = r.clamp(0, i64::from(FULL_RATING));
                rated_failed_units(weighed, u8::try_from(r).unwrap_or(FULL_RATING))
            }
            _ => 0,
        };
        Totals {
            tasks: 1,
            completed: i64::from(done),
            disputed: i64::from(self.disputed),
            refunded: i64::from(s == "Refunded"),
            expired: i64::from(expired),
            declined: i64::from(declined && !self.late_decline),
            settled: i64::from(done || failed || matches!(s, "Cancelled" | "Declined")),
            earnings: self.executor_paid,
            below_floor: i64::from((done || failed) && self.amount_units < EVIDENCE_FLOOR_UNITS),
            completed_units: if done { weighed - rated } else { 0 },
            failed_units: if failed { weighed } else { rated },
            last_active_at: self.last_active(),
            last_created_block: Some(self.created_block),
        }
    }

    /// Whether replacing this by `new` may lower a maximum of this key's
    /// totals (which a difference cannot undo: the key is counted again).
    fn may_lower(&self, new: &Facts) -> bool {
        self.key != new.key
            || self.last_active() > new.last_active()
            || self.created_block > new.created_block
    }
}

/// Sums over one key's tasks, as `ix_agent_totals` holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Tasks.
    pub tasks: i64,
    /// Paid or split.
    pub completed: i64,
    /// Ever disputed.
    pub disputed: i64,
    /// Refunded after a dispute.
    pub refunded: i64,
    /// Expired, or declined late.
    pub expired: i64,
    /// Declined in time.
    pub declined: i64,
    /// Ended: completed, failed, cancelled or declined.
    pub settled: i64,
    /// What the executor was paid (base units).
    pub earnings: i64,
    /// Completed or failed below the evidence floor.
    pub below_floor: i64,
    /// Completed, in capped base units at or above the floor, less what
    /// their clients' ratings count failed ([`rated_failed_units`]).
    pub completed_units: i64,
    /// Failed (refunded, or expired), likewise, and what the ratings of
    /// completed tasks count failed.
    pub failed_units: i64,
    /// The latest sign of life of the executor (chain seconds).
    pub last_active_at: Option<i64>,
    /// The latest block a task of this key was created in.
    pub last_created_block: Option<i64>,
}

impl Totals {
    /// Tasks the executor failed: lost a dispute, or let expire.
    pub fn failed(&self) -> i64 {
        self.refunded.saturating_add(self.expired)
    }

    /// Adds `o` (the later of each maximum).
    pub fn add(&mut self, o: &Totals) {
        self.each(o, i64::saturating_add);
        self.last_active_at = self.last_active_at.max(o.last_active_at);
        self.last_created_block = self.last_created_block.max(o.last_created_block);
    }

    /// Takes `o`'s sums away (maxima stay: see [`Facts::may_lower`]).
    fn sub(&mut self, o: &Totals) {
        self.each(o, i64::saturating_sub);
    }

    fn each(&mut self, o: &Totals, f: fn(i64, i64) -> i64) {
        for (a, b) in [
            (&mut self.tasks, o.tasks),
            (&mut self.completed, o.completed),
            (&mut self.disputed, o.disputed),
            (&mut self.refunded, o.refunded),
            (&mut self.expired, o.expired),
            (&mut self.declined, o.declined),
            (&mut self.settled, o.settled),
            (&mut self.earnings, o.earnings),
            (&mut self.below_floor, o.below_floor),
            (&mut self.completed_units, o.completed_units),
            (&mut self.failed_units, o.failed_units),
        ] {
            *a = f(*a, b);
        }
    }

    fn read(r: &AnyRow) -> Result<(Key, Self), DbError> {
        Ok((
            Key::read(r)?,
            Self {
                tasks: r.try_get("tasks")?,
                completed: r.try_get("completed")?,
                disputed: r.try_get("disputed")?,
                refunded: r.try_get("refunded")?,
                expired: r.try_get("expired")?,
                declined: r.try_get("declined")?,
                settled: r.try_get("settled")?,
                earnings: r.try_get("earnings")?,
                below_floor: r.try_get("below_floor")?,
                completed_units: r.try_get("completed_units")?,
                failed_units: r.try_get("failed_units")?,
                last_active_at: r.try_get("last_active_at")?,
                last_created_block: r.try_get("last_created_block")?,
            },
        ))
    }
}

/// The columns of `ix_agent_totals`.
static TOTAL_COLUMNS: Columns<(Key, Totals)> = Columns {
    table: "ix_agent_totals",
    columns: &[
        ("executor", |(k, _)| Ok(Param::Text(k.executor.clone()))),
        ("funder", |(k, _)| Ok(Param::Text(k.funder.clone()))),
        ("client", |(k, _)| Ok(Param::Text(k.client.clone()))),
        ("tasks", |(_, t)| Ok(Param::Int(t.tasks))),
        ("completed", |(_, t)| Ok(Param::Int(t.completed))),
        ("disputed", |(_, t)| Ok(Param::Int(t.disputed))),
        ("refunded", |(_, t)| Ok(Param::Int(t.refunded))),
        ("expired", |(_, t)| Ok(Param::Int(t.expired))),
        ("declined", |(_, t)| Ok(Param::Int(t.declined))),
        ("settled", |(_, t)| Ok(Param::Int(t.settled))),
        ("earnings", |(_, t)| Ok(Param::Int(t.earnings))),
        ("below_floor", |(_, t)| Ok(Param::Int(t.below_floor))),
        ("completed_units", |(_, t)| Ok(Param::Int(t.completed_units))),
        ("failed_units", |(_, t)| Ok(Param::Int(t.failed_units))),
        ("last_active_at", |(_, t)| Ok(Param::OptInt(t.last_active_at))),
        ("last_created_block", |(_, t)| Ok(Param::OptInt(t.last_created_block))),
    ],
};

/// The facts of the stored tasks among `ids` (a task not stored has none),
/// read in the writer's transaction before it replaces them.
pub(super) async fn before(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    ids: &[&str],
) -> Result<HashMap<String, Facts>, DbError> {
    serialize_on(tx, backend, TOTALS_LOCK).await?;
    let mut out = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(INSERT_CHUNK) {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM ix_tasks WHERE task_id IN {}",
            values(backend, 1, chunk.len())
        );
        let mut q = sqlx::query(&sql);
        for id in chunk {
            q = q.bind(*id);
        }
        for r in q.fetch_all(&mut **tx).await? {
            let (id, facts) = Facts::read(&r)?;
            out.insert(id, facts);
        }
    }
    Ok(out)
}

/// Moves the totals from what the tasks were (`before`, as [`before`] read
/// them) to what they are now (`after`, just written; a task in `before`
/// and not here is gone).
pub(super) async fn apply(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    mut before: HashMap<String, Facts>,
    after: &[(String, Facts)],
) -> Result<(), DbError> {
    // Per key, what the new facts add and the old take away.
    let mut moved: BTreeMap<Key, (Totals, Totals)> = BTreeMap::new();
    let mut recount: BTreeSet<Key> = BTreeSet::new();
    for (id, new) in after {
        let old = before.remove(id);
        if old.as_ref() == Some(new) {
            continue;
        }
        if let Some(old) = old {
            if old.may_lower(new) {
                recount.insert(old.key.clone());
            }
            moved.entry(old.key.clone()).or_default().1.add(&old.totals());
        }
        moved.entry(new.key.clone()).or_default().0.add(&new.totals());
    }
    for old in before.into_values() {
        recount.insert(old.key.clone());
        moved.entry(old.key.clone()).or_default().1.add(&old.totals());
    }
    let keys: Vec<&Key> = moved.keys().filter(|k| !recount.contains(*k)).collect();
    let mut current = stored(tx, backend, &keys).await?;
    let mut rows = Vec::with_capacity(keys.len() + recount.len());
    for key in keys {
        let (plus, minus) = &moved[key];
        let mut t = current.remove(key).unwrap_or_default();
        t.add(plus);
        t.sub(minus);
        rows.push((key.clone(), t));
    }
    for key in recount {
        let t = count_key(tx, &key).await?;
        if t.tasks == 0 {
            sqlx::query(
                "DELETE FROM ix_agent_totals WHERE executor = $1 AND funder = $2 AND client = $3",
            )
            .bind(&key.executor)
            .bind(&key.funder)
            .bind(&key.client)
            .execute(&mut **tx)
            .await?;
        } else {
            rows.push((key, t));
        }
    }
    write(tx, backend, &rows).await
}

/// The stored totals of `keys`.
async fn stored(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    keys: &[&Key],
) -> Result<HashMap<Key, Totals>, DbError> {
    let mut out = HashMap::with_capacity(keys.len());
    for chunk in keys.chunks(INSERT_CHUNK / 3) {
        let sql = format!(
            "SELECT * FROM ix_agent_totals WHERE (executor, funder, client) IN (VALUES {})",
            values(backend, chunk.len(), 3)
        );
        let mut q = sqlx::query(&sql);
        for k in chunk {
            q = q.bind(k.executor.as_str()).bind(k.funder.as_str()).bind(k.client.as_str());
        }
        for r in q.fetch_all(&mut **tx).await? {
            let (k, t) = Totals::read(&r)?;
            out.insert(k, t);
        }
    }
    Ok(out)
}

/// `key`'s totals counted from its stored tasks.
async fn count_key(tx: &mut Transaction<'_, Any>, key: &Key) -> Result<Totals, DbError> {
    let sql = format!(
        "SELECT {FACT_COLUMNS} FROM ix_tasks WHERE executor = $1 AND funder = $2 AND client = $3"
    );
    let mut rows =
        sqlx::query(&sql).bind(&key.executor).bind(&key.funder).bind(&key.client).fetch(&mut **tx);
    let mut t = Totals::default();
    while let Some(r) = rows.try_next().await? {
        t.add(&Facts::read(&r)?.1.totals());
    }
    Ok(t)
}

/// Writes `rows` over what is stored of their keys.
async fn write(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    rows: &[(Key, Totals)],
) -> Result<(), DbError> {
    let conflict =
        format!("ON CONFLICT (executor, funder, client) DO UPDATE SET {}", TOTAL_COLUMNS.updates());
    for chunk in rows.chunks(INSERT_CHUNK / TOTAL_COLUMNS.columns.len()) {
        let sql = TOTAL_COLUMNS.insert(backend, chunk.len(), &conflict);
        TOTAL_COLUMNS.bind(sqlx::query(&sql), chunk)?.execute(&mut **tx).await?;
    }
    Ok(())
}

/// Every key's totals counted from the stored tasks.
async fn count_all(tx: &mut Transaction<'_, Any>) -> Result<BTreeMap<Key, Totals>, DbError> {
    let sql = format!("SELECT {FACT_COLUMNS} FROM ix_tasks");
    let mut rows = sqlx::query(&sql).fetch(&mut **tx);
    let mut out: BTreeMap<Key, Totals> = BTreeMap::new();
    while let Some(r) = rows.try_next().await? {
        let facts = Facts::read(&r)?.1;
        out.entry(facts.key.clone()).or_default().add(&facts.totals());
    }
    Ok(out)
}

impl IndexStore {
    /// Counts the totals from the stored tasks when there are tasks and no
    /// totals (an index from before totals were kept); otherwise nothing.
    pub(super) async fn count_totals(&self) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await?;
        serialize_on(&mut tx, self.backend, TOTALS_LOCK).await?;
        let has = |table: &str| format!("SELECT 1 AS found FROM {table} LIMIT 1");
        let counted = sqlx::query(&has("ix_agent_totals")).fetch_optional(&mut *tx).await?;
        let tasks = sqlx::query(&has("ix_tasks")).fetch_optional(&mut *tx).await?;
        if counted.is_some() || tasks.is_none() {
            return Ok(());
        }
        let all: Vec<(Key, Totals)> = count_all(&mut tx).await?.into_iter().collect();
        write(&mut tx, self.backend, &all).await?;
        tx.commit().await?;
        tracing::info!(keys = all.len(), "counted the agents' totals from the stored tasks");
        Ok(())
    }

    /// The stored totals of `executor`'s tasks, per funder and client.
    pub async fn totals(&self, executor: &str) -> Result<Vec<(Key, Totals)>, DbError> {
        sqlx::query("SELECT * FROM ix_agent_totals WHERE executor = $1")
            .bind(executor)
            .fetch_all(&self.api)
            .await?
            .iter()
            .map(Totals::read)
            .collect()
    }

    /// Whether the stored totals are what the stored tasks add up to (the
    /// check the tests run after every kind of write).
    #[cfg(test)]
    pub(crate) async fn totals_agree(&self) -> Result<bool, DbError> {
        let mut tx = self.pool.begin().await?;
        let counted = count_all(&mut tx).await?;
        let stored: BTreeMap<Key, Totals> = sqlx::query("SELECT * FROM ix_agent_totals")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(Totals::read)
            .collect::<Result<_, _>>()?;
        if counted != stored {
            tracing::error!(?counted, ?stored, "totals disagree");
        }
        Ok(counted == stored)
    }
}
