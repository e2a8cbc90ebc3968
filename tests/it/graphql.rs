//! GraphQL over an index built from a real run on anvil, on SQLite and on
//! PostgreSQL, asked over HTTP at `/graphql`: two plans run by the
//! orchestrator and its workers (one settled on its own, one disputed,
//! ruled, appealed and ruled again by the arbiters), tasks of a second
//! funder and tasks left open, one declined while a subscription over
//! `/graphql/stream` watches, ERC-8004 feedback, the capability catalogue,
//! and a reorganisation (a decline and a creation taken away, told live to
//! both subscriptions). Every query type is asked and checked against
//! what the chain holds; every task filter matches some tasks and excludes
//! others; pages are walked; hostile queries are refused with their
//! reason, and the index answers afterwards.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, B256, U256, keccak256},
    providers::Provider,
    rpc::types::{Filter, Log},
    sol_types::SolEvent,
};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tessera_anvil::deploy::DEMO_AGENTS;
use tessera_arbiter::{Judge, council::Council};
use tessera_bindings::{
    AgentRegistry, MockUSDC, TaskEscrow, capability,
    client::EscrowClient,
    envelope::{BlobStore, Envelope, EnvelopeCodec, FsBlobStore, Parent},
    task::TaskRecord,
};
use tessera_e2e::{
    Stack, TASK_AMOUNT, TestEnv,
    mock_openai::{MockOpenAi, Reply},
};
use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
use tessera_orchestrator::{feedback::FeedbackMode, plan::Plan, runner::RunnerConfig};

use crate::support;

const ARTICLE: &str = "The harbour reopened on Tuesday after the storm. Ships had queued for \
two days. Traders said the delay cost them dearly. The port authority promised new breakwaters.";
/// A short note: the extractive summary is nearly all of it, so the
/// arbiter's rubric splits the amount.
const NOTE: &str = "The ferry leaves at nine. Bring your ticket and arrive early.";
const DISPUTE_REASON: &str = "it just repeats the note";
const APPEAL_REASON: &str = "The split pays for a copy of the note.";
const APPEAL_RATIONALE: &str = "A summary of a two-sentence note may keep both sentences.";
const DECLINE_REASON: &str = "no blob stored for the source";

/// A task as the chain tells it: its creation event, its status now, and
/// whether it was ever disputed.
#[derive(Debug, Clone)]
struct Truth {
    id: String,
    plan: String,
    parent: String,
    funder: Address,
    client: Address,
    executor: Address,
    capability: Option<String>,
    amount: u128,
    spec_uri: String,
    block: u64,
    at: u64,
    status: String,
    disputed: bool,
}

/// Every task the escrow created, as the chain has it now, by id.
async fn chain_tasks(env: &TestEnv) -> Vec<Truth> {
    let logs = |signature: B256| async move {
        let filter = Filter::new()
            .address(env.deployment.task_escrow)
            .event_signature(signature)
            .from_block(env.deployment.deploy_block);
        env.provider.get_logs(&filter).await
    };
    let disputed: HashSet<U256> = logs(TaskEscrow::TaskDisputed::SIGNATURE_HASH)
        .await
        .unwrap()
        .iter()
        .map(|l| l.log_decode::<TaskEscrow::TaskDisputed>().unwrap().inner.data.taskId)
        .collect();
    let escrow = EscrowClient::new(env.provider.clone(), env.deployment.task_escrow);
    let mut out = Vec::new();
    for log in logs(TaskEscrow::TaskCreated::SIGNATURE_HASH).await.unwrap() {
        let c = log.log_decode::<TaskEscrow::TaskCreated>().unwrap().inner.data;
        let block = log.block_number.unwrap();
        let header = env
            .provider
            .get_block_by_number(BlockNumberOrTag::Number(block))
            .await
            .unwrap()
            .expect("the block of a log");
        let now = escrow.fetch(c.taskId, env.deployment.deploy_block).await.unwrap();
        out.push(Truth {
            id: c.taskId.to_string(),
            plan: c.planId.to_string(),
            parent: c.parentId.to_string(),
            funder: c.task.funder,
            client: c.task.client,
            executor: c.task.executor,
            capability: capability::decode(c.capability),
            amount: c.task.amount,
            spec_uri: c.specURI.clone(),
            block,
            at: header.header.timestamp,
            status: now.status().as_str().to_owned(),
            disputed: disputed.contains(&c.taskId),
        });
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// Every log of the escrow about task `id`, in chain order.
async fn task_logs(env: &TestEnv, id: &str) -> Vec<Log> {
    let id: U256 = id.parse().unwrap();
    env.provider
        .get_logs(
            &Filter::new()
                .address(env.deployment.task_escrow)
                .topic1(B256::from(id))
                .from_block(env.deployment.deploy_block),
        )
        .await
        .unwrap()
}

/// The name of an escrow event about one task, by its signature.
fn event_name(log: &Log) -> &'static str {
    use TaskEscrow as E;
    let names: [(B256, &'static str); 10] = [
        (E::TaskCreated::SIGNATURE_HASH, "TaskCreated"),
        (E::TaskAccepted::SIGNATURE_HASH, "TaskAccepted"),
        (E::TaskCompleted::SIGNATURE_HASH, "TaskCompleted"),
        (E::TaskDisputed::SIGNATURE_HASH, "TaskDisputed"),
        (E::DisputeRuled::SIGNATURE_HASH, "DisputeRuled"),
        (E::RulingAppealed::SIGNATURE_HASH, "RulingAppealed"),
        (E::AppealRuled::SIGNATURE_HASH, "AppealRuled"),
        (E::TaskDeclined::SIGNATURE_HASH, "TaskDeclined"),
        (E::TaskReassigned::SIGNATURE_HASH, "TaskReassigned"),
        (E::TaskSettled::SIGNATURE_HASH, "TaskSettled"),
    ];
    let topic = log.topics()[0];
    names.iter().find(|(s, _)| *s == topic).map_or("?", |(_, n)| n)
}

/// Every log the index reads (escrow, agent registry, reputation registry).
async fn indexed_logs(env: &TestEnv) -> u64 {
    let mut contracts = vec![env.deployment.task_escrow, env.deployment.agent_registry];
    contracts.extend(env.deployment.reputation_registry);
    let filter = Filter::new().address(contracts).from_block(env.deployment.deploy_block);
    env.provider.get_logs(&filter).await.unwrap().len() as u64
}

/// A GraphQL client of one index over HTTP.
struct Gql {
    http: reqwest::Client,
    url: String,
}

impl Gql {
    /// POSTs `body` as it is; the status and the JSON answer.
    async fn post(&self, body: String) -> (u16, Value) {
        let resp = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap())
    }

    /// The data of `query` with `variables`, which must answer without
    /// errors.
    async fn data(&self, query: &str, variables: Value) -> Value {
        let body = json!({ "query": query, "variables": variables }).to_string();
        let (status, answer) = self.post(body).await;
        assert_eq!(status, 200, "{query}: {answer:#}");
        assert_eq!(answer["errors"], Value::Null, "{query}: {answer:#}");
        answer["data"].clone()
    }

    /// The error messages of `query`, answered 200.
    async fn errors(&self, query: &str) -> Vec<String> {
        let (status, answer) = self.post(json!({ "query": query }).to_string()).await;
        assert_eq!(status, 200, "{query}: {answer:#}");
        messages(&answer)
    }

    /// The ids of every task matching `filter`, walked page by page
    /// (`first` each): they come in id order, each once.
    async fn task_ids(&self, filter: &Value, first: u32) -> (Vec<String>, usize) {
        let query = "query Page($filter: TaskFilter, $first: Int, $after: String) {
  tasks(filter: $filter, first: $first, after: $after) {
    edges { cursor node { id } }
    pageInfo { hasNextPage endCursor }
  }
}";
        let (mut ids, mut pages, mut after) = (Vec::new(), 0, Value::Null);
        loop {
            let d =
                self.data(query, json!({ "filter": filter, "first": first, "after": after })).await;
            pages += 1;
            let page = &d["tasks"];
            assert!(page["edges"].as_array().unwrap().len() <= first as usize);
            for edge in page["edges"].as_array().unwrap() {
                assert_eq!(edge["cursor"], edge["node"]["id"], "a task's cursor is its id");
                ids.push(edge["node"]["id"].as_str().unwrap().to_owned());
            }
            if page["pageInfo"]["hasNextPage"] != true {
                break;
            }
            after = page["pageInfo"]["endCursor"].clone();
            assert_eq!(after, page["edges"].as_array().unwrap().last().unwrap()["cursor"]);
            assert!(pages < 100, "the pages end");
        }
        (ids, pages)
    }
}

