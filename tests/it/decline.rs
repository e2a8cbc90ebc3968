//! An executor that cannot do its sub-task says so on chain, and the plan
//! moves on in the next blocks instead of at the deadline: the real worker
//! of an agent the registry still lists for a capability its card no
//! longer offers declines the task (`declineTask`, with its reason), the
//! sponsor is refunded at once, and the runner applies the sub-task's
//! `on_decline` policy as a new attempt.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use alloy::{network::EthereumWallet, primitives::U256};
use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{
    client::{ClientError, EscrowClient, connect},
    envelope::FsBlobStore,
    task::Status,
};
use tessera_e2e::{NARROW_CARD, Stack, TASK_AMOUNT, TestEnv};
use tessera_orchestrator::{
    plan::Plan,
    runner::{Chain, RunnerConfig},
};
use tessera_workers::{
    AgentCard,
    runtime::{Handled, Worker},
};

const ARTICLE: &str = "Ada Lovelace met Charles Babbage in London in 1833. \
Babbage showed her the Difference Engine. Lovelace later wrote the first published \
algorithm for his Analytical Engine. Contact: ada@example.org.";

/// Runs demo agent 0's worker with [`NARROW_CARD`]; what it does is kept
/// in `seen`.
fn spawn_narrow_worker(
    stack: &Stack,
    seen: Arc<Mutex<Vec<Handled>>>,
) -> tokio::task::JoinHandle<()> {
    let signer = stack.env.actors.agents[0].clone();
    let me = signer.address();
    let provider = connect(stack.env.chain.endpoint_url(), EthereumWallet::new(signer));
    let card = AgentCard::from_yaml(NARROW_CARD).unwrap();
    let blobs = Arc::new(FsBlobStore::new(&stack.blobs));
    let mut worker = Worker::new(provider, me, card, stack.env.deployment.clone(), blobs);
    let ws = stack.env.chain.ws_endpoint();
    tokio::spawn(async move {
        let keep = |h: &Handled| seen.lock().unwrap().push(h.clone());
        worker.run(Some(&ws), Duration::from_millis(200), keep, std::future::pending()).await;
    })
}

/// Entities by agent 0 (its worker declines), then a summary of them. On
/// decline, reassign: the extractor gets a new task at the approved cost in
/// the next blocks — long before the hour-long deadline — and the plan
/// settles; the declined escrow came back whole, the run's events and view
/// carry the reason.
#[tokio::test]
async fn a_sub_task_declined_on_chain_is_reassigned_at_once_and_the_plan_settles() {
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[1, 2, 3, 4]).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let narrow = spawn_narrow_worker(&stack, Arc::clone(&seen));
    let env = &stack.env;
    let (a0, b, extractor) = (env.actors.agent(0), env.actors.agent(1), env.actors.agent(4));
    let sponsor = env.actors.sponsor.address();
    let before = [
        env.balance(sponsor).await,
        env.balance(a0).await,
        env.balance(b).await,
        env.balance(extractor).await,
    ];
    let step = |index: u32, capability: &str, spec: &str, executor, cost: u64, deps: &[u32]| {
        json!({"index": index, "capability": capability, "spec": spec, "executor": executor,
            "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps})
    };
    let body = json!({
        "version": 1,
        "id": Plan::id_from_label("declined"),
        "review": "auto",
        "budget": 2_000_000u64,
        "source": ARTICLE,
        "review_window_secs": 600,
        "recovery": {"on_decline": "reassign"},
        "subtasks": [
            step(0, "extract-entities", "List the people and places", a0, 300_000, &[]),
            step(1, "summarize", "Summarize who met whom", b, 400_000, &[0]),
        ],
    });
    let started = env.driver().now().await.unwrap();
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "completed", 60).await;
    let elapsed = env.driver().now().await.unwrap() - started;
    assert!(elapsed < 60, "settled {elapsed} chain seconds in, deadline 3600 s: {view:#}");
    narrow.abort();

    // The worker said no on chain; attempt 0 is Declined, attempt 1 paid.
    let seen = seen.lock().unwrap().clone();
    let reason = "capability \"extract-entities\" is not offered";
    assert!(
        matches!(seen.as_slice(), [Handled::DeclinedOnChain { reason: r, .. }] if r == reason),
        "{seen:?}"
    );
    let plan_id = Plan::id_from_label("declined");
    let escrow = EscrowClient::new(env.provider.clone(), env.deployment.task_escrow);
    let task = |attempt| {
        stack
            .orch
            .chain()
            .task_id(stack.orch.chain().sponsor(), Chain::reference(plan_id, 0, attempt))
    };
    let first = escrow.fetch(task(0), env.deployment.deploy_block).await.unwrap();
    assert_eq!((first.status(), first.task.executor), (Status::Declined, a0));
    let second = escrow.fetch(task(1), env.deployment.deploy_block).await.unwrap();
    assert_eq!((second.status(), second.task.executor), (Status::Paid, extractor));
    assert_eq!(second.task.amount, 300_000, "the approved cost, not the extractor's 0.25");
    assert_eq!(view["subtasks"][0]["attempt"], 1);
    assert!(!view["subtasks"][1]["output"].as_str().unwrap().is_empty());

    // Money, exactly: the declined escrow came back whole and is not spent.
    let after = [
        env.balance(sponsor).await,
        env.balance(a0).await,
        env.balance(b).await,
        env.balance(extractor).await,
    ];
    assert_eq!(before[0] - after[0], U256::from(700_000u64), "paid twice, funded three times");
    assert_eq!(after[1], before[1], "nothing for the agent that declined");
    assert_eq!(after[2] - before[2], U256::from(400_000u64));
    assert_eq!(after[3] - before[3], U256::from(300_000u64));
    assert_eq!(
        view["spend"],
        json!({"committed": "1000000", "paid": "700000", "refunded": "300000"})
    );

    // The reason, in the run's events and its view.
    let events = stack.events(&id).await;
    let declined: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subtask_declined").collect();
    let [d] = declined.as_slice() else { panic!("one subtask_declined: {events:#?}") };
    assert_eq!((&d["index"], &d["attempt"], &d["reason"]), (&json!(0), &json!(0), &json!(reason)));
    assert_eq!(d["task_id"], task(0).to_string());
    assert_eq!(d["executor"].as_str().unwrap().parse::<alloy::primitives::Address>().unwrap(), a0);
    assert!(d["reason_uri"].as_str().unwrap().starts_with("data:"), "{d}");
    assert!(d["tx_hash"].as_str().is_some_and(|t| t.starts_with("0x")), "{d}");
    let position = |kind: &str| events.iter().position(|e| e["kind"] == kind).unwrap();
    let recovered = &events[position("recovery_applied")];
    assert!(position("subtask_declined") < position("recovery_applied"));
    assert_eq!((&recovered["policy"], &recovered["attempt"]), (&json!("reassign"), &json!(1)));
    let why = recovered["reason"].as_str().unwrap();
    assert!(why.contains("its executor declined it on chain; reassigned to"), "{why}");
    assert!(events.iter().all(|e| e["kind"] != "plan_paused"), "no person was needed");
    assert_eq!(view["declines"].as_array().map(Vec::len), Some(1), "{view:#}");
    assert_eq!(view["declines"][0]["reason"], reason);
}

