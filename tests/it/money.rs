//! Strangers' money, on a real chain: a budget never exceeds the spend
//! cap, automatic recovery never funds an agent at a price nobody
//! approved, a person's raise stays within the budget (and, on a
//! high-stakes run, is typed), and the confirmation covers the budget.

use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use serde_json::{Value, json};
use tessera_e2e::{Stack, task_id_for};
use tessera_orchestrator::{
    plan::{Plan, PlanId},
    runner::{Chain, RunnerConfig},
};

fn step(index: u32, capability: &str, executor: Address, cost: u64) -> Value {
    json!({
        "index": index, "capability": capability, "spec": format!("{capability} the note"),
        "executor": executor, "cost": cost, "deadline_offset_secs": 60,
    })
}

fn plan(label: &str, review: &str, budget: u64, subtasks: Vec<Value>) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": review, "budget": budget,
        "source": "The ferry leaves at nine. Bring your ticket and arrive early.",
        "subtasks": subtasks,
    })
}

/// Whether the escrow holds a task for attempt `attempt` of sub-task
/// `index` of plan `plan_id` (funded by the sponsor).
async fn on_chain(stack: &Stack, plan_id: PlanId, index: u32, attempt: u32) -> bool {
    let sponsor = stack.env.actors.sponsor.address();
    let id = task_id_for(sponsor, Chain::reference(plan_id, index, attempt));
    let escrow =
        tessera_bindings::TaskEscrow::new(stack.env.deployment.task_escrow, &stack.env.provider);
    escrow.taskHash(id).call().await.expect("taskHash") != B256::ZERO
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["kind"].as_str()).collect()
}

/// A stack where summarizer-b (demo agent 1, summarize at 0.40 USDC) runs
/// no worker, so its tasks expire; summarizer-a (agent 0, 0.50 USDC) does.
async fn stack_without_summarizer_b() -> Stack {
    let config = RunnerConfig { decision_timeout: Duration::from_secs(600), ..Default::default() };
    Stack::start_custom(config, None, &[0, 2, 3, 4]).await
}

