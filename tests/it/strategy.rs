//! Plans that decide, on a real chain with real workers: checkpoints passed
//! by an approver or by their timeout policy (approve, reject, escalate),
//! conditions that skip a sub-task (never funded) or let it run, and
//! recovery without a person (`retry(2)` then `reassign` after expiries),
//! and an executor that never shows up cancelled past the accept window
//! and replaced long before the deadline.

use std::time::Duration;

use alloy::{
    primitives::{Address, U256},
    providers::Provider,
};
use serde_json::{Value, json};
use tessera_e2e::{Stack, read_sse_until};
use tessera_orchestrator::{plan::Plan, runner::RunnerConfig};

const ARTICLE: &str = "The harbour authority opened a new ferry line on Friday. The line links \
the old town with the university. Students welcomed the shorter trip, while shop owners worried \
about parking. The authority will publish passenger numbers in the spring.";

fn step(index: u32, capability: &str, executor: Address, cost: u64, deps: &[u32]) -> Value {
    json!({
        "index": index, "capability": capability, "spec": format!("{capability} the article"),
        "executor": executor, "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps,
    })
}

fn plan(label: &str, subtasks: Vec<Value>, extra: Value) -> Value {
    let mut p = json!({
        "version": 1, "id": Plan::id_from_label(label), "subtasks": subtasks, "review": "auto",
        "budget": 10_000_000u64, "source": ARTICLE, "review_window_secs": 600,
    });
    p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    p
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

async fn balances(stack: &Stack, who: &[Address]) -> Vec<U256> {
    let mut out = Vec::new();
    for w in who {
        out.push(stack.env.balance(*w).await);
    }
    out
}

/// The run's events up to the first of `kind` (the stream of a live run
/// does not end by itself).
async fn events_until(stack: &Stack, id: &str, kind: &str) -> Vec<Value> {
    read_sse_until(&stack.http, &format!("{}/api/runs/{id}/events", stack.api), kind).await
}

/// Summarize (agent 1), then classify the summary's tone (agent 3), with
/// `checkpoint`.
fn two_steps(stack: &Stack, label: &str, checkpoint: Value) -> Value {
    let (a1, a3) = (stack.env.actors.agent(1), stack.env.actors.agent(3));
    plan(
        label,
        vec![
            step(0, "summarize", a1, 400_000, &[]),
            step(1, "sentiment-classify", a3, 200_000, &[0]),
        ],
        json!({ "checkpoints": [checkpoint] }),
    )
}

#[tokio::test]
async fn a_checkpoint_waits_for_the_approver_with_the_outputs_so_far() {
    let stack = Stack::start().await;
    let body = two_steps(&stack, "checkpoint-approved", json!({"name": "review", "after": [0]}));
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "paused", 60).await;
    assert_eq!(view["gates"]["review"]["state"], "reached", "{view:#}");
    assert_eq!(view["subtasks"][0]["phase"], "paid");
    assert_eq!(view["subtasks"][1]["phase"], "waiting", "held at the checkpoint");
    let events = events_until(&stack, &id, "plan_paused").await;
    let reached = of_kind(&events, "checkpoint_reached");
    assert_eq!(reached.len(), 1);
    assert_eq!(reached[0]["after"], json!([0]));
    assert!(!reached[0]["outputs"]["0"].as_str().unwrap().is_empty(), "{}", reached[0]);
    assert!(of_kind(&events, "subtask_created").iter().all(|e| e["index"] == 0));

    // An unknown checkpoint is refused; the right one resumes the run.
    let (status, err) = stack
        .post(&format!("/api/runs/{id}/checkpoints/nope"), &json!({"decision": "approve"}))
        .await;
    assert_eq!(status, 422, "{err}");
    assert!(err.to_string().contains("no checkpoint"), "{err}");
    let (status, _) = stack
        .post(&format!("/api/runs/{id}/checkpoints/review"), &json!({"decision": "approve"}))
        .await;
    assert_eq!(status, 202);
    let view = stack.wait_state(&id, "completed", 60).await;
    assert_eq!(view["gates"]["review"]["state"], "approved");
    assert_eq!(view["gates"]["review"]["by"], "approver");
    let events = stack.events(&id).await;
    let approved = of_kind(&events, "checkpoint_approved");
    assert_eq!((approved.len(), &approved[0]["by"]), (1, &json!("approver")));
    assert_eq!(of_kind(&events, "plan_resumed").len(), 1);
}

