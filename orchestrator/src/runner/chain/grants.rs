//! Runs funded by a sponsor's grant (operator mode): the grant and permit
//! each such run holds, who funds a plan's tasks, what the escrow and the
//! token say of a grant and its sponsor, the operator's `permit` and
//! `createWithGrants` sends.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex, PoisonError},
};

use alloy::primitives::{Address, B256, Bytes, U256};
use serde::{Deserialize, Serialize};
use tessera_bindings::{
    ITaskEscrow::{CreateParams, GrantedBatch},
    MockUSDC,
    client::{ClientError, map_call},
    grant::{GrantTerms, SignedGrant},
};

use super::{Chain, RunError, Sent};
use crate::plan::PlanId;

/// An EIP-2612 permit a sponsor signed for the escrow, as it travels and is
/// stored (`{"value": "<base units>", "deadline": <unix>, "signature":
/// "0x…"}`, the signature 65 bytes `r ‖ s ‖ v`). The operator submits it to
/// the token when the sponsor's allowance to the escrow is short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantPermit {
    /// The allowance the permit sets, in base units (decimal string).
    #[serde(with = "tessera_bindings::typed_data::dec_u256")]
    pub value: U256,
    /// Last second (unix) the permit may be submitted.
    pub deadline: u64,
    /// 65 bytes: `r ‖ s ‖ v` (v 27/28 or 0/1).
    pub signature: Bytes,
}

/// Why a permit cannot be submitted as it is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the permit signature is {0} bytes, not 65 (r ‖ s ‖ v)")]
pub struct PermitShape(pub usize);

impl GrantPermit {
    /// The signature split as the token's `permit` takes it: `(v, r, s)`.
    pub fn split(&self) -> Result<(u8, B256, B256), PermitShape> {
        let sig = self.signature.as_ref();
        if sig.len() != 65 {
            return Err(PermitShape(sig.len()));
        }
        let v = if sig[64] < 27 { sig[64] + 27 } else { sig[64] };
        Ok((v, B256::from_slice(&sig[..32]), B256::from_slice(&sig[32..64])))
    }
}

/// How a run funded by a sponsor's grant is funded: the signed grant and
/// the permit that came with it, until it is submitted.
#[derive(Debug)]
pub struct Funding {
    /// The sponsor's signed grant for the run's plan.
    pub grant: SignedGrant,
    permit: Mutex<Option<GrantPermit>>,
}

impl Funding {
    /// Funding by `grant`, with `permit` to submit when the allowance is short.
    pub fn new(grant: SignedGrant, permit: Option<GrantPermit>) -> Self {
        Self { grant, permit: Mutex::new(permit) }
    }

    /// The sponsor: the funder of every task of the run.
    pub fn sponsor(&self) -> Address {
        self.grant.terms.sponsor
    }

    /// The grant's terms.
    pub fn terms(&self) -> &GrantTerms {
        &self.grant.terms
    }

    /// The permit not submitted yet, taken (it is submitted once).
    pub(crate) fn take_permit(&self) -> Option<GrantPermit> {
        self.permit.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// The tasks `params` under this grant, as one batch of `createWithGrants`.
    pub(crate) fn batch(&self, params: Vec<CreateParams>) -> GrantedBatch {
        GrantedBatch {
            grant: self.grant.terms.to_sol(),
            signature: self.grant.signature.clone(),
            params,
        }
    }
}

impl Chain {
    /// Funds plan `plan`'s tasks by `funding` from now on: its sponsor is
    /// their funder (task ids `keccak(sponsor, ref)`), and the escrow's
    /// logs of the sponsor's tasks are kept. Replaces what was there.
    pub fn fund(&self, plan: PlanId, funding: Arc<Funding>) {
        self.grants.write().unwrap_or_else(PoisonError::into_inner).insert(plan, funding);
    }

    /// Stops funding plan `plan` by a grant (its run is over).
    pub(crate) fn unfund(&self, plan: PlanId) {
        self.grants.write().unwrap_or_else(PoisonError::into_inner).remove(&plan);
    }

    /// The grant funding plan `plan`, when a sponsor's grant does.
    pub fn funding(&self, plan: PlanId) -> Option<Arc<Funding>> {
        self.grants.read().unwrap_or_else(PoisonError::into_inner).get(&plan).cloned()
    }

    /// The mark of the grant funding plan `plan`, when a grant funds it: its
    /// EIP-712 digest, the reference of the plan's sub-task 0, first
    /// attempt. Created first by the grant's first use, it lets a first use
    /// that spends the whole budget (a plan funded upfront, or of one step)
    /// write no state for the grant: a replay would have to create it again.
    pub fn grant_mark(&self, plan: PlanId) -> Option<B256> {
        self.grant_mark_of(plan).map(|(_, digest)| digest)
    }

