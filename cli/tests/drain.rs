//! `tessera serve` stopped with SIGTERM mid-plan drains its run drivers and
//! exits cleanly; restarted, it settles the plan exactly once.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{process::Command, time::Duration};

use alloy::{primitives::U256, sol_types::SolEvent};
use tessera_bindings::TaskEscrow;
use tessera_orchestrator::plan::Plan;

mod support;

use support::{
    chain_plan, chain_with_workers, escrow_logs, propose_and_approve, start, wait_completed,
    wait_started, wait_up,
};

#[tokio::test]
async fn sigterm_mid_plan_drains_and_a_restart_settles_exactly_once() {
    let (env, dir, workers) = chain_with_workers().await;
    let sponsor = env.actors.sponsor.address();
    let start_balance = env.balance(sponsor).await;
    let plan_id = Plan::id_from_label("sigterm");
    let (a0, a1, a3) = (env.actors.agent(0), env.actors.agent(1), env.actors.agent(3));
    let plan = chain_plan(
        plan_id,
        "The orchestrator approves and pays. Results flow to the next step.",
        &[
            ("summarize", a1, 400_000),
            ("extract-entities", a0, 300_000),
            ("sentiment-classify", a3, 200_000),
            ("summarize", a1, 400_000),
        ],
    );
    let http = reqwest::Client::new();

    // Life 1: approve, then SIGTERM while the plan is under way.
    let (mut orch, api) = start(&env, dir.path());
    wait_up(&http, &api).await;
    let id = propose_and_approve(&http, &api, &plan).await;
    wait_started(&http, &api, &id, 1).await;
    let term = Command::new("kill").args(["-TERM", &orch.0.id().to_string()]).status().unwrap();
    assert!(term.success());
    // Drained, not killed: it exits by itself, successfully.
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = orch.0.try_wait().unwrap() {
            break status;
        }
        assert!(tokio::time::Instant::now() < end, "serve did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.success(), "serve exited with {status}");
    drop(orch);

    // Life 2: resumes and finishes.
    let (_orch, api) = start(&env, dir.path());
    wait_up(&http, &api).await;
    let v = wait_completed(&http, &api, &id).await;
    for s in v["subtasks"].as_array().unwrap() {
        assert_eq!(
            (&s["attempt"], &s["phase"]),
            (&serde_json::json!(0), &serde_json::json!("paid")),
            "{s}"
        );
    }
    let created = escrow_logs(&env, TaskEscrow::TaskCreated::SIGNATURE_HASH, Some(plan_id)).await;
    assert_eq!(created, 4, "one task per sub-task");
    let settled = escrow_logs(&env, TaskEscrow::TaskSettled::SIGNATURE_HASH, None).await;
    assert_eq!(settled, 4, "one settlement per sub-task");
    assert_eq!(env.balance(sponsor).await, start_balance - U256::from(1_300_000u64));

    let events = tessera_e2e::read_sse(&http, &format!("{api}/api/runs/{id}/events")).await;
    let count = |kind: &str| events.iter().filter(|e| e["kind"] == kind).count();
    assert_eq!((count("subtask_created"), count("subtask_paid")), (4, 4));
    assert_eq!(count("plan_completed"), 1);
    assert_eq!(count("driver_restarted"), 0, "a drained driver is not a failure");
    assert_eq!(events.last().unwrap()["paid"], "1300000");
    for w in workers {
        w.abort();
    }
}
