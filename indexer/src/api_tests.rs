//! The API's filters, disputes and decoded content against a real store
//! (SQLite, and PostgreSQL when one answers): each filter narrows the list
//! to exactly the tasks it names, so a filter the server ignored fails.

use std::sync::Arc;

use alloy::{
    primitives::{Address, B256, LogData, U256, aliases::U40, keccak256},
    rpc::types::Log,
    sol_types::SolEvent,
};
use axum::{Router, http::StatusCode};
use serde_json::{Value, json};
use tessera_bindings::{
    AgentRegistry as R, TaskEscrow as E, capability,
    envelope::{Envelope, EnvelopeCodec, MemoryBlobStore, Parent, percent_data_uri},
};
use tokio::sync::{broadcast, watch};
use tower::ServiceExt;

use super::router_with_blobs;
use crate::{
    ingest::Progress,
    store::{Batch, IndexStore},
};

const FUNDER_A: Address = Address::repeat_byte(0x0a);
const FUNDER_B: Address = Address::repeat_byte(0x0b);
const EXEC_X: Address = Address::repeat_byte(0x33);
const EXEC_Y: Address = Address::repeat_byte(0x44);
const ARBITER: Address = Address::repeat_byte(0xa1);
const APPEAL_ARBITER: Address = Address::repeat_byte(0xa2);

fn plan() -> B256 {
    keccak256("filters")
}

/// The logs of one test, each in a block of its own.
#[derive(Default)]
struct Chain {
    logs: Vec<Log>,
}

impl Chain {
    fn push(&mut self, data: LogData) {
        let block = self.logs.len() as u64 + 1;
        self.logs.push(Log {
            inner: alloy::primitives::Log { address: Address::repeat_byte(1), data },
            block_number: Some(block),
            log_index: Some(0),
            ..Log::default()
        });
    }

    /// Creates task `id` and returns its spec URI.
    fn create(
        &mut self,
        id: u64,
        parent: u64,
        funder: Address,
        executor: Address,
        cap: &str,
        at: u64,
    ) -> String {
        let mut env = Envelope::new(Parent::Plan(plan()), format!("do step {id}"));
        env.capability = Some(cap.into());
        let uri = percent_data_uri(&env.to_json().unwrap());
        let mut ev =
            crate::testkit::task_created(id, plan(), cap, funder, executor, 1_000_000, &uri);
        ev.parentId = U256::from(parent);
        ev.task.deadline = U40::from(100_000);
        ev.task.updatedAt = U40::from(at);
        ev.task.appealWindow = 600;
        self.push(ev.encode_log_data());
        uri
    }

    fn complete(&mut self, id: u64, executor: Address, result: &str, at: u64) {
        let t = U256::from(id);
        self.push(E::TaskAccepted { taskId: t, executor, at: U40::from(at) }.encode_log_data());
        let done =
            E::TaskCompleted { taskId: t, executor, resultURI: result.into(), at: U40::from(at) };
        self.push(done.encode_log_data());
    }

    fn settle(&mut self, id: u64, status: u8, settlement: u8, to_executor: u128, at: u64) {
        let ev = E::TaskSettled {
            taskId: U256::from(id),
            status,
            settlement,
            executorAmount: to_executor,
            funderAmount: 1_000_000 - to_executor,
            rating: if settlement == 0 { 100 } else { 0 },
            at: U40::from(at),
        };
        self.push(ev.encode_log_data());
    }
}

fn inline(json: &Value) -> String {
    EnvelopeCodec::default().publish(json.to_string().as_bytes(), &MemoryBlobStore::new()).unwrap()
}