impl Gql {
    /// Opens a subscription (`body`) over `/graphql/stream` (POSTed, or
    /// its query as a GET parameter when `get`) beside the `open` streams
    /// already listening to `ix`'s updates, and waits until it listens too.
    async fn subscribe(
        &self,
        ix: &Indexer,
        body: &Value,
        get: bool,
        open: usize,
    ) -> reqwest::Response {
        let updates = ix.updates();
        let updates = &updates;
        let listening = |n: usize| async move {
            let end = tokio::time::Instant::now() + Duration::from_secs(10);
            while updates.receiver_count() != n {
                assert!(tokio::time::Instant::now() < end, "{n} listening, never");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        listening(open).await;
        let url = format!("{}/stream", self.url);
        let request = if get {
            self.http.get(url).query(&[("query", body["query"].as_str().unwrap())])
        } else {
            self.http.post(url).json(body)
        };
        let resp = request.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let kind = resp.headers()["content-type"].to_str().unwrap();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        // The stream subscribes once its producer runs.
        listening(open + 1).await;
        resp
    }
}

/// The first answer (`next`) a subscription's stream sends.
async fn first_answer(resp: reqwest::Response) -> Value {
    let mut frames = resp.bytes_stream();
    let mut buf = String::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let chunk = frames.next().await.expect("the stream stays open").unwrap();
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                if frame.lines().any(|l| l == "event: next") {
                    let data = frame.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                    return serde_json::from_str::<Value>(data).unwrap();
                }
            }
        }
    })
    .await
    .expect("a live answer within 30 s")
}

/// The messages of a GraphQL answer's `errors`.
fn messages(answer: &Value) -> Vec<String> {
    answer["errors"]
        .as_array()
        .map(|e| e.iter().map(|m| m["message"].as_str().unwrap_or_default().to_owned()).collect())
        .unwrap_or_default()
}

fn lower(a: &Address) -> String {
    a.to_string().to_lowercase()
}

/// What the chain run left: the two plans' runs, the tasks outside them.
struct Ran {
    /// Plan A: translate (agent 2) → a nested plan "Digest the translation"
    /// of one step, summarize (agent 1); settled on its own.
    plan_a: String,
    run_a: Value,
    /// Plan B: summarize (agent 1, disputed, ruled, appealed, paid in full
    /// on appeal) → tone (agent 3), reviewed by hand.
    plan_b: String,
    run_b: Value,
    /// The translator's ERC-8004 agent id.
    translator_identity: U256,
    /// The sponsor's open tasks for agent 0 (no worker runs for it); the
    /// first is declined later, while a subscription watches; the second
    /// is declined, then the decline reorganised away.
    open: Vec<TaskRecord>,
    open_plan: String,
    /// Chain time just before the open tasks were created (an hour after
    /// the plans).
    open_at: u64,
    /// A task a second funder (the client account) put under plan A's root.
    stranger_task: String,
}

