//! The classifier: a brief becomes a two-axis classification (atomic or
//! composite; low or high stakes) with confidences, a proposed plan, the
//! reasoning and the signals that fired.
//!
//! - [`classifier`]: one pass — model or offline planner, cross-check,
//!   caution rules — with its trace events.
//! - [`llm`]: the model path (the forced `classify_brief` call through
//!   `tessera_llm::ForcedTool`, schema validation, address stripping), given
//!   the catalogue as a bounded [`menu`].
//! - [`offline`]: the deterministic planner used without a key.
//! - [`catalogue_match`]: a brief's steps matched against the capability
//!   catalogue, bounded against stuffed cards; [`steps`] applies it to a
//!   reading.
//! - [`reading`]: how the rules read a brief — instruction apart from
//!   material, steps by their verbs.
//! - [`normalize`]: look-alike letters folded to the Latin they imitate.
//! - [`heuristic`]: the pure cross-check over the brief's words.
//! - [`strip`]: removes every address from a model's answer.
//! - [`classify`]: the result types, quadrants and ceremonies.
//!
//! Every capability the classifier names, from the rules or a model, follows
//! the one capability-name rule of `tessera_bindings::capability`.
//!
//! No model output chooses where money goes: executors and prices come from
//! the registry (in the orchestrator), never from here.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod catalogue_match;
pub mod classifier;
pub mod classify;
pub mod corpus;
pub mod goals;
pub mod heuristic;
pub mod llm;
pub mod menu;
pub mod normalize;
pub mod offline;
pub mod reading;
pub mod steps;
pub mod strip;

pub use classifier::{Classifier, ClassifyError};
pub use classify::{Ceremony, Classification, Decomposability, Quadrant, Stakes};
