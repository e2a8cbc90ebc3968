//! One party's refusal stays its own: an executor that front-runs a wave
//! (pauses its offer in the block that mines the wave's `createTasks`,
//! ahead of it on a higher tip) makes that batch revert when mined. The
//! other sub-tasks of the batch are created in the next block and
//! complete; the front-runner's sub-task goes to its recovery policy with
//! the decoded revert, and nothing is sent for it again as it was.

use std::time::Duration;

use alloy::{
    primitives::{Address, B256, TxHash},
    providers::Provider,
    sol_types::SolCall,
};
use serde_json::{Value, json};
use tessera_bindings::{AgentRegistry, ITaskEscrow, TaskEscrow};
use tessera_e2e::Stack;
use tessera_orchestrator::{
    plan::{Plan, PlanId},
    runner::Chain,
};

fn step(index: u32, capability: &str, executor: Address, cost: u64) -> Value {
    json!({
        "index": index, "capability": capability, "spec": format!("{capability} it"),
        "executor": executor, "cost": cost, "deadline_offset_secs": 3600, "depends_on": [],
    })
}

fn plan(label: &str, subtasks: Vec<Value>) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "subtasks": subtasks, "review": "auto",
        "budget": 10_000_000u64, "source": "The council approved a budget on Monday.",
        "review_window_secs": 600, "recovery": {"on_decline": "reassign"},
    })
}

/// The sponsor's transactions waiting in the pool, with the creations each
/// carries.
async fn pooled(stack: &Stack) -> Vec<(TxHash, Vec<ITaskEscrow::CreateParams>, Value)> {
    let pool: Value =
        stack.env.provider.raw_request("txpool_content".into(), ()).await.expect("txpool");
    let sponsor = stack.env.actors.sponsor.address();
    let mut out = Vec::new();
    for txs in pool["pending"].as_object().into_iter().flat_map(|m| m.values()) {
        for tx in txs.as_object().into_iter().flat_map(|m| m.values()) {
            if tx["from"].as_str().and_then(|f| f.parse::<Address>().ok()) != Some(sponsor) {
                continue;
            }
            let input: alloy::primitives::Bytes = tx["input"].as_str().unwrap().parse().unwrap();
            let creations = match TaskEscrow::createTasksCall::abi_decode(&input) {
                Ok(call) => call.ps,
                Err(_) => TaskEscrow::createTaskCall::abi_decode(&input)
                    .map(|c| vec![c.p])
                    .unwrap_or_default(),
            };
            out.push((tx["hash"].as_str().unwrap().parse().unwrap(), creations, tx.clone()));
        }
    }
    out
}