/// Runs everything on `stack`'s chain (see the module docs).
async fn run_on_chain(stack: &Stack) -> Ran {
    let env = &stack.env;
    let (a1, a2, a3) = (env.actors.agent(1), env.actors.agent(2), env.actors.agent(3));
    let translator_identity = support::link_identity(env, a2).await;
    let db = format!("sqlite://{}", stack.blobs.with_file_name("arbiter.db").display());
    let mock = MockOpenAi::start().await;
    let council = Council::new(&mock.base_url, "graphql-test", "k", Duration::from_secs(5));
    let arbiter = support::spawn_arbiter(stack, false, Judge::Offline, &db).await;
    let appeal_arbiter =
        support::spawn_arbiter(stack, true, Judge::Council(Box::new(council)), &db).await;

    let step = |index: u32, capability: &str, spec: &str, executor, cost: u64, deps: &[u32]| {
        json!({"index": index, "capability": capability, "spec": spec, "executor": executor,
               "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps})
    };
    let plan_a = Plan::id_from_label("graphql-a");
    let run_a = stack
        .run_plan(&json!({
            "version": 1, "id": plan_a, "review": "auto", "budget": 5_000_000u64,
            "source": ARTICLE, "review_window_secs": 600,
            "subtasks": [
                step(0, "translate", "Translate the article to French", a2, 800_000, &[]),
                json!({"index": 1, "spec": "Digest the translation", "cost": 700_000,
                       "deadline_offset_secs": 3600, "depends_on": [0], "plan": {"subtasks": [
                    step(0, "summarize", "Summarize the translation", a1, 400_000, &[]),
                ]}}),
            ],
        }))
        .await;
    let plan_b = Plan::id_from_label("graphql-b");
    let run_b = stack
        .run_plan(&json!({
            "version": 1, "id": plan_b, "review": "manual", "budget": 5_000_000u64,
            "source": NOTE, "review_window_secs": 600,
            "subtasks": [
                step(0, "summarize", "Summarize the note", a1, 400_000, &[]),
                step(1, "sentiment-classify", "Tone of the summary", a3, 200_000, &[0]),
            ],
        }))
        .await;
    // Plan B: the summary disputed, ruled (a split), appealed, paid in full.
    stack.wait_phase(&run_b, 0, "completed", 60).await;
    let (status, body) = stack
        .post(
            &format!("/api/runs/{run_b}/subtasks/0/review"),
            &json!({"decision": "dispute", "reason": DISPUTE_REASON}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    stack.wait_phase(&run_b, 0, "ruled", 60).await;
    mock.script([Reply::Arguments(json!({
        "verdict": "worker", "executor_share_bps": 10_000, "rationale": APPEAL_RATIONALE
    }))]);
    let (status, body) = stack
        .post(&format!("/api/runs/{run_b}/appeal"), &json!({"index": 0, "reason": APPEAL_REASON}))
        .await;
    assert_eq!(status, 202, "{body}");
    stack.wait_phase(&run_b, 0, "paid", 60).await;
    stack.wait_phase(&run_b, 1, "completed", 60).await;
    let (status, body) = stack
        .post(&format!("/api/runs/{run_b}/subtasks/1/review"), &json!({"decision": "approve"}))
        .await;
    assert!(status < 300, "{body}");
    let run_b_view = stack.wait_state(&run_b, "completed", 60).await;
    let run_a_view = stack.wait_state(&run_a, "completed", 60).await;
    arbiter.abort();
    appeal_arbiter.abort();
    // The translator's feedback, given by the sponsor after settlement
    // (the other executors link no identity); nothing left to send.
    let rows = feedback_done(stack, &run_a, 2).await;
    let given: Vec<String> =
        rows.iter().filter(|f| f.3 == "given").map(|f| f.1.to_lowercase()).collect();
    assert_eq!(given, [lower(&a2)], "{rows:?}");
    feedback_done(stack, &run_b, 2).await;

    // An hour later, open tasks for agent 0, whose worker does not run.
    stack.advance(3600).await;
    let blobs = FsBlobStore::new(&stack.blobs);
    let mut d = env.driver();
    d.scenario("graphql-open");
    let open_at = d.now().await.unwrap();
    let open_plan = keccak256("graphql-open");
    let mut open = Vec::new();
    for i in 0..3 {
        let mut envelope = Envelope::new(Parent::Plan(open_plan), format!("Summarize part {i}"));
        envelope.capability = Some("summarize".into());
        let spec = EnvelopeCodec::default().encode(&envelope, &blobs).unwrap();
        let params = d.params(env.actors.agent(0), TASK_AMOUNT, spec).await.unwrap();
        open.push(d.create_with_permit(params).await.unwrap());
    }

    // A second funder puts a task under plan A's root, naming plan A.
    let stranger = env.actors.client.address();
    let usdc = MockUSDC::new(env.deployment.token, &env.provider);
    let mint = usdc.mint(stranger, U256::from(10_000_000u64));
    tessera_e2e::mined(mint.from(env.actors.deployer.address())).await;
    tessera_e2e::mined(usdc.approve(env.deployment.task_escrow, U256::MAX).from(stranger)).await;
    let root_a = run_a_view["subtasks"][0]["task_id"].as_str().unwrap().parse::<U256>().unwrap();
    let now = d.now().await.unwrap();
    let mut params =
        tessera_e2e::sponsor_task(env, plan_a.into(), "stranger", root_a, now, "data:,x");
    params.client = stranger;
    let escrow = TaskEscrow::new(env.deployment.task_escrow, &env.provider);
    tessera_e2e::mined(escrow.createTask(params).from(stranger)).await;
    let stranger_task = tessera_e2e::task_id_for(stranger, keccak256("stranger")).to_string();

    Ran {
        plan_a: plan_a.to_string(),
        run_a: run_a_view,
        plan_b: plan_b.to_string(),
        run_b: run_b_view,
        translator_identity,
        open,
        open_plan: open_plan.to_string(),
        open_at,
        stranger_task,
    }
}

/// Waits until `run` has a feedback row for each of its `tasks` and none
/// is still being sent (nothing more goes on chain for it); its rows.
async fn feedback_done(
    stack: &Stack,
    run: &str,
    tasks: usize,
) -> Vec<(String, String, i64, String, Option<String>)> {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let rows = stack.orch.store().feedback_of(run).await.unwrap();
        if rows.len() >= tasks && rows.iter().all(|f| f.3 != "sending") {
            return rows;
        }
        assert!(tokio::time::Instant::now() < end, "feedback never done: {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sub-task `i`'s task id in a run's view.
fn task_of(run: &Value, i: usize) -> String {
    run["subtasks"][i]["task_id"].as_str().unwrap().to_owned()
}

/// The whole walk (see the module docs) on the index at `db` (a fresh
/// SQLite file when `None`).
async fn graphql_over_a_real_run(db: Option<String>) {
    let config = RunnerConfig { feedback: FeedbackMode::PerTask, ..RunnerConfig::default() };
    // No worker for agent 0: its tasks stay open until the test acts.
    let stack = Stack::start_custom(config, None, &[1, 2, 3, 4]).await;
    let ran = run_on_chain(&stack).await;
    let env = &stack.env;

    let dir = tempfile::tempdir().unwrap();
    let url = db.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("index.db").display()));
    let store = IndexStore::connect(&url).await.unwrap();
    let blobs: Arc<dyn BlobStore + Send + Sync> = Arc::new(FsBlobStore::new(&stack.blobs));
    let cfg = IndexerConfig::default();
    let mut ix =
        Indexer::new(env.provider.clone(), env.deployment.clone(), store, Some(blobs), cfg);
    ix.sync_once().await.unwrap();

    let gate = tessera_http::limits::StreamGate::new(&tessera_http::limits::HttpLimits::default());
    let app = tessera_indexer::api::of(&ix, gate);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let gql = Gql { http: reqwest::Client::new(), url: format!("{base}/graphql") };

    a_subscription_sees_a_live_decline(&gql, &mut ix, &stack, &ran).await;
    let truth = chain_tasks(env).await;
    status_and_tasks(&gql, env, &truth).await;
    every_task_filter(&gql, &stack, &ran, &truth).await;
    one_task_in_full(&gql, env, &ran, &truth).await;
    plan_tree(&gql, &stack, &ran, &truth).await;
    the_dispute(&gql, &stack, &ran).await;
    agents_and_feedback(&gql, &stack, &ran, &truth).await;
    the_catalogue(&gql, env).await;
    hostile_queries(&gql, &base, &ran).await;
    a_reorganisation(&gql, &mut ix, env, &ran).await;
    server.abort();
}

#[tokio::test]
async fn graphql_over_a_real_run_on_sqlite() {
    graphql_over_a_real_run(None).await;
}

#[tokio::test]
async fn graphql_over_a_real_run_on_postgresql() {
    if let Some(url) = tessera_db::test_utils::scratch_postgres_url("graphql_e2e").await {
        graphql_over_a_real_run(Some(url)).await;
    }
}

/// A subscription over `/graphql/stream` for the open plan's declined
/// tasks: one more open task is created and indexed (still `Created`, not
/// what it asked for), then agent 0 declines an open task on chain, and
/// once indexed the stream carries the decline.
async fn a_subscription_sees_a_live_decline(gql: &Gql, ix: &mut Indexer, stack: &Stack, ran: &Ran) {
    let env = &stack.env;
    let query = "subscription Declines($plan: String!) {
  taskUpdates(plan: $plan, status: [\"Declined\"]) {
    block
    task { id status executor declineReason { uri json error } lateDecline }
  }
}";
    let body = json!({ "query": query, "variables": { "plan": ran.open_plan } });
    let stream = gql.subscribe(ix, &body, false, 0).await;

    // One more open task in the same plan, and a decline.
    let mut d = env.driver();
    d.scenario("graphql-open");
    let mut params = d.params(env.actors.agent(0), TASK_AMOUNT, "data:,x".into()).await.unwrap();
    params.r#ref = keccak256("graphql-open-later");
    d.create_with_permit(params).await.unwrap();
    // Indexed first: a stream not filtering by status would tell it first.
    ix.sync_once().await.unwrap();
    let mut declined = ran.open[0].clone();
    let reason = format!("data:application/json,{{\"reason\":\"{DECLINE_REASON}\"}}");
    d.escrow.decline(env.actors.agent(0), &mut declined, &reason).await.unwrap();
    let block = env.provider.get_block_number().await.unwrap();
    ix.sync_once().await.unwrap();

    let next = first_answer(stream).await;
    assert_eq!(next["errors"], Value::Null, "{next:#}");
    let update = &next["data"]["taskUpdates"];
    assert_eq!(update["block"], block, "{update:#}");
    let t = &update["task"];
    assert_eq!(t["id"], declined.id.to_string(), "{update:#}");
    assert_eq!(t["status"], "Declined");
    assert_eq!(t["executor"].as_str().unwrap().to_lowercase(), lower(&env.actors.agent(0)));
    assert_eq!(t["declineReason"]["uri"], reason.as_str());
    assert_eq!(t["declineReason"]["json"], json!({ "reason": DECLINE_REASON }));
    assert_eq!(t["lateDecline"], false);
}

/// `status`, and every task with its columns as the chain has them.
async fn status_and_tasks(gql: &Gql, env: &TestEnv, truth: &[Truth]) {
    let head = env.provider.get_block_number().await.unwrap();
    let d =
        gql.data("{ status { head indexedBlock safeBlock reorgDepth events } }", json!({})).await;
    let s = &d["status"];
    let depth = IndexerConfig::default().reorg_depth;
    assert_eq!(
        (s["head"].as_u64(), s["indexedBlock"].as_u64(), s["reorgDepth"].as_u64()),
        (Some(head), Some(head), Some(depth)),
        "{s}"
    );
    assert_eq!(s["safeBlock"].as_u64(), Some(head.saturating_sub(depth)), "{s}");
    assert_eq!(s["events"].as_u64(), Some(indexed_logs(env).await), "every log stored once");

    let d = gql
        .data(
            "{ tasks(first: 500) { nodes { id planId parentId funder client executor amount status
               capability createdBlock createdAt disputed } pageInfo { hasNextPage endCursor } } }",
            json!({}),
        )
        .await;
    let nodes = d["tasks"]["nodes"].as_array().unwrap();
    assert_eq!(d["tasks"]["pageInfo"], json!({ "hasNextPage": false, "endCursor": null }));
    assert_eq!(nodes.len(), truth.len(), "every task the escrow created: {nodes:#?}");
    let by_id: HashMap<&str, &Truth> = truth.iter().map(|t| (t.id.as_str(), t)).collect();
    for n in nodes {
        let t = by_id[n["id"].as_str().unwrap()];
        let addr = |k: &str| n[k].as_str().unwrap().to_lowercase();
        assert_eq!(
            (
                n["planId"].as_str(),
                n["parentId"].as_str(),
                addr("funder"),
                addr("client"),
                addr("executor")
            ),
            (
                Some(t.plan.as_str()),
                Some(t.parent.as_str()),
                lower(&t.funder),
                lower(&t.client),
                lower(&t.executor)
            ),
            "{n}"
        );
        assert_eq!(n["amount"], t.amount.to_string(), "{n}");
        assert_eq!(n["status"], t.status.as_str(), "{n}");
        assert_eq!(n["capability"].as_str(), t.capability.as_deref(), "{n}");
        assert_eq!(
            (n["createdBlock"].as_u64(), n["createdAt"].as_u64()),
            (Some(t.block), Some(t.at))
        );
        assert_eq!(n["disputed"], t.disputed, "{n}");
    }
}

/// Every task filter: each one given matches some tasks and excludes
/// others, exactly as the chain says; filters combine; pages of two walk
/// the whole list without loss or repeat.
async fn every_task_filter(gql: &Gql, stack: &Stack, ran: &Ran, truth: &[Truth]) {
    let a = &stack.env.actors;
    let sponsor = a.sponsor.address();
    let stranger = a.client.address();
    let (a0, a1, a4) = (a.agent(0), a.agent(1), a.agent(4));
    let root_a = task_of(&ran.run_a, 0);
    let mut blocks: Vec<u64> = truth.iter().map(|t| t.block).collect();
    blocks.sort_unstable();
    let (lo, hi) = (blocks[2], blocks[blocks.len() - 3]);
    // The last plan task's time and the first open task's, exactly: the
    // bounds are inclusive.
    let at = ran.open_at;
    let last_plan_at = truth.iter().filter(|t| t.at < at).map(|t| t.at).max().unwrap();
    let first_open_at = truth.iter().filter(|t| t.at >= at).map(|t| t.at).min().unwrap();
    type Holds<'a> = Box<dyn Fn(&Truth) -> bool + 'a>;
    // (filter, what it must match, whether it must match something)
    let cases: Vec<(Value, Holds<'_>, bool)> = vec![
        (json!({"status": ["Paid"]}), Box::new(|t| t.status == "Paid"), true),
        (
            json!({"status": ["Created", "Declined"]}),
            Box::new(|t| t.status == "Created" || t.status == "Declined"),
            true,
        ),
        (json!({"status": ["Expired"]}), Box::new(|t| t.status == "Expired"), false),
        (json!({"executor": a0.to_string()}), Box::new(move |t| t.executor == a0), true),
        // Any case: the address is matched as an address.
        (
            json!({"executor": a1.to_string().to_lowercase()}),
            Box::new(move |t| t.executor == a1),
            true,
        ),
        (json!({"executor": a4.to_string()}), Box::new(move |t| t.executor == a4), false),
        (json!({"client": stranger.to_string()}), Box::new(move |t| t.client == stranger), true),
        (json!({"client": sponsor.to_string()}), Box::new(move |t| t.client == sponsor), true),
        (json!({"funder": stranger.to_string()}), Box::new(move |t| t.funder == stranger), true),
        (json!({"funder": sponsor.to_string()}), Box::new(move |t| t.funder == sponsor), true),
        (json!({"plan": ran.plan_a}), Box::new(|t| t.plan == ran.plan_a), true),
        (
            json!({"plan": ran.plan_b.to_uppercase().replace("0X", "0x")}),
            Box::new(|t| t.plan == ran.plan_b),
            true,
        ),
        (json!({"parent": "0"}), Box::new(|t| t.parent == "0"), true),
        (json!({"parent": root_a.clone()}), Box::new(move |t| t.parent == root_a), true),
        (
            json!({"capability": "translate"}),
            Box::new(|t| t.capability.as_deref() == Some("translate")),
            true,
        ),
        (
            json!({"capability": "summarize"}),
            Box::new(|t| t.capability.as_deref() == Some("summarize")),
            true,
        ),
        (
            json!({"capability": "extract-entities"}),
            Box::new(|t| t.capability.as_deref() == Some("extract-entities")),
            false,
        ),
        (json!({"createdBlockFrom": lo}), Box::new(move |t| t.block >= lo), true),
        (json!({"createdBlockTo": lo}), Box::new(move |t| t.block <= lo), true),
        (
            json!({"createdBlockFrom": lo, "createdBlockTo": hi}),
            Box::new(move |t| (lo..=hi).contains(&t.block)),
            true,
        ),
        (json!({"createdAtFrom": at}), Box::new(move |t| t.at >= at), true),
        (json!({"createdAtTo": at - 1}), Box::new(move |t| t.at < at), true),
        (json!({"createdAtFrom": first_open_at}), Box::new(move |t| t.at >= first_open_at), true),
        (json!({"createdAtTo": last_plan_at}), Box::new(move |t| t.at <= last_plan_at), true),
        (
            json!({"createdAtFrom": at, "createdAtTo": at + 3600}),
            Box::new(move |t| (at..=at + 3600).contains(&t.at)),
            true,
        ),
        (json!({"disputed": true}), Box::new(|t| t.disputed), true),
        (json!({"disputed": false}), Box::new(|t| !t.disputed), true),
        (
            json!({"status": ["Paid"], "executor": a1.to_string(), "disputed": true}),
            Box::new(move |t| t.status == "Paid" && t.executor == a1 && t.disputed),
            true,
        ),
        (
            json!({"plan": ran.plan_a, "funder": sponsor.to_string(), "capability": "summarize"}),
            Box::new(|t| {
                t.plan == ran.plan_a
                    && t.funder == sponsor
                    && t.capability.as_deref() == Some("summarize")
            }),
            true,
        ),
    ];
    let all: Vec<String> = truth.iter().map(|t| t.id.clone()).collect();
    let mut tried: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for (filter, holds, some) in &cases {
        let mut want: Vec<String> =
            truth.iter().filter(|t| holds(t)).map(|t| t.id.clone()).collect();
        want.sort();
        assert_eq!(!want.is_empty(), *some, "{filter}: the case is as meant ({want:?})");
        assert!(want.len() < all.len(), "{filter} excludes some task");
        let (got, _) = gql.task_ids(filter, 500).await;
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, want, "{filter}");
        for key in filter.as_object().unwrap().keys() {
            let seen = tried.entry(key.clone()).or_default();
            seen.0 |= !want.is_empty();
            seen.1 |= want.len() < all.len();
        }
    }
    let keys = [
        "status",
        "executor",
        "client",
        "funder",
        "plan",
        "parent",
        "capability",
        "createdBlockFrom",
        "createdBlockTo",
        "createdAtFrom",
        "createdAtTo",
        "disputed",
    ];
    for k in keys {
        assert_eq!(
            tried.get(k),
            Some(&(true, true)),
            "{k}: a case that matches and one that excludes"
        );
    }

    // Pages of two: the same tasks as one page, in the same order, each once.
    let (one_page, pages) = gql.task_ids(&json!({}), 500).await;
    assert_eq!(pages, 1);
    let (paged, pages) = gql.task_ids(&json!({}), 2).await;
    assert_eq!(paged, one_page, "no loss, no repeat");
    assert_eq!(pages, all.len().div_ceil(2), "{pages} pages of 2 for {} tasks", all.len());
    assert!(pages >= 3);
    let distinct: HashSet<&String> = paged.iter().collect();
    assert_eq!(distinct.len(), paged.len());
    // And filtered: pages of one over the sponsor's tasks.
    let filter = json!({"funder": sponsor.to_string()});
    let (paged, pages) = gql.task_ids(&filter, 1).await;
    assert_eq!(paged, gql.task_ids(&filter, 500).await.0);
    assert_eq!(pages, paged.len());
}

