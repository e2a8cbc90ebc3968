//! The step function driven without a chain: typed snapshots in, actions out.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy::primitives::{Address, B256};
use tessera_bindings::{task::Status, usdc::Usdc};

use super::*;
use crate::{
    plan::SubTask,
    state::{DecisionKind, Outcome, Pending},
};

const EXEC: Address = Address::repeat_byte(0xee);

fn plan(review: ReviewMode, deps: &[&[u32]]) -> Plan {
    Plan {
        subtasks: deps
            .iter()
            .enumerate()
            .map(|(i, d)| SubTask {
                index: i as u32,
                capability: "summarize".into(),
                spec: format!("step {i}"),
                executor: Some(EXEC),
                cost: Usdc::from_base_units(1_000),
                deadline_offset_secs: 100,
                depends_on: d.to_vec(),
                ..Default::default()
            })
            .collect(),
        review_window_secs: 60,
        ..Plan::new(B256::repeat_byte(9), Usdc::from_whole(1), review)
    }
}

fn rows(phases: &[Phase]) -> BTreeMap<u32, Progress> {
    phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut row = Progress::waiting(i as u32, EXEC);
            row.phase = *p;
            if p.status().is_some() {
                row.task_id = Some(format!("{}", 100 + i));
            }
            if p.is_paid() || *p == Phase::Chain(Status::Completed) {
                row.output = Some(format!("output {i}"));
            }
            (i as u32, row)
        })
        .collect()
}

fn on_chain(status: Status) -> OnChain {
    OnChain {
        status,
        executor: EXEC,
        deadline: 1_000,
        updated_at: 500,
        review_window: 60,
        dispute_window: 60,
        accepted: false,
        offered_block: 0,
        last_block: 0,
    }
}

fn chain_of(rows: &BTreeMap<u32, Progress>) -> HashMap<u32, OnChain> {
    rows.iter().filter_map(|(i, r)| Some((*i, on_chain(r.phase.status()?)))).collect()
}

fn step_at(state: RunState, plan: &Plan, phases: &[Phase], now: u64) -> Vec<Action> {
    let rows = rows(phases);
    let chain = chain_of(&rows);
    steps(&Snapshot {
        state,
        plan,
        rows: &rows,
        chain: &chain,
        now,
        head_block: 0,
        results: &HashMap::new(),
        held: &BTreeSet::new(),
        unreadable: &BTreeMap::new(),
    })
    .unwrap()
}

const W: Phase = Phase::Waiting;
const fn c(s: Status) -> Phase {
    Phase::Chain(s)
}

#[test]
fn a_sub_task_starts_once_its_dependencies_are_paid_with_their_outputs() {
    let p = plan(ReviewMode::Auto, &[&[], &[0], &[0, 1]]);
    assert_eq!(
        step_at(RunState::Running, &p, &[W, W, W], 600),
        [Action::Create { index: 0, inputs: vec![] }]
    );
    let actions = step_at(RunState::Running, &p, &[c(Status::Paid), W, W], 600);
    let [Action::Create { index: 1, inputs }] = actions.as_slice() else { panic!("{actions:?}") };
    assert_eq!(inputs.len(), 1);
    assert_eq!((inputs[0].from, inputs[0].output.as_str()), (0, "output 0"));
    assert_eq!(inputs[0].task_id.as_deref(), Some("100"));
    // A split pays too; a paused run starts nothing.
    assert_eq!(
        step_at(RunState::Running, &p, &[c(Status::Split), c(Status::Paid), W], 600).len(),
        1
    );
    assert!(step_at(RunState::Paused, &p, &[W, W, W], 600).is_empty());
}

#[test]
fn delivered_work_is_approved_in_auto_mode_and_released_after_a_silent_review() {
    let auto = plan(ReviewMode::Auto, &[&[]]);
    let done = [c(Status::Completed)];
    assert_eq!(
        step_at(RunState::Running, &auto, &done, 501),
        [Action::Send { index: 0, call: Call::Approve }]
    );
    let manual = plan(ReviewMode::Manual, &[&[]]);
    assert!(step_at(RunState::Running, &manual, &done, 560).is_empty(), "inside the window");
    assert_eq!(
        step_at(RunState::Running, &manual, &done, 561),
        [Action::Send { index: 0, call: Call::Release }]
    );
}

#[test]
fn deadlines_and_unruled_disputes_take_the_money_back() {
    let p = plan(ReviewMode::Manual, &[&[], &[], &[]]);
    let phases = [c(Status::Created), c(Status::Accepted), c(Status::Disputed)];
    assert!(step_at(RunState::Running, &p, &phases, 560).is_empty());
    assert_eq!(
        step_at(RunState::Running, &p, &phases, 1_001),
        [
            Action::Send { index: 0, call: Call::RefundExpired },
            Action::Send { index: 1, call: Call::RefundExpired },
            Action::Send { index: 2, call: Call::ClaimDefault },
        ]
    );
}

