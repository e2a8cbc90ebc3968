//! Briefs through `POST /api/classify` on a real chain: the ceremony each
//! quadrant calls for, and the three layers of high-stakes defence.

use alloy::primitives::Address;
use serde_json::{Value, json};
use tessera_e2e::Stack;

const ADDR: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
const ARTICLE: &str = "The harbour reopened on Tuesday after the storm. Ships had queued for \
two days. Traders said the delay cost them dearly. The port authority promised new breakwaters.";

async fn classify(stack: &Stack, brief: &str) -> (u16, Value) {
    stack.post("/api/classify", &json!({"brief": brief, "payload": ARTICLE})).await
}

#[tokio::test]
async fn atomic_low_runs_directly_and_composite_low_waits_for_approval() {
    let stack = Stack::start().await;
    let (status, out) = classify(&stack, "Summarize this article in three bullets").await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["quadrant"], "atomic_low");
    assert_eq!(out["ceremony"], "direct");
    assert_eq!(out["run"]["state"], "running", "executed without a card");
    // The executor and cost come from the registry: the cheapest summarizer.
    let sub = &out["run"]["plan"]["subtasks"][0];
    assert_eq!(
        sub["executor"].as_str().unwrap().parse::<Address>().unwrap(),
        stack.env.actors.agent(1)
    );
    assert_eq!(sub["cost"], 400_000);
    let id = out["run"]["id"].as_str().unwrap().to_owned();
    let view = stack.wait_state(&id, "completed", 60).await;
    assert!(!view["subtasks"][0]["output"].as_str().unwrap().is_empty());

    let (status, out) =
        classify(&stack, "Translate this article to French, then summarize it").await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["quadrant"], "composite_low");
    assert_eq!(out["ceremony"], "plan_card");
    assert_eq!(out["run"]["state"], "proposed");
    let signals: Vec<&str> = out["classification"]["signals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(signals.contains(&"sequence"), "{signals:?}");
    let id = out["run"]["id"].as_str().unwrap().to_owned();
    let (status, _) = stack.post(&format!("/api/runs/{id}/approve"), &Value::Null).await;
    assert_eq!(status, 200);
    stack.wait_state(&id, "completed", 60).await;
}

