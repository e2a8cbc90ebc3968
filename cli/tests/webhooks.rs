//! Webhooks end to end, against the real binary on anvil: a subscriber
//! registered on `tessera indexer run` gets every event of its plan, each
//! signed, across a receiver that fails for a while, an indexer killed
//! with SIGKILL while deliveries wait, and a reorganisation that takes an
//! event away (its retraction is delivered, after it). Deliveries are at
//! least once: the receiver keeps them by idempotency key, and the keys
//! it ends with are exactly the chain's events of the plan, plus the event
//! reorganised away and its retraction.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    process::Command,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use alloy::{
    primitives::{B256, U256, keccak256},
    providers::Provider,
    rpc::types::Filter,
};
use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post};
use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{TaskEscrow::TaskEscrowEvents, client::EscrowClient, task::decode_log};
use tessera_e2e::{TestEnv, allow_escrow, sponsor_task};
use tessera_indexer::webhooks::{DELIVERY_HEADER, SIGNATURE_HEADER, verify};

use support::{ANY_PORT, Service, listening};

const TOKEN: &str = "indexer-token-for-the-webhooks-test";
const SECRET: &str = "the-subscriber-secret-0123456789";

/// What the receiver saw: every request (key, kind, signature good), and
/// whether it answers 503 for now.
#[derive(Default)]
struct Receiver {
    seen: Mutex<Vec<(String, String, bool)>>,
    /// Keys answered 2xx, in the order first answered.
    kept: Mutex<Vec<String>>,
    down: AtomicBool,
}

impl Receiver {
    fn kept(&self) -> Vec<String> {
        self.kept.lock().unwrap().clone()
    }

    fn attempted(&self) -> BTreeSet<String> {
        self.seen.lock().unwrap().iter().map(|(k, _, _)| k.clone()).collect()
    }
}

async fn hook(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let key =
        headers.get(DELIVERY_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let signature = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    let good = verify(SECRET.as_bytes(), &body, signature);
    let payload: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let kind = payload["kind"].as_str().unwrap_or_default().to_owned();
    assert_eq!(payload["key"], key.as_str(), "the body names its key");
    r.seen.lock().unwrap().push((key.clone(), kind, good));
    if r.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let mut kept = r.kept.lock().unwrap();
    if !kept.contains(&key) {
        kept.push(key);
    }
    StatusCode::NO_CONTENT
}

/// A receiver on a port of its own; its URL.
async fn receiver() -> (Arc<Receiver>, String) {
    let r = Arc::new(Receiver::default());
    let app = axum::Router::new().route("/hook", post(hook)).with_state(Arc::clone(&r));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (r, url)
}

/// `tessera indexer run` on the index file under `dir`; it and its URL.
fn indexer(env: &TestEnv, dir: &Path) -> (Service, String) {
    let deployment = dir.join("deployment.json");
    if !deployment.exists() {
        env.deployment.save(&deployment).unwrap();
    }
    listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "run", "--poll-ms", "100", "--listen", ANY_PORT])
            .args(["--database-url", &format!("sqlite://{}", dir.join("index.db").display())])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .arg("--blobs")
            .arg(dir.join("blobs"))
            .env("TESSERA_INDEXER_TOKEN", TOKEN)
            .env_remove("DATABASE_URL")
            .env_remove("TESSERA_TEST_FAULT"),
    )
}

/// Waits (60 s at most) until the service at `base` says it is ready.
async fn ready(http: &reqwest::Client, base: &str) {
    for _ in 0..600 {
        let r = http.get(format!("{base}/readyz")).send().await;
        if r.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{base} was not ready within 60 s");
}

/// Waits (60 s at most) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("waited 60 s for {what}");
}

/// The key of every escrow event of `plan`'s tasks on the chain now.
async fn plan_keys(env: &TestEnv, plan: B256) -> BTreeSet<String> {
    let filter =
        Filter::new().address(env.deployment.task_escrow).from_block(env.deployment.deploy_block);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    let mut tasks = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for log in &logs {
        let Some(ev) = decode_log(log) else { continue };
        if let TaskEscrowEvents::TaskCreated(c) = &ev
            && c.planId == plan
        {
            tasks.insert(c.taskId);
        }
        let id = tessera_bindings::task::TaskRecord::event_task_id(&ev);
        if id.is_some_and(|id| tasks.contains(&id)) {
            keys.insert(key_of(env, log));
        }
    }
    keys
}

fn key_of(env: &TestEnv, log: &alloy::rpc::types::Log) -> String {
    format!("{}:{}:{}", env.deployment.chain_id, log.block_hash.unwrap(), log.log_index.unwrap())
}