#[tokio::test]
async fn a_checkpoint_timing_out_approves_or_rejects_by_its_policy() {
    let stack = Stack::start().await;
    let a3 = stack.env.actors.agent(3);
    let approve = two_steps(
        &stack,
        "checkpoint-timeout-approve",
        json!({"name": "review", "after": [0], "timeout_secs": 1, "on_timeout": "approve"}),
    );
    let id = stack.run_plan(&approve).await;
    stack.wait_state(&id, "paused", 60).await;
    // Timeouts run on chain time: the chain's second passes.
    stack.advance(2).await;
    let view = stack.wait_state(&id, "completed", 60).await;
    assert_eq!(view["gates"]["review"]["by"], "timeout", "{view:#}");
    let events = stack.events(&id).await;
    assert_eq!(of_kind(&events, "checkpoint_approved")[0]["by"], "timeout");

    let before = stack.env.balance(a3).await;
    let reject = two_steps(
        &stack,
        "checkpoint-timeout-reject",
        json!({"name": "review", "after": [0], "timeout_secs": 1, "on_timeout": "reject"}),
    );
    let id = stack.run_plan(&reject).await;
    stack.wait_state(&id, "paused", 60).await;
    stack.advance(2).await;
    let view = stack.wait_state(&id, "failed", 60).await;
    assert_eq!(view["reason"], "checkpoint review rejected", "{view:#}");
    assert_eq!(view["subtasks"][0]["phase"], "paid");
    assert_eq!(view["subtasks"][1]["phase"], "skipped", "never funded");
    assert_eq!(view["gates"]["review"]["state"], "rejected");
    let events = stack.events(&id).await;
    assert_eq!(of_kind(&events, "checkpoint_rejected")[0]["by"], "timeout");
    assert!(of_kind(&events, "subtask_created").iter().all(|e| e["index"] == 0));
    assert_eq!(stack.env.balance(a3).await, before, "the held step paid nobody");
}

#[tokio::test]
async fn an_escalated_checkpoint_waits_for_a_person_who_may_reject() {
    let stack = Stack::start().await;
    let body = two_steps(
        &stack,
        "checkpoint-escalate",
        json!({"name": "legal", "after": [0], "timeout_secs": 1, "on_timeout": "escalate"}),
    );
    let id = stack.run_plan(&body).await;
    stack.wait_state(&id, "paused", 60).await;
    stack.advance(2).await;
    events_until(&stack, &id, "checkpoint_escalated").await;
    let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
    assert_eq!(view["state"], "paused");
    assert_eq!(view["gates"]["legal"]["state"], "escalated");
    let (status, _) = stack
        .post(
            &format!("/api/runs/{id}/checkpoints/legal"),
            &json!({"decision": "reject", "reason": "the summary names a client"}),
        )
        .await;
    assert_eq!(status, 202);
    let view = stack.wait_state(&id, "failed", 60).await;
    assert_eq!(view["gates"]["legal"]["by"], "approver");
    let events = stack.events(&id).await;
    let rejected = of_kind(&events, "checkpoint_rejected");
    assert_eq!(rejected[0]["reason"], "the summary names a client");
}

