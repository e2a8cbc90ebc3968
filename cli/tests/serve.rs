//! The `tessera` binary against real services: `serve` killed with SIGKILL
//! mid-plan and restarted, and the `plan` client for plan files and briefs.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use alloy::{primitives::U256, providers::Provider, rpc::types::Filter, sol_types::SolEvent};
use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::TaskEscrow;
use tessera_e2e::{TEST_TOKEN, TestEnv};
use tessera_orchestrator::plan::Plan;

mod support;

use support::{
    Service, chain_plan, chain_with_workers, chain_with_workers_deployed, escrow_logs,
    propose_and_approve, start, wait_completed, wait_started, wait_up, words,
};

#[tokio::test]
async fn kill_9_mid_plan_then_restart_funds_and_pays_each_sub_task_exactly_once() {
    let (env, dir, workers) = chain_with_workers().await;
    let sponsor = env.actors.sponsor.address();
    let (a0, a1, a3) = (env.actors.agent(0), env.actors.agent(1), env.actors.agent(3));
    let start_balances = (
        env.balance(sponsor).await,
        env.balance(a0).await,
        env.balance(a1).await,
        env.balance(a3).await,
    );

    let plan_id = Plan::id_from_label("kill-9");
    let plan = chain_plan(
        plan_id,
        "Tessera settles each sub-task through an escrow. Workers accept and deliver. \
         The orchestrator approves and pays. Results flow to the next step.",
        &[
            ("summarize", a1, 400_000),
            ("extract-entities", a0, 300_000),
            ("sentiment-classify", a3, 200_000),
            ("summarize", a1, 400_000),
            ("sentiment-classify", a3, 200_000),
            ("summarize", a0, 500_000),
        ],
    );
    let total = U256::from(2_000_000u64);
    let http = reqwest::Client::new();

    // Life 1: propose, approve, die while the first sub-tasks are in flight.
    let (mut orch, api) = start(&env, dir.path());
    wait_up(&http, &api).await;
    let id = propose_and_approve(&http, &api, &plan).await;
    wait_started(&http, &api, &id, 1).await;
    orch.0.kill().unwrap(); // SIGKILL
    orch.0.wait().unwrap();
    drop(orch);

    // Life 2: resumes (on a port of its own), dies again a little later.
    let (mut orch, api) = start(&env, dir.path());
    wait_up(&http, &api).await;
    wait_started(&http, &api, &id, 3).await;
    orch.0.kill().unwrap();
    orch.0.wait().unwrap();
    drop(orch);

    // Life 3: finishes the plan.
    let (_orch, api) = start(&env, dir.path());
    wait_up(&http, &api).await;
    let v = wait_completed(&http, &api, &id).await;
    for s in v["subtasks"].as_array().unwrap() {
        assert_eq!(s["attempt"], 0, "no sub-task needed a second attempt: {s}");
        assert_eq!(s["phase"], "paid");
    }

    // Exactly one task per sub-task on chain, each settled once.
    let created = escrow_logs(&env, TaskEscrow::TaskCreated::SIGNATURE_HASH, Some(plan_id)).await;
    assert_eq!(created, 6, "one TaskCreated per sub-task");
    let settled = escrow_logs(&env, TaskEscrow::TaskSettled::SIGNATURE_HASH, None).await;
    assert_eq!(settled, 6, "one settlement per sub-task");

    assert_eq!(env.balance(sponsor).await, start_balances.0 - total);
    assert_eq!(env.balance(a0).await, start_balances.1 + U256::from(800_000u64));
    assert_eq!(env.balance(a1).await, start_balances.2 + U256::from(800_000u64));
    assert_eq!(env.balance(a3).await, start_balances.3 + U256::from(400_000u64));

    // The event stream holds each transition once, across three lives.
    let events = tessera_e2e::read_sse(&http, &format!("{api}/api/runs/{id}/events")).await;
    let mut seen = std::collections::HashSet::new();
    for e in &events {
        if let Some(tx) = e["tx_hash"].as_str() {
            assert!(
                seen.insert((e["kind"].to_string(), e["index"].to_string(), tx.to_owned())),
                "duplicate {e}"
            );
        }
    }
    let paid = events.iter().filter(|e| e["kind"] == "subtask_paid").count();
    assert_eq!(paid, 6);
    assert_eq!(events.last().unwrap()["kind"], "plan_completed");
    for w in workers {
        w.abort();
    }
}

/// On timed blocks a transaction waits in the pool for a while: `serve` is
/// killed the moment one of the sponsor's is sent and not yet mined, twice,
/// and the restarted runner still funds and pays each sub-task once.
#[tokio::test]
async fn kill_9_between_a_send_and_its_receipt_funds_each_sub_task_once() {
    let (env, dir, workers) = chain_with_workers().await;
    env.provider.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await.unwrap();
    env.provider.raw_request::<_, Value>("evm_setIntervalMining".into(), (2u64,)).await.unwrap();
    let sponsor = env.actors.sponsor.address();
    let (a0, a1) = (env.actors.agent(0), env.actors.agent(1));
    let start_balance = env.balance(sponsor).await;
    let plan_id = Plan::id_from_label("kill-9-in-flight");
    let plan = chain_plan(
        plan_id,
        "Tessera settles each sub-task through an escrow. Workers deliver. The \
         orchestrator approves and pays.",
        &[
            ("summarize", a1, 400_000),
            ("extract-entities", a0, 300_000),
            ("summarize", a1, 400_000),
        ],
    );
    let http = reqwest::Client::new();
    let (_orch, _api, _id, v) = through_two_kills(&env, dir.path(), &http, &plan).await;
    for s in v["subtasks"].as_array().unwrap() {
        assert_eq!((s["attempt"].as_u64(), s["phase"].as_str()), (Some(0), Some("paid")), "{s}");
    }
    let created = escrow_logs(&env, TaskEscrow::TaskCreated::SIGNATURE_HASH, Some(plan_id)).await;
    assert_eq!(created, 3, "one TaskCreated per sub-task");
    let settled = escrow_logs(&env, TaskEscrow::TaskSettled::SIGNATURE_HASH, None).await;
    assert_eq!(settled, 3, "one settlement per sub-task");
    assert_eq!(env.balance(sponsor).await, start_balance - U256::from(1_100_000u64));
    for w in workers {
        w.abort();
    }
}

/// A pipeline funded up front, on 2-second blocks: `serve` is killed with
/// its one `createTasks` batch in the pool, then again with a later
/// transaction (an approval) in the pool; the restarted runner funds and
/// pays each sub-task once, and the dependants still read their upstream
/// deliveries.
#[tokio::test]
async fn kill_9_mid_upfront_pipeline_funds_and_pays_each_sub_task_once() {
    let (env, dir, workers) = chain_with_workers().await;
    env.provider.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await.unwrap();
    env.provider.raw_request::<_, Value>("evm_setIntervalMining".into(), (2u64,)).await.unwrap();
    let sponsor = env.actors.sponsor.address();
    let (a0, a1, a3) = (env.actors.agent(0), env.actors.agent(1), env.actors.agent(3));
    let start_balance = env.balance(sponsor).await;
    let plan_id = Plan::id_from_label("kill-9-upfront");
    let mut plan = chain_plan(
        plan_id,
        "Tessera settles each sub-task through an escrow. Workers deliver. The \
         orchestrator approves and pays. Results flow to the next step.",
        &[
            ("summarize", a1, 400_000),
            ("extract-entities", a0, 300_000),
            ("sentiment-classify", a3, 200_000),
            ("summarize", a1, 400_000),
        ],
    );
    plan["funding"] = json!("upfront");
    let http = reqwest::Client::new();
    let (_orch, api, id, v) = through_two_kills(&env, dir.path(), &http, &plan).await;
    for s in v["subtasks"].as_array().unwrap() {
        assert_eq!((s["attempt"].as_u64(), s["phase"].as_str()), (Some(0), Some("paid")), "{s}");
    }
    let created = escrow_logs(&env, TaskEscrow::TaskCreated::SIGNATURE_HASH, Some(plan_id)).await;
    assert_eq!(created, 4, "one TaskCreated per sub-task");
    let settled = escrow_logs(&env, TaskEscrow::TaskSettled::SIGNATURE_HASH, None).await;
    assert_eq!(settled, 4, "one settlement per sub-task");
    assert_eq!(env.balance(sponsor).await, start_balance - U256::from(1_300_000u64));
    // All four in the one batch sent before the first kill.
    let events = tessera_e2e::read_sse(&http, &format!("{api}/api/runs/{id}/events")).await;
    let batches: std::collections::BTreeSet<&str> = events
        .iter()
        .filter(|e| e["kind"] == "subtask_created")
        .filter_map(|e| e["tx_hash"].as_str())
        .collect();
    assert_eq!(batches.len(), 1, "{events:#?}");
    for w in workers {
        w.abort();
    }
}