/// One task, every field: plan A's summary (child of the translation),
/// its history and transactions as the escrow's logs have them, its
/// envelope and result decoded, its parent and the translation's children.
async fn one_task_in_full(gql: &Gql, env: &TestEnv, ran: &Ran, truth: &[Truth]) {
    let (root, child) = (task_of(&ran.run_a, 0), task_of(&ran.run_a, 1));
    let query = "query One($id: String!) {
  task(id: $id) {
    id capability spec path groups amount executorPaid status disputed flagged envelopeError
    lateDecline createdBlock updatedBlock createdAt acceptedAt completedAt settledAt
    envelope { uri hash json text error }
    result { uri hash json text error }
    declineReason { uri }
    history { block logIndex event from to valid problem }
    transactions { block event txHash }
    parent { id capability children(first: 10) { nodes { id } pageInfo { hasNextPage } } }
    children { nodes { id } }
    dispute { status }
  }
}";
    let d = gql.data(query, json!({ "id": child })).await;
    let t = &d["task"];
    let spec_uri = &truth.iter().find(|x| x.id == child).unwrap().spec_uri;
    assert_eq!(t["id"], child.as_str());
    assert_eq!(
        (t["capability"].as_str(), t["spec"].as_str()),
        (Some("summarize"), Some("Summarize the translation"))
    );
    assert_eq!(
        (t["path"].as_str(), t["groups"].clone()),
        (Some("1.0"), json!(["Digest the translation"])),
        "the first step of the nested plan: {t:#}"
    );
    assert_eq!(
        (t["amount"].as_str(), t["executorPaid"].as_str()),
        (Some("400000"), Some("400000"))
    );
    assert_eq!((t["status"].as_str(), t["disputed"].as_bool()), (Some("Paid"), Some(false)));
    assert_eq!(
        (t["flagged"].clone(), t["envelopeError"].clone()),
        (Value::Null, Value::Null),
        "{t:#}"
    );
    assert_eq!((t["declineReason"].clone(), t["dispute"].clone()), (Value::Null, Value::Null));
    assert_eq!(t["envelope"]["uri"], spec_uri.as_str());
    assert_eq!(t["envelope"]["hash"], keccak256(spec_uri.as_bytes()).to_string());
    if spec_uri.starts_with("data:") {
        assert_eq!(t["envelope"]["json"]["spec"], "Summarize the translation", "{t:#}");
        assert_eq!(t["envelope"]["json"]["parent"], format!("task:{root}"), "{t:#}");
    }

    // History and transactions, as the escrow's logs about the task.
    let logs = task_logs(env, &child).await;
    let events: Vec<&str> = logs.iter().map(event_name).collect();
    let history: Vec<&str> =
        t["history"].as_array().unwrap().iter().map(|h| h["event"].as_str().unwrap()).collect();
    assert_eq!(history, events, "{t:#}");
    assert_eq!(events.first(), Some(&"TaskCreated"));
    assert_eq!(events.last(), Some(&"TaskSettled"));
    for (h, log) in t["history"].as_array().unwrap().iter().zip(&logs) {
        assert_eq!(h["valid"], true, "{h}");
        assert_eq!(
            (h["block"].as_u64(), h["logIndex"].as_u64()),
            (log.block_number, log.log_index)
        );
    }
    let txs: HashSet<String> =
        logs.iter().map(|l| l.transaction_hash.unwrap().to_string()).collect();
    let listed = t["transactions"].as_array().unwrap();
    assert!(!listed.is_empty(), "{t:#}");
    for tx in listed {
        assert!(txs.contains(tx["txHash"].as_str().unwrap()), "{tx} is one of the task's");
    }
    let created = listed.iter().find(|x| x["event"] == "TaskCreated").expect("the creation");
    assert_eq!(created["txHash"], logs[0].transaction_hash.unwrap().to_string());
    assert_eq!(t["createdBlock"], logs[0].block_number.unwrap());
    assert_eq!(t["updatedBlock"], logs.last().unwrap().block_number.unwrap());
    let (created_at, completed_at, settled_at) = (
        t["createdAt"].as_u64().unwrap(),
        t["completedAt"].as_u64().unwrap(),
        t["settledAt"].as_u64().unwrap(),
    );
    assert!(created_at <= completed_at && completed_at <= settled_at, "{t:#}");

    // The result, as the completion carried it.
    let completion = logs
        .iter()
        .find_map(|l| l.log_decode::<TaskEscrow::TaskCompleted>().ok())
        .expect("completed")
        .inner
        .data;
    assert_eq!(t["result"]["uri"], completion.resultURI.as_str());
    assert_eq!(t["result"]["hash"], keccak256(completion.resultURI.as_bytes()).to_string());
    if completion.resultURI.starts_with("data:") {
        assert!(t["result"]["json"].is_object(), "decoded: {:#}", t["result"]);
    } else {
        assert!(t["result"]["error"].is_string(), "{:#}", t["result"]);
    }

    // Its parent, and the parent's children: the summary and the stranger's task.
    assert_eq!(
        (t["parent"]["id"].as_str(), t["parent"]["capability"].as_str()),
        (Some(root.as_str()), Some("translate"))
    );
    let mut children: Vec<&str> = t["parent"]["children"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    children.sort_unstable();
    let mut want: Vec<&str> =
        truth.iter().filter(|x| x.parent == root).map(|x| x.id.as_str()).collect();
    want.sort_unstable();
    assert_eq!(children, want);
    assert_eq!(children.len(), 2, "the summary and the stranger's task");
    assert_eq!(t["children"]["nodes"], json!([]));

    // Unknown and malformed ids.
    let d = gql.data("{ task(id: \"12345\") { id } }", json!({})).await;
    assert_eq!(d["task"], Value::Null);
    let e = gql.errors("{ task(id: \"0xabc\") { id } }").await;
    assert!(e.iter().any(|m| m.contains("is not a task id")), "{e:?}");
}

