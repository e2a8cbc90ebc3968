//! Why an orchestrator operation failed, with the typed source kept.
//!
//! Two kinds: a request the caller can fix (an invalid plan, edit, amount,
//! capability name or brief; a run in the wrong state; no such run), and a
//! failure of ours (the store, the chain, the blob store, a stored row that
//! does not read). [`RunError::is_request`] tells which; the API answers the
//! first with a 4xx and its message, the second with a 5xx and a one-line
//! message, logging the cause.

use tessera_bindings::{
    capability::CapabilityError, client::ClientError, envelope::EnvelopeError,
    revert::ContractRevert, task::FoldError, usdc::UsdcError,
};
use tessera_classifier::ClassifyError;

use crate::{
    condition::ConditionError,
    plan::{PlanError, StepPath},
    state::{RowError, RunState},
    store::StoreError,
};

use super::Refusal;

/// Why an orchestrator operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The plan or the edit is invalid.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored row cannot be read.
    #[error("stored run: {0}")]
    Row(#[from] RowError),
    /// No such run.
    #[error("no run for plan {0}")]
    NotFound(String),
    /// The run is not in a state that allows this.
    #[error("run {id} is {state}: {action} is not possible now")]
    WrongState {
        /// The run.
        id: String,
        /// Its state.
        state: RunState,
        /// What was asked.
        action: &'static str,
    },
    /// The run moved on (another request or its driver changed it) while
    /// the operation ran.
    #[error("run {id} changed meanwhile: {action} is not possible now")]
    Changed {
        /// The run.
        id: String,
        /// What was asked.
        action: &'static str,
    },
    /// The request is refused for what it asks (see [`Refusal`]).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// An amount typed in a request is not an amount in USDC.
    #[error("{text:?} is not an amount in USDC")]
    Amount {
        /// The text typed.
        text: String,
        /// Why it does not read.
        #[source]
        source: UsdcError,
    },
    /// A capability name in the request cannot be a capability.
    #[error(transparent)]
    Capability(#[from] CapabilityError),
    /// The brief cannot be classified (empty, too long).
    #[error(transparent)]
    Classify(#[from] ClassifyError),
    /// A condition of the plan does not parse.
    #[error("step {step}: {source}")]
    Condition {
        /// The step whose condition it is.
        step: StepPath,
        /// Why.
        #[source]
        source: ConditionError,
    },
    /// The plan could not be encoded for the store.
    #[error("encoding the plan: {0}")]
    PlanEncoding(#[source] serde_json::Error),
    /// A sub-task's envelope could not be encoded or published (the blob
    /// store failed, or the envelope is over a limit).
    #[error("sub-task {index}: envelope: {source}")]
    Envelope {
        /// The sub-task.
        index: u32,
        /// Why.
        #[source]
        source: EnvelopeError,
    },
    /// A dispute's or an appeal's reason could not be published.
    #[error("publishing the reason: {0}")]
    Reason(#[source] EnvelopeError),
    /// What the run spent does not fit in an amount.
    #[error("spent amounts overflow")]
    SpentOverflow,
    /// A chain call or transaction failed (a revert keeps its decoded error).
    #[error("chain: {0}")]
    Chain(#[from] ClientError),
    /// Creating a sub-task's escrowed task failed.
    #[error("creating sub-task {index}: {source}")]
    Create {
        /// The sub-task.
        index: u32,
        /// Why.
        #[source]
        source: ClientError,
    },
    /// A sub-task has no progress row, or no on-chain record where its
    /// phase says there is one.
    #[error("sub-task {index}: {what}")]
    Inconsistent {
        /// The sub-task.
        index: u32,
        /// What is missing.
        what: &'static str,
    },
    /// The wave carrying this run's transactions stopped before it sent
    /// them (its leader was stopped); the next look reads the chain again.
    #[error("the wave carrying this step's transactions was abandoned before it was sent")]
    WaveAbandoned,
    /// A delivered result could not be fetched for now (its source failed
    /// transiently after retries): the next look tries again.
    #[error("a result is out of reach for now, will retry: {0}")]
    BlobUnavailable(#[source] Box<tessera_bindings::envelope::FetchError>),
    /// Blocking work (the blob store) did not finish.
    #[error("background work: {0}")]
    Blocking(#[from] tokio::task::JoinError),
    /// Money would move past what bounds it (see [`super::money`]).
    #[error(transparent)]
    Spend(#[from] super::money::SpendError),
    /// A high-stakes approval without a matching confirmation.
    #[error(transparent)]
    Confirmation(#[from] Unconfirmed),
    /// The capability catalogue a plan's conditions are checked against
    /// could not be read (the index's store failed).
    #[error(transparent)]
    Catalogue(#[from] tessera_bindings::catalogue::CatalogueError),
    /// This replica no longer holds its sponsor lane's lease (see
    /// [`crate::replica`]): nothing is sent for the lane's runs.
    #[error(
        "this replica does not hold the lease of lane {}: nothing sent",
        crate::replica::lane_of(*.0)
    )]
    LeaseLost(alloy::primitives::Address),
}

/// Why a high-stakes approval is refused.
#[derive(Debug, thiserror::Error)]
pub enum Unconfirmed {
    /// No confirmation came.
    #[error(
        "plan {0} is high-stakes: confirm its amount and recipients first (POST /api/runs/{0}/confirm), then approve with the token"
    )]
    Required(crate::state::RunId),
    /// The confirmation is another plan's, or of other amounts.
    #[error("the confirmation does not match this plan's exact amounts and recipients")]
    Mismatch,
}

impl From<alloy::transports::TransportError> for RunError {
    fn from(e: alloy::transports::TransportError) -> Self {
        Self::Chain(ClientError::Rpc(e))
    }
}

impl From<FoldError> for RunError {
    fn from(e: FoldError) -> Self {
        Self::Chain(ClientError::Fold(e))
    }
}

impl RunError {
    /// A state refusal for run `id`.
    pub(crate) fn wrong_state(id: &str, state: RunState, action: &'static str) -> Self {
        Self::WrongState { id: id.into(), state, action }
    }

    /// The run moved on while the operation ran.
    pub(crate) fn changed(id: &str, action: &'static str) -> Self {
        Self::Changed { id: id.into(), action }
    }

    /// Whether the request was refused for what it asked (the caller can
    /// fix it), as opposed to failing on our side (the store, the chain,
    /// the blob store, stored data) or for now (see
    /// [`Self::is_unavailable`]).
    pub fn is_request(&self) -> bool {
        match self {
            Self::Plan(_)
            | Self::NotFound(_)
            | Self::WrongState { .. }
            | Self::Changed { .. }
            | Self::Refused(_)
            | Self::Amount { .. }
            | Self::Capability(_)
            | Self::Classify(_)
            | Self::Condition { .. }
            | Self::Spend(_)
            | Self::Confirmation(_)
            | Self::Store(StoreError::Duplicate(_)) => true,
            Self::Store(_)
            | Self::Row(_)
            | Self::Chain(_)
            | Self::Create { .. }
            | Self::Inconsistent { .. }
            | Self::WaveAbandoned
            | Self::BlobUnavailable(_)
            | Self::Blocking(_)
            | Self::PlanEncoding(_)
            | Self::Envelope { .. }
            | Self::Reason(_)
            | Self::SpentOverflow
            | Self::Catalogue(_)
            | Self::LeaseLost(_) => false,
        }
    }

    /// Whether the operation failed for now and may succeed when tried
    /// again (this replica lost its lane, a wave was abandoned, a result is
    /// out of reach, the catalogue could not be read).
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Self::LeaseLost(_)
                | Self::WaveAbandoned
                | Self::BlobUnavailable(_)
                | Self::Catalogue(_)
        )
    }

    /// The contract's decoded refusal, when the chain refused.
    pub fn revert(&self) -> Option<&ContractRevert> {
        match self {
            Self::Chain(e) | Self::Create { source: e, .. } => e.revert(),
            _ => None,
        }
    }

    /// Whether a transaction was refused or reverted on chain, or dropped
    /// (another transaction took its nonce): nothing it would have done
    /// happened, and the next look at the chain tells what is still to do
    /// (as opposed to the node being unreachable).
    pub fn is_refusal(&self) -> bool {
        match self {
            Self::Chain(e) | Self::Create { source: e, .. } => {
                matches!(e, ClientError::Revert(_) | ClientError::Reverted(_)) || e.is_dropped()
            }
            _ => false,
        }
    }
}

/// A decoded revert as one short line: the error and its arguments, e.g.
/// `TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 1700000000 })`.
pub fn revert_text(revert: &ContractRevert) -> String {
    match revert {
        ContractRevert::Escrow(e) => format!("{e:?}"),
        ContractRevert::Registry(e) => format!("{e:?}"),
        ContractRevert::Token(e) => format!("{e:?}"),
        ContractRevert::Identity(e) => format!("{e:?}"),
        ContractRevert::Reputation(e) => format!("{e:?}"),
    }
}