/// Five tasks of one plan and two agents:
/// - 1: haiku-write, funder A, executor X, created at 1,000; completed with
///   an inline (base64) JSON result.
/// - 2: summarize, funder B, executor Y, at 2,000; Created.
/// - 3: translate, funder A, executor Y, at 3,000; disputed, ruled 70%,
///   appealed by Y, the appeal ruled 100%: Paid (appeal ruling).
/// - 4: haiku-write, funder A, executor X, under 1, at 4,000; disputed,
///   ruled 0%, settled at once: Refunded (ruling).
/// - 5: summarize, funder B, executor X, at 5,000; completed with a result
///   too large to inline (content-addressed, in `blobs`).
///
/// X offers haiku-write and is active; Y offers summarize and is paused.
fn fixture(blobs: &MemoryBlobStore) -> (Vec<Log>, Value) {
    let mut c = Chain::default();
    let reg = |agent: Address| R::AgentRegistered { agent, metadataURI: String::new() };
    c.push(reg(EXEC_X).encode_log_data());
    let offer = |agent: Address, cap: &str| R::CapabilitySet {
        agent,
        capability: capability::encode(cap).unwrap(),
        price: 1_000,
    };
    c.push(offer(EXEC_X, "haiku-write").encode_log_data());
    c.push(reg(EXEC_Y).encode_log_data());
    c.push(offer(EXEC_Y, "summarize").encode_log_data());
    c.push(R::AgentPaused { agent: EXEC_Y }.encode_log_data());

    let result = json!({"haiku": "old pond / a frog jumps in / water's sound"});
    c.create(1, 0, FUNDER_A, EXEC_X, "haiku-write", 1_000);
    c.complete(1, EXEC_X, &inline(&result), 1_100);

    c.create(2, 0, FUNDER_B, EXEC_Y, "summarize", 2_000);

    c.create(3, 0, FUNDER_A, EXEC_Y, "translate", 3_000);
    c.complete(3, EXEC_Y, &inline(&json!({"text": "bonjour"})), 3_100);
    let t3 = U256::from(3);
    let disputed = E::TaskDisputed {
        taskId: t3,
        client: FUNDER_A,
        reasonURI: inline(&json!({"reason": "not French"})),
        at: U40::from(3_200),
    };
    c.push(disputed.encode_log_data());
    let verdict = json!({"verdict": "split", "executor_share_bps": 7000,
        "rationale": "mostly French", "judge": "offline-rubric"});
    let ruled = E::DisputeRuled {
        taskId: t3,
        arbiter: ARBITER,
        executorShareBps: 7_000,
        rationaleURI: inline(&verdict),
        at: U40::from(3_300),
    };
    c.push(ruled.encode_log_data());
    let appealed = E::RulingAppealed {
        taskId: t3,
        appellant: EXEC_Y,
        reasonURI: "data:text/plain,it%20is%20French".into(),
        at: U40::from(3_400),
    };
    c.push(appealed.encode_log_data());
    let appeal_ruled = E::AppealRuled {
        taskId: t3,
        appealArbiter: APPEAL_ARBITER,
        executorShareBps: 10_000,
        rationaleURI: inline(&json!({"verdict": "worker", "rationale": "it is French"})),
        at: U40::from(3_500),
    };
    c.push(appeal_ruled.encode_log_data());
    c.settle(3, 7, 3, 1_000_000, 3_500);

    c.create(4, 1, FUNDER_A, EXEC_X, "haiku-write", 4_000);
    c.complete(4, EXEC_X, &inline(&json!("five seven five")), 4_100);
    let t4 = U256::from(4);
    let disputed = E::TaskDisputed {
        taskId: t4,
        client: FUNDER_A,
        reasonURI: String::new(),
        at: U40::from(4_200),
    };
    c.push(disputed.encode_log_data());
    let ruled = E::DisputeRuled {
        taskId: t4,
        arbiter: ARBITER,
        executorShareBps: 0,
        rationaleURI: format!("sha256:{}", "cd".repeat(32)),
        at: U40::from(4_300),
    };
    c.push(ruled.encode_log_data());
    c.settle(4, 8, 2, 0, 4_300);

    c.create(5, 0, FUNDER_B, EXEC_X, "summarize", 5_000);
    let big = json!({"summary": "w".repeat(6_000)});
    let stored = EnvelopeCodec::default().publish(big.to_string().as_bytes(), blobs).unwrap();
    assert!(stored.starts_with("sha256:"));
    c.complete(5, EXEC_X, &stored, 5_100);
    (c.logs, json!({"result1": result, "big": big}))
}