/// Plan A's tree: its sponsor, cost, roots and children, nested plans
/// (none), and the stranger's task listed apart as foreign.
async fn plan_tree(gql: &Gql, stack: &Stack, ran: &Ran, truth: &[Truth]) {
    let query = "query Tree($plan: String!) {
  plan(id: $plan) {
    id sponsor cost truncated foreignTruncated
    tasks { task { id } depth pendingParent detached subtreeCost inputs merge }
    roots { task { id capability } subtreeCost children { task { id capability } children { task { id } } } }
    nestedPlans { label groups taskIds cost }
    foreign { id funder parentId envelope { json text error } envelopeError }
  }
}";
    let d = gql.data(query, json!({ "plan": ran.plan_a })).await;
    let p = &d["plan"];
    let (root, child) = (task_of(&ran.run_a, 0), task_of(&ran.run_a, 1));
    assert_eq!(p["id"], ran.plan_a.as_str());
    assert_eq!(
        p["sponsor"].as_str().unwrap().to_lowercase(),
        lower(&stack.env.actors.sponsor.address())
    );
    assert_eq!(p["cost"], "1200000", "{p:#}");
    assert_eq!(
        (p["truncated"].as_bool(), p["foreignTruncated"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(
        p["tasks"],
        json!([
            {"task": {"id": root}, "depth": 0, "pendingParent": false, "detached": false,
             "subtreeCost": "1200000", "inputs": [], "merge": false},
            {"task": {"id": child}, "depth": 1, "pendingParent": false, "detached": false,
             "subtreeCost": "400000", "inputs": [root], "merge": false},
        ]),
        "{p:#}"
    );
    assert_eq!(
        p["roots"],
        json!([{"task": {"id": root, "capability": "translate"}, "subtreeCost": "1200000",
                "children": [{"task": {"id": child, "capability": "summarize"}, "children": []}]}])
    );
    assert_eq!(
        p["nestedPlans"],
        json!([{"label": "Digest the translation", "groups": ["Digest the translation"],
                "taskIds": [child], "cost": "400000"}])
    );
    let stranger = truth.iter().find(|t| t.id == ran.stranger_task).unwrap();
    assert_eq!(p["foreign"].as_array().unwrap().len(), 1, "{p:#}");
    let f = &p["foreign"][0];
    assert_eq!(
        (f["id"].as_str(), f["parentId"].as_str()),
        (Some(ran.stranger_task.as_str()), Some(root.as_str()))
    );
    assert_eq!(f["funder"].as_str().unwrap().to_lowercase(), lower(&stranger.funder));
    // Its spec is inline text, not an envelope: decoded as text, and said so.
    assert_eq!(f["envelope"], json!({ "json": null, "text": "x", "error": null }), "{f:#}");
    assert!(f["envelopeError"].as_str().is_some_and(|e| !e.is_empty()), "{f:#}");

    // Named with another sponsor: that sponsor has no task in it.
    let d = gql
        .data(
            "query Tree($plan: String!, $sponsor: String) { plan(id: $plan, sponsor: $sponsor) { cost tasks { task { id } } } }",
            json!({ "plan": ran.plan_a, "sponsor": stranger.funder.to_string() }),
        )
        .await;
    let ids: Vec<&str> = d["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["task"]["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&child.as_str()), "the sponsor's tasks are not the stranger's: {d:#}");
    let e = gql.errors("{ plan(id: \"0x12\") { cost } }").await;
    assert!(e.iter().any(|m| m.contains("is not a plan id")), "{e:?}");
}

/// Plan B's dispute as its events tell it: the client's reason, the
/// arbiter's split with its rationale, the sponsor's appeal and reason,
/// the appeal arbiter's ruling in full, the verdict standing and what the
/// executor was paid; the disputes list and its filters.
async fn the_dispute(gql: &Gql, stack: &Stack, ran: &Ran) {
    let env = &stack.env;
    let disputed = task_of(&ran.run_b, 0);
    let query = "query Disputes($filter: TaskFilter) {
  disputes(filter: $filter, first: 10) {
    nodes {
      task { id status amount }
      status executorPaid
      opened { by reason { json error } at block txHash }
      ruling { arbiter executorShareBps clientShareBps rationale { json error } at block txHash }
      appeal { by reason { json error } at block txHash }
      appealRuling { arbiter executorShareBps clientShareBps rationale { json error } at block txHash }
      verdict { arbiter executorShareBps }
    }
    pageInfo { hasNextPage }
  }
}";
    let d = gql.data(query, json!({ "filter": null })).await;
    let nodes = d["disputes"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "one task was ever disputed: {d:#}");
    let n = &nodes[0];
    assert_eq!(n["task"]["id"], disputed.as_str());
    assert_eq!((n["status"].as_str(), n["task"]["status"].as_str()), (Some("Paid"), Some("Paid")));
    assert_eq!(
        (n["task"]["amount"].as_str(), n["executorPaid"].as_str()),
        (Some("400000"), Some("400000"))
    );

    // Each step against its log.
    let logs = task_logs(env, &disputed).await;
    let log_of = |name: &str| {
        logs.iter().find(|l| event_name(l) == name).unwrap_or_else(|| panic!("a {name} log"))
    };
    let placed = |v: &Value, name: &str| {
        let log = log_of(name);
        assert_eq!(v["block"].as_u64(), log.block_number, "{name}: {v}");
        assert_eq!(v["txHash"], log.transaction_hash.unwrap().to_string(), "{name}: {v}");
    };
    let sponsor = lower(&env.actors.sponsor.address());
    let o = &n["opened"];
    placed(o, "TaskDisputed");
    assert_eq!(o["by"].as_str().unwrap().to_lowercase(), sponsor, "the plan's client disputed");
    assert_eq!(o["reason"]["json"]["reason"], DISPUTE_REASON, "{o}");
    let ruled = log_of("DisputeRuled").log_decode::<TaskEscrow::DisputeRuled>().unwrap().inner.data;
    let r = &n["ruling"];
    placed(r, "DisputeRuled");
    assert_eq!(r["arbiter"].as_str().unwrap().to_lowercase(), lower(&env.actors.arbiter.address()));
    let share = r["executorShareBps"].as_u64().unwrap();
    assert_eq!(share, u64::from(ruled.executorShareBps));
    assert!(share > 0 && share < 10_000, "the rubric split: {r}");
    assert_eq!(r["clientShareBps"].as_u64(), Some(10_000 - share));
    assert_eq!(r["rationale"]["json"]["judge"], "offline-rubric", "{r}");
    assert!(r["rationale"]["json"]["rationale"].as_str().unwrap().starts_with("Score"), "{r}");
    let ap = &n["appeal"];
    placed(ap, "RulingAppealed");
    assert_eq!(ap["by"].as_str().unwrap().to_lowercase(), sponsor);
    assert_eq!(ap["reason"]["json"], json!({ "reason": APPEAL_REASON }), "{ap}");
    let ar = &n["appealRuling"];
    placed(ar, "AppealRuled");
    assert_eq!(
        ar["arbiter"].as_str().unwrap().to_lowercase(),
        lower(&env.actors.appeal_arbiter.address())
    );
    assert_eq!(
        (ar["executorShareBps"].as_u64(), ar["clientShareBps"].as_u64()),
        (Some(10_000), Some(0))
    );
    assert_eq!(ar["rationale"]["json"]["judge"], "council:graphql-test", "{ar}");
    assert_eq!(ar["rationale"]["json"]["rationale"], APPEAL_RATIONALE, "{ar}");
    assert!(
        o["at"].as_u64() <= r["at"].as_u64()
            && r["at"].as_u64() <= ap["at"].as_u64()
            && ap["at"].as_u64() <= ar["at"].as_u64(),
        "in order: {n:#}"
    );
    assert_eq!(n["verdict"], json!({ "arbiter": ar["arbiter"], "executorShareBps": 10_000 }));

    // The list filters as tasks do; the task's own dispute is the same.
    let d = gql.data(query, json!({ "filter": { "plan": ran.plan_a } })).await;
    assert_eq!(d["disputes"]["nodes"], json!([]));
    let d =
        gql.data(query, json!({ "filter": { "executor": env.actors.agent(1).to_string() } })).await;
    assert_eq!(d["disputes"]["nodes"].as_array().unwrap().len(), 1);
    let d = gql
        .data(
            "query T($id: String!) { task(id: $id) { dispute { verdict { executorShareBps } appeal { reason { json } } } } }",
            json!({ "id": disputed }),
        )
        .await;
    assert_eq!(
        d["task"]["dispute"],
        json!({ "verdict": { "executorShareBps": 10_000 }, "appeal": { "reason": { "json": { "reason": APPEAL_REASON } } } })
    );
}

