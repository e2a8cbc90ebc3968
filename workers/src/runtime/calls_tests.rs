//! Calls off the pass: bounded, never waited on past the grace, and a
//! task whose time ran out in the queue declined without a call.

use std::sync::atomic::{AtomicUsize, Ordering};

use alloy::primitives::{Address, B256};
use tessera_bindings::{ITaskEscrow::Task, task::TaskRecord};

use super::*;
use crate::brain::{Answering, wire::tests::request};

/// A brain that answers after `delay`, counting the calls running at once.
#[derive(Debug, Default)]
struct Slow {
    delay: Duration,
    running: AtomicUsize,
    most: AtomicUsize,
}

impl Brain for Slow {
    fn answer<'a>(&'a self, _: &'a HandlerRequest) -> Answering<'a> {
        Box::pin(async move {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            let _running = Running(&self.running);
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(self.delay).await;
            Ok(serde_json::json!({"result": {"haiku": "done"}}))
        })
    }

    fn describe(&self) -> String {
        "a slow brain".into()
    }
}

/// Counts a call as running until it ends or is dropped.
struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn rec(id: u64) -> TaskRecord {
    TaskRecord {
        id: U256::from(id),
        plan_id: B256::ZERO,
        parent_id: U256::ZERO,
        reference: B256::ZERO,
        capability: B256::ZERO,
        spec_uri: String::new(),
        result_uri: None,
        decline_reason_uri: None,
        rating: None,
        task: Task { funder: Address::ZERO, ..Default::default() },
    }
}

#[tokio::test]
async fn calls_run_a_few_at_a_time_off_the_pass() {
    let slow = Arc::new(Slow { delay: Duration::from_millis(300), ..Default::default() });
    let brain: Arc<dyn Brain> = slow.clone();
    let mut calls = Calls::default();
    let end = Instant::now() + Duration::from_secs(60);
    for id in 0..6 {
        assert!(calls.want(rec(id), request(), end));
    }
    assert!(calls.has(U256::from(3)));
    assert_eq!(calls.launch(&brain), IN_FLIGHT, "a bounded number at once");
    assert_eq!(calls.launch(&brain), 0, "none more while they run");
    let waited = std::time::Instant::now();
    calls.grace(IN_FLIGHT).await;
    assert!(waited.elapsed() <= GRACE + Duration::from_millis(200));
    let mut answered = Vec::new();
    for _ in 0..50 {
        answered.extend(calls.collect());
        calls.launch(&brain);
        if answered.len() == 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(answered.len(), 6, "every task answered");
    assert!(
        answered.iter().all(|(_, cap, v)| cap == "haiku-write" && matches!(v, Verdict::Deliver(_)))
    );
    assert_eq!(slow.most.load(Ordering::SeqCst), IN_FLIGHT);
    assert!(!calls.has(U256::from(3)), "collected");
}

#[tokio::test]
async fn a_call_whose_time_ran_out_is_not_made_and_a_forgotten_one_is_dropped() {
    let slow = Arc::new(Slow { delay: Duration::from_secs(30), ..Default::default() });
    let brain: Arc<dyn Brain> = slow.clone();
    let mut calls = Calls::default();
    calls.want(rec(1), request(), Instant::now());
    calls.want(rec(2), request(), Instant::now() + Duration::from_secs(60));
    assert_eq!(calls.launch(&brain), 2);
    calls.grace(1).await;
    let out = calls.collect();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.id, U256::from(1));
    assert_eq!(
        out[0].2,
        Verdict::Decline("handler not asked: too close to the task's deadline".into())
    );
    calls.forget(U256::from(2));
    assert!(!calls.has(U256::from(2)));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(slow.running.load(Ordering::SeqCst), 0, "its call was dropped");
}

#[tokio::test]
async fn a_call_still_running_after_the_accept_delay_is_offered_once_for_acceptance() {
    let brain: Arc<dyn Brain> =
        Arc::new(Slow { delay: Duration::from_secs(3_600), ..Default::default() });
    let mut calls = Calls::default();
    let end = Instant::now() + Duration::from_secs(7_200);
    // Task 0 moved on (accepted already, say): never offered.
    let mut moved = rec(0);
    moved.task.status = Status::Accepted as u8;
    assert!(calls.want(moved, request(), end));
    for id in 1..=IN_FLIGHT as u64 {
        let mut created = rec(id);
        created.task.status = Status::Created as u8;
        assert!(calls.want(created, request(), end));
    }
    assert_eq!(calls.launch(&brain), IN_FLIGHT);
    let now = Instant::now();
    assert!(calls.slow(now, ACCEPT_AFTER).is_empty(), "just started");
    let later = now + ACCEPT_AFTER;
    let mut slow_ones: Vec<U256> = calls.slow(later, ACCEPT_AFTER).iter().map(|r| r.id).collect();
    slow_ones.sort();
    // Task IN_FLIGHT's call is queued, not started: nothing to show for it yet.
    assert_eq!(slow_ones, (1..IN_FLIGHT as u64).map(U256::from).collect::<Vec<_>>());
    assert!(calls.slow(later, ACCEPT_AFTER).is_empty(), "each once");
}
