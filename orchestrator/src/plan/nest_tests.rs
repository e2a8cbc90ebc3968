//! Nested plans flattened: paths, edges across levels, limits, and
//! references kept in the author's numbering.

use alloy::primitives::{Address, B256};
use serde_json::json;

use super::*;

fn leaf(index: u32, capability: &str, deps: &[u32]) -> serde_json::Value {
    json!({"index": index, "capability": capability, "spec": format!("{capability} {index}"),
           "executor": Address::repeat_byte(0xaa), "cost": 100,
           "deadline_offset_secs": 3600, "depends_on": deps})
}

fn nested(index: u32, deps: &[u32], child: serde_json::Value, cost: u64) -> serde_json::Value {
    json!({"index": index, "spec": format!("group {index}"), "cost": cost,
           "deadline_offset_secs": 3600, "depends_on": deps, "plan": child})
}

fn file(subtasks: Vec<serde_json::Value>, plans: serde_json::Value) -> String {
    json!({"version": 1, "id": B256::repeat_byte(1), "budget": 10_000, "review": "auto",
           "subtasks": subtasks, "plans": plans})
    .to_string()
}

fn paths(p: &Plan) -> Vec<String> {
    p.subtasks.iter().map(|t| p.path_of(t.index).to_string()).collect()
}

#[test]
fn paths_read_and_write_as_dotted_indexes() {
    let p: StepPath = "2.1.0".parse().unwrap();
    assert_eq!(p.segments(), [2, 1, 0]);
    assert_eq!(p.to_string(), "2.1.0");
    assert!(p.is_inside(&"2".parse().unwrap()));
    assert!(p.is_inside(&"2.1".parse().unwrap()));
    assert!(!p.is_inside(&p));
    assert!(!p.is_inside(&"1".parse().unwrap()));
    assert_eq!(p.enclosing().map(|e| e.to_string()).collect::<Vec<_>>(), ["2", "2.1"]);
    for bad in ["", "1.", ".1", "01", "1..2", "a", "-1", "1.2.3.4.5.6.7.8.9", "99999999999"] {
        assert!(bad.parse::<StepPath>().is_err(), "{bad:?}");
    }
}

#[test]
fn a_nested_step_becomes_its_leaves_with_edges_across_levels() {
    // 0 → [1: 0 → 1] → 2, and 3 independent.
    let child = json!({"subtasks": [leaf(0, "translate", &[]), leaf(1, "summarize", &[0])]});
    let text = file(
        vec![
            leaf(0, "extract", &[]),
            nested(1, &[0], child, 500),
            leaf(2, "sentiment", &[1]),
            leaf(3, "summarize", &[]),
        ],
        json!({}),
    );
    let p = Plan::from_json(&text).unwrap();
    assert_eq!(paths(&p), ["0", "1.0", "1.1", "2", "3"]);
    let deps: Vec<Vec<u32>> = p.subtasks.iter().map(|t| t.depends_on.clone()).collect();
    // The child's first step waits for what the nested step waited for;
    // the dependant of the nested step waits for the child's last step.
    assert_eq!(deps, [vec![], vec![0], vec![1], vec![2], vec![]]);
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].path.to_string(), "1");
    assert_eq!(p.groups[0].budget, Usdc::from_base_units(500));
    assert_eq!(p.depth(), 2);
    assert_eq!(p.members(&p.groups[0].path), [1, 2]);
    // The flattened form is itself a plan file, read back unchanged.
    let again = Plan::from_json(&serde_json::to_string(&p).unwrap()).unwrap();
    assert_eq!(again, p);
    again.validate_shape().unwrap();
}

#[test]
fn a_child_plan_with_parallel_last_steps_hands_both_on() {
    let child = json!({"subtasks": [leaf(0, "translate", &[]), leaf(1, "sentiment", &[])]});
    let text = file(vec![nested(0, &[], child, 300), leaf(1, "summarize", &[0])], json!({}));
    let p = Plan::from_json(&text).unwrap();
    assert_eq!(paths(&p), ["0.0", "0.1", "1"]);
    assert_eq!(p.subtask(2).unwrap().depends_on, [0, 1]);
}