#[tokio::test]
async fn a_false_condition_skips_a_step_unfunded_and_a_true_one_runs_it() {
    let stack = Stack::start().await;
    let (a0, a1, a3, a4) = (
        stack.env.actors.agent(0),
        stack.env.actors.agent(1),
        stack.env.actors.agent(3),
        stack.env.actors.agent(4),
    );
    let sponsor = stack.env.actors.sponsor.address();
    let who = [sponsor, a0, a1, a3, a4];
    let start = balances(&stack, &who).await;
    let mut yes = step(1, "summarize", a1, 400_000, &[0]);
    yes["when"] = json!("len(out[0].label) > 0 and out[0].score >= -1");
    let mut no = step(2, "extract-entities", a4, 250_000, &[0]);
    no["when"] = json!("out[0].score > 100");
    // 3 waits on the skipped step only: it is skipped too.
    let after_no = step(3, "extract-entities", a0, 300_000, &[2]);
    let body = plan(
        "conditions",
        vec![step(0, "sentiment-classify", a3, 200_000, &[]), yes, no, after_no],
        json!({}),
    );
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "completed", 90).await;
    let phases: Vec<&str> =
        view["subtasks"].as_array().unwrap().iter().map(|t| t["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["paid", "paid", "skipped", "skipped"], "{view:#}");
    let events = stack.events(&id).await;
    let skipped = of_kind(&events, "subtask_skipped");
    assert_eq!(skipped.len(), 2, "{skipped:#?}");
    assert_eq!(
        (&skipped[0]["index"], &skipped[0]["condition"]),
        (&json!(2), &json!("out[0].score > 100"))
    );
    assert!(skipped[1]["reason"].as_str().unwrap().contains("skipped"), "{}", skipped[1]);
    let created: Vec<&Value> =
        of_kind(&events, "subtask_created").into_iter().map(|e| &e["index"]).collect();
    assert_eq!(created, [&json!(0), &json!(1)], "skipped steps are never funded");
    let done = of_kind(&events, "plan_completed");
    assert_eq!(done[0]["paid"], "600000");
    let end = balances(&stack, &who).await;
    assert_eq!(start[0] - end[0], U256::from(600_000u64), "the sponsor paid the two that ran");
    assert_eq!(end[2] - start[2], U256::from(400_000u64));
    assert_eq!(end[3] - start[3], U256::from(200_000u64));
    assert_eq!((end[1], end[4]), (start[1], start[4]), "the skipped executors got nothing");
}

#[tokio::test]
async fn retries_then_a_reassignment_recover_expiries_without_a_person() {
    // Agent 1 (summarize, 0.40) runs no worker: nobody accepts its tasks.
    // Agent 0 (summarize, 0.50) does; the sub-task pays 0.50, so it may
    // take it over (an agent asking more than the approved cost is never
    // picked without a person: see the money tests).
    let config = RunnerConfig { decision_timeout: Duration::from_secs(600), ..Default::default() };
    let stack = Stack::start_custom(config, None, &[0, 2, 3, 4]).await;
    let (a0, a1) = (stack.env.actors.agent(0), stack.env.actors.agent(1));
    let sponsor = stack.env.actors.sponsor.address();
    let who = [sponsor, a0, a1];
    let start = balances(&stack, &who).await;
    let mut only = step(0, "summarize", a1, 500_000, &[]);
    only["deadline_offset_secs"] = json!(60);
    let body = plan("recovery", vec![only], json!({"recovery": {"on_decline": "retry(2)"}}));
    let id = stack.run_plan(&body).await;
    for attempt in 0..3u64 {
        let end = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
            let t = &view["subtasks"][0];
            if t["attempt"] == attempt && t["phase"] == "created" {
                assert_eq!(t["executor"].as_str().unwrap().parse::<Address>().unwrap(), a1);
                break;
            }
            assert_ne!(view["state"], "paused", "no person is asked: {view:#}");
            assert!(tokio::time::Instant::now() < end, "attempt {attempt} never created: {view:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stack.advance(61).await;
    }
    let view = stack.wait_state(&id, "completed", 90).await;
    let t = &view["subtasks"][0];
    assert_eq!(t["attempt"], 3);
    assert_eq!(t["executor"].as_str().unwrap().parse::<Address>().unwrap(), a0, "{view:#}");
    let events = stack.events(&id).await;
    let steps: Vec<(&Value, &Value)> = of_kind(&events, "recovery_applied")
        .into_iter()
        .map(|e| (&e["policy"], &e["attempt"]))
        .collect();
    assert_eq!(
        steps,
        [
            (&json!("retry(2)"), &json!(1)),
            (&json!("retry(2)"), &json!(2)),
            (&json!("retry(2) then reassign"), &json!(3)),
        ]
    );
    assert!(of_kind(&events, "plan_paused").is_empty(), "nobody was asked");
    assert!(view["decisions"].as_array().unwrap().is_empty());
    // The new executor got the approved cost; the expired attempts came
    // back in full.
    assert_eq!(view["plan"]["subtasks"][0]["cost"], 500_000);
    let end = balances(&stack, &who).await;
    assert_eq!(start[0] - end[0], U256::from(500_000u64));
    assert_eq!(end[1] - start[1], U256::from(500_000u64));
    assert_eq!(end[2], start[2]);
    let done = of_kind(&events, "plan_completed");
    assert_eq!((&done[0]["paid"], &done[0]["refunded"]), (&json!("500000"), &json!("1500000")));
}

#[tokio::test]
async fn an_executor_that_never_shows_up_is_refunded_and_replaced_within_the_accept_window() {
    // Agent 1 (summarize, 0.40) is registered but runs no worker; agent 0
    // (summarize, 0.50) does. The deadline is an hour away: only the
    // accept window (5 blocks) can end the wait.
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[0, 2, 3, 4]).await;
    let (a0, a1) = (stack.env.actors.agent(0), stack.env.actors.agent(1));
    let sponsor = stack.env.actors.sponsor.address();
    let who = [sponsor, a0, a1];
    let start = balances(&stack, &who).await;
    let only = step(0, "summarize", a1, 500_000, &[]);
    let extra = json!({"accept_window_blocks": 5, "recovery": {"on_decline": "reassign"}});
    let id = stack.run_plan(&plan("silent-executor", vec![only], extra)).await;
    stack.wait_phase(&id, 0, "created", 60).await;
    // Within the window nothing happens to it.
    let head = stack.env.provider.get_block_number().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
    assert_eq!(view["subtasks"][0]["phase"], "created", "{view:#}");
    assert!(of_kind(&stack.events_so_far(&id).await, "subtask_silent").is_empty());
    // Eight blocks two seconds apart: past the window in blocks and seconds.
    let _: Value = stack.env.provider.raw_request("anvil_mine".into(), (8u64, 2u64)).await.unwrap();
    let view = stack.wait_state(&id, "completed", 90).await;
    let t = &view["subtasks"][0];
    assert_eq!(t["attempt"], 1);
    assert_eq!(t["executor"].as_str().unwrap().parse::<Address>().unwrap(), a0, "{view:#}");
    let events = stack.events(&id).await;
    let silent = of_kind(&events, "subtask_silent");
    assert_eq!(silent.len(), 1, "{events:#?}");
    assert_eq!(silent[0]["executor"].as_str().unwrap().parse::<Address>().unwrap(), a1);
    assert_eq!(silent[0]["window"], 5);
    let blocks = silent[0]["blocks"].as_u64().unwrap();
    assert!(blocks > 5 && blocks <= 5 + 8 + 1, "waited {blocks} blocks from head {head}");
    assert_eq!(of_kind(&events, "subtask_cancelled").len(), 1, "{events:#?}");
    let recovered = of_kind(&events, "recovery_applied");
    assert_eq!(recovered.len(), 1, "{events:#?}");
    assert_eq!(recovered[0]["policy"], "reassign");
    let reason = recovered[0]["reason"].as_str().unwrap();
    assert!(reason.contains("neither accepted nor delivered within the accept window"), "{reason}");
    assert!(reason.contains(&format!("reassigned to {a0}")), "{reason}");
    assert!(of_kind(&events, "plan_paused").is_empty(), "nobody was asked");
    // The silent attempt came back in full; the new executor got the cost.
    let end = balances(&stack, &who).await;
    assert_eq!(start[0] - end[0], U256::from(500_000u64));
    assert_eq!(end[1] - start[1], U256::from(500_000u64));
    assert_eq!(end[2], start[2], "the silent agent got nothing");
    let done = of_kind(&events, "plan_completed");
    assert_eq!((&done[0]["paid"], &done[0]["refunded"]), (&json!("500000"), &json!("500000")));
}

#[tokio::test]
async fn a_sub_task_without_an_executor_gets_the_policys_choice_with_its_reason() {
    let stack = Stack::start().await;
    let (a1, a3) = (stack.env.actors.agent(1), stack.env.actors.agent(3));
    let mut open = step(1, "summarize", Address::ZERO, 0, &[0]);
    open["executor"] = Value::Null;
    let mut capped = step(2, "extract-entities", Address::ZERO, 260_000, &[0]);
    capped["executor"] = Value::Null;
    let body = plan(
        "left-to-the-policy",
        vec![step(0, "sentiment-classify", a3, 200_000, &[]), open, capped],
        json!({"selection": "balanced"}),
    );
    let (status, view) = stack.post("/api/plans", &body).await;
    assert_eq!(status, 201, "{view}");
    let tasks = &view["plan"]["subtasks"];
    // summarize: summarizer-b (0.40) over summarizer-a (0.50); no records
    // yet, so price decides. The zero cost became the chosen price.
    assert_eq!(tasks[1]["executor"].as_str().unwrap().parse::<Address>().unwrap(), a1);
    assert_eq!(tasks[1]["cost"], 400_000);
    // extract-entities at no more than 0.26: the extractor (0.25), not
    // summarizer-a (0.30); the cost stays as the plan says.
    let extractor = stack.env.actors.agent(4);
    assert_eq!(tasks[2]["executor"].as_str().unwrap().parse::<Address>().unwrap(), extractor);
    assert_eq!(tasks[2]["cost"], 260_000);
    let choices = view["plan"]["choices"].as_array().unwrap();
    assert_eq!(choices.iter().map(|c| c["index"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    assert!(choices[0]["reason"].as_str().unwrap().starts_with("balanced"), "{choices:#?}");
    assert!(choices[0]["runner_up"]["executor"].is_string(), "summarizer-a came second");
    assert!(choices[1]["runner_up"].is_null(), "summarizer-a is over the cap: {choices:#?}");
}