    /// The sponsor and digest of the grant funding plan `plan` (see
    /// [`Chain::grant_mark`]).
    fn grant_mark_of(&self, plan: PlanId) -> Option<(Address, B256)> {
        let funding = self.funding(plan)?;
        let deployment = &self.deployment;
        let digest = tessera_bindings::grant::digest(
            deployment.chain_id,
            deployment.task_escrow,
            funding.terms(),
        );
        Some((funding.sponsor(), digest))
    }

    /// The task id of the mark of the grant funding plan `plan`
    /// ([`tessera_bindings::grant::mark_id`]): sub-task 0's first attempt.
    pub fn grant_mark_id(&self, plan: PlanId) -> Option<U256> {
        let (sponsor, digest) = self.grant_mark_of(plan)?;
        Some(tessera_bindings::grant::mark_id(sponsor, digest))
    }

    /// Who funds plan `plan`'s tasks: its grant's sponsor, else the key.
    pub fn funder_of(&self, plan: PlanId) -> Address {
        self.funding(plan).map_or(self.sponsor, |f| f.sponsor())
    }

    /// Every funder whose tasks' logs are kept: the key and the sponsors
    /// of the live runs funded by a grant.
    pub(crate) fn funders(&self) -> HashSet<Address> {
        let grants = self.grants.read().unwrap_or_else(PoisonError::into_inner);
        grants.values().map(|f| f.sponsor()).chain([self.sponsor]).collect()
    }

    /// What the escrow says of grant `terms`: funded so far (base units; its
    /// whole budget once a first use that created its mark spent it all),
    /// and whether the sponsor revoked it.
    pub(crate) async fn grant_state(&self, terms: &GrantTerms) -> Result<(u128, bool), RunError> {
        let c = self.escrow.contract();
        let state = c.grantSpent(terms.to_sol()).call().await.map_err(map_call)?;
        Ok((state.spent, state.revoked))
    }

    /// `owner`'s token allowance to the escrow (read once per head).
    pub(crate) async fn allowance_of(&self, owner: Address) -> Result<U256, RunError> {
        if let Some(a) = self.read(|r| r.allowances.get(&owner).copied()) {
            return Ok(a);
        }
        let token = MockUSDC::new(self.deployment.token, &self.provider);
        let escrow = self.deployment.task_escrow;
        let allowance = token.allowance(owner, escrow).call().await.map_err(map_call)?;
        self.read(|r| r.allowances.insert(owner, allowance));
        Ok(allowance)
    }

    /// Submits `sponsor`'s EIP-2612 `permit` for the escrow to the token
    /// (the operator pays the gas) and waits for it to be mined; the
    /// allowance read again from then on.
    pub(crate) async fn submit_permit(
        &self,
        sponsor: Address,
        permit: &GrantPermit,
    ) -> Result<(), RunError> {
        let (v, r, s) = permit.split().map_err(super::super::Refusal::PermitShape)?;
        let token = MockUSDC::new(self.deployment.token, self.provider.clone());
        let call = token.permit(
            sponsor,
            self.deployment.task_escrow,
            permit.value,
            U256::from(permit.deadline),
            v,
            r,
            s,
        );
        let sent = self.dispatch(call).await;
        let receipt = match sent {
            Ok(sent) => self.confirm(sent).await,
            Err(e) => Err(e),
        };
        self.read(|r| r.allowances.remove(&sponsor));
        receipt.map(drop).map_err(RunError::Chain)
    }

    /// Sends the creation of every batch of `batches` in one
    /// `createWithGrants` call, without waiting for it to be mined.
    pub(crate) async fn create_with_grants(
        &self,
        batches: Vec<GrantedBatch>,
    ) -> Result<Sent, ClientError> {
        self.dispatch(self.escrow.contract().createWithGrants(batches)).await
    }

    /// Runs `createWithGrants` of `batch` against the newest block without
    /// sending it: `Ok` when the escrow would take it now, else its revert.
    pub(crate) async fn simulate_granted(&self, batch: GrantedBatch) -> Result<(), ClientError> {
        let c = self.escrow.contract();
        c.createWithGrants(vec![batch]).from(self.sponsor).call().await.map(drop).map_err(map_call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permit_travels_as_json_and_splits_into_v_r_s() {
        let mut sig = vec![0x11; 32];
        sig.extend([0x22; 32]);
        sig.push(1);
        let json = serde_json::json!({
            "value": "5000000",
            "deadline": 1_900_000_000u64,
            "signature": format!("0x{}", alloy::hex::encode(&sig)),
        });
        let permit: GrantPermit = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(permit.value, U256::from(5_000_000));
        assert_eq!(serde_json::to_value(&permit).unwrap(), json);
        let (v, r, s) = permit.split().unwrap();
        assert_eq!((v, r, s), (28, B256::repeat_byte(0x11), B256::repeat_byte(0x22)));
        let short = GrantPermit { signature: Bytes::from(sig[..64].to_vec()), ..permit };
        assert_eq!(short.split(), Err(PermitShape(64)));
        let bad = serde_json::json!({"value": "5 USDC", "deadline": 1, "signature": "0x"});
        assert!(serde_json::from_value::<GrantPermit>(bad).is_err());
    }
}
