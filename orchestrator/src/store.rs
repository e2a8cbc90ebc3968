//! Durable run state through sqlx: a SQLite file by default, PostgreSQL when
//! the URL says so, one set of migrations (`orchestrator/migrations`).
//!
//! The store keeps what the chain cannot tell: the plan as approved, which
//! attempt of each sub-task is current, the outputs handed forward, the
//! event stream replayed to late subscribers, and the user's decisions.
//! Everything about money is re-read from the chain on every restart.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use sqlx::{
    AnyPool, Row,
    any::{AnyPoolOptions, AnyRow},
};

/// The migrations, embedded at build time.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or the connection failed.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// Applying the migrations failed.
    #[error("database migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The URL names no supported database.
    #[error("unsupported database URL {0:?}: use sqlite://<file> or postgres://…")]
    UnsupportedUrl(String),
    /// The directory of an SQLite file could not be created.
    #[error("creating {path}: {source}")]
    Io {
        /// The directory.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A run with this id exists already.
    #[error("a run for plan {0} exists already")]
    Duplicate(String),
    /// A row holds something this version cannot read.
    #[error("corrupt row in {table}: {detail}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// What was wrong.
        detail: String,
    },
}

/// Which database is behind the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file (or memory).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunRow {
    /// The plan id, `0x` + 64 hex.
    pub id: String,
    /// The plan as JSON (the current version, edits applied).
    pub plan_json: String,
    /// Where the run stands.
    pub state: String,
    /// Why it failed or paused, when it did.
    pub reason: Option<String>,
    /// Wall-clock ms of creation.
    pub created_at: i64,
    /// Wall-clock ms of the last state change.
    pub updated_at: i64,
    /// Wall-clock ms since the run waits for a recovery decision.
    pub paused_at: Option<i64>,
    /// `low` or `high`; a high-stakes run needs a confirmation to approve.
    pub stakes: String,
    /// The classification the plan came from (JSON), when it came from a brief.
    pub classification: Option<String>,
}

/// One sub-task's progress as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubtaskRow {
    /// Plan index.
    pub idx: u32,
    /// Current attempt; the task id derives from plan, index and attempt.
    pub attempt: u32,
    /// Current executor.
    pub executor: String,
    /// Where it stands (`waiting`, `created`, `paid`, …).
    pub phase: String,
    /// The current attempt's on-chain task id (decimal), once created.
    pub task_id: Option<String>,
    /// The delivered result's URI.
    pub result_uri: Option<String>,
    /// The output handed to dependants, once paid.
    pub output: Option<String>,
}

/// One stored event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventRow {
    /// The run.
    pub run_id: String,
    /// Position in the run's stream, from 1.
    pub seq: i64,
    /// Event name (`subtask_created`, `plan_completed`, …).
    pub kind: String,
    /// The event as JSON.
    pub body: String,
}

/// A user decision waiting for the runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRow {
    /// Position in the run's decisions.
    pub seq: i64,
    /// The sub-task, when the decision is about one.
    pub idx: Option<u32>,
    /// `approve`, `dispute`, `retry`, `executor`, `cancel`.
    pub kind: String,
    /// The argument (dispute reason, new executor).
    pub arg: Option<String>,
}

/// The run store.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
}

/// Opens a pool on `url` (`sqlite://<file>` — created when missing — or
/// `postgres://…`) and applies `migrator`. Services that keep their own
/// tables (the arbiter) share this; their migration versions must not
/// collide with another service's when they share a database.
pub async fn open_pool(
    url: &str,
    migrator: &sqlx::migrate::Migrator,
) -> Result<(AnyPool, Backend), StoreError> {
    open_pool_with(url, migrator, &[]).await
}

