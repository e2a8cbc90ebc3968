//! The indexer: every TaskEscrow and AgentRegistry event from the deploy
//! block into sqlx (SQLite by default, PostgreSQL at scale), exactly once and
//! safe across reorganisations, with plan lineage rebuilt from events alone.
//!
//! - [`ingest`]: adaptive backfill, live following, reorg detection.
//! - [`store`]: events and cursor in one transaction; derived tasks,
//!   transitions and agents; rollbacks; lineage queries.
//! - [`derive`]: the pure folds of a task and an agent.

pub mod api;
pub mod derive;
pub mod ingest;
pub mod store;

pub use ingest::{Indexer, IndexerConfig};
pub use store::IndexStore;
