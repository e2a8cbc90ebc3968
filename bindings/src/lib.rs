//! Contract bindings shared by every Tessera crate.
//!
//! The `sol!` bindings are generated from the forge artifacts committed under
//! `bindings/artifacts/` (exported by `make bindings`; `make test` fails when they
//! drift from a fresh `forge build`). Alongside them live the pieces every
//! service needs to talk to the contracts the same way:
//!
//! - [`revert`]: typed decoding of contract reverts into the generated error enums;
//! - [`IdentityRegistry`] and [`ReputationRegistry`]: the ERC-8004
//!   ("Trustless Agents") registries an agent's identity and reputation live in,
//!   and [`erc8004`]: the registration file, the registry's cross-chain name
//!   and the agent wallet's EIP-712 proof;
//! - [`deployment`]: the deployment record (chain id, addresses, deploy block)
//!   every service reads;
//! - [`task`]: the escrow stores only a hash of each task, so callers rebuild the
//!   task from its events; [`task::TaskState`] is that fold, shared by the
//!   orchestrator, the workers, the arbiter and the indexer;
//! - [`capability`]: the one capability-name rule (1–31 bytes of
//!   `[a-z0-9-]`) and the names as the registry stores them (`bytes32`);
//! - [`card`]: the agent card (model, prices, validation) and its one URI
//!   encoding, written by the workers and the demo deployment, read by any
//!   service that shows a registered agent;
//! - [`heads`]: new-block notifications (websocket, or a timer) for service loops;
//! - [`feed`]: logs pushed by a websocket subscription, bounded, with the
//!   end of the feed reported so a service falls back to reading ranges;
//! - [`envelope`]: the spec envelope `{parent, spec, source?, inputs?}` behind
//!   each task's spec URI, inline or content-addressed, verified on every read;
//! - [`offers`]: who offers a capability, read in bounded pages, and the
//!   off-chain choice the escrow checks again at creation;
//! - [`usdc`]: the one USDC amount type (parse, format, serde, ranges);
//! - [`logs`]: one adaptive `eth_getLogs` range (halved when a provider
//!   refuses a range or a result count, grown back after successes);
//! - [`rpc_metrics`]: JSON-RPC calls and failures counted by method on every
//!   service's HTTP transport;
//! - [`transport`]: that HTTP transport, which keeps a 429's or 503's
//!   `Retry-After` whatever its body says.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod capability;
pub mod card;
pub mod catalogue;
pub mod client;
pub mod deployment;
pub mod describe;
pub mod envelope;
pub mod erc8004;
pub mod feed;
pub mod feedback;
pub mod grant;
pub mod heads;
pub mod logs;
pub mod offers;
pub mod permit;
pub mod retry;
pub mod revert;
pub mod rpc_metrics;
pub mod sender;
pub mod task;
pub mod transport;
pub mod typed_data;
pub mod usdc;

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
    alloy::sol!(
        #[sol(rpc, all_derives)]
        IdentityRegistry,
        "artifacts/IdentityRegistry.json"
    );
    alloy::sol!(
        #[sol(rpc, all_derives)]
        ReputationRegistry,
        "artifacts/ReputationRegistry.json"
    );
}

pub use generated::{
    AgentRegistry, IAgentRegistry, IIdentityRegistry, ITaskEscrow, IdentityRegistry, MockUSDC,
    ReputationRegistry, TaskEscrow,
};