/// [`open_pool`], with `sqlite_pragmas` (`"wal_autocheckpoint = 16384"`)
/// run on every SQLite connection besides WAL and `synchronous = NORMAL`.
pub async fn open_pool_with(
    url: &str,
    migrator: &sqlx::migrate::Migrator,
    sqlite_pragmas: &'static [&'static str],
) -> Result<(AnyPool, Backend), StoreError> {
    let (backend, url) = pool_url(url)?;
    // SQLite allows one writer: a single connection keeps writes ordered
    // and avoids busy errors; PostgreSQL gets a small pool.
    let max = if backend == Backend::Sqlite { 1 } else { 8 };
    // Set on every connection the pool opens: `synchronous` does not persist
    // in the file, and the pool replaces connections that grew old or idle.
    let sqlite = backend == Backend::Sqlite;
    let pool = AnyPoolOptions::new()
        .max_connections(max)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if sqlite {
                    let common = ["journal_mode = WAL", "synchronous = NORMAL"];
                    for pragma in common.iter().chain(sqlite_pragmas) {
                        sqlx::query(&format!("PRAGMA {pragma}")).execute(&mut *conn).await?;
                    }
                }
                Ok(())
            })
        })
        .connect(&url)
        .await?;
    let mut migrator = sqlx::migrate::Migrator { ignore_missing: true, ..clone_migrator(migrator) };
    migrator.locking = true;
    migrator.run(&pool).await?;
    Ok((pool, backend))
}

/// The backend behind `url` and the URL sqlx opens: an SQLite file is
/// created when missing (`mode=rwc`), with its directory.
fn pool_url(url: &str) -> Result<(Backend, String), StoreError> {
    sqlx::any::install_default_drivers();
    Ok(if let Some(rest) = url.strip_prefix("sqlite:") {
        // A file's directory is created when missing (`sqlite://.tessera/x.db`).
        let file = rest.trim_start_matches("//").split('?').next().unwrap_or_default();
        if let Some(dir) = std::path::Path::new(file).parent()
            && !dir.as_os_str().is_empty()
            && !file.contains(":memory:")
        {
            std::fs::create_dir_all(dir)
                .map_err(|source| StoreError::Io { path: dir.display().to_string(), source })?;
        }
        let mut url = format!("sqlite:{rest}");
        if !rest.contains("mode=") && !rest.contains(":memory:") {
            url.push_str(if rest.contains('?') { "&mode=rwc" } else { "?mode=rwc" });
        }
        (Backend::Sqlite, url)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        (Backend::Postgres, url.to_owned())
    } else {
        return Err(StoreError::UnsupportedUrl(url.to_owned()));
    })
}

/// A second pool on an SQLite file that [`open_pool_with`] opened, for long
/// reads beside the writer (WAL lets them run at once); `None` for
/// PostgreSQL, whose pool already holds several connections.
pub async fn open_read_pool(url: &str) -> Result<Option<AnyPool>, StoreError> {
    let (backend, url) = pool_url(url)?;
    if backend != Backend::Sqlite || url.contains(":memory:") {
        return Ok(None);
    }
    let pool = AnyPoolOptions::new().max_connections(1).connect(&url).await?;
    Ok(Some(pool))
}

/// How long one API query may run on PostgreSQL before the server
/// cancels it (SQLite has no such limit; the API's request timeout and
/// bounded queries stand in for it).
pub const API_STATEMENT_TIMEOUT_MS: u64 = 5_000;

/// Connections of an API read pool.
const API_READERS: u32 = 4;

/// A pool for API readers, apart from the writer's, so that no request,
/// however slow, can starve ingestion of connections: read-only
/// connections on an SQLite file (WAL lets them read while the writer
/// writes), connections whose statements time out after
/// [`API_STATEMENT_TIMEOUT_MS`] on PostgreSQL. A reader waits at most two
/// seconds for a connection. `None` for SQLite in memory, where every user
/// shares the one connection.
pub async fn open_api_pool(url: &str) -> Result<Option<AnyPool>, StoreError> {
    let (backend, url) = pool_url(url)?;
    if backend == Backend::Sqlite && url.contains(":memory:") {
        return Ok(None);
    }
    let pool = AnyPoolOptions::new()
        .max_connections(API_READERS)
        .acquire_timeout(std::time::Duration::from_secs(2))
        .after_connect(move |conn, _| {
            Box::pin(async move {
                let setting = match backend {
                    Backend::Sqlite => "PRAGMA query_only = ON".to_owned(),
                    Backend::Postgres => {
                        format!("SET statement_timeout = {API_STATEMENT_TIMEOUT_MS}")
                    }
                };
                sqlx::query(&setting).execute(&mut *conn).await?;
                Ok(())
            })
        })
        .connect(&url)
        .await?;
    Ok(Some(pool))
}

impl StoreError {
    /// The database is overloaded rather than broken: no connection was
    /// free in time, or the server cancelled a statement that ran past its
    /// limit. Worth a `503` and a retry, not a `500`.
    pub fn is_overload(&self) -> bool {
        match self {
            StoreError::Db(sqlx::Error::PoolTimedOut) => true,
            // 57014: query_canceled (statement_timeout).
            StoreError::Db(sqlx::Error::Database(e)) => e.code().as_deref() == Some("57014"),
            _ => false,
        }
    }
}