#[tokio::test]
async fn a_budget_over_the_spend_cap_is_refused_and_confirmed_with_the_plan() {
    let stack = Stack::start().await;
    let a1 = stack.env.actors.agent(1);
    // A 1-USDC plan with a 1,000,000-USDC budget, under a 50-USDC cap.
    let body =
        plan("promise", "auto", 1_000_000_000_000, vec![step(0, "summarize", a1, 1_000_000)]);
    let (status, reply) = stack.post("/api/plans", &body).await;
    assert_eq!(status, 422, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(error.contains("1000000.000000 USDC") && error.contains("50.000000 USDC"), "{error}");
    let (_, runs) = stack.get("/api/runs").await;
    assert!(runs["runs"].as_array().unwrap().is_empty(), "nothing stored");

    // A nested plan's share is a budget too.
    let mut nested = plan("promise-nested", "auto", 2_000_000, vec![]);
    nested["subtasks"] = json!([{
        "index": 0, "spec": "Digest", "cost": 60_000_000u64, "deadline_offset_secs": 3600,
        "plan": {"subtasks": [step(0, "summarize", a1, 1_000_000)]},
    }]);
    let (status, reply) = stack.post("/api/plans", &nested).await;
    assert_eq!(status, 422, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(error.contains("60.000000 USDC") && error.contains("50.000000 USDC"), "{error}");

    // The confirmation of a high-stakes plan binds its budget: the terms
    // show it, and the token changes with it.
    let body = plan("promise-high", "manual", 2_000_000, vec![step(0, "summarize", a1, 400_000)]);
    let proposed = Plan::from_json(&body.to_string()).unwrap();
    let view = stack.orch.propose_with(proposed.clone(), true, None).await.unwrap();
    let terms = serde_json::to_value(view.confirmation.unwrap()).unwrap();
    assert_eq!(terms["budget"], "2.000000", "{terms}");
    let dearer = Plan { budget: tessera_bindings::usdc::Usdc::from_whole(3), ..proposed.clone() };
    assert_ne!(stack.orch.confirmation_token(&proposed), stack.orch.confirmation_token(&dearer));
}

#[tokio::test]
async fn recovery_never_funds_a_dearer_agent_and_only_a_person_raises_the_cost() {
    let stack = stack_without_summarizer_b().await;
    let (a0, a1) = (stack.env.actors.agent(0), stack.env.actors.agent(1));
    let sponsor = stack.env.actors.sponsor.address();
    let start = (stack.env.balance(sponsor).await, stack.env.balance(a0).await);
    let mut body = plan("no-dearer", "auto", 10_000_000, vec![step(0, "summarize", a1, 400_000)]);
    body["recovery"] = json!({"on_decline": "reassign"});
    let plan_id = Plan::id_from_label("no-dearer");
    let id = stack.run_plan(&body).await;
    stack.wait_phase(&id, 0, "created", 30).await;
    stack.advance(61).await;

    // The only other summarizer asks 0.50: the run pauses, saying so.
    let view = stack.wait_state(&id, "paused", 30).await;
    let reason = view["reason"].as_str().unwrap();
    assert!(reason.contains("at or under 0.400000 USDC"), "{reason}");
    assert_eq!(view["plan"]["subtasks"][0]["cost"], 400_000, "the cost never follows a price");
    assert_eq!(view["subtasks"][0]["attempt"], 0);
    assert!(!on_chain(&stack, plan_id, 0, 1).await, "no second task was funded");
    assert_eq!(stack.env.balance(sponsor).await, start.0, "the expired escrow came back");
    assert_eq!(stack.env.balance(a0).await, start.1);

    // A person may give it to the dearer agent: the raise is theirs.
    let (status, reply) =
        stack.post(&format!("/api/runs/{id}/subtasks/0/executor"), &json!({"executor": a0})).await;
    assert_eq!(status, 202, "{reply}");
    let decision = reply["decision"].clone();
    let view = stack.wait_state(&id, "completed", 60).await;
    assert_eq!(view["plan"]["subtasks"][0]["cost"], 500_000);
    assert_eq!(view["plan"]["subtasks"][0]["approved"], 500_000);
    assert!(on_chain(&stack, plan_id, 0, 1).await);
    assert_eq!(stack.env.balance(sponsor).await, start.0 - U256::from(500_000u64));
    assert_eq!(stack.env.balance(a0).await, start.1 + U256::from(500_000u64));
    let events = stack.events(&id).await;
    let raised = events.iter().find(|e| e["kind"] == "cost_raised").expect("cost_raised");
    assert_eq!(
        (&raised["index"], &raised["from"], &raised["to"], &raised["decision"]),
        (&json!(0), &json!("400000"), &json!("500000"), &decision),
        "{raised}"
    );
    assert_eq!(raised["executor"].as_str().unwrap().parse::<Address>().unwrap(), a0);
    let k = kinds(&events);
    assert!(!k.contains(&"budget_exceeded"), "{k:?}");
}

#[tokio::test]
async fn a_persons_raise_stays_within_the_budget_and_is_typed_when_the_stakes_are_high() {
    let stack = stack_without_summarizer_b().await;
    let (a0, a1) = (stack.env.actors.agent(0), stack.env.actors.agent(1));
    let sponsor = stack.env.actors.sponsor.address();

    // Low stakes, a 0.45 budget: a raise to 0.50 is refused at once.
    let body = plan("tight", "auto", 450_000, vec![step(0, "summarize", a1, 400_000)]);
    let tight = stack.run_plan(&body).await;
    stack.wait_phase(&tight, 0, "created", 30).await;
    stack.advance(61).await;
    stack.wait_state(&tight, "paused", 30).await;
    let before = stack.env.balance(sponsor).await;
    let (status, reply) = stack
        .post(&format!("/api/runs/{tight}/subtasks/0/executor"), &json!({"executor": a0}))
        .await;
    assert_eq!(status, 422, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(error.contains("0.500000 USDC") && error.contains("0.450000 USDC budget"), "{error}");
    let (_, view) = stack.get(&format!("/api/runs/{tight}")).await;
    assert!(view["decisions"].as_array().unwrap().is_empty(), "nothing queued: {view:#}");
    assert_eq!(view["plan"]["subtasks"][0]["cost"], 400_000);

    // High stakes: the raise needs the new amount typed.
    let body = plan("typed", "manual", 2_000_000, vec![step(0, "summarize", a1, 400_000)]);
    let proposed = Plan::from_json(&body.to_string()).unwrap();
    let view = stack.orch.propose_with(proposed, true, None).await.unwrap();
    let id = view.run.id.clone();
    let terms = serde_json::to_value(view.confirmation.unwrap()).unwrap();
    let (status, tok) = stack
        .post(
            &format!("/api/runs/{id}/confirm"),
            &json!({"amount": terms["amount"], "recipients": terms["recipients"]}),
        )
        .await;
    assert_eq!(status, 200, "{tok}");
    let (status, reply) = stack
        .post(
            &format!("/api/runs/{id}/approve"),
            &json!({"confirmation_token": tok["confirmation_token"]}),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
    stack.wait_phase(&id, 0, "created", 30).await;
    stack.advance(61).await;
    stack.wait_state(&id, "paused", 30).await;
    let url = format!("/api/runs/{id}/subtasks/0/executor");
    let (status, reply) = stack.post(&url, &json!({"executor": a0})).await;
    assert_eq!(status, 403, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(error.contains("\"amount\": \"0.500000\""), "says how to confirm: {error}");
    let (status, reply) = stack.post(&url, &json!({"executor": a0, "amount": "0.45"})).await;
    assert_eq!(status, 403, "{reply}");
    let (status, reply) = stack.post(&url, &json!({"executor": a0, "amount": "0.5 USDC"})).await;
    assert_eq!(status, 202, "{reply}");
    stack.wait_phase(&id, 0, "completed", 60).await;
    let start = stack.env.balance(a0).await;
    let (status, _) = stack
        .post(&format!("/api/runs/{id}/subtasks/0/review"), &json!({"decision": "approve"}))
        .await;
    assert_eq!(status, 202);
    let view = stack.wait_state(&id, "completed", 60).await;
    assert_eq!(view["plan"]["subtasks"][0]["approved"], 500_000);
    assert_eq!(stack.env.balance(a0).await, start + U256::from(500_000u64));
    assert_eq!(stack.env.balance(sponsor).await, before - U256::from(500_000u64));
}
