//! Contract bindings shared by every Tessera crate.
//!
//! The `sol!` bindings are generated from the forge artifacts committed under
//! `bindings/artifacts/` (exported by `make bindings`; `make test` fails when they
//! drift from a fresh `forge build`). Alongside them live the pieces every
//! service needs to talk to the contracts the same way:
//!
//! - [`revert`]: typed decoding of contract reverts into the generated error enums;
//! - [`deployment`]: the deployment record (chain id, addresses, deploy block)
//!   every service reads;
//! - [`task`]: the escrow stores only a hash of each task, so callers rebuild the
//!   task from its events; [`task::TaskState`] is that fold, shared by the
//!   orchestrator, the workers, the arbiter and the indexer;
//! - [`capability`]: capability names as the registry stores them (`bytes32`);
//! - [`heads`]: new-block notifications (websocket, or a timer) for service loops;
//! - [`envelope`]: the spec envelope `{parent, spec, source?, inputs?}` behind
//!   each task's spec URI, inline or content-addressed, verified on every read;
//! - [`injection`]: the one detector for text aimed at agents or the judge
//!   (prompt injection), used by the workers, the runner and the arbiter.

pub mod capability;
pub mod client;
pub mod deployment;
pub mod envelope;
pub mod heads;
pub mod injection;
pub mod permit;
pub mod revert;
pub mod task;

#[allow(missing_docs, unreachable_pub, clippy::too_many_arguments, missing_debug_implementations)]
mod generated {
    alloy::sol!(
        #[sol(rpc, all_derives)]
        TaskEscrow,
        "artifacts/TaskEscrow.json"
    );
    alloy::sol!(
        #[sol(rpc, all_derives)]
        AgentRegistry,
        "artifacts/AgentRegistry.json"
    );
    alloy::sol!(
        #[sol(rpc, all_derives)]
        MockUSDC,
        "artifacts/MockUSDC.json"
    );
}

pub use generated::{AgentRegistry, IAgentRegistry, ITaskEscrow, MockUSDC, TaskEscrow};