#[test]
fn a_stuck_sub_task_pauses_the_run_and_a_refund_closes_it() {
    let p = plan(ReviewMode::Auto, &[&[], &[]]);
    let actions = step_at(RunState::Running, &p, &[c(Status::Expired), W], 600);
    let [Action::Pause { index: 0, attempt: 0, reason }, Action::Create { index: 1, .. }] =
        actions.as_slice()
    else {
        panic!("{actions:?}")
    };
    assert!(reason.contains("expired"), "{reason}");
    assert_eq!(
        step_at(RunState::Running, &p, &[c(Status::Refunded), c(Status::Paid)], 600),
        [Action::Close(CloseReason::DisputeRefunded)]
    );
}

#[test]
fn closing_cancels_what_nobody_accepted_and_skips_what_never_started() {
    let p = plan(ReviewMode::Auto, &[&[], &[], &[0]]);
    assert_eq!(
        step_at(RunState::Cancelling, &p, &[c(Status::Created), c(Status::Accepted), W], 600),
        [Action::Send { index: 0, call: Call::Cancel }, Action::Skip(2)]
    );
}

#[test]
fn a_missing_row_or_record_is_an_error_not_a_panic() {
    let p = plan(ReviewMode::Auto, &[&[], &[]]);
    let mut rows = rows(&[c(Status::Created), W]);
    let chain = HashMap::new();
    let s = Snapshot {
        state: RunState::Running,
        plan: &p,
        rows: &rows,
        chain: &chain,
        now: 1,
        head_block: 0,
        results: &HashMap::new(),
        held: &BTreeSet::new(),
        unreadable: &BTreeMap::new(),
    };
    assert!(matches!(steps(&s), Err(RunError::Inconsistent { index: 0, .. })));
    rows.remove(&1);
    let chain = chain_of(&rows);
    let s = Snapshot {
        state: RunState::Running,
        plan: &p,
        rows: &rows,
        chain: &chain,
        now: 1,
        head_block: 0,
        results: &HashMap::new(),
        held: &BTreeSet::new(),
        unreadable: &BTreeMap::new(),
    };
    assert!(matches!(steps(&s), Err(RunError::Inconsistent { index: 1, .. })));
}

fn decision(kind: DecisionKind, index: Option<u32>, arg: Option<&str>) -> Pending {
    Pending { seq: 1, index, kind, arg: arg.map(str::to_owned) }
}

fn resolve_at(phase: Phase, d: &Pending) -> Resolution {
    let p = plan(ReviewMode::Manual, &[&[]]);
    let rows = rows(&[phase]);
    let chain = chain_of(&rows);
    resolve(
        &Snapshot {
            state: RunState::Running,
            plan: &p,
            rows: &rows,
            chain: &chain,
            now: 700,
            head_block: 0,
            results: &HashMap::new(),
            held: &BTreeSet::new(),
            unreadable: &BTreeMap::new(),
        },
        d,
    )
    .unwrap()
}

#[test]
fn decisions_resolve_by_phase() {
    use DecisionKind as D;
    assert_eq!(resolve_at(W, &decision(D::Cancel, None, None)), Resolution::Close);
    let Resolution::Send { call: Call::Approve, outcome, .. } =
        resolve_at(c(Status::Completed), &decision(D::Approve, Some(0), None))
    else {
        panic!()
    };
    assert_eq!(outcome.to_string(), "approved");
    assert!(matches!(
        resolve_at(c(Status::Completed), &decision(D::Dispute, Some(0), Some("thin"))),
        Resolution::Send { call: Call::Dispute(r), .. } if r == "thin"
    ));
    let other = Address::repeat_byte(1);
    let Resolution::Send { call, executor, .. } =
        resolve_at(c(Status::Accepted), &decision(D::Executor, Some(0), Some(&other.to_string())))
    else {
        panic!()
    };
    assert_eq!(call, Call::Reassign { executor: other, deadline: 800 });
    assert_eq!(executor, Some(other));
    // A retry keeps the executor on chain.
    assert!(matches!(
        resolve_at(c(Status::Created), &decision(D::Retry, Some(0), None)),
        Resolution::Send { call: Call::Reassign { executor: EXEC, .. }, .. }
    ));
    let Resolution::Requeue(next) =
        resolve_at(c(Status::Expired), &decision(D::Retry, Some(0), None))
    else {
        panic!()
    };
    assert_eq!((next.attempt, next.phase, next.task_id), (1, Phase::Waiting, None));
    let Resolution::Ignore(why) = resolve_at(c(Status::Paid), &decision(D::Approve, Some(0), None))
    else {
        panic!()
    };
    let why = Outcome::Ignored(why).to_string();
    assert!(why.contains("approve does not apply to a sub-task that is paid"), "{why}");
}

