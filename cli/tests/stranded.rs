//! No stranded states: a proposed run nobody approves expires (`tessera
//! serve --proposal-ttl-secs`), and a `tessera plan` with nobody at the
//! terminal to approve it fails at once and cancels what it proposed.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::time::Duration;

use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_e2e::{TEST_TOKEN, TestEnv};
use tessera_orchestrator::plan::Plan;

mod support;

fn plan(env: &TestEnv, label: &str) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": "auto", "budget": 2_000_000u64,
        "source": "The port reopened after the storm.",
        "subtasks": [
            {"index": 0, "capability": "translate", "spec": "Translate to French",
             "executor": env.actors.agent(2), "cost": 800_000, "deadline_offset_secs": 3600},
        ],
    })
}

async fn run_of(http: &reqwest::Client, api: &str, id: &str) -> Value {
    http.get(format!("{api}/api/runs/{id}")).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn a_proposal_nobody_approves_expires_with_its_reason() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let (_orch, api) = support::start_with(&env, dir.path(), &["--proposal-ttl-secs", "2"], &[]);
    let http = reqwest::Client::new();
    support::wait_up(&http, &api).await;
    let proposed = plan(&env, "never-approved");
    let id = proposed["id"].as_str().unwrap().to_owned();
    let r = http.post(format!("{api}/api/plans")).bearer_auth(TEST_TOKEN).json(&proposed).send();
    assert_eq!(r.await.unwrap().status().as_u16(), 201);
    assert_eq!(run_of(&http, &api, &id).await["state"], "proposed");
    // Waited for (the sweep runs every second), not timed.
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    let run = loop {
        let run = run_of(&http, &api, &id).await;
        if run["state"] != "proposed" {
            break run;
        }
        assert!(tokio::time::Instant::now() < end, "never expired: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        (run["state"].as_str(), run["reason"].as_str()),
        (Some("cancelled"), Some("proposal expired")),
        "{run}"
    );
    let events = tessera_e2e::read_sse(&http, &format!("{api}/api/runs/{id}/events")).await;
    let last = events.last().unwrap();
    assert_eq!(
        (last["kind"].as_str(), last["reason"].as_str()),
        (Some("plan_failed"), Some("proposal expired")),
        "{events:#?}"
    );
    // The CLI says so too; an expired run takes no approval.
    let shown = support::cli(&api, None, ["runs", "show", id.as_str()], None).await;
    assert!(
        shown.code == Some(0) && shown.stdout.contains("reason: proposal expired"),
        "{shown:?}"
    );
    let approve = http.post(format!("{api}/api/runs/{id}/approve")).bearer_auth(TEST_TOKEN).send();
    assert!(approve.await.unwrap().status().is_client_error());
}

#[tokio::test]
async fn plan_without_yes_and_without_a_terminal_fails_at_once_and_cancels() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let (_orch, api) = support::start(&env, dir.path());
    let http = reqwest::Client::new();
    support::wait_up(&http, &api).await;
    let proposed = plan(&env, "nobody-at-the-terminal");
    let file = dir.path().join("plan.json");
    std::fs::write(&file, proposed.to_string()).unwrap();
    // Standard input is no terminal (closed, as under CI or cron).
    let ran =
        support::cli(&api, Some(TEST_TOKEN), ["plan", "--file", file.to_str().unwrap()], None)
            .await;
    assert_ne!(ran.code, Some(0), "{ran:?}");
    assert!(ran.stderr.contains("standard input is not a terminal"), "{ran:?}");
    assert!(ran.stderr.contains("--yes"), "{ran:?}");
    let id = proposed["id"].as_str().unwrap();
    assert!(ran.stderr.contains(&format!("the proposed run {id} was cancelled")), "{ran:?}");
    let run = run_of(&http, &api, id).await;
    assert_eq!(
        (run["state"].as_str(), run["reason"].as_str()),
        (Some("cancelled"), Some("cancelled")),
        "{run}"
    );
    assert!(ran.stdout.contains("translate"), "the card was shown: {ran:?}");
}