#[tokio::test]
async fn plan_file_cli_proposes_approves_follows_and_summarizes() {
    let (env, dir, workers) = chain_with_workers().await;
    let (_orch, api) = start(&env, dir.path());
    wait_up(&reqwest::Client::new(), &api).await;
    let plan_id = Plan::id_from_label("cli-plan");
    let plan = json!({
        "version": 1, "id": plan_id, "review": "auto", "budget": 2_000_000u64,
        "source": "The port reopened after the storm. Ships queued for two days. Traders were relieved.",
        "subtasks": [
            {"index": 0, "capability": "translate", "spec": "Translate to French",
             "executor": env.actors.agent(2), "cost": 800_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "summarize", "spec": "Summarize the translation",
             "executor": env.actors.agent(1), "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    });
    let file = dir.path().join("plan.json");
    std::fs::write(&file, plan.to_string()).unwrap();
    // The workers run on this test's runtime: wait for the CLI without blocking it.
    let tessera = |args: &[&str], token: Option<&str>| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.args(args).env("TESSERA_API_URL", &api).env_remove("TESSERA_API_TOKEN");
        if let Some(t) = token {
            cmd.env("TESSERA_API_TOKEN", t);
        }
        cmd.kill_on_drop(true);
        async move {
            tokio::time::timeout(Duration::from_secs(60), cmd.output())
                .await
                .expect("tessera finishes")
                .expect("tessera runs")
        }
    };
    let path = file.to_str().unwrap();

    let denied = tessera(&["plan", "--file", path, "--yes"], None).await;
    assert!(!denied.status.success());
    assert!(String::from_utf8_lossy(&denied.stderr).contains("missing bearer token"));

    let out = tessera(&["plan", "--file", path, "--yes"], Some(TEST_TOKEN)).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "translate",
        "summarize",
        "total 1.200000 USDC",
        "Settlement of",
        "plan_completed",
        "subtask_paid",
    ] {
        assert!(stdout.contains(needle), "{needle} in:\n{stdout}");
    }
    let shown = tessera(&["runs", "show", &plan_id.to_string()], None).await;
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert_eq!(shown.matches(" paid ").count(), 2, "{shown}");
    // The work itself: each step's output under it, as JSON too, and one
    // output whole (to standard output, or into a file).
    let id = plan_id.to_string();
    let json = tessera(&["runs", "show", &id, "--json"], None).await;
    assert!(json.status.success(), "{json:?}");
    let view: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(view["id"], id.as_str(), "{view}");
    assert_eq!(view["rulings"], json!([]), "nothing was disputed: {view}");
    let outputs: Vec<String> = view["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["output"].as_str().expect("each paid step has its output").to_owned())
        .collect();
    assert_eq!(outputs.len(), 2, "{view}");
    for output in &outputs {
        assert!(!output.trim().is_empty(), "{view}");
        let first = output.lines().next().unwrap().trim();
        assert!(shown.contains(&format!("       {first}")), "{first} under its step in:\n{shown}");
    }
    let whole = tessera(&["runs", "output", &id, "1"], None).await;
    assert!(whole.status.success(), "{whole:?}");
    assert_eq!(String::from_utf8_lossy(&whole.stdout).trim_end(), outputs[1].trim_end());
    let into = dir.path().join("translation.txt");
    let written = tessera(&["runs", "output", &id, "0", "-o", into.to_str().unwrap()], None).await;
    assert!(written.status.success() && written.stdout.is_empty(), "{written:?}");
    assert_eq!(std::fs::read_to_string(&into).unwrap(), outputs[0]);
    let missing = tessera(&["runs", "output", &id, "7"], None).await;
    assert!(!missing.status.success(), "{missing:?}");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no sub-task 7"), "{missing:?}");
    let one = tessera(&["runs", "output", &id, "1", "--json"], None).await;
    assert!(one.status.success(), "{one:?}");
    let one: Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!((one["run"].as_str(), one["index"].as_u64()), (Some(id.as_str()), Some(1)), "{one}");
    assert_eq!((one["phase"].as_str(), one["output"].as_str()), (Some("paid"), Some(&*outputs[1])));
    assert_eq!(one["task_id"], view["subtasks"][1]["task_id"], "{one}");
    tree_with_outputs_from_the_cli(&api, &view).await;
    agents_from_the_cli(&api, env.actors.agent(2)).await;
    capabilities_from_the_cli(&api).await;
    for w in workers {
        w.abort();
    }
}

/// `tessera tasks tree --outputs` once the plan above settled (`view`,
/// its `runs show --json`): each task's output under its line, as the
/// run handed it on (the embedded indexer may lag the run: waited for);
/// with `--json`, each task's output whole beside the indexer's fields.
async fn tree_with_outputs_from_the_cli(api: &str, view: &Value) {
    let id = view["id"].as_str().unwrap();
    let index = format!("{api}/index");
    let tree = ["tasks", "tree", id, "--outputs", "--indexer-url", &index];
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    let text = loop {
        let ran = support::cli(api, None, tree, None).await;
        assert_eq!(ran.code, Some(0), "{ran:?}");
        if ran.stdout.matches(" Paid ").count() == 2 {
            break ran.stdout;
        }
        assert!(tokio::time::Instant::now() < end, "the plan's tasks never indexed:\n{ran:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let lines: Vec<&str> = text.lines().collect();
    for s in view["subtasks"].as_array().unwrap() {
        let task = s["task_id"].as_str().unwrap();
        let short = format!("{}…{}", &task[..6], &task[task.len() - 4..]);
        let at = lines.iter().position(|l| l.contains(&short)).unwrap_or_else(|| {
            panic!("task {task} in:\n{text}");
        });
        // Its output's first line right under it, indented inside the tree.
        let first = s["output"].as_str().unwrap().lines().next().unwrap().trim();
        let under = lines[at + 1];
        assert!(under.ends_with(first) && under.contains(&format!("  {first}")), "{text}");
        assert!(!under.contains(" Paid "), "{text}");
    }
    let mut with_json = tree.to_vec();
    with_json.push("--json");
    let ran = support::cli(api, None, with_json, None).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let body: Value = serde_json::from_str(&ran.stdout).expect("the indexer's JSON");
    assert_eq!(body["plan_id"], id, "{body}");
    let tasks = body["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{body}");
    for s in view["subtasks"].as_array().unwrap() {
        let task =
            tasks.iter().find(|t| t["task_id"] == s["task_id"]).expect("each sub-task's task");
        assert_eq!(task["output"], s["output"], "the output whole: {task}");
        assert_eq!(task["status"], "Paid", "{task}");
        assert!(task["result_uri"].is_string(), "{task}");
    }
    // Without --outputs, the indexer's reply as it is.
    let bare =
        support::cli(api, None, ["tasks", "tree", id, "--indexer-url", &index, "--json"], None);
    let bare: Value = serde_json::from_str(&bare.await.stdout).unwrap();
    assert!(bare["tasks"].as_array().unwrap().iter().all(|t| t.get("output").is_none()), "{bare}");
}

/// `tessera agents` once the plan above settled: the translator's paid task
/// in its record and its weighing (the embedded indexer may lag the run by a
/// block: waited for), one agent in full, and the orchestrator's ranking of
/// the summarizers with a reason for each.
async fn agents_from_the_cli(api: &str, translator: alloy::primitives::Address) {
    let index = format!("{api}/index");
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    let table = loop {
        let ran = support::cli(api, None, ["agents", "--indexer-url", &index], None).await;
        assert_eq!(ran.code, Some(0), "{ran:?}");
        let row = ran.stdout.lines().find(|l| l.starts_with("translator")).map(str::to_owned);
        if row.as_deref().is_some_and(|r| r.contains(" 1/1 ")) {
            break ran.stdout;
        }
        assert!(tokio::time::Instant::now() < end, "the translator's task never indexed:\n{ran:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let row = table.lines().find(|l| l.starts_with("translator")).unwrap();
    assert!(row.contains("translate 0.80"), "{table}");
    // 0.8 USDC from one funder weighs 0.8: (0.8 + 2) / (0.8 + 3) = 74 %.
    assert!(row.contains("0.8 from 1") && row.contains("74%"), "{table}");
    let shown = support::cli(
        api,
        None,
        ["agents", "show", &translator.to_string(), "--indexer-url", &index],
        None,
    )
    .await;
    assert_eq!(shown.code, Some(0), "{shown:?}");
    assert!(shown.stdout.contains("record       1/1 settled"), "{}", shown.stdout);
    assert!(shown.stdout.contains("74% from the weighed record"), "{}", shown.stdout);
    let ranked =
        support::cli(api, None, words("agents rank summarize --policy cheapest"), None).await;
    assert_eq!(ranked.code, Some(0), "{ranked:?}");
    let out = &ranked.stdout;
    assert!(out.starts_with("cheapest ranking of summarize: 2 eligible"), "{out}");
    assert!(out.contains(" 1. summarizer-b 0x") && out.contains(" 2. summarizer-a 0x"), "{out}");
    assert!(out.contains("    cheapest: 0.40 USDC, the lowest of 2 offers"), "{out}");
    // summarizer-a runs no worker here: below for its silence, and dearer.
    assert!(
        out.contains(
            "    no sign of life in the last day (no task accepted, delivered or declined), \
             unlike the one above; dearer: 0.50 USDC against 0.40 USDC"
        ),
        "{out}"
    );
    let json = support::cli(api, None, words("agents rank summarize --json"), None).await;
    let body: Value = serde_json::from_str(&json.stdout).expect("the API's JSON");
    assert_eq!(body["policy"], "balanced");
    assert_eq!(body["agents"].as_array().map(Vec::len), Some(2), "{body}");
}

/// `tessera agents capabilities` once the translator's paid task is
/// indexed: the catalogue from the embedded index, each built-in capability
/// with its offerers, cheapest price, best record and result fields; the
/// same from the indexer directly, and as the raw JSON.
async fn capabilities_from_the_cli(api: &str) {
    let ran = support::cli(api, None, words("agents capabilities"), None).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let out = &ran.stdout;
    let row = |name: &str| {
        let found = out.lines().find(|l| l.starts_with(&format!("{name} ")));
        words(found.unwrap_or_else(|| panic!("{name} in:\n{out}")))
    };
    let summarize = row("summarize");
    assert_eq!(summarize[..5], ["summarize", "yes", "2", "0.40", "71%"], "{out}");
    assert!(out.contains(" bullets, text, "), "result fields, the required first, in:\n{out}");
    let translate = row("translate");
    assert_eq!(translate[..6], ["translate", "yes", "1", "0.80", "74%", "(1/1)"], "{out}");
    assert_eq!(row("brief")[..5], ["brief", "yes", "0", "-", "-"], "{out}");
    assert!(out.contains("5 capabilities, 4 offered by active agents"), "{out}");
    let index = format!("{api}/index");
    let direct =
        support::cli(api, None, ["agents", "capabilities", "--indexer-url", &index], None).await;
    assert_eq!(direct.stdout, ran.stdout, "the orchestrator answers the index's catalogue");
    let json = support::cli(api, None, words("agents capabilities --json"), None).await;
    let body: Value = serde_json::from_str(&json.stdout).expect("the API's JSON");
    assert_eq!(body["source"], "index");
    let entries = body["entries"].as_array().unwrap();
    let names: Vec<&str> = entries.iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(
        names,
        ["brief", "extract-entities", "sentiment-classify", "summarize", "translate"]
    );
}

/// Every decision of a live run from the command line: the run listed by
/// state (as a table and as JSON), a delivered sub-task approved (its JSON
/// reply) and the next one disputed with a reason, a second run cancelled;
/// and each refusal with its exit code: 2 for a usage error (a dispute
/// without a reason), 3 for the API's refusal (an unknown sub-task or
/// checkpoint, a run not yet approved, a malformed run id), 4 without the
/// token or with a wrong one.
#[tokio::test]
async fn runs_decisions_from_the_cli_drive_live_runs() {
    let (env, dir, workers) = chain_with_workers().await;
    let (_orch, api) = start(&env, dir.path());
    let http = reqwest::Client::new();
    wait_up(&http, &api).await;
    let tessera = |args: Vec<String>, token: Option<&'static str>| {
        let api = api.clone();
        async move { support::cli(&api, token, args, None).await }
    };
    let (ok, no, wrong) = (Some(TEST_TOKEN), None, Some("not-the-token"));
    let plan = |label: &str| {
        json!({
            "version": 1, "id": Plan::id_from_label(label), "review": "manual", "budget": 2_000_000u64,
            "source": "The port reopened after the storm. Ships queued for two days. Traders were relieved.",
            "subtasks": [
                {"index": 0, "capability": "translate", "spec": "Translate to French",
                 "executor": env.actors.agent(2), "cost": 800_000, "deadline_offset_secs": 3600},
                {"index": 1, "capability": "summarize", "spec": "Summarize the translation",
                 "executor": env.actors.agent(1), "cost": 400_000, "deadline_offset_secs": 3600,
                 "depends_on": [0]},
            ],
        })
    };
    let id = support::propose_and_approve(&http, &api, &plan("cli-decisions")).await;
    let ran = tessera(words("runs list --state running"), no).await;
    assert!(ran.code == Some(0) && ran.stdout.contains(&id), "{ran:?}");
    let ran = tessera(words("runs list --state running --json"), no).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let listed: Value = serde_json::from_str(&ran.stdout).unwrap();
    let runs = listed["runs"].as_array().unwrap();
    assert!(runs.iter().any(|r| r["id"] == id.as_str()), "{listed}");
    assert!(runs.iter().all(|r| r["state"] == "running"), "{listed}");
    let ran = tessera(words("runs list --state completed --json"), no).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(serde_json::from_str::<Value>(&ran.stdout).unwrap()["runs"], json!([]));
    let ran = tessera(words("runs list --state finished"), no).await;
    assert_eq!(ran.code, Some(2), "not a state: a usage error: {ran:?}");

    support::wait_phase(&http, &api, &id, 0, "completed").await;
    // Without the token, or with a wrong one: 4, and what to set.
    let ran = tessera(words(&format!("runs review {id} 0 approve")), no).await;
    assert_eq!(ran.code, Some(4), "{ran:?}");
    assert!(
        ran.stderr.contains("missing bearer token") && ran.stderr.contains("TESSERA_API_TOKEN")
    );
    let ran = tessera(words(&format!("runs review {id} 0 approve")), wrong).await;
    assert_eq!(ran.code, Some(4), "{ran:?}");
    assert!(ran.stderr.contains("invalid bearer token"), "{ran:?}");
    // A dispute without a reason is a usage error.
    let ran = tessera(words(&format!("runs review {id} 0 dispute")), ok).await;
    assert!(ran.code == Some(2) && ran.stderr.contains("--reason"), "{ran:?}");
    // The API's refusals: 3, with its message.
    let ran = tessera(words(&format!("runs review {id} 9 approve")), ok).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("no sub-task 9"), "{ran:?}");
    let ran = tessera(words(&format!("runs retry {id} 9 --json")), ok).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("no sub-task 9"), "{ran:?}");
    let ran = tessera(words(&format!("runs appeal {id} 7 --reason wrong")), ok).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("no sub-task 7"), "{ran:?}");
    let ran = tessera(words(&format!("runs appeal {id} 0 --reason wrong")), ok).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("only a ruling can be appealed"), "{ran:?}");
    let ran = tessera(words(&format!("runs checkpoint {id} legal approve")), ok).await;
    assert_eq!(ran.code, Some(3), "{ran:?}");
    assert!(ran.stderr.contains("the plan has no checkpoint \"legal\""), "{ran:?}");
    // A malformed id is a usage error, found before any request.
    let ran = tessera(words("runs review 0x12 0 approve"), ok).await;
    assert!(ran.code == Some(2) && ran.stderr.contains("is not a plan id"), "{ran:?}");
    let unknown = Plan::id_from_label("never-proposed").to_string();
    let ran = tessera(words(&format!("runs cancel {unknown}")), ok).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("no run"), "{ran:?}");

    // Approved, with the API's JSON reply.
    let ran = tessera(words(&format!("runs review {id} 0 approve --json")), ok).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let reply: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!((reply["run"].as_str(), reply["status"].as_str()), (Some(&*id), Some("queued")));
    assert_eq!(reply["decision"], 1, "{reply}");
    support::wait_phase(&http, &api, &id, 1, "completed").await;
    let mut dispute = words(&format!("runs review {id} 1 dispute --reason"));
    dispute.push("The summary leaves out the traders.".into());
    let ran = tessera(dispute, ok).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(ran.stdout.starts_with("dispute of #1 queued as decision 2"), "{ran:?}");
    support::wait_phase(&http, &api, &id, 1, "disputed").await;
    let shown = tessera(words(&format!("runs show {id}")), no).await;
    assert_eq!(shown.code, Some(0), "{shown:?}");
    for line in ["decision 1 approve #0: approved", "decision 2 dispute #1: disputed"] {
        assert!(shown.stdout.contains(line), "{line} in:\n{}", shown.stdout);
    }
    assert!(shown.stdout.contains("spent: 1.200000 USDC funded, 0.800000 USDC paid"), "{shown:?}");

    // A run not yet approved takes no decision but its cancellation.
    let proposed = plan("cli-proposed");
    let r = http.post(format!("{api}/api/plans")).bearer_auth(TEST_TOKEN).json(&proposed).send();
    assert_eq!(r.await.unwrap().status().as_u16(), 201);
    let pid = proposed["id"].as_str().unwrap().to_owned();
    let ran = tessera(words(&format!("runs retry {pid} 0")), ok).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("is proposed"), "{ran:?}");
    let ran = tessera(words(&format!("runs cancel {pid}")), ok).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(ran.stdout.trim(), format!("run {pid} cancelled; nothing was funded"));
    let ran = tessera(words(&format!("runs cancel {pid}")), ok).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("is cancelled"), "{ran:?}");

    let other = support::propose_and_approve(&http, &api, &plan("cli-cancel")).await;
    let ran = tessera(words(&format!("runs cancel {other} --json")), ok).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let reply: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(reply["id"], other.as_str(), "the run's view: {reply}");
    // What never started is skipped; a delivered translation waits for its
    // review (settled work stays settled), so the run may stay cancelling.
    let done = support::wait_phase(&http, &api, &other, 1, "skipped").await;
    let state = done["state"].as_str().unwrap().to_owned();
    assert!(state == "cancelling" || state == "cancelled", "{done}");
    let ran = tessera(words(&format!("runs list --state {state}")), no).await;
    assert!(ran.code == Some(0) && ran.stdout.contains(&other) && !ran.stdout.contains(&id));
    for w in workers {
        w.abort();
    }
}

