//! The plan suite through a stand-in hosted provider
//! ([`tessera_anvil::standin`], `Limits::hosted`) on 2-second blocks: every
//! service — the orchestrator, the five demo workers, a brief agent that
//! funds a child task, the arbiter service and the standalone indexer —
//! reaches the chain only over HTTP through the stand-in, which answers
//! 429 with `Retry-After` past 25 requests a second per client (all of them
//! come from one address: one shared allowance), 1 % of requests 503,
//! refuses `anvil_*`, `eth_getBlockReceipts` and wide `eth_getLogs`. A
//! chain, a fan-out, a nested plan, a delegation and a dispute run at once
//! on the one chain; each of their escrows is created and settled exactly
//! once on chain, the indexer ends with every log the chain holds, and the
//! stand-in's counts show the faults were injected and ridden out.

use std::{collections::HashMap, sync::Arc, time::Duration};

use alloy::{
    network::EthereumWallet,
    primitives::{Address, B256, U256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use serde_json::{Value, json};
use tessera_anvil::{deploy::DeployConfig, standin::Limits};
use tessera_arbiter::{Arbiter, Judge, store::ArbiterStore};
use tessera_bindings::{MockUSDC, TaskEscrow, client::connect, envelope::FsBlobStore};
use tessera_e2e::{Stack, hosted_poll, mined, spawn_card_worker};
use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
use tessera_orchestrator::plan::Plan;
use tessera_workers::{AgentCard, runtime::child_of};

/// The stand-in's seed: which requests it answers 503.
const SEED: u64 = 30;

/// Seconds between blocks.
const BLOCK_SECS: u64 = 2;

/// How long any one shape may take before the test gives up on it.
const PATIENCE: u64 = 240;

const ARTICLE: &str = "The harbour authority opened a new ferry line on Friday. The line links \
the old town with the university. Students welcomed the shorter trip, while shop owners worried \
about parking. The authority will publish passenger numbers in the spring.";

/// A short note: the extractive summary is nearly all of it, so the
/// offline arbiter's rubric splits a dispute of it.
const NOTE: &str = "The ferry leaves at nine. Bring your ticket and arrive early.";

const BRIEF_CARD: &str = "
id: brief-hosted
description: Briefs; hires a translator, then summarizes.
role: executor
model: offline
capabilities:
  - name: brief
    price: 1200000
delegates:
  - capability: translate
    max_price: 1000000
instructions: Have it translated, then summarize.
";

fn plan(label: &str, review: &str, source: &str, subtasks: Vec<Value>) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "subtasks": subtasks,
        "review": review, "budget": 10_000_000u64, "source": source, "review_window_secs": 600,
    })
}

fn step(index: u32, capability: &str, executor: Address, cost: u64, deps: &[u32]) -> Value {
    json!({
        "index": index, "capability": capability, "spec": spec_of(capability),
        "executor": executor, "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps,
    })
}

/// A spec the offline worker of `capability` can work to (a translation
/// and a brief name their language).
fn spec_of(capability: &str) -> String {
    match capability {
        "translate" => "Translate the article to French".into(),
        "brief" => "Brief in French, two bullets".into(),
        other => format!("Do the {other} step"),
    }
}

fn nested(index: u32, share: u64, deps: &[u32], subtasks: Vec<Value>) -> Value {
    json!({
        "index": index, "spec": "A plan of its own", "cost": share,
        "deadline_offset_secs": 3600, "depends_on": deps, "plan": {"subtasks": subtasks},
    })
}

/// What one shape left behind: its run id, how many sub-tasks it has, and
/// the escrow tasks its sub-tasks became.
struct Settled {
    shape: &'static str,
    run: String,
    tasks: Vec<U256>,
}

