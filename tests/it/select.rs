//! Executors chosen on their record: two agents offer `summarize`; the
//! cheaper one let four of its five tasks expire, the dearer one delivered
//! all four of its own. An indexer reads those records from the chain, and
//! the orchestrator's choice follows the policy: balanced and reliable pick
//! the dearer, cheapest the cheaper, each with its reasons and the
//! runner-up; briefs and the executor endpoint take the policy too.

use std::sync::Arc;

use alloy::primitives::Address;
use serde_json::{Value, json};
use tessera_anvil::lifecycle::Driver;
use tessera_bindings::usdc::Usdc;
use tessera_e2e::Stack;
use tessera_orchestrator::{
    plan::{Plan, Selection},
    runner::{Chain, RunnerConfig},
};

const ARTICLE: &str = "The harbour reopened on Tuesday after the storm. Ships had queued for \
two days. Traders said the delay cost them dearly. The port authority promised new breakwaters.";

/// `agent` is given four tasks at 0.50 USDC (scenario `label`), delivers
/// each and is paid.
async fn four_paid(d: &mut Driver<'_>, label: &str, agent: Address) {
    d.scenario(label);
    let mut params = Vec::new();
    for _ in 0..4 {
        params.push(d.params(agent, 500_000, "data:,x".into()).await.unwrap());
    }
    let mut good = d.create_many_with_permit(params).await.unwrap();
    for rec in &mut good {
        d.deliver(rec, "data:,a summary").await.unwrap();
    }
    d.approve_many(&mut good).await.unwrap();
}

fn address(v: &Value) -> Address {
    v.as_str().unwrap_or_else(|| panic!("an address: {v}")).parse().unwrap()
}

