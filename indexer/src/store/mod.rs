//! The index through sqlx, one job per module:
//!
//! - [`writes`]: raw events, block hashes and the cursor written in one
//!   transaction (exactly once), with the agents those events touch.
//! - [`derivation`]: tasks and their checked transitions folded from their
//!   stored events behind a derivation mark ([`IndexStore::derive`]), so a
//!   backfill folds each task once; parent cycles flagged.
//! - [`bulk`]: a first backfill's task indexes set aside and built once
//!   at its end.
//! - [`rollback`]: a reorganisation's events removed, what they touched
//!   rebuilt, the reorganisation journalled.
//! - [`queries`]: what the API serves, as typed rows ([`rows`]); lineage
//!   through recursive queries that run on SQLite and PostgreSQL alike.
//! - [`evidence`]: an agent's record weighed by the money and the distinct
//!   funders behind it, so that it costs real money to fake.
//! - [`records`]: the store as the orchestrator's source of agents'
//!   records ([`tessera_records::AgentRecords`]).
//! - [`feedback`]: ERC-8004 identities and feedback, each matched against
//!   the escrow's settlements.
//! - [`catalogue`]: the live capability catalogue (the store as the
//!   orchestrator's [`tessera_bindings::catalogue::CatalogueSource`]).
//! - [`graph`]: the reads GraphQL adds: a task page under every filter,
//!   agent pages, a dispute's events decoded.
//! - [`outbox`]: the webhooks' subscribers and durable outbox: a
//!   delivery written with its event, a retraction with its rollback.
//! - [`totals`]: each executor's sums per funder and client, moved by
//!   every task write, so an agent's page never adds up all its tasks.
//! - [`codecs`]: how ids, logs, histories and amounts sit in their columns,
//!   and the column lists that drive each insert and its binds.

mod bulk;
pub mod catalogue;
mod codecs;
mod derivation;
pub mod evidence;
pub mod feedback;
pub mod graph;
mod lineage;
pub mod outbox;
mod queries;
pub mod records;
mod rollback;
pub mod rows;
pub mod totals;
mod writes;

#[cfg(test)]
pub(crate) mod outbox_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod totals_tests;

use alloy::{primitives::B256, rpc::types::Log};
use serde::Serialize;
use sqlx::AnyPool;
use tessera_db::{Backend, DbError, Schema, open_api_pool, open_pool_with, open_read_pool};

pub use rows::{
    AgentStats, AgentView, HistoryEntry, PlanTree, TaskDetail, TaskTransaction, TaskView, TreeNode,
};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The index's schema: migration `n` was version `2000 + n` in the single
/// history table of earlier releases.
const SCHEMA: Schema<'static> = Schema::new("indexer", &MIGRATOR).with_legacy_offset(2000);

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
    /// Webhook deliveries written with them.
    pub deliveries: usize,
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

/// One page of the task list under every filter either query surface
/// offers (REST's [`crate::api`], GraphQL's [`crate::graphql`]); `None` or
/// empty is no filter, and every one given must hold. Values are checked
/// by the caller ([`crate::params`]) and given in the form stored:
/// addresses checksummed, plan ids lower case, so each filter uses its
/// column's index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Status names, any of them (`Paid`, `Disputed`, …).
    pub status: Vec<String>,
    /// Executor address.
    pub executor: Option<String>,
    /// Client address.
    pub client: Option<String>,
    /// Funder address (the sponsor of a plan's own tasks; an agent for the
    /// tasks it hires for).
    pub funder: Option<String>,
    /// Plan id (0x + 64 hex).
    pub plan: Option<String>,
    /// Parent task id (decimal; `0` for roots).
    pub parent: Option<String>,
    /// Capability name the task was created for.
    pub capability: Option<String>,
    /// Created at or after this block.
    pub created_block_from: Option<i64>,
    /// Created at or before this block.
    pub created_block_to: Option<i64>,
    /// Created at or after this chain time (unix seconds).
    pub created_at_from: Option<i64>,
    /// Created at or before this chain time (unix seconds).
    pub created_at_to: Option<i64>,
    /// Changed (last event folded) at or after this block.
    pub changed_since_block: Option<i64>,
    /// Ever disputed (`true`) or never (`false`).
    pub disputed: Option<bool>,
    /// Approved with a rating below this (percent): the tasks whose client
    /// rated the work less than this; an unrated task never matches.
    pub rating_below: Option<i64>,
    /// Continue after this task id (a previous page's cursor).
    pub after: Option<String>,
    /// Page size (the caller bounds it; at least 1 is read).
    pub limit: i64,
}

/// Filters of the disputes list; unknown parameters are refused.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisputeFilter {
    /// Where the dispute stands: `awaiting_ruling`, `appealable`,
    /// `awaiting_appeal_ruling` or `settled`.
    pub state: Option<String>,
    /// Ruled in favour of: `worker`, `client` or `split` (the final
    /// ruling: the appeal's when there is one).
    pub verdict: Option<String>,
    /// Ever appealed.
    pub appealed: Option<bool>,
    /// Executor address.
    pub executor: Option<String>,
    /// Client address.
    pub client: Option<String>,
    /// Plan id.
    pub plan: Option<String>,
    /// Continue after this position (from the previous page's `next`).
    pub cursor: Option<String>,
    /// Page size (default 50, at most 500).
    pub limit: Option<i64>,
}

/// Filters of the agents list; unknown parameters are refused.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFilter {
    /// Registry status: `active`, `paused` or `left`.
    pub status: Option<String>,
    /// Offers this capability (an active or paused agent's offers).
    pub capability: Option<String>,
    /// Continue after this address (from the previous page's `next`).
    pub cursor: Option<String>,
    /// Page size (default and most: 500).
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
    /// Parsed cards and the last catalogue built (see [`catalogue`]).
    catalogue: std::sync::Arc<tokio::sync::Mutex<catalogue::CatalogueCache>>,
    /// The webhooks' chain id, bound and wake-up (see [`outbox`]).
    outbox: std::sync::Arc<outbox::Outbox>,
}

impl IndexStore {
    /// Connects and migrates.
    pub async fn connect(url: &str) -> Result<Self, DbError> {
        // Checkpoints in larger steps: a backfill writes the WAL fast.
        let (pool, backend) = open_pool_with(url, &SCHEMA, &["wal_autocheckpoint = 16384"]).await?;
        let reader = open_read_pool(url).await?;
        let shared_reader = reader.is_none() && backend == Backend::Sqlite;
        let reader = reader.unwrap_or_else(|| pool.clone());
        let api = open_api_pool(url).await?.unwrap_or_else(|| pool.clone());
        let store = Self {
            pool,
            reader,
            shared_reader,
            api,
            backend,
            catalogue: Default::default(),
            outbox: Default::default(),
        };
        store.count_totals().await?;
        // Indexes a backfill set aside when it stopped short of building them.
        store.build_set_aside().await?;
        Ok(store)
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `SELECT 1` on the API's connections: the database answers (`/readyz`).
    pub async fn ping(&self) -> Result<(), DbError> {
        sqlx::query("SELECT 1").execute(&self.api).await.map_err(DbError::from)?;
        Ok(())
    }
}
