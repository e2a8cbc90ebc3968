//! Executor agents: agent cards and the capabilities they run.
//!
//! A Tessera worker registers its capabilities (with prices) in the on-chain
//! `AgentRegistry`, accepts tasks from the escrow, runs a capability on the
//! task's spec and inputs, and delivers the result. This crate holds:
//!
//! - [`card`]: the agent card a worker is configured with, loaded from YAML
//!   and checked at load; the card model, its prices ([`Price`], a USDC
//!   amount) and its registry URI are [`tessera_bindings::card`]'s.
//! - [`offline`]: deterministic, rule-based implementations of the built-in
//!   capabilities (`summarize`, `translate`, `sentiment-classify`,
//!   `extract-entities`) and a dispatcher, [`offline::run`].
//! - [`llm`]: the LLM path (async-openai, function calling, arguments
//!   validated against the fields each capability promises) for a card
//!   that names a model; such a card needs a key ([`llm::MissingKey`]).
//! - [`brain`]: the one seam every brain goes through — the offline
//!   runner, the LLM runner, or the operator's own code behind a card's
//!   `handler` (HTTP or a command) — and its wire format, checked.
//! - [`runtime`]: the worker loop on chain — registration from the card
//!   (dropped capabilities withdrawn, instructions kept off chain), task
//!   discovery, run → deliver (accept and complete in one call), and claiming unreviewed payments.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod brain;
pub mod card;
pub mod llm;
pub mod offline;
pub mod runtime;

pub use card::{AgentCard, CapabilityOffer, CardError, Price, Role};
pub use offline::{OFFLINE_CAPABILITIES, Output, TaskInput, WorkerError, run};
