//! Reorganisations of the runner's own transactions, on a real anvil whose
//! blocks this test mines: a block holding the sponsor's `createTasks`, its
//! `approvePayments` or a decision's `reassignTask` is replaced
//! (`anvil_reorg`), or taken off the chain (`anvil_rollback`), once the
//! runner has seen it mined. The runner notices at the next block (it reads the newest
//! `confirmations + 1` blocks again), sends again, says so in a
//! `subtask_reorged` event, and every sub-task is created and settled once
//! on the chain, paid once in the run's events.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use alloy::{
    consensus::Transaction as _,
    network::TransactionResponse as _,
    primitives::{Address, B256, U256},
    providers::Provider,
    rpc::types::Filter,
    sol_types::{SolCall, SolEvent},
};
use serde_json::{Value, json};
use tessera_bindings::TaskEscrow;
use tessera_e2e::Stack;
use tessera_orchestrator::{
    plan::{Plan, PlanId},
    runner::{Chain, RunnerConfig},
};

/// Blocks on top of a payment before the run counts it done.
const CONFIRMATIONS: u64 = 2;

fn step(index: u32, capability: &str, executor: Address, cost: u64, deps: &[u32]) -> Value {
    json!({
        "index": index, "capability": capability, "spec": format!("{capability} the article"),
        "executor": executor, "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps,
    })
}

/// Summarize (agent 1), then classify the summary's tone (agent 3).
fn two_steps(stack: &Stack, label: &str) -> Value {
    let (a1, a3) = (stack.env.actors.agent(1), stack.env.actors.agent(3));
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": "auto",
        "budget": 10_000_000u64, "review_window_secs": 600,
        "source": "The harbour authority opened a new ferry line on Friday.",
        "subtasks": [
            step(0, "summarize", a1, 400_000, &[]),
            step(1, "sentiment-classify", a3, 200_000, &[0]),
        ],
    })
}

/// Which of the sponsor's transactions the miner stops after.
#[derive(Clone, Copy)]
enum Target {
    Create,
    Approve,
    Reassign,
}

impl Target {
    fn matches(self, input: &[u8]) -> bool {
        let selector = input.get(..4).unwrap_or_default();
        match self {
            Self::Create => {
                [TaskEscrow::createTaskCall::SELECTOR, TaskEscrow::createTasksCall::SELECTOR]
                    .iter()
                    .any(|s| s.as_slice() == selector)
            }
            Self::Approve => [
                TaskEscrow::approvePaymentCall::SELECTOR,
                TaskEscrow::approvePaymentsCall::SELECTOR,
            ]
            .iter()
            .any(|s| s.as_slice() == selector),
            Self::Reassign => TaskEscrow::reassignTaskCall::SELECTOR.as_slice() == selector,
        }
    }
}

/// Mines a block every 300 ms until it mines the first block holding a
/// sponsor's transaction of `target`; then mines nothing until `resume`
/// is set. Sends that block's number.
fn miner(
    stack: &Stack,
    target: Target,
    resume: Arc<AtomicBool>,
) -> (tokio::task::JoinHandle<()>, tokio::sync::oneshot::Receiver<u64>) {
    let p = stack.env.provider.clone();
    let (sponsor, escrow) = (stack.env.actors.sponsor.address(), stack.env.deployment.task_escrow);
    let (caught, rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut caught = Some(caught);
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if caught.is_none() && !resume.load(Ordering::SeqCst) {
                continue;
            }
            p.raw_request::<_, Value>("evm_mine".into(), ()).await.expect("mined");
            let Some(tell) = caught.take() else { continue };
            let block = p.get_block_by_number(Default::default()).full().await.unwrap().unwrap();
            let hit = block.transactions.txns().any(|tx| {
                tx.from() == sponsor && tx.to() == Some(escrow) && target.matches(tx.input())
            });
            if hit {
                let _ = tell.send(block.header.number);
            } else {
                caught = Some(tell);
            }
        }
    });
    (task, rx)
}

/// Whether a transaction of `from` waits in the pool.
async fn pooled_from(stack: &Stack, from: Address) -> bool {
    let pool: Value =
        stack.env.provider.raw_request("txpool_content".into(), ()).await.expect("txpool");
    pool["pending"].as_object().is_some_and(|senders| {
        senders.keys().any(|k| k.parse::<Address>().is_ok_and(|a| a == from))
    })
}

/// The escrow's logs of `event` about task `id` on the chain now.
async fn logs_of(stack: &Stack, event: B256, id: U256) -> usize {
    let filter = Filter::new()
        .address(stack.env.deployment.task_escrow)
        .event_signature(event)
        .topic1(B256::from(id))
        .from_block(stack.env.deployment.deploy_block);
    stack.env.provider.get_logs(&filter).await.expect("logs").len()
}

