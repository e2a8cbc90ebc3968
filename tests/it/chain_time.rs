//! Time as the chain tells it: checkpoint and decision timeouts run in
//! chain seconds from the block their wait began at (a replica whose wall
//! clock runs ahead times nothing out early), and a decision taken again
//! after an interruption resolves against the chain time it was first
//! taken at (a reassignment is not sent again with a fresh deadline).

use std::time::Duration;

use alloy::{
    primitives::{Address, U256},
    providers::Provider,
    rpc::types::Filter,
    sol_types::SolEvent,
};
use serde_json::{Value, json};
use tessera_bindings::TaskEscrow;
use tessera_e2e::Stack;
use tessera_orchestrator::{plan::Plan, runner::RunnerConfig, state::Gates};

const ARTICLE: &str = "The harbour authority opened a new ferry line on Friday. The line links \
the old town with the university.";

fn step(index: u32, capability: &str, executor: Address, cost: u64, deps: &[u32]) -> Value {
    json!({
        "index": index, "capability": capability, "spec": format!("{capability} the article"),
        "executor": executor, "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps,
    })
}

/// Summarize (agent 1), then classify the summary's tone (agent 3), with
/// `checkpoint` after the first.
fn two_steps(stack: &Stack, label: &str, checkpoint: Value) -> Value {
    let (a1, a3) = (stack.env.actors.agent(1), stack.env.actors.agent(3));
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": "auto",
        "budget": 10_000_000u64, "source": ARTICLE, "review_window_secs": 600,
        "subtasks": [
            step(0, "summarize", a1, 400_000, &[]),
            step(1, "sentiment-classify", a3, 200_000, &[0]),
        ],
        "checkpoints": [checkpoint],
    })
}

/// The run's stored gates with every `at` moved `ms` into the past: as
/// if read by a replica whose wall clock runs `ms` ahead of the one that
/// wrote them.
async fn clock_ahead(stack: &Stack, id: &str, ms: i64) {
    let store = stack.orch.store();
    let mut gates = serde_json::to_value(store.gates(id).await.unwrap()).unwrap();
    for gate in gates.as_object_mut().unwrap().values_mut() {
        gate["at"] = json!(gate["at"].as_i64().unwrap() - ms);
    }
    let gates: Gates = serde_json::from_value(gates).unwrap();
    store.set_gates(id, &gates).await.unwrap();
}

/// Queues a decision that changes nothing (approving sub-task 1, which
/// waits) and waits until the runner recorded it.
async fn settled_decision(stack: &Stack, id: &str) {
    let (status, body) = stack
        .post(&format!("/api/runs/{id}/subtasks/1/review"), &json!({"decision": "approve"}))
        .await;
    assert_eq!(status, 202, "{body}");
    let seq = body["decision"].as_i64().unwrap_or_else(|| panic!("a queued decision: {body}"));
    decision_done(stack, id, seq).await;
}

