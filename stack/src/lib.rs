//! The whole of Tessera in one process, on a local chain.
//!
//! - the stack (this crate's root): blob homes served over HTTP
//!   ([`Home`]), offline workers for the demo agents ([`spawn_worker`] and
//!   its variants), the orchestrator with its runner
//!   ([`start_orchestrator`]) and a plan's tree as the indexer rebuilds it
//!   ([`indexed_tree`]), for the demo, the benchmarks and the end-to-end
//!   tests;
//! - [`demo`]: `make demo`, one full task lifecycle then plans run through
//!   every service, printed step by step;
//! - [`demo_homes`]: the demo's parties, each at a home of its own.
//!
//! The chain tooling it builds on (anvil, deploy, actors, lifecycle driver,
//! gas bench) is `tessera-anvil`, which depends on no service.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod demo;
pub mod demo_homes;
mod stack;

pub use stack::{
    Blobs, Home, WorkerCard, indexed_tree, spawn_polling_worker, spawn_worker, spawn_worker_at,
    start_orchestrator, start_polling_orchestrator,
};

/// Errors of the in-process stack and the demo.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The chain tooling failed: anvil, a deploy, a contract call or an
    /// RPC request.
    #[error(transparent)]
    Anvil(#[from] tessera_anvil::Error),
    /// A demo worker failed to run its capability.
    #[error("worker: {0}")]
    Worker(#[from] tessera_workers::WorkerError),
    /// The orchestrator refused or failed.
    #[error("orchestrator: {0}")]
    Orchestrator(#[source] Box<tessera_orchestrator::runner::RunError>),
    /// The run store failed.
    #[error("orchestrator: {0}")]
    Store(#[from] tessera_orchestrator::store::StoreError),
    /// A demo plan does not read.
    #[error("orchestrator: {0}")]
    Plan(#[from] tessera_orchestrator::plan::PlanError),
    /// The indexer rebuilding a tree failed.
    #[error("indexer: {0}")]
    Index(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The demo's arbiter could not be set up.
    #[error("arbiter: {0}")]
    Arbiter(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A demo plan did not end within the time the demo gives it.
    #[error("{plan} did not {end} in {secs} s")]
    Unfinished {
        /// Which plan.
        plan: String,
        /// What it was to do: `finish`, `settle`.
        end: &'static str,
        /// How long it was given.
        secs: u64,
    },
    /// A count in the settings is zero where one is needed.
    #[error("{0} must be at least 1")]
    AtLeastOne(&'static str),
    /// A plan ended failed, for the reason its run states.
    #[error("plan failed: {0}")]
    PlanFailed(String),
    /// A counting RPC proxy could not start.
    #[error("rpc proxy: {0}")]
    Proxy(#[source] std::io::Error),
    /// No active agent offers a capability the demo needs.
    #[error("no active agent offers `{0}`")]
    NoOffer(String),
    /// The demo names an agent that is not one of the demo agents.
    #[error("no demo agent {0}")]
    UnknownAgent(String),
    /// The chain has fewer accounts than the demo needs.
    #[error("the chain has no account #{0}")]
    NoAccount(usize),
    /// A demo agent's card does not read.
    #[error("card: {0}")]
    Card(#[from] tessera_workers::CardError),
    /// An agent could not register (or update) its offers.
    #[error("registering {agent}: {source}")]
    Register {
        /// The agent.
        agent: alloy::primitives::Address,
        /// Why.
        #[source]
        source: tessera_workers::runtime::RuntimeError,
    },
    /// A home's directory or blob gateway could not be set up.
    #[error("home {dir}: {source}")]
    Home {
        /// The home's directory.
        dir: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A home's gateway URL does not read as a hint.
    #[error("gateway URL: {0}")]
    GatewayUrl(#[from] tessera_bindings::envelope::HintError),
    /// A contract call failed.
    #[error("chain: {0}")]
    Call(#[from] alloy::contract::Error),
    /// A file or directory could not be written.
    #[error("writing {path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl From<tessera_orchestrator::runner::RunError> for Error {
    fn from(err: tessera_orchestrator::runner::RunError) -> Self {
        Self::Orchestrator(Box::new(err))
    }
}

impl From<tessera_anvil::chain::ChainError> for Error {
    fn from(err: tessera_anvil::chain::ChainError) -> Self {
        Self::Anvil(err.into())
    }
}

impl From<tessera_bindings::client::ClientError> for Error {
    fn from(err: tessera_bindings::client::ClientError) -> Self {
        Self::Anvil(err.into())
    }
}

impl From<alloy::transports::TransportError> for Error {
    fn from(err: alloy::transports::TransportError) -> Self {
        Self::Anvil(err.into())
    }
}

impl From<tessera_bindings::usdc::UsdcError> for Error {
    fn from(err: tessera_bindings::usdc::UsdcError) -> Self {
        Self::Anvil(err.into())
    }
}