/// Runs `body` under auto review to completion.
async fn auto(stack: &Stack, shape: &'static str, body: Value) -> Settled {
    let started = std::time::Instant::now();
    let run = stack.run_plan(&body).await;
    let view = stack.wait_state(&run, "completed", PATIENCE).await;
    eprintln!("{shape}: settled in {:.0} s", started.elapsed().as_secs_f64());
    Settled { shape, tasks: task_ids(&view), run }
}

fn task_ids(view: &Value) -> Vec<U256> {
    view["subtasks"]
        .as_array()
        .expect("sub-tasks")
        .iter()
        .map(|t| t["task_id"].as_str().expect("a task id").parse().expect("a number"))
        .collect()
}

/// A review-gate dispute of a summary, ruled a split by the arbiter
/// service; the plan goes on with the kept result.
async fn dispute(stack: &Stack) -> Settled {
    let (a1, a3) = (stack.env.actors.agent(1), stack.env.actors.agent(3));
    let body = plan(
        "hosted-dispute",
        "manual",
        NOTE,
        vec![
            step(0, "summarize", a1, 400_000, &[]),
            step(1, "sentiment-classify", a3, 200_000, &[0]),
        ],
    );
    let run = stack.run_plan(&body).await;
    stack.wait_phase(&run, 0, "completed", PATIENCE).await;
    let path = format!("/api/runs/{run}/subtasks/0/review");
    let (status, answer) = stack
        .post(&path, &json!({"decision": "dispute", "reason": "it just repeats the note"}))
        .await;
    assert_eq!(status, 202, "{answer}");
    stack.wait_phase(&run, 0, "split", PATIENCE).await;
    stack.wait_phase(&run, 1, "completed", PATIENCE).await;
    let path = format!("/api/runs/{run}/subtasks/1/review");
    let (status, answer) = stack.post(&path, &json!({"decision": "approve"})).await;
    assert!(status < 300, "{answer}");
    let view = stack.wait_state(&run, "completed", PATIENCE).await;
    let events = stack.events(&run).await;
    let resolved: Vec<_> = events.iter().filter(|e| e["kind"] == "dispute_resolved").collect();
    assert_eq!(resolved.len(), 1, "ruled once: {resolved:?}");
    assert_eq!((&resolved[0]["index"], &resolved[0]["verdict"]), (&json!(0), &json!("split")));
    Settled { shape: "dispute", tasks: task_ids(&view), run }
}

