//! Nested plans through the orchestrator's API on a real chain with real
//! workers: a plan three levels deep settled with exact balances, the depth
//! limit, and a cancel that reaches into a nested plan.

use alloy::primitives::{Address, U256};
use serde_json::{Value, json};
use tessera_bindings::envelope::{Envelope, EnvelopeCodec, FsBlobStore};
use tessera_e2e::{Stack, read_sse_until};
use tessera_orchestrator::plan::Plan;

const ARTICLE: &str = "The harbour authority opened a new ferry line on Friday. The line links \
the old town with the university. Students welcomed the shorter trip, while shop owners worried \
about parking. The authority will publish passenger numbers in the spring.";

fn plan(label: &str, subtasks: Vec<Value>) -> Value {
    json!({
        "version": 1,
        "id": Plan::id_from_label(label),
        "subtasks": subtasks,
        "review": "auto",
        "budget": 10_000_000u64,
        "source": ARTICLE,
        "review_window_secs": 600,
    })
}

fn step(
    index: u32,
    capability: &str,
    spec: &str,
    executor: Address,
    cost: u64,
    deps: &[u32],
) -> Value {
    json!({
        "index": index, "capability": capability, "spec": spec, "executor": executor,
        "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps,
    })
}

/// A step that is a plan of its own, `share` its budget.
fn nested(index: u32, spec: &str, share: u64, deps: &[u32], subtasks: Vec<Value>) -> Value {
    json!({
        "index": index, "spec": spec, "cost": share, "deadline_offset_secs": 3600,
        "depends_on": deps, "plan": {"subtasks": subtasks},
    })
}

fn envelope_of(stack: &Stack, events: &[Value], index: u64) -> Envelope {
    let created = events
        .iter()
        .find(|e| e["kind"] == "subtask_created" && e["index"] == index)
        .unwrap_or_else(|| panic!("sub-task {index} created"));
    let uri = created["spec_uri"].as_str().unwrap();
    EnvelopeCodec::default().decode(uri, &FsBlobStore::new(&stack.blobs)).unwrap()
}