/// Retry and change-executor against a task nobody accepts (the executor's
/// worker never runs): the retry gives it a fresh deadline with the same
/// executor, the change hands it to a running one (its JSON reply), and
/// the run completes.
#[tokio::test]
async fn retry_and_change_executor_from_the_cli_reroute_a_task_nobody_accepts() {
    // summarizer-b (demo agent 1) never runs.
    let (env, dir, workers) =
        support::chain_with_workers_for(DeployConfig::default(), &[0, 2, 3, 4]).await;
    let (_orch, api) = start(&env, dir.path());
    let http = reqwest::Client::new();
    wait_up(&http, &api).await;
    let (a0, a1) = (env.actors.agent(0), env.actors.agent(1));
    let plan = chain_plan(
        Plan::id_from_label("cli-reroute"),
        "The library opens late on Sundays. The reading room is closed for repairs.",
        // Enough for either summarizer: a task re-routed on chain keeps its amount.
        &[("summarize", a1, 500_000)],
    );
    silent_executor_is_named_while_following(&api, a1, dir.path()).await;
    let id = propose_and_approve(&http, &api, &plan).await;
    support::wait_view(&http, &api, &id, "created", |v| v["subtasks"][0]["phase"] == "created")
        .await;
    let tessera = |args: Vec<String>| {
        let api = api.clone();
        async move { support::cli(&api, Some(TEST_TOKEN), args, None).await }
    };
    let ran = tessera(words(&format!("runs retry {id} 0"))).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(ran.stdout.starts_with("retry of #0 queued as decision 1"), "{ran:?}");
    let v = support::wait_view(&http, &api, &id, "retried", |v| {
        v["decisions"].as_array().is_some_and(|d| d.iter().any(|d| d["ok"] == true))
    })
    .await;
    let outcome = v["decisions"][0]["outcome"].as_str().unwrap();
    assert!(outcome.starts_with(&format!("reassigned to {a1}")), "{v:#}");

    // Exactly one of --to and --policy.
    let ran = tessera(words(&format!("runs change-executor {id} 0"))).await;
    assert_eq!(ran.code, Some(2), "{ran:?}");
    let ran =
        tessera(words(&format!("runs change-executor {id} 0 --to {a0} --policy cheapest"))).await;
    assert_eq!(ran.code, Some(2), "{ran:?}");
    // An agent that does not offer the capability: refused, 3.
    let a2 = env.actors.agent(2);
    let ran = tessera(words(&format!("runs change-executor {id} 0 --to {a2}"))).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("does not offer"), "{ran:?}");

    // The policy picks among the others: summarizer-a, the only one left.
    let ran =
        tessera(words(&format!("runs change-executor {id} 0 --policy cheapest --json"))).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let reply: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!((reply["decision"].as_i64(), reply["status"].as_str()), (Some(2), Some("queued")));
    let chosen: alloy::primitives::Address =
        reply["choice"]["executor"].as_str().unwrap().parse().unwrap();
    assert_eq!(chosen, a0, "{reply:#}");
    assert_eq!(reply["choice"]["policy"], "cheapest");
    let v = wait_completed(&http, &api, &id).await;
    assert_eq!(v["subtasks"][0]["executor"], a0.to_string(), "{v:#}");
    let shown = tessera(words(&format!("runs show {id}"))).await;
    assert!(shown.stdout.contains("decision 2 executor #0: reassigned to"), "{shown:?}");
    // A completed run takes no more decisions.
    let ran = tessera(words(&format!("runs retry {id} 0"))).await;
    assert!(ran.code == Some(3) && ran.stderr.contains("is completed"), "{ran:?}");
    for w in workers {
        w.abort();
    }
}

