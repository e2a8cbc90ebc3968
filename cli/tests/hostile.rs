//! Hostile input against the real binaries: lineage cycles and a deep chain
//! written to the chain, and thousands of abandoned event streams. The
//! standalone indexer (`tessera indexer run`, on SQLite and PostgreSQL) and
//! the one embedded in `tessera serve` must keep indexing and keep
//! answering within their limits; memory must come back after streams are
//! abandoned.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use alloy::providers::Provider;
use serde_json::{Value, json};
use support::Service;
use tessera_anvil::deploy::DeployConfig;
use tessera_e2e::{TEST_TOKEN, TestEnv};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// `tessera indexer run` on `db`, with short keep-alives and a stream cap;
/// the service and its base URL.
fn indexer(env: &TestEnv, dir: &Path, db: &str, max_streams: usize) -> (Service, String) {
    let deployment = dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    support::listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "run", "--listen", support::ANY_PORT, "--poll-ms", "100"])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--database-url", db])
            .args(["--keep-alive-secs", "1", "--max-streams", &max_streams.to_string()])
            .env("MALLOC_ARENA_MAX", "1")
            .stderr(Stdio::inherit()),
    )
}

/// `tessera serve` with its embedded indexer, short keep-alives and a cap;
/// the service and its base URL.
fn serve(env: &TestEnv, dir: &Path, max_streams: usize) -> (Service, String) {
    let cap = max_streams.to_string();
    let args = ["--keep-alive-secs", "1", "--max-streams", &cap];
    support::start_with(env, dir, &args, &[("MALLOC_ARENA_MAX", "1")])
}

/// The port of a base URL (`http://127.0.0.1:PORT`).
fn port_of(base: &str) -> u16 {
    base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port in the base URL")
}

