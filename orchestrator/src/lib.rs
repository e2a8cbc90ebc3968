//! The orchestrator: plans, the durable plan runner, and its service.
//!
//! The orchestrator turns a brief into a [`plan::Plan`] of sub-tasks, each
//! settled through its own escrowed task on chain:
//!
//! - [`plan`]: the plan model and, in its modules, validation (shape, registry, budget), the
//!   dependency order and parallel waves, cost and duration roll-ups, and the
//!   edits the plan card offers (reorder, re-assign, drop);
//! - [`ceremony`]: from a classified brief to a proposed (or running) plan;
//! - [`select`], [`choose`]: executors chosen by price, record or both
//!   (the pure scoring, then the registry's offers and the indexer's records);
//! - [`state`]: run states, sub-task phases, decision and event kinds and
//!   run events, typed, with the one conversion to and from their text;
//! - [`runner`]: the plan runner (commands, supervised drivers, the pure
//!   step function, chain sync, views);
//! - [`events`]: run events derived from the escrow's logs;
//! - [`store`]: the durable run store (on `tessera-db`);
//! - [`api`], [`web`]: the HTTP API with its SSE stream, and the plan card
//!   UI it serves at `/`;
//! - [`service`]: all of it wired once, for `tessera serve` and the tests;
//! - [`replica`]: several processes on one PostgreSQL database (a lease
//!   per sponsor lane, `LISTEN/NOTIFY` between them);
//! - [`ops`]: what operators scrape and probe: runs by state, phase
//!   latencies, readiness (store and chain);
//! - [`envelope`]: the spec envelope codec, re-exported from
//!   `tessera-bindings` where every consumer (workers, indexer, arbiter) shares it.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod api;
pub mod auth;
pub mod ceremony;
pub mod choose;
pub mod condition;
pub mod events;
pub mod feedback;
pub mod grants;
pub mod ops;
pub mod plan;
pub mod replica;
pub mod runner;
pub mod select;
pub mod service;
pub mod state;
pub mod store;
pub mod web;

pub use tessera_bindings::envelope;
