//! Appeals end to end on anvil, with a non-zero appeal window: a manual
//! review plan's sub-task disputed through the API, the arbiter's ruling, the
//! sponsor's appeal through the API with a reason, the appeal arbiter's final
//! ruling, and the plan going on (the executor paid) or failing (the funder
//! refunded); a ruling nobody appeals stands once the window is skipped.

use std::{sync::Arc, time::Duration};

use alloy::{
    primitives::{Address, U256},
    providers::Provider,
};
use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_arbiter::{Judge, council::Council};
use tessera_bindings::envelope::{EnvelopeCodec, FsBlobStore};
use tessera_e2e::{
    Stack,
    mock_openai::{MockOpenAi, Reply},
};

use crate::support;

/// Seconds a party has to appeal a ruling.
const APPEAL_WINDOW: u32 = 3_600;
/// Seconds the appeal arbiter has to rule.
const APPEAL_RULING_WINDOW: u32 = 7_200;
/// What sub-task 0 (the disputed summary) costs.
const SUMMARY: u128 = 400_000;
/// What sub-task 1 (the tone of the summary) costs.
const TONE: u128 = 200_000;
/// A short note: the extractive summary is nearly all of it, so the
/// arbiter's rubric splits the amount.
const NOTE: &str = "The ferry leaves at nine. Bring your ticket and arrive early.";
const APPEAL_REASON: &str = "The split pays for a copy of the note.";