/// GET `url` as JSON, which must answer within 15 s.
async fn get(http: &reqwest::Client, url: &str) -> (u16, Value) {
    let resp = tokio::time::timeout(Duration::from_secs(15), http.get(url).send())
        .await
        .unwrap_or_else(|_| panic!("{url} did not answer within 15 s"))
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Waits until the index at `status_url` has folded block `head`.
async fn caught_up(http: &reqwest::Client, status_url: &str, head: u64) {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = http.get(status_url).send().await
            && let Ok(s) = r.json::<Value>().await
            && s["indexed_block"].as_u64() >= Some(head)
        {
            return;
        }
        assert!(tokio::time::Instant::now() < end, "{status_url} never reached block {head}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Cycles and a 1,000-deep chain through one index API at `base`
/// (`…/api`): every lineage answer comes, bounded and marked, and the
/// index goes on following the chain.
async fn lineage_api_holds(env: &TestEnv, http: &reqwest::Client, base: &str) {
    let (plan, [own, a, b, under], chain) = tessera_e2e::hostile_lineage(env, 1_000).await;
    let head = env.provider.get_block_number().await.unwrap();
    caught_up(http, &format!("{base}/status"), head).await;

    let (status, body) = get(http, &format!("{base}/tasks/{own}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["lineage"]["cycle"], true, "{body}");
    assert!(body["task"]["flagged"].as_str().is_some_and(|f| f.contains("parent cycle")));
    let (status, body) = get(http, &format!("{base}/tasks/{under}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["ancestors"].as_array().unwrap().len(), 2, "{body}");
    assert_eq!(body["ancestors"][0], a.to_string());
    let deepest = chain.last().unwrap();
    let (status, body) = get(http, &format!("{base}/tasks/{deepest}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["ancestors"].as_array().unwrap().len(), 64);
    assert_eq!(body["lineage"]["ancestors_truncated"], true);
    let (status, body) = get(http, &format!("{base}/plans/{plan}/tree")).await;
    assert_eq!(status, 200, "{body}");
    let escrow = tessera_bindings::TaskEscrow::new(env.deployment.task_escrow, &env.provider);
    let listed: std::collections::BTreeSet<String> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["task_id"].as_str().map(str::to_owned))
        .collect();
    let missing: Vec<String> = [own, a, b, under]
        .iter()
        .chain(&chain)
        .map(|id| id.to_string())
        .filter(|id| !listed.contains(id))
        .collect();
    let mut gone = Vec::new();
    for id in &missing {
        let hash = escrow.taskHash(id.parse().unwrap()).call().await.unwrap();
        gone.extend(hash.is_zero().then(|| id.clone()));
    }
    assert!(gone.is_empty(), "tasks never created: {gone:?}");
    let indexed = get(http, &format!("{base}/status")).await.1;
    assert!(missing.is_empty(), "tasks on chain but not in the tree: {missing:?} ({indexed})");
    assert_eq!(body["tasks"].as_array().unwrap().len(), 1_004, "every task listed once");

    // Many lineage requests at once leave the index answering and following.
    let mut many = Vec::new();
    for _ in 0..16 {
        let (http, url) = (http.clone(), format!("{base}/tasks/{deepest}"));
        many.push(tokio::spawn(async move { get(&http, &url).await.0 }));
    }
    for r in many {
        assert_eq!(r.await.unwrap(), 200);
    }
    let (status, _) = get(http, &format!("{base}/tasks?limit=5")).await;
    assert_eq!(status, 200);
    let more = tessera_e2e::one_more_task(env, "after-cycles").await;
    let head = env.provider.get_block_number().await.unwrap();
    caught_up(http, &format!("{base}/status"), head).await;
    let (status, body) = get(http, &format!("{base}/tasks/{more}")).await;
    assert_eq!(status, 200, "indexing went on after the cycles: {body}");
}

#[tokio::test]
async fn standalone_indexer_answers_lineage_of_cycles_and_deep_chains_on_sqlite() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("index.db").display());
    let (_ix, base) = indexer(&env, dir.path(), &db, 64);
    let http = reqwest::Client::new();
    lineage_api_holds(&env, &http, &format!("{base}/api")).await;
}

#[tokio::test]
async fn standalone_indexer_answers_lineage_of_cycles_and_deep_chains_on_postgresql() {
    let Some(db) = tessera_db::test_utils::scratch_postgres_url("hostile_api").await else {
        return;
    };
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let (_ix, base) = indexer(&env, dir.path(), &db, 64);
    let http = reqwest::Client::new();
    lineage_api_holds(&env, &http, &format!("{base}/api")).await;
}

#[tokio::test]
async fn embedded_index_answers_lineage_of_cycles_and_deep_chains() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let (_serve, base) = serve(&env, dir.path(), 64);
    let http = reqwest::Client::new();
    support::wait_up(&http, &base).await;
    lineage_api_holds(&env, &http, &format!("{base}/index/api")).await;
    let (status, _) = get(&http, &format!("{base}/api/health")).await;
    assert_eq!(status, 200, "the orchestrator's own API answers too");
}

/// Opens an event stream at `path` and returns the connection once the
/// response head is in, with its status line.
async fn open_stream(port: u16, path: &str) -> (TcpStream, String) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).await.expect("connects");
    conn.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut buf))
            .await
            .expect("a response head within 10 s")
            .unwrap();
        assert!(n > 0, "closed before a response head");
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    (conn, head)
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Waits until the gauge at `url` (`open_streams`) reads zero.
async fn streams_drain(http: &reqwest::Client, url: &str) {
    let end = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = get(http, url).await;
        if body["open_streams"] == 0 {
            return;
        }
        assert!(tokio::time::Instant::now() < end, "streams never closed: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Rounds of `cap` streams opened on `path` and abandoned: every round fills
/// the cap (one more is refused with 503 and Retry-After), and the server
/// notices the vanished clients within its keep-alive: its gauge of open
/// streams returns to zero and its count of live tasks to where it was.
/// Resident memory stays level too: the highest reading of the warm-up
/// rounds is the baseline, and the lowest of the last rounds must stay
/// within 1 MiB of it (a stream that kept ~3 KB after its client left would
/// add 9 MiB over those rounds). The servers run with one malloc arena
/// (`MALLOC_ARENA_MAX=1`): with one per thread, where 500 connections land
/// decides how much each arena keeps, and resident memory wanders by several
/// MiB from run to run with nothing leaked.
async fn abandoned_streams_are_reclaimed(
    http: &reqwest::Client,
    pid: u32,
    port: u16,
    path: &str,
    gauge: &str,
    cap: usize,
) {
    const WARM_UP: usize = 4;
    const LAST: usize = 3;
    const ROUNDS: usize = 10;
    let tasks_before = get(http, gauge).await.1["runtime_tasks"].as_u64().expect("runtime_tasks");
    let mut rss = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let mut open = Vec::with_capacity(cap);
        for _ in 0..cap {
            let (conn, head) = open_stream(port, path).await;
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            open.push(conn);
        }
        let (_, head) = open_stream(port, path).await;
        assert!(head.starts_with("HTTP/1.1 503"), "the cap holds: {head}");
        assert!(head.to_ascii_lowercase().contains("retry-after: 1"), "{head}");
        let during = get(http, gauge).await.1;
        assert_eq!(during["open_streams"], cap, "{during}");
        assert!(during["runtime_tasks"].as_u64() >= Some(tasks_before + cap as u64), "{during}");
        drop(open);
        streams_drain(http, gauge).await;
        rss.push(rss_kib(pid));
    }
    let tasks_after = get(http, gauge).await.1["runtime_tasks"].as_u64().expect("runtime_tasks");
    let baseline = rss[..WARM_UP].iter().copied().max().unwrap_or_default();
    let settled = rss[ROUNDS - LAST..].iter().copied().min().unwrap_or_default();
    eprintln!(
        "{path}: {} abandoned streams; live tasks {tasks_before} -> {tasks_after}; RSS per round {rss:?} KiB",
        cap * ROUNDS
    );
    assert!(tasks_after <= tasks_before + 8, "tasks left behind: {tasks_before} -> {tasks_after}");
    assert!(
        settled <= baseline + 1024,
        "memory kept growing: {baseline} KiB after the warm-up, at least {settled} KiB at the end"
    );
}

#[tokio::test]
async fn abandoned_streams_are_reclaimed_on_both_apis() {
    const CAP: usize = 500;
    let env = TestEnv::start(DeployConfig::default()).await;
    let http = reqwest::Client::new();

    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("index.db").display());
    let (ix, base) = indexer(&env, dir.path(), &db, CAP);
    let head = env.provider.get_block_number().await.unwrap();
    caught_up(&http, &format!("{base}/api/status"), head).await;
    let quiet = format!("/api/plans/0x{}/events", "ab".repeat(32));
    let gauge = format!("{base}/api/status");
    abandoned_streams_are_reclaimed(&http, ix.0.id(), port_of(&base), &quiet, &gauge, CAP).await;

    let dir = tempfile::tempdir().unwrap();
    let (orch, api) = serve(&env, dir.path(), CAP);
    support::wait_up(&http, &api).await;
    // A proposed plan nobody approves: its stream stays quiet.
    let plan = json!({
        "version": 1, "id": format!("0x{}", "cd".repeat(32)), "review": "auto", "budget": 1_000_000u64,
        "source": "A short memo.",
        "subtasks": [{"index": 0, "capability": "summarize", "spec": "Summarize it",
            "executor": env.actors.agent(0), "cost": 500_000, "deadline_offset_secs": 3600}],
    });
    let resp = http
        .post(format!("{api}/api/plans"))
        .bearer_auth(TEST_TOKEN)
        .json(&plan)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
    let id = format!("0x{}", "cd".repeat(32));
    let quiet = format!("/api/runs/{id}/events");
    let gauge = format!("{api}/api/health");
    abandoned_streams_are_reclaimed(&http, orch.0.id(), port_of(&api), &quiet, &gauge, CAP).await;
}