#[tokio::test]
async fn an_executor_front_running_a_wave_costs_the_others_one_block_and_its_own_sub_task() {
    let stack = Stack::start_on_timed_blocks(2).await;
    let p = &stack.env.provider;
    let a = &stack.env.actors;
    let (hostile, sponsor) = (a.agent(1), a.sponsor.address());
    // A few heads, so the runner knows the block interval (its wave waits
    // a quarter second for every run woken together); then blocks only
    // when this test mines one.
    let start = p.get_block_number().await.unwrap();
    while p.get_block_number().await.unwrap() < start + 3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    p.raw_request::<_, Value>("evm_setIntervalMining".into(), (0u64,)).await.unwrap();
    let first = p.get_block_number().await.unwrap();

    // Run X funds the hostile executor's summary (at 0.5 USDC, what the
    // other summarizer asks: recovery hands a sub-task only to agents at
    // or under its cost) and a sentiment beside it (one part of the wave);
    // run Y an entity list.
    let x = plan(
        "front-run-x",
        vec![
            step(0, "summarize", hostile, 500_000),
            step(1, "sentiment-classify", a.agent(3), 200_000),
        ],
    );
    let y = plan("front-run-y", vec![step(0, "extract-entities", a.agent(4), 250_000)]);
    let mut ids = Vec::new();
    for body in [&x, &y] {
        let (status, body) = stack.post("/api/plans", body).await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    let paths: Vec<String> = ids.iter().map(|id| format!("/api/runs/{id}/approve")).collect();
    let approvals = paths.iter().map(|path| stack.post(path, &Value::Null));
    for (status, body) in futures_util::future::join_all(approvals).await {
        assert_eq!(status, 200, "{body}");
    }
    // Every creation is in the pool, none mined.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let pool = loop {
        let pool = pooled(&stack).await;
        if pool.iter().map(|(_, c, _)| c.len()).sum::<usize>() == 3 {
            break pool;
        }
        assert!(tokio::time::Instant::now() < deadline, "the wave never went out: {pool:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (batch, carried, tx) = pool
        .iter()
        .find(|(_, c, _)| c.iter().any(|p| p.executor == hostile))
        .expect("the hostile executor's creation is pooled");
    assert!(carried.len() >= 2, "the hostile creation shares its batch: {pool:?}");
    println!("the wave: {:?}", pool.iter().map(|(h, c, _)| (h, c.len())).collect::<Vec<_>>());

    // The executor stops offering, on a higher tip: mined first, in the
    // same block as the wave.
    let fee = |field: &str| {
        let hex = tx[field].as_str().unwrap_or_else(|| panic!("{field} in {tx}"));
        u128::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap()
    };
    let (tip, cap) = (fee("maxPriorityFeePerGas"), fee("maxFeePerGas"));
    let registry = AgentRegistry::new(stack.env.deployment.agent_registry, p);
    let pause = registry
        .pause()
        .from(hostile)
        .max_priority_fee_per_gas(tip * 10 + 1_000_000_000)
        .max_fee_per_gas(cap * 10 + 1_000_000_000)
        .send()
        .await
        .expect("pause sent");
    p.raw_request::<_, Value>("evm_mine".into(), ()).await.unwrap();
    let pause = p.get_transaction_receipt(*pause.tx_hash()).await.unwrap().expect("mined");
    let reverted = p.get_transaction_receipt(*batch).await.unwrap().expect("mined");
    assert!(pause.status(), "the executor paused");
    assert!(!reverted.status(), "the wave's batch reverted when mined");
    let front_run = reverted.block_number.unwrap();
    assert_eq!(pause.block_number, Some(front_run));
    assert!(pause.transaction_index < reverted.transaction_index, "front-run");
    println!(
        "gas: the front-run batch of {} creations {} (reverted), the executor's pause {}",
        carried.len(),
        reverted.gas_used,
        pause.gas_used
    );
    p.raw_request::<_, Value>("evm_setIntervalMining".into(), (1u64,)).await.unwrap();

    for id in &ids {
        stack.wait_state(id, "completed", 120).await;
    }
    let (ex, ey) = (stack.events(&ids[0]).await, stack.events(&ids[1]).await);
    let created = |events: &[Value], index: u64| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["kind"] == "subtask_created" && e["index"] == index)
            .cloned()
            .collect()
    };
    // The others: created in the block after the front-run one.
    for (events, index) in [(&ex, 1), (&ey, 0)] {
        let made = created(events, index);
        assert_eq!(made.len(), 1, "{made:?}");
        assert_eq!(made[0]["block"].as_u64(), Some(front_run + 1), "{made:?}");
    }
    // The front-runner's sub-task: reassigned by its policy, with the
    // escrow's decoded refusal, and paid to the other summarizer.
    let recoveries: Vec<&Value> = ex.iter().filter(|e| e["kind"] == "recovery_applied").collect();
    assert_eq!(recoveries.len(), 1, "{recoveries:?}");
    let r = recoveries[0];
    assert_eq!((r["index"].as_u64(), r["attempt"].as_u64()), (Some(0), Some(1)), "{r}");
    assert_eq!(r["policy"], "reassign", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.contains("TaskEscrowExecutorNotOffering"), "{reason}");
    assert!(reason.contains(&a.agent(0).to_string()), "reassigned to summarizer-a: {reason}");
    let made = created(&ex, 0);
    assert_eq!(made.len(), 1, "only the new attempt was created: {made:?}");
    let (_, view) = stack.get(&format!("/api/runs/{}", ids[0])).await;
    let t = &view["subtasks"][0];
    assert_eq!((t["attempt"].as_u64(), t["phase"].as_str()), (Some(1), Some("paid")), "{view}");
    assert_eq!(t["executor"].as_str().unwrap().parse::<Address>().unwrap(), a.agent(0));

    // Chain facts: the first attempt never existed, and the one reverted
    // transaction the sponsor paid for is the front-run batch.
    let escrow = TaskEscrow::new(stack.env.deployment.task_escrow, p);
    let plan_id: PlanId = x["id"].as_str().unwrap().parse().unwrap();
    let attempt0 = tessera_e2e::task_id_for(sponsor, Chain::reference(plan_id, 0, 0));
    assert_eq!(escrow.taskHash(attempt0).call().await.unwrap(), B256::ZERO);
    let last = p.get_block_number().await.unwrap();
    let mut failed = Vec::new();
    for n in first + 1..=last {
        let receipts = p.get_block_receipts(n.into()).await.unwrap().unwrap_or_default();
        failed.extend(
            receipts
                .iter()
                .filter(|r| r.from == sponsor && !r.status())
                .map(|r| r.transaction_hash),
        );
    }
    assert_eq!(failed, [*batch], "the sponsor paid for one reverted transaction");
    let paused = registry.getAgent(hostile).call().await.unwrap();
    assert_eq!(paused.status, 2, "still paused");
}