#[test]
fn named_plans_are_reused_and_cycles_refused() {
    let inner = json!({"subtasks": [leaf(0, "translate", &[])], "review": "manual"});
    let text = file(
        vec![nested(0, &[], json!("inner"), 200), nested(1, &[0], json!("inner"), 200)],
        json!({"inner": inner}),
    );
    let p = Plan::from_json(&text).unwrap();
    assert_eq!(paths(&p), ["0.0", "1.0"]);
    assert_eq!(p.subtask(1).unwrap().depends_on, [0]);
    assert_eq!(p.review_of(0), ReviewMode::Manual);
    assert_ne!(p.groups[0].plan_id(p.id), p.groups[1].plan_id(p.id));

    let a = json!({"subtasks": [nested(0, &[], json!("b"), 100)]});
    let b = json!({"subtasks": [nested(0, &[], json!("a"), 100)]});
    let text = file(vec![nested(0, &[], json!("a"), 100)], json!({"a": a, "b": b}));
    let err = Plan::from_json(&text).unwrap_err();
    assert_eq!(err, PlanError::NestingCycle(vec!["a".into(), "b".into(), "a".into()]));
    assert!(err.to_string().contains("a → b → a"), "{err}");

    let text = file(vec![nested(0, &[], json!("missing"), 100)], json!({}));
    assert!(matches!(Plan::from_json(&text), Err(PlanError::UnknownPlan { .. })));
    let text = file(vec![leaf(0, "translate", &[])], json!({"spare": inner}));
    assert_eq!(Plan::from_json(&text), Err(PlanError::UnusedPlans(vec!["spare".into()])));
}

/// A chain of plans `levels` deep, one leaf at the bottom.
fn deep(levels: usize) -> String {
    let mut child = json!({"subtasks": [leaf(0, "translate", &[])]});
    for _ in 2..levels {
        child = json!({"subtasks": [nested(0, &[], child, 100)]});
    }
    file(vec![nested(0, &[], child, 100)], json!({}))
}

#[test]
fn nesting_is_bounded_by_the_configured_depth() {
    let five = Plan::from_json(&deep(5)).unwrap();
    assert_eq!(five.depth(), 5);
    assert_eq!(paths(&five), ["0.0.0.0.0"]);
    let err = Plan::from_json(&deep(6)).unwrap_err();
    assert_eq!(err, PlanError::NestingTooDeep { path: "0.0.0.0.0".into(), depth: 6, max: 5 });
    assert!(err.to_string().contains("at most 5 levels"), "{err}");
    Plan::from_json_nested(&deep(6), 6).unwrap();
    // No configuration lifts the hard limit.
    let err = Plan::from_json_nested(&deep(9), 100).unwrap_err();
    assert!(matches!(err, PlanError::NestingTooDeep { max: MAX_NESTING_DEPTH, .. }), "{err}");
}

#[test]
fn a_level_is_checked_like_a_plan_and_errors_say_where() {
    let child = json!({"subtasks": [leaf(0, "translate", &[1]), leaf(1, "summarize", &[0])]});
    let err = Plan::from_json(&file(vec![nested(0, &[], child, 100)], json!({}))).unwrap_err();
    assert!(err.to_string().starts_with("in nested plan `0`: dependency cycle"), "{err}");
    let mut with_executor = nested(0, &[], json!({"subtasks": [leaf(0, "translate", &[])]}), 100);
    with_executor["executor"] = json!(Address::repeat_byte(1));
    let err = Plan::from_json(&file(vec![with_executor], json!({}))).unwrap_err();
    assert!(err.to_string().contains("cannot have an executor"), "{err}");
}

#[test]
fn budget_shares_cap_their_leaves() {
    let child = json!({"subtasks": [leaf(0, "translate", &[]), leaf(1, "summarize", &[0])]});
    let p = Plan::from_json(&file(vec![nested(0, &[], child, 150)], json!({}))).unwrap();
    let err = p.validate_group_budgets().unwrap_err();
    assert!(matches!(err, PlanError::GroupOverBudget { ref path, .. } if path == "0"), "{err}");
    assert!(err.to_string().contains("by 0.000050 USDC"), "{err}");
}

