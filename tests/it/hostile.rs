//! Strangers' inputs cost their sender only: a result URI whose location
//! hint never answers (or answers nothing, slowly) neither freezes the
//! sponsor's run nor delays its honest sub-tasks, and is never paid for.

use std::{sync::Arc, time::Duration};

use alloy::{
    network::EthereumWallet,
    primitives::{Address, U256},
};
use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_arbiter::{Arbiter, Judge, store::ArbiterStore};
use tessera_bindings::{
    client::connect,
    envelope::{BlobHash, FsBlobStore},
};
use tessera_e2e::Stack;
use tessera_orchestrator::{plan::Plan, runner::RunnerConfig};

/// A result URI whose hint names a port nobody listens on.
fn dead_hint(label: &str) -> String {
    format!("sha256:{}?src=http://127.0.0.1:9/blobs", BlobHash::of(label.as_bytes()))
}

/// A plan of a hostile step 0 (agent 4, no worker: the test delivers in its
/// name) and honest steps after it.
fn plan(label: &str, review: &str, steps: Value) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": review,
        "budget": 5_000_000u64, "source": "The ferry leaves at nine. Bring your ticket.",
        "review_window_secs": 600, "subtasks": steps,
    })
}

fn hostile_step(stack: &Stack) -> Value {
    json!({"index": 0, "capability": "extract-entities", "spec": "List the entities",
           "executor": stack.env.actors.agent(4), "cost": 250_000, "deadline_offset_secs": 3600})
}

/// Delivers `uri` as the executor of sub-task `index` of run `id`.
async fn deliver(stack: &Stack, id: &str, index: usize, uri: &str) {
    let view = stack.wait_phase(id, index, "created", 30).await;
    let task_id: U256 = view["subtasks"][index]["task_id"].as_str().unwrap().parse().unwrap();
    let mut d = stack.env.driver();
    let mut rec = d.escrow.fetch(task_id, stack.env.deployment.deploy_block).await.unwrap();
    d.deliver(&mut rec, uri).await.unwrap();
}

async fn arbiter(stack: &Stack) -> tokio::task::JoinHandle<()> {
    let blobs = Arc::new(FsBlobStore::new(&stack.blobs));
    let key = stack.env.actors.arbiter.clone();
    let provider = connect(stack.env.chain.endpoint_url(), EthereumWallet::new(key.clone()));
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("a.db").display());
    let store = ArbiterStore::connect(&db).await.unwrap();
    let deployment = stack.env.deployment.clone();
    let mut arbiter =
        Arbiter::new(provider, key.address(), deployment, store, Judge::Offline, blobs)
            .await
            .unwrap();
    let ws = stack.env.chain.ws_endpoint();
    tokio::spawn(async move {
        let _dir = dir;
        arbiter.run(Some(&ws), Duration::from_millis(200), |_| {}, std::future::pending()).await;
    })
}