/// `tessera plan` on a plan whose executor never runs: each event is a line
/// as it happens, with the time since it began following, and once the
/// funded step has had no sign of its executor for `--silent-after` seconds
/// a line names that executor. The plan is then cancelled.
async fn silent_executor_is_named_while_following(
    api: &str,
    silent: alloy::primitives::Address,
    dir: &std::path::Path,
) {
    use tokio::io::AsyncBufReadExt;
    let id = Plan::id_from_label("cli-silent");
    let plan =
        chain_plan(id, "The ferry runs twice a day in winter.", &[("summarize", silent, 500_000)]);
    let file = dir.join("silent.json");
    std::fs::write(&file, serde_json::to_string(&plan).unwrap()).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["plan", "--file", file.to_str().unwrap(), "--yes", "--silent-after", "2"])
        .env("TESSERA_API_URL", api)
        .env("TESSERA_API_TOKEN", TEST_TOKEN)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.push(line.clone());
            if line.contains("waits on its executor") {
                return line;
            }
        }
        String::new()
    })
    .await
    .unwrap_or_default();
    child.kill().await.unwrap();
    let created = seen.iter().find(|l| l.contains("] #0 subtask_created (block "));
    assert!(created.is_some_and(|l| l.starts_with('[')), "a live line per event: {seen:#?}");
    assert!(
        found.contains(&format!("#0 waits on its executor {silent}"))
            && found.contains("no sign of it"),
        "the silent executor named: {seen:#?}"
    );
    let resp = reqwest::Client::new()
        .post(format!("{api}/api/runs/{id}/cancel"))
        .bearer_auth(TEST_TOKEN)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.text().await.unwrap_or_default());
}