#[tokio::test]
async fn high_stakes_needs_a_confirmation_bound_to_the_exact_plan() {
    let stack = Stack::start().await;
    let brief = format!("Summarize the invoice, then pay 40 USDC to {ADDR}");
    let (status, out) = classify(&stack, &brief).await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["ceremony"], "confirm");
    let run = &out["run"];
    assert_eq!(run["stakes"], "high");
    assert_eq!(run["plan"]["review"], "manual", "high stakes turns review on");
    let id = run["id"].as_str().unwrap().to_owned();
    let executor: Address =
        run["plan"]["subtasks"][0]["executor"].as_str().unwrap().parse().unwrap();
    assert_ne!(
        executor,
        ADDR.parse::<Address>().unwrap(),
        "the brief's address is never an executor"
    );
    assert_eq!(run["confirmation"]["amount"], "0.400000");

    // Layer 1/2: no confirmation, no approval.
    let (status, body) = stack.post(&format!("/api/runs/{id}/approve"), &Value::Null).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().unwrap().contains("high-stakes"));
    // A made-up token.
    let (status, _) = stack
        .post(
            &format!("/api/runs/{id}/approve"),
            &json!({"confirmation_token": format!("0x{}", "11".repeat(32))}),
        )
        .await;
    assert_eq!(status, 403);
    // Typing the wrong amount or recipients gets no token.
    let (status, body) = stack
        .post(&format!("/api/runs/{id}/confirm"), &json!({"amount": "40", "recipients": [ADDR]}))
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = stack
        .post(&format!("/api/runs/{id}/confirm"), &json!({"amount": "0.4", "recipients": [ADDR]}))
        .await;
    assert_eq!(status, 422);

    // A token for a different high-stakes plan does not open this one.
    let (_, other) =
        classify(&stack, &format!("Translate the memo to Spanish, then send $5 to {ADDR}")).await;
    let other_id = other["run"]["id"].as_str().unwrap().to_owned();
    let other_terms = &other["run"]["confirmation"];
    let (status, tok) = stack
        .post(
            &format!("/api/runs/{other_id}/confirm"),
            &json!({"amount": other_terms["amount"], "recipients": other_terms["recipients"]}),
        )
        .await;
    assert_eq!(status, 200, "{tok}");
    let (status, _) = stack
        .post(
            &format!("/api/runs/{id}/approve"),
            &json!({"confirmation_token": tok["confirmation_token"]}),
        )
        .await;
    assert_eq!(status, 403, "another plan's token");

    // Confirm this plan, then swap its executor: the token no longer matches.
    let (status, tok) = stack
        .post(
            &format!("/api/runs/{id}/confirm"),
            &json!({"amount": "0.4 USDC", "recipients": [executor]}),
        )
        .await;
    assert_eq!(status, 200, "{tok}");
    let token = tok["confirmation_token"].clone();
    // An arbitrary address is refused as an executor outright.
    let (status, body) = stack
        .post(
            &format!("/api/runs/{id}/edit"),
            &json!({"op": "reassign", "index": 0, "executor": ADDR}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("not registered"));
    // Another registered summarizer is allowed, but voids the confirmation.
    let other_agent = stack.env.actors.agent(0);
    let (status, body) = stack
        .post(
            &format!("/api/runs/{id}/edit"),
            &json!({"op": "reassign", "index": 0, "executor": other_agent}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = stack
        .post(&format!("/api/runs/{id}/edit"), &json!({"op": "review", "review": "auto"}))
        .await;
    assert_eq!(status, 422, "high stakes keeps manual review");
    let (status, _) =
        stack.post(&format!("/api/runs/{id}/approve"), &json!({"confirmation_token": token})).await;
    assert_eq!(status, 403, "the token was bound to the plan before the edit");

    // Confirming the edited plan works; the run then pauses at review.
    let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
    let terms = &view["confirmation"];
    let (status, tok) = stack
        .post(
            &format!("/api/runs/{id}/confirm"),
            &json!({"amount": terms["amount"], "recipients": terms["recipients"]}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = stack
        .post(
            &format!("/api/runs/{id}/approve"),
            &json!({"confirmation_token": tok["confirmation_token"]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    stack.wait_phase(&id, 0, "completed", 60).await;
}

#[tokio::test]
async fn raw_transfers_and_plans_over_the_cap_are_refused() {
    let stack = Stack::start().await;
    let (status, out) = classify(&stack, &format!("Send 0.1 USDC to {ADDR}")).await;
    assert_eq!(status, 200, "{out}");
    assert!(out["run"].is_null(), "nothing proposed");
    assert_eq!(out["quadrant"], "atomic_high");
    assert!(out["refusal"].as_str().unwrap().contains("does not send funds to 0x5290"), "{out}");
    let (_, runs) = stack.get("/api/runs").await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 0);

    // Layer 3: the per-plan spend cap (50 USDC by default).
    let plan = json!({
        "version": 1, "id": tessera_orchestrator::plan::Plan::id_from_label("cap"),
        "review": "auto", "budget": 100_000_000u64,
        "subtasks": [{"index": 0, "capability": "summarize", "spec": "s", "executor": stack.env.actors.agent(1),
                      "cost": 60_000_000u64, "deadline_offset_secs": 3600}],
    });
    let (status, body) = stack.post("/api/plans", &plan).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("spend cap"), "{body}");

    let (status, body) = stack.post("/api/classify", &json!({"brief": "  "})).await;
    assert_eq!(status, 422, "{body}");
    let resp = stack
        .http
        .post(format!("{}/api/classify", stack.api))
        .json(&json!({"brief": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn capabilities_no_active_agent_offers_are_left_for_a_manual_pick() {
    let stack = Stack::start().await;
    // The only translator pauses.
    let translator = stack.env.actors.agent(2);
    let registry = tessera_bindings::AgentRegistry::new(
        stack.env.deployment.agent_registry,
        &stack.env.provider,
    );
    registry.pause().from(translator).send().await.unwrap().get_receipt().await.unwrap();
    let (status, out) = classify(&stack, "Translate this article to French").await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["unassigned"], json!([0]));
    assert!(out["run"]["plan"]["subtasks"][0]["executor"].is_null());
    assert_eq!(out["run"]["state"], "proposed", "not executed directly without an executor");
    let id = out["run"]["id"].as_str().unwrap().to_owned();
    let (status, body) = stack.post(&format!("/api/runs/{id}/approve"), &Value::Null).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("no executor assigned"));
}

/// A brief of numbered goals, some of several steps, is proposed as a
/// nested plan (each such goal a nested plan whose share is its leaves'
/// prices) and runs to completion once approved.
#[tokio::test]
async fn a_brief_of_numbered_goals_is_proposed_as_a_nested_plan() {
    let stack = Stack::start().await;
    let brief = "Prepare a briefing on the attached article.
1. Translate it to French, then summarize the translation.
2. List the entities it names.
3. Finally, summarize the findings for the board.";
    let (status, out) = classify(&stack, brief).await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["ceremony"], "plan_card");
    assert_eq!(
        out["classification"]["groups"],
        json!([{"path": "0",
        "spec": "Translate it to French, then summarize the translation"}])
    );
    let plan = &out["run"]["plan"];
    let shape: Vec<(String, String)> = plan["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["path"].as_str().unwrap().into(), t["capability"].as_str().unwrap().into()))
        .collect();
    let expected =
        [("0.0", "translate"), ("0.1", "summarize"), ("1", "extract-entities"), ("2", "summarize")];
    assert_eq!(shape, expected.map(|(p, c)| (p.to_owned(), c.to_owned())));
    assert_eq!(
        plan["subtasks"][3]["depends_on"],
        json!([1, 2]),
        "the findings wait for both goals"
    );
    // The nested plan's share is what its leaves cost at registry prices.
    let share = plan["subtasks"][0]["cost"].as_u64().unwrap()
        + plan["subtasks"][1]["cost"].as_u64().unwrap();
    assert_eq!(plan["groups"][0]["budget"], share);
    assert_eq!(out["run"]["nested"][0]["state"], "waiting");
    let id = out["run"]["id"].as_str().unwrap().to_owned();
    let (status, _) = stack.post(&format!("/api/runs/{id}/approve"), &Value::Null).await;
    assert_eq!(status, 200);
    let view = stack.wait_state(&id, "completed", 60).await;
    assert_eq!(view["nested"][0]["state"], "completed", "{view}");
}

/// A catalogue that cannot be read.
struct Unreadable;

impl tessera_bindings::catalogue::CatalogueSource for Unreadable {
    fn catalogue(&self) -> tessera_bindings::catalogue::CatalogueFuture<'_> {
        Box::pin(async {
            Err(tessera_bindings::catalogue::CatalogueError("the index is down".into()))
        })
    }
}

/// A brief asking for a capability no rule knows is planned from the
/// catalogue, the agent offering it chosen from the registry, and the plan
/// says which words of the brief chose each capability. An unreadable
/// catalogue leaves the built-ins, and the classification says so.
#[tokio::test]
async fn a_brief_is_planned_from_the_catalogue() {
    use tessera_bindings::{
        catalogue::{Catalogue, Entry},
        describe::Describe,
    };
    let stack = Stack::start().await;
    let poet = stack.env.actors.agent(3);
    let word = tessera_bindings::capability::encode("haiku-write").unwrap();
    let registry = tessera_bindings::AgentRegistry::new(
        stack.env.deployment.agent_registry,
        &stack.env.provider,
    );
    let receipt = registry
        .addCapability(word, 300_000)
        .from(poet)
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(receipt.status());
    let mut catalogue = Catalogue::builtins();
    catalogue.entries.push(Entry {
        name: "haiku-write".into(),
        builtin: false,
        describe: Describe {
            description: Some("Writes a haiku on a theme.".into()),
            ..Describe::default()
        },
        offerers: Vec::new(),
        offered_by: 1,
    });
    stack.orch.with_catalogue(std::sync::Arc::new(catalogue));
    let brief = "Write a haiku about autumn leaves, then translate it to French";
    let (status, out) = classify(&stack, brief).await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["ceremony"], "plan_card");
    let subtasks = &out["run"]["plan"]["subtasks"];
    assert_eq!(subtasks[0]["capability"], "haiku-write");
    assert_eq!(subtasks[0]["chosen_by"], json!(["Write", "haiku"]));
    assert_eq!(subtasks[0]["executor"].as_str().unwrap().parse::<Address>().unwrap(), poet);
    assert_eq!(subtasks[0]["cost"], 300_000);
    assert_eq!(subtasks[1]["capability"], "translate");
    assert_eq!(subtasks[1]["chosen_by"], json!(["translate"]));
    assert_eq!(subtasks[1]["depends_on"], json!([0]));
    assert_eq!(out["classification"]["plan"][0]["chosen_by"], json!(["Write", "haiku"]));
    // The stored plan keeps the words.
    let id = out["run"]["id"].as_str().unwrap();
    let (status, run) = stack.get(&format!("/api/runs/{id}")).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["plan"]["subtasks"][0]["chosen_by"], json!(["Write", "haiku"]));

    // One step of a registered capability, atomic and low-stakes: its plan
    // card still waits for the sponsor.
    let (status, out) = classify(&stack, "Write a haiku about autumn leaves").await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["quadrant"], "atomic_low", "{out}");
    assert_eq!(out["ceremony"], "plan_card", "{out}");
    assert_eq!(out["run"]["state"], "proposed", "{out}");
    let signals = out["classification"]["signals"].to_string();
    assert!(signals.contains("registered_capability"), "{out}");

    stack.orch.with_catalogue(std::sync::Arc::new(Unreadable));
    let (status, out) = classify(&stack, brief).await;
    assert_eq!(status, 201, "{out}");
    let subtasks = out["run"]["plan"]["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 1);
    assert_eq!(subtasks[0]["capability"], "translate");
    let signal = out["classification"]["signals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "catalogue_unavailable")
        .cloned()
        .unwrap_or_default();
    assert!(signal["detail"].as_str().unwrap_or_default().contains("the index is down"), "{out}");
}
