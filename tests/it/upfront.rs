//! Pipelines funded up front (`"funding": "upfront"`): every sub-task
//! created at approval in one batch, dependants naming their upstream
//! tasks and their executors reading the deliveries from the escrow's logs;
//! an upstream declined has its dependants cancelled and refunded, then
//! funded again with the upstream's next attempt; the indexer rebuilds the
//! same tree as for the same plan funded step by step.

use std::{collections::HashMap, sync::Arc, time::Duration};

use alloy::{network::EthereumWallet, primitives::U256};
use serde_json::{Value, json};
use tessera_bindings::{
    client::{EscrowClient, connect},
    envelope::{Envelope, EnvelopeCodec, FsBlobStore},
    task::Status,
};
use tessera_e2e::{NARROW_CARD, Stack};
use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
use tessera_orchestrator::{
    plan::Plan,
    runner::{Chain, RunnerConfig},
};
use tessera_workers::{AgentCard, runtime::Worker};

const ARTICLE: &str = "The city council approved a new budget on Monday. The budget adds \
funds for public transport and for schools. Critics said the plan raises taxes for small \
businesses. The mayor promised a review of the tax rules next year.";

/// Material with people and places in it, for the entity extractor.
const PEOPLE: &str = "Ada Lovelace met Charles Babbage in London in 1833. Babbage showed her \
the Difference Engine. Lovelace later wrote the first published algorithm for his Analytical \
Engine.";

fn step(
    index: u32,
    capability: &str,
    spec: &str,
    executor: impl serde::Serialize,
    cost: u64,
    deps: &[u32],
) -> Value {
    json!({"index": index, "capability": capability, "spec": spec, "executor": executor,
           "cost": cost, "deadline_offset_secs": 600, "depends_on": deps})
}

fn plan(label: &str, funding: &str, subtasks: Vec<Value>) -> Value {
    json!({"version": 1, "id": Plan::id_from_label(label), "review": "auto",
           "funding": funding, "budget": 10_000_000u64, "source": ARTICLE,
           "review_window_secs": 600, "subtasks": subtasks})
}

/// Runs demo agent 0's worker with [`NARROW_CARD`] (summaries only,
/// whatever the registry still lists for it).
fn spawn_narrow_worker(stack: &Stack) -> tokio::task::JoinHandle<()> {
    let signer = stack.env.actors.agents[0].clone();
    let me = signer.address();
    let provider = connect(stack.env.chain.endpoint_url(), EthereumWallet::new(signer));
    let card = AgentCard::from_yaml(NARROW_CARD).unwrap();
    let blobs = Arc::new(FsBlobStore::new(&stack.blobs));
    let mut worker = Worker::new(provider, me, card, stack.env.deployment.clone(), blobs);
    let ws = stack.env.chain.ws_endpoint();
    tokio::spawn(async move {
        worker.run(Some(&ws), Duration::from_millis(200), |_| {}, std::future::pending()).await;
    })
}

/// A 1 -> 2 -> 1 fan-out: a translation, its summary and its tone, a
/// summary of both.
fn fan_out(stack: &Stack, label: &str, funding: &str) -> Value {
    let a = &stack.env.actors;
    plan(
        label,
        funding,
        vec![
            step(0, "translate", "Translate the article to French", a.agent(2), 800_000, &[]),
            step(1, "summarize", "Summarize the translation", a.agent(1), 400_000, &[0]),
            step(2, "sentiment-classify", "Classify its tone", a.agent(3), 200_000, &[0]),
            step(3, "summarize", "Combine summary and tone", a.agent(1), 400_000, &[1, 2]),
        ],
    )
}

/// The plan tree the indexer rebuilds from chain data, by sub-task index:
/// each task's capability, depth, parent and inputs.
async fn indexed_shape(stack: &Stack, label: &str, run: &Value) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let store = IndexStore::connect(&url).await.unwrap();
    let mut ix = Indexer::new(
        stack.env.provider.clone(),
        stack.env.deployment.clone(),
        store,
        None,
        IndexerConfig::default(),
    );
    ix.sync_once().await.unwrap();
    let tree = serde_json::to_value(
        ix.store().plan_tree(&Plan::id_from_label(label).to_string()).await.unwrap(),
    )
    .unwrap();
    let index_of: HashMap<String, usize> = run["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, s)| (s["task_id"].as_str().unwrap().to_owned(), i))
        .collect();
    let by_index = |id: &Value| id.as_str().and_then(|id| index_of.get(id)).copied();
    let mut shape: Vec<Value> = tree["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let inputs: Vec<Option<usize>> =
                t["inputs"].as_array().unwrap().iter().map(by_index).collect();
            json!({"index": by_index(&t["task_id"]), "capability": t["capability"],
                   "depth": t["depth"], "parent": by_index(&t["parent_id"]),
                   "inputs": inputs, "merge": t["merge"], "status": t["status"]})
        })
        .collect();
    shape.sort_by_key(|t| t["index"].as_u64());
    shape
}

