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
    /// The orchestrator (or the indexer rebuilding a tree) refused or failed.
    #[error("orchestrator: {0}")]
    Orchestrator(String),
    /// No active agent offers a capability the demo needs.
    #[error("no active agent offers `{0}`")]
    NoOffer(String),
    /// A party could not be set up: its key, home, registration or chain
    /// connection.
    #[error("key: {0}")]
    Key(String),
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