fn clone_migrator(m: &sqlx::migrate::Migrator) -> sqlx::migrate::Migrator {
    sqlx::migrate::Migrator {
        migrations: m.migrations.clone(),
        ignore_missing: m.ignore_missing,
        locking: m.locking,
        no_tx: m.no_tx,
    }
}

/// Wall-clock milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

impl Store {
    /// Connects to `url` and applies the migrations. `sqlite://path` creates
    /// the file (and its directory) when missing; `postgres://…` uses an
    /// existing database.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let (pool, backend) = open_pool(url, &MIGRATOR).await?;
        Ok(Self { pool, backend })
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Inserts a new run; refuses an id that exists.
    pub async fn insert_run(
        &self,
        id: &str,
        plan_json: &str,
        state: &str,
    ) -> Result<RunRow, StoreError> {
        self.insert_run_with(id, plan_json, state, "low", None).await
    }

    /// Inserts a new run with its stakes and classification.
    pub async fn insert_run_with(
        &self,
        id: &str,
        plan_json: &str,
        state: &str,
        stakes: &str,
        classification: Option<&str>,
    ) -> Result<RunRow, StoreError> {
        let now = now_ms();
        let res = sqlx::query(
            "INSERT INTO runs (id, plan_json, state, created_at, updated_at, stakes, classification) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(plan_json)
        .bind(state)
        .bind(now)
        .bind(now)
        .bind(stakes)
        .bind(classification)
        .execute(&self.pool)
        .await?;
        if res.rows_affected() == 0 {
            return Err(StoreError::Duplicate(id.to_owned()));
        }
        Ok(RunRow {
            id: id.to_owned(),
            plan_json: plan_json.to_owned(),
            state: state.to_owned(),
            reason: None,
            created_at: now,
            updated_at: now,
            paused_at: None,
            stakes: stakes.to_owned(),
            classification: classification.map(str::to_owned),
        })
    }

    /// The run `id`, if any.
    pub async fn run(&self, id: &str) -> Result<Option<RunRow>, StoreError> {
        let row = sqlx::query(
            "SELECT id, plan_json, state, reason, created_at, updated_at, paused_at, stakes, classification \
             FROM runs WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| run_row(&r)).transpose()
    }

    /// Every run, newest first.
    pub async fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, plan_json, state, reason, created_at, updated_at, paused_at, stakes, classification \
             FROM runs ORDER BY created_at DESC, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(run_row).collect()
    }

    /// Runs in any of `states`.
    pub async fn runs_in(&self, states: &[&str]) -> Result<Vec<RunRow>, StoreError> {
        Ok(self.runs().await?.into_iter().filter(|r| states.contains(&r.state.as_str())).collect())
    }

    /// Replaces the plan of a run still in `expected_state`; false when the
    /// run moved on meanwhile.
    pub async fn update_plan(
        &self,
        id: &str,
        plan_json: &str,
        expected_state: &str,
    ) -> Result<bool, StoreError> {
        let res = sqlx::query(
            "UPDATE runs SET plan_json = $1, updated_at = $2 WHERE id = $3 AND state = $4",
        )
        .bind(plan_json)
        .bind(now_ms())
        .bind(id)
        .bind(expected_state)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// Moves a run from one of `from` to `to`; false when it was in none of them.
    pub async fn transition(
        &self,
        id: &str,
        from: &[&str],
        to: &str,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let Some(run) = self.run(id).await? else { return Ok(false) };
        if !from.contains(&run.state.as_str()) {
            return Ok(false);
        }
        let paused_at = if to == "paused" { Some(now_ms()) } else { None };
        let res = sqlx::query(
            "UPDATE runs SET state = $1, reason = $2, paused_at = $3, updated_at = $4 \
             WHERE id = $5 AND state = $6",
        )
        .bind(to)
        .bind(reason)
        .bind(paused_at)
        .bind(now_ms())
        .bind(id)
        .bind(&run.state)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// The sub-task rows of a run, by index.
    pub async fn subtasks(&self, run_id: &str) -> Result<Vec<SubtaskRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT idx, attempt, executor, phase, task_id, result_uri, output \
             FROM subtasks WHERE run_id = $1 ORDER BY idx",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(SubtaskRow {
                    idx: to_u32(r.try_get::<i64, _>("idx")?, "subtasks")?,
                    attempt: to_u32(r.try_get::<i64, _>("attempt")?, "subtasks")?,
                    executor: r.try_get("executor")?,
                    phase: r.try_get("phase")?,
                    task_id: r.try_get("task_id")?,
                    result_uri: r.try_get("result_uri")?,
                    output: r.try_get("output")?,
                })
            })
            .collect()
    }

    /// Writes a sub-task row (insert or replace).
    pub async fn put_subtask(&self, run_id: &str, row: &SubtaskRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO subtasks (run_id, idx, attempt, executor, phase, task_id, result_uri, output) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (run_id, idx) DO UPDATE SET attempt = excluded.attempt, \
             executor = excluded.executor, phase = excluded.phase, task_id = excluded.task_id, \
             result_uri = excluded.result_uri, output = excluded.output",
        )
        .bind(run_id)
        .bind(i64::from(row.idx))
        .bind(i64::from(row.attempt))
        .bind(&row.executor)
        .bind(&row.phase)
        .bind(&row.task_id)
        .bind(&row.result_uri)
        .bind(&row.output)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Appends an event unless one with the same `dedup` key exists; returns
    /// the stored event when it is new.
    pub async fn append_event(
        &self,
        run_id: &str,
        kind: &str,
        dedup: &str,
        body: &serde_json::Value,
    ) -> Result<Option<EventRow>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let exists = sqlx::query("SELECT seq FROM run_events WHERE run_id = $1 AND dedup = $2")
            .bind(run_id)
            .bind(dedup)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_some() {
            return Ok(None);
        }
        let seq: i64 = sqlx::query(
            "SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM run_events WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(&mut *tx)
        .await?
        .try_get("next")?;
        let mut body = body.clone();
        if let Some(obj) = body.as_object_mut() {
            obj.insert("seq".into(), seq.into());
            obj.insert("kind".into(), kind.into());
        }
        let text = body.to_string();
        sqlx::query(
            "INSERT INTO run_events (run_id, seq, kind, dedup, body, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(run_id)
        .bind(seq)
        .bind(kind)
        .bind(dedup)
        .bind(&text)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(EventRow { run_id: run_id.to_owned(), seq, kind: kind.to_owned(), body: text }))
    }

    /// Events of a run after `after_seq`, in order.
    pub async fn events_after(
        &self,
        run_id: &str,
        after_seq: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT run_id, seq, kind, body FROM run_events \
             WHERE run_id = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(run_id)
        .bind(after_seq)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(EventRow {
                    run_id: r.try_get("run_id")?,
                    seq: r.try_get("seq")?,
                    kind: r.try_get("kind")?,
                    body: r.try_get("body")?,
                })
            })
            .collect()
    }

    /// Queues a decision; returns its position.
    pub async fn push_decision(
        &self,
        run_id: &str,
        idx: Option<u32>,
        kind: &str,
        arg: Option<&str>,
    ) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let seq: i64 = sqlx::query(
            "SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM decisions WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(&mut *tx)
        .await?
        .try_get("next")?;
        sqlx::query(
            "INSERT INTO decisions (run_id, seq, idx, kind, arg, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(run_id)
        .bind(seq)
        .bind(idx.map(i64::from))
        .bind(kind)
        .bind(arg)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(seq)
    }

    /// Decisions not yet taken, oldest first.
    pub async fn pending_decisions(&self, run_id: &str) -> Result<Vec<DecisionRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, idx, kind, arg FROM decisions \
             WHERE run_id = $1 AND done_at IS NULL ORDER BY seq",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let idx: Option<i64> = r.try_get("idx")?;
                Ok(DecisionRow {
                    seq: r.try_get("seq")?,
                    idx: idx.map(|i| to_u32(i, "decisions")).transpose()?,
                    kind: r.try_get("kind")?,
                    arg: r.try_get("arg")?,
                })
            })
            .collect()
    }

    /// Marks a decision taken, with what came of it.
    pub async fn finish_decision(
        &self,
        run_id: &str,
        seq: i64,
        outcome: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE decisions SET done_at = $1, outcome = $2 WHERE run_id = $3 AND seq = $4",
        )
        .bind(now_ms())
        .bind(outcome)
        .bind(run_id)
        .bind(seq)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