/// `tessera runs checkpoint` passes a run waiting at its checkpoint; the
/// card of `tessera runs show` says where the checkpoint stands and what
/// the plan does on its own.
#[tokio::test]
async fn a_checkpoint_decided_from_the_cli_lets_the_run_go_on() {
    let (env, dir, workers) = support::chain_with_workers().await;
    let (_orch, api) = start(&env, dir.path());
    let http = reqwest::Client::new();
    wait_up(&http, &api).await;
    let (a1, a3) = (env.actors.agent(1), env.actors.agent(3));
    let mut plan = chain_plan(
        Plan::id_from_label("cli-checkpoint"),
        "The ferry now leaves at nine. Passengers praised the new timetable.",
        &[("sentiment-classify", a3, 200_000), ("summarize", a1, 400_000)],
    );
    plan["checkpoints"] = json!([{"name": "tone-check", "after": [0], "on_timeout": "escalate"}]);
    plan["subtasks"][1]["when"] = json!("len(out[0].label) > 0 and out[0].score >= -1");
    // Left to the plan's selection policy: the card says who and why.
    plan["subtasks"][1]["executor"] = Value::Null;
    plan["subtasks"][1]["cost"] = json!(0);
    plan["recovery"] = json!({"on_decline": "retry(2)"});
    let id = propose_and_approve(&http, &api, &plan).await;
    support::wait_view(&http, &api, &id, "at the checkpoint", |v| {
        v["gates"]["tone-check"]["state"] == "reached"
    })
    .await;
    let tessera = |args: Vec<String>| {
        let api = api.clone();
        async move { support::cli(&api, Some(TEST_TOKEN), args, None).await }
    };
    let shown = tessera(words(&format!("runs show {id}"))).await;
    assert!(
        shown.stdout.contains(
            "⏸ checkpoint tone-check after #0: an approver passes or stops the run; after the \
             decision timeout escalate — reached"
        ),
        "{shown:?}"
    );
    assert!(
        shown.stdout.contains("runs only if len(out[0].label) > 0 and out[0].score >= -1"),
        "{shown:?}"
    );
    assert!(shown.stdout.contains("recovery: on decline retry(2)"), "{shown:?}");
    let a1_text = a1.to_string().to_lowercase();
    let short = format!("{}…{}", &a1_text[..6], &a1_text[38..]);
    assert!(
        shown.stdout.contains(&format!("chosen: {short} — balanced: ")),
        "the policy chose the cheaper summarizer and says why: {shown:?}"
    );
    assert!(shown.stdout.contains("; runner-up 0x"), "{shown:?}");
    println!("{}", shown.stdout);
    let ran = tessera(words(&format!("runs checkpoint {id} tone-check approve --json"))).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let reply: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(reply["status"], "queued", "{reply:#}");
    let v = wait_completed(&http, &api, &id).await;
    assert_eq!(v["gates"]["tone-check"]["state"], "approved", "{v:#}");
    assert_eq!(v["gates"]["tone-check"]["by"], "approver");
    assert_eq!(v["subtasks"][1]["phase"], "paid");
    // Once passed, a second decision is taken but changes nothing.
    let ran = tessera(words(&format!("runs checkpoint {id} tone-check reject"))).await;
    assert_eq!(ran.code, Some(3), "a completed run takes no decision: {ran:?}");
    for w in workers {
        w.abort();
    }
}

/// `tessera plan --interactive` asks at each review of a manual-review plan
/// and queues the answers: an unknown answer is asked again, a dispute
/// without a reason too; both sub-tasks approved from standard input, the
/// plan completes. With no more input the prompt skips, and the run waits.
#[tokio::test]
async fn plan_interactive_asks_at_each_review_and_queues_the_answers() {
    let (env, dir, workers) = chain_with_workers().await;
    let (_orch, api) = start(&env, dir.path());
    let http = reqwest::Client::new();
    wait_up(&http, &api).await;
    let plan = |label: &str| {
        json!({
            "version": 1, "id": Plan::id_from_label(label), "review": "manual", "budget": 2_000_000u64,
            "source": "The port reopened after the storm. Ships queued for two days. Traders were relieved.",
            "subtasks": [
                {"index": 0, "capability": "translate", "spec": "Translate to French",
                 "executor": env.actors.agent(2), "cost": 800_000, "deadline_offset_secs": 3600},
                {"index": 1, "capability": "summarize", "spec": "Summarize the translation",
                 "executor": env.actors.agent(1), "cost": 400_000, "deadline_offset_secs": 3600,
                 "depends_on": [0]},
            ],
        })
    };
    let file = dir.path().join("manual.json");
    std::fs::write(&file, plan("cli-interactive").to_string()).unwrap();
    let path = file.to_str().unwrap();
    let args = ["plan", "--file", path, "--yes", "--interactive"];
    let ran =
        support::cli(&api, Some(TEST_TOKEN), args, Some("maybe\ndispute\napprove\na\n")).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    for needle in [
        "sub-task #0 delivered",
        "approve / dispute <reason> / skip? ",
        "unknown answer \"maybe\"",
        "a dispute needs a reason",
        "approval of #0 queued",
        "sub-task #1 delivered",
        "approval of #1 queued",
        "plan_completed",
    ] {
        assert!(ran.stdout.contains(needle), "{needle} in:\n{}", ran.stdout);
    }

    // The input ends at the first review: skipped, and asked no more; the
    // follow goes on while the reviews are taken elsewhere.
    std::fs::write(&file, plan("cli-interactive-eof").to_string()).unwrap();
    let id = Plan::id_from_label("cli-interactive-eof").to_string();
    let follower = {
        let api = api.clone();
        let file = file.clone();
        tokio::spawn(async move {
            let args = ["plan", "--file", file.to_str().unwrap(), "--yes", "--interactive"];
            support::cli(&api, Some(TEST_TOKEN), args, Some("")).await
        })
    };
    for index in [0, 1] {
        support::wait_view(&http, &api, &id, "delivered", |v| {
            v["subtasks"][index]["phase"] == "completed"
        })
        .await;
        let url = format!("{api}/api/runs/{id}/subtasks/{index}/review");
        let r = http.post(url).bearer_auth(TEST_TOKEN).json(&json!({"decision": "approve"}));
        assert_eq!(r.send().await.unwrap().status().as_u16(), 202);
    }
    let ran = follower.await.unwrap();
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(ran.stdout.matches("no answer: skipped").count(), 1, "{ran:?}");
    assert!(!ran.stdout.contains("sub-task #1 delivered"), "asked once: {ran:?}");
    assert!(ran.stdout.contains("plan_completed"), "{ran:?}");
    for w in workers {
        w.abort();
    }
}

/// Without an orchestrator to answer: 5; a usage error: 2; each decision's
/// help lists the exit codes.
#[tokio::test]
async fn runs_exit_codes_without_an_orchestrator() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let api = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let run = Plan::id_from_label("nowhere").to_string();
    for args in [
        format!("runs review {run} 0 approve"),
        format!("runs checkpoint {run} legal reject --reason late"),
        "runs list --json".to_owned(),
        "agents rank translate".to_owned(),
        "agents capabilities".to_owned(),
    ] {
        let ran = support::cli(&api, Some(TEST_TOKEN), words(&args), None).await;
        assert_eq!(ran.code, Some(5), "{args}: {ran:?}");
        assert!(ran.stderr.contains(&format!("the orchestrator at {api} is unreachable")));
    }
    for args in [vec!["agents"], vec!["agents", "capabilities"]] {
        let ran =
            support::cli(&api, None, [args, vec!["--indexer-url", &api]].concat(), None).await;
        assert_eq!(ran.code, Some(5), "{ran:?}");
        assert!(ran.stderr.contains(&format!("the indexer at {api} is unreachable")), "{ran:?}");
    }
    for args in [
        format!("runs decide review {run} 0 approve"),
        format!("runs review {run} 0 maybe"),
        format!("runs checkpoint {run} legal"),
        format!("runs change-executor {run} 0 --policy fastest"),
        "agents rank Translate".to_owned(),
        "agents rank translate --policy fastest".to_owned(),
        "agents show 0x12".to_owned(),
    ] {
        let ran = support::cli(&api, Some(TEST_TOKEN), words(&args), None).await;
        assert_eq!(ran.code, Some(2), "{args}: {ran:?}");
    }
    for command in
        ["review", "retry", "change-executor", "cancel", "checkpoint", "appeal", "list", "show"]
    {
        let ran = support::cli(&api, None, ["runs", command, "--help"], None).await;
        assert_eq!(ran.code, Some(0), "{ran:?}");
        for line in ["Exit codes:", "  3  refused by the API", "  4  unauthorized", "  5  the API"]
        {
            assert!(ran.stdout.contains(line), "{line} in runs {command} --help:\n{}", ran.stdout);
        }
    }
}