#[test]
fn a_paused_runs_sub_task_not_created_is_queued_again_for_the_executor_decided() {
    use DecisionKind as D;
    let p = plan(ReviewMode::Auto, &[&[]]);
    let rows = rows(&[W]);
    let chain = chain_of(&rows);
    let (results, held) = (HashMap::new(), BTreeSet::new());
    let at = |state: RunState, d: &Pending| {
        let s = Snapshot {
            state,
            plan: &p,
            rows: &rows,
            chain: &chain,
            now: 700,
            head_block: 0,
            results: &results,
            held: &held,
            unreadable: &BTreeMap::new(),
        };
        resolve(&s, d).unwrap()
    };
    let other = Address::repeat_byte(1);
    let change = decision(D::Executor, Some(0), Some(&other.to_string()));
    let Resolution::Requeue(next) = at(RunState::Paused, &change) else { panic!() };
    assert_eq!((next.executor, next.attempt, next.phase), (other, 0, Phase::Waiting));
    let Resolution::Requeue(same) = at(RunState::Paused, &decision(D::Retry, Some(0), None)) else {
        panic!()
    };
    assert_eq!(same, rows[&0]);
    // Running, the step creates it anyway: nothing to decide.
    assert!(matches!(at(RunState::Running, &change), Resolution::Ignore(_)));
}

#[test]
fn runs_end_on_stored_progress() {
    let paid = rows(&[c(Status::Paid), c(Status::Split)]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Running, None, &paid, None, 10, false), Some(Ending::Completed));
    let closing = rows(&[c(Status::Paid), W]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Running, None, &closing, None, 10, false), None);
    assert_eq!(
        ending(RunState::Cancelling, Some(&CloseReason::Cancelled), &closing, None, 10, false),
        Some(Ending::Closed { state: RunState::Cancelled, reason: CloseReason::Cancelled })
    );
    assert_eq!(
        ending(
            RunState::Cancelling,
            Some(&CloseReason::DisputeRefunded),
            &closing,
            None,
            10,
            false
        ),
        Some(Ending::Closed { state: RunState::Failed, reason: CloseReason::DisputeRefunded })
    );
    let in_flight = rows(&[c(Status::Accepted), W]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Cancelling, None, &in_flight, None, 10, false), None);
    let stuck = rows(&[c(Status::Expired)]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Paused, None, &stuck, Some(5), 10, false), None);
    assert_eq!(ending(RunState::Paused, None, &stuck, Some(11), 10, false), Some(Ending::TimedOut));
    // A decision timeout near u64::MAX (`--decision-timeout-secs`) never
    // passes, and nothing overflows.
    assert_eq!(ending(RunState::Paused, None, &stuck, Some(u64::MAX), u64::MAX, false), None);
}

#[test]
fn under_auto_review_dependants_go_out_beside_their_upstreams_approval() {
    let deps: &[&[u32]] = &[&[], &[0], &[0]];
    let mut delivered = rows(&[c(Status::Completed), W, W]);
    delivered.get_mut(&0).unwrap().output = None;
    let chain = chain_of(&delivered);
    let at = |plan: &Plan, rows: &BTreeMap<u32, Progress>| {
        steps(&Snapshot {
            state: RunState::Running,
            plan,
            rows,
            chain: &chain,
            now: 600,
            head_block: 0,
            results: &HashMap::new(),
            held: &BTreeSet::new(),
            unreadable: &BTreeMap::new(),
        })
        .unwrap()
    };
    let auto = plan(ReviewMode::Auto, deps);
    // Until the result is read, nothing goes out: it is paid once read.
    assert_eq!(at(&auto, &delivered), []);
    delivered.get_mut(&0).unwrap().output = Some("output 0".into());
    let actions = at(&auto, &delivered);
    let [
        Action::Send { index: 0, call: Call::Approve },
        Action::Create { index: 1, inputs: one },
        Action::Create { index: 2, inputs: two },
    ] = actions.as_slice()
    else {
        panic!("{actions:?}")
    };
    assert_eq!((one[0].output.as_str(), two[0].output.as_str()), ("output 0", "output 0"));
    // A manual review may still dispute: dependants wait for the payment.
    let manual = plan(ReviewMode::Manual, deps);
    assert_eq!(at(&manual, &delivered), [Action::Send { index: 0, call: Call::Release }]);
}

fn snapshot_steps(
    plan: &Plan,
    rows: &BTreeMap<u32, Progress>,
    chain: &HashMap<u32, OnChain>,
    results: &HashMap<u32, serde_json::Value>,
    held: &BTreeSet<u32>,
) -> Vec<Action> {
    steps(&Snapshot {
        state: RunState::Running,
        plan,
        rows,
        chain,
        now: 600,
        head_block: 0,
        results,
        held,
        unreadable: &BTreeMap::new(),
    })
    .unwrap()
}