/// Escrow logs per task: `TaskCreated` logs, `TaskSettled` logs, and the
/// parent each creation named.
async fn per_task(stack: &Stack) -> HashMap<U256, (usize, usize, Vec<U256>)> {
    let logs = stack
        .env
        .provider
        .get_logs(
            &Filter::new()
                .address(stack.env.deployment.task_escrow)
                .from_block(stack.env.deployment.deploy_block),
        )
        .await
        .expect("escrow logs");
    let mut out: HashMap<U256, (usize, usize, Vec<U256>)> = HashMap::new();
    for log in &logs {
        let Some(id) = log.topics().get(1).map(|t| U256::from_be_bytes(t.0)) else { continue };
        let entry = out.entry(id).or_default();
        match log.topic0() {
            Some(t) if *t == TaskEscrow::TaskCreated::SIGNATURE_HASH => {
                entry.0 += 1;
                let parent = log.topics().get(3).copied().unwrap_or(B256::ZERO);
                entry.2.push(U256::from_be_bytes(parent.0));
            }
            Some(t) if *t == TaskEscrow::TaskSettled::SIGNATURE_HASH => entry.1 += 1,
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn every_plan_shape_settles_once_through_a_hosted_provider_on_timed_blocks() {
    let deploy = DeployConfig { appeal_window: 0, ..DeployConfig::default() };
    let stack = Stack::start_hosted(BLOCK_SECS, Limits::hosted(SEED), deploy).await;
    let url = stack.hosted_url();
    let poll = hosted_poll(BLOCK_SECS);
    let env = &stack.env;
    let blobs = Arc::new(FsBlobStore::new(&stack.blobs));

    // A brief agent (dev account 11) with 5 USDC to fund its children.
    let brief_key = PrivateKeySigner::from_signing_key(env.chain.keys()[11].clone());
    let brief = brief_key.address();
    let card = AgentCard::from_yaml(BRIEF_CARD).expect("a card");
    let briefing = spawn_card_worker(env, brief_key, card, &stack.blobs, &url, poll).await;
    let usdc = MockUSDC::new(env.deployment.token, &env.provider);
    mined(usdc.mint(brief, U256::from(5_000_000u64)).from(env.actors.deployer.address())).await;

    // The arbiter service.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = |name: &str| format!("sqlite://{}", dir.path().join(name).display());
    let key = env.actors.arbiter.clone();
    let store = ArbiterStore::connect(&db("arbiter.db")).await.expect("arbiter store");
    let provider = connect(url.clone(), EthereumWallet::new(key.clone()));
    let deployment = env.deployment.clone();
    let mut arbiter =
        Arbiter::new(provider, key.address(), deployment, store, Judge::Offline, blobs.clone())
            .await
            .expect("the arbiter starts through the stand-in");
    let judging = tokio::spawn(async move {
        arbiter.run(None, poll, |_| {}, std::future::pending()).await;
    });

    // The standalone indexer, following the chain.
    let index_url = db("index.db");
    let store = IndexStore::connect(&index_url).await.expect("index store");
    let provider = connect(url.clone(), EthereumWallet::default());
    let mut indexer = Indexer::new(
        provider,
        env.deployment.clone(),
        store,
        Some(blobs.clone()),
        IndexerConfig::default(),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let following = indexer.run(None, poll, async move { stopped.await.unwrap_or(()) });

    let a = |i: usize| env.actors.agent(i);
    let chain = plan(
        "hosted-chain",
        "auto",
        ARTICLE,
        vec![
            step(0, "translate", a(2), 800_000, &[]),
            step(1, "summarize", a(1), 400_000, &[0]),
            step(2, "sentiment-classify", a(3), 200_000, &[1]),
        ],
    );
    let fan_out = plan(
        "hosted-fan-out",
        "auto",
        ARTICLE,
        vec![
            step(0, "summarize", a(1), 400_000, &[]),
            step(1, "sentiment-classify", a(3), 200_000, &[0]),
            step(2, "extract-entities", a(4), 250_000, &[0]),
            step(3, "summarize", a(0), 500_000, &[0]),
            step(4, "summarize", a(1), 400_000, &[1, 2, 3]),
        ],
    );
    let nested = plan(
        "hosted-nested",
        "auto",
        ARTICLE,
        vec![
            step(0, "translate", a(2), 800_000, &[]),
            nested(
                1,
                700_000,
                &[0],
                vec![
                    step(0, "summarize", a(1), 400_000, &[]),
                    nested(
                        1,
                        250_000,
                        &[0],
                        vec![step(0, "sentiment-classify", a(3), 200_000, &[])],
                    ),
                ],
            ),
            step(2, "extract-entities", a(4), 250_000, &[1]),
        ],
    );
    let delegation =
        plan("hosted-delegation", "auto", ARTICLE, vec![step(0, "brief", brief, 1_200_000, &[])]);
    let work = async {
        let shapes = tokio::join!(
            auto(&stack, "chain", chain),
            auto(&stack, "fan-out", fan_out),
            auto(&stack, "nested", nested),
            auto(&stack, "delegation", delegation),
            dispute(&stack),
        );
        let shapes = [shapes.0, shapes.1, shapes.2, shapes.3, shapes.4];

        // Every escrow of every shape created once and settled once, on chain
        // and in the run's events; the brief agent funded one child, settled once.
        let chain_logs = per_task(&stack).await;
        for s in &shapes {
            let want = match s.shape {
                "chain" | "nested" => 3 + usize::from(s.shape == "nested"),
                "fan-out" => 5,
                "delegation" => 1,
                _ => 2,
            };
            assert_eq!(s.tasks.len(), want, "{}: its sub-tasks", s.shape);
            for id in &s.tasks {
                let (created, settled, _) = &chain_logs[id];
                assert_eq!(
                    (*created, *settled),
                    (1, 1),
                    "{}: task {id} created and settled",
                    s.shape
                );
            }
            let events = stack.events(&s.run).await;
            for kind in ["subtask_created", "subtask_paid"] {
                let mut seen: Vec<u64> = events
                    .iter()
                    .filter(|e| e["kind"] == kind)
                    .map(|e| e["index"].as_u64().expect("an index"))
                    .collect();
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..want as u64).collect::<Vec<_>>(),
                    "{}: {kind} once each",
                    s.shape
                );
            }
        }
        let own = shapes[3].tasks[0];
        let (child, _) = child_of(brief, own, "translate");
        assert_eq!(chain_logs[&child].0, 1, "the brief agent funded its child once");
        assert_eq!(chain_logs[&child].1, 1, "and it was settled once");
        let children: Vec<_> =
            chain_logs.iter().filter(|(_, (_, _, parents))| parents.contains(&own)).collect();
        assert_eq!(children.len(), 1, "one child under the brief: {children:?}");

        // The indexer, through the same provider, holds every escrow and
        // registry log the chain holds, and each task's final status.
        let all = env
            .provider
            .get_logs(
                &Filter::new()
                    .address(vec![env.deployment.task_escrow, env.deployment.agent_registry])
                    .from_block(env.deployment.deploy_block),
            )
            .await
            .expect("logs")
            .len() as i64;
        let reader = IndexStore::connect(&index_url).await.expect("index store");
        let caught_up = tokio::time::timeout(Duration::from_secs(PATIENCE), async {
            while reader.event_count().await.expect("count") < all {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
        .await;
        assert!(caught_up.is_ok(), "the indexer caught up with {all} logs");
        for id in shapes.iter().flat_map(|s| s.tasks.iter()).chain([&child]) {
            let task = reader.task(&id.to_string()).await.expect("a task").expect("indexed");
            let task = serde_json::to_value(task).expect("JSON");
            assert!(matches!(task["status"].as_str(), Some("Paid" | "Split")), "{task}");
        }
        stop.send(()).expect("the indexer runs");
        all
    };
    let ((), all) = tokio::join!(following, work);
    assert_eq!(indexer.store().event_count().await.expect("count"), all);
    judging.abort();
    briefing.abort();

    // The faults were injected and ridden out; nothing asked for a method
    // a hosted provider does not serve but the runner's one probe of
    // anvil's automine (it falls back).
    let counts = stack.stand_in.as_ref().expect("a stand-in").counts();
    eprintln!("stand-in counts: {counts:?}");
    assert!(counts.rate_limited > 0, "429s were answered: {counts:?}");
    assert!(counts.failed > 0, "503s were answered: {counts:?}");
    let refused: Vec<_> = counts
        .per_method
        .iter()
        .filter(|(m, _)| {
            ["anvil_", "evm_", "debug_", "txpool_", "eth_getBlockReceipts"]
                .iter()
                .any(|p| m.starts_with(p))
        })
        .collect();
    // Probes, each asked once by a service and then done without: the
    // runner's of anvil's automine, and each sender's of block receipts
    // (it then asks each transaction's receipt once a head) — the
    // orchestrator, the five workers and the brief agent follow heads.
    let at_most = |m: &str| match m {
        "anvil_getAutomine" => 1,
        "eth_getBlockReceipts" => 7,
        _ => 0,
    };
    assert!(refused.iter().all(|(m, n)| **n >= 1 && **n <= at_most(m)), "{refused:?}");
    assert_eq!(counts.not_found, refused.iter().map(|(_, n)| **n).sum::<u64>());
}
