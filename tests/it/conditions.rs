//! Conditions checked at propose against the result schemas capabilities
//! publish, and the catalogue those schemas come from: the built-in
//! capabilities' own, and a registered capability's from its card once the
//! index reads it.

use std::sync::Arc;

use alloy::primitives::Address;
use serde_json::{Value, json};
use tessera_bindings::{
    AgentRegistry, capability,
    card::{AgentCard, CapabilityOffer, Price, Role},
    describe::ResultSchema,
};
use tessera_e2e::Stack;
use tessera_orchestrator::plan::Plan;

const REVIEW: &str = "The ferry now leaves at nine. Passengers praised the new timetable.";

/// Step 0 runs `capability` by `first`; step 1, a summary by `then`, runs
/// when `when` holds.
fn plan(label: &str, capability: &str, first: Address, then: Address, when: &str) -> Value {
    json!({
        "version": 1,
        "id": Plan::id_from_label(label),
        "budget": 1_000_000u64,
        "source": REVIEW,
        "subtasks": [
            {"index": 0, "capability": capability, "spec": "Work on the review",
             "executor": first, "cost": 200_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "summarize", "spec": "Summarize the review",
             "executor": then, "cost": 400_000, "deadline_offset_secs": 3600,
             "depends_on": [0], "when": when},
        ],
    })
}

#[tokio::test]
async fn a_condition_over_a_field_the_schema_lacks_is_refused_at_propose() {
    let stack = Stack::start().await;
    let (summarizer, classifier) = (stack.env.actors.agent(1), stack.env.actors.agent(3));
    let body = plan(
        "sentiment-field",
        "sentiment-classify",
        classifier,
        summarizer,
        r#"out[0].sentiment == "negative""#,
    );
    let (status, resp) = stack.post("/api/plans", &body).await;
    assert_eq!(status, 422, "{resp}");
    assert_eq!(
        resp["error"],
        "step 1: condition `out[0].sentiment == \"negative\"` reads out[0].sentiment, which the \
         result schema of `sentiment-classify` (step 0) does not declare: at `.sentiment`, no \
         such field (the schema has: capability, engine, label, model, score, terms, text, \
         withheld_sentences)"
    );
    // The field the schema declares is read, and the plan runs.
    let body = plan(
        "label-field",
        "sentiment-classify",
        classifier,
        summarizer,
        "len(out[0].label) > 0 and out[0].score >= -1",
    );
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "completed", 60).await;
    let phases: Vec<&str> =
        view["subtasks"].as_array().unwrap().iter().map(|t| t["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["paid", "paid"], "{view:#}");
    // Without an index, the catalogue is the built-in capabilities.
    let (status, catalogue) = stack.get("/api/capabilities").await;
    assert_eq!(status, 200, "{catalogue}");
    assert_eq!(catalogue["source"], "built-in");
    let sentiment = catalogue["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "sentiment-classify")
        .expect("listed");
    assert_eq!(sentiment["builtin"], true);
    assert_eq!(sentiment["describe"]["result"]["properties"]["label"]["type"], "string");
}

/// An agent registers `rate-tone` with a card whose result schema has
/// `stars`: once the index reads it, the orchestrator lists it, checks a
/// condition over its result against that schema, and refuses a field it
/// lacks; a capability whose card publishes no schema has only its whole
/// result read.
#[tokio::test]
async fn a_registered_capability_is_listed_and_its_card_schema_checks_conditions() {
    let stack = Stack::start().await;
    let (summarizer, rater) = (stack.env.actors.agent(1), stack.env.actors.agent(4));
    let mut rate = CapabilityOffer::new("rate-tone", Price::from_base_units(150_000));
    rate.description = Some("Rates the tone of a text from 1 to 5 stars.".into());
    rate.result = Some(
        ResultSchema::from_json(&json!({"type": "object", "properties": {
            "stars": {"type": "integer", "description": "1 to 5"}}, "required": ["stars"]}))
        .unwrap(),
    );
    let mut haiku = CapabilityOffer::new("haiku-write", Price::from_base_units(90_000));
    haiku.description = Some("Writes a haiku.".into());
    let card = AgentCard {
        id: "tone-rater".into(),
        description: "Rates tones, writes haiku.".into(),
        role: Role::Executor,
        capabilities: vec![rate, haiku],
        model: "handler".into(),
        instructions: String::new(),
        publish_instructions: false,
        delegates: Vec::new(),
        max_delegated_outstanding: None,
        handler: None,
    };
    let registry = AgentRegistry::new(stack.env.deployment.agent_registry, &stack.env.provider);
    let receipt = registry
        .setMetadataURI(card.to_uri())
        .from(rater)
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(receipt.status());
    for (name, price) in [("rate-tone", 150_000u128), ("haiku-write", 90_000)] {
        let receipt = registry
            .addCapability(capability::encode(name).unwrap(), price)
            .from(rater)
            .send()
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
        assert!(receipt.status(), "{name} added");
    }
    let (store, _dir) = tessera_e2e::synced_index(&stack.env).await;
    stack.orch.with_catalogue(Arc::new(store));

    let (status, catalogue) = stack.get("/api/capabilities").await;
    assert_eq!(status, 200, "{catalogue}");
    assert_eq!(catalogue["source"], "index");
    let entries = catalogue["entries"].as_array().unwrap();
    let entry = entries.iter().find(|e| e["name"] == "rate-tone").expect("rate-tone is listed");
    assert_eq!(entry["builtin"], false);
    assert_eq!(entry["describe"]["description"], "Rates the tone of a text from 1 to 5 stars.");
    assert_eq!(entry["offerers"][0]["agent"], rater.to_string());
    assert_eq!(entry["offerers"][0]["card"], "tone-rater");
    assert_eq!(entry["offerers"][0]["price"], "150000");
    assert_eq!(entry["offerers"][0]["record"]["settled"], 0);
    let summarize = entries.iter().find(|e| e["name"] == "summarize").unwrap();
    assert!(summarize["offered_by"].as_u64().unwrap() >= 1, "{summarize}");

    let refused = plan("grade", "rate-tone", rater, summarizer, "out[0].grade >= 4");
    let (status, resp) = stack.post("/api/plans", &refused).await;
    assert_eq!(status, 422, "{resp}");
    assert_eq!(
        resp["error"],
        "step 1: condition `out[0].grade >= 4` reads out[0].grade, which the result schema of \
         `rate-tone` (step 0) does not declare: at `.grade`, no such field (the schema has: stars)"
    );
    let (status, resp) = stack
        .post("/api/plans", &plan("stars", "rate-tone", rater, summarizer, "out[0].stars >= 4"))
        .await;
    assert_eq!(status, 201, "{resp}");
    let no_schema = plan("haiku", "haiku-write", rater, summarizer, "len(out[0].lines) == 3");
    let (status, resp) = stack.post("/api/plans", &no_schema).await;
    assert_eq!(status, 422, "{resp}");
    assert!(
        resp["error"]
            .as_str()
            .unwrap()
            .contains("`haiku-write` (step 0) publishes no result schema"),
        "{resp}"
    );
    let whole = plan("haiku-whole", "haiku-write", rater, summarizer, "len(out[0]) > 0");
    assert_eq!(stack.post("/api/plans", &whole).await.0, 201);
}