#[test]
fn a_condition_reads_its_upstream_results_and_skips_or_creates() {
    let mut p = plan(ReviewMode::Auto, &[&[], &[0], &[1]]);
    p.subtasks[1].when = Some("out[0].label == \"negative\" and out[0].score < -0.2".into());
    let rows = rows(&[c(Status::Paid), W, W]);
    let chain = chain_of(&rows);
    let negative = HashMap::from([(0, serde_json::json!({"label": "negative", "score": -0.5}))]);
    let positive = HashMap::from([(0, serde_json::json!({"label": "positive", "score": 0.5}))]);
    let held = BTreeSet::new();
    let actions = snapshot_steps(&p, &rows, &chain, &negative, &held);
    assert!(matches!(actions.as_slice(), [Action::Create { index: 1, .. }]), "{actions:?}");
    let actions = snapshot_steps(&p, &rows, &chain, &positive, &held);
    let [Action::Leave { index: 1, reason, condition: Some(when) }] = actions.as_slice() else {
        panic!("{actions:?}")
    };
    // A flat plan's step is skipped by its own condition, said so.
    assert_eq!(reason, &format!("its condition `{when}` is false"));
    assert_eq!(when, p.subtasks[1].when.as_ref().unwrap().as_str());
    // A missing result reads as null: the comparison is false.
    let actions = snapshot_steps(&p, &rows, &chain, &HashMap::new(), &held);
    assert!(matches!(actions.as_slice(), [Action::Leave { index: 1, .. }]), "{actions:?}");
}

#[test]
fn dependants_of_skipped_steps_follow_the_rule() {
    // 2 depends on 0 (skipped) and 1 (paid): it runs on 1's output alone.
    // 3 depends on 0 only: everything it depends on was skipped.
    let p = plan(ReviewMode::Auto, &[&[], &[], &[0, 1], &[0]]);
    let r = rows(&[Phase::Skipped, c(Status::Paid), W, W]);
    let chain = chain_of(&r);
    let actions = snapshot_steps(&p, &r, &chain, &HashMap::new(), &BTreeSet::new());
    let [Action::Create { index: 2, inputs }, Action::Leave { index: 3, reason, condition: None }] =
        actions.as_slice()
    else {
        panic!("{actions:?}")
    };
    assert_eq!(inputs.iter().map(|i| i.from).collect::<Vec<_>>(), [1]);
    assert!(reason.contains("skipped"), "{reason}");
    // Skipped by the plan, the run completes; skipped by a cancel, it closes.
    let done = [c(Status::Paid), Phase::Skipped];
    let done = rows(&done).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Running, None, &done, None, 10, false), Some(Ending::Completed));
    assert_eq!(ending(RunState::Running, None, &done, None, 10, true), None, "a gate waits");
    assert!(matches!(
        ending(RunState::Cancelling, Some(&CloseReason::Cancelled), &done, None, 10, false),
        Some(Ending::Closed { .. })
    ));
}

#[test]
fn a_checkpoint_holds_everything_downstream_until_approved() {
    use crate::{
        plan::Checkpoint,
        state::{Decider, Gate, Gates},
    };
    let mut p = plan(ReviewMode::Auto, &[&[], &[0], &[1], &[]]);
    p.checkpoints = vec![Checkpoint {
        name: "review".into(),
        after: vec![0],
        timeout_secs: None,
        on_timeout: Default::default(),
    }];
    let mut gates = Gates::new();
    assert_eq!(held(&p, &gates), BTreeSet::from([1, 2]));
    // Under auto review, the delivered upstream is approved but its
    // dependant is held back in the same step.
    let mut delivered = rows(&[c(Status::Completed), W, W, c(Status::Paid)]);
    delivered.get_mut(&0).unwrap().output = Some("output 0".into());
    let chain = chain_of(&delivered);
    let actions = snapshot_steps(&p, &delivered, &chain, &HashMap::new(), &held(&p, &gates));
    assert_eq!(actions, [Action::Send { index: 0, call: Call::Approve }]);
    assert!(reached(&p, &gates, &delivered).is_empty(), "not paid yet");
    let paid = rows(&[c(Status::Paid), W, W, c(Status::Paid)]);
    assert_eq!(reached(&p, &gates, &paid).len(), 1);
    gates.insert("review".into(), Gate::Reached { at: 1, chain_at: Some(1) });
    assert!(reached(&p, &gates, &paid).is_empty(), "reached once");
    assert_eq!(held(&p, &gates).len(), 2);
    gates.insert("review".into(), Gate::Approved { at: 2, by: Decider::Approver });
    assert!(held(&p, &gates).is_empty());
}