/// The router over `store` holding the fixture, its blobs beside it.
async fn app(store: IndexStore) -> (Router, Value) {
    let blobs = Arc::new(MemoryBlobStore::new());
    let (logs, expected) = fixture(&blobs);
    let to = logs.len() as u64;
    store.apply(&Batch { from: 1, to, logs, ..Batch::default() }).await.unwrap();
    store.derive(None, 100).await.unwrap();
    let (_, progress) = watch::channel(Progress::default());
    let gate = tessera_http::limits::StreamGate::new(&tessera_http::limits::HttpLimits::default());
    let router =
        router_with_blobs(store, progress, broadcast::channel(16).0, 12, gate, Some(blobs));
    (router, expected)
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    let req = axum::http::Request::get(uri).body(axum::body::Body::empty()).unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The task ids a list answered, in its order.
async fn ids(app: &Router, uri: &str, key: &str) -> Vec<String> {
    let (status, body) = get(app, uri).await;
    assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
    body[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every task filter narrows the list to exactly its tasks, alone and
/// combined, and pages with the cursor.
async fn every_task_filter_narrows_the_list(store: IndexStore) {
    let (app, _) = app(store).await;
    let plan = plan().to_string();
    let a = FUNDER_A.to_string();
    let x = EXEC_X.to_string();
    for (query, expected) in [
        (String::new(), &["1", "2", "3", "4", "5"][..]),
        ("capability=haiku-write".into(), &["1", "4"]),
        ("capability=translate".into(), &["3"]),
        ("capability=nobody-offers".into(), &[]),
        ("status=Completed".into(), &["1", "5"]),
        ("status=Refunded".into(), &["4"]),
        (format!("executor={x}"), &["1", "4", "5"]),
        // Lower case is the same address.
        (format!("executor={}", x.to_lowercase()), &["1", "4", "5"]),
        (format!("funder={a}"), &["1", "3", "4"]),
        (format!("client={FUNDER_B}"), &["2", "5"]),
        (format!("plan={plan}"), &["1", "2", "3", "4", "5"]),
        (format!("plan=0x{}", "ab".repeat(32)), &[]),
        ("parent=1".into(), &["4"]),
        ("since=3000".into(), &["3", "4", "5"]),
        ("until=3000".into(), &["1", "2"]),
        ("since=2000&until=4001".into(), &["2", "3", "4"]),
        ("disputed=true".into(), &["3", "4"]),
        ("disputed=false".into(), &["1", "2", "5"]),
        (format!("executor={x}&capability=haiku-write&status=Completed"), &["1"]),
        (format!("funder={a}&disputed=true&since=4000"), &["4"]),
    ] {
        let got = ids(&app, &format!("/api/tasks?{query}"), "tasks").await;
        assert_eq!(got, expected, "GET /api/tasks?{query}");
    }
    // A block the fixture's last events are in: only the tasks changed
    // there or later.
    let (_, all) = get(&app, "/api/tasks").await;
    let last =
        all["tasks"].as_array().unwrap().iter().map(|t| t["updated_block"].as_u64().unwrap());
    let newest = last.max().unwrap();
    let got = ids(&app, &format!("/api/tasks?changed_since_block={newest}"), "tasks").await;
    assert_eq!(got, ["5"]);

    // Pages of one under a filter, followed by the cursor.
    let mut seen = Vec::new();
    let mut uri = format!("/api/tasks?executor={x}&limit=1");
    loop {
        let (status, body) = get(&app, &uri).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        seen.extend(body["tasks"].as_array().unwrap().iter().map(|t| t["task_id"].clone()));
        match body["next"].as_str() {
            Some(next) => uri = format!("/api/tasks?executor={x}&limit=1&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(seen, [json!("1"), json!("4"), json!("5")]);
}

#[tokio::test]
async fn every_task_filter_narrows_the_list_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    every_task_filter_narrows_the_list(IndexStore::connect(&url).await.unwrap()).await;
}

#[tokio::test]
async fn every_task_filter_narrows_the_list_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_api_filters").await
    else {
        return;
    };
    every_task_filter_narrows_the_list(IndexStore::connect(&url).await.unwrap()).await;
}

/// Disputes carry their ruling (verdict, share, rationale decoded), their
/// appeal and how they ended; the list filters and pages.
async fn disputes_carry_their_verdict_rationale_and_appeal(store: IndexStore) {
    let (app, _) = app(store).await;
    let (status, body) = get(&app, "/api/disputes").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let list = body["disputes"].as_array().unwrap();
    let listed: Vec<&str> = list.iter().map(|t| t["task_id"].as_str().unwrap()).collect();
    assert_eq!(listed, ["4", "3"], "latest change first");
    assert_eq!(body["next"], Value::Null);

    let appealed = &list[1];
    assert_eq!(appealed["settlement"], "appeal_ruling");
    let d = &appealed["dispute"];
    assert_eq!(d["state"], "settled");
    assert_eq!(d["disputed_at"], 3_200);
    assert_eq!(d["reason"]["value"], json!({"reason": "not French"}));
    assert!(d["reason_uri"].as_str().unwrap().starts_with("data:application/json;base64,"));
    assert_eq!(d["ruling"]["verdict"], "split");
    assert_eq!(d["ruling"]["executor_share_bps"], 7_000);
    assert_eq!(d["ruling"]["arbiter"], ARBITER.to_string());
    assert_eq!(d["ruling"]["rationale"]["value"]["rationale"], "mostly French");
    assert_eq!(d["appeal"]["appellant"], EXEC_Y.to_string());
    assert_eq!(d["appeal"]["reason"]["value"], "it is French", "text, not JSON");
    assert_eq!(d["appeal"]["ruling"]["verdict"], "worker");
    assert_eq!(d["appeal"]["ruling"]["arbiter"], APPEAL_ARBITER.to_string());
    assert_eq!(d["appeal"]["ruling"]["rationale"]["value"]["rationale"], "it is French");

    let refunded = &list[0]["dispute"];
    assert_eq!(list[0]["settlement"], "ruling");
    assert_eq!(refunded["ruling"]["verdict"], "client");
    assert_eq!(refunded["appeal"], Value::Null);
    assert_eq!(refunded["reason"], json!({"hash": null, "value": null, "error": null}));
    let why = refunded["ruling"]["rationale"]["error"].as_str().unwrap();
    assert!(why.contains("content-addressed"), "{why}");

    // A task never disputed has no dispute.
    let (_, one) = get(&app, "/api/tasks/1").await;
    assert_eq!(one["task"]["dispute"], Value::Null);
    assert_eq!(one["task"]["settlement"], Value::Null);

    for (query, expected) in [
        ("verdict=worker", &["3"][..]),
        ("verdict=client", &["4"]),
        ("verdict=split", &[]),
        ("appealed=true", &["3"]),
        ("appealed=false", &["4"]),
        ("state=settled", &["4", "3"]),
        ("state=awaiting_ruling", &[]),
        ("executor=0x4444444444444444444444444444444444444444", &["3"]),
        ("client=0x0B0b0B0b0B0b0B0b0B0b0B0b0B0b0B0b0B0b0B0b", &[]),
    ] {
        let got = ids(&app, &format!("/api/disputes?{query}"), "disputes").await;
        assert_eq!(got, expected, "GET /api/disputes?{query}");
    }
    let (status, first) = get(&app, "/api/disputes?limit=1").await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["disputes"][0]["task_id"], "4");
    let next = first["next"].as_str().expect("a second page");
    let (status, second) = get(&app, &format!("/api/disputes?limit=1&cursor={next}")).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["disputes"].as_array().unwrap().len(), 1);
    assert_eq!(second["disputes"][0]["task_id"], "3");
    assert_eq!(second["next"], Value::Null);
}

#[tokio::test]
async fn disputes_carry_their_verdict_rationale_and_appeal_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    disputes_carry_their_verdict_rationale_and_appeal(IndexStore::connect(&url).await.unwrap())
        .await;
}

#[tokio::test]
async fn disputes_carry_their_verdict_rationale_and_appeal_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_api_disputes").await
    else {
        return;
    };
    disputes_carry_their_verdict_rationale_and_appeal(IndexStore::connect(&url).await.unwrap())
        .await;
}

