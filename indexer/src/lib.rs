//! The indexer: every TaskEscrow and AgentRegistry event from the deploy
//! block into sqlx (SQLite by default, PostgreSQL at scale), exactly once and
//! safe across reorganisations, with plan lineage rebuilt from events alone.
//!
//! It stores through `tessera-db` (migrations of the component `indexer`)
//! and depends on no other service.
//!
//! - [`ingest`]: adaptive backfill, live following, reorg detection.
//! - [`fetch`]: specs fetched off the ingest path, through a bounded,
//!   funder-fair queue that keeps only envelopes.
//! - [`store`]: writes (events and cursor in one transaction), derivation
//!   (tasks, transitions, agents), reorg rollback, queries answering typed
//!   rows, and the codecs between values and columns.
//! - [`derive`]: the pure folds of a task and an agent.
//! - [`api`]: the read API over the store, with its OpenAPI document.
//! - [`graphql`]: GraphQL over the store, beside the API, bounded.
//! - [`webhooks`]: subscribers' filters, signed deliveries from a durable
//!   outbox, their registration routes.
//! - [`content`]: what the URIs events carry hold (envelopes, results,
//!   reasons, rationales), decoded for the API.
//! - [`params`]: parameters checked once for REST and GraphQL alike.
//! - [`metrics`]: its progress and events stored, for `/metrics`.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod api;
pub mod content;
pub mod derive;
pub mod fetch;
pub mod graphql;
pub mod ingest;
pub mod metrics;
pub mod params;
pub mod render;
pub mod store;
pub mod webhooks;

#[cfg(test)]
mod testkit;

pub use ingest::{Indexer, IndexerConfig};
pub use store::IndexStore;