#[test]
fn recovery_policies_decide_what_a_stuck_or_refunded_sub_task_does() {
    use crate::plan::{DisputePolicy, Policy, RecoveryOverride};
    let mut p = plan(ReviewMode::Auto, &[&[], &[], &[]]);
    p.recovery.on_decline = Policy::Retry(2);
    p.recovery.on_expiry = Policy::Reassign;
    p.recovery.on_dispute_lost = DisputePolicy::RetryOther;
    p.subtasks[2].recovery =
        Some(RecoveryOverride { on_decline: Some(Policy::Cancel), ..Default::default() });
    let r = rows(&[c(Status::Expired), c(Status::Expired), c(Status::Cancelled)]);
    let mut chain = chain_of(&r);
    chain.get_mut(&1).unwrap().accepted = true;
    let actions = snapshot_steps(&p, &r, &chain, &HashMap::new(), &BTreeSet::new());
    assert_eq!(
        actions,
        [
            Action::Recover {
                index: 0,
                attempt: 0,
                failure: Failure::Declined,
                policy: Policy::Retry(2)
            },
            Action::Recover {
                index: 1,
                attempt: 0,
                failure: Failure::Expired,
                policy: Policy::Reassign
            },
            Action::Recover {
                index: 2,
                attempt: 0,
                failure: Failure::Declined,
                policy: Policy::Cancel
            },
        ]
    );
    let refunded = rows(&[c(Status::Refunded), c(Status::Paid), W]);
    let chain = chain_of(&refunded);
    let actions = snapshot_steps(&p, &refunded, &chain, &HashMap::new(), &BTreeSet::new());
    assert!(
        matches!(
            actions.first(),
            Some(Action::Recover {
                index: 0,
                failure: Failure::DisputeLost,
                policy: Policy::Reassign,
                ..
            })
        ),
        "{actions:?}"
    );
}

#[test]
fn a_nested_steps_condition_skips_its_whole_plan_and_its_recovery_applies_to_each_leaf() {
    use crate::plan::Policy;
    // 0 sentiment; 1 a nested plan {1.0 entities; 1.1 summarize after
    // 1.0} when out[0].score < 0, retrying what nobody accepts.
    let leaf = |index: u32, deps: &[u32]| {
        serde_json::json!({"index": index, "capability": "summarize", "spec": "s",
            "executor": EXEC, "cost": 1_000, "deadline_offset_secs": 100, "depends_on": deps})
    };
    let file = serde_json::json!({"version": 1, "id": B256::repeat_byte(9), "budget": 1_000_000,
        "subtasks": [leaf(0, &[]), {"index": 1, "spec": "group", "cost": 2_000,
            "deadline_offset_secs": 100, "depends_on": [0], "when": "out[0].score < 0",
            "recovery": {"on_decline": "retry(2)"},
            "plan": {"subtasks": [leaf(0, &[]), leaf(1, &[0])]}}]});
    let p = Plan::from_json(&file.to_string()).unwrap();
    let held = BTreeSet::new();
    let positive = HashMap::from([(0, serde_json::json!({"score": 0.5}))]);
    let negative = HashMap::from([(0, serde_json::json!({"score": -0.5}))]);
    let r = rows(&[c(Status::Paid), W, W]);
    let chain = chain_of(&r);
    let actions = snapshot_steps(&p, &r, &chain, &positive, &held);
    let [Action::Leave { index: 1, reason, condition: Some(when) }] = actions.as_slice() else {
        panic!("{actions:?}")
    };
    assert_eq!(reason, "the condition `out[0].score < 0` of nested step 1 is false");
    assert_eq!(when, "out[0].score < 0");
    // The rest of the group follows, unfunded: its leaves' upstream is skipped.
    let r = rows(&[c(Status::Paid), Phase::Skipped, W]);
    let actions = snapshot_steps(&p, &r, &chain_of(&r), &positive, &held);
    assert!(matches!(actions.as_slice(), [Action::Leave { index: 2, .. }]), "{actions:?}");
    // True, the group runs.
    let r = rows(&[c(Status::Paid), W, W]);
    let actions = snapshot_steps(&p, &r, &chain, &negative, &held);
    assert!(matches!(actions.as_slice(), [Action::Create { index: 1, .. }]), "{actions:?}");
    // A leaf nobody accepted is retried, as the nested step says.
    let r = rows(&[c(Status::Paid), c(Status::Paid), c(Status::Expired)]);
    let actions = snapshot_steps(&p, &r, &chain_of(&r), &negative, &held);
    assert!(
        matches!(actions.as_slice(), [Action::Recover { index: 2, policy: Policy::Retry(2), .. }]),
        "{actions:?}"
    );
}