/// Envelopes and results come decoded beside their URIs, with the hashes
/// the escrow stores; a content-addressed result is read from the blob
/// store in the task's own answer, and said out of reach in a list.
#[tokio::test]
async fn envelopes_and_results_come_decoded_with_their_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let (app, expected) = app(IndexStore::connect(&url).await.unwrap()).await;
    let (status, one) = get(&app, "/api/tasks/1").await;
    assert_eq!(status, StatusCode::OK, "{one}");
    let t = &one["task"];
    let result_uri = t["result_uri"].as_str().unwrap();
    assert!(result_uri.starts_with("data:application/json;base64,"), "the raw URI is kept");
    assert_eq!(t["result"]["value"], expected["result1"]);
    assert_eq!(t["result"]["hash"], keccak256(result_uri.as_bytes()).to_string());
    assert_eq!(t["result"]["error"], Value::Null);
    let spec_uri = t["spec_uri"].as_str().unwrap();
    assert_eq!(t["envelope"]["value"]["spec"], "do step 1");
    assert_eq!(t["envelope"]["value"]["capability"], "haiku-write");
    assert_eq!(t["envelope"]["hash"], keccak256(spec_uri.as_bytes()).to_string(), "specHash");

    // A task not delivered has no result.
    let (_, two) = get(&app, "/api/tasks/2").await;
    assert_eq!(two["task"]["result"], Value::Null);

    // Content-addressed: read from the blobs for the one task ...
    let (_, five) = get(&app, "/api/tasks/5").await;
    assert_eq!(five["task"]["result"]["value"], expected["big"]);
    // ... not in a list, which says where to read it.
    let (_, page) = get(&app, "/api/tasks?parent=0&capability=summarize&status=Completed").await;
    let listed = &page["tasks"][0];
    assert_eq!(listed["task_id"], "5");
    assert_eq!(listed["result"]["value"], Value::Null);
    assert!(listed["result"]["error"].as_str().unwrap().contains("GET /api/tasks/{id}"));
    assert!(listed["result"]["hash"].is_string(), "the hash is known without the content");
}

