//! Local chain tooling for Tessera.
//!
//! - [`chain`]: start anvil (deterministic mnemonic, chosen or free port,
//!   optional state file); the process is killed when the handle drops, so it
//!   is stopped on every exit path, errors and panics included;
//! - [`actors`]: the well-known role accounts of a local chain and a provider
//!   whose wallet signs for all of them;
//! - [`deploy`]: deploy MockUSDC, AgentRegistry and TaskEscrow from Rust, fund
//!   sponsors, register the demo agents (their cards are
//!   `tessera_bindings::card` cards, published with the one card URI) and
//!   write the deployment record;
//! - [`lifecycle`]: a driver that walks tasks through the escrow and
//!   records each step's receipt;
//! - [`gas`], [`gas_erc8004`]: the gas bench (receipt `gasUsed` per
//!   lifecycle step, and of the ERC-8004 registries);
//! - [`standin`]: a stand-in for a hosted JSON-RPC provider in front of
//!   anvil (rate limits, seeded 503s, log caps, refused methods), for the
//!   end-to-end suite and the plan bench.
//!
//! It depends on the contract bindings alone, none of the services: the
//! demo and the in-process stacks that run every service are in
//! `tessera-stack`, which builds on this crate.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod actors;
pub mod chain;
pub mod deploy;
pub mod gas;
pub mod gas_erc8004;
pub mod gas_grants;
pub mod lifecycle;
pub mod standin;

/// Errors of the local chain tooling.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// anvil could not be found or started.
    #[error(transparent)]
    Chain(#[from] chain::ChainError),
    /// An escrow call failed.
    #[error(transparent)]
    Escrow(Box<tessera_bindings::client::ClientError>),
    /// A contract call (deploy, registry, token) failed.
    #[error("{context}: {source}")]
    Contract {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: Box<tessera_bindings::client::ClientError>,
    },
    /// An RPC request failed.
    #[error("rpc: {0}")]
    Rpc(#[from] alloy::transports::TransportError),
    /// The deployment record could not be written.
    #[error(transparent)]
    Deployment(#[from] tessera_bindings::deployment::DeploymentError),
    /// A token amount is not a USDC amount Tessera can show.
    #[error(transparent)]
    Amount(#[from] tessera_bindings::usdc::UsdcError),
    /// The token given to a deploy is not one Tessera can settle in.
    #[error("{0}")]
    Token(String),
    /// An existing ERC-8004 registry given to a deploy cannot be used.
    #[error("{0}")]
    Registry(String),
    /// A key could not be derived or used.
    #[error("key: {0}")]
    Key(String),
    /// Writing a report failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Attaches context to a failed contract call.
pub fn contract_err(context: impl Into<String>) -> impl FnOnce(alloy::contract::Error) -> Error {
    let context = context.into();
    move |err| Error::Contract {
        context,
        source: Box::new(tessera_bindings::client::map_call(err)),
    }
}

impl From<tessera_bindings::client::ClientError> for Error {
    fn from(err: tessera_bindings::client::ClientError) -> Self {
        Self::Escrow(Box::new(err))
    }
}