fn run_row(r: &AnyRow) -> Result<RunRow, StoreError> {
    Ok(RunRow {
        id: r.try_get("id")?,
        plan_json: r.try_get("plan_json")?,
        state: r.try_get("state")?,
        reason: r.try_get("reason")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        paused_at: r.try_get("paused_at")?,
        stakes: r.try_get("stakes")?,
        classification: r.try_get("classification")?,
    })
}

fn to_u32(v: i64, table: &'static str) -> Result<u32, StoreError> {
    u32::try_from(v).map_err(|_| StoreError::Corrupt { table, detail: format!("index {v}") })
}

/// A scratch PostgreSQL database for tests, created fresh on the server at
/// `TESSERA_TEST_PG` (default `postgres://postgres@127.0.0.1:5432/postgres`);
/// returns its URL, or `None` with the reason printed when no server answers,
/// so only the PostgreSQL variants of tests are skipped. When
/// `TESSERA_TEST_PG` is set (CI sets it where a server runs), a server that
/// does not answer fails the test instead: a skipped variant must never pass
/// for one that ran.
///
/// # Panics
///
/// When `TESSERA_TEST_PG` is set and no scratch database can be made there.
pub async fn scratch_postgres_url(label: &str) -> Option<String> {
    sqlx::any::install_default_drivers();
    let required = std::env::var("TESSERA_TEST_PG").ok().filter(|v| !v.trim().is_empty());
    let admin = required
        .clone()
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let skip = |why: String| {
        assert!(
            required.is_none(),
            "TESSERA_TEST_PG is set, so the PostgreSQL variant of {label} must run: {why}"
        );
        eprintln!("skipping PostgreSQL variant of {label}: {why}");
    };
    let connect = AnyPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(std::time::Duration::from_secs(3))
        .connect(&admin);
    let pool = match connect.await {
        Ok(p) => p,
        Err(e) => {
            skip(format!("no server at {admin}: {e}"));
            return None;
        }
    };
    let name = format!(
        "tessera_{}_{}_{}",
        label.chars().filter(char::is_ascii_alphanumeric).take(24).collect::<String>(),
        std::process::id(),
        now_ms()
    )
    .to_lowercase();
    if let Err(e) = sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await {
        skip(format!("cannot create a database: {e}"));
        return None;
    }
    drop_stale_scratch(&pool).await;
    let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
    Some(format!("{base}/{name}"))
}

