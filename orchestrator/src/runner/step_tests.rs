//! The step function driven without a chain: typed snapshots in, actions out.

use std::collections::{BTreeMap, HashMap};

use alloy::primitives::{Address, B256};
use tessera_bindings::{task::Status, usdc::Usdc};

use super::*;
use crate::plan::SubTask;

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
            if p.is_paid() {
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
    }
}

fn chain_of(rows: &BTreeMap<u32, Progress>) -> HashMap<u32, OnChain> {
    rows.iter().filter_map(|(i, r)| Some((*i, on_chain(r.phase.status()?)))).collect()
}

fn step_at(state: RunState, plan: &Plan, phases: &[Phase], now: u64) -> Vec<Action> {
    let rows = rows(phases);
    let chain = chain_of(&rows);
    steps(&Snapshot { state, plan, rows: &rows, chain: &chain, now }).unwrap()
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
    let s = Snapshot { state: RunState::Running, plan: &p, rows: &rows, chain: &chain, now: 1 };
    assert!(matches!(steps(&s), Err(RunError::Inconsistent { index: 0, .. })));
    rows.remove(&1);
    let chain = chain_of(&rows);
    let s = Snapshot { state: RunState::Running, plan: &p, rows: &rows, chain: &chain, now: 1 };
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
        &Snapshot { state: RunState::Running, plan: &p, rows: &rows, chain: &chain, now: 700 },
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
    assert_eq!(outcome, "approved");
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
    assert!(why.contains("approve does not apply to a sub-task that is paid"), "{why}");
}

#[test]
fn runs_end_on_stored_progress() {
    let paid = rows(&[c(Status::Paid), c(Status::Split)]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Running, None, &paid, None, 10), Some(Ending::Completed));
    let closing = rows(&[c(Status::Paid), W]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Running, None, &closing, None, 10), None);
    assert_eq!(
        ending(RunState::Cancelling, Some("cancelled"), &closing, None, 10),
        Some(Ending::Closed { state: RunState::Cancelled, reason: CloseReason::Cancelled })
    );
    assert_eq!(
        ending(RunState::Cancelling, Some("dispute_refunded"), &closing, None, 10),
        Some(Ending::Closed { state: RunState::Failed, reason: CloseReason::DisputeRefunded })
    );
    let in_flight = rows(&[c(Status::Accepted), W]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Cancelling, None, &in_flight, None, 10), None);
    let stuck = rows(&[c(Status::Expired)]).into_values().collect::<Vec<_>>();
    assert_eq!(ending(RunState::Paused, None, &stuck, Some(5), 10), None);
    assert_eq!(ending(RunState::Paused, None, &stuck, Some(11), 10), Some(Ending::TimedOut));
}

#[test]
fn under_auto_review_dependants_go_out_beside_their_upstreams_approval() {
    let deps: &[&[u32]] = &[&[], &[0], &[0]];
    let mut delivered = rows(&[c(Status::Completed), W, W]);
    let chain = chain_of(&delivered);
    let at = |plan: &Plan, rows: &BTreeMap<u32, Progress>| {
        steps(&Snapshot { state: RunState::Running, plan, rows, chain: &chain, now: 600 }).unwrap()
    };
    let auto = plan(ReviewMode::Auto, deps);
    // Until the result is read, only the approval goes out.
    assert_eq!(at(&auto, &delivered), [Action::Send { index: 0, call: Call::Approve }]);
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