#[tokio::test]
async fn a_reliable_agent_beats_a_cheaper_one_that_lets_tasks_expire() {
    // No workers: the test plays both agents itself.
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[]).await;
    let env = &stack.env;
    // Demo agents 0 and 1 offer summarize at 0.50 and 0.40 USDC.
    let (dear, cheap) = (env.actors.agent(0), env.actors.agent(1));
    let mut d = env.driver();

    // The cheap agent: five tasks, one delivered and paid, four never accepted.
    d.scenario("select: cheap agent");
    let mut params = Vec::new();
    for _ in 0..5 {
        params.push(d.params(cheap, 400_000, "data:,x".into()).await.unwrap());
    }
    let mut poor = d.create_many_with_permit(params).await.unwrap();
    d.deliver(&mut poor[0], "data:,a summary").await.unwrap();
    d.approve_many(&mut poor[..1]).await.unwrap();
    // The dear agent: four tasks, all delivered and paid.
    four_paid(&mut d, "select: dear agent", dear).await;
    // Past the deadline, the cheap agent's four open tasks expire.
    d.advance(24 * 3600 + 1).await.unwrap();
    let anyone = env.actors.sponsor.address();
    for rec in &mut poor[1..] {
        d.escrow.refund_expired(anyone, rec).await.unwrap();
    }

    // Without records every policy is the cheapest.
    for policy in [Selection::Balanced, Selection::Reliable, Selection::Cheapest] {
        let c = stack.orch.choose(1, "summarize", policy, &[], None).await.unwrap().unwrap();
        assert_eq!(c.executor, cheap, "{policy:?} without records");
    }

    // The indexer reads the records from the chain.
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    let stats = store.agent(&cheap.to_string()).await.unwrap().unwrap().stats;
    assert_eq!((stats.completed, stats.expired, stats.refunded), (1, 4, 0));
    let stats = store.agent(&dear.to_string()).await.unwrap().unwrap().stats;
    assert_eq!((stats.completed, stats.expired), (4, 0));
    stack.orch.with_records(Arc::new(store.clone()));

    // Balanced: 4 of 4 at 0.8 of the price beats 1 of 5 at the lowest. The
    // tasks are the choosing sponsor's own, so each funder's √units count
    // double: 2 USDC of tasks weigh 2.8 (R = 4.8/5.8), and 0.4 of the 2
    // USDC completed gives the cheap agent R = 2.57/5.83.
    let c =
        stack.orch.choose(1, "summarize", Selection::Balanced, &[], None).await.unwrap().unwrap();
    assert_eq!((c.index, c.executor, c.price), (1, dear, Usdc::from_base_units(500_000)));
    assert!(
        c.reason.starts_with(
            "balanced: 83% reliable (4/4 settled, weighing 2.8 from 1 funder (2.8 your own), \
             prior 2:1), median"
        ),
        "{}",
        c.reason
    );
    // A day has passed since either agent worked: the choice says so.
    assert!(
        c.reason.ends_with(
            "0.50 USDC (cheapest 0.40 USDC); no sign of life in the last day (no task accepted, \
             delivered or declined)"
        ),
        "{}",
        c.reason
    );
    assert!(c.quiet);
    let ru = c.runner_up.clone().expect("a runner-up");
    assert_eq!(ru.executor, cheap);
    assert!(ru.score_bps < c.score_bps);
    assert_eq!(
        ru.reason,
        "less reliable: 44% reliable (1/5 settled, 4 expired, weighing 2.8 from 1 funder \
         (2.8 your own)), 0.40 USDC"
    );
    // The API's ranking says the same: the choice's reason first, then the
    // runner-up's, against the one above it.
    let (status, r) = stack.get("/api/agents/ranking?capability=summarize&policy=balanced").await;
    assert_eq!(status, 200, "{r}");
    let ranked = r["agents"].as_array().expect("agents");
    assert_eq!(ranked.len(), 2, "{r}");
    assert_eq!((address(&ranked[0]["agent"]), ranked[0]["rank"].as_u64()), (dear, Some(1)));
    assert_eq!(ranked[0]["reason"], c.reason);
    assert_eq!(ranked[0]["score_bps"], c.score_bps);
    assert!(ranked[0]["below"].is_null());
    assert_eq!(address(&ranked[1]["agent"]), cheap);
    assert_eq!(address(&ranked[1]["below"]), dear);
    assert_eq!(ranked[1]["reason"], ru.reason);
    assert_eq!(ranked[1]["price"], 400_000);
    assert_eq!(
        ranked[1]["record"],
        "1/5 settled, 4 expired, weighing 2.8 from 1 funder (2.8 your own)"
    );
    let (status, _) = stack.get("/api/agents/ranking?capability=Summarize").await;
    assert_eq!(status, 422);
    let (status, r) = stack.get("/api/agents/ranking?capability=nobody-offers").await;
    assert_eq!((status, r["agents"].as_array().map(Vec::len)), (200, Some(0)), "{r}");
    // Reliable: the same winner; cheapest: the other.
    let c =
        stack.orch.choose(1, "summarize", Selection::Reliable, &[], None).await.unwrap().unwrap();
    assert_eq!(c.executor, dear);
    let c =
        stack.orch.choose(1, "summarize", Selection::Cheapest, &[], None).await.unwrap().unwrap();
    assert_eq!((c.executor, c.score_bps), (cheap, 10_000));
    assert!(c.runner_up.unwrap().reason.starts_with("dearer: 0.50 USDC against 0.40 USDC"));
    // Exclusions and a price cap leave the cheap one, alone.
    let only = stack.orch.choose(1, "summarize", Selection::Balanced, &[dear], None).await.unwrap();
    assert_eq!(only.as_ref().map(|c| (c.executor, c.runner_up.is_none())), Some((cheap, true)));
    let cap = Some(Usdc::from_base_units(450_000));
    let capped = stack.orch.choose(1, "summarize", Selection::Balanced, &[], cap).await.unwrap();
    assert_eq!(capped.map(|c| c.executor), Some(cheap));
    let both = [dear, cheap];
    let none = stack.orch.choose(1, "summarize", Selection::Balanced, &both, None).await.unwrap();
    assert_eq!(none, None);

    // A brief: the plan keeps the policy and each choice with its reasons.
    let brief = "Translate this article to French, then summarize it";
    let s = &stack;
    let classify = move |policy: Value| {
        let body = json!({"brief": brief, "payload": ARTICLE, "policy": policy});
        async move { s.post("/api/classify", &body).await }
    };
    let (status, out) = classify(Value::Null).await;
    assert_eq!(status, 201, "{out}");
    let plan = &out["run"]["plan"];
    assert_eq!(plan["selection"], "balanced", "balanced unless told");
    let summarize =
        plan["subtasks"].as_array().unwrap().iter().find(|t| t["capability"] == "summarize");
    let index = summarize.unwrap()["index"].clone();
    assert_eq!(address(&summarize.unwrap()["executor"]), dear);
    assert_eq!(summarize.unwrap()["cost"], 500_000);
    let choice = plan["choices"].as_array().unwrap().iter().find(|c| c["index"] == index).unwrap();
    assert_eq!(address(&choice["executor"]), dear);
    assert_eq!(choice["policy"], "balanced");
    assert!(choice["reason"].as_str().unwrap().contains("4/4 settled"), "{choice}");
    assert_eq!(address(&choice["runner_up"]["executor"]), cheap);
    assert!(choice["runner_up"]["reason"].as_str().unwrap().contains("1/5 settled, 4 expired"));
    // The translator is the only one offering translate: chosen, no runner-up.
    let translate = plan["choices"].as_array().unwrap().iter().find(|c| c["index"] != index);
    assert!(translate.unwrap()["runner_up"].is_null(), "{plan}");
    let id = out["run"]["id"].as_str().unwrap().to_owned();

    let (status, out) = classify(json!("cheapest")).await;
    assert_eq!(status, 201, "{out}");
    assert_eq!(out["run"]["plan"]["selection"], "cheapest");
    let choices = out["run"]["plan"]["choices"].as_array().unwrap();
    let choice = choices.iter().find(|c| c["index"] == index).unwrap();
    assert_eq!(address(&choice["executor"]), cheap);
    let (status, out) = classify(json!("fastest")).await;
    assert_eq!(status, 422, "an unknown policy: {out}");

    // A live run's sub-task handed over by policy: anyone but its executor.
    let (status, body) = stack.post(&format!("/api/runs/{id}/approve"), &Value::Null).await;
    assert_eq!(status, 200, "{body}");
    let executor = |i: &Value| format!("/api/runs/{id}/subtasks/{i}/executor");
    let (status, body) = stack.post(&executor(&index), &json!({"policy": "reliable"})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "queued");
    assert_eq!(address(&body["choice"]["executor"]), cheap, "the current executor is excluded");
    assert!(body["choice"]["runner_up"].is_null());
    let other = if index == 0 { json!(1) } else { json!(0) };
    let (status, body) = stack.post(&executor(&other), &json!({"policy": "balanced"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("no other active agent offers"), "{body}");
    let both = json!({"policy": "balanced", "executor": cheap});
    let (status, body) = stack.post(&executor(&index), &both).await;
    assert_eq!(status, 422, "{body}");
}

#[tokio::test]
async fn agents_seen_working_in_the_last_day_are_chosen_before_quiet_ones() {
    // No workers: the test plays the agents. Demo agents 0 and 1 offer
    // summarize at 0.50 and 0.40 USDC; only agent 0 ever worked.
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[]).await;
    let env = &stack.env;
    let (seen, quiet) = (env.actors.agent(0), env.actors.agent(1));
    let mut d = env.driver();
    d.scenario("select: seen working");
    let params = vec![d.params(seen, 500_000, "data:,x".into()).await.unwrap()];
    let mut done = d.create_many_with_permit(params).await.unwrap();
    d.deliver(&mut done[0], "data:,a summary").await.unwrap();
    d.approve_many(&mut done).await.unwrap();
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    let stats = store.agent(&seen.to_string()).await.unwrap().unwrap().stats;
    assert!(stats.last_active_at.is_some(), "the delivery is a sign of life: {stats:?}");
    stack.orch.with_records(Arc::new(store.clone()));

    // Even the cheapest policy passes over the quiet agent, saying why.
    for policy in [Selection::Cheapest, Selection::Balanced, Selection::Reliable] {
        let c = stack.orch.choose(1, "summarize", policy, &[], None).await.unwrap().unwrap();
        assert_eq!((c.executor, c.quiet), (seen, false), "{policy:?}: {c:?}");
        let ru = c.runner_up.expect("a runner-up");
        assert_eq!(ru.executor, quiet);
        assert!(ru.reason.starts_with("no sign of life in the last day"), "{}", ru.reason);
    }
    // A day later nobody was seen: the cheapest again, and the choice says
    // it is quiet, as the proposed plan does.
    d.advance(24 * 3600 + 1).await.unwrap();
    let c =
        stack.orch.choose(1, "summarize", Selection::Cheapest, &[], None).await.unwrap().unwrap();
    assert_eq!((c.executor, c.quiet), (quiet, true), "{c:?}");
    assert!(c.reason.ends_with("(no task accepted, delivered or declined)"), "{}", c.reason);
    let mut open = json!({"index": 0, "capability": "summarize", "spec": "summarize it",
        "executor": null, "cost": 0, "deadline_offset_secs": 3600, "depends_on": []});
    open["executor"] = Value::Null;
    let body = json!({"version": 1, "id": tessera_orchestrator::plan::Plan::id_from_label("quiet"),
        "subtasks": [open], "review": "auto", "budget": 1_000_000u64, "source": ARTICLE,
        "selection": "cheapest"});
    let (status, view) = stack.post("/api/plans", &body).await;
    assert_eq!(status, 201, "{view}");
    let choice = &view["plan"]["choices"][0];
    assert_eq!((address(&choice["executor"]), &choice["quiet"]), (quiet, &json!(true)), "{view}");
}