#[tokio::test]
async fn every_event_once_by_key_across_a_kill_and_a_reorg() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let (recv, url) = receiver().await;
    let (mut ix, base) = indexer(&env, dir.path());
    let plan = keccak256("webhooks-e2e");
    ready(&http, &base).await;

    // Registration: authenticated, checked.
    let hooks = format!("{base}/api/webhooks");
    let body = json!({"url": url, "secret": SECRET, "filter": {"plan": plan.to_string()}});
    let resp = http.post(&hooks).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 401, "no token, no webhook");
    let bad = json!({"url": "ftp://example.org/", "secret": SECRET});
    let resp = http.post(&hooks).bearer_auth(TOKEN).json(&bad).send().await.unwrap();
    assert_eq!(resp.status(), 422, "a URL no delivery can go to");
    let resp = http.post(&hooks).bearer_auth(TOKEN).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201);
    let made: Value = resp.json().await.unwrap();
    assert_eq!(made["secret"], SECRET);

    let sponsor = env.actors.sponsor.address();
    let escrow = EscrowClient::new(env.provider.clone(), env.deployment.task_escrow);
    allow_escrow(&env).await;
    let now = env.driver().now().await.unwrap();
    let create = |r: &str| sponsor_task(&env, plan, r, U256::ZERO, now, "data:,x");

    // Two tasks, one accepted, and a task of another plan (not wanted).
    let (mut a1, _) = escrow.create(sponsor, create("a1")).await.unwrap();
    escrow.create(sponsor, create("a2")).await.unwrap();
    escrow.accept(env.actors.agent(0), &mut a1).await.unwrap();
    let other = sponsor_task(&env, keccak256("another plan"), "x", U256::ZERO, now, "data:,x");
    escrow.create(sponsor, other).await.unwrap();
    let wanted = plan_keys(&env, plan).await;
    assert_eq!(wanted.len(), 3);
    until("the first deliveries", || wanted.iter().all(|k| recv.kept().contains(k))).await;

    // The receiver fails: two more tasks wait in the outbox, tried and
    // refused; then the indexer is killed (SIGKILL) with them pending.
    recv.down.store(true, Ordering::SeqCst);
    escrow.create(sponsor, create("b1")).await.unwrap();
    escrow.create(sponsor, create("b2")).await.unwrap();
    let wanted = plan_keys(&env, plan).await;
    until("attempts of the waiting deliveries", || wanted.is_subset(&recv.attempted())).await;
    ix.0.kill().unwrap();
    ix.0.wait().unwrap();
    // One more while it is down; the receiver heals; the indexer restarts.
    escrow.create(sponsor, create("c1")).await.unwrap();
    recv.down.store(false, Ordering::SeqCst);
    let (ix, base) = indexer(&env, dir.path());
    ready(&http, &base).await;
    let wanted = plan_keys(&env, plan).await;
    assert_eq!(wanted.len(), 6);
    until("every delivery after the restart", || wanted.iter().all(|k| recv.kept().contains(k)))
        .await;

    // A task whose block is then replaced by an empty one: its creation is
    // delivered, then retracted.
    escrow.create(sponsor, create("d1")).await.unwrap();
    let with_d1 = plan_keys(&env, plan).await;
    let d1: Vec<String> = with_d1.difference(&wanted).cloned().collect();
    assert_eq!(d1.len(), 1);
    let d1 = d1[0].clone();
    until("d1's delivery", || recv.kept().contains(&d1)).await;
    let _: Value =
        env.provider.raw_request("anvil_reorg".into(), (1u64, Vec::<Value>::new())).await.unwrap();
    assert_eq!(plan_keys(&env, plan).await, wanted, "d1 is gone from the chain");
    let retracted = format!("{d1}:retracted");
    until("d1's retraction", || recv.kept().contains(&retracted)).await;
    // A pass or two more: nothing else arrives.
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    let kept = recv.kept();
    let got: BTreeSet<String> = kept.iter().cloned().collect();
    let mut expected = wanted.clone();
    expected.insert(d1.clone());
    expected.insert(retracted.clone());
    assert_eq!(got, expected, "every event of the plan by key, nothing else");
    let at = |k: &str| kept.iter().position(|x| x == k).unwrap();
    assert!(at(&d1) < at(&retracted), "the retraction after its event");
    let seen = recv.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|(_, _, good)| *good), "every request is signed with the secret");
    let kinds: BTreeMap<String, String> =
        seen.iter().map(|(k, kind, _)| (k.clone(), kind.clone())).collect();
    assert_eq!(kinds[&retracted], "retracted");
    assert!(wanted.iter().all(|k| kinds[k] == "event"));

    // The subscriber is listed with nothing pending, then removed.
    let hooks = format!("{base}/api/webhooks");
    let listed: Value =
        http.get(&hooks).bearer_auth(TOKEN).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["webhooks"][0]["pending"], 0, "{listed}");
    assert_eq!(listed["webhooks"][0]["dropped"], 0, "{listed}");
    // The command line lists and removes it.
    let id = made["id"].as_str().unwrap();
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "webhooks"])
            .args(args)
            .args(["--indexer-url", &base])
            .env("TESSERA_INDEXER_TOKEN", TOKEN)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let listed = cli(&["list"]);
    assert!(listed.contains(id) && listed.contains(&url), "{listed}");
    assert!(!listed.contains(SECRET), "{listed}");
    assert!(cli(&["rm", id]).contains("removed"));
    let listed: Value =
        http.get(&hooks).bearer_auth(TOKEN).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["webhooks"], json!([]), "{listed}");
    drop(ix);
}