/// Declining costs nothing only in time. An executor that accepts a task
/// (so its client can neither cancel nor reassign it), holds it past 80% of
/// the time to its deadline and then declines weighs in its record as if
/// the task had expired; one that declines at once does not. Past the
/// deadline the escrow refuses to decline a task nobody accepted, so its
/// expiry cannot be turned into a decline.
#[tokio::test]
async fn a_late_decline_weighs_as_an_expiry_and_none_comes_past_the_deadline() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let agent = env.actors.agent(0);
    let anyone = env.actors.sponsor.address();
    let mut d = env.driver();
    d.scenario("late declines");
    let mut recs = Vec::new();
    for _ in 0..3 {
        // Due in a day.
        let params = d.params(agent, TASK_AMOUNT, "data:,x".into()).await.unwrap();
        recs.push(d.create_with_permit(params).await.unwrap());
    }
    // In time: accepted and given back at once.
    d.escrow.accept(agent, &mut recs[0]).await.unwrap();
    d.escrow.decline(agent, &mut recs[0], "").await.unwrap();
    // Late: accepted, held 21 of its 24 hours, then given back.
    d.escrow.accept(agent, &mut recs[1]).await.unwrap();
    d.advance(21 * 3600).await.unwrap();
    d.escrow.decline(agent, &mut recs[1], "").await.unwrap();
    // Never accepted, past its deadline: the decline is refused, it expires.
    d.advance(4 * 3600).await.unwrap();
    let err = d.escrow.decline(agent, &mut recs[2], "").await.unwrap_err();
    assert!(matches!(err, ClientError::Revert(_)), "{err}");
    d.escrow.refund_expired(anyone, &mut recs[2]).await.unwrap();
    assert_eq!(recs[2].status(), Status::Expired);

    let (store, _dir) = tessera_e2e::synced_index(&env).await;
    let late: Vec<bool> = {
        let mut late = Vec::new();
        for rec in &recs {
            late.push(store.task(&rec.id.to_string()).await.unwrap().unwrap().task.late_decline);
        }
        late
    };
    assert_eq!(late, [false, true, false]);
    let stats = store.agent(&agent.to_string()).await.unwrap().unwrap().stats;
    assert_eq!((stats.declined, stats.expired), (1, 2), "the late decline counts as expired");
    let record = tessera_indexer::store::records::record_of(&stats);
    assert_eq!((record.completed, record.expired), (0, 2));
    assert!(stats.evidence.failed > 0.0, "{:?}", stats.evidence);
}
