//! Durable run state through sqlx: a SQLite file by default, PostgreSQL when
//! the URL says so, migrations `orchestrator/migrations` (component
//! `orchestrator` of [`tessera_db::Schema`]).
//!
//! The store keeps what the chain cannot tell: the plan as approved, which
//! attempt of each sub-task is current, the outputs handed forward, the
//! event stream replayed to late subscribers, and the user's decisions.
//! Everything about money is re-read from the chain on every restart.
//!
//! Rows are text, as stored; run states, stakes, decision and event kinds
//! are passed in typed and written through [`crate::state`]'s words.
//!
//! - this file: the store, its errors and its rows;
//! - `runs`: runs and their state transitions;
//! - `subtasks`: sub-task progress rows;
//! - `events`: the run event stream;
//! - `decisions`: user decisions, queued and answered;
//! - `leases`: lane leases and the notifications between replicas
//!   (PostgreSQL only; see [`crate::replica`]).

use serde::{Deserialize, Serialize};
use sqlx::AnyPool;
pub use tessera_db::{
    API_STATEMENT_TIMEOUT_MS, Backend, FileLock, lock_sqlite, now_ms, open_api_pool, open_pool,
    open_pool_with, open_read_pool,
};
use tessera_db::{DbError, Schema};

mod decisions;
mod events;
mod feedback;
mod health;
mod leases;
mod owners;
mod runs;
pub mod sessions;
mod subtasks;

pub use decisions::{DecisionOutcome, DecisionRecord};
pub use feedback::{FEEDBACK_PAGE, FeedbackClaim, Settled};
pub use leases::{Claim, EVENTS_CHANNEL, LeaseRow, WAKE_CHANNEL, parse_event_payload};
pub use owners::GrantRow;
pub use runs::{MAX_RUN_LIST, RunSummary};

/// The migrations, embedded at build time.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The run store's schema.
const SCHEMA: Schema<'static> = Schema::new("orchestrator", &MIGRATOR).with_legacy_offset(0);

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or the connection failed.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// Opening or migrating the database failed.
    #[error(transparent)]
    Open(#[from] DbError),
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
    /// What was asked exists on PostgreSQL only.
    #[error("{0} need PostgreSQL")]
    NeedsPostgres(&'static str),
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRow {
    /// The plan id, `0x` + 64 hex.
    pub id: String,
    /// The plan as JSON (the current version, edits applied).
    pub plan_json: String,
    /// Where the run stands.
    pub state: String,
    /// Why it paused, closes or closed, in words, as the API shows it: the
    /// close reason, else the pause's.
    pub reason: Option<String>,
    /// Why it waits for a person (a sentence), while paused.
    #[serde(skip)]
    pub pause_reason: Option<String>,
    /// Why it closes or closed (`cancelled`, `dispute_refunded`,
    /// `checkpoint <name> rejected`), once closing.
    #[serde(skip)]
    pub close_reason: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// In replica mode, this replica's id: stored events are announced
    /// (`NOTIFY`) with it, so other replicas pass them to their subscribers.
    origin: Option<std::sync::Arc<str>>,
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
            StoreError::Open(e) => e.is_overload(),
            _ => false,
        }
    }
}

impl Store {
    /// Connects to `url` and applies the migrations. `sqlite://path` creates
    /// the file (and its directory) when missing; `postgres://…` uses an
    /// existing database.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let (pool, backend) = open_pool(url, &SCHEMA).await?;
        Ok(Self { pool, backend, origin: None })
    }

    /// This store, announcing every event it stores (`NOTIFY
    /// tessera_events`) and every wake-up asked of it as replica `origin`'s
    /// (PostgreSQL; nothing on SQLite).
    #[must_use]
    pub fn publishing(mut self, origin: &str) -> Self {
        self.origin = Some(origin.into());
        self
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }
}

fn to_u32(v: i64, table: &'static str) -> Result<u32, StoreError> {
    u32::try_from(v).map_err(|_| StoreError::Corrupt { table, detail: format!("index {v}") })
}

#[cfg(test)]
mod tests;