/// The finding reproduced: a delivered result whose hint never answers,
/// under manual review. The sponsor's queued dispute reaches the chain
/// within a few blocks, the arbiter rules on what it could read (after its
/// bounded wait), and the executor is never paid.
#[tokio::test]
async fn a_result_whose_hint_never_answers_does_not_hold_up_the_sponsors_dispute() {
    let deploy = DeployConfig { appeal_window: 0, ..DeployConfig::default() };
    let stack = Stack::start_custom_deploy(RunnerConfig::default(), None, &[1], deploy).await;
    let a1: Address = stack.env.actors.agent(1);
    let a4: Address = stack.env.actors.agent(4);
    let id = stack
        .run_plan(&plan("dead-hint-manual", "manual", json!([
            hostile_step(&stack),
            {"index": 1, "capability": "summarize", "spec": "Summarize the entities", "executor": a1,
             "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ])))
        .await;
    let before = stack.env.balance(a4).await;
    deliver(&stack, &id, 0, &dead_hint("manual")).await;
    stack.wait_phase(&id, 0, "completed", 30).await;
    let (status, body) = stack
        .post(
            &format!("/api/runs/{id}/subtasks/0/review"),
            &json!({"decision": "dispute", "reason": "the result cannot be read"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    // Within a few blocks: on today's main the run retried its step for ever
    // and the decision never reached the chain.
    stack.wait_phase(&id, 0, "disputed", 20).await;
    // The arbiter waits for the evidence a bounded while (chain time), then
    // rules without it: the client gets the money back.
    let court = arbiter(&stack).await;
    stack.advance(121).await;
    let view = stack.wait_state(&id, "failed", 60).await;
    assert_eq!(view["reason"], "dispute_refunded", "{view:#}");
    assert_eq!(view["subtasks"][0]["phase"], "refunded");
    assert_eq!(view["subtasks"][1]["phase"], "skipped", "nothing funded on an unread result");
    assert_eq!(stack.env.balance(a4).await, before, "the executor is not paid");
    court.abort();
}

/// Under auto review a result that stays out of reach is never approved: past
/// the runner's result wait it is disputed, with a category for a reason
/// that names nothing of the executor's source, and its dependants are not
/// funded on it.
#[tokio::test]
async fn an_unreadable_result_under_auto_review_is_disputed_not_paid() {
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[1]).await;
    let a1: Address = stack.env.actors.agent(1);
    let a4: Address = stack.env.actors.agent(4);
    let id = stack
        .run_plan(&plan("dead-hint-auto", "auto", json!([
            hostile_step(&stack),
            {"index": 1, "capability": "summarize", "spec": "Summarize the entities", "executor": a1,
             "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ])))
        .await;
    let before = stack.env.balance(a4).await;
    deliver(&stack, &id, 0, &dead_hint("auto")).await;
    stack.wait_phase(&id, 0, "completed", 30).await;
    // Within the wait: not paid, nothing funded on it.
    for _ in 0..3 {
        stack.advance(5).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
    assert_eq!(view["subtasks"][0]["phase"], "completed", "{view:#}");
    assert_eq!(view["subtasks"][1]["phase"], "waiting", "{view:#}");
    // Past it: disputed.
    stack.advance(31).await;
    stack.wait_phase(&id, 0, "disputed", 20).await;
    assert_eq!(stack.env.balance(a4).await, before, "the executor is not paid");
    let url = format!("{}/api/runs/{id}/events", stack.api);
    let events = tessera_e2e::read_sse_until(&stack.http, &url, "subtask_disputed").await;
    let unreadable = events
        .iter()
        .find(|e| e["kind"] == "result_unreadable")
        .unwrap_or_else(|| panic!("no result_unreadable event: {events:#?}"));
    let reason = unreadable["reason"].as_str().unwrap();
    assert_eq!(reason, "unavailable");
    let opened = events.iter().find(|e| e["kind"] == "subtask_disputed").expect("disputed");
    assert_eq!(opened["index"], 0);
}

/// A result behind a tarpit (a hint that accepts and never answers) beside
/// an honest sub-task of the same run: the honest one settles within twice
/// the time it takes beside a hostile step that delivered nothing (measured
/// in the same test; a floor of 3 s absorbs a loaded machine's jitter). On
/// today's main every look waited out the tarpit and failed, so the honest
/// step was never approved.
#[tokio::test]
async fn a_tarpit_result_does_not_slow_an_honest_sub_task_of_the_same_run() {
    let mut stack = Stack::start_custom(RunnerConfig::default(), None, &[]).await;
    let steps = |stack: &Stack, honest: usize| {
        json!([
            hostile_step(stack),
            {"index": 1, "capability": "summarize", "spec": "Summarize the note",
             "executor": stack.env.actors.agent(honest), "cost": 500_000,
             "deadline_offset_secs": 3600},
        ])
    };
    // The baseline: step 0 never delivers.
    let id = stack.run_plan(&plan("tarpit-baseline", "auto", steps(&stack, 0))).await;
    stack.wait_phase(&id, 1, "created", 30).await;
    let started = tokio::time::Instant::now();
    stack.add_worker(0).await;
    stack.wait_phase(&id, 1, "paid", 60).await;
    let baseline = started.elapsed();
    // Beside a tarpit.
    let id = stack.run_plan(&plan("tarpit-beside", "auto", steps(&stack, 1))).await;
    stack.wait_phase(&id, 1, "created", 30).await;
    let (trap, _) = tessera_e2e::tarpit().await;
    let uri = format!("sha256:{}?src={trap}", BlobHash::of(b"tarpit"));
    deliver(&stack, &id, 0, &uri).await;
    let started = tokio::time::Instant::now();
    stack.add_worker(1).await;
    stack.wait_phase(&id, 1, "paid", 60).await;
    let beside = started.elapsed();
    let bound = (baseline * 2).max(Duration::from_secs(3));
    println!("honest settlement: baseline {baseline:?}, beside a tarpit {beside:?}");
    assert!(beside <= bound, "beside a tarpit {beside:?}, baseline {baseline:?}");
    let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
    assert_eq!(view["subtasks"][0]["phase"], "completed", "still unread, not paid: {view:#}");
}

/// In a pipeline funded up front, a dependant waiting on a result nobody
/// can read is cancelled and refunded once the result is known unreadable:
/// never left to expire against its executor's record.
#[tokio::test]
async fn an_upfront_dependant_of_an_unreadable_result_is_cancelled_not_left_to_expire() {
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[1]).await;
    let a1: Address = stack.env.actors.agent(1);
    let mut body = plan(
        "dead-hint-upfront",
        "auto",
        json!([
            hostile_step(&stack),
            {"index": 1, "capability": "summarize", "spec": "Summarize the entities", "executor": a1,
             "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ]),
    );
    body["funding"] = json!("upfront");
    let id = stack.run_plan(&body).await;
    stack.wait_phase(&id, 1, "created", 30).await;
    deliver(&stack, &id, 0, &dead_hint("upfront")).await;
    stack.wait_phase(&id, 0, "completed", 30).await;
    stack.advance(31).await;
    stack.wait_phase(&id, 0, "disputed", 20).await;
    let url = format!("{}/api/runs/{id}/events", stack.api);
    let events = tessera_e2e::read_sse_until(&stack.http, &url, "subtask_cancelled").await;
    let cancelled = events.iter().find(|e| e["kind"] == "subtask_cancelled").unwrap();
    assert_eq!(cancelled["index"], 1, "{cancelled}");
    assert!(
        !events.iter().any(|e| e["kind"] == "subtask_expired"),
        "nothing left to expire: {events:#?}"
    );
}