/// translate → [summarize → [classify the summary's tone]] → list entities:
/// four escrows on three levels, each paid exactly its cost, results handed
/// across levels, each nested plan reported settled once its leaves are paid.
#[tokio::test]
async fn a_nested_plan_three_levels_deep_settles_with_exact_balances() {
    let stack = Stack::start().await;
    let (a0, a1, a2, a3) = (
        stack.env.actors.agent(0),
        stack.env.actors.agent(1),
        stack.env.actors.agent(2),
        stack.env.actors.agent(3),
    );
    let sponsor = stack.env.actors.sponsor.address();
    let before = [sponsor, a0, a1, a2, a3];
    let mut start = Vec::new();
    for who in before {
        start.push(stack.env.balance(who).await);
    }
    let body = plan(
        "nested-three-levels",
        vec![
            step(0, "translate", "Translate the article to French", a2, 800_000, &[]),
            nested(
                1,
                "Digest the translation",
                700_000,
                &[0],
                vec![
                    step(0, "summarize", "Summarize the translation", a1, 400_000, &[]),
                    nested(
                        1,
                        "Judge the digest",
                        250_000,
                        &[0],
                        vec![step(0, "sentiment-classify", "Classify the tone", a3, 200_000, &[])],
                    ),
                ],
            ),
            step(2, "extract-entities", "List the entities of the digest", a0, 300_000, &[1]),
        ],
    );
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "completed", 90).await;

    // The run holds the leaves, each with its path; the nested plans are
    // listed with their place in the tree.
    let paths: Vec<&str> = view["plan"]["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["0", "1.0", "1.1.0", "2"]);
    let nested = view["nested"].as_array().unwrap();
    assert_eq!(nested.len(), 2, "{view}");
    assert_eq!((&nested[0]["path"], &nested[0]["depth"]), (&json!("1"), &json!(2)));
    assert_eq!((&nested[1]["path"], &nested[1]["depth"]), (&json!("1.1"), &json!(3)));
    assert_eq!(nested[0]["parent_plan_id"], id, "level 2 hangs off the root plan");
    assert_eq!(nested[1]["parent_plan_id"], nested[0]["plan_id"], "level 3 off level 2");
    for n in nested {
        assert_eq!(n["state"], "completed", "{n}");
        assert_eq!(n["run_id"], id);
    }
    assert_eq!(
        view["spend"],
        json!({"committed": "1700000", "paid": "1700000", "refunded": "0"}),
        "{view}"
    );

    // One stream for every level: leaf events carry their path, and each
    // nested plan is reported settled once, after its leaves were paid.
    let events = stack.events(&id).await;
    for e in events.iter().filter(|e| e["kind"] == "subtask_paid") {
        let index = e["index"].as_u64().unwrap() as usize;
        assert_eq!(e["path"], paths[index], "{e}");
    }
    let settled: Vec<&Value> = events.iter().filter(|e| e["kind"] == "nested_completed").collect();
    assert_eq!(settled.len(), 2, "{events:?}");
    let inner = settled.iter().find(|e| e["path"] == "1.1").unwrap();
    assert_eq!((&inner["paid"], &inner["subtasks"]), (&json!("200000"), &json!(1)));
    let outer = settled.iter().find(|e| e["path"] == "1").unwrap();
    assert_eq!((&outer["paid"], &outer["budget"]), (&json!("600000"), &json!("700000")));
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let inner_paid = at(&|e| e["kind"] == "subtask_paid" && e["index"] == 2);
    let inner_done = at(&|e| e["kind"] == "nested_completed" && e["path"] == "1.1");
    assert!(inner_paid < inner_done);
    assert_eq!(events.last().unwrap()["kind"], "plan_completed");

    // Results cross levels: the nested plan's first leaf gets the
    // translation; the step after the nested plan gets its last leaf's
    // output. Each envelope says where it sits.
    let translation_task = view["subtasks"][0]["task_id"].as_str().unwrap();
    let first = envelope_of(&stack, &events, 1);
    assert_eq!(first.path.as_deref(), Some("1.0"));
    assert_eq!(first.groups, ["Digest the translation"]);
    assert_eq!(first.inputs.len(), 1);
    assert_eq!(first.inputs[0].task_id.as_deref(), Some(translation_task));
    assert_eq!(first.inputs[0].output, view["subtasks"][0]["output"].as_str().unwrap());
    let deepest = envelope_of(&stack, &events, 2);
    assert_eq!(deepest.path.as_deref(), Some("1.1.0"));
    assert_eq!(deepest.groups, ["Digest the translation", "Judge the digest"]);
    let after = envelope_of(&stack, &events, 3);
    assert_eq!(after.path.as_deref(), Some("2"));
    assert!(after.groups.is_empty());
    assert_eq!(after.inputs.len(), 1);
    assert_eq!(after.inputs[0].task_id.as_deref(), view["subtasks"][2]["task_id"].as_str());
    assert_eq!(after.inputs[0].output, view["subtasks"][2]["output"].as_str().unwrap());

    // Money: exactly each leaf's cost moved, nothing for the nested steps.
    let costs: [i64; 5] = [-1_700_000, 300_000, 400_000, 800_000, 200_000];
    for ((who, was), delta) in before.iter().zip(&start).zip(costs) {
        let now = stack.env.balance(*who).await;
        let expected = if delta < 0 { *was - U256::from(-delta) } else { *was + U256::from(delta) };
        assert_eq!(now, expected, "{who}");
    }
}

