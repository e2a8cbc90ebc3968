//! Plans, spec envelopes and the plan runner.
//!
//! The orchestrator turns a brief into a [`plan::Plan`] of sub-tasks, each
//! settled through its own escrowed task on chain. This crate holds the pure
//! groundwork the services build on:
//!
//! - [`plan`]: the plan model, its validation (shape, registry, budget), the
//!   dependency order and parallel waves, cost and duration roll-ups, and the
//!   edits the plan card offers (reorder, re-assign, drop);
//! - [`runner`], [`store`], [`api`]: the plan runner, its durable store and
//!   the HTTP API with its SSE stream;
//! - [`web`]: the plan card UI the API serves at `/`;
//! - [`envelope`]: the spec envelope codec, re-exported from
//!   `tessera-bindings` where every consumer (workers, indexer, arbiter) shares it.

pub mod api;
pub mod ceremony;
pub mod events;
pub mod plan;
pub mod runner;
pub mod store;
pub mod web;

pub use tessera_bindings::envelope;