/// Waits until decision `seq` of run `id` is recorded; returns it.
async fn decision_done(stack: &Stack, id: &str, seq: i64) -> Value {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
        let found = view["decisions"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["seq"] == seq && !d["done_at"].is_null()).cloned());
        if let Some(d) = found {
            return d;
        }
        assert!(tokio::time::Instant::now() < end, "decision {seq} never recorded: {view:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two decisions recorded one after the other: the runner's step that
/// recorded the first ran to its end (its gates and timeouts looked at)
/// before the second was taken.
async fn a_full_step(stack: &Stack, id: &str) {
    settled_decision(stack, id).await;
    settled_decision(stack, id).await;
}

/// A checkpoint's timeout and the decision timeout of an escalated one run
/// on chain time: with the stored wait an hour older by the wall clock
/// (a replica whose clock runs an hour ahead), nothing times out until the
/// chain's own time passes the limit.
#[tokio::test]
async fn timeouts_run_on_chain_time_not_on_a_replicas_clock() {
    let config = RunnerConfig { decision_timeout: Duration::from_secs(600), ..Default::default() };
    let stack = Stack::start_with(config, None).await;
    let approve = two_steps(
        &stack,
        "chain-time-approve",
        json!({"name": "review", "after": [0], "timeout_secs": 600, "on_timeout": "approve"}),
    );
    let escalate = two_steps(
        &stack,
        "chain-time-escalate",
        json!({"name": "legal", "after": [0], "timeout_secs": 1, "on_timeout": "escalate"}),
    );
    let a = stack.run_plan(&approve).await;
    let e = stack.run_plan(&escalate).await;
    stack.wait_state(&a, "paused", 60).await;
    stack.wait_state(&e, "paused", 60).await;
    // The escalating checkpoint's second passes on chain.
    stack.advance(2).await;
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, view) = stack.get(&format!("/api/runs/{e}")).await;
        if view["gates"]["legal"]["state"] == "escalated" {
            break;
        }
        assert!(tokio::time::Instant::now() < end, "never escalated: {view:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let hour = 3_600_000;
    clock_ahead(&stack, &a, hour).await;
    clock_ahead(&stack, &e, hour).await;
    a_full_step(&stack, &a).await;
    a_full_step(&stack, &e).await;
    let (_, view) = stack.get(&format!("/api/runs/{a}")).await;
    assert_eq!(view["gates"]["review"]["state"], "reached", "not approved early: {view:#}");
    assert_eq!(view["state"], "paused");
    let (_, view) = stack.get(&format!("/api/runs/{e}")).await;
    assert_eq!(view["gates"]["legal"]["state"], "escalated", "{view:#}");
    assert_eq!(view["state"], "paused", "not cancelled early: {view:#}");

    // Past both limits on chain: the checkpoint approves by its policy, the
    // escalated run is cancelled by the decision timeout.
    stack.advance(601).await;
    let view = stack.wait_state(&a, "completed", 60).await;
    assert_eq!(view["gates"]["review"]["by"], "timeout", "{view:#}");
    stack.wait_state(&e, "cancelled", 60).await;
}

/// A retry of a sub-task nobody accepted reassigns its task with a fresh
/// deadline. A runner stopped after sending it and before recording the
/// decision takes it again: the chain already shows the reassignment, so
/// nothing is sent, and the outcome names the same deadline.
#[tokio::test]
async fn a_decision_taken_again_after_an_interruption_sends_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("runs.db").display());
    // Agent 1 runs no worker: nobody accepts its task.
    let config = RunnerConfig { decision_timeout: Duration::from_secs(3600), ..Default::default() };
    let stack = Stack::start_custom(config, Some(url.clone()), &[0, 2, 3, 4]).await;
    let a1 = stack.env.actors.agent(1);
    let body = json!({
        "version": 1, "id": Plan::id_from_label("taken-again"), "review": "auto",
        "budget": 10_000_000u64, "source": ARTICLE,
        "subtasks": [step(0, "summarize", a1, 400_000, &[])],
    });
    let id = stack.run_plan(&body).await;
    let view = stack.wait_phase(&id, 0, "created", 60).await;
    let task: U256 = view["subtasks"][0]["task_id"].as_str().unwrap().parse().unwrap();
    // Later on chain than the creation: the retry's deadline is a new one
    // (taken in the creation's second, it would change nothing, and is not
    // sent).
    stack.advance(10).await;
    let (status, queued) =
        stack.post(&format!("/api/runs/{id}/subtasks/0/retry"), &Value::Null).await;
    assert_eq!(status, 202, "{queued}");
    let seq = queued["decision"].as_i64().unwrap();
    let first = decision_done(&stack, &id, seq).await;
    assert_eq!(first["ok"], true, "{first}");
    let reassignments = || async {
        let logs = stack
            .env
            .provider
            .get_logs(
                &Filter::new()
                    .address(stack.env.deployment.task_escrow)
                    .event_signature(TaskEscrow::TaskReassigned::SIGNATURE_HASH)
                    .topic1(alloy::primitives::B256::from(task))
                    .from_block(stack.env.deployment.deploy_block),
            )
            .await
            .unwrap();
        logs.iter()
            .map(|l| TaskEscrow::TaskReassigned::decode_log(&l.inner).unwrap().data.newDeadline)
            .collect::<Vec<_>>()
    };
    // The runner records the decision once its transaction is sent; anvil
    // mines it a moment later.
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    let deadlines = loop {
        let found = reassignments().await;
        if !found.is_empty() {
            break found;
        }
        assert!(tokio::time::Instant::now() < end, "the reassignment never mined: {first}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(deadlines.len(), 1, "one reassignment on chain: {first}");
    let until = format!("until {}", deadlines[0]);
    assert!(first["outcome"].as_str().unwrap().ends_with(&until), "{first}");

    // Later on chain, the decision's record is lost as a crash between
    // sending and recording would lose it.
    stack.advance(100).await;
    sqlx::any::install_default_drivers();
    let db = sqlx::AnyPool::connect(&url).await.unwrap();
    sqlx::query(
        "UPDATE decisions SET done_at = NULL, outcome = NULL, ok = NULL, error = NULL, \
         revert = NULL WHERE run_id = $1 AND seq = $2",
    )
    .bind(&id)
    .bind(seq)
    .execute(&db)
    .await
    .unwrap();
    let again = decision_done(&stack, &id, seq).await;
    assert_eq!(again["outcome"], first["outcome"], "the same deadline: {again}");
    // A block mined now holds anything sent and still waiting.
    stack.advance(1).await;
    assert_eq!(reassignments().await, deadlines, "nothing sent again");
}
