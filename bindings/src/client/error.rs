//! Why an escrow call failed, with a contract's revert decoded when it is
//! one of ours.

use alloy::primitives::TxHash;

use crate::{
    revert::{self, ContractRevert},
    task::FoldError,
};

/// Why an escrow call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The contract reverted with one of its declared errors (boxed: some
    /// carry several words, and every `Result` of a call carries this type).
    #[error("{0}")]
    Revert(Box<ContractRevert>),
    /// The call failed for another reason (transport, gas estimation, unknown revert).
    #[error("contract call failed: {0}")]
    Call(#[from] alloy::contract::Error),
    /// The transaction was sent but failed to confirm.
    #[error("transaction did not confirm: {0}")]
    Pending(#[from] alloy::providers::PendingTransactionError),
    /// The transaction was sent but not mined in time.
    #[error("transaction {0} not mined within {1:?}")]
    NotMined(TxHash, std::time::Duration),
    /// The transaction was mined but reverted.
    #[error("transaction {0} reverted")]
    Reverted(TxHash),
    /// The transaction was dropped: the account's mined nonce passed its
    /// nonce and none of its versions (the first and each replacement) was
    /// mined: another transaction took the nonce, and this one never will
    /// be. Nothing it would have done happened; whoever sent it reads the
    /// chain again and sends what is still to do.
    #[error(
        "transaction dropped: nonce {nonce} was taken by another transaction, and none of its versions ({}) was mined",
        hashes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    Dropped {
        /// The nonce it was sent with.
        nonce: u64,
        /// Every version sent, the first first.
        hashes: Vec<TxHash>,
    },
    /// An RPC request failed.
    #[error("rpc: {0}")]
    Rpc(#[from] alloy::transports::TransportError),
    /// The events did not fold into a valid task.
    #[error(transparent)]
    Fold(#[from] FoldError),
    /// A create transaction emitted no `TaskCreated`.
    #[error("transaction {0} created no task")]
    NoTaskCreated(TxHash),
    /// Signing a permit failed.
    #[error("signing permit: {0}")]
    Sign(#[from] alloy::signers::Error),
    /// Nothing sent: the sender's fence (a replica's lease) says this
    /// process may not send now.
    #[error("not sent: this process may not send for the account now (its lease is not held)")]
    Fenced,
    /// One transaction carried the calls of several callers and failed for
    /// all of them: each holds the same failure.
    #[error("{0}")]
    Shared(std::sync::Arc<ClientError>),
}

impl ClientError {
    /// The decoded contract error, if the failure was one.
    pub fn revert(&self) -> Option<&ContractRevert> {
        match self {
            Self::Revert(r) => Some(r),
            Self::Shared(e) => e.revert(),
            _ => None,
        }
    }

    /// Whether the transaction was dropped ([`ClientError::Dropped`]),
    /// for this caller or the transaction it shared.
    pub fn is_dropped(&self) -> bool {
        match self {
            Self::Dropped { .. } => true,
            Self::Shared(e) => e.is_dropped(),
            _ => false,
        }
    }

    /// This failure for one more caller of the transaction it happened to:
    /// the same error where it can be copied, else [`ClientError::Shared`].
    pub fn share(self: &std::sync::Arc<Self>) -> Self {
        match self.as_ref() {
            Self::Revert(r) => Self::Revert(r.clone()),
            Self::Reverted(h) => Self::Reverted(*h),
            Self::Dropped { nonce, hashes } => {
                Self::Dropped { nonce: *nonce, hashes: hashes.clone() }
            }
            Self::NotMined(h, d) => Self::NotMined(*h, *d),
            Self::NoTaskCreated(h) => Self::NoTaskCreated(*h),
            Self::Shared(e) => e.share(),
            _ => Self::Shared(std::sync::Arc::clone(self)),
        }
    }
}

/// Turns a contract error into a typed revert when it is one of ours.
pub fn map_call(err: alloy::contract::Error) -> ClientError {
    match revert::decode(&err) {
        Some(r) => ClientError::Revert(Box::new(r)),
        None => ClientError::Call(err),
    }
}