/// Drops scratch databases left by test processes that no longer run.
async fn drop_stale_scratch(pool: &AnyPool) {
    let Ok(rows) = sqlx::query(
        "SELECT datname::text AS datname FROM pg_database WHERE datname LIKE 'tessera\\_%'",
    )
    .fetch_all(pool)
    .await
    else {
        return;
    };
    for row in rows {
        let Ok(name) = row.try_get::<String, _>("datname") else { continue };
        // tessera_<label>_<pid>_<ms>
        let pid = name.rsplit('_').nth(1).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        }) {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name}")).execute(pool).await;
        }
    }
}

/// [`scratch_postgres_url`], connected and migrated.
pub async fn scratch_postgres(label: &str) -> Option<Store> {
    let url = scratch_postgres_url(label).await?;
    Some(Store::connect(&url).await.expect("scratch database migrates"))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sqlite() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("runs.db").display());
        (dir, Store::connect(&url).await.unwrap())
    }

    #[tokio::test]
    async fn every_sqlite_connection_gets_the_pragmas() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("p.db").display());
        let migrator = sqlx::migrate::Migrator::DEFAULT;
        let (pool, _) =
            open_pool_with(&url, &migrator, &["wal_autocheckpoint = 1234"]).await.unwrap();
        // Twice, with the pool's connection closed in between: a new
        // connection is set up the same way.
        for _ in 0..2 {
            let mut conn = pool.acquire().await.unwrap();
            let get = |p: &'static str| format!("PRAGMA {p}");
            let sync: i64 =
                sqlx::query(&get("synchronous")).fetch_one(&mut *conn).await.unwrap().get(0);
            let mode: String =
                sqlx::query(&get("journal_mode")).fetch_one(&mut *conn).await.unwrap().get(0);
            let every: i64 =
                sqlx::query(&get("wal_autocheckpoint")).fetch_one(&mut *conn).await.unwrap().get(0);
            assert_eq!((sync, mode.as_str(), every), (1, "wal", 1234), "NORMAL, WAL, 1234");
            conn.close().await.unwrap();
        }
    }

    /// Runs `check` against SQLite, and against PostgreSQL when a server answers.
    macro_rules! both_backends {
        ($($name:ident),* $(,)?) => {
            mod sqlite_backend {
                $(#[tokio::test]
                async fn $name() {
                    let (_dir, store) = super::sqlite().await;
                    super::$name(store).await;
                })*
            }
            mod postgres_backend {
                $(#[tokio::test]
                async fn $name() {
                    if let Some(store) = super::scratch_postgres(stringify!($name)).await {
                        assert_eq!(store.backend(), super::Backend::Postgres);
                        super::$name(store).await;
                    }
                })*
            }
        };
    }

    both_backends!(
        runs_insert_once_and_transition_only_from_expected_states,
        events_are_numbered_and_deduplicated,
        decisions_queue_in_order_until_finished,
        subtask_rows_upsert,
    );

    async fn runs_insert_once_and_transition_only_from_expected_states(store: Store) {
        store.insert_run("0x01", "{}", "proposed").await.unwrap();
        let high =
            store.insert_run_with("0x03", "{}", "proposed", "high", Some("{}")).await.unwrap();
        assert_eq!(store.run("0x03").await.unwrap().unwrap(), high);
        assert_eq!(store.run("0x01").await.unwrap().unwrap().stakes, "low");
        assert!(matches!(
            store.insert_run("0x01", "{}", "proposed").await,
            Err(StoreError::Duplicate(_))
        ));
        assert!(!store.transition("0x01", &["running"], "completed", None).await.unwrap());
        assert!(store.transition("0x01", &["proposed"], "paused", Some("why")).await.unwrap());
        let run = store.run("0x01").await.unwrap().unwrap();
        assert_eq!(run.state, "paused");
        assert_eq!(run.reason.as_deref(), Some("why"));
        assert!(run.paused_at.is_some());
        assert!(store.run("0x02").await.unwrap().is_none());
    }

    async fn events_are_numbered_and_deduplicated(store: Store) {
        let body = serde_json::json!({"index": 0});
        let first = store.append_event("r", "subtask_created", "a", &body).await.unwrap();
        assert_eq!(first.unwrap().seq, 1);
        assert!(store.append_event("r", "subtask_created", "a", &body).await.unwrap().is_none());
        let second = store.append_event("r", "subtask_paid", "b", &body).await.unwrap().unwrap();
        assert_eq!(second.seq, 2);
        let body: serde_json::Value = serde_json::from_str(&second.body).unwrap();
        assert_eq!(body["kind"], "subtask_paid");
        assert_eq!(body["seq"], 2);
        assert_eq!(store.events_after("r", 1).await.unwrap().len(), 1);
        assert_eq!(store.events_after("other", 0).await.unwrap().len(), 0);
    }

    async fn decisions_queue_in_order_until_finished(store: Store) {
        store.push_decision("r", Some(1), "approve", None).await.unwrap();
        store.push_decision("r", None, "cancel", Some("enough")).await.unwrap();
        let pending = store.pending_decisions("r").await.unwrap();
        assert_eq!(
            pending.iter().map(|d| d.kind.as_str()).collect::<Vec<_>>(),
            ["approve", "cancel"]
        );
        store.finish_decision("r", pending[0].seq, "applied").await.unwrap();
        let pending = store.pending_decisions("r").await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].arg.as_deref(), Some("enough"));
    }

    async fn subtask_rows_upsert(store: Store) {
        let mut row = SubtaskRow {
            idx: 0,
            attempt: 0,
            executor: "0xaa".into(),
            phase: "waiting".into(),
            task_id: None,
            result_uri: None,
            output: None,
        };
        store.put_subtask("r", &row).await.unwrap();
        row.phase = "paid".into();
        row.output = Some("text".into());
        store.put_subtask("r", &row).await.unwrap();
        assert_eq!(store.subtasks("r").await.unwrap(), vec![row]);
    }

    #[tokio::test]
    async fn sqlite_files_get_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b/runs.db");
        Store::connect(&format!("sqlite://{}", file.display())).await.unwrap();
        assert!(file.exists());
    }

    #[tokio::test]
    async fn unknown_url_is_refused() {
        assert!(matches!(Store::connect("mysql://x").await, Err(StoreError::UnsupportedUrl(_))));
    }
}
