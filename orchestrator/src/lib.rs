//! Plans, spec envelopes and the plan runner.
//!
//! The orchestrator turns a brief into a [`plan::Plan`] of sub-tasks, each
//! settled through its own escrowed task on chain. This crate holds the pure
//! groundwork the services build on:
//!
//! - [`plan`]: the plan model, its validation (shape, registry, budget), the
//!   dependency order and parallel waves, cost and duration roll-ups, and the
//!   edits the plan card offers (reorder, re-assign, drop);
//! - [`envelope`]: the JSON envelope each sub-task's spec URI resolves to, its
//!   inline (`data:`) or content-addressed (`sha256:`) encoding, and the
//!   hostile-input-safe decoding every consumer uses.

pub mod envelope;
pub mod plan;