/// A restarted service chooses on the records it was handed from the first
/// step of the first run it resumes. The cheap agent's task waits (it has no
/// worker) when the service stops; it declines meanwhile; the service starts
/// again with the indexer's records, and the resumed run's first step
/// reassigns the sub-task to the dear agent, on its record of four tasks
/// settled, not on the prior alone.
#[tokio::test]
async fn a_run_resumed_at_start_reassigns_on_the_records_handed_in() {
    let mut stack = Stack::start_custom(RunnerConfig::default(), None, &[]).await;
    let (dear, cheap) = (stack.env.actors.agent(0), stack.env.actors.agent(1));
    // The dear agent's record: four tasks delivered and paid.
    four_paid(&mut stack.env.driver(), "resume: dear agent", dear).await;

    // The driver's permits spent the sponsor's allowance; runs need one.
    tessera_e2e::allow_escrow(&stack.env).await;
    let plan_id = Plan::id_from_label("resumed-on-records");
    let body = json!({
        "version": 1,
        "id": plan_id,
        "review": "auto",
        "budget": 1_000_000u64,
        "source": ARTICLE,
        "recovery": {"on_decline": "reassign"},
        "subtasks": [{"index": 0, "capability": "summarize", "spec": "Summarize it",
                      "executor": cheap, "cost": 500_000, "deadline_offset_secs": 3600}],
    });
    let id = stack.run_plan(&body).await;
    stack.wait_phase(&id, 0, "created", 30).await;
    stack.shutdown().await;

    // While the service is down the cheap agent says no.
    let chain = stack.orch.chain();
    let task = chain.task_id(chain.sponsor(), Chain::reference(plan_id, 0, 0));
    let d = stack.env.driver();
    let mut rec = d.escrow.fetch(task, stack.env.deployment.deploy_block).await.unwrap();
    d.escrow.decline(cheap, &mut rec, "").await.unwrap();
    drop(d);
    let (store, _ix) = tessera_e2e::synced_index(&stack.env).await;
    assert_eq!(store.agent(&dear.to_string()).await.unwrap().unwrap().stats.completed, 4);

    stack.restart(Some(Arc::new(store)), None).await;
    assert_eq!(stack.service.resumed(), 1);
    let url = format!("{}/api/runs/{id}/events", stack.api);
    let events = tessera_e2e::read_sse_until(&stack.http, &url, "recovery_applied").await;
    let recovered = events.last().expect("events");
    assert_eq!(recovered["kind"], "recovery_applied", "{events:#?}");
    assert_eq!((&recovered["policy"], &recovered["attempt"]), (&json!("reassign"), &json!(1)));
    let why = recovered["reason"].as_str().unwrap();
    let chosen = format!("reassigned to {dear}: balanced: ");
    assert!(why.contains(&chosen), "{why}");
    assert!(why.contains("(4/4 settled,"), "chosen on the dear agent's record: {why}");
    assert!(!why.contains("no settled tasks yet"), "{why}");
}