/// Agents: the translator's record, identity and matched feedback; agent
/// 0's decline; agent 1's dispute; every demo agent listed, page by page.
async fn agents_and_feedback(gql: &Gql, stack: &Stack, ran: &Ran, truth: &[Truth]) {
    let env = &stack.env;
    let query = "query Agent($a: String!) {
  agent(address: $a) {
    address status name card { json error } offers { capability price } registeredBlock
    record { tasks completed disputed refunded expired declined earnings successRate
             medianAcceptSecs medianCompletionSecs lastActiveAt }
    weight { completed failed settled funders linkedFunders belowFloor }
    identity { agentId linkedBlock tx }
    feedback { count matched average latest { client value valueDecimals document { json text error } taskId matched why revoked } }
    tasks(first: 10) { nodes { id } }
    declined: tasks(status: [\"Declined\"]) { nodes { id } }
  }
}";
    let translator = env.actors.agent(2);
    let d = gql.data(query, json!({ "a": translator.to_string() })).await;
    let a = &d["agent"];
    let translate = task_of(&ran.run_a, 0);
    assert_eq!(a["address"].as_str().unwrap().to_lowercase(), lower(&translator));
    assert_eq!((a["status"].as_str(), a["name"].as_str()), (Some("active"), Some("translator")));
    assert_eq!(a["card"]["json"]["id"], "translator", "{:#}", a["card"]);
    assert!(
        a["offers"].as_array().unwrap().iter().any(|o| o["capability"] == "translate"),
        "{a:#}"
    );
    let r = &a["record"];
    assert_eq!(
        (
            r["tasks"].as_i64(),
            r["completed"].as_i64(),
            r["disputed"].as_i64(),
            r["declined"].as_i64()
        ),
        (Some(1), Some(1), Some(0), Some(0)),
        "{r}"
    );
    assert_eq!((r["earnings"].as_str(), r["successRate"].as_f64()), (Some("800000"), Some(1.0)));
    // Its worker accepts and delivers in one call: no acceptance to time.
    assert_eq!(
        (r["medianAcceptSecs"].clone(), r["medianCompletionSecs"].clone()),
        (Value::Null, Value::Null)
    );
    assert!(r["lastActiveAt"].is_i64(), "{r}");
    assert!(a["weight"]["settled"].as_f64().is_some_and(|s| s >= 0.0), "{:#}", a["weight"]);
    assert_eq!(a["identity"]["agentId"], ran.translator_identity.to_string(), "{a:#}");
    let fb = &a["feedback"];
    assert_eq!(
        (fb["count"].as_u64(), fb["matched"].as_u64(), fb["average"].as_f64()),
        (Some(1), Some(1), Some(100.0)),
        "{fb:#}"
    );
    let f = &fb["latest"][0];
    assert_eq!(f["client"].as_str().unwrap().to_lowercase(), lower(&env.actors.sponsor.address()));
    assert_eq!(
        (f["taskId"].as_str(), f["matched"].as_bool(), f["revoked"].as_bool()),
        (Some(translate.as_str()), Some(true), Some(false)),
        "{f:#}"
    );
    assert_eq!(f["why"], Value::Null);
    assert!(
        f["document"]["json"].is_object() || f["document"]["text"].is_string(),
        "the proof, decoded: {f:#}"
    );
    assert_eq!(a["tasks"]["nodes"], json!([{ "id": translate }]));

    // Agent 0: open tasks, one declined; agent 1: one dispute, won on appeal.
    let executes = |who: Address| {
        let mut ids: Vec<Value> =
            truth.iter().filter(|t| t.executor == who).map(|t| json!({ "id": t.id })).collect();
        ids.sort_by(|x, y| x["id"].as_str().cmp(&y["id"].as_str()));
        ids
    };
    let a0 = env.actors.agent(0);
    let d = gql.data(query, json!({ "a": a0.to_string() })).await;
    let r = &d["agent"]["record"];
    assert_eq!(
        (r["tasks"].as_i64(), r["declined"].as_i64(), r["completed"].as_i64()),
        (Some(executes(a0).len() as i64), Some(1), Some(0)),
        "{r}"
    );
    assert_eq!(d["agent"]["identity"], Value::Null);
    assert_eq!(d["agent"]["feedback"]["count"], 0);
    assert_eq!(d["agent"]["tasks"]["nodes"], json!(executes(a0)));
    let declined: Vec<Value> = truth
        .iter()
        .filter(|t| t.executor == a0 && t.status == "Declined")
        .map(|t| json!({ "id": t.id }))
        .collect();
    assert_eq!(declined.len(), 1);
    assert_eq!(d["agent"]["declined"]["nodes"], json!(declined), "its tasks, by status");
    let a1 = env.actors.agent(1);
    let d = gql.data(query, json!({ "a": a1.to_string() })).await;
    let r = &d["agent"]["record"];
    assert_eq!(
        (
            r["tasks"].as_i64(),
            r["completed"].as_i64(),
            r["disputed"].as_i64(),
            r["refunded"].as_i64()
        ),
        (Some(2), Some(2), Some(1), Some(0)),
        "{r}"
    );
    assert_eq!(r["earnings"], "800000");
    let d = gql
        .data(
            "{ agent(address: \"0x000000000000000000000000000000000000dead\") { address } }",
            json!({}),
        )
        .await;
    assert_eq!(d["agent"], Value::Null);

    // Every demo agent, active, two a page; none paused or gone.
    let mut seen = Vec::new();
    let mut after = Value::Null;
    let mut pages = 0;
    loop {
        let d = gql
            .data(
                "query P($after: String) { agents(status: \"active\", first: 2, after: $after) { nodes { address name } pageInfo { hasNextPage endCursor } } }",
                json!({ "after": after }),
            )
            .await;
        pages += 1;
        for n in d["agents"]["nodes"].as_array().unwrap() {
            seen.push(n["address"].as_str().unwrap().to_lowercase());
        }
        if d["agents"]["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = d["agents"]["pageInfo"]["endCursor"].clone();
    }
    let mut demo: Vec<String> =
        DEMO_AGENTS.iter().map(|a| lower(&env.actors.agent(a.account))).collect();
    demo.sort();
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, demo, "every demo agent once");
    assert_eq!(pages, demo.len().div_ceil(2));
    for status in ["paused", "left"] {
        let d = gql
            .data(
                "query S($s: String) { agents(status: $s) { nodes { address } } }",
                json!({ "s": status }),
            )
            .await;
        assert_eq!(d["agents"]["nodes"], json!([]), "{status}");
    }
    let e = gql.errors("{ agents(status: \"asleep\") { nodes { address } } }").await;
    assert!(e.iter().any(|m| m.contains("is not an agent status")), "{e:?}");
}

/// The catalogue: every capability an agent offers on chain, with exactly
/// its offerers and prices as the registry has them; by name; by offerer.
async fn the_catalogue(gql: &Gql, env: &TestEnv) {
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let mut offered: BTreeMap<String, BTreeSet<(String, String, String)>> = BTreeMap::new();
    for demo in DEMO_AGENTS {
        let who = env.actors.agent(demo.account);
        let agent = registry.getAgent(who).call().await.unwrap();
        for word in agent.capabilities {
            let o = registry.offerOf(who, word).call().await.unwrap();
            if o.active {
                offered.entry(capability::decode(word).unwrap()).or_default().insert((
                    lower(&who),
                    o.price.to_string(),
                    demo.id.to_owned(),
                ));
            }
        }
    }
    let d = gql
        .data("{ capabilities { name builtin describe offeredBy offerers { agent card price settled completed reliability } } }", json!({}))
        .await;
    let entries = d["capabilities"].as_array().unwrap();
    let listed: BTreeMap<String, BTreeSet<(String, String, String)>> = entries
        .iter()
        .filter(|e| e["offeredBy"].as_u64() != Some(0))
        .map(|e| {
            let offerers = e["offerers"].as_array().unwrap().iter().map(|o| {
                (
                    o["agent"].as_str().unwrap().to_lowercase(),
                    o["price"].as_str().unwrap().to_owned(),
                    o["card"].as_str().unwrap_or_default().to_owned(),
                )
            });
            (e["name"].as_str().unwrap().to_owned(), offerers.collect())
        })
        .collect();
    assert_eq!(listed, offered, "{d:#}");
    for e in entries {
        assert_eq!(
            e["offeredBy"].as_u64(),
            Some(e["offerers"].as_array().unwrap().len() as u64),
            "{e}"
        );
        for o in e["offerers"].as_array().unwrap() {
            if let Some(r) = o["reliability"].as_f64() {
                assert!((0.0..=1.0).contains(&r), "{o}");
                assert!(o["completed"].as_u64() <= o["settled"].as_u64(), "{o}");
            }
        }
    }

    let d = gql
        .data("{ capabilities(name: \"translate\") { name offerers { agent } } }", json!({}))
        .await;
    assert_eq!(d["capabilities"].as_array().unwrap().len(), 1);
    assert_eq!(
        d["capabilities"][0]["offerers"][0]["agent"].as_str().unwrap().to_lowercase(),
        lower(&env.actors.agent(2))
    );
    let a0 = env.actors.agent(0);
    let d = gql
        .data(
            "query O($a: String) { capabilities(offeredBy: $a) { name } }",
            json!({ "a": a0.to_string() }),
        )
        .await;
    let names: BTreeSet<String> = d["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    let own: BTreeSet<String> = offered
        .iter()
        .filter(|(_, o)| o.iter().any(|(a, _, _)| *a == lower(&a0)))
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(names, own);
    assert!(names.len() < listed.len(), "agent 0 offers some capabilities, not all");
    let d = gql.data("{ capabilities(name: \"compose-music\") { name } }", json!({})).await;
    assert_eq!(d["capabilities"], json!([]));
}

/// Hostile queries over HTTP, each refused with its reason, and the index
/// answering afterwards.
async fn hostile_queries(gql: &Gql, base: &str, ran: &Ran) {
    let task = task_of(&ran.run_a, 1);
    let deep = format!(
        "{{ task(id: \"{task}\") {{ {} id {} }} }}",
        "parent { ".repeat(20),
        "}".repeat(20)
    );
    let wide = format!(
        "{{ {} }}",
        (0..200)
            .map(|i| format!("a{i}: tasks(first: 500) {{ nodes {{ id status }} }}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let children = format!(
        "{{ tasks(first: 500) {{ nodes {{ {} id {} }} }} }}",
        "children(first: 500) { nodes { ".repeat(3),
        "} } ".repeat(3)
    );
    let refusals: [(&str, &str); 9] = [
        (&deep, "Query is nested too deep: more than 12 levels"),
        (&wide, "Query is too complex: more than 20000"),
        (&children, "Query is too complex"),
        (
            "{ tasks(first: 501) { nodes { id } } }",
            "first: 501 is not within 1..=500, the page limit",
        ),
        ("{ tasks(first: 0) { nodes { id } } }", "first: 0 is not within 1..=500"),
        ("{ reorgs(first: 100000) { seq } }", "first: 100000 is not within 1..=500"),
        (
            "{ tasks(filter: {status: [\"Bogus\"]}) { nodes { id } } }",
            "\"Bogus\" is not a task status",
        ),
        (
            "{ tasks(filter: {executor: \"nobody\"}) { nodes { id } } }",
            "executor \"nobody\" is not an address",
        ),
        ("{ tasks(after: \"x\") { nodes { id } } }", "after: \"x\" is not a cursor"),
    ];
    for (query, needle) in refusals {
        let e = gql.errors(query).await;
        assert!(e.iter().any(|m| m.contains(needle)), "{needle}: {e:?}");
        still_answering(gql).await;
    }
    // Oversize text: refused before it is parsed, 400, both ways.
    let huge = json!({ "query": format!("{{ status {{ head }} }} #{}", "x".repeat(64 * 1024)) });
    let (status, answer) = gql.post(huge.to_string()).await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("more than the 65536 a query may have"),
        "{answer}"
    );
    assert_eq!(messages(&answer), vec![answer["error"].as_str().unwrap().to_owned()]);
    still_answering(gql).await;
    // Not a GraphQL request at all: 400, saying so.
    let (status, answer) = gql.post("{\"quer".into()).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("is not a GraphQL request"), "{answer}");
    // A query with GET, as the explorer sends it.
    let resp = gql
        .http
        .get(format!("{base}/graphql"))
        .query(&[("query", "{ status { indexedBlock } }")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let answer: Value = resp.json().await.unwrap();
    assert!(answer["data"]["status"]["indexedBlock"].is_u64(), "{answer}");
    still_answering(gql).await;
}

/// The index still answers a real query.
async fn still_answering(gql: &Gql) {
    let d =
        gql.data("{ status { indexedBlock } tasks(first: 1) { nodes { id } } }", json!({})).await;
    assert!(d["status"]["indexedBlock"].as_u64().is_some_and(|b| b > 0), "{d}");
    assert_eq!(d["tasks"]["nodes"].as_array().map(Vec::len), Some(1));
}

/// An open task declined and a task created, each in a block of its
/// own, indexed, then both blocks reorganised away on anvil: `reorgs`
/// journals it (fork, depth, orphaned events, the two tasks), both
/// subscriptions tell it live (the reorganisation, and the open task as it
/// is again), the new task is gone, the declined one open again, and the
/// index goes on.
async fn a_reorganisation(gql: &Gql, ix: &mut Indexer, env: &TestEnv, ran: &Ran) {
    let d = gql.data("{ reorgs { seq } }", json!({})).await;
    assert_eq!(d["reorgs"], json!([]), "none yet");
    let fork = env.provider.get_block_number().await.unwrap() + 1;
    let mut reopened = ran.open[1].clone();
    let reason = "data:,the source is gone";
    env.driver().escrow.decline(env.actors.agent(0), &mut reopened, reason).await.unwrap();
    let reopened = reopened.id.to_string();
    let id = tessera_e2e::one_more_task(env, "graphql-reorg").await.to_string();
    let head = env.provider.get_block_number().await.unwrap();
    assert_eq!(head, fork + 1, "the decline and the creation are the two newest blocks");
    let mut contracts = vec![env.deployment.task_escrow, env.deployment.agent_registry];
    contracts.extend(env.deployment.reputation_registry);
    let orphaned = env
        .provider
        .get_logs(&Filter::new().address(contracts).from_block(fork))
        .await
        .unwrap()
        .len();
    ix.sync_once().await.unwrap();
    let q = "query T($id: String!) { task(id: $id) { id status declineReason { text } } }";
    let d = gql.data(q, json!({ "id": id })).await;
    assert_eq!(d["task"], json!({ "id": id, "status": "Created", "declineReason": null }));
    let d = gql.data(q, json!({ "id": reopened })).await;
    assert_eq!(d["task"]["status"], "Declined");
    assert_eq!(d["task"]["declineReason"]["text"], "the source is gone");

    let live_reorgs = json!({ "query": "subscription { reorgs { forkBlock depth orphanedEvents affectedTasks } }" });
    let reorgs = gql.subscribe(ix, &live_reorgs, true, 0).await;
    let live_tasks = json!({
        "query": "subscription Open($plan: String!) { taskUpdates(plan: $plan) { task { id status } } }",
        "variables": { "plan": ran.open_plan },
    });
    let tasks = gql.subscribe(ix, &live_tasks, false, 1).await;
    env.provider
        .raw_request::<_, Value>("anvil_reorg".into(), (2u64, Vec::<Value>::new()))
        .await
        .unwrap();
    ix.sync_once().await.unwrap();
    let mut affected = vec![reopened.clone(), id.clone()];
    affected.sort();
    let told = |r: &Value| {
        let mut tasks: Vec<String> = r["affectedTasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect();
        tasks.sort();
        (r["forkBlock"].as_u64(), r["depth"].as_u64(), r["orphanedEvents"].as_u64(), tasks)
    };
    let want = (Some(fork), Some(2), Some(orphaned as u64), affected);
    let next = first_answer(reorgs).await;
    assert_eq!(told(&next["data"]["reorgs"]), want, "told live: {next:#}");
    let next = first_answer(tasks).await;
    assert_eq!(
        next["data"]["taskUpdates"]["task"],
        json!({ "id": reopened, "status": "Created" }),
        "the task rebuilt by the rollback, told live: {next:#}"
    );
    let d = gql
        .data(
            "{ reorgs(first: 5) { seq detectedHead forkBlock depth orphanedEvents affectedTasks } }",
            json!({}),
        )
        .await;
    let journal = d["reorgs"].as_array().unwrap();
    assert_eq!(journal.len(), 1, "{d:#}");
    assert_eq!(told(&journal[0]), want, "{d:#}");
    assert_eq!(journal[0]["detectedHead"].as_u64(), Some(head));
    let d = gql.data(q, json!({ "id": id })).await;
    assert_eq!(d["task"], Value::Null, "reorganised away");
    let d = gql.data(q, json!({ "id": reopened })).await;
    assert_eq!(
        d["task"],
        json!({ "id": reopened, "status": "Created", "declineReason": null }),
        "open again"
    );
    let d = gql.data("{ status { head indexedBlock events } }", json!({})).await;
    assert_eq!(d["status"]["events"].as_u64(), Some(indexed_logs(env).await));
    assert_eq!(
        d["status"]["indexedBlock"].as_u64(),
        Some(env.provider.get_block_number().await.unwrap())
    );
}
