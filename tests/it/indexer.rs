//! The indexer on anvil: lineage from events, exactly-once ingestion across
//! an interrupted backfill, reorganisations of depth 1 to 10 (including one
//! that drops a parent but keeps its child), and the API.

use std::time::Duration;

use alloy::{
    network::TransactionBuilder,
    primitives::{U256, keccak256},
    providers::Provider,
    rpc::types::{Filter, TransactionRequest},
};
use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::TaskEscrow;
use tessera_e2e::{Stack, TestEnv};
use tessera_indexer::{IndexStore, Indexer, IndexerConfig};

async fn indexer(env: &TestEnv, url: &str, cfg: IndexerConfig) -> Indexer {
    let store = IndexStore::connect(url).await.unwrap();
    Indexer::new(env.provider.clone(), env.deployment.clone(), store, None, cfg)
}

fn sqlite(dir: &tempfile::TempDir, name: &str) -> String {
    format!("sqlite://{}", dir.path().join(name).display())
}

/// Every escrow and registry log on chain.
async fn chain_logs(env: &TestEnv) -> usize {
    env.provider
        .get_logs(
            &Filter::new()
                .address(vec![env.deployment.task_escrow, env.deployment.agent_registry])
                .from_block(env.deployment.deploy_block),
        )
        .await
        .unwrap()
        .len()
}

