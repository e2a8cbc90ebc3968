//! Honest decisions and supervised drivers: a decision whose transaction
//! reverts is reported failed with the decoded revert; a driver that panics
//! is restarted (and says so) and its run still settles, once.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use alloy::primitives::U256;
use serde_json::{Value, json};
use tessera_e2e::{Stack, read_sse_until};
use tessera_orchestrator::{
    plan::Plan,
    runner::{FaultHook, RunnerConfig},
    state::RunState,
};

fn plan(label: &str, subtasks: Vec<Value>) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": "auto",
        "budget": 10_000_000u64, "subtasks": subtasks,
        "source": "The harbour reopened after the storm. Ships queued for two days.",
    })
}

#[tokio::test]
async fn a_decision_whose_transaction_reverts_is_reported_failed() {
    // No workers: the test accepts the task itself, as its executor.
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[]).await;
    let a0 = stack.env.actors.agent(0);
    let id = stack
        .run_plan(&plan(
            "revert",
            vec![json!({"index": 0, "capability": "extract-entities", "spec": "List the names",
                        "executor": a0, "cost": 300_000, "deadline_offset_secs": 3600})],
        ))
        .await;
    let view = stack.wait_phase(&id, 0, "created", 30).await;
    let task_id: U256 = view["subtasks"][0]["task_id"].as_str().unwrap().parse().unwrap();
    let driver = stack.env.driver();
    let mut rec = driver.escrow.fetch(task_id, stack.env.deployment.deploy_block).await.unwrap();
    driver.escrow.accept(a0, &mut rec).await.unwrap();
    stack.wait_phase(&id, 0, "accepted", 30).await;

    // Retrying an accepted task before its deadline: the escrow refuses.
    let (status, body) =
        stack.post(&format!("/api/runs/{id}/subtasks/0/retry"), &Value::Null).await;
    assert_eq!(status, 202, "{body}");
    let events = read_sse_until(
        &stack.http,
        &format!("{}/api/runs/{id}/events", stack.api),
        "decision_applied",
    )
    .await;
    let applied = events.last().unwrap();
    assert_eq!(applied["kind"], "decision_applied");
    assert_eq!((&applied["decision"], &applied["index"]), (&json!("retry"), &json!(0)));
    assert_eq!(applied["ok"], false, "{applied}");
    let revert = applied["revert"].as_str().expect("the decoded revert");
    assert!(revert.starts_with("TaskEscrowTooEarly"), "{applied}");
    assert!(applied["error"].as_str().unwrap().contains("TaskEscrowTooEarly"), "{applied}");
    assert!(applied["outcome"].as_str().unwrap().starts_with("failed"), "{applied}");

    // The API shows the same, and nothing moved on chain.
    let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
    let decision = &view["decisions"][0];
    assert_eq!(decision["kind"], "retry");
    assert_eq!(decision["ok"], false, "{view:#}");
    assert_eq!(decision["revert"], revert);
    assert_eq!(decision["error"], applied["error"]);
    assert_eq!(view["subtasks"][0]["phase"], "accepted");
    assert_eq!(view["subtasks"][0]["executor"], a0.to_string());
    assert_eq!(view["state"], "running");
}

#[tokio::test]
async fn a_panic_in_a_step_restarts_the_driver_and_the_run_still_settles_once() {
    let target = Plan::id_from_label("panics").to_string();
    let steps = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&steps);
    let config = RunnerConfig {
        fault: Some(FaultHook(Arc::new(move |run: &str| {
            // Once, on the run's third step: mid-plan.
            if run == target && seen.fetch_add(1, Ordering::SeqCst) == 2 {
                panic!("injected fault in step");
            }
        }))),
        ..RunnerConfig::default()
    };
    let stack = Stack::start_with(config, None).await;
    let (translator, summarizer) = (stack.env.actors.agent(2), stack.env.actors.agent(1));
    let id = stack
        .run_plan(&plan(
            "panics",
            vec![
                json!({"index": 0, "capability": "translate", "spec": "Translate to French",
                       "executor": translator, "cost": 800_000, "deadline_offset_secs": 3600}),
                json!({"index": 1, "capability": "summarize", "spec": "Summarize it",
                       "executor": summarizer, "cost": 400_000, "deadline_offset_secs": 3600,
                       "depends_on": [0]}),
            ],
        ))
        .await;
    let view = stack.wait_state(&id, "completed", 90).await;
    assert!(steps.load(Ordering::SeqCst) > 3, "the driver kept stepping after the panic");
    for s in view["subtasks"].as_array().unwrap() {
        assert_eq!(s["phase"], "paid");
    }
    let events = stack.events(&id).await;
    let count = |kind: &str| events.iter().filter(|e| e["kind"] == kind).count();
    let restarted: Vec<&Value> =
        events.iter().filter(|e| e["kind"] == "driver_restarted").collect();
    assert_eq!(restarted.len(), 1, "{events:#?}");
    assert!(restarted[0]["error"].as_str().unwrap().contains("injected fault in step"));
    assert_eq!(restarted[0]["restarts"], 1);
    assert_eq!((count("subtask_created"), count("subtask_paid")), (2, 2));
    assert_eq!(count("plan_completed"), 1);
    let done = events.last().unwrap();
    assert_eq!(done["kind"], "plan_completed");
    assert_eq!((&done["paid"], &done["total_cost"]), (&json!("1200000"), &json!("1200000")));
    assert_eq!(done["refunded"], "0");

    // The ended run's driver and its waker are gone.
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while stack.orch.drivers().driving() + stack.orch.drivers().wakers() > 0 {
        assert!(tokio::time::Instant::now() < end, "the driver of an ended run lingers");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A driver restart is recorded against the run's own plan, read from the
/// store, whatever the run's id says: a run kept under an id that is not
/// its plan's (a row written by something else) is recorded neither
/// against the id's text nor against the zero plan.
#[tokio::test]
async fn a_driver_restart_names_the_plan_of_its_run_whatever_the_id() {
    let id = Plan::id_from_label("an-id-of-another-plan").to_string();
    let target = id.clone();
    let fired = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&fired);
    let config = RunnerConfig {
        fault: Some(FaultHook(Arc::new(move |run: &str| {
            if run == target && seen.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("injected fault in step");
            }
        }))),
        ..RunnerConfig::default()
    };
    let stack = Stack::start_custom(config, None, &[]).await;
    let a0 = stack.env.actors.agent(0);
    let body = plan(
        "named-otherwise",
        vec![json!({"index": 0, "capability": "extract-entities", "spec": "List the names",
                    "executor": a0, "cost": 300_000, "deadline_offset_secs": 3600})],
    );
    stack.orch.store().insert_run(&id, &body.to_string(), RunState::Running).await.unwrap();
    assert_eq!(stack.orch.resume_all().await.unwrap(), 1);
    let url = format!("{}/api/runs/{id}/events", stack.api);
    let events = read_sse_until(&stack.http, &url, "driver_restarted").await;
    let restarted = events.last().expect("events");
    assert_eq!(restarted["kind"], "driver_restarted", "{events:#?}");
    assert!(fired.load(Ordering::SeqCst) >= 1);
    assert_eq!(restarted["plan_id"], Plan::id_from_label("named-otherwise").to_string());
}