#[tokio::test]
async fn an_appeal_from_the_cli_is_ruled_by_the_appeal_arbiter_service() {
    let (env, dir, workers) = chain_with_workers_deployed(DeployConfig {
        appeal_window: 3600,
        ..DeployConfig::default()
    })
    .await;
    let (_orch, api) = start(&env, dir.path());
    let deployment = dir.path().join("deployment.json");
    let _arbiter = Service(support::arbiter(&env, dir.path(), &deployment));
    let http = reqwest::Client::new();
    wait_up(&http, &api).await;
    let tessera = |args: Vec<String>| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.args(args).env("TESSERA_API_URL", &api).env("TESSERA_API_TOKEN", TEST_TOKEN);
        cmd.kill_on_drop(true);
        async move {
            let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
                .await
                .expect("tessera finishes")
                .expect("tessera runs");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.success(), text)
        }
    };
    let args = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let phase = |id: String, index: usize, want: &'static str| {
        let http = http.clone();
        let api = api.clone();
        async move {
            let end = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let v = get_json(&http, &format!("{api}/api/runs/{id}")).await;
                if v["subtasks"][index]["phase"] == want || v["state"] == want {
                    return v;
                }
                assert!(tokio::time::Instant::now() < end, "never {want}: {v}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    // Summarizing a two-sentence note keeps nearly all of it: the rubric splits.
    let (a1, a3, sponsor) =
        (env.actors.agent(1), env.actors.agent(3), env.actors.sponsor.address());
    let plan = json!({
        "version": 1, "id": Plan::id_from_label("cli-appeal"), "review": "manual",
        "budget": 2_000_000u64, "source": "The ferry leaves at nine. Bring your ticket and arrive early.",
        "subtasks": [
            {"index": 0, "capability": "summarize", "spec": "Summarize the note", "executor": a1,
             "cost": 400_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "sentiment-classify", "spec": "Tone of the summary",
             "executor": a3, "cost": 200_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    });
    let id = support::propose_and_approve(&http, &api, &plan).await;
    phase(id.clone(), 0, "completed").await;
    let mut dispute = args(&format!("runs review {id} 0 dispute --reason"));
    dispute.push("It just repeats the note.".into());
    let (ok, text) = tessera(dispute).await;
    assert!(ok, "{text}");
    phase(id.clone(), 0, "ruled").await;
    // The ruling as the CLI shows it: who ruled, and why, as prose.
    let (ok, shown) = tessera(args(&format!("runs show {id}"))).await;
    assert!(ok && shown.contains("#0 ruled by the offline rubric: "), "{shown}");
    let (ok, json_text) = tessera(args(&format!("runs show {id} --json"))).await;
    assert!(ok, "{json_text}");
    let view: Value = serde_json::from_str(&json_text).unwrap();
    let ruling = &view["rulings"][0];
    assert_eq!(
        (ruling["index"].as_u64(), ruling["kind"].as_str(), ruling["by"].as_str()),
        (Some(0), Some("dispute_ruled"), Some("the offline rubric")),
        "{view}"
    );
    let rationale = ruling["rationale"].as_str().unwrap();
    assert!(!rationale.is_empty() && !rationale.starts_with('{'), "prose: {rationale}");
    assert!(shown.contains(rationale.lines().next().unwrap()), "{rationale} in:\n{shown}");
    let share = ruling["executor_share_bps"].as_u64().unwrap();
    assert!(shown.contains(&format!("{}.{:02}% to the executor", share / 100, share % 100)));

    let ran = support::cli(&api, Some(TEST_TOKEN), words(&format!("runs appeal {id} 0")), None);
    let ran = ran.await;
    assert!(ran.code == Some(2) && ran.stderr.contains("--reason"), "needs a reason: {ran:?}");
    let before = (env.balance(a1).await, env.balance(sponsor).await);
    let mut appeal = args(&format!("runs appeal {id} 0 --json --reason"));
    appeal.push("The split pays for a copy of the note.".into());
    let ran = support::cli(&api, Some(TEST_TOKEN), appeal, None).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    let reply: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!((reply["decision"].as_i64(), reply["status"].as_str()), (Some(2), Some("queued")));
    // The appeal arbiter's queue, read from the chain before it runs.
    let appealed = phase(id.clone(), 0, "appealed").await;
    let task = appealed["subtasks"][0]["task_id"].as_str().unwrap().to_owned();
    let chain_args = |what: &str| {
        let mut a = args(what);
        a.extend(["--deployment".into(), deployment.display().to_string()]);
        a.extend(["--rpc-url".into(), env.chain.endpoint_url().to_string()]);
        a
    };
    let (ok, listed) = tessera(chain_args("arbiter appeals list --json")).await;
    assert!(ok, "{listed}");
    let listed: Value = serde_json::from_str(&listed).expect("JSON");
    let appeal = &listed["appeals"][0];
    assert_eq!(listed["appeals"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(appeal["task_id"], task.as_str(), "{listed}");
    assert_eq!(appeal["plan_id"], id.as_str(), "{listed}");
    assert_eq!(appeal["amount"], "400000", "{listed}");
    let party =
        |k: &str| appeal[k].as_str().and_then(|a| a.parse::<alloy::primitives::Address>().ok());
    assert_eq!((party("executor"), party("funder")), (Some(a1), Some(sponsor)), "{listed}");
    assert_eq!(appeal["executor_share_bps"].as_u64(), Some(share), "the first ruling: {listed}");
    let (at, by) = (appeal["appealed_at"].as_u64().unwrap(), appeal["rule_by"].as_u64().unwrap());
    assert!(at > 0 && by > at, "{listed}");
    let (ok, text) = tessera(chain_args("arbiter appeals list")).await;
    assert!(ok && text.contains(&format!("task {task}  amount 400000")), "{text}");
    let _appeals = Service(support::appeal_arbiter(&env, dir.path(), &deployment));
    // The offline appeal arbiter judges the same work again: the split stands.
    phase(id.clone(), 0, "split").await;
    phase(id.clone(), 1, "completed").await;
    let (ok, text) = tessera(args(&format!("runs review {id} 1 approve"))).await;
    assert!(ok, "{text}");
    phase(id.clone(), 0, "completed").await;
    let events = tessera_e2e::read_sse(&http, &format!("{api}/api/runs/{id}/events")).await;
    let at = |kind: &str| {
        events.iter().position(|e| e["kind"] == kind).unwrap_or_else(|| panic!("no {kind}"))
    };
    let order = ["dispute_ruled", "ruling_appealed", "appeal_ruled", "dispute_resolved"];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{order:?} in order");
    assert_eq!(events.last().unwrap()["kind"], "plan_completed");
    let first = events[at("dispute_ruled")]["executor_share_bps"].as_u64().unwrap();
    let share = events[at("appeal_ruled")]["executor_share_bps"].as_u64().unwrap();
    assert!(share > 0 && share < 10_000 && share == first, "upheld: {first} then {share}");
    let resolved = &events[at("dispute_resolved")];
    assert_eq!(resolved["settlement"], "appeal_ruling", "{resolved}");
    let to_executor = U256::from(400_000 * share / 10_000);
    let after = (env.balance(a1).await, env.balance(sponsor).await);
    assert_eq!(after.0 - before.0, to_executor, "the split of the summary");
    assert_eq!(
        after.1 + U256::from(200_000u64),
        before.1 + U256::from(400_000u64) - to_executor,
        "the rest of the summary back, the tone paid"
    );
    let (ok, shown) = tessera(args(&format!("runs show {id}"))).await;
    assert!(ok && shown.contains("decision 2 appeal #0: appealed"), "{shown}");
    // The appeal arbiter's decision store has the appeal ruling, sent.
    let (ok, decisions) = tessera(vec![
        "arbiter".into(),
        "decisions".into(),
        "--database-url".into(),
        format!("sqlite://{}", dir.path().join("appeals.db").display()),
    ])
    .await;
    let task = events[at("appeal_ruled")]["task_id"].as_str().unwrap().to_owned();
    let line = decisions.lines().find(|l| l.contains(&task)).unwrap_or_default();
    assert!(ok && line.contains("appeal") && line.contains("split"), "{decisions}");
    assert!(!line.contains("(not sent)"), "{line}");
    // The same as JSON, from each arbiter's store: the first ruling and the appeal's.
    for (db, level) in [("arbiter.db", "dispute"), ("appeals.db", "appeal")] {
        let store = format!("sqlite://{}", dir.path().join(db).display());
        let (ok, text) =
            tessera(args(&format!("arbiter decisions --json --database-url {store}"))).await;
        assert!(ok, "{text}");
        let doc: Value = serde_json::from_str(&text).expect("JSON");
        let d = doc["decisions"].as_array().unwrap().iter().find(|d| d["task_id"] == task.as_str());
        let d = d.unwrap_or_else(|| panic!("task {task} in {doc}"));
        assert_eq!((d["level"].as_str(), d["verdict"].as_str()), (Some(level), Some("split")));
        assert_eq!(d["share_bps"].as_u64(), Some(share), "{d}");
        assert!(d["tx_hash"].as_str().is_some_and(|h| h.starts_with("0x")), "sent: {d}");
        let body: Value = serde_json::from_str(d["body"].as_str().unwrap()).unwrap();
        assert!(body["rationale"].as_str().is_some_and(|r| !r.is_empty()), "{d}");
    }
    for w in workers {
        w.abort();
    }
}

#[tokio::test]
async fn plan_brief_cli_classifies_and_takes_the_quadrant_path() {
    let (env, dir, workers) = chain_with_workers().await;
    let (_orch, api) = start(&env, dir.path());
    wait_up(&reqwest::Client::new(), &api).await;
    let payload = dir.path().join("article.txt");
    std::fs::write(
        &payload,
        "The mill closed in May. Workers protested. The town council met the owners.",
    )
    .unwrap();
    let run = |args: Vec<String>| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.args(args).env("TESSERA_API_URL", &api).env("TESSERA_API_TOKEN", TEST_TOKEN);
        cmd.kill_on_drop(true);
        async move {
            tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.unwrap().unwrap()
        }
    };
    let args = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

    // Composite / low: the card, approved with --yes, followed to settlement.
    let out = run(args(&[
        "plan",
        "Translate the article to French, then summarize it",
        "--payload-file",
        payload.to_str().unwrap(),
        "--yes",
    ]))
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "composite_low",
        "signal lexical",
        "sequence",
        "chosen by: \"Translate\"",
        "chosen by: \"summarize\"",
        "plan_completed",
    ] {
        assert!(stdout.contains(needle), "{needle} in:\n{stdout}");
    }

    // High stakes: --yes alone is not enough; nothing on stdin to type.
    let brief =
        "Summarize the article, then pay 40 USDC to 0x52908400098527886E0F7030069857D2E4169EE7";
    let out = run(args(&["plan", brief, "--yes"])).await;
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The money step is not planned: one sub-task, so atomic.
    assert!(stdout.contains("HIGH STAKES") && stdout.contains("atomic_high"), "{stdout}");

    // With the amount and recipient typed on the command line it runs (and
    // waits at the review gate, so only the approval is checked here).
    let summarizer = env.actors.agent(1).to_string();
    let mut a = args(&["plan", brief, "--yes", "--confirm-amount", "0.4", "--confirm-recipients"]);
    a.push(summarizer);
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args(a)
        .env("TESSERA_API_URL", &api)
        .env("TESSERA_API_TOKEN", TEST_TOKEN)
        .kill_on_drop(true);
    // Not the terminal's input: the follow would ask at the review.
    cmd.stdout(Stdio::piped()).stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let http = reqwest::Client::new();
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let runs = get_json(&http, &format!("{api}/api/runs")).await;
        let high: Vec<&Value> =
            runs["runs"].as_array().unwrap().iter().filter(|r| r["state"] == "running").collect();
        if !high.is_empty() {
            break;
        }
        assert!(tokio::time::Instant::now() < end, "the confirmed plan never started: {runs}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.kill().await.unwrap();

    // A raw transfer is refused with the reason and a failing exit status.
    let out =
        run(args(&["plan", "Send 0.1 USDC to 0x52908400098527886E0F7030069857D2E4169EE7"])).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not send funds"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for w in workers {
        w.abort();
    }
}

#[tokio::test]
async fn arbiter_killed_mid_resolution_rules_each_dispute_exactly_once() {
    let env = TestEnv::start(DeployConfig { appeal_window: 0, ..DeployConfig::default() }).await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    // Six delivered tasks, each disputed by the client.
    let mut d = env.driver();
    d.scenario("arbiter-kill");
    let spec = "data:application/json,{\"parent\":\"task:1\",\"spec\":\"Summarize\",\"capability\":\"summarize\",\"source\":\"The mill closed in May after a long strike. Workers protested outside the mill for weeks.\"}";
    let mut ids = Vec::new();
    for i in 0..6 {
        let params = d.params(env.actors.agent(0), 500_001 + i, spec.to_owned()).await.unwrap();
        let mut rec = d.create_with_permit(params).await.unwrap();
        d.deliver(&mut rec, "data:application/json,{\"text\":\"The mill closed after a strike; workers protested.\"}").await.unwrap();
        d.escrow.dispute(env.actors.client.address(), &mut rec, "data:,too short").await.unwrap();
        ids.push(rec.id);
    }
    let spawn = || support::arbiter(&env, dir.path(), &deployment);
    let ruled = || async {
        env.provider
            .get_logs(
                &Filter::new()
                    .address(env.deployment.task_escrow)
                    .event_signature(TaskEscrow::DisputeRuled::SIGNATURE_HASH)
                    .from_block(env.deployment.deploy_block),
            )
            .await
            .unwrap()
    };
    // Life 1 dies (SIGKILL) as soon as its first ruling lands.
    let mut first = spawn();
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    while ruled().await.is_empty() {
        assert!(tokio::time::Instant::now() < end, "no ruling from the first arbiter");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let after_kill = ruled().await.len();
    // Life 2 finishes the rest.
    let mut second = spawn();
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    while ruled().await.len() < ids.len() {
        assert!(tokio::time::Instant::now() < end, "the restarted arbiter did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Give it a few more looks: nothing is ruled twice.
    tokio::time::sleep(Duration::from_millis(500)).await;
    second.kill().unwrap();
    second.wait().unwrap();
    let logs = ruled().await;
    assert_eq!(logs.len(), ids.len(), "one ruling per dispute (first life ruled {after_kill})");
    for id in &ids {
        let status =
            env.driver().escrow.fetch(*id, env.deployment.deploy_block).await.unwrap().status();
        assert!(status.is_terminal(), "task {id} is {status}");
    }
}

#[tokio::test]
async fn indexer_binary_serves_lineage_and_live_events() {
    use futures_util::StreamExt;
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let mut d = env.driver();
    d.scenario("indexed-plan");
    let spec = "data:application/json,{\"parent\":\"task:1\",\"spec\":\"Summarize the memo\",\"capability\":\"summarize\"}";
    let root_params = d.params(env.actors.agent(0), 1_000_000, spec.into()).await.unwrap();
    let root = d.create_with_permit(root_params).await.unwrap();
    let mut child_params = d.params(env.actors.agent(1), 2_000_000, spec.into()).await.unwrap();
    child_params.parentId = root.id;
    let child = d.create_with_permit(child_params).await.unwrap();
    let plan = root.plan_id.to_string();

    let (mut indexer, api) = support::listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "run", "--listen", support::ANY_PORT, "--poll-ms", "100"])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args([
                "--database-url",
                &format!("sqlite://{}", dir.path().join("index.db").display()),
            ])
            .stderr(Stdio::inherit()),
    );
    let http = reqwest::Client::new();
    let head = env.provider.get_block_number().await.unwrap();
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = http.get(format!("{api}/api/status")).send().await
            && let Ok(s) = r.json::<Value>().await
            && s["indexed_block"].as_u64() >= Some(head)
        {
            break;
        }
        assert!(tokio::time::Instant::now() < end, "indexer never caught up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Pagination with a cursor, and clear 4xx.
    let page = get_json(&http, &format!("{api}/api/tasks?plan={plan}&limit=1")).await;
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1);
    let next = page["next"].as_str().unwrap().to_owned();
    let page2 =
        get_json(&http, &format!("{api}/api/tasks?plan={plan}&limit=1&cursor={next}")).await;
    assert_eq!(page2["tasks"].as_array().unwrap().len(), 1);
    assert_ne!(page["tasks"][0]["task_id"], page2["tasks"][0]["task_id"]);
    assert!(page2["block"].as_u64().unwrap() >= head);
    assert_eq!(
        http.get(format!("{api}/api/tasks/not-a-number")).send().await.unwrap().status().as_u16(),
        400
    );
    assert_eq!(
        http.get(format!("{api}/api/tasks/12345")).send().await.unwrap().status().as_u16(),
        404
    );
    let one = get_json(&http, &format!("{api}/api/tasks/{}", child.id)).await;
    assert_eq!(one["ancestors"][0], root.id.to_string());

    // The epic view.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["tasks", "tree", &plan, "--indexer", &api])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].starts_with("└─") && lines[1].contains("1.000000 USDC"), "{text}");
    assert!(
        lines[2].starts_with("   └─")
            && lines[2].contains("2.000000 USDC")
            && lines[2].contains("Summarize the memo"),
        "{text}"
    );
    // The same tree as the indexer's JSON.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["tasks", "tree", &plan, "--indexer", &api, "--json"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let tree: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tree, get_json(&http, &format!("{api}/api/plans/{plan}/tree")).await);

    // Live: a new task of the plan arrives on the plan's stream.
    let resp = http.get(format!("{api}/api/plans/{plan}/events")).send().await.unwrap();
    let mut stream = resp.bytes_stream();
    // Agent 2 translates: the escrow checks the capability it is hired for.
    d.capability = tessera_bindings::capability::encode("translate").unwrap();
    let mut more = d.params(env.actors.agent(2), 3_000_000, spec.into()).await.unwrap();
    more.parentId = child.id;
    let third = d.create_with_permit(more).await.unwrap();
    let wanted = third.id.to_string();
    let got = tokio::time::timeout(Duration::from_secs(20), async {
        let mut buf = String::new();
        while let Some(chunk) = stream.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if buf.contains(&wanted) {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(got, "the new task was streamed");
    indexer.0.kill().unwrap();
    indexer.0.wait().unwrap();
}

/// A small deterministic generator for the randomized runs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

async fn caught_up(http: &reqwest::Client, api: &str, head: u64) -> bool {
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < end {
        if let Ok(r) = http.get(format!("{api}/api/status")).send().await
            && let Ok(s) = r.json::<Value>().await
            && s["indexed_block"].as_u64() >= Some(head)
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// One seeded run: task creations, reorganisations and SIGKILLs of the
/// indexer process, interleaved; then the index must equal a from-scratch
/// reindex of the canonical chain.
async fn reorgs_and_kills(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let db = format!("sqlite://{}", dir.path().join("index.db").display());
    // Each life listens on a port of its own choosing.
    let spawn = || {
        support::listening(
            Command::new(env!("CARGO_BIN_EXE_tessera"))
                .args(["indexer", "run", "--listen", support::ANY_PORT, "--poll-ms", "50"])
                .arg("--deployment")
                .arg(&deployment)
                .args(["--rpc-url", env.chain.endpoint_url().as_str(), "--database-url", &db])
                .stderr(if std::env::var("TESSERA_SEED").is_ok() {
                    Stdio::inherit()
                } else {
                    Stdio::null()
                })
                .env("RUST_LOG", "tessera_indexer=info"),
        )
    };
    let http = reqwest::Client::new();
    let (mut child, mut api) = spawn();
    let mut d = env.driver();
    d.scenario(format!("seed-{seed}"));
    let mut added: u64 = 0;
    for _ in 0..8 {
        match rng.below(4) {
            0 | 1 => {
                for _ in 0..=rng.below(3) {
                    let params = d
                        .params(
                            env.actors.agent(0),
                            500_000 + rng.below(1_000) as u128,
                            "data:,r".into(),
                        )
                        .await
                        .unwrap();
                    d.create_with_permit(params).await.unwrap();
                    added += 1;
                }
            }
            2 if added > 0 => {
                let depth = 1 + rng.below(added.min(4));
                if std::env::var("TESSERA_SEED").is_ok() {
                    eprintln!(
                        "reorg depth {depth} at head {}",
                        env.provider.get_block_number().await.unwrap()
                    );
                }
                env.provider
                    .raw_request::<_, Value>("anvil_reorg".into(), (depth, Vec::<Value>::new()))
                    .await
                    .unwrap();
            }
            _ => {
                // SIGKILL wherever it is, then start again.
                tokio::time::sleep(Duration::from_millis(rng.below(40))).await;
                child.0.kill().unwrap();
                child.0.wait().unwrap();
                if std::env::var("TESSERA_SEED").is_ok() {
                    eprintln!("kill at head {}", env.provider.get_block_number().await.unwrap());
                }
                (child, api) = spawn();
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.below(30))).await;
    }
    // One more block, so a caught-up index has looked at the final chain.
    let params = d.params(env.actors.agent(0), 500_007, "data:,last".into()).await.unwrap();
    d.create_with_permit(params).await.unwrap();
    let head = env.provider.get_block_number().await.unwrap();
    assert!(caught_up(&http, &api, head).await, "seed {seed}: the indexer did not catch up");
    child.0.kill().unwrap();
    child.0.wait().unwrap();

    let survived = tessera_indexer::IndexStore::connect(&db).await.unwrap();
    let fresh_db = format!("sqlite://{}", dir.path().join("fresh.db").display());
    let fresh_store = tessera_indexer::IndexStore::connect(&fresh_db).await.unwrap();
    let mut fresh = tessera_indexer::Indexer::new(
        env.provider.clone(),
        env.deployment.clone(),
        fresh_store,
        None,
        // One range over the whole chain: every task folded in one pass.
        tessera_indexer::IndexerConfig {
            initial_range: 1_000_000,
            max_range: 1_000_000,
            target_logs: u64::MAX,
            ..tessera_indexer::IndexerConfig::default()
        },
    );
    fresh.sync_once().await.unwrap();
    let all = tessera_indexer::store::TaskQuery { limit: 500, ..Default::default() };
    assert_eq!(
        survived.task_page(&all).await.unwrap(),
        fresh.store().task_page(&all).await.unwrap(),
        "seed {seed}: tasks differ from a from-scratch reindex"
    );
    // Every task's checked transitions too: incremental batches append them,
    // the reindex writes them in one pass.
    for t in fresh.store().task_page(&all).await.unwrap().0 {
        let id = t.task_id.as_str();
        assert_eq!(
            survived.task(id).await.unwrap(),
            fresh.store().task(id).await.unwrap(),
            "seed {seed}: history of task {id} differs from a from-scratch reindex"
        );
    }
    assert_eq!(
        survived.event_count().await.unwrap(),
        fresh.store().event_count().await.unwrap(),
        "seed {seed}: events"
    );
    assert_eq!(
        survived.agents().await.unwrap(),
        fresh.store().agents().await.unwrap(),
        "seed {seed}: agents"
    );
}

#[tokio::test]
async fn seeded_reorgs_and_kills_end_in_the_canonical_index() {
    // TESSERA_SOAK_SEEDS raises the count (make soak-indexer); TESSERA_SEED=N
    // replays one seed with its steps and the indexer's log on stderr.
    let seeds: u64 =
        std::env::var("TESSERA_SOAK_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let only: Option<u64> = std::env::var("TESSERA_SEED").ok().and_then(|s| s.parse().ok());
    for seed in 0..seeds {
        if only.is_none_or(|o| o == seed) {
            reorgs_and_kills(seed).await;
        }
    }
}

/// The JSON body of a GET of `url`.
async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    http.get(url).send().await.expect("request").json().await.expect("JSON body")
}

/// Proposes and approves `plan` on a fresh `serve`, kills it (SIGKILL)
/// twice, each time the moment one of the sponsor's transactions is sent
/// and not yet mined, restarts it, and waits for the run to complete: the
/// last `serve`, its API, the run id and the run's final view.
async fn through_two_kills(
    env: &TestEnv,
    dir: &std::path::Path,
    http: &reqwest::Client,
    plan: &Value,
) -> (support::Service, String, String, Value) {
    let sponsor = env.actors.sponsor.address();
    // Waits until the sponsor has a transaction sent and not mined.
    let in_flight = || async {
        for _ in 0..1_500 {
            let pending = env.provider.get_transaction_count(sponsor).pending().await.unwrap();
            let mined = env.provider.get_transaction_count(sponsor).latest().await.unwrap();
            if pending > mined {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the sponsor sent nothing in 15 s");
    };
    let (mut orch, mut api) = start(env, dir);
    wait_up(http, &api).await;
    let id = propose_and_approve(http, &api, plan).await;
    for _ in 0..2 {
        in_flight().await;
        orch.0.kill().unwrap(); // SIGKILL, with a transaction in the pool
        orch.0.wait().unwrap();
        (orch, api) = start(env, dir);
        wait_up(http, &api).await;
    }
    let v = wait_completed(http, &api, &id).await;
    (orch, api, id, v)
}
