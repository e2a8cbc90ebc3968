//! Why the worker loop failed.

use alloy::primitives::{Address, U256};
use tessera_bindings::{client::ClientError, envelope::FetchError};

/// Why the worker loop failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A contract call failed.
    #[error(transparent)]
    Client(#[from] Box<ClientError>),
    /// An RPC request failed.
    #[error("rpc: {0}")]
    Rpc(#[from] alloy::transports::TransportError),
    /// Storing a large result failed.
    #[error("storing a result: {0}")]
    Blob(#[source] tessera_bindings::envelope::EnvelopeError),
    /// The key given to prove the agent wallet is not the worker's.
    #[error("the wallet key is {key}'s, not the worker's ({worker})")]
    WalletKey {
        /// The key's address.
        key: Address,
        /// The worker's address.
        worker: Address,
    },
    /// Signing the agent wallet proof failed.
    #[error("signing the agent wallet proof: {0}")]
    WalletProof(#[source] alloy::signers::Error),
    /// An ERC-8004 agent id too large for a registration file.
    #[error("agent id {0} does not fit a registration file")]
    AgentIdRange(U256),
    /// A registration's receipt has no `Registered` event for the worker.
    #[error("transaction {0} registered no agent for this worker")]
    NoRegisteredEvent(alloy::primitives::B256),
    /// A blob (an envelope, a child's result) could not be fetched for now
    /// (a source failed transiently after retries): tried again next pass.
    #[error("blob unavailable for now, will retry: {0}")]
    BlobUnavailable(#[source] Box<FetchError>),
}

impl From<ClientError> for RuntimeError {
    fn from(e: ClientError) -> Self {
        Self::Client(Box::new(e))
    }
}