#[tokio::test]
async fn an_upfront_fan_out_is_funded_in_one_batch_and_indexed_as_the_stepwise_one() {
    let stack = Stack::start().await;
    let sponsor = stack.env.actors.sponsor.address();
    let before = stack.env.balance(sponsor).await;
    let id = stack.run_plan(&fan_out(&stack, "upfront-fan-out", "upfront")).await;
    let view = stack.wait_state(&id, "completed", 90).await;
    assert_eq!(
        view["spend"],
        json!({"committed": "1800000", "paid": "1800000", "refunded": "0"}),
        "{view:#}"
    );
    assert_eq!(before - stack.env.balance(sponsor).await, U256::from(1_800_000u64));
    for s in view["subtasks"].as_array().unwrap() {
        assert_eq!((&s["phase"], &s["attempt"]), (&json!("paid"), &json!(0)), "{s}");
    }

    // Every creation in one transaction, at approval.
    let events = stack.events(&id).await;
    let created: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subtask_created").collect();
    assert_eq!(created.len(), 4, "{events:#?}");
    assert!(created.iter().all(|e| e["tx_hash"] == created[0]["tx_hash"]), "{created:#?}");
    let paid = events.iter().filter(|e| e["kind"] == "subtask_paid").count();
    assert_eq!(paid, 4);

    // The combining step's envelope names its upstreams instead of
    // carrying their outputs; its parent is its first upstream.
    let task_of = |i: usize| view["subtasks"][i]["task_id"].as_str().unwrap().to_owned();
    let last = created.iter().find(|e| e["index"] == 3).unwrap();
    let envelope: Envelope = EnvelopeCodec::default()
        .decode(last["spec_uri"].as_str().unwrap(), &FsBlobStore::new(&stack.blobs))
        .unwrap();
    assert_eq!(envelope.parent.to_string(), format!("task:{}", task_of(1)));
    assert_eq!(envelope.source, None);
    let named: Vec<(u32, String, String)> = envelope
        .inputs
        .iter()
        .map(|i| {
            assert!(i.output.is_empty(), "named, not carried: {i:?}");
            let up = i.upstream.as_ref().expect("an upstream reference");
            assert_eq!(up.plan, Plan::id_from_label("upfront-fan-out").into_inner());
            (i.from, up.path.clone(), i.task_id.clone().unwrap())
        })
        .collect();
    assert_eq!(named, [(1, "1".into(), task_of(1)), (2, "2".into(), task_of(2))]);

    // Deadlines cover the wait: each one the longest upstream chain later.
    let escrow = EscrowClient::new(stack.env.provider.clone(), stack.env.deployment.task_escrow);
    let mut deadlines = Vec::new();
    for i in 0..4 {
        let rec = escrow
            .fetch(task_of(i).parse().unwrap(), stack.env.deployment.deploy_block)
            .await
            .unwrap();
        assert_eq!(rec.status(), Status::Paid);
        deadlines.push(rec.task.deadline.to::<u64>());
    }
    assert_eq!(
        [deadlines[1] - deadlines[0], deadlines[2] - deadlines[0], deadlines[3] - deadlines[0]],
        [600, 600, 1200]
    );

    // The dependants worked on their upstreams' real outputs.
    let summary = view["subtasks"][1]["output"].as_str().unwrap();
    assert!(!summary.is_empty() && summary != ARTICLE, "{view:#}");

    // The same plan funded step by step: the indexer's tree has the same
    // shape (capabilities, depths, parents and inputs by sub-task).
    let stepwise_id = stack.run_plan(&fan_out(&stack, "stepwise-fan-out", "stepwise")).await;
    let stepwise = stack.wait_state(&stepwise_id, "completed", 90).await;
    let upfront_shape = indexed_shape(&stack, "upfront-fan-out", &view).await;
    let stepwise_shape = indexed_shape(&stack, "stepwise-fan-out", &stepwise).await;
    assert_eq!(upfront_shape.len(), 4, "{upfront_shape:#?}");
    assert_eq!(upfront_shape, stepwise_shape);
    assert_eq!(upfront_shape[3]["inputs"], json!([1, 2]), "{upfront_shape:#?}");
    assert_eq!(upfront_shape[3]["merge"], true);
}

