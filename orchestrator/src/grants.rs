//! A sponsor's grant for a proposed plan, on an operator-mode
//! orchestrator: the terms the sponsor is asked to sign
//! ([`Orchestrator::grant_request`]), and the checks a signed grant (and
//! the EIP-2612 permit that may come with it) passes before the plan is
//! approved ([`Orchestrator::check_grant`]): the terms match the plan, this
//! operator and the signer; the signature is the sponsor's (ECDSA, or
//! ERC-1271 for a contract wallet); the grant is not revoked on chain; the
//! sponsor holds the plan's cost and lets the escrow pull it (or signed a
//! permit that will).

use alloy::{
    primitives::{Address, Bytes, U256},
    sol_types::{SolStruct, eip712_domain},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_bindings::{
    MockUSDC, TaskEscrow,
    client::map_call,
    grant::{self, GrantTerms, SignedGrant},
    permit::Permit,
};

use crate::{
    auth,
    plan::Plan,
    runner::{Orchestrator, Refusal, RunError},
    state::RunState,
};

/// How long a grant asked for stays valid: 7 days.
pub const GRANT_VALIDITY_SECS: u64 = 7 * 24 * 3600;
/// The least time a grant must have left when it is given: 1 hour.
pub const MIN_GRANT_LEFT_SECS: u64 = 3600;

/// What a sponsor is asked to sign for a plan (`GET /api/runs/{id}/grant`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrantRequest {
    /// The grant's terms.
    pub terms: GrantTerms,
    /// Its `eth_signTypedData_v4` payload.
    pub typed_data: Value,
    /// What the escrow may pull from the sponsor now, base units.
    pub allowance: String,
    /// What the plan costs, base units.
    pub needed: String,
    /// The EIP-2612 permit to sign as well, when the allowance is short.
    pub permit: Option<PermitRequest>,
    /// The grant the run was approved with, once it was (then `terms`
    /// are its terms, and nothing is left to sign): what the sponsor
    /// revokes on chain (`revokeGrant`).
    pub granted: Option<SignedGrant>,
}

/// A permit the sponsor is asked to sign with the grant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PermitRequest {
    /// The allowance it sets, base units.
    pub value: String,
    /// The sponsor's permit nonce at the token.
    pub nonce: String,
    /// Until when it may be submitted (unix seconds).
    pub deadline: u64,
    /// Its `eth_signTypedData_v4` payload.
    pub typed_data: Value,
}

/// A permit the sponsor signed (what `POST /api/runs/{id}/approve` takes,
/// and what is stored with the grant for the runner to submit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermitGiven {
    /// The allowance it sets, base units (decimal).
    pub value: String,
    /// Until when it may be submitted (unix seconds).
    pub deadline: u64,
    /// 65 bytes, `r ‖ s ‖ v`.
    pub signature: Bytes,
}

/// A grant that passed every check.
#[derive(Debug, Clone)]
pub struct CheckedGrant {
    /// The grant.
    pub grant: SignedGrant,
    /// The permit, when one came and the allowance needs it.
    pub permit: Option<PermitGiven>,
}

impl Orchestrator {
    /// The proposed plan of run `id` (not found or not proposed: refused).
    async fn proposed(&self, id: &str, action: &'static str) -> Result<Plan, RunError> {
        let row = self.store().run(id).await?.ok_or_else(|| RunError::NotFound(id.into()))?;
        if row.state != RunState::Proposed.as_str() {
            let state = RunState::parse(&row.state).unwrap_or(RunState::Proposed);
            return Err(RunError::wrong_state(id, state, action));
        }
        Ok(Plan::from_json(&row.plan_json)?)
    }

    /// The token's EIP-712 domain (read from the token, ERC-5267).
    async fn token_domain(&self) -> Result<alloy::sol_types::Eip712Domain, RunError> {
        let token = MockUSDC::new(self.chain().deployment().token, self.chain().provider());
        let d = token.eip712Domain().call().await.map_err(map_call)?;
        Ok(eip712_domain! {
            name: d.name,
            version: d.version,
            chain_id: d.chainId.saturating_to::<u64>(),
            verifying_contract: d.verifyingContract,
        })
    }

