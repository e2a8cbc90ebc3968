//! Plans through the orchestrator's API on a real chain with real workers:
//! chains whose results flow forward, the review gate, recovery, concurrent
//! plans, and bad input answered with clear 4xx.

use alloy::primitives::{Address, U256};
use serde_json::{Value, json};
use tessera_bindings::envelope::{Envelope, EnvelopeCodec, FsBlobStore};
use tessera_e2e::Stack;
use tessera_orchestrator::plan::Plan;

const ARTICLE: &str = "The city council approved a new budget on Monday. The budget adds \
funds for public transport and for schools. Critics said the plan raises taxes for small \
businesses. The mayor promised a review of the tax rules next year. Residents will vote on \
the transport levy in March.";

fn plan(label: &str, review: &str, subtasks: Vec<Value>) -> Value {
    json!({
        "version": 1,
        "id": Plan::id_from_label(label),
        "subtasks": subtasks,
        "review": review,
        "budget": 10_000_000u64,
        "source": ARTICLE,
        "review_window_secs": 600,
    })
}

fn step(index: u32, capability: &str, spec: &str, executor: Address, cost: u64, deps: &[u32]) -> Value {
    json!({
        "index": index, "capability": capability, "spec": spec, "executor": executor,
        "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps,
    })
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn chain_plan_hands_the_translation_to_the_summary_and_pays_each_executor() {
    let stack = Stack::start().await;
    let translator = stack.env.actors.agent(2);
    let summarizer = stack.env.actors.agent(1);
    let sponsor = stack.env.actors.sponsor.address();
    let before = (
        stack.env.balance(sponsor).await,
        stack.env.balance(translator).await,
        stack.env.balance(summarizer).await,
    );
    let id = stack
        .run_plan(&plan("chain", "auto", vec![
            step(0, "translate", "Translate the article to French", translator, 800_000, &[]),
            step(1, "summarize", "Summarize the translation in two bullets", summarizer, 400_000, &[0]),
        ]))
        .await;
    let view = stack.wait_state(&id, "completed", 60).await;
    let events = stack.events(&id).await;
    let k = kinds(&events);
    assert_eq!(k.first(), Some(&"plan_proposed"));
    assert_eq!(k.last(), Some(&"plan_completed"));
    for kind in ["subtask_created", "subtask_accepted", "subtask_completed", "subtask_paid"] {
        assert_eq!(k.iter().filter(|x| **x == kind).count(), 2, "{kind} twice: {k:?}");
    }
    for e in events.iter().filter(|e| e["kind"].as_str().unwrap().starts_with("subtask_")) {
        assert_eq!(e["plan_id"], id);
        assert!(e["tx_hash"].as_str().unwrap().starts_with("0x"), "{e}");
        assert!(e["block"].as_u64().unwrap() > 0, "{e}");
        assert!(e["task_id"].as_str().is_some());
    }
    // Step 1 started only after step 0 was paid, with its output as input.
    let paid0 = events.iter().position(|e| e["kind"] == "subtask_paid" && e["index"] == 0).unwrap();
    let created1 =
        events.iter().position(|e| e["kind"] == "subtask_created" && e["index"] == 1).unwrap();
    assert!(paid0 < created1);
    let spec_uri = events[created1]["spec_uri"].as_str().unwrap();
    let envelope: Envelope =
        EnvelopeCodec::default().decode(spec_uri, &FsBlobStore::new(&stack.blobs)).unwrap();
    let translation = view["subtasks"][0]["output"].as_str().unwrap();
    assert!(!translation.is_empty());
    assert_ne!(translation, ARTICLE, "the offline translator changes the text");
    assert_eq!(envelope.inputs.len(), 1);
    assert_eq!(envelope.inputs[0].output, translation);
    assert_eq!(envelope.source, None, "only root sub-tasks carry the source");
    assert_eq!(
        envelope.parent.to_string(),
        format!("task:{}", view["subtasks"][0]["task_id"].as_str().unwrap())
    );
    // Money: exactly the plan's costs moved.
    assert_eq!(stack.env.balance(sponsor).await, before.0 - U256::from(1_200_000u64));
    assert_eq!(stack.env.balance(translator).await, before.1 + U256::from(800_000u64));
    assert_eq!(stack.env.balance(summarizer).await, before.2 + U256::from(400_000u64));
}