/// A manual-review plan: summarize the note (agent 1), then the summary's
/// tone (agent 3).
fn plan(label: &str, a1: Address, a3: Address) -> Value {
    json!({
        "version": 1, "id": tessera_orchestrator::plan::Plan::id_from_label(label),
        "review": "manual", "budget": 5_000_000u64, "source": NOTE, "review_window_secs": 600,
        "subtasks": [
            {"index": 0, "capability": "summarize", "spec": "Summarize the note", "executor": a1,
             "cost": SUMMARY as u64, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "sentiment-classify", "spec": "Tone of the summary",
             "executor": a3, "cost": TONE as u64, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    })
}

/// Runs `label`'s plan until the arbiter ruled on its disputed summary;
/// returns the run id and the `dispute_ruled` event.
async fn ruled(stack: &Stack, label: &str) -> (String, Value) {
    let (a1, a3) = (stack.env.actors.agent(1), stack.env.actors.agent(3));
    let id = stack.run_plan(&plan(label, a1, a3)).await;
    stack.wait_phase(&id, 0, "completed", 30).await;
    let (status, body) = stack
        .post(
            &format!("/api/runs/{id}/subtasks/0/review"),
            &json!({"decision": "dispute", "reason": "it just repeats the note"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    stack.wait_phase(&id, 0, "ruled", 30).await;
    let ruling = wait_event(stack, &id, "dispute_ruled").await;
    // The ruling names the window it opens, from the task's snapshot.
    let at = ruling["at"].as_u64().unwrap();
    assert_eq!(ruling["appeal_window_secs"], APPEAL_WINDOW, "{ruling}");
    assert_eq!(ruling["appeal_until"], at + u64::from(APPEAL_WINDOW), "{ruling}");
    (id, ruling)
}

/// The stored events of run `id` so far (the stream's backlog, without
/// waiting for the run to end), until one of `kind` is among them.
async fn wait_event(stack: &Stack, id: &str, kind: &str) -> Value {
    let url = format!("{}/api/runs/{id}/events", stack.api);
    let events = tessera_e2e::read_sse_until(&stack.http, &url, kind).await;
    events.into_iter().find(|e| e["kind"] == kind).expect("the event")
}

/// The sponsor appeals sub-task 0's ruling through the API.
async fn appeal(stack: &Stack, id: &str) {
    let (status, body) = stack
        .post(&format!("/api/runs/{id}/appeal"), &json!({"index": 0, "reason": APPEAL_REASON}))
        .await;
    assert_eq!(status, 202, "{body}");
}

/// Balances of the summarizer, the tone agent and the sponsor.
async fn balances(stack: &Stack) -> [U256; 3] {
    [
        stack.env.balance(stack.env.actors.agent(1)).await,
        stack.env.balance(stack.env.actors.agent(3)).await,
        stack.env.balance(stack.env.actors.sponsor.address()).await,
    ]
}

/// The position of the first event of `kind` in `events`.
fn position(events: &[Value], kind: &str) -> usize {
    events.iter().position(|e| e["kind"] == kind).unwrap_or_else(|| panic!("no {kind}"))
}

/// The events of one dispute's path, in the order they happened.
fn assert_order(events: &[Value], kinds: &[&str]) {
    let at: Vec<usize> = kinds.iter().map(|k| position(events, k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{kinds:?} at {at:?}");
}

#[tokio::test]
async fn an_appeal_through_the_api_decides_whether_the_plan_goes_on() {
    let deploy = DeployConfig {
        appeal_window: APPEAL_WINDOW,
        appeal_ruling_window: APPEAL_RULING_WINDOW,
        ..DeployConfig::default()
    };
    let stack = Stack::start_custom_deploy(Default::default(), None, &[1, 3], deploy).await;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("arbiter.db").display());
    let mock = MockOpenAi::start().await;
    let council = Council::new(&mock.base_url, "appeal-test", "k", Duration::from_secs(5));
    let arbiter = support::spawn_arbiter(&stack, false, Judge::Offline, &db).await;
    let appeal_arbiter =
        support::spawn_arbiter(&stack, true, Judge::Council(Box::new(council)), &db).await;
    let sponsor = stack.env.actors.sponsor.address();
    let blobs = FsBlobStore::new(&stack.blobs);

    // 1. The appeal arbiter pays the executor in full: the plan goes on.
    let (id, ruling) = ruled(&stack, "appeal-pays").await;
    let share = ruling["executor_share_bps"].as_u64().unwrap();
    assert!(share > 0 && share < 10_000, "the rubric split: {ruling}");
    mock.script([Reply::Arguments(json!({
        "verdict": "worker", "executor_share_bps": 10_000,
        "rationale": "A summary of a two-sentence note may keep both sentences."
    }))]);
    let before = balances(&stack).await;
    appeal(&stack, &id).await;
    stack.wait_phase(&id, 0, "paid", 30).await;
    stack.wait_phase(&id, 1, "completed", 30).await;
    stack.post(&format!("/api/runs/{id}/subtasks/1/review"), &json!({"decision": "approve"})).await;
    stack.wait_state(&id, "completed", 30).await;
    let after = balances(&stack).await;
    assert_eq!(after[0] - before[0], U256::from(SUMMARY), "the whole summary to its executor");
    assert_eq!(after[1] - before[1], U256::from(TONE));
    assert_eq!(before[2] - after[2], U256::from(TONE), "the summary was funded before");
    let events = stack.events(&id).await;
    assert_order(
        &events,
        &[
            "dispute_opened",
            "dispute_ruled",
            "ruling_appealed",
            "appeal_ruled",
            "dispute_resolved",
            "plan_completed",
        ],
    );
    let appealed = &events[position(&events, "ruling_appealed")];
    assert_eq!(appealed["appellant"], json!(sponsor), "{appealed}");
    assert_eq!(appealed["appeal_ruling_window_secs"], APPEAL_RULING_WINDOW, "{appealed}");
    let reason: Value = serde_json::from_slice(
        &EnvelopeCodec::default().fetch(appealed["reason_uri"].as_str().unwrap(), &blobs).unwrap(),
    )
    .unwrap();
    assert_eq!(reason, json!({"reason": APPEAL_REASON}));
    let ruled_on_appeal = &events[position(&events, "appeal_ruled")];
    assert_eq!(ruled_on_appeal["executor_share_bps"], 10_000, "{ruled_on_appeal}");
    let rationale: Value = serde_json::from_slice(
        &EnvelopeCodec::default()
            .fetch(ruled_on_appeal["rationale_uri"].as_str().unwrap(), &blobs)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rationale["judge"], "council:appeal-test", "{rationale}");
    let resolved = &events[position(&events, "dispute_resolved")];
    assert_eq!(
        (resolved["verdict"].as_str(), resolved["settlement"].as_str()),
        (Some("worker"), Some("appeal_ruling")),
        "{resolved}"
    );
    let applied = events
        .iter()
        .find(|e| e["kind"] == "decision_applied" && e["decision"] == "appeal")
        .expect("the appeal was applied");
    assert_ne!(applied["ok"], false, "{applied}");
    // The council saw the ruling appealed and the sponsor's reason, as data.
    let requests = mock.requests();
    let asked = requests.last().expect("the appeal arbiter asked the council");
    let system = asked["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("This is an appeal"), "{system}");
    let user = asked["messages"][1]["content"].as_str().unwrap();
    let evidence: Value = serde_json::from_str(
        user.strip_prefix("<evidence>\n").and_then(|u| u.strip_suffix("\n</evidence>")).unwrap(),
    )
    .unwrap();
    assert_eq!(evidence["client_reason"], "it just repeats the note");
    assert_eq!(
        (
            evidence["appeal"]["appellant"].as_str(),
            evidence["appeal"]["appellant_reason"].as_str(),
            evidence["appeal"]["first_ruling"]["executor_share_bps"].as_u64(),
        ),
        (Some("client"), Some(APPEAL_REASON), Some(share)),
        "{evidence}"
    );
    let first_rationale = evidence["appeal"]["first_ruling"]["rationale"].as_str().unwrap();
    assert!(first_rationale.starts_with("Score"), "the rubric's reasons: {first_rationale}");

    // 2. The appeal arbiter refunds the funder: the plan fails.
    let (id, _) = ruled(&stack, "appeal-refunds").await;
    mock.script([Reply::Arguments(json!({
        "verdict": "client", "executor_share_bps": 0,
        "rationale": "The summary only repeats the note."
    }))]);
    let before = balances(&stack).await;
    appeal(&stack, &id).await;
    let view = stack.wait_state(&id, "failed", 30).await;
    assert_eq!(view["reason"], "dispute_refunded");
    assert_eq!(view["subtasks"][0]["phase"], "refunded");
    assert_eq!(view["subtasks"][1]["phase"], "skipped");
    let after = balances(&stack).await;
    assert_eq!(after[0], before[0], "nothing to the summary's executor");
    assert_eq!(
        after[2] - before[2],
        U256::from(SUMMARY),
        "the escrowed summary back to the sponsor"
    );
    let events = stack.events(&id).await;
    assert_order(
        &events,
        &["dispute_ruled", "ruling_appealed", "appeal_ruled", "dispute_resolved", "plan_failed"],
    );
    let resolved = &events[position(&events, "dispute_resolved")];
    assert_eq!(
        (resolved["verdict"].as_str(), resolved["executor_share_bps"].as_u64()),
        (Some("client"), Some(0))
    );
    assert_eq!(events.last().unwrap()["reason"], "dispute_refunded");

    // 3. Nobody appeals: once the window is skipped, the arbiter finalizes
    // the ruling as it stands and the plan goes on with the split.
    let (id, ruling) = ruled(&stack, "ruling-stands").await;
    let share = u128::from(ruling["executor_share_bps"].as_u64().unwrap());
    let before = balances(&stack).await;
    stack.advance(u64::from(APPEAL_WINDOW) + 1).await;
    stack.wait_phase(&id, 0, "split", 30).await;
    stack.wait_phase(&id, 1, "completed", 30).await;
    stack.post(&format!("/api/runs/{id}/subtasks/1/review"), &json!({"decision": "approve"})).await;
    stack.wait_state(&id, "completed", 30).await;
    let after = balances(&stack).await;
    let to_executor = SUMMARY * share / 10_000;
    assert_eq!(after[0] - before[0], U256::from(to_executor));
    assert_eq!(after[1] - before[1], U256::from(TONE));
    // The sponsor got the rest of the summary back and funded the tone.
    assert_eq!(
        after[2] + U256::from(TONE),
        before[2] + U256::from(SUMMARY - to_executor),
        "refund {} less the tone",
        SUMMARY - to_executor
    );
    let events = stack.events(&id).await;
    assert!(!events.iter().any(|e| e["kind"] == "ruling_appealed"), "nobody appealed");
    let resolved = &events[position(&events, "dispute_resolved")];
    assert_eq!(resolved["settlement"], "ruling_finalized", "{resolved}");
    assert_eq!(mock.requests().len(), requests.len() + 1, "the council judged appeals only");

    arbiter.abort();
    appeal_arbiter.abort();
    the_index_tells_each_dispute(&stack).await;
}

/// The three disputes as the indexer rebuilds them from the chain alone:
/// each ruling's verdict, share and rationale, each appeal with its reason
/// and final ruling, and how each settled; the disputes list filters them.
async fn the_index_tells_each_dispute(stack: &Stack) {
    use tessera_indexer::{
        IndexStore, Indexer, IndexerConfig,
        store::{DisputeFilter, TaskView},
    };
    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    let provider = alloy::providers::ProviderBuilder::new()
        .connect_http(stack.env.chain.endpoint_url())
        .erased();
    let blobs: Arc<dyn tessera_bindings::envelope::BlobStore + Send + Sync> =
        Arc::new(FsBlobStore::new(&stack.blobs));
    let mut indexer = Indexer::new(
        provider,
        stack.env.deployment.clone(),
        store,
        Some(Arc::clone(&blobs)),
        IndexerConfig::default(),
    );
    indexer.sync_once().await.unwrap();
    let disputes = |f: DisputeFilter| {
        let store = indexer.store().clone();
        async move { store.disputes_matching(&f).await.unwrap().0 }
    };
    let plan = |label: &str| Some(alloy::primitives::keccak256(label.as_bytes()).to_string());
    let one = |tasks: Vec<TaskView>| -> Value {
        let [task] = tasks.as_slice() else { panic!("one disputed task: {tasks:?}") };
        serde_json::to_value(task).unwrap()
    };
    let all = disputes(DisputeFilter::default()).await;
    assert_eq!(all.len(), 3, "{all:?}");

    let pays =
        one(disputes(DisputeFilter { plan: plan("appeal-pays"), ..Default::default() }).await);
    assert_eq!(pays["settlement"], "appeal_ruling");
    let d = &pays["dispute"];
    assert_eq!(d["state"], "settled");
    assert_eq!(d["reason"]["value"]["reason"], "it just repeats the note", "{d}");
    assert_eq!(d["ruling"]["verdict"], "split", "{d}");
    let rubric = d["ruling"]["rationale"]["value"]["rationale"].as_str().unwrap_or_default();
    assert!(rubric.starts_with("Score"), "the rubric's reasons, decoded: {d}");
    assert_eq!(d["appeal"]["appellant"], stack.env.actors.sponsor.address().to_string());
    assert_eq!(d["appeal"]["reason"]["value"], json!({"reason": APPEAL_REASON}), "{d}");
    assert_eq!(d["appeal"]["ruling"]["verdict"], "worker");
    assert_eq!(d["appeal"]["ruling"]["executor_share_bps"], 10_000);
    assert_eq!(d["appeal"]["ruling"]["rationale"]["value"]["judge"], "council:appeal-test", "{d}");
    assert_eq!(pays["result"]["error"], Value::Null, "the summary is decoded: {pays}");
    assert!(pays["result"]["value"].is_object(), "{pays}");

    let refunds =
        one(disputes(DisputeFilter { plan: plan("appeal-refunds"), ..Default::default() }).await);
    assert_eq!(refunds["settlement"], "appeal_ruling");
    assert_eq!(refunds["dispute"]["appeal"]["ruling"]["verdict"], "client");

    let stands =
        one(disputes(DisputeFilter { plan: plan("ruling-stands"), ..Default::default() }).await);
    assert_eq!(stands["settlement"], "ruling_finalized");
    assert_eq!(stands["dispute"]["appeal"], Value::Null);
    assert_eq!(stands["dispute"]["ruling"]["verdict"], "split");

    let split = DisputeFilter { verdict: Some("split".into()), ..Default::default() };
    assert_eq!(one(disputes(split).await)["task_id"], stands["task_id"]);
    let appealed = DisputeFilter { appealed: Some(true), ..Default::default() };
    assert_eq!(disputes(appealed).await.len(), 2);
}
