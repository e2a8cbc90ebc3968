//! Full task lifecycles through the Rust bindings, balances checked to the unit.

use alloy::primitives::{Address, U256};
use tessera_anvil::{deploy::DeployConfig, lifecycle::spec_of_len};
use tessera_bindings::{
    TaskEscrow::TaskEscrowErrors,
    revert::ContractRevert,
    task::{Status, hash_task},
};
use tessera_e2e::TestEnv;

/// Balances of the parties a settlement touches.
async fn balances(env: &TestEnv, executor: Address) -> [U256; 3] {
    [
        env.balance(env.actors.sponsor.address()).await,
        env.balance(executor).await,
        env.balance(env.deployment.task_escrow).await,
    ]
}

#[tokio::test]
async fn permit_lifecycle_pays_the_executor_exactly() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("e2e happy path");
    let executor = env.actors.agent(2);
    // The translator: the escrow checks that it offers the capability.
    d.capability = tessera_bindings::capability::encode("translate").unwrap();
    let amount: u128 = 1_234_567;
    let [sponsor0, exec0, escrow0] = balances(&env, executor).await;

    let params = d.params(executor, amount, spec_of_len(120)).await.unwrap();
    let mut rec = d.create_with_permit(params).await.unwrap();
    assert_eq!(rec.status(), Status::Created);
    let [sponsor1, exec1, escrow1] = balances(&env, executor).await;
    assert_eq!(sponsor0 - sponsor1, U256::from(amount), "sponsor funded exactly the amount");
    assert_eq!(escrow1 - escrow0, U256::from(amount), "escrow holds exactly the amount");
    assert_eq!(exec1, exec0);

    d.deliver(&mut rec, "data:text/plain,done").await.unwrap();
    assert_eq!(rec.status(), Status::Completed);
    let client = env.actors.client.address();
    d.escrow.approve(client, &mut rec).await.unwrap();
    assert_eq!(rec.status(), Status::Paid);

    let [sponsor2, exec2, escrow2] = balances(&env, executor).await;
    assert_eq!(exec2 - exec0, U256::from(amount), "executor paid to the unit");
    assert_eq!(sponsor2, sponsor1, "nothing returned to the sponsor");
    assert_eq!(escrow2, escrow0, "the escrow keeps nothing");

    // The record folded from receipts equals the one rebuilt from logs alone,
    // and both hash to what the contract stores.
    let fetched = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(fetched, rec);
    let stored = d.escrow.contract().taskHash(rec.id).call().await.unwrap();
    assert_eq!(stored, hash_task(&rec.task));
    assert_eq!(rec.result_uri.as_deref(), Some("data:text/plain,done"));
}

#[tokio::test]
async fn dispute_split_with_appeal_window_pays_both_sides_exactly() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("e2e split");
    let executor = env.actors.agent(0);
    let amount: u128 = 1_000_003; // odd on purpose: the split rounds
    let bps: u16 = 3_333;
    let [sponsor0, exec0, escrow0] = balances(&env, executor).await;

    let mut rec = d.disputed(executor, amount).await.unwrap();
    assert_eq!(rec.status(), Status::Disputed);
    d.escrow
        .resolve(env.actors.arbiter.address(), &mut rec, bps, "data:text/plain,partly done")
        .await
        .unwrap();
    assert_eq!(rec.status(), Status::Ruled, "appeal window open");

    // Too early to finalize: the typed revert says when it may be called.
    let anyone = env.actors.agents[4].address();
    let early = d.escrow.finalize(anyone, &mut rec.clone()).await.unwrap_err();
    assert!(
        matches!(
            early.revert(),
            Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowTooEarly(_)))
        ),
        "{early}"
    );

    d.advance(u64::from(rec.task.appealWindow) + 1).await.unwrap();
    d.escrow.finalize(anyone, &mut rec).await.unwrap();
    assert_eq!(rec.status(), Status::Split);

    let to_executor = amount * u128::from(bps) / 10_000;
    let to_funder = amount - to_executor;
    assert_eq!(to_executor, 333_300, "1,000,003 x 33.33% rounds down");
    let [sponsor1, exec1, escrow1] = balances(&env, executor).await;
    assert_eq!(exec1 - exec0, U256::from(to_executor), "executor share to the unit");
    assert_eq!(sponsor0 - sponsor1, U256::from(amount - to_funder), "funder got the rest back");
    assert_eq!(escrow1, escrow0, "the escrow keeps nothing");
    let fetched = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(fetched, rec);
}

