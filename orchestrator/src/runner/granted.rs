//! Runs funded by a sponsor's grant (operator mode): the grant recorded at
//! approval and loaded with the run, task ids under the sponsor, and what
//! the chain will check before a grant's creations go out (revocation,
//! budget, expiry, the sponsor's balance and allowance, a permit submitted
//! when the allowance is short). A run whose grant cannot fund its next
//! creation pauses with the reason; no other run waits for it.

use std::{collections::BTreeMap, sync::Arc};

use alloy::primitives::{Address, B256, U256};
use tessera_bindings::{
    ITaskEscrow::CreateParams,
    grant::{self, SignedGrant},
    revert::ContractRevert,
    usdc::Usdc,
};

use super::{
    Chain, Orchestrator, Refusal, RunCtx, RunError,
    chain::{Funding, GrantPermit},
};
use crate::{
    plan::PlanId,
    state::{Progress, RunId, RunState},
    store::GrantRow,
};

/// What a refusal of a creation under a grant says, in words, when it is
/// about the grant (revoked, expired, its budget spent, its signature, its
/// operator or plan) or the sponsor's balance or allowance.
pub(super) fn grant_refusal(revert: &ContractRevert) -> Option<String> {
    use tessera_bindings::{MockUSDC::MockUSDCErrors as T, TaskEscrow::TaskEscrowErrors as E};
    let usdc = |units: u128| Usdc::from_base_units(units).with_unit().to_string();
    Some(match revert {
        ContractRevert::Escrow(E::TaskEscrowGrantRevoked(_)) => {
            "the sponsor revoked the grant".into()
        }
        ContractRevert::Escrow(E::TaskEscrowGrantExpired(e)) => {
            format!("the sponsor's grant expired at {} (unix time)", e.validUntil)
        }
        ContractRevert::Escrow(E::TaskEscrowGrantBudget(e)) => {
            format!("the grant's budget of {} is spent", usdc(e.budget))
        }
        ContractRevert::Escrow(E::TaskEscrowGrantUsed(_)) => {
            "the grant was spent whole by its first use".into()
        }
        ContractRevert::Escrow(E::TaskEscrowGrantSignature(_)) => {
            "the grant's signature is not the sponsor's".into()
        }
        ContractRevert::Escrow(E::TaskEscrowGrantOperator(_)) => {
            "the grant names another operator".into()
        }
        ContractRevert::Escrow(E::TaskEscrowGrantPlan(_)) => "the grant is for another plan".into(),
        ContractRevert::Token(T::ERC20InsufficientAllowance(e)) => format!(
            "the sponsor's allowance to the escrow is short by {}",
            usdc(u128::try_from(e.needed - e.allowance).unwrap_or(u128::MAX))
        ),
        ContractRevert::Token(T::ERC20InsufficientBalance(e)) => format!(
            "the sponsor holds {} but the creation needs {}",
            usdc(u128::try_from(e.balance).unwrap_or(u128::MAX)),
            usdc(u128::try_from(e.needed).unwrap_or(u128::MAX))
        ),
        _ => return None,
    })
}

/// A grant or permit that would not encode (it always does).
fn encoding(e: serde_json::Error) -> RunError {
    Refusal::GrantEncoding(e).into()
}

/// One creation of a wave: the sub-task's index, its task id, its parameters.
type Creation = (u32, U256, CreateParams);