/// The root plan is level 1; five levels are accepted, six refused with the
/// reason, before anything is stored.
#[tokio::test]
async fn a_plan_nested_six_levels_deep_is_refused() {
    let stack = Stack::start().await;
    let a2 = stack.env.actors.agent(2);
    let deep = |levels: usize, label: &str| {
        let mut child = vec![step(0, "translate", "Translate", a2, 800_000, &[])];
        for level in (2..levels).rev() {
            child = vec![nested(0, &format!("level {level}"), 800_000, &[], child)];
        }
        plan(label, vec![nested(0, "level 1", 800_000, &[], child)])
    };
    let (status, body) = stack.post("/api/plans", &deep(6, "six-levels")).await;
    assert_eq!(status, 422, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("would open plan level 6; plans nest at most 5 levels deep"), "{error}");
    let (status, _) = stack.get(&format!("/api/runs/{}", Plan::id_from_label("six-levels"))).await;
    assert_eq!(status, 404, "nothing stored");

    let (status, body) = stack.post("/api/plans", &deep(5, "five-levels")).await;
    assert_eq!(status, 201, "{body}");
    let path = body["plan"]["subtasks"][0]["path"].as_str().unwrap();
    assert_eq!(path, "0.0.0.0.0");
    assert_eq!(body["nested"].as_array().unwrap().len(), 4);

    // Plans that include each other by name are a cycle, not a deep plan.
    let mut cyclic = plan("cyclic", vec![nested(0, "a", 800_000, &[], vec![])]);
    cyclic["subtasks"][0]["plan"] = json!("a");
    cyclic["plans"] = json!({
        "a": {"subtasks": [{"index": 0, "spec": "b", "cost": 800_000, "deadline_offset_secs": 3600, "plan": "b"}]},
        "b": {"subtasks": [{"index": 0, "spec": "a", "cost": 800_000, "deadline_offset_secs": 3600, "plan": "a"}]},
    });
    let (status, body) = stack.post("/api/plans", &cyclic).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("a → b → a"), "{body}");
}