#[tokio::test]
async fn ruling_is_final_at_once_with_a_zero_appeal_window() {
    let cfg = DeployConfig { appeal_window: 0, ..DeployConfig::default() };
    let env = TestEnv::start(cfg).await;
    let mut d = env.driver();
    d.scenario("e2e final split");
    let executor = env.actors.agent(1);
    let amount: u128 = 7;
    env.set_price(executor, "summarize", amount).await;
    let [_, exec0, _] = balances(&env, executor).await;
    let sponsor0 = env.balance(env.actors.sponsor.address()).await;

    let mut rec = d.disputed(executor, amount).await.unwrap();
    d.escrow.resolve(env.actors.arbiter.address(), &mut rec, 9_999, "data:,x").await.unwrap();
    // 7 * 9999 / 10000 = 6 to the executor, 1 back to the funder.
    assert_eq!(rec.status(), Status::Split);
    assert_eq!(env.balance(executor).await - exec0, U256::from(6));
    assert_eq!(sponsor0 - env.balance(env.actors.sponsor.address()).await, U256::from(6));
}

#[tokio::test]
async fn wrong_roles_and_duplicates_are_refused_with_typed_errors() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("e2e refusals");
    let executor = env.actors.agent(3);
    d.capability = tessera_bindings::capability::encode("sentiment-classify").unwrap();
    let params = d.params(executor, 500_000, spec_of_len(60)).await.unwrap();
    let mut rec = d.create_with_permit(params.clone()).await.unwrap();

    // Same (funder, reference) again: refused, so nothing is funded twice.
    let dup = d.create_with_permit(params).await.unwrap_err();
    let tessera_anvil::Error::Escrow(inner) = &dup else { panic!("unexpected error {dup}") };
    assert!(
        matches!(
            inner.revert(),
            Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowDuplicateReference(_)))
        ),
        "{dup}"
    );

    // A stranger cannot accept; the revert names the caller.
    let stranger = env.actors.agents[4].address();
    let err = d.escrow.accept(stranger, &mut rec).await.unwrap_err();
    match err.revert() {
        Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowUnauthorized(e))) => {
            assert_eq!(e.caller, stranger)
        }
        other => panic!("expected TaskEscrowUnauthorized, got {other:?}"),
    }
    // The executor cannot approve its own work.
    d.deliver(&mut rec, "data:,ok").await.unwrap();
    let err = d.escrow.approve(executor, &mut rec).await.unwrap_err();
    assert!(
        matches!(
            err.revert(),
            Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowUnauthorized(_)))
        ),
        "{err}"
    );
    // A stale struct (the state before delivery) is refused.
    let mut stale = rec.clone();
    stale.task.status = Status::Accepted as u8;
    let err = d.escrow.approve(env.actors.client.address(), &mut stale).await.unwrap_err();
    assert!(
        matches!(
            err.revert(),
            Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowStaleTask(_)))
        ),
        "{err}"
    );
    assert_eq!(rec.status(), Status::Completed, "nothing moved");
}

#[tokio::test]
async fn an_executor_declines_and_the_funder_is_refunded_at_once() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("e2e decline");
    let executor = env.actors.agent(0);
    let reason = "data:application/json,{\"reason\":\"cannot read the envelope\"}";
    let amount: u128 = 654_321;
    let [sponsor0, exec0, escrow0] = balances(&env, executor).await;

    let params = d.params(executor, amount, spec_of_len(60)).await.unwrap();
    let mut rec = d.create_with_permit(params).await.unwrap();
    // Only the executor may say no; the revert names the caller.
    let client = env.actors.client.address();
    let err = d.escrow.decline(client, &mut rec.clone(), reason).await.unwrap_err();
    match err.revert() {
        Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowUnauthorized(e))) => {
            assert_eq!(e.caller, client)
        }
        other => panic!("expected TaskEscrowUnauthorized, got {other:?}"),
    }
    d.escrow.decline(executor, &mut rec, reason).await.unwrap();
    assert_eq!(rec.status(), Status::Declined);
    assert_eq!(rec.decline_reason_uri.as_deref(), Some(reason));
    assert_eq!(
        balances(&env, executor).await,
        [sponsor0, exec0, escrow0],
        "the sponsor has every unit back, the executor and the escrow nothing"
    );
    // Folded from the receipt == rebuilt from logs == what the contract stores.
    let fetched = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(fetched, rec);

    // An accepted task, declined through the send / mined split.
    let params = d.params(executor, amount, spec_of_len(60)).await.unwrap();
    let mut rec = d.create_with_permit(params).await.unwrap();
    d.escrow.accept(executor, &mut rec).await.unwrap();
    let pending = d.escrow.send_decline(executor, &rec, "").await.unwrap();
    let receipt = d.escrow.mined(pending).await.unwrap();
    rec.apply_receipt(env.deployment.task_escrow, &receipt).unwrap();
    assert_eq!(rec.status(), Status::Declined);
    assert_eq!(balances(&env, executor).await, [sponsor0, exec0, escrow0]);

    // Declined is terminal: a second decline is refused with the status.
    let err = d.escrow.decline(executor, &mut rec, reason).await.unwrap_err();
    assert!(
        matches!(
            err.revert(),
            Some(ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowInvalidStatus(e)))
                if e.status == Status::Declined as u8
        ),
        "{err}"
    );
}
