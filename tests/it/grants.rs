//! A sponsor who only signs: an EIP-712 grant for one plan and an EIP-2612
//! permit for the escrow, both made with a key that never sends a
//! transaction until it revokes. The operator submits the permit to the
//! token and creates the plan's tasks with `createWithGrants`; the escrow
//! checks the grant, pulls from the sponsor and sends every refund back to
//! it. Then the operator's key, stolen, tries to overspend the grant and to
//! reuse it for another plan, another key tries to spend it, and after the
//! sponsor revokes it nothing more is funded: each reverts on chain with the
//! escrow's typed error.

use alloy::{
    network::EthereumWallet,
    primitives::{U256, keccak256},
    providers::{Provider, ProviderBuilder},
    signers::local::PrivateKeySigner,
};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{
    ITaskEscrow::{CreateParams, GrantedBatch},
    MockUSDC, TaskEscrow,
    TaskEscrow::TaskEscrowErrors,
    grant::{self, GrantTerms},
    permit::sign_permit,
    revert::ContractRevert,
    task::Status,
};
use tessera_e2e::TestEnv;

/// What each task pays (the summarizer's demo price).
const AMOUNT: u128 = 500_000;
/// The grant: three tasks.
const BUDGET: u128 = 3 * AMOUNT;

/// The escrow's typed revert behind a failed creation.
fn revert_of(err: tessera_anvil::Error) -> ContractRevert {
    let tessera_anvil::Error::Escrow(inner) = &err else { panic!("not an escrow error: {err}") };
    inner.revert().cloned().unwrap_or_else(|| panic!("no typed revert in {err}"))
}

/// A fresh sponsor key (from `label`) holding `amount` tokens and no ether.
async fn sponsor_with_tokens(env: &TestEnv, label: &str, amount: u128) -> PrivateKeySigner {
    let sponsor = PrivateKeySigner::from_bytes(&keccak256(label)).unwrap();
    let usdc = MockUSDC::new(env.deployment.token, env.provider.clone());
    let minted = usdc
        .mint(sponsor.address(), U256::from(amount))
        .from(env.actors.deployer.address())
        .send()
        .await
        .unwrap();
    assert!(minted.get_receipt().await.unwrap().status());
    sponsor
}

fn batch(
    terms: &GrantTerms,
    signature: &alloy::primitives::Bytes,
    params: Vec<CreateParams>,
) -> Vec<GrantedBatch> {
    vec![GrantedBatch { grant: terms.to_sol(), signature: signature.clone(), params }]
}