async fn lineage_of_a_chain_plan(db: Option<String>) {
    let stack = Stack::start().await;
    let (a1, a2) = (stack.env.actors.agent(1), stack.env.actors.agent(2));
    let plan_id = tessera_orchestrator::plan::Plan::id_from_label("indexed");
    let plan = json!({
        "version": 1, "id": plan_id, "review": "auto", "budget": 5_000_000u64,
        "source": "The council met on Monday. It approved the budget for schools.",
        "subtasks": [
            {"index": 0, "capability": "translate", "spec": "Translate to French", "executor": a2, "cost": 800_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "summarize", "spec": "Summarize it", "executor": a1, "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    });
    let id = stack.run_plan(&plan).await;
    stack.wait_state(&id, "completed", 60).await;
    let dir = tempfile::tempdir().unwrap();
    let url = db.unwrap_or_else(|| sqlite(&dir, "index.db"));
    // One task per derivation chunk: chunking, and on PostgreSQL the
    // statistics refresh before a derivation of many tasks, are exercised.
    let cfg = IndexerConfig { derive_chunk: 1, ..IndexerConfig::default() };
    let mut ix = indexer(&stack.env, &url, cfg).await;
    ix.sync_once().await.unwrap();
    assert_eq!(ix.store().event_count().await.unwrap() as usize, chain_logs(&stack.env).await);

    let tree = wire(ix.store().plan_tree(&plan_id.to_string()).await.unwrap());
    let tasks = tree["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{tree:#}");
    assert_eq!(
        (tasks[0]["capability"].as_str(), tasks[0]["depth"].as_i64()),
        (Some("translate"), Some(0))
    );
    assert_eq!(
        (tasks[1]["capability"].as_str(), tasks[1]["depth"].as_i64()),
        (Some("summarize"), Some(1))
    );
    assert_eq!(tasks[0]["subtree_cost"], "1200000", "roll-up over the subtree");
    assert_eq!(tasks[1]["parent_id"], tasks[0]["task_id"]);
    assert!(tasks.iter().all(|t| t["status"] == "Paid" && t["flagged"].is_null()));
    let child = tasks[1]["task_id"].as_str().unwrap();
    assert_eq!(
        ix.store().ancestors(child).await.unwrap().tasks,
        vec![tasks[0]["task_id"].as_str().unwrap().to_owned()]
    );
    let one = wire(ix.store().task(child).await.unwrap().unwrap());
    let events: Vec<&str> =
        one["history"].as_array().unwrap().iter().map(|h| h["event"].as_str().unwrap()).collect();
    // The worker delivers in one call: accepted and completed at once.
    assert_eq!(events, ["TaskCreated", "TaskCompleted", "TaskSettled"]);
    assert!(one["history"].as_array().unwrap().iter().all(|h| h["valid"] == true));

    // Agent stats come from the same events.
    let agent = wire(ix.store().agent(&a1.to_string()).await.unwrap().unwrap());
    assert_eq!(agent["stats"]["completed"], 1);
    assert_eq!(agent["stats"]["earnings"], "400000");
    assert_eq!(agent["stats"]["success_rate"], 1.0);
    assert_eq!(agent["offers"]["summarize"], "400000");
    // Its name is the id of the card it registered, read by the one decoder.
    let card = tessera_anvil::deploy::DEMO_AGENTS.iter().find(|a| a.account == 1).unwrap();
    assert_eq!(agent["name"], card.id);
}

#[tokio::test]
async fn lineage_of_a_chain_plan_on_sqlite() {
    lineage_of_a_chain_plan(None).await;
}

#[tokio::test]
async fn lineage_of_a_chain_plan_on_postgresql() {
    if let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_lineage").await {
        lineage_of_a_chain_plan(Some(url)).await;
    }
}

/// The demo's three-step shape: a summary of the entities and of the
/// sentiment has two upstreams. The parent link names one; the envelope's
/// inputs name both, and the index keeps every edge.
async fn merge_lineage_keeps_both_upstreams(db: Option<String>) {
    let stack = Stack::start().await;
    let a = &stack.env.actors;
    let plan_id = tessera_orchestrator::plan::Plan::id_from_label("merge");
    let plan = json!({
        "version": 1, "id": plan_id, "review": "auto", "budget": 5_000_000u64,
        "source": "The council met on Monday in Lyon. It approved the budget for schools, and parents were pleased.",
        "subtasks": [
            {"index": 0, "capability": "extract-entities", "spec": "List the entities", "executor": a.agent(4), "cost": 250_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "sentiment-classify", "spec": "Classify the tone", "executor": a.agent(3), "cost": 200_000, "deadline_offset_secs": 3600},
            {"index": 2, "capability": "summarize", "spec": "Summarize entities and tone", "executor": a.agent(1), "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0, 1]},
        ],
    });
    let id = stack.run_plan(&plan).await;
    let run = stack.wait_state(&id, "completed", 60).await;
    let task_of = |i: usize| run["subtasks"][i]["task_id"].as_str().unwrap().to_owned();
    let (entities, sentiment, summary) = (task_of(0), task_of(1), task_of(2));
    let dir = tempfile::tempdir().unwrap();
    let url = db.unwrap_or_else(|| sqlite(&dir, "index.db"));
    let mut ix = indexer(&stack.env, &url, IndexerConfig::default()).await;
    ix.sync_once().await.unwrap();
    let store = ix.store();

    let mut up = store.ancestors(&summary).await.unwrap();
    assert!(!up.cycle && !up.truncated, "{up:?}");
    up.tasks.sort();
    let mut both = vec![entities.clone(), sentiment.clone()];
    both.sort();
    assert_eq!(up.tasks, both, "both upstreams, from chain data alone");
    for upstream in [&entities, &sentiment] {
        let down = store.descendants(upstream).await.unwrap();
        assert_eq!((down.tasks, down.cycle), (vec![summary.clone()], false));
    }
    let tree = wire(store.plan_tree(&plan_id.to_string()).await.unwrap());
    let node = tree["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_id"] == summary.as_str())
        .unwrap_or_else(|| panic!("the summary in {tree:#}"))
        .clone();
    assert_eq!(node["merge"], true, "{node:#}");
    assert_eq!(node["inputs"], json!([entities, sentiment]), "in the envelope's order");
    let roots: Vec<&Value> = tree["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["task_id"] != summary.as_str())
        .collect();
    assert!(roots.iter().all(|t| t["merge"] == false && t["inputs"] == json!([])), "{tree:#}");
}

#[tokio::test]
async fn merge_lineage_keeps_both_upstreams_on_sqlite() {
    merge_lineage_keeps_both_upstreams(None).await;
}

#[tokio::test]
async fn merge_lineage_keeps_both_upstreams_on_postgresql() {
    if let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_merge").await {
        merge_lineage_keeps_both_upstreams(Some(url)).await;
    }
}

#[tokio::test]
async fn an_index_in_memory_folds_many_chunks() {
    // One connection serves reads and writes alike: the fold of many
    // chunks must not wait on itself.
    let env = TestEnv::start(DeployConfig::default()).await;
    create_tasks(&env, "memory", 6).await;
    let cfg = IndexerConfig { derive_chunk: 1, ..IndexerConfig::default() };
    let mut ix = indexer(&env, "sqlite::memory:", cfg).await;
    tokio::time::timeout(Duration::from_secs(60), ix.sync_once())
        .await
        .expect("the fold finished")
        .unwrap();
    let all = tessera_indexer::store::TaskQuery { limit: 50, ..Default::default() };
    assert_eq!(ix.store().task_page(&all).await.unwrap().0.len(), 6);
}

/// `count` created tasks, each in its own block, from the sponsor.
async fn create_tasks(env: &TestEnv, label: &str, count: usize) -> Vec<U256> {
    let mut d = env.driver();
    d.scenario(label);
    let mut ids = Vec::new();
    for _ in 0..count {
        let params = d
            .params(env.actors.agent(0), tessera_e2e::TASK_AMOUNT, "data:,x".into())
            .await
            .unwrap();
        ids.push(d.create_with_permit(params).await.unwrap().id);
    }
    ids
}

#[tokio::test]
async fn an_interrupted_backfill_resumes_with_nothing_lost_or_doubled() {
    let env = TestEnv::start(DeployConfig::default()).await;
    create_tasks(&env, "backfill", 40).await;
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite(&dir, "index.db");
    let small = IndexerConfig { initial_range: 1, max_range: 1, ..IndexerConfig::default() };
    // Killed mid-backfill, a few times (the future is dropped wherever it is,
    // transactions included).
    for ms in [5, 10, 15] {
        let mut ix = indexer(&env, &url, small.clone()).await;
        let _ = tokio::time::timeout(Duration::from_millis(ms), ix.sync_once()).await;
    }
    let partial = IndexStore::connect(&url).await.unwrap().event_count().await.unwrap() as usize;
    let total = chain_logs(&env).await;
    assert!(partial < total, "the interruptions left work to do ({partial} of {total})");
    let mut ix = indexer(&env, &url, small).await;
    ix.sync_once().await.unwrap();
    assert_eq!(ix.store().event_count().await.unwrap() as usize, total);
    // The same as indexing from scratch in one go.
    let mut fresh = indexer(&env, &sqlite(&dir, "fresh.db"), IndexerConfig::default()).await;
    fresh.sync_once().await.unwrap();
    let f = tessera_indexer::store::TaskQuery { limit: 500, ..Default::default() };
    assert_eq!(ix.store().task_page(&f).await.unwrap(), fresh.store().task_page(&f).await.unwrap());
}

#[tokio::test]
async fn reorgs_of_depth_one_to_ten_are_rolled_back_and_journalled() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut ix = indexer(&env, &sqlite(&dir, "index.db"), IndexerConfig::default()).await;
    for depth in 1..=10u64 {
        let ids = create_tasks(&env, &format!("reorg-{depth}"), depth as usize).await;
        ix.sync_once().await.unwrap();
        for id in &ids {
            assert!(ix.store().task(&id.to_string()).await.unwrap().is_some());
        }
        // Replace the last `depth` blocks with empty ones.
        env.provider
            .raw_request::<_, Value>("anvil_reorg".into(), (depth, Vec::<Value>::new()))
            .await
            .unwrap();
        ix.sync_once().await.unwrap();
        for id in &ids {
            assert!(
                ix.store().task(&id.to_string()).await.unwrap().is_none(),
                "task {id} was reorganised away"
            );
        }
        let journal = ix.store().reorgs().await.unwrap();
        let last = &journal[0];
        assert_eq!(last.depth, depth, "{last:?}");
        assert_eq!(last.orphaned_events, depth, "one TaskCreated per dropped block");
        assert_eq!(last.affected_tasks.len(), depth as usize);
        assert_eq!(ix.store().event_count().await.unwrap() as usize, chain_logs(&env).await);
    }
    assert_eq!(ix.store().reorgs().await.unwrap().len(), 10);
}

#[tokio::test]
async fn a_child_whose_parent_was_reorganised_away_waits_and_relinks() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let sponsor = env.actors.sponsor.address();
    let escrow = TaskEscrow::new(env.deployment.task_escrow, &env.provider);
    // An allowance in an earlier block, so creations need no permit nonce.
    tessera_e2e::allow_escrow(&env).await;
    let plan = keccak256("reorg-lineage");
    let now = env.driver().now().await.unwrap();
    let spec = "data:application/json,{\"parent\":\"task:1\",\"spec\":\"s\"}";
    let params =
        |r: &str, parent: U256| tessera_e2e::sponsor_task(&env, plan, r, parent, now, spec);
    let parent_id: U256 = escrow.taskIdFor(sponsor, keccak256("parent")).call().await.unwrap();
    let parent_tx: TransactionRequest =
        escrow.createTask(params("parent", U256::ZERO)).from(sponsor).into_transaction_request();
    let child_tx: TransactionRequest = escrow
        .createTask(params("child", parent_id))
        .from(sponsor)
        .into_transaction_request()
        .with_gas_limit(500_000);
    for tx in [parent_tx.clone(), child_tx.clone()] {
        env.provider.send_transaction(tx).await.unwrap().get_receipt().await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let mut ix = indexer(&env, &sqlite(&dir, "index.db"), IndexerConfig::default()).await;
    ix.sync_once().await.unwrap();
    let tree = wire(ix.store().plan_tree(&plan.to_string()).await.unwrap());
    assert_eq!(tree["tasks"].as_array().unwrap().len(), 2);

    // Reorg both blocks away, re-including only the child's transaction.
    env.provider
        .raw_request::<_, Value>("anvil_reorg".into(), (2u64, vec![(child_tx, 0u64)]))
        .await
        .unwrap();
    ix.sync_once().await.unwrap();
    let tree = wire(ix.store().plan_tree(&plan.to_string()).await.unwrap());
    let tasks = tree["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{tree:#}");
    assert_eq!(tasks[0]["parent_id"], parent_id.to_string());
    assert_eq!(tasks[0]["pending_parent"], true, "the child waits for its parent");

    // The parent comes back: the child re-links under it.
    env.provider.send_transaction(parent_tx).await.unwrap().get_receipt().await.unwrap();
    ix.sync_once().await.unwrap();
    let tree = wire(ix.store().plan_tree(&plan.to_string()).await.unwrap());
    let tasks = tree["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{tree:#}");
    assert_eq!(tasks[0]["task_id"], parent_id.to_string());
    assert_eq!(
        (tasks[1]["depth"].as_i64(), tasks[1]["pending_parent"].as_bool()),
        (Some(1), Some(false))
    );
}

#[tokio::test]
async fn a_rollback_below_the_indexed_head_is_noticed() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let ids = create_tasks(&env, "rollback", 3).await;
    let dir = tempfile::tempdir().unwrap();
    let mut ix = indexer(&env, &sqlite(&dir, "index.db"), IndexerConfig::default()).await;
    ix.sync_once().await.unwrap();
    // The chain goes back two blocks (the head drops below what was indexed).
    env.provider.raw_request::<_, Value>("anvil_rollback".into(), (Some(2u64),)).await.unwrap();
    ix.sync_once().await.unwrap();
    assert!(ix.store().task(&ids[0].to_string()).await.unwrap().is_some());
    for id in &ids[1..] {
        assert!(ix.store().task(&id.to_string()).await.unwrap().is_none(), "task {id} rolled back");
    }
    assert_eq!(ix.store().reorgs().await.unwrap().len(), 1);
    assert_eq!(ix.store().event_count().await.unwrap() as usize, chain_logs(&env).await);
}

#[tokio::test]
async fn hostile_envelopes_are_stored_and_flagged() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("hostile");
    let garbage = [
        "data:application/json,{not json".to_owned(),
        "sha256:0000000000000000000000000000000000000000000000000000000000000000".to_owned(),
        format!("data:application/json,{}", "x".repeat(5000)),
        "javascript:alert(1)".to_owned(),
    ];
    let mut ids = Vec::new();
    for uri in &garbage {
        let params =
            d.params(env.actors.agent(0), tessera_e2e::TASK_AMOUNT, uri.clone()).await.unwrap();
        ids.push(d.create_with_permit(params).await.unwrap().id);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut ix = indexer(&env, &sqlite(&dir, "index.db"), IndexerConfig::default()).await;
    ix.sync_once().await.unwrap();
    for id in &ids {
        let t = wire(ix.store().task(&id.to_string()).await.unwrap().unwrap());
        assert_eq!(t["status"], "Created");
        assert!(t["envelope_error"].as_str().is_some_and(|e| !e.is_empty()), "{t}");
    }
    // Still indexing afterwards.
    let more = create_tasks(&env, "after-hostile", 1).await;
    ix.sync_once().await.unwrap();
    assert!(ix.store().task(&more[0].to_string()).await.unwrap().is_some());
}

/// `answer`'s value, which must come within 10 s.
async fn within<T>(what: &str, answer: impl Future<Output = Result<T, tessera_db::DbError>>) -> T {
    tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .unwrap_or_else(|_| panic!("{what} did not answer within 10 s"))
        .unwrap()
}

async fn hostile_lineage_is_indexed_flagged_and_bounded(db: Option<String>) {
    use tessera_indexer::store::{MAX_LINEAGE_DEPTH, PARENT_CYCLE};
    let env = TestEnv::start(DeployConfig::default()).await;
    let depth = 1_000;
    let (plan, [own, a, b, under], chain) = tessera_e2e::hostile_lineage(&env, depth).await;
    let dir = tempfile::tempdir().unwrap();
    let url = db.unwrap_or_else(|| sqlite(&dir, "index.db"));
    let mut ix = indexer(&env, &url, IndexerConfig::default()).await;
    ix.sync_once().await.unwrap();
    let store = ix.store().clone();

    // Indexed like any task, and flagged.
    for t in [own, a, b] {
        let task = wire(store.task(&t.to_string()).await.unwrap().expect("indexed"));
        assert_eq!(task["flagged"], PARENT_CYCLE, "{task}");
    }
    for t in [under, chain[0], chain[depth - 1]] {
        let task = wire(store.task(&t.to_string()).await.unwrap().expect("indexed"));
        assert!(task["flagged"].is_null(), "not on a cycle: {task}");
    }

    // Walks stop at the cycle, with a marker.
    let up = within("a self-parent's ancestors", store.ancestors(&own.to_string())).await;
    assert!(up.cycle && up.tasks.is_empty(), "{up:?}");
    let up = store.ancestors(&b.to_string()).await.unwrap();
    assert_eq!((up.tasks, up.cycle), (vec![a.to_string()], true));
    let up = store.ancestors(&under.to_string()).await.unwrap();
    assert_eq!((up.tasks, up.cycle), (vec![a.to_string(), b.to_string()], true));
    let down = within("a cycle's descendants", store.descendants(&a.to_string())).await;
    assert!(down.cycle, "{down:?}");
    let mut found = down.tasks.clone();
    found.sort();
    let mut expected = vec![b.to_string(), under.to_string()];
    expected.sort();
    assert_eq!(found, expected);

    // A deep chain is cut at the limit, and says so.
    let up =
        within("a deep task's ancestors", store.ancestors(&chain[depth - 1].to_string())).await;
    assert_eq!(up.tasks.len(), MAX_LINEAGE_DEPTH as usize);
    assert_eq!(up.tasks[0], chain[depth - 2].to_string(), "nearest first");
    assert!(up.truncated && !up.cycle, "{up:?}");
    let down = store.descendants(&chain[0].to_string()).await.unwrap();
    assert_eq!(down.tasks.len(), MAX_LINEAGE_DEPTH as usize);
    assert!(down.truncated && !down.cycle);
    let top = store.ancestors(&chain[5].to_string()).await.unwrap();
    assert_eq!((top.tasks.len(), top.truncated, top.cycle), (5, false, false));

    // The plan's tree: the chain down to the limit, the rest detached.
    let tree = wire(within("the plan's tree", store.plan_tree(&plan.to_string())).await);
    let tasks = tree["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4 + depth, "every task of the plan is listed once");
    let rooted = tasks.iter().filter(|t| t["depth"].is_i64()).count();
    assert_eq!(rooted, MAX_LINEAGE_DEPTH as usize + 1, "depths 0 to the limit");
    let detached: Vec<&str> = tasks
        .iter()
        .filter(|t| t["detached"] == true)
        .map(|t| t["task_id"].as_str().unwrap())
        .collect();
    for t in [own, a, b, under] {
        assert!(detached.contains(&t.to_string().as_str()), "{t} is detached");
    }
    assert_eq!(
        tasks[0]["subtree_cost"],
        ((MAX_LINEAGE_DEPTH as u128 + 1) * tessera_e2e::TASK_AMOUNT).to_string(),
        "the root's cost rolls up the listed subtree"
    );

    // Indexing goes on.
    let more = create_tasks(&env, "after-cycles", 1).await;
    ix.sync_once().await.unwrap();
    assert!(store.task(&more[0].to_string()).await.unwrap().is_some());
}

#[tokio::test]
async fn hostile_lineage_is_indexed_flagged_and_bounded_on_sqlite() {
    hostile_lineage_is_indexed_flagged_and_bounded(None).await;
}

#[tokio::test]
async fn hostile_lineage_is_indexed_flagged_and_bounded_on_postgresql() {
    if let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_hostile").await {
        hostile_lineage_is_indexed_flagged_and_bounded(Some(url)).await;
    }
}

/// Tasks a stranger funds under a sponsor's plan. After the sponsor's
/// one-task plan (whose executor hired an agent for it), a stranger funds a
/// task under the plan's task naming the plan, one naming no plan, one
/// naming the plan with no parent, and 2,048 more under the plan's task in
/// batches (more than a tree's bound). The tree holds the sponsor's task
/// and the hire, its cost is theirs, and the stranger's tasks are listed
/// apart as foreign (the first 500).
async fn strangers_tasks_are_kept_out_of_a_plans_tree(db: Option<String>) {
    use tessera_bindings::MockUSDC;
    use tessera_e2e::{TASK_AMOUNT, sponsor_task, task_id_for};
    use tessera_indexer::store::{MAX_LINEAGE_TASKS, MAX_LISTED};
    let env = TestEnv::start(DeployConfig::default()).await;
    let (sponsor, stranger) = (env.actors.sponsor.address(), env.actors.client.address());
    let (agent, hired) = (env.actors.agent(0), env.actors.agent(1));
    let escrow = TaskEscrow::new(env.deployment.task_escrow, &env.provider);
    let usdc = MockUSDC::new(env.deployment.token, &env.provider);
    tessera_e2e::allow_escrow(&env).await;
    for who in [stranger, agent] {
        let mint = usdc.mint(who, U256::from(10_000_000_000u64));
        mint.from(env.actors.deployer.address()).send().await.unwrap().get_receipt().await.unwrap();
        let approve = usdc.approve(env.deployment.task_escrow, U256::MAX).from(who);
        approve.send().await.unwrap().get_receipt().await.unwrap();
    }
    let plan = keccak256("strangers-money");
    let now = env.driver().now().await.unwrap();
    let task = |plan, r: &str, parent, client| {
        let mut p = sponsor_task(&env, plan, r, parent, now, "data:,x");
        p.client = client;
        p
    };
    let send = |tx: TransactionRequest| async {
        let receipt = env.provider.send_transaction(tx).await.unwrap().get_receipt().await.unwrap();
        assert!(receipt.status(), "mined and succeeded");
    };
    let own = task_id_for(sponsor, keccak256("own"));
    send(
        escrow
            .createTask(task(plan, "own", U256::ZERO, sponsor))
            .from(sponsor)
            .into_transaction_request(),
    )
    .await;
    // The plan's executor hires another agent for its own task.
    let mut hire = task(alloy::primitives::B256::ZERO, "hire", own, agent);
    hire.executor = hired;
    send(escrow.createTask(hire).from(agent).into_transaction_request()).await;
    let hire = task_id_for(agent, keccak256("hire"));
    let mut strangers = Vec::new();
    for (r, plan_id, parent) in [
        ("named", plan, own),
        ("unnamed", alloy::primitives::B256::ZERO, own),
        ("rootless", plan, U256::ZERO),
    ] {
        let tx = escrow.createTask(task(plan_id, r, parent, stranger)).from(stranger);
        send(tx.into_transaction_request()).await;
        strangers.push(task_id_for(stranger, keccak256(r)));
    }
    let grafts = 8 * 256;
    for batch in 0..8 {
        let ps: Vec<_> = (0..256)
            .map(|i| task(plan, &format!("graft-{}", batch * 256 + i), own, stranger))
            .collect();
        let tx = escrow.createTasks(ps).from(stranger).gas(25_000_000);
        send(tx.into_transaction_request()).await;
    }
    assert!(grafts + 3 > MAX_LINEAGE_TASKS as usize, "more than a tree's bound");

    let dir = tempfile::tempdir().unwrap();
    let url = db.unwrap_or_else(|| sqlite(&dir, "index.db"));
    let mut ix = indexer(&env, &url, IndexerConfig::default()).await;
    ix.sync_once().await.unwrap();
    let tree = wire(within("the plan's tree", ix.store().plan_tree(&plan.to_string())).await);
    assert_eq!(tree["sponsor"], sponsor.to_string(), "{:#}", tree["sponsor"]);
    let tasks = tree["tasks"].as_array().unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t["task_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [own.to_string(), hire.to_string()], "the sponsor's task and the hire only");
    assert_eq!((tasks[0]["depth"].as_i64(), tasks[1]["depth"].as_i64()), (Some(0), Some(1)));
    assert_eq!(tasks[0]["subtree_cost"], (2 * TASK_AMOUNT).to_string(), "strangers cost nothing");
    assert_eq!(tree["truncated"], false, "strangers do not count in the bound");
    let foreign = tree["foreign"].as_array().unwrap();
    assert_eq!(foreign.len(), MAX_LISTED as usize);
    assert_eq!(tree["foreign_truncated"], true);
    assert!(foreign.iter().all(|t| t["funder"] == stranger.to_string()), "only the stranger's");
    let listed: Vec<&str> = foreign.iter().map(|t| t["task_id"].as_str().unwrap()).collect();
    for t in &strangers {
        assert!(listed.contains(&t.to_string().as_str()), "{t} is foreign");
    }
    let mut body = tree.clone();
    body["block"] = json!(0);
    let text = tessera_indexer::render::plan_tree(&body);
    assert!(text.contains("foreign: 500 tasks (and more) naming this plan"), "{text}");

    // The sponsor named by the caller: the same tree.
    let named = ix.store().plan_tree_of(&plan.to_string(), Some(sponsor)).await.unwrap();
    assert_eq!(wire(named)["tasks"], tree["tasks"]);
}

#[tokio::test]
async fn strangers_tasks_are_kept_out_of_a_plans_tree_on_sqlite() {
    strangers_tasks_are_kept_out_of_a_plans_tree(None).await;
}

#[tokio::test]
async fn strangers_tasks_are_kept_out_of_a_plans_tree_on_postgresql() {
    if let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_foreign").await {
        strangers_tasks_are_kept_out_of_a_plans_tree(Some(url)).await;
    }
}

/// A store answer as the API sends it.
fn wire(answer: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(answer).expect("store answers serialize")
}

/// An executor's decline on anvil reaches the index: the task Declined with
/// its reason, the agent's stats count it, and `tessera tasks tree` says it.
#[tokio::test]
async fn a_decline_on_chain_is_indexed_with_its_reason() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let mut d = env.driver();
    d.scenario("indexed decline");
    let executor = env.actors.agent(0);
    let params = d.params(executor, tessera_e2e::TASK_AMOUNT, "data:,x".into()).await.unwrap();
    let mut rec = d.create_with_permit(params).await.unwrap();
    let reason = "data:application/json,{\"reason\":\"no blob stored for the source\"}";
    d.escrow.decline(executor, &mut rec, reason).await.unwrap();

    let mut ix = indexer(&env, "sqlite::memory:", IndexerConfig::default()).await;
    ix.sync_once().await.unwrap();
    let one = wire(ix.store().task(&rec.id.to_string()).await.unwrap().unwrap());
    assert_eq!(one["status"], "Declined");
    assert_eq!(one["decline_reason"], "no blob stored for the source");
    assert_eq!(one["decline_reason_uri"], reason);
    assert!(one["flagged"].is_null() && one["decline_error"].is_null(), "{one:#}");
    let agent = wire(ix.store().agent(&executor.to_string()).await.unwrap().unwrap());
    assert_eq!(agent["stats"]["declined"], 1);
    assert_eq!(agent["stats"]["success_rate"], 0.0, "a decline is no success");

    let plan = keccak256("indexed decline").to_string();
    let tree = wire(ix.store().plan_tree(&plan).await.unwrap());
    let text = tessera_indexer::render::plan_tree(&tree);
    assert!(text.contains("Declined") && text.contains("declined: no blob stored for the source"));
}

