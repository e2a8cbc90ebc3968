//! The arbiter: every dispute ends. It stores through `tessera-db` and
//! depends on no other service.
//!
//! - [`service`]: the arbiter watches `TaskDisputed` and appeal events,
//!   gathers the evidence, asks the judge, executes the verdict with the
//!   arbiter key exactly once (status checked first, verdict recorded before
//!   sending), finalizes rulings after their appeal window and claims the
//!   default refund of disputes left past their window; the appeal arbiter
//!   does the same for `RulingAppealed` with the appeal arbiter key.
//! - [`judge`]: verdicts, and the choice between the council and the rubric
//!   (a council failing twice rules for the client, or upholds the appealed
//!   ruling).
//! - [`council`]: the LLM council through `tessera_llm::ForcedTool` (forced function
//!   call, evidence as quoted data, consistency checks).
//! - [`rubric`]: the deterministic offline judge per capability.
//! - [`evidence`]: spec envelope, result and reason, hash-verified; on
//!   appeal also the ruling appealed and the appellant's reason.
//! - [`metrics`]: its queue, rulings and other actions, for `/metrics`.
//! - [`store`]: decisions, their level and verdict typed and stored as names,
//!   and the scan cursor of each role, migrations of the component `arbiter`.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod council;
pub mod evidence;
pub mod judge;
pub mod metrics;
pub mod rubric;
pub mod service;
pub mod store;

pub use judge::{Judge, Verdict, VerdictKind};
pub use service::{Action, Arbiter, ArbiterError};