#[tokio::test]
async fn a_sponsor_that_only_signs_funds_a_plan_a_stolen_operator_key_cannot_overspend_move_or_outlive_it()
 {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("e2e grant");
    let chain_id = env.deployment.chain_id;
    let escrow_at = env.deployment.task_escrow;
    let escrow = TaskEscrow::new(escrow_at, &env.provider);
    let usdc = MockUSDC::new(env.deployment.token, env.provider.clone());
    // The operator (serve's key) is the tasks' client and pays the gas.
    let operator = env.actors.client.address();
    let executor = env.actors.agent(0);
    let stranger = env.actors.agents[4].address();

    // A sponsor with tokens and no ether: it signs, it sends nothing.
    let sponsor = sponsor_with_tokens(&env, "e2e grant sponsor", 10 * BUDGET).await;
    let s = sponsor.address();
    assert_eq!(
        env.provider.get_balance(s).await.unwrap(),
        U256::ZERO,
        "the sponsor holds no ether"
    );

    let now = d.now().await.unwrap();
    let first = d.params(executor, AMOUNT, "data:,summarize".into()).await.unwrap();
    let terms = GrantTerms {
        sponsor: s,
        plan_id: first.planId,
        operator,
        budget: BUDGET,
        valid_until: now + 24 * 3600,
        nonce: U256::from(7),
    };
    // The digest the sponsor signs off chain is the one the escrow checks.
    let digest = grant::digest(chain_id, escrow_at, &terms);
    assert_eq!(escrow.grantDigest(terms.to_sol()).call().await.unwrap(), digest);
    let signature = grant::sign(&sponsor, chain_id, escrow_at, &terms).unwrap();

    // The permit: signed by the sponsor, submitted to the token by the operator.
    let nonce = usdc.nonces(s).call().await.unwrap();
    let deadline = U256::from(now + 3600);
    let p =
        sign_permit(&sponsor, &d.domain, escrow_at, U256::from(BUDGET), nonce, deadline).unwrap();
    let permit = usdc.permit(s, escrow_at, U256::from(BUDGET), p.deadline, p.v, p.r, p.s);
    d.escrow.transact(permit, operator).await.unwrap();
    assert_eq!(usdc.allowance(s, escrow_at).call().await.unwrap(), U256::from(BUDGET));

    // Two tasks of the plan under the grant.
    let second = d.params(executor, AMOUNT, "data:,summarize more".into()).await.unwrap();
    let sponsor0 = env.balance(s).await;
    let operator0 = env.balance(operator).await;
    let mut recs = d
        .create_with_grants(operator, batch(&terms, &signature, vec![first, second]))
        .await
        .unwrap();
    assert_eq!(recs.len(), 2);
    for rec in &recs {
        assert_eq!(rec.task.funder, s, "the sponsor funds");
        assert_eq!(rec.task.client, operator, "the operator is the client");
    }
    assert_eq!(sponsor0 - env.balance(s).await, U256::from(2 * AMOUNT), "pulled from the sponsor");
    assert_eq!(env.balance(operator).await, operator0, "nothing from the operator");
    let (spent, revoked) = {
        let r = escrow.grantState(digest).call().await.unwrap();
        (r.spent, r.revoked)
    };
    assert_eq!((spent, revoked), (2 * AMOUNT, false));

    // The first is delivered and paid; the second is cancelled: back to the sponsor.
    let exec0 = env.balance(executor).await;
    d.deliver_at_once(&mut recs[0], "data:,three bullets").await.unwrap();
    d.escrow.approve(operator, &mut recs[0]).await.unwrap();
    assert_eq!(recs[0].status(), Status::Paid);
    assert_eq!(env.balance(executor).await - exec0, U256::from(AMOUNT), "the executor is paid");
    let before = env.balance(s).await;
    d.escrow.cancel(operator, &mut recs[1]).await.unwrap();
    assert_eq!(
        env.balance(s).await - before,
        U256::from(AMOUNT),
        "the refund lands at the sponsor"
    );

    // A stolen operator key: two more tasks would take the grant past its budget.
    let over = vec![
        d.params(executor, AMOUNT, "data:,x".into()).await.unwrap(),
        d.params(executor, AMOUNT, "data:,y".into()).await.unwrap(),
    ];
    let err = d.create_with_grants(operator, batch(&terms, &signature, over)).await.unwrap_err();
    match revert_of(err) {
        ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowGrantBudget(e)) => {
            assert_eq!((e.digest, e.budget, e.wouldSpend), (digest, BUDGET, U256::from(4 * AMOUNT)))
        }
        other => panic!("expected TaskEscrowGrantBudget, got {other:?}"),
    }
    // Reused for another plan.
    let mut elsewhere = d.params(executor, AMOUNT, "data:,x".into()).await.unwrap();
    elsewhere.planId = keccak256("another plan");
    let err = d
        .create_with_grants(operator, batch(&terms, &signature, vec![elsewhere]))
        .await
        .unwrap_err();
    match revert_of(err) {
        ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowGrantPlan(e)) => {
            assert_eq!(e.planId, keccak256("another plan"))
        }
        other => panic!("expected TaskEscrowGrantPlan, got {other:?}"),
    }
    // Another key as operator, with the grant and its signature in hand.
    let one = d.params(executor, AMOUNT, "data:,x".into()).await.unwrap();
    let err =
        d.create_with_grants(stranger, batch(&terms, &signature, vec![one])).await.unwrap_err();
    match revert_of(err) {
        ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowGrantOperator(e)) => {
            assert_eq!(e.caller, stranger)
        }
        other => panic!("expected TaskEscrowGrantOperator, got {other:?}"),
    }
    // A forged budget: the digest changes, and the sponsor never signed it
    // (the first use of that digest checks the signature).
    let mut forged = terms.clone();
    forged.budget = 100 * BUDGET;
    let one = d.params(executor, AMOUNT, "data:,x".into()).await.unwrap();
    let err =
        d.create_with_grants(operator, batch(&forged, &signature, vec![one])).await.unwrap_err();
    assert!(
        matches!(
            revert_of(err),
            ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowGrantSignature(_))
        ),
        "a raised budget needs the sponsor's signature"
    );

    // The sponsor revokes (its one transaction, with gas money of its own).
    env.provider
        .raw_request::<_, serde_json::Value>(
            "anvil_setBalance".into(),
            (s, U256::from(10u128.pow(17))),
        )
        .await
        .unwrap();
    let own = ProviderBuilder::new()
        .wallet(EthereumWallet::from(sponsor.clone()))
        .connect_http(env.chain.endpoint_url());
    let receipt = TaskEscrow::new(escrow_at, &own)
        .revokeGrant(terms.to_sol())
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(receipt.status(), "revokeGrant succeeded");
    let r = escrow.grantState(digest).call().await.unwrap();
    assert_eq!((r.spent, r.revoked), (2 * AMOUNT, true));
    // Within the budget, for the plan, by the operator: refused once revoked.
    let one = d.params(executor, AMOUNT, "data:,x".into()).await.unwrap();
    let before = env.balance(s).await;
    let err =
        d.create_with_grants(operator, batch(&terms, &signature, vec![one])).await.unwrap_err();
    match revert_of(err) {
        ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowGrantRevoked(e)) => {
            assert_eq!(e.digest, digest)
        }
        other => panic!("expected TaskEscrowGrantRevoked, got {other:?}"),
    }
    assert_eq!(env.balance(s).await, before, "nothing more pulled from the sponsor");
}