/// Starts the stack with workers for the demo agents at `workers`, the
/// runner waiting for [`CONFIRMATIONS`], on a chain whose blocks the test
/// mines (after a few timed heads, so the runner knows the block interval).
async fn stack_mined_by_test(workers: &[usize]) -> Stack {
    let config = RunnerConfig { confirmations: CONFIRMATIONS, ..RunnerConfig::default() };
    let stack = Stack::start_custom_on_timed_blocks(config, workers, 1).await;
    let p = &stack.env.provider;
    let start = p.get_block_number().await.unwrap();
    while p.get_block_number().await.unwrap() < start + 3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    p.raw_request::<_, Value>("evm_setIntervalMining".into(), (0u64,)).await.unwrap();
    stack
}

/// Replaces the newest block by an empty one at the same height (its
/// transactions gone, not back in the pool).
async fn replace_newest(stack: &Stack) {
    let p = &stack.env.provider;
    let block = p.get_block_number().await.unwrap();
    let _: Value = p.raw_request("anvil_reorg".into(), (1u64, Vec::<Value>::new())).await.unwrap();
    assert_eq!(p.get_block_number().await.unwrap(), block, "the same height, another block");
}

/// Runs the two-step plan on a chain this test mines, replaces the block
/// holding the first sponsor's transaction of `target` once sub-task 0
/// shows `seen` (or, with `rollback`, takes it off the chain, the next
/// block mined at its height), and returns the completed run's events after checking
/// that every sub-task was created, settled and paid once.
async fn reorganised(label: &str, target: Target, seen: &str, rollback: bool) -> Vec<Value> {
    let stack = stack_mined_by_test(&[0, 1, 2, 3, 4]).await;
    let p = &stack.env.provider;
    let resume = Arc::new(AtomicBool::new(false));
    let (mining, caught) = miner(&stack, target, Arc::clone(&resume));
    let plan = two_steps(&stack, label);
    let id = stack.run_plan(&plan).await;

    let block = tokio::time::timeout(Duration::from_secs(120), caught)
        .await
        .expect("the sponsor's transaction is mined")
        .expect("the miner runs");
    // The runner saw it mined; no block comes until the reorganisation.
    stack.wait_phase(&id, 0, seen, 60).await;
    assert_eq!(p.get_block_number().await.unwrap(), block);
    if rollback {
        let _: Value = p.raw_request("anvil_rollback".into(), (1u64,)).await.unwrap();
        assert_eq!(p.get_block_number().await.unwrap(), block - 1, "one block fewer");
    } else {
        replace_newest(&stack).await;
    }
    resume.store(true, Ordering::SeqCst);

    let view = stack.wait_state(&id, "completed", 180).await;
    mining.abort();
    assert_eq!(
        view["spend"],
        json!({"committed": "600000", "paid": "600000", "refunded": "0"}),
        "{view}"
    );
    let events = stack.events(&id).await;
    let sponsor = stack.env.actors.sponsor.address();
    let plan_id: PlanId = plan["id"].as_str().unwrap().parse().unwrap();
    for index in 0..2u32 {
        let task = tessera_e2e::task_id_for(sponsor, Chain::reference(plan_id, index, 0));
        let created = logs_of(&stack, TaskEscrow::TaskCreated::SIGNATURE_HASH, task).await;
        let settled = logs_of(&stack, TaskEscrow::TaskSettled::SIGNATURE_HASH, task).await;
        assert_eq!((created, settled), (1, 1), "sub-task {index}: created and settled once");
        let paid: Vec<&Value> =
            events.iter().filter(|e| e["kind"] == "subtask_paid" && e["index"] == index).collect();
        assert_eq!(paid.len(), 1, "sub-task {index} paid once: {paid:?}");
        assert_eq!(paid[0]["task_id"], task.to_string());
    }
    let t = &view["subtasks"];
    assert_eq!((t[0]["attempt"].as_u64(), t[1]["attempt"].as_u64()), (Some(0), Some(0)), "{view}");
    events
}

#[tokio::test]
async fn a_creation_reorganised_out_is_sent_again_and_every_sub_task_settles_once() {
    let events = Box::pin(reorganised("reorg-create", Target::Create, "created", false)).await;
    let reorged: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subtask_reorged").collect();
    let [r] = reorged.as_slice() else { panic!("one subtask_reorged: {reorged:#?}") };
    assert_eq!((r["index"].as_u64(), r["attempt"].as_u64()), (Some(0), Some(0)), "{r}");
    assert_eq!((r["was"].as_str(), r["now"].as_str()), (Some("created"), Some("waiting")), "{r}");
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap();
    assert!(at("subtask_reorged") < at("subtask_paid"), "{kinds:?}");
}