#[test]
fn a_sub_task_its_executor_declined_is_recovered_by_its_on_decline_policy_at_once() {
    use crate::plan::{Policy, RecoveryOverride};
    let mut p = plan(ReviewMode::Auto, &[&[], &[], &[], &[], &[]]);
    p.recovery.on_decline = Policy::Reassign;
    // Never consulted for a decline, even one accepted first.
    p.recovery.on_expiry = Policy::Cancel;
    let decline =
        |policy| Some(RecoveryOverride { on_decline: Some(policy), ..Default::default() });
    p.subtasks[1].recovery = decline(Policy::Retry(2));
    p.subtasks[2].recovery = decline(Policy::Cancel);
    p.subtasks[3].recovery = decline(Policy::Pause);
    let declined = c(Status::Declined);
    let r = rows(&[declined, declined, declined, declined, c(Status::Created)]);
    let mut chain = chain_of(&r);
    chain.get_mut(&0).unwrap().accepted = true;
    // Chain time 501: the deadline (1_000) is far off; nothing waits for it.
    let s = |state, rows: &BTreeMap<u32, Progress>, chain: &HashMap<u32, OnChain>| {
        let (results, held) = (HashMap::new(), BTreeSet::new());
        steps(&Snapshot {
            state,
            plan: &p,
            rows,
            chain,
            now: 501,
            head_block: 0,
            results: &results,
            held: &held,
            unreadable: &BTreeMap::new(),
        })
        .unwrap()
    };
    let recover = |index, policy| Action::Recover {
        index,
        attempt: 0,
        failure: Failure::DeclinedByExecutor,
        policy,
    };
    let actions = s(RunState::Running, &r, &chain);
    let [a0, a1, a2, Action::Pause { index: 3, attempt: 0, reason }] = actions.as_slice() else {
        panic!("{actions:?}")
    };
    assert_eq!(
        [a0, a1, a2],
        [&recover(0, Policy::Reassign), &recover(1, Policy::Retry(2)), &recover(2, Policy::Cancel)]
    );
    assert!(
        reason.starts_with("sub-task 3 declined: retry, change executor or cancel"),
        "{reason}"
    );
    assert_eq!(Failure::DeclinedByExecutor.describe(), "its executor declined it on chain");
    // Paused, the automatic policies still apply; a pause waits for its person.
    assert_eq!(s(RunState::Paused, &r, &chain).len(), 3);
    // Closing, a declined attempt holds nothing: left as it is, and the run
    // ends once nothing is in flight.
    assert_eq!(
        s(RunState::Cancelling, &r, &chain),
        [Action::Send { index: 4, call: Call::Cancel }]
    );
    let stored: Vec<Progress> = rows(&[declined]).into_values().collect();
    assert!(matches!(
        ending(RunState::Cancelling, None, &stored, None, 10, false),
        Some(Ending::Closed { .. })
    ));
    assert!(declined.is_stuck() && !declined.is_settled() && !declined.in_flight());
    // A person's retry starts a new attempt, as after an expiry.
    let Resolution::Requeue(next) =
        resolve_at(declined, &decision(DecisionKind::Retry, Some(0), None))
    else {
        panic!()
    };
    assert_eq!((next.attempt, next.phase, next.task_id), (1, Phase::Waiting, None));
}

fn upfront(deps: &[&[u32]]) -> Plan {
    Plan { funding: crate::plan::Funding::Upfront, ..plan(ReviewMode::Auto, deps) }
}