/// A one-task plan's grant, spent whole by its first use: the task is
/// referenced by the grant's digest (its mark), so the escrow keeps no slot
/// for the grant, and a replay (the same batch, or other tasks) is refused
/// because the mark exists. The approval carries the client's rating.
#[tokio::test]
async fn a_grant_spent_whole_through_its_mark_keeps_no_slot_and_cannot_be_replayed() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("e2e grant mark");
    let (chain_id, escrow_at) = (env.deployment.chain_id, env.deployment.task_escrow);
    let escrow = TaskEscrow::new(escrow_at, &env.provider);
    let usdc = MockUSDC::new(env.deployment.token, env.provider.clone());
    let operator = env.actors.client.address();
    let executor = env.actors.agent(0);
    let sponsor = sponsor_with_tokens(&env, "e2e grant mark sponsor", 10 * AMOUNT).await;
    let s = sponsor.address();
    let now = d.now().await.unwrap();
    let nonce = usdc.nonces(s).call().await.unwrap();
    let p = sign_permit(&sponsor, &d.domain, escrow_at, U256::MAX, nonce, U256::from(now + 3600))
        .unwrap();
    let permit = usdc.permit(s, escrow_at, U256::MAX, p.deadline, p.v, p.r, p.s);
    d.escrow.transact(permit, operator).await.unwrap();

    let mut first = d.params(executor, AMOUNT, "data:,summarize".into()).await.unwrap();
    let terms = GrantTerms {
        sponsor: s,
        plan_id: first.planId,
        operator,
        budget: AMOUNT,
        valid_until: now + 24 * 3600,
        nonce: U256::from(1),
    };
    let digest = grant::digest(chain_id, escrow_at, &terms);
    let signature = grant::sign(&sponsor, chain_id, escrow_at, &terms).unwrap();
    first.r#ref = digest;
    let replay = batch(&terms, &signature, vec![first.clone()]);
    let sponsor0 = env.balance(s).await;
    let mut recs = d.create_with_grants(operator, replay.clone()).await.unwrap();
    let mark = escrow.grantMarkId(terms.to_sol()).call().await.unwrap();
    assert_eq!(recs[0].id, mark, "the mark");
    assert_eq!(mark, grant::mark_id(s, digest));
    assert_ne!(mark, escrow.taskIdFor(s, digest).call().await.unwrap(), "no ordinary task id");
    assert_eq!(sponsor0 - env.balance(s).await, U256::from(AMOUNT));
    let slot = escrow.grantState(digest).call().await.unwrap();
    assert_eq!((slot.spent, slot.revoked), (0, false), "no slot written for the grant");
    let spent = escrow.grantSpent(terms.to_sol()).call().await.unwrap();
    assert_eq!((spent.spent, spent.revoked), (AMOUNT, false), "spent whole, by its mark");

    // Replayed as it was, or with other tasks: the mark says it was used.
    let other = d.params(executor, AMOUNT, "data:,again".into()).await.unwrap();
    for again in [replay, batch(&terms, &signature, vec![other])] {
        let before = env.balance(s).await;
        let err = d.create_with_grants(operator, again).await.unwrap_err();
        match revert_of(err) {
            ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowGrantUsed(e)) => {
                assert_eq!(e.digest, digest)
            }
            other => panic!("expected TaskEscrowGrantUsed, got {other:?}"),
        }
        assert_eq!(env.balance(s).await, before, "nothing more pulled from the sponsor");
    }

    // The approval carries the client's rating: at most 100.
    d.deliver_at_once(&mut recs[0], "data:,three bullets").await.unwrap();
    let err = d.escrow.approve_rated(operator, &mut recs[0], 101).await.unwrap_err();
    match err.revert() {
        Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowInvalidRating(e))) => {
            assert_eq!(e.rating, 101)
        }
        other => panic!("expected TaskEscrowInvalidRating, got {other:?}"),
    }
    d.escrow.approve_rated(operator, &mut recs[0], 40).await.unwrap();
    assert_eq!(recs[0].status(), Status::Paid);
    assert_eq!(recs[0].rating, Some(40), "the rating, read back from TaskSettled");

    // Revoked afterwards, it reads as revoked and still spent whole.
    let own = ProviderBuilder::new()
        .wallet(EthereumWallet::from(sponsor.clone()))
        .connect_http(env.chain.endpoint_url());
    env.provider
        .raw_request::<_, serde_json::Value>(
            "anvil_setBalance".into(),
            (s, U256::from(10u128.pow(17))),
        )
        .await
        .unwrap();
    let r = TaskEscrow::new(escrow_at, &own).revokeGrant(terms.to_sol()).send().await.unwrap();
    assert!(r.get_receipt().await.unwrap().status());
    let spent = escrow.grantSpent(terms.to_sol()).call().await.unwrap();
    assert_eq!((spent.spent, spent.revoked), (AMOUNT, true));
}