#[test]
fn hand_written_flat_forms_are_checked() {
    let child = json!({"subtasks": [leaf(0, "translate", &[])]});
    let p = Plan::from_json(&file(vec![nested(0, &[], child, 100)], json!({}))).unwrap();
    let mut orphan = p.clone();
    orphan.groups.clear();
    assert!(matches!(orphan.validate_shape(), Err(PlanError::InvalidNesting(_))));
    let mut pathless = p.clone();
    pathless.subtasks[0].path = None;
    assert!(matches!(pathless.validate_shape(), Err(PlanError::InvalidNesting(_))));
    let mut empty = p.clone();
    empty.groups.push(Group { path: "7".parse().unwrap(), ..p.groups[0].clone() });
    assert!(matches!(empty.validate_shape(), Err(PlanError::InvalidNesting(_))));
    p.validate_shape().unwrap();
}

/// The plan of issue 28: 0 translate; 1 a nested plan {1.0 entities, 1.1
/// sentiment}; 2 sentiment; 3 summarize after 1 and 2 when root step 2's
/// score is at least -1; a checkpoint after root step 2.
fn issue_plan() -> Plan {
    let child = json!({"subtasks": [leaf(0, "entities", &[]), leaf(1, "sentiment", &[])]});
    let mut summarize = leaf(3, "summarize", &[1, 2]);
    summarize["when"] = json!("out[2].score >= -1");
    let mut text: serde_json::Value = serde_json::from_str(&file(
        vec![
            leaf(0, "translate", &[]),
            nested(1, &[0], child, 200),
            leaf(2, "sentiment", &[0]),
            summarize,
        ],
        json!({}),
    ))
    .unwrap();
    text["checkpoints"] = json!([{"name": "tone", "after": [2]}]);
    Plan::from_json(&text.to_string()).unwrap()
}

#[test]
fn references_mean_the_step_the_author_numbered_at_its_level() {
    let p = issue_plan();
    assert_eq!(paths(&p), ["0", "1.0", "1.1", "2", "3"]);
    // Root step 2 is the run's sub-task 3; summarize is sub-task 4.
    assert_eq!(p.subtask(3).unwrap().capability, "sentiment");
    assert_eq!(p.checkpoints[0].after, [3], "the checkpoint follows root step 2");
    let summarize = p.subtask(4).unwrap();
    assert_eq!(summarize.depends_on, [1, 2, 3]);
    assert_eq!(summarize.when.as_deref(), Some("out[3].score >= -1"));
    // The condition reads root step 2's result, not nested step 1.1's.
    let condition = crate::condition::Condition::parse(summarize.when.as_deref().unwrap()).unwrap();
    assert_eq!(condition.references(), [3]);
    let results =
        std::collections::HashMap::from([(2, json!({"score": -5})), (3, json!({"score": 0.5}))]);
    assert!(condition.eval(&results));
    // Shown by step path, it reads as written.
    assert_eq!(p.condition_by_path(summarize.when.as_deref().unwrap()), "out[2].score >= -1");
    p.validate_shape().unwrap();
    // The flattened form reads back unchanged.
    assert_eq!(Plan::from_json(&serde_json::to_string(&p).unwrap()).unwrap(), p);
}