/// The translator of attempt 0 declines on chain (its card no longer offers
/// the capability). The runner cancels its two waiting dependants — refunded
/// at once, never paid — reassigns the translation by the plan's policy
/// and funds the dependants again with it; the plan settles.
#[tokio::test]
async fn an_upstream_declined_has_its_dependants_cancelled_refunded_and_funded_again() {
    // No worker for agent 0: the narrow summarizer's worker runs as it,
    // and declines anything but a summary.
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[1, 2, 3, 4]).await;
    let narrow = spawn_narrow_worker(&stack);
    let a = &stack.env.actors;
    let (a0, summarizer, classifier, extractor) = (a.agent(0), a.agent(1), a.agent(3), a.agent(4));
    let sponsor = a.sponsor.address();
    let before = [
        stack.env.balance(sponsor).await,
        stack.env.balance(summarizer).await,
        stack.env.balance(classifier).await,
    ];
    let label = "upfront-declined";
    let mut body = plan(
        label,
        "upfront",
        vec![
            step(0, "extract-entities", "List the people and places", a0, 300_000, &[]),
            step(1, "summarize", "Summarize the entities", summarizer, 400_000, &[0]),
            step(2, "sentiment-classify", "Classify the summary", classifier, 200_000, &[1]),
        ],
    );
    body["recovery"] = json!({"on_decline": "reassign"});
    body["source"] = json!(PEOPLE);
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "completed", 90).await;
    narrow.abort();

    // Attempt 0 of every step: the upstream declined, the dependants
    // cancelled before anyone worked on them. Attempt 1: paid.
    let plan_id = Plan::id_from_label(label);
    let escrow = EscrowClient::new(stack.env.provider.clone(), stack.env.deployment.task_escrow);
    let task = |index, attempt| {
        stack
            .orch
            .chain()
            .task_id(stack.orch.chain().sponsor(), Chain::reference(plan_id, index, attempt))
    };
    let status = |index, attempt| {
        let escrow = &escrow;
        let id = task(index, attempt);
        async move { escrow.fetch(id, stack.env.deployment.deploy_block).await.unwrap() }
    };
    let first = status(0, 0).await;
    assert_eq!((first.status(), first.task.executor), (Status::Declined, a0));
    for i in [1, 2] {
        assert_eq!(status(i, 0).await.status(), Status::Cancelled, "step {i} attempt 0");
    }
    let again = status(0, 1).await;
    assert_eq!((again.status(), again.task.executor), (Status::Paid, extractor));
    for i in 0..3 {
        assert_eq!(view["subtasks"][i]["attempt"], 1, "{view:#}");
        assert_eq!(view["subtasks"][i]["phase"], "paid");
    }
    // The dependants' new envelopes name the upstream's new attempt.
    let events = stack.events(&id).await;
    let created =
        events.iter().rfind(|e| e["kind"] == "subtask_created" && e["index"] == 1).unwrap();
    let envelope: Envelope = EnvelopeCodec::default()
        .decode(created["spec_uri"].as_str().unwrap(), &FsBlobStore::new(&stack.blobs))
        .unwrap();
    assert_eq!(envelope.inputs[0].task_id, Some(task(0, 1).to_string()));

    // Money, exactly: each step paid once, every attempt 0 refunded whole.
    assert_eq!(
        view["spend"],
        json!({"committed": "1800000", "paid": "900000", "refunded": "900000"}),
        "{view:#}"
    );
    assert_eq!(before[0] - stack.env.balance(sponsor).await, U256::from(900_000u64));
    assert_eq!(stack.env.balance(summarizer).await - before[1], U256::from(400_000u64));
    assert_eq!(stack.env.balance(classifier).await - before[2], U256::from(200_000u64));
    let rewound = events
        .iter()
        .filter(|e| e["kind"] == "recovery_applied" && e["policy"] == "await upstream")
        .count();
    assert_eq!(rewound, 2, "{events:#?}");
}
