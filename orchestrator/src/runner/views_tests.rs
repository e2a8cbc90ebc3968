//! A run view reads back as the API wrote it: what a client deserialises
//! is what the API serialised.

use serde_json::json;

use super::*;
use crate::state::{Decider, Gate, Spend};

/// A nested, high-stakes plan with a condition and a checkpoint.
fn plan() -> Plan {
    let leaf = |index: u32, cap: &str, deps: &[u32]| {
        json!({"index": index, "capability": cap, "spec": format!("do {cap}"),
               "executor": "0x00000000000000000000000000000000000000aa", "cost": 100,
               "deadline_offset_secs": 3600, "depends_on": deps})
    };
    let file = json!({"version": 1, "id": format!("0x{}", "11".repeat(32)), "budget": 10_000,
        "review": "manual",
        "checkpoints": [{"name": "tone", "after": [2], "timeout_secs": 600}],
        "recovery": {"on_expiry": "reassign"},
        "subtasks": [leaf(0, "translate", &[]),
            {"index": 1, "spec": "Digest", "cost": 200, "deadline_offset_secs": 3600,
             "depends_on": [0], "when": "len(out[0].text) > 0",
             "plan": {"subtasks": [leaf(0, "entities", &[]), leaf(1, "sentiment", &[])]}},
            leaf(2, "sentiment", &[0])]});
    Plan::from_json(&file.to_string()).expect("the plan parses")
}

#[test]
fn a_run_view_reads_back_as_the_api_wrote_it() {
    let plan = plan();
    let id = plan.id.to_string();
    let row = |idx: u32, phase: &str, output: Option<&str>| SubtaskRow {
        idx,
        attempt: 1,
        executor: "0x00000000000000000000000000000000000000aa".into(),
        phase: phase.into(),
        task_id: Some(format!("{}", 40 + idx)),
        result_uri: output.map(|o| format!("data:,{o}")),
        output: output.map(str::to_owned),
    };
    let subtasks = vec![row(0, "paid", Some("Bonjour")), row(1, "created", None)];
    let mut gates = Gates::new();
    gates.insert("tone".into(), Gate::Reached { at: 5, chain_at: Some(7) });
    gates.insert("legal".into(), Gate::Rejected { at: 9, by: Decider::Timeout });
    let view = RunView {
        run: RunRow {
            id: id.clone(),
            plan_json: serde_json::to_string(&plan).unwrap(),
            state: RunState::Paused.as_str().into(),
            reason: Some("sub-task 1 expired".into()),
            pause_reason: Some("sub-task 1 expired".into()),
            close_reason: None,
            created_at: 1,
            updated_at: 2,
            paused_at: Some(3),
            stakes: Stakes::High.as_str().into(),
            classification: Some("{}".into()),
        },
        decisions: vec![DecisionRecord {
            seq: 1,
            idx: Some(1),
            kind: crate::state::DecisionKind::Retry,
            arg: None,
            created_at: 4,
            done_at: Some(5),
            outcome: Some("failed: refused".into()),
            ok: Some(false),
            error: Some("refused".into()),
            revert: Some("TaskEscrowTooEarly".into()),
        }],
        total_cost: plan.total_cost().unwrap(),
        estimated_duration_secs: plan.estimated_duration().unwrap().as_secs(),
        spend: Spend {
            committed: Usdc::from_base_units(300),
            paid: Usdc::from_base_units(100),
            refunded: Usdc::ZERO,
        },
        confirmation: Some(Orchestrator::confirmation_terms(&plan).unwrap()),
        nested: NestedView::of(&plan, &crate::state::RunId::from(id.as_str()), &subtasks, false)
            .unwrap(),
        conditions: conditions_by_path(&plan),
        gates,
        declines: vec![json!({"kind": "subtask_declined", "index": 1, "attempt": 0,
                              "reason": "busy"})],
        subtasks,
        plan,
    };
    assert!(!view.nested.is_empty() && !view.conditions.is_empty(), "every part is shown");
    let text = serde_json::to_string(&view).unwrap();
    let back: RunView = serde_json::from_str(&text).unwrap();
    assert_eq!(back, view);
    assert_eq!(serde_json::to_string(&back).unwrap(), text, "and writes the same JSON again");
    // A flat, low-stakes view leaves its empty parts out, and still reads.
    let flat = RunView {
        confirmation: None,
        nested: Vec::new(),
        conditions: std::collections::BTreeMap::new(),
        gates: Gates::new(),
        declines: Vec::new(),
        ..view
    };
    let text = serde_json::to_value(&flat).unwrap();
    for absent in ["confirmation", "nested", "conditions", "gates", "declines"] {
        assert!(text.get(absent).is_none(), "{absent} is left out");
    }
    assert_eq!(serde_json::from_value::<RunView>(text).unwrap(), flat);
}