#[test]
fn upfront_creates_every_sub_task_in_one_step_naming_its_upstreams() {
    // A 1 -> 2 -> 1 fan-out: all four in the first step, in dependency order.
    let p = upfront(&[&[], &[0], &[0], &[1, 2]]);
    let actions = step_at(RunState::Running, &p, &[W, W, W, W], 600);
    let created: Vec<u32> = actions
        .iter()
        .map(|a| match a {
            Action::Create { index, .. } => *index,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(created, [0, 1, 2, 3]);
    let Action::Create { inputs, .. } = &actions[3] else { unreachable!() };
    assert_eq!(inputs.iter().map(|i| i.from).collect::<Vec<_>>(), [1, 2]);
    for input in inputs {
        assert!(input.output.is_empty(), "named, not carried");
        let up = input.upstream.as_ref().expect("an upstream reference");
        assert_eq!(
            (up.plan, up.path.as_str()),
            (p.id.into_inner(), input.from.to_string().as_str())
        );
    }
    // The stepwise plan creates the root alone.
    let stepwise = plan(ReviewMode::Auto, &[&[], &[0], &[0], &[1, 2]]);
    assert_eq!(step_at(RunState::Running, &stepwise, &[W, W, W, W], 600).len(), 1);
    // A paused upfront run creates nothing.
    assert!(step_at(RunState::Paused, &p, &[W, W, W, W], 600).is_empty());
}

#[test]
fn upfront_dependants_of_an_upstream_that_will_not_deliver_are_cancelled_then_wait() {
    let p = upfront(&[&[], &[0], &[1]]);
    let created = c(Status::Created);
    // Nothing to do while the upstream may still deliver.
    assert!(
        step_at(RunState::Running, &p, &[c(Status::Accepted), created, created], 600).is_empty()
    );
    assert!(step_at(RunState::Running, &p, &[c(Status::Paid), created, created], 600).is_empty());
    // Declined: its own policy (pause) applies; its dependant is cancelled,
    // and the one after it still stands on a live upstream.
    let actions = step_at(RunState::Running, &p, &[c(Status::Declined), created, created], 600);
    assert!(matches!(actions[0], Action::Pause { index: 0, .. }), "{actions:?}");
    assert_eq!(actions[1], Action::Send { index: 1, call: Call::Cancel });
    assert_eq!(actions.len(), 2, "{actions:?}");
    // Cancelled while its upstream has not delivered: it waits for the
    // upstream's next attempt, no policy; the next one is cancelled in turn.
    let actions =
        step_at(RunState::Paused, &p, &[c(Status::Declined), c(Status::Cancelled), created], 600);
    assert!(actions.contains(&Action::Rewind { index: 1, attempt: 0 }), "{actions:?}");
    assert!(actions.contains(&Action::Send { index: 2, call: Call::Cancel }), "{actions:?}");
    // Its own failure, its upstream delivered: its own policy.
    let actions =
        step_at(RunState::Running, &p, &[c(Status::Paid), c(Status::Declined), created], 600);
    assert!(matches!(actions[0], Action::Pause { index: 1, .. }), "{actions:?}");
    // The upstream's retry goes out with the dependants waiting again.
    let actions = step_at(RunState::Running, &p, &[W, W, W], 600);
    assert_eq!(actions.len(), 3, "{actions:?}");
}

#[test]
fn an_unreadable_result_is_disputed_under_auto_review_and_never_paid() {
    use super::super::reach::Unreadable;
    let deps: &[&[u32]] = &[&[], &[0]];
    let mut delivered = rows(&[c(Status::Completed), W]);
    delivered.get_mut(&0).unwrap().output = None;
    let chain = chain_of(&delivered);
    let at = |plan: &Plan, unreadable: &BTreeMap<u32, Unreadable>| {
        steps(&Snapshot {
            state: RunState::Running,
            plan,
            rows: &delivered,
            chain: &chain,
            now: 600,
            head_block: 0,
            results: &HashMap::new(),
            held: &BTreeSet::new(),
            unreadable,
        })
        .unwrap()
    };
    let gone = BTreeMap::from([(0, Unreadable::Unavailable)]);
    let auto = plan(ReviewMode::Auto, deps);
    let actions = at(&auto, &gone);
    let [Action::Send { index: 0, call: Call::Dispute(reason) }] = actions.as_slice() else {
        panic!("{actions:?}")
    };
    assert_eq!(reason, "the delivered result cannot be read: unavailable");
    // Pending within the wait: neither paid nor disputed, nothing funded on it.
    assert_eq!(at(&auto, &BTreeMap::new()), []);
    // Under manual review the person decides: released only after a silent window.
    let manual = plan(ReviewMode::Manual, deps);
    assert_eq!(at(&manual, &gone), [Action::Send { index: 0, call: Call::Release }]);
}

#[test]
fn an_upfront_dependant_of_an_unreadable_result_is_cancelled_even_under_manual_review() {
    use super::super::reach::Unreadable;
    let p =
        Plan { funding: crate::plan::Funding::Upfront, ..plan(ReviewMode::Manual, &[&[], &[0]]) };
    let mut r = rows(&[c(Status::Completed), c(Status::Created)]);
    r.get_mut(&0).unwrap().output = None;
    let chain = chain_of(&r);
    let at = |unreadable: &BTreeMap<u32, Unreadable>| {
        steps(&Snapshot {
            state: RunState::Running,
            plan: &p,
            rows: &r,
            chain: &chain,
            now: 510,
            head_block: 0,
            results: &HashMap::new(),
            held: &BTreeSet::new(),
            unreadable,
        })
        .unwrap()
    };
    assert_eq!(at(&BTreeMap::new()), [], "a result still pending stands");
    let gone = BTreeMap::from([(0, Unreadable::NotFound)]);
    assert_eq!(at(&gone), [Action::Send { index: 1, call: Call::Cancel }]);
}

/// A step at chain time `now` and block `head` over `chain` (set per
/// sub-task by the caller).
fn step_with(
    plan: &Plan,
    rows: &BTreeMap<u32, Progress>,
    chain: &HashMap<u32, OnChain>,
    state: RunState,
    now: u64,
    head: u64,
) -> Vec<Action> {
    steps(&Snapshot {
        state,
        plan,
        rows,
        chain,
        now,
        head_block: head,
        results: &HashMap::new(),
        held: &BTreeSet::new(),
        unreadable: &BTreeMap::new(),
    })
    .unwrap()
}

#[test]
fn a_task_left_silent_past_the_accept_window_is_cancelled_naming_its_executor() {
    let p = plan(ReviewMode::Auto, &[&[]]);
    assert_eq!(p.accept_window_blocks, crate::plan::DEFAULT_ACCEPT_WINDOW_BLOCKS);
    let r = rows(&[c(Status::Created)]);
    let mut chain = chain_of(&r);
    chain.get_mut(&0).unwrap().offered_block = 10;
    let at = |chain: &HashMap<u32, OnChain>, state, now, head| {
        step_with(&p, &r, chain, state, now, head)
    };
    // 100 blocks is the window itself: not yet past it.
    assert_eq!(at(&chain, RunState::Running, 700, 110), []);
    let silent = Action::Silent { index: 0, attempt: 0, executor: EXEC, blocks: 101 };
    assert_eq!(at(&chain, RunState::Running, 700, 111), [silent]);
    // Never before as many seconds as blocks (a block per transaction).
    assert_eq!(at(&chain, RunState::Running, 600, 111), []);
    // A paused run cancels nothing; past the deadline the refund wins.
    assert_eq!(at(&chain, RunState::Paused, 700, 111), []);
    assert_eq!(
        at(&chain, RunState::Running, 1_001, 111),
        [Action::Send { index: 0, call: Call::RefundExpired }]
    );
    // An accepted task showed life; a window of 0 waits for the deadline.
    let mut accepted = chain.clone();
    accepted.get_mut(&0).unwrap().status = Status::Accepted;
    let ra = rows(&[c(Status::Accepted)]);
    assert_eq!(step_with(&p, &ra, &accepted, RunState::Running, 700, 500), []);
    let off = Plan { accept_window_blocks: 0, ..p.clone() };
    assert_eq!(step_with(&off, &r, &chain, RunState::Running, 700, 10_000), []);
}

#[test]
fn the_accept_window_of_an_upfront_dependant_starts_when_its_upstream_delivered() {
    let p = Plan { funding: crate::plan::Funding::Upfront, ..plan(ReviewMode::Auto, &[&[], &[0]]) };
    let window = u64::from(p.accept_window_blocks);
    let waiting = rows(&[c(Status::Accepted), c(Status::Created)]);
    let mut chain = chain_of(&waiting);
    chain.get_mut(&0).unwrap().offered_block = 10;
    chain.get_mut(&1).unwrap().offered_block = 10;
    // Its upstream has not delivered: it waits, however long.
    assert_eq!(step_with(&p, &waiting, &chain, RunState::Running, 900, 10_000), []);
    // Delivered at block 50: counted from there.
    let mut delivered = rows(&[c(Status::Completed), c(Status::Created)]);
    delivered.get_mut(&0).unwrap().output = None;
    chain.get_mut(&0).unwrap().status = Status::Completed;
    chain.get_mut(&0).unwrap().last_block = 50;
    assert_eq!(step_with(&p, &delivered, &chain, RunState::Running, 900, 50 + window), []);
    assert_eq!(
        step_with(&p, &delivered, &chain, RunState::Running, 900, 51 + window),
        [Action::Silent { index: 1, attempt: 0, executor: EXEC, blocks: window + 1 }]
    );
}

#[test]
fn a_task_cancelled_past_its_accept_window_goes_to_on_decline_as_silent() {
    let mut p = plan(ReviewMode::Auto, &[&[]]);
    p.recovery.on_decline = Policy::Reassign;
    let r = rows(&[c(Status::Cancelled)]);
    let mut chain = chain_of(&r);
    chain.get_mut(&0).unwrap().offered_block = 10;
    chain.get_mut(&0).unwrap().last_block = 111;
    let recover =
        |failure| Action::Recover { index: 0, attempt: 0, failure, policy: Policy::Reassign };
    assert_eq!(
        step_with(&p, &r, &chain, RunState::Running, 700, 112),
        [recover(Failure::Silent { executor: EXEC })]
    );
    // Cancelled within the window: nobody accepted, as before.
    chain.get_mut(&0).unwrap().last_block = 60;
    assert_eq!(
        step_with(&p, &r, &chain, RunState::Running, 700, 112),
        [recover(Failure::Declined)]
    );
    assert!(Failure::Silent { executor: EXEC }.describe().contains(&EXEC.to_string()));
}

#[test]
fn a_silent_executor_under_the_default_policy_pauses_naming_it() {
    let p = plan(ReviewMode::Auto, &[&[]]);
    let r = rows(&[c(Status::Cancelled)]);
    let mut chain = chain_of(&r);
    chain.get_mut(&0).unwrap().offered_block = 10;
    chain.get_mut(&0).unwrap().last_block = 111;
    let actions = step_with(&p, &r, &chain, RunState::Running, 700, 112);
    let [Action::Pause { index: 0, attempt: 0, reason }] = actions.as_slice() else {
        panic!("{actions:?}")
    };
    assert_eq!(
        reason,
        &format!(
            "sub-task 0 cancelled (its executor {EXEC} neither accepted nor delivered within the \
             accept window): retry, change executor or cancel"
        )
    );
}