#[test]
fn child_plans_number_their_own_references() {
    // Child plan: 0 entities; 1 sentiment after 0, when out[0] found any;
    // its checkpoint after its own step 1.
    let mut judge = leaf(1, "sentiment", &[0]);
    judge["when"] = json!("len(out[0].entities) > 0");
    let child = json!({"subtasks": [leaf(0, "entities", &[]), judge],
                       "checkpoints": [{"name": "inner", "after": [1]}]});
    let mut last = leaf(2, "summarize", &[1]);
    // A nested step's output is the one step its child plan ends in.
    last["when"] = json!("out[1].score > 0");
    let text = file(vec![leaf(0, "translate", &[]), nested(1, &[0], child, 200), last], json!({}));
    let p = Plan::from_json(&text).unwrap();
    assert_eq!(paths(&p), ["0", "1.0", "1.1", "2"]);
    assert_eq!(p.subtask(2).unwrap().when.as_deref(), Some("len(out[1].entities) > 0"));
    assert_eq!(p.subtask(3).unwrap().when.as_deref(), Some("out[2].score > 0"));
    assert_eq!(p.condition_by_path("len(out[1].entities) > 0"), "len(out[1.0].entities) > 0");
    assert_eq!(p.checkpoints.len(), 1);
    assert_eq!(
        (p.checkpoints[0].name.as_str(), p.checkpoints[0].after.as_slice()),
        ("inner", &[2][..])
    );
    p.validate_shape().unwrap();

    // A nested step whose plan ends in two steps has no one output to read.
    let two = json!({"subtasks": [leaf(0, "entities", &[]), leaf(1, "sentiment", &[])]});
    let mut last = leaf(1, "summarize", &[0]);
    last["when"] = json!("out[0].score > 0");
    let err = Plan::from_json(&file(vec![nested(0, &[], two.clone(), 200), last], json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, PlanError::ConditionReadsNested { path, read, ends: 2 }
        if path == "1" && read == "0"),
        "{err}"
    );
    // A checkpoint after it follows both; one after a step that is not
    // there is refused where it is written.
    let mut file2: serde_json::Value = serde_json::from_str(&file(
        vec![nested(0, &[], two, 200), leaf(1, "summarize", &[0])],
        json!({}),
    ))
    .unwrap();
    file2["checkpoints"] = json!([{"name": "both", "after": [0]}]);
    assert_eq!(Plan::from_json(&file2.to_string()).unwrap().checkpoints[0].after, [0, 1]);
    let inner_bad = json!({"subtasks": [leaf(0, "entities", &[])],
                           "checkpoints": [{"name": "x", "after": [4]}]});
    let err = Plan::from_json(&file(vec![nested(0, &[], inner_bad, 100)], json!({}))).unwrap_err();
    assert!(
        err.to_string().starts_with("in nested plan `0`: checkpoint `x`: there is no sub-task 4"),
        "{err}"
    );
    // A condition reads only what its step depends on, at its level.
    let mut stray = leaf(1, "sentiment", &[]);
    stray["when"] = json!("out[0].x");
    let child = json!({"subtasks": [leaf(0, "entities", &[]), stray]});
    let err = Plan::from_json(&file(vec![nested(0, &[], child, 200)], json!({}))).unwrap_err();
    assert!(
        err.to_string().starts_with("in nested plan `0`: sub-task 1: its condition reads out[0]"),
        "{err}"
    );
}

#[test]
fn a_nested_steps_condition_and_recovery_hold_for_its_whole_plan() {
    use super::super::{Policy, RecoveryOverride};
    // 0 sentiment; 1 a nested plan {1.0 entities; 1.1 summarize after 1.0
    // with its own on_expiry} when out[0].score < 0, retrying what nobody
    // accepts and reassigning what is not delivered.
    let mut own = leaf(1, "summarize", &[0]);
    own["recovery"] = json!({"on_expiry": "cancel"});
    let child = json!({"subtasks": [leaf(0, "entities", &[]), own]});
    let mut group = nested(1, &[0], child, 200);
    group["when"] = json!("out[0].score < 0");
    group["recovery"] = json!({"on_decline": "retry(2)", "on_expiry": "reassign"});
    let p = Plan::from_json(&file(vec![leaf(0, "sentiment", &[]), group], json!({}))).unwrap();
    assert_eq!(paths(&p), ["0", "1.0", "1.1"]);
    assert_eq!(p.groups[0].when.as_deref(), Some("out[0].score < 0"));
    // Every leaf of the group runs under the nested step's condition.
    for i in [1, 2] {
        let conditions = p.conditions_of(i);
        assert_eq!(conditions.len(), 1, "leaf {i}");
        assert_eq!(
            (conditions[0].0.to_string(), conditions[0].1.as_str()),
            ("1".into(), "out[0].score < 0")
        );
    }
    assert!(p.conditions_of(0).is_empty());
    // Its recovery is each leaf's default; a leaf's own policy wins.
    let r = |i: u32| p.recovery.with(p.subtask(i).unwrap().recovery.as_ref());
    assert_eq!((r(1).on_decline, r(1).on_expiry), (Policy::Retry(2), Policy::Reassign));
    assert_eq!((r(2).on_decline, r(2).on_expiry), (Policy::Retry(2), Policy::Cancel));
    assert_eq!(
        p.subtask(2).unwrap().recovery,
        Some(RecoveryOverride {
            on_decline: Some(Policy::Retry(2)),
            on_expiry: Some(Policy::Cancel),
            on_dispute_lost: None
        })
    );
    p.validate_shape().unwrap();
    // In the flat form, a group's condition reads only what its first
    // leaves wait for.
    let mut stray = p.clone();
    stray.groups[0].when = Some("out[2].x".into());
    let err = stray.validate_shape().unwrap_err();
    assert!(err.to_string().contains("nested plan `1`: its condition reads out[2]"), "{err}");
}