/// A cancel of the root run reaches into its nested plan: the nested leaf
/// nobody accepted is cancelled and refunded, the one after it never
/// funded, the settled work stays paid.
#[tokio::test]
async fn a_cancel_cascades_into_a_nested_plan() {
    // No worker for summarizer-b (demo agent 1): the nested leaf waits.
    let stack = Stack::start_custom(Default::default(), None, &[0, 2, 3, 4]).await;
    let (a0, a1, a2) =
        (stack.env.actors.agent(0), stack.env.actors.agent(1), stack.env.actors.agent(2));
    let sponsor = stack.env.actors.sponsor.address();
    let start = stack.env.balance(sponsor).await;
    let body = plan(
        "nested-cancel",
        vec![
            step(0, "translate", "Translate to Spanish", a2, 800_000, &[]),
            nested(
                1,
                "Digest",
                700_000,
                &[0],
                vec![
                    step(0, "summarize", "Summarize", a1, 400_000, &[]),
                    step(1, "extract-entities", "Entities", a0, 300_000, &[0]),
                ],
            ),
        ],
    );
    let id = stack.run_plan(&body).await;
    stack.wait_phase(&id, 1, "created", 30).await;
    let (status, _) = stack.post(&format!("/api/runs/{id}/cancel"), &Value::Null).await;
    assert_eq!(status, 200);
    let view = stack.wait_state(&id, "cancelled", 30).await;
    let phases: Vec<&str> =
        view["subtasks"].as_array().unwrap().iter().map(|s| s["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["paid", "cancelled", "skipped"]);
    assert_eq!(view["nested"][0]["state"], "closed", "{view}");
    assert_eq!(stack.env.balance(sponsor).await, start - U256::from(800_000u64));
    let events = stack.events(&id).await;
    let cancelled = events.iter().find(|e| e["kind"] == "subtask_cancelled").unwrap();
    assert_eq!(cancelled["path"], "1.0", "{cancelled}");
    assert!(events.iter().all(|e| e["kind"] != "nested_completed"));
    assert_eq!(events.last().unwrap()["kind"], "plan_failed");
}

/// A nested plan's budget share caps its leaves' raises too: a leaf handed
/// to a pricier executor that still fits the plan's budget but not its
/// nested plan's share is refused at once (422, naming the share), and
/// nothing moves.
#[tokio::test]
async fn a_leaf_over_its_nested_plans_share_is_refused_before_funding() {
    // No worker for the sentiment agent (demo agent 3): its task expires.
    let stack = Stack::start_custom(Default::default(), None, &[0, 1, 2, 4]).await;
    let (a3, a4) = (stack.env.actors.agent(3), stack.env.actors.agent(4));
    // The extractor also offers sentiment, at 0.3 USDC.
    let word = tessera_bindings::capability::encode("sentiment-classify").unwrap();
    let registry = tessera_bindings::AgentRegistry::new(
        stack.env.deployment.agent_registry,
        &stack.env.provider,
    );
    tessera_e2e::mined(registry.addCapability(word, 300_000).from(a4)).await;
    let sponsor = stack.env.actors.sponsor.address();
    let start = stack.env.balance(sponsor).await;
    let body = plan(
        "nested-share",
        vec![nested(
            0,
            "Judge the tone",
            200_000,
            &[],
            vec![step(0, "sentiment-classify", "Classify the tone", a3, 200_000, &[])],
        )],
    );
    let id = stack.run_plan(&body).await;
    stack.wait_phase(&id, 0, "created", 30).await;
    stack.advance(3601).await;
    stack.wait_state(&id, "paused", 30).await;
    let (status, reply) =
        stack.post(&format!("/api/runs/{id}/subtasks/0/executor"), &json!({"executor": a4})).await;
    assert_eq!(status, 422, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(error.contains("nested plan `0` would cost 0.300000 USDC"), "{error}");
    assert!(error.contains("over its 0.200000 USDC share"), "{error}");
    let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
    assert_eq!(view["state"], "paused");
    assert_eq!(view["subtasks"][0]["attempt"], 0, "never funded again");
    assert_eq!(stack.env.balance(sponsor).await, start, "nothing moved");
}

/// Issue 28's plan: 0 translate; 1 a nested plan {1.0 entities, 1.1
/// sentiment}; 2 sentiment; 3 summarize after 1 and 2 when root step 2's
/// score is at least -1; a checkpoint after root step 2. The checkpoint
/// follows root step 2 (the run's sub-task 3), not the nested 1.1, and the
/// condition reads it; the view writes the condition by step path.
#[tokio::test]
async fn references_in_a_nested_plan_mean_the_step_the_author_numbered() {
    let stack = Stack::start().await;
    let (a0, a1, a2, a3) = (
        stack.env.actors.agent(0),
        stack.env.actors.agent(1),
        stack.env.actors.agent(2),
        stack.env.actors.agent(3),
    );
    let mut summarize = step(3, "summarize", "Summarize the digest", a1, 400_000, &[1, 2]);
    summarize["when"] = json!("out[2].score >= -1");
    let mut body = plan(
        "nested-references",
        vec![
            step(0, "translate", "Translate the article to French", a2, 800_000, &[]),
            nested(
                1,
                "Digest the translation",
                500_000,
                &[0],
                vec![
                    step(0, "extract-entities", "List the entities", a0, 300_000, &[]),
                    step(1, "sentiment-classify", "Classify the tone", a3, 200_000, &[]),
                ],
            ),
            step(2, "sentiment-classify", "Classify the translation's tone", a3, 200_000, &[0]),
            summarize,
        ],
    );
    body["checkpoints"] = json!([{"name": "tone", "after": [2]}]);
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "paused", 90).await;
    assert_eq!(view["gates"]["tone"]["state"], "reached", "{view:#}");
    let t = &view["plan"]["subtasks"];
    assert_eq!((&t[3]["path"], &t[3]["capability"]), (&json!("2"), &json!("sentiment-classify")));
    assert_eq!(view["plan"]["checkpoints"][0]["after"], json!([3]), "root step 2 is sub-task 3");
    assert_eq!(t[4]["when"], "out[3].score >= -1", "the condition reads root step 2");
    assert_eq!(view["conditions"], json!({"3": "out[2].score >= -1"}), "shown by step path");
    assert_eq!(view["subtasks"][3]["phase"], "paid");
    assert_eq!(view["subtasks"][4]["phase"], "waiting", "summarize is held at the checkpoint");
    let url = format!("{}/api/runs/{id}/events", stack.api);
    let events = read_sse_until(&stack.http, &url, "plan_paused").await;
    let reached: Vec<&Value> =
        events.iter().filter(|e| e["kind"] == "checkpoint_reached").collect();
    assert_eq!(reached[0]["after"], json!([3]), "{reached:#?}");
    assert!(!reached[0]["outputs"]["3"].as_str().unwrap_or_default().is_empty(), "{reached:#?}");

    let (status, _) = stack
        .post(&format!("/api/runs/{id}/checkpoints/tone"), &json!({"decision": "approve"}))
        .await;
    assert_eq!(status, 202);
    let view = stack.wait_state(&id, "completed", 90).await;
    let phases: Vec<&str> =
        view["subtasks"].as_array().unwrap().iter().map(|t| t["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["paid"; 5], "root step 2's score passes the condition: {view:#}");
}

/// A nested step's `when` holds for its whole child plan: false, every leaf
/// is skipped and never funded; what follows runs on the rest.
#[tokio::test]
async fn a_nested_steps_false_condition_skips_its_whole_plan_unfunded() {
    let stack = Stack::start().await;
    let (a0, a1, a3, a4) = (
        stack.env.actors.agent(0),
        stack.env.actors.agent(1),
        stack.env.actors.agent(3),
        stack.env.actors.agent(4),
    );
    let sponsor = stack.env.actors.sponsor.address();
    let before = stack.env.balance(sponsor).await;
    let mut group = nested(
        1,
        "Digest when the tone is off the scale",
        700_000,
        &[0],
        vec![
            step(0, "extract-entities", "List the entities", a0, 300_000, &[]),
            step(1, "summarize", "Summarize them", a1, 400_000, &[0]),
        ],
    );
    group["when"] = json!("out[0].score > 100");
    group["recovery"] = json!({"on_decline": "retry(2)"});
    let body = plan(
        "nested-condition",
        vec![
            step(0, "sentiment-classify", "Classify the tone", a3, 200_000, &[]),
            group,
            step(2, "extract-entities", "List the article's entities", a4, 300_000, &[0, 1]),
        ],
    );
    let id = stack.run_plan(&body).await;
    let view = stack.wait_state(&id, "completed", 90).await;
    let phases: Vec<&str> =
        view["subtasks"].as_array().unwrap().iter().map(|t| t["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["paid", "skipped", "skipped", "paid"], "{view:#}");
    assert_eq!(view["plan"]["groups"][0]["when"], "out[0].score > 100");
    assert_eq!(view["plan"]["subtasks"][2]["recovery"]["on_decline"], "retry(2)");
    let events = stack.events(&id).await;
    let skipped: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subtask_skipped").collect();
    assert_eq!(skipped.len(), 2, "{skipped:#?}");
    assert_eq!(skipped[0]["index"], 1);
    assert!(
        skipped[0]["reason"].as_str().unwrap().contains("of nested step 1 is false"),
        "{skipped:#?}"
    );
    let created: Vec<&Value> =
        events.iter().filter(|e| e["kind"] == "subtask_created").map(|e| &e["index"]).collect();
    assert_eq!(created, [&json!(0), &json!(3)], "the nested plan's leaves are never funded");
    assert_eq!(before - stack.env.balance(sponsor).await, U256::from(500_000u64));
}