    /// The grant `sponsor` is asked to sign for run `id`: for the plan's
    /// total cost, to this orchestrator's operator, valid for 7 days of
    /// chain time, with a fresh nonce; and a permit to sign as well when
    /// the sponsor's allowance to the escrow is short of the cost.
    pub async fn grant_request(
        &self,
        id: &str,
        sponsor: Address,
    ) -> Result<GrantRequest, RunError> {
        let chain = self.chain();
        let deployment = chain.deployment();
        let approved = match self.store().grant(id).await? {
            Some(row) => {
                let row = self.store().run(id).await?.map(|r| r.state).zip(Some(row));
                row.filter(|(state, _)| state != RunState::Proposed.as_str())
            }
            None => None,
        };
        if let Some((_, row)) = approved {
            let granted: SignedGrant =
                serde_json::from_str(&row.grant_json).map_err(Refusal::StoredGrantUnread)?;
            let terms = granted.terms.clone();
            return Ok(GrantRequest {
                typed_data: grant::typed_data(deployment.chain_id, deployment.task_escrow, &terms),
                needed: terms.budget.to_string(),
                allowance: String::new(),
                terms,
                permit: None,
                granted: Some(granted),
            });
        }
        let plan = self.proposed(id, "a grant request").await?;
        let total = plan.total_cost()?;
        let now = self.chain_now().await?;
        let terms = GrantTerms {
            sponsor,
            plan_id: plan.id.into_inner(),
            operator: chain.sponsor(),
            budget: total.base_units(),
            valid_until: now + GRANT_VALIDITY_SECS,
            nonce: U256::from_be_bytes(auth::random_b256().0),
        };
        let typed_data = grant::typed_data(deployment.chain_id, deployment.task_escrow, &terms);
        let token = MockUSDC::new(deployment.token, chain.provider());
        let allowance =
            token.allowance(sponsor, deployment.task_escrow).call().await.map_err(map_call)?;
        let needed = total.to_u256();
        let permit = if allowance < needed {
            // The permit sets the allowance: what is left of it for the
            // sponsor's other grants, and this plan's cost on top.
            let value = allowance.saturating_add(needed);
            let nonce = token.nonces(sponsor).call().await.map_err(map_call)?;
            let domain = self.token_domain().await?;
            let deadline = terms.valid_until;
            let typed_data = tessera_bindings::permit::typed_data(
                &domain,
                &Permit {
                    owner: sponsor,
                    spender: deployment.task_escrow,
                    value,
                    nonce,
                    deadline: U256::from(deadline),
                },
            );
            Some(PermitRequest {
                value: value.to_string(),
                nonce: nonce.to_string(),
                deadline,
                typed_data,
            })
        } else {
            None
        };
        Ok(GrantRequest {
            terms,
            typed_data,
            allowance: allowance.to_string(),
            needed: needed.to_string(),
            permit,
            granted: None,
        })
    }

    /// Checks `grant` (and `permit`) for run `id`, given by `sponsor`:
    /// refused (a request error, 422) when the terms do not fit the plan,
    /// this operator or the signer, the grant is revoked, the signature is
    /// not the sponsor's, or the sponsor's balance or allowance is short.
    pub async fn check_signed_grant(
        &self,
        id: &str,
        sponsor: Address,
        grant: SignedGrant,
        permit: Option<PermitGiven>,
    ) -> Result<CheckedGrant, RunError> {
        let plan = self.proposed(id, "approval").await?;
        let total = plan.total_cost()?;
        let chain = self.chain();
        let deployment = chain.deployment();
        let t = &grant.terms;
        if t.sponsor != sponsor {
            return Err(Refusal::GrantOfAnotherSponsor { granted: t.sponsor, sponsor }.into());
        }
        let plan_id = plan.id.into_inner();
        if t.plan_id != plan_id {
            return Err(Refusal::GrantForOtherPlan { granted: t.plan_id, plan: plan_id }.into());
        }
        if t.operator != chain.sponsor() {
            let (granted, operator) = (t.operator, chain.sponsor());
            return Err(Refusal::GrantForOtherOperator { granted, operator }.into());
        }
        if t.budget < total.base_units() {
            return Err(Refusal::BudgetShort { budget: t.budget, cost: total.base_units() }.into());
        }
        let now = self.chain_now().await?;
        if t.valid_until < now + MIN_GRANT_LEFT_SECS {
            return Err(Refusal::GrantLapsing { until: t.valid_until, now }.into());
        }
        let digest = grant::digest(deployment.chain_id, deployment.task_escrow, t);
        match auth::verify_hash(chain.provider(), digest, sponsor, &grant.signature).await {
            Ok(()) => {}
            Err(auth::AuthError::Signature(_)) => {
                return Err(Refusal::GrantSignature(sponsor).into());
            }
            Err(e) => return Err(Refusal::GrantUnverified(e).into()),
        }
        let escrow = TaskEscrow::new(deployment.task_escrow, chain.provider());
        let state = escrow.grantSpent(t.to_sol()).call().await.map_err(map_call)?;
        if state.revoked {
            return Err(Refusal::GrantRevoked.into());
        }
        let token = MockUSDC::new(deployment.token, chain.provider());
        let needed = total.to_u256();
        let balance = token.balanceOf(sponsor).call().await.map_err(map_call)?;
        if balance < needed {
            return Err(Refusal::SponsorShort { sponsor, balance, cost: needed }.into());
        }
        let allowance =
            token.allowance(sponsor, deployment.task_escrow).call().await.map_err(map_call)?;
        let permit = match permit {
            _ if allowance >= needed => None,
            None => {
                let id = id.to_owned();
                return Err(Refusal::AllowanceShort { id, allowance, cost: needed }.into());
            }
            Some(p) => {
                let value = U256::from_str_radix(&p.value, 10)
                    .map_err(|_| Refusal::PermitValue(p.value.clone()))?;
                if value < needed {
                    return Err(Refusal::PermitShort { value, cost: needed }.into());
                }
                if p.deadline < now + MIN_GRANT_LEFT_SECS {
                    return Err(Refusal::PermitLapsing.into());
                }
                let nonce = token.nonces(sponsor).call().await.map_err(map_call)?;
                let permit = Permit {
                    owner: sponsor,
                    spender: deployment.task_escrow,
                    value,
                    nonce,
                    deadline: U256::from(p.deadline),
                };
                let hash = permit.eip712_signing_hash(&self.token_domain().await?);
                if !auth::recovers_to(hash, sponsor, &p.signature) {
                    return Err(Refusal::PermitSignature { sponsor, nonce }.into());
                }
                Some(p)
            }
        };
        Ok(CheckedGrant { grant, permit })
    }

    /// The newest block's timestamp.
    async fn chain_now(&self) -> Result<u64, RunError> {
        Ok(self.chain().head().await?.timestamp)
    }
}

/// A sponsor's address as the store keeps it (lowercase 0x).
pub fn owner_key(a: Address) -> String {
    crate::replica::lane_of(a)
}