#[tokio::test]
async fn a_creation_rolled_back_is_sent_again_and_every_sub_task_settles_once() {
    let events = Box::pin(reorganised("rollback-create", Target::Create, "created", true)).await;
    let reorged: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subtask_reorged").collect();
    let [r] = reorged.as_slice() else { panic!("one subtask_reorged: {reorged:#?}") };
    assert_eq!((r["was"].as_str(), r["now"].as_str()), (Some("created"), Some("waiting")), "{r}");
}

#[tokio::test]
async fn an_approval_reorganised_out_is_sent_again_and_pays_once() {
    let events = Box::pin(reorganised("reorg-approve", Target::Approve, "paid", false)).await;
    let reorged: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subtask_reorged").collect();
    let zero: Vec<&&Value> = reorged.iter().filter(|e| e["index"] == 0).collect();
    let [r] = zero.as_slice() else { panic!("one subtask_reorged of sub-task 0: {reorged:#?}") };
    assert_eq!((r["was"].as_str(), r["now"].as_str()), (Some("paid"), Some("completed")), "{r}");
    // Sub-task 1's creation went out beside the approval: when it shared
    // its block, it went too and was created again.
    for e in reorged.iter().filter(|e| e["index"] == 1) {
        assert_eq!((e["was"].as_str(), e["now"].as_str()), (Some("created"), Some("waiting")));
    }
}

/// A person's change of executor whose `reassignTask` is reorganised out:
/// the runner finds its transaction gone before it records the decision,
/// sends it again, and the task is reassigned once and paid once, to the
/// new executor.
#[tokio::test]
async fn a_decision_reorganised_out_is_sent_again_before_it_is_recorded() {
    // summarizer-b (demo agent 1) never runs.
    let stack = stack_mined_by_test(&[0, 2, 3, 4]).await;
    let (a0, a1) = (stack.env.actors.agent(0), stack.env.actors.agent(1));
    let resume = Arc::new(AtomicBool::new(false));
    let (mining, caught) = miner(&stack, Target::Reassign, Arc::clone(&resume));
    let plan = json!({
        "version": 1, "id": Plan::id_from_label("reorg-decision"), "review": "auto",
        "budget": 10_000_000u64, "review_window_secs": 600,
        "source": "The harbour authority opened a new ferry line on Friday.",
        "subtasks": [step(0, "summarize", a1, 500_000, &[])],
    });
    let id = stack.run_plan(&plan).await;
    stack.wait_phase(&id, 0, "created", 60).await;
    let before = stack.env.balance(a0).await;
    let (status, body) =
        stack.post(&format!("/api/runs/{id}/subtasks/0/executor"), &json!({"executor": a0})).await;
    assert_eq!(status, 202, "{body}");
    tokio::time::timeout(Duration::from_secs(120), caught)
        .await
        .expect("the reassignment is mined")
        .expect("the miner runs");
    // The new executor saw it (its delivery waits in the pool); so did the
    // runner, which looks at a block's receipts as soon as it is announced.
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    while !pooled_from(&stack, a0).await {
        assert!(tokio::time::Instant::now() < end, "the new executor never delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    replace_newest(&stack).await;
    resume.store(true, Ordering::SeqCst);

    let view = stack.wait_state(&id, "completed", 180).await;
    mining.abort();
    assert_eq!(view["subtasks"][0]["executor"], a0.to_string());
    assert_eq!(view["subtasks"][0]["attempt"], 0, "same task, re-routed on chain");
    let decisions = view["decisions"].as_array().unwrap();
    assert!(decisions.iter().all(|d| d["ok"] == true), "{decisions:#?}");
    assert_eq!(stack.env.balance(a0).await, before + U256::from(500_000u64), "paid once");
    let sponsor = stack.env.actors.sponsor.address();
    let plan_id: PlanId = plan["id"].as_str().unwrap().parse().unwrap();
    let task = tessera_e2e::task_id_for(sponsor, Chain::reference(plan_id, 0, 0));
    let reassigned = logs_of(&stack, TaskEscrow::TaskReassigned::SIGNATURE_HASH, task).await;
    let settled = logs_of(&stack, TaskEscrow::TaskSettled::SIGNATURE_HASH, task).await;
    assert_eq!((reassigned, settled), (1, 1), "reassigned and settled once");
    let events = stack.events(&id).await;
    let reorged: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subtask_reorged").collect();
    let [r] = reorged.as_slice() else { panic!("one subtask_reorged: {reorged:#?}") };
    assert_eq!((r["index"].as_u64(), r["sent_again"].as_str()), (Some(0), Some("executor")), "{r}");
}