impl Orchestrator {
    /// Records that proposed run `id` is funded by the sponsor's `grant`
    /// (and `permit`, submitted by the operator to the token when the
    /// sponsor's allowance to the escrow is short): the run's owner is the
    /// grant's sponsor, its tasks are funded by the sponsor under the grant
    /// (`createWithGrants`, task ids `keccak(sponsor, ref)`), refunds go to
    /// the sponsor. Call it before [`Orchestrator::approve`].
    ///
    /// Checks what the escrow would refuse for good: the grant is for this
    /// run's plan and names this orchestrator's key as operator, and an
    /// ECDSA signature recovers to the sponsor (an ERC-1271 sponsor's
    /// signature is the escrow's to judge); a permit's signature is 65
    /// bytes. The budget, expiry and allowance are checked before each
    /// creation (the run pauses with the reason when they fall short).
    pub async fn fund_with_grant(
        &self,
        id: impl Into<RunId>,
        grant: SignedGrant,
        permit: Option<GrantPermit>,
    ) -> Result<(), RunError> {
        let id = &id.into();
        let (run, plan) = self.load(id).await?;
        if run.state != RunState::Proposed {
            return Err(RunError::wrong_state(id, run.state, "a grant"));
        }
        let terms = &grant.terms;
        if terms.plan_id != plan.id.into_inner() {
            let (granted, plan) = (terms.plan_id, plan.id.into_inner());
            return Err(Refusal::GrantForOtherPlan { granted, plan }.into());
        }
        if terms.operator != self.chain.address() {
            let (granted, operator) = (terms.operator, self.chain.address());
            return Err(Refusal::GrantForOtherOperator { granted, operator }.into());
        }
        let deployment = self.chain.deployment();
        if grant::is_ecdsa(&grant.signature) {
            grant::recover(deployment.chain_id, deployment.task_escrow, &grant)
                .map_err(Refusal::GrantRecovery)?;
        }
        if let Some(p) = &permit {
            p.split().map_err(Refusal::PermitShape)?;
        }
        let row = GrantRow {
            grant_json: serde_json::to_string(&grant).map_err(encoding)?,
            permit_json: permit
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(encoding)?,
        };
        let owner = terms.sponsor.to_string().to_lowercase();
        self.store.set_owner(id, &owner).await?;
        self.store.set_grant(id, &row).await?;
        self.chain.fund(plan.id, Arc::new(Funding::new(grant, permit)));
        Ok(())
    }