/// A nested plan run for real (three levels: translate → [summarize →
/// [classify]] → entities), indexed from the chain, and its tree asked
/// through `/graphql` as serve embeds the index (under `/index`, over
/// HTTP): the roots, the children down the levels with their paths and
/// groups, the nested plans with their costs, the envelopes decoded.
#[tokio::test]
async fn a_nested_plans_tree_through_graphql_after_a_real_run() {
    let stack = Stack::start().await;
    let (a0, a1, a2, a3) = (
        stack.env.actors.agent(0),
        stack.env.actors.agent(1),
        stack.env.actors.agent(2),
        stack.env.actors.agent(3),
    );
    let plan_id = tessera_orchestrator::plan::Plan::id_from_label("graphql-nested");
    let step = |index: u32, capability: &str, spec: &str, executor, cost: u64, deps: &[u32]| {
        json!({"index": index, "capability": capability, "spec": spec, "executor": executor,
               "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps})
    };
    let nested = |index: u32, spec: &str, share: u64, deps: &[u32], subtasks: Vec<Value>| {
        json!({"index": index, "spec": spec, "cost": share, "deadline_offset_secs": 3600,
               "depends_on": deps, "plan": {"subtasks": subtasks}})
    };
    let plan = json!({
        "version": 1, "id": plan_id, "review": "auto", "budget": 10_000_000u64,
        "source": "The harbour authority opened a new ferry line on Friday. Students welcomed it.",
        "subtasks": [
            step(0, "translate", "Translate the article to French", a2, 800_000, &[]),
            nested(1, "Digest the translation", 700_000, &[0], vec![
                step(0, "summarize", "Summarize the translation", a1, 400_000, &[]),
                nested(1, "Judge the digest", 250_000, &[0], vec![
                    step(0, "sentiment-classify", "Classify the tone", a3, 200_000, &[]),
                ]),
            ]),
            step(2, "extract-entities", "List the entities of the digest", a0, 300_000, &[1]),
        ],
    });
    let id = stack.run_plan(&plan).await;
    stack.wait_state(&id, "completed", 90).await;

    let dir = tempfile::tempdir().unwrap();
    let store = IndexStore::connect(&sqlite(&dir, "index.db")).await.unwrap();
    let blobs: std::sync::Arc<dyn tessera_bindings::envelope::BlobStore + Send + Sync> =
        std::sync::Arc::new(tessera_bindings::envelope::FsBlobStore::new(&stack.blobs));
    let mut ix = Indexer::new(
        stack.env.provider.clone(),
        stack.env.deployment.clone(),
        store,
        Some(blobs),
        IndexerConfig::default(),
    );
    ix.sync_once().await.unwrap();

    // Served as serve embeds it: the index's router under `/index`.
    let gate = tessera_http::limits::StreamGate::new(&tessera_http::limits::HttpLimits::default());
    let app = axum::Router::new().nest("/index", tessera_indexer::api::of(&ix, gate));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/index/graphql", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let query = "query Tree($plan: String!) {
  plan(id: $plan) {
    cost
    roots {
      task { id capability spec path groups status envelope { hash } }
      subtreeCost
      children {
        task { capability path groups status }
        children {
          task { capability path groups status }
          children { task { capability path groups status } }
        }
      }
    }
    nestedPlans { label groups cost }
    foreign { id }
  }
}";
    let http = reqwest::Client::new();
    let answer: Value = http
        .post(&base)
        .json(&json!({ "query": query, "variables": { "plan": plan_id.to_string() } }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["errors"], Value::Null, "{answer:#}");
    let p = &answer["data"]["plan"];
    assert_eq!(p["cost"], "1700000", "{p:#}");
    assert_eq!(p["foreign"], json!([]));
    // One root; parent links follow each step's first input, so the tree
    // is a chain down the levels, each node with its path and groups.
    let roots = p["roots"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{p:#}");
    let mut chain = Vec::new();
    let mut node = &roots[0];
    loop {
        let t = &node["task"];
        assert_eq!(t["status"], "Paid", "{t}");
        chain.push((t["capability"].clone(), t["path"].clone(), t["groups"].clone()));
        match node["children"].as_array().map(Vec::as_slice) {
            Some([only]) => node = only,
            Some([]) | None => break,
            Some(more) => panic!("one child expected: {more:?}"),
        }
    }
    assert_eq!(
        chain,
        [
            (json!("translate"), json!("0"), json!([])),
            (json!("summarize"), json!("1.0"), json!(["Digest the translation"])),
            (
                json!("sentiment-classify"),
                json!("1.1.0"),
                json!(["Digest the translation", "Judge the digest"])
            ),
            (json!("extract-entities"), json!("2"), json!([])),
        ]
    );
    assert_eq!(roots[0]["subtreeCost"], "1700000");
    assert_eq!(roots[0]["task"]["spec"], "Translate the article to French");
    let root = ix.store().task(roots[0]["task"]["id"].as_str().unwrap()).await.unwrap().unwrap();
    assert_eq!(
        roots[0]["task"]["envelope"]["hash"],
        keccak256(root.task.spec_uri.as_bytes()).to_string(),
        "the envelope's hash is the escrow's spec hash"
    );
    assert_eq!(
        p["nestedPlans"],
        json!([
            {"label": "Digest the translation", "groups": ["Digest the translation"], "cost": "600000"},
            {"label": "Judge the digest", "groups": ["Digest the translation", "Judge the digest"], "cost": "200000"},
        ])
    );
    let explorer = http.get(&base).send().await.unwrap().text().await.unwrap();
    assert!(explorer.contains("'/index/graphql'"), "the explorer under the prefix");
    server.abort();
}