/// Agents filter by registry status and offered capability, and page.
#[tokio::test]
async fn agents_filter_by_status_and_capability() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let (app, _) = app(IndexStore::connect(&url).await.unwrap()).await;
    let agents = |body: &Value| -> Vec<String> {
        body["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent"].as_str().unwrap().to_owned())
            .collect()
    };
    let (x, y) = (EXEC_X.to_string(), EXEC_Y.to_string());
    for (query, expected) in [
        ("", vec![x.clone(), y.clone()]),
        ("status=active", vec![x.clone()]),
        ("status=paused", vec![y.clone()]),
        ("status=left", vec![]),
        ("capability=summarize", vec![y.clone()]),
        ("capability=haiku-write", vec![x.clone()]),
        ("capability=haiku", vec![]),
        ("capability=haiku-write&status=paused", vec![]),
    ] {
        let (status, body) = get(&app, &format!("/api/agents?{query}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(agents(&body), expected, "GET /api/agents?{query}");
    }
    let (_, first) = get(&app, "/api/agents?limit=1").await;
    assert_eq!(agents(&first), [x]);
    let next = first["next"].as_str().unwrap();
    let (_, second) = get(&app, &format!("/api/agents?limit=1&cursor={next}")).await;
    assert_eq!(agents(&second), [y]);
    assert_eq!(second["next"], Value::Null);
}

/// Approvals carry the client's rating: each task shows it (null unless
/// approved), `rating_below` lists the approvals rated below a bound, and
/// the executor's weight counts a task rated 40 as 40% completed, 60%
/// failed.
async fn ratings_are_shown_filtered_and_weighed(store: IndexStore) {
    let mut c = Chain::default();
    let reg = R::AgentRegistered { agent: EXEC_X, metadataURI: String::new() };
    c.push(reg.encode_log_data());
    for id in 1..=4 {
        c.create(id, 0, FUNDER_A, EXEC_X, "haiku-write", 1_000 * id);
        c.complete(id, EXEC_X, "data:,done", 1_000 * id + 100);
    }
    let approve = |c: &mut Chain, id: u64, rating: u8| {
        let ev = E::TaskSettled {
            taskId: U256::from(id),
            status: 7,
            settlement: 0,
            executorAmount: 1_000_000,
            funderAmount: 0,
            rating,
            at: U40::from(1_000 * id + 200),
        };
        c.push(ev.encode_log_data());
    };
    approve(&mut c, 1, 40);
    approve(&mut c, 2, 100);
    // 3 auto-released (unrated); 4 delivered, not settled.
    c.settle(3, 7, 1, 1_000_000, 3_700);
    let to = c.logs.len() as u64;
    store.apply(&Batch { from: 1, to, logs: c.logs, ..Batch::default() }).await.unwrap();
    store.derive(None, 100).await.unwrap();
    let (_, progress) = watch::channel(Progress::default());
    let gate = tessera_http::limits::StreamGate::new(&tessera_http::limits::HttpLimits::default());
    let app = router_with_blobs(store, progress, broadcast::channel(16).0, 12, gate, None);

    let (status, page) = get(&app, "/api/tasks").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let shown: Vec<(&str, &Value, &Value)> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["task_id"].as_str().unwrap(), &t["rating"], &t["settlement"]))
        .collect();
    assert_eq!(
        shown,
        [
            ("1", &json!(40), &json!("approved")),
            ("2", &json!(100), &json!("approved")),
            ("3", &Value::Null, &json!("auto_released")),
            ("4", &Value::Null, &Value::Null),
        ]
    );
    let (_, one) = get(&app, "/api/tasks/1").await;
    assert_eq!(one["task"]["rating"], 40);
    for (query, expected) in [
        ("rating_below=100", &["1"][..]),
        ("rating_below=41", &["1"]),
        ("rating_below=40", &[]),
        ("rating_below=101", &["1", "2"]),
        ("rating_below=0", &[]),
        ("rating_below=101&status=Completed", &[]),
    ] {
        let got = ids(&app, &format!("/api/tasks?{query}"), "tasks").await;
        assert_eq!(got, expected, "GET /api/tasks?{query}");
    }
    // One funder's 3 USDC of paid work, 0.6 of it rated away: a fifth
    // counts failed.
    let (status, agent) = get(&app, &format!("/api/agents/{EXEC_X}")).await;
    assert_eq!(status, StatusCode::OK, "{agent}");
    let e = &agent["agent"]["stats"]["evidence"];
    let (done, failed) = (e["completed"].as_f64().unwrap(), e["failed"].as_f64().unwrap());
    assert!((failed / (done + failed) - 0.2).abs() < 1e-9, "{e}");
    assert_eq!(agent["agent"]["stats"]["completed"], 3, "the count is the settlements'");
    assert_eq!(agent["agent"]["stats"]["refunded"], 0);
}

#[tokio::test]
async fn ratings_are_shown_filtered_and_weighed_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    ratings_are_shown_filtered_and_weighed(IndexStore::connect(&url).await.unwrap()).await;
}

#[tokio::test]
async fn ratings_are_shown_filtered_and_weighed_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_api_ratings").await
    else {
        return;
    };
    ratings_are_shown_filtered_and_weighed(IndexStore::connect(&url).await.unwrap()).await;
}