    /// Loads run `id`'s grant (plan `plan`) from the store into the chain,
    /// when it has one the chain does not hold yet: every look, resume and
    /// lane take starts with it, so task ids and kept logs are the
    /// sponsor's before anything is read or sent.
    pub(super) async fn load_funding(&self, id: &RunId, plan: PlanId) -> Result<(), RunError> {
        if self.chain.funding(plan).is_some() {
            return Ok(());
        }
        let Some(row) = self.store.grant(id).await? else { return Ok(()) };
        let bad = |what: &'static str, source: serde_json::Error| Refusal::StoredGrant {
            id: id.to_string(),
            what,
            source,
        };
        let grant: SignedGrant =
            serde_json::from_str(&row.grant_json).map_err(|e| bad("grant", e))?;
        let permit = match row.permit_json.as_deref() {
            Some(p) => Some(serde_json::from_str(p).map_err(|e| bad("permit", e))?),
            None => None,
        };
        self.chain.fund(plan, Arc::new(Funding::new(grant, permit)));
        Ok(())
    }

    /// Who pays for run `id` (plan `plan`): the sponsor of the grant that
    /// funds it, else the sponsor whose lane runs it (in replica mode,
    /// maybe a replica with another key proposed it), else the key.
    pub(super) async fn payer(&self, id: &RunId, plan: PlanId) -> Result<Address, RunError> {
        self.load_funding(id, plan).await?;
        if let Some(funding) = self.chain.funding(plan) {
            return Ok(funding.sponsor());
        }
        Ok(match self.store.run_sponsor(id).await? {
            Some(lane) => lane.parse().unwrap_or(self.chain.sponsor()),
            None => self.chain.sponsor(),
        })
    }

    /// The task id of sub-task `index`, attempt `attempt`, of `plan`, under
    /// its funder (the grant's sponsor, or the key).
    pub(super) fn task_of(&self, plan: PlanId, index: u32, attempt: u32) -> U256 {
        if (index, attempt) == (0, 0)
            && let Some(mark) = self.chain.grant_mark_id(plan)
        {
            return mark;
        }
        self.chain.task_id(self.chain.funder_of(plan), Chain::reference(plan, index, attempt))
    }

    /// The escrow reference of sub-task `index`, attempt `attempt`, of
    /// `plan`: [`Chain::reference`], except that under a grant sub-task 0's
    /// first attempt takes the grant's digest ([`Chain::grant_mark`]): it is
    /// the grant's mark, whose task id is [`Chain::grant_mark_id`]
    /// ([`Orchestrator::task_of`]) whenever it is created. When the run's
    /// first creation carries it (sub-task 0 has no upstream, so it goes out
    /// in the first wave) and spends the whole budget (a one-step plan, or
    /// one funded upfront), the grant costs no storage of its own. A run's
    /// grant never changes, so neither does any of its references.
    pub(super) fn reference_of(&self, plan: PlanId, index: u32, attempt: u32) -> B256 {
        match (index, attempt, self.chain.grant_mark(plan)) {
            (0, 0, Some(mark)) => mark,
            _ => Chain::reference(plan, index, attempt),
        }
    }

    /// Keeps of `wave` (the run's creations of this head, in order) those
    /// `funding`'s grant can fund now, as the escrow and the token will
    /// check them: the grant not revoked nor expired, its budget not passed,
    /// the sponsor's balance and allowance to the escrow enough. A permit
    /// the run holds is submitted first when the allowance is short (once;
    /// it is forgotten after). The first creation that cannot be funded,
    /// and every one after it, is not sent: the run pauses with the reason.
    pub(super) async fn check_grant(
        &self,
        ctx: &RunCtx,
        rows: &BTreeMap<u32, Progress>,
        funding: &Funding,
        wave: &mut Vec<Creation>,
    ) -> Result<(), RunError> {
        if wave.is_empty() {
            return Ok(());
        }
        let (terms, sponsor) = (funding.terms(), funding.sponsor());
        let amounts: Vec<u128> = wave.iter().map(|c| c.2.amount).collect();
        let usdc = |units: u128| Usdc::from_base_units(units).with_unit().to_string();
        let head = self.chain.head().await?;
        let (spent, revoked) = self.chain.grant_state(terms).await?;
        // How many creations fit, and why the next does not.
        let (mut keep, mut why) = (wave.len(), None);
        let cut = |keep: &mut usize, why: &mut Option<String>, at: usize, reason: String| {
            if at < *keep {
                (*keep, *why) = (at, Some(reason));
            }
        };
        if revoked {
            cut(&mut keep, &mut why, 0, "the sponsor revoked the grant".into());
        }
        // The next block is later than the head.
        if head.timestamp >= terms.valid_until {
            cut(
                &mut keep,
                &mut why,
                0,
                format!("the sponsor's grant expired at {} (unix time)", terms.valid_until),
            );
        }
        let mut total = spent;
        for (i, &amount) in amounts.iter().enumerate() {
            total = total.saturating_add(amount);
            if total > terms.budget {
                cut(
                    &mut keep,
                    &mut why,
                    i,
                    format!(
                        "the grant's budget of {} is spent ({} funded under it, {} more asked)",
                        usdc(terms.budget),
                        usdc(spent),
                        usdc(amounts[..=i].iter().sum())
                    ),
                );
                break;
            }
        }
        let need = |n: usize| U256::from(amounts[..n].iter().sum::<u128>());
        let balance = self.chain.balance_of(sponsor).await?;
        if let Some(short) = (1..=keep).find(|&n| need(n) > balance) {
            cut(
                &mut keep,
                &mut why,
                short - 1,
                format!(
                    "the sponsor holds {} but the next creations need {}",
                    usdc(u128::try_from(balance).unwrap_or(u128::MAX)),
                    usdc(u128::try_from(need(short)).unwrap_or(u128::MAX))
                ),
            );
        }
        let mut allowance = self.chain.allowance_of(sponsor).await?;
        if keep > 0
            && need(keep) > allowance
            && let Some(permit) = funding.take_permit()
        {
            // Submitted once: a permit that fails (used, expired) would fail again.
            let sent = self.chain.submit_permit(sponsor, &permit).await;
            self.store.clear_permit(ctx.id()).await?;
            match sent {
                Ok(()) => tracing::info!(run = %ctx.id(), %sponsor, "sponsor's permit submitted"),
                Err(e) if e.is_refusal() => {
                    tracing::warn!(run = %ctx.id(), %sponsor, error = %e, "sponsor's permit refused");
                }
                Err(e) => return Err(e),
            }
            allowance = self.chain.allowance_of(sponsor).await?;
        }
        if let Some(short) = (1..=keep).find(|&n| need(n) > allowance) {
            let by = u128::try_from(need(short) - allowance).unwrap_or(u128::MAX);
            cut(
                &mut keep,
                &mut why,
                short - 1,
                format!("the sponsor's allowance to the escrow is short by {}", usdc(by)),
            );
        }
        let Some(why) = why else { return Ok(()) };
        let (index, _, _) = wave[keep];
        let attempt = rows.get(&index).map_or(0, |r| r.attempt);
        wave.truncate(keep);
        tracing::warn!(run = %ctx.id(), index, %sponsor, reason = %why, "the grant cannot fund a creation");
        let reason = format!(
            "sub-task {index} cannot be funded: {why}: resume once the sponsor has put it \
             right, or cancel"
        );
        self.pause(ctx, index, attempt, reason).await
    }
}
