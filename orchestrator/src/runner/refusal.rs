//! Why a request is refused for what it asks, each cause its own variant
//! with the facts it names (the API answers it with a 4xx and this text).

use alloy::primitives::{Address, B256, U256};
use tessera_bindings::{grant::GrantError, usdc::Usdc};

use super::chain::PermitShape;
use crate::{auth::AuthError, state::RunId};

/// Why a request is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A confirmation asked of a plan that is not high-stakes.
    #[error("only high-stakes plans need a confirmation")]
    NoConfirmationNeeded,
    /// The typed amount is not the plan's total.
    #[error("typed amount {0} USDC does not match the plan's total")]
    AmountMismatch(Usdc),
    /// The typed recipients are not the plan's executors.
    #[error("typed recipients do not match the agents this plan pays")]
    RecipientsMismatch,
    /// A high-stakes plan's review cannot be relaxed.
    #[error("a high-stakes plan keeps manual review")]
    ManualReviewKept,
    /// In operator mode, an approval without the sponsor's grant.
    #[error(
        "plan {0} needs its sponsor's signed grant to be approved (GET /api/runs/{0}/grant, then approve with it)"
    )]
    GrantMissing(RunId),
    /// The sponsor cannot pay the plan.
    #[error("the sponsor holds {balance} but the plan costs {cost} (USDC base units)")]
    BalanceShort {
        /// What the sponsor holds.
        balance: U256,
        /// What the plan costs.
        cost: u128,
    },
    /// A dispute or an appeal with an empty reason.
    #[error("a dispute or an appeal needs a reason")]
    ReasonMissing,
    /// An appeal of a sub-task that was not ruled.
    #[error("sub-task {index} is {phase}: only a ruling can be appealed")]
    NotRuled {
        /// The sub-task.
        index: u32,
        /// Its phase's word (`not started` before it has one).
        phase: &'static str,
    },
    /// A checkpoint decision names none of the plan's.
    #[error("the plan has no checkpoint {0:?}")]
    NoCheckpoint(String),
    /// An amount with a decision that takes none.
    #[error("only a change of executor takes an amount")]
    AmountWithoutChange,
    /// Nobody else offers the capability.
    #[error(
        "no other active agent offers {capability:?} for sub-task {index}{}",
        besides.map(|e| format!(" besides {e}")).unwrap_or_default()
    )]
    NoOtherAgent {
        /// The sub-task's capability.
        capability: String,
        /// The sub-task.
        index: u32,
        /// Its executor, left out.
        besides: Option<Address>,
    },
    /// A grant for another plan.
    #[error("the grant is for plan {granted}, not for this plan {plan}")]
    GrantForOtherPlan {
        /// The grant's plan.
        granted: B256,
        /// This run's.
        plan: B256,
    },
    /// A grant naming another operator.
    #[error("the grant names operator {granted}, this orchestrator's operator is {operator}")]
    GrantForOtherOperator {
        /// The grant's operator.
        granted: Address,
        /// This orchestrator's key.
        operator: Address,
    },
    /// A grant given by someone other than the signed-in sponsor.
    #[error("the grant's sponsor {granted} is not the signed-in sponsor {sponsor}")]
    GrantOfAnotherSponsor {
        /// The grant's sponsor.
        granted: Address,
        /// Who signed in.
        sponsor: Address,
    },
    /// A budget below the plan's cost.
    #[error("the grant's budget {budget} is below the plan's cost {cost} (USDC base units)")]
    BudgetShort {
        /// The grant's budget.
        budget: u128,
        /// The plan's cost.
        cost: u128,
    },
    /// A grant that lapses too soon.
    #[error("the grant expires at {until} (unix), less than an hour from now ({now})")]
    GrantLapsing {
        /// When it lapses.
        until: u64,
        /// The chain's time.
        now: u64,
    },
    /// The grant's signature is not the sponsor's.
    #[error("the grant's signature is not {0}'s (for this chain and escrow)")]
    GrantSignature(Address),
    /// The grant's signature could not be checked.
    #[error(transparent)]
    GrantUnverified(AuthError),
    /// The grant's ECDSA signature does not recover to its sponsor.
    #[error(transparent)]
    GrantRecovery(GrantError),
    /// The grant is revoked on chain.
    #[error("the grant is revoked on chain")]
    GrantRevoked,
    /// The sponsor holds less than the plan costs.
    #[error("the sponsor {sponsor} holds {balance} but the plan costs {cost} (USDC base units)")]
    SponsorShort {
        /// The sponsor.
        sponsor: Address,
        /// What it holds.
        balance: U256,
        /// What the plan costs.
        cost: U256,
    },
    /// The escrow may pull less than the plan costs, and no permit came.
    #[error(
        "the sponsor lets the escrow pull {allowance} but the plan costs {cost} (USDC base units): sign a permit (GET /api/runs/{id}/grant asks for one) or approve the escrow"
    )]
    AllowanceShort {
        /// The run.
        id: String,
        /// What the escrow may pull.
        allowance: U256,
        /// What the plan costs.
        cost: U256,
    },
    /// A permit whose value is not a number.
    #[error("the permit's value {0:?} is not a number")]
    PermitValue(String),
    /// A permit below the plan's cost.
    #[error("the permit allows {value}, below the plan's cost {cost}")]
    PermitShort {
        /// What it allows.
        value: U256,
        /// What the plan costs.
        cost: U256,
    },
    /// A permit that lapses too soon.
    #[error("the permit's deadline is less than an hour away")]
    PermitLapsing,
    /// The permit's signature is not the sponsor's.
    #[error("the permit's signature is not {sponsor}'s (value, nonce {nonce}, deadline)")]
    PermitSignature {
        /// The sponsor.
        sponsor: Address,
        /// The token's nonce it was checked with.
        nonce: U256,
    },
    /// A permit's signature of the wrong shape.
    #[error(transparent)]
    PermitShape(PermitShape),
    /// A grant or permit that does not encode (it always does).
    #[error("the grant does not encode: {0}")]
    GrantEncoding(serde_json::Error),
    /// An approved run's stored grant that does not read.
    #[error("the stored grant does not read: {0}")]
    StoredGrantUnread(serde_json::Error),
    /// A stored grant or permit that does not read.
    #[error("run {id}'s stored {what} does not parse: {source}")]
    StoredGrant {
        /// The run.
        id: String,
        /// `grant` or `permit`.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
}
