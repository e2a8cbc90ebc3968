//! A record no one can buy cheaply: a Sybil agent drops its price to one
//! base unit, funds a hundred tasks to itself from a second wallet,
//! delivers them at once, approves them from that wallet and raises its
//! price back to the honest agent's. On raw counts its record (100 of 100)
//! beat the honest agent's (3 of 3, paid 0.50 USDC each by a sponsor) under
//! `reliable` and `balanced`; weighed by the money behind it, it counts for
//! nothing and the honest agent is chosen under both.

use std::sync::Arc;

use alloy::primitives::U256;
use tessera_bindings::{MockUSDC, usdc::Usdc};
use tessera_e2e::Stack;
use tessera_orchestrator::{plan::Selection, runner::RunnerConfig};

/// The Sybil's self-funded tasks.
const SELF_FUNDED: usize = 100;
/// The honest agent's (and, in the end, the Sybil's) price.
const PRICE: u128 = 500_000;

#[tokio::test]
async fn a_sybil_that_self_funds_a_hundred_one_unit_tasks_does_not_outrank_an_honest_agent() {
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[]).await;
    let env = &stack.env;
    // Demo agents 0 and 1 offer summarize at 0.50 and 0.40 USDC.
    let (honest, sybil) = (env.actors.agent(0), env.actors.agent(1));
    // The Sybil's second wallet: an address the escrow knows nothing about.
    let second = env.actors.client.address();
    let mut d = env.driver();

    // The honest agent: three tasks a sponsor paid 0.50 USDC each.
    d.scenario("sybil: honest");
    let mut params = Vec::new();
    for _ in 0..3 {
        params.push(d.params(honest, PRICE, "data:,x".into()).await.unwrap());
    }
    let mut paid = d.create_many_with_permit(params).await.unwrap();
    for rec in &mut paid {
        d.deliver_at_once(rec, "data:,a summary").await.unwrap();
    }
    d.approve_many(&mut paid).await.unwrap();

    // The Sybil: one base unit, a hundred tasks from the second wallet.
    env.set_price(sybil, "summarize", 1).await;
    let usdc = MockUSDC::new(env.deployment.token, &env.provider);
    let funds = U256::from(SELF_FUNDED);
    let owner = env.actors.deployer.address();
    usdc.mint(second, funds).from(owner).send().await.unwrap().get_receipt().await.unwrap();
    let escrow = env.deployment.task_escrow;
    usdc.approve(escrow, funds).from(second).send().await.unwrap().get_receipt().await.unwrap();
    d.scenario("sybil: self-funded");
    let mut params = Vec::new();
    for _ in 0..SELF_FUNDED {
        let mut p = d.params(sybil, 1, "data:,x".into()).await.unwrap();
        p.client = second;
        params.push(p);
    }
    let (mut own, _) = d.escrow.create_many(second, params).await.unwrap();
    assert_eq!(own.len(), SELF_FUNDED);
    assert!(own.iter().all(|r| r.task.funder == second && r.task.amount == 1));
    for rec in &mut own {
        d.deliver_at_once(rec, "data:,instant").await.unwrap();
    }
    d.escrow.approve_many(second, &mut own).await.unwrap();
    env.set_price(sybil, "summarize", PRICE).await;

    // The indexer reads both records from the chain.
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    let sybil_view = store.agent(&sybil.to_string()).await.unwrap().unwrap();
    let honest_view = store.agent(&honest.to_string()).await.unwrap().unwrap();
    assert_eq!(sybil_view.stats.completed, SELF_FUNDED as i64);
    assert_eq!(honest_view.stats.completed, 3);
    // Every self-funded task lies below the floor: the record weighs nothing.
    let e = sybil_view.stats.evidence;
    assert_eq!((e.below_floor, e.funders, e.completed), (SELF_FUNDED as u64, 0, 0.0), "{e:?}");
    let e = honest_view.stats.evidence;
    assert_eq!(e.funders, 1, "{e:?}");
    assert!((e.completed - 1.5f64.sqrt()).abs() < 1e-9, "1.5 USDC from one funder: {e:?}");

    // The old rule, every task weighing one, ranked the Sybil first.
    let record = |v: &tessera_indexer::store::AgentView| {
        tessera_indexer::store::records::record_of(&v.stats)
    };
    assert!(
        record(&sybil_view).unweighted_reliability()
            > record(&honest_view).unweighted_reliability(),
        "on raw counts the self-funded record is the better one"
    );
    assert!(record(&honest_view).reliability() > record(&sybil_view).reliability());

    // The orchestrator, reading the same index, picks the honest agent
    // under both record policies, and says why the Sybil lost.
    stack.orch.with_records(Arc::new(store));
    for policy in [Selection::Reliable, Selection::Balanced] {
        let c = stack.orch.choose(0, "summarize", policy, &[], None).await.unwrap().unwrap();
        assert_eq!((c.executor, c.price), (honest, Usdc::from_base_units(PRICE)), "{policy:?}");
        let ru = c.runner_up.expect("the Sybil is the runner-up");
        assert_eq!(ru.executor, sybil);
        assert!(ru.reason.contains("100 below 0.01 USDC count nothing"), "{}", ru.reason);
        assert!(ru.reason.contains("67% reliable"), "prior only: {}", ru.reason);
    }
}
