//! Transient means retry, from the `tessera` binaries: a `tessera worker`
//! and a `tessera serve` whose JSON-RPC goes through a faulty HTTP proxy in
//! front of anvil (every request answered 503 until the test heals it)
//! start anyway: they answer `/readyz` 503 meanwhile, carry on once the
//! proxy heals, and the worker then delivers a task.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU32, Ordering},
    },
    time::Duration,
};

use tessera_anvil::deploy::DeployConfig;
use tessera_e2e::TEST_TOKEN;
use tessera_orchestrator::plan::Plan;

mod support;

use support::{ANY_PORT, Service, chain_plan, propose_and_approve, start, wait_completed, wait_up};

/// An HTTP proxy forwarding JSON-RPC to `upstream`, answering every request
/// `503 Service Unavailable` until `healthy` is set; it counts both.
struct Proxy {
    url: String,
    healthy: Arc<AtomicBool>,
    refused: Arc<AtomicU32>,
    forwarded: Arc<AtomicU32>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let healthy = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicU32::new(0));
        let forwarded = Arc::new(AtomicU32::new(0));
        let (h, r, f) = (Arc::clone(&healthy), Arc::clone(&refused), Arc::clone(&forwarded));
        let http = reqwest::Client::new();
        let app = axum::Router::new().route(
            "/",
            axum::routing::post(move |body: axum::body::Bytes| {
                let (h, r, f, http, upstream) =
                    (h.clone(), r.clone(), f.clone(), http.clone(), upstream.clone());
                async move {
                    use axum::{http::StatusCode, response::IntoResponse};
                    if !h.load(Ordering::SeqCst) {
                        r.fetch_add(1, Ordering::SeqCst);
                        return (StatusCode::SERVICE_UNAVAILABLE, "upstream unavailable")
                            .into_response();
                    }
                    f.fetch_add(1, Ordering::SeqCst);
                    let sent = http
                        .post(&upstream)
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await;
                    match sent {
                        Ok(resp) => {
                            let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
                            let bytes = resp.bytes().await.unwrap_or_default();
                            (status, [("content-type", "application/json")], bytes).into_response()
                        }
                        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, healthy, refused, forwarded }
    }

    fn heal(&self) {
        self.healthy.store(true, Ordering::SeqCst);
    }
}

/// Starts `cmd` with its stdout read line by line into a channel.
fn spawn_reading(cmd: &mut Command) -> (Service, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (Service(child), rx)
}

/// The first line of `rx` holding `needle`, within `secs` (blocking this
/// thread only: the proxy keeps answering on the runtime's others).
fn line_with(rx: &std::sync::mpsc::Receiver<String>, needle: &str, secs: u64) -> String {
    tokio::task::block_in_place(|| first_line_with(rx, needle, secs))
}

fn first_line_with(rx: &std::sync::mpsc::Receiver<String>, needle: &str, secs: u64) -> String {
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(e) => panic!("no line with {needle:?} within {secs} s: {e}"),
        }
    }
}

/// The `http://host:port` in `line`.
fn base_in(line: &str) -> String {
    let at = line.find("http://").expect("an address") + 7;
    let addr: String =
        line[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':').collect();
    format!("http://{}", addr.trim_end_matches(['.', ':']))
}

async fn status(http: &reqwest::Client, url: &str) -> u16 {
    http.get(url).send().await.map_or(0, |r| r.status().as_u16())
}

const EXTRACTOR_CARD: &str = "
id: summarizer-a
description: Extractive summaries by sentence scoring; also lists named entities
role: executor
model: offline
capabilities:
  - name: summarize
    price: 500000
  - name: extract-entities
    price: 300000
instructions: Work on the material given.
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_behind_a_failing_provider_registers_once_it_heals_and_delivers() {
    // Demo agent 0 runs only as the `tessera worker` below.
    let (env, dir, workers) =
        support::chain_with_workers_for(DeployConfig::default(), &[1, 2, 3, 4]).await;
    let proxy = Proxy::start(env.chain.endpoint_url().to_string()).await;
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let card = dir.path().join("extractor.yaml");
    std::fs::write(&card, EXTRACTOR_CARD).unwrap();
    let key = format!("0x{}", alloy::hex::encode(env.actors.agents[0].to_bytes()));
    let (_worker, lines) = spawn_reading(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["worker", "--listen", ANY_PORT, "--poll-ms", "200"])
            .arg("--card")
            .arg(&card)
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", &proxy.url])
            .args(["--ws-url", &env.chain.ws_endpoint()])
            .arg("--blobs")
            .arg(dir.path().join("blobs"))
            .env("TESSERA_WORKER_KEY", key)
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_BACKTRACE"),
    );
    let ops = base_in(&line_with(&lines, "metrics on /metrics", 60));
    let http = reqwest::Client::new();
    // Three seconds of 503s to everything: it waits, it does not die.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(status(&http, &format!("{ops}/readyz")).await, 503);
    assert!(proxy.refused.load(Ordering::SeqCst) >= 3, "the worker went through the proxy");
    assert_eq!(proxy.forwarded.load(Ordering::SeqCst), 0);
    assert!(lines.try_iter().all(|l| !l.contains("watching for tasks")));
    proxy.heal();
    line_with(&lines, "watching for tasks", 60);
    assert_eq!(status(&http, &format!("{ops}/readyz")).await, 200);
    let metrics = http.get(format!("{ops}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("tessera_rpc_retries_total{")
                && l.contains("reason=\"unavailable\"")),
        "{metrics}"
    );

    // The worker now takes and delivers a task.
    let (_orch, api) = start(&env, dir.path());
    wait_up(&http, &api).await;
    let plan = chain_plan(
        Plan::id_from_label("cli-transient-worker"),
        "Ada Lovelace met Charles Babbage in London in 1833.",
        &[("extract-entities", env.actors.agent(0), 300_000)],
    );
    let id = propose_and_approve(&http, &api, &plan).await;
    let view = wait_completed(&http, &api, &id).await;
    assert_eq!(view["subtasks"][0]["attempt"], 0, "{view:#}");
    for w in workers {
        w.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_started_before_its_chain_answers_says_not_ready_then_becomes_ready() {
    let (env, dir, workers) = support::chain_with_workers_for(DeployConfig::default(), &[]).await;
    let proxy = Proxy::start(env.chain.endpoint_url().to_string()).await;
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let sponsor_key = format!("0x{}", alloy::hex::encode(env.actors.sponsor.to_bytes()));
    let (_orch, lines) = spawn_reading(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["serve", "--listen", ANY_PORT, "--no-index"])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", &proxy.url])
            .args(["--ws-url", &env.chain.ws_endpoint()])
            .args(["--database-url", &format!("sqlite://{}", dir.path().join("runs.db").display())])
            .arg("--blobs")
            .arg(dir.path().join("blobs"))
            .env("TESSERA_SPONSOR_KEY", sponsor_key)
            .env("TESSERA_API_TOKEN", TEST_TOKEN)
            .env_remove("DATABASE_URL")
            .env_remove("RUST_BACKTRACE"),
    );
    let api = base_in(&line_with(&lines, "starting on http://", 60));
    let http = reqwest::Client::new();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(status(&http, &format!("{api}/healthz")).await, 200);
    assert_eq!(status(&http, &format!("{api}/readyz")).await, 503);
    assert!(proxy.refused.load(Ordering::SeqCst) >= 1, "serve went through the proxy");
    proxy.heal();
    line_with(&lines, "orchestrator on http://", 60);
    assert_eq!(status(&http, &format!("{api}/api/health")).await, 200);
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while status(&http, &format!("{api}/readyz")).await != 200 {
        assert!(std::time::Instant::now() < end, "never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(workers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_failure_at_start_exits_at_once_with_one_line() {
    let (env, dir, _workers) = support::chain_with_workers_for(DeployConfig::default(), &[]).await;
    // A registry address with no contract behind it: waiting cannot fix that.
    let mut deployment = env.deployment.clone();
    deployment.agent_registry = alloy::primitives::Address::repeat_byte(0x11);
    let path = dir.path().join("wrong.json");
    deployment.save(&path).unwrap();
    let card = dir.path().join("extractor.yaml");
    std::fs::write(&card, EXTRACTOR_CARD).unwrap();
    let key = format!("0x{}", alloy::hex::encode(env.actors.agents[0].to_bytes()));
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["worker", "--listen", ANY_PORT])
        .arg("--card")
        .arg(&card)
        .arg("--deployment")
        .arg(&path)
        .args(["--rpc-url", env.chain.endpoint_url().as_str()])
        .arg("--blobs")
        .arg(dir.path().join("blobs"))
        .env("TESSERA_WORKER_KEY", key)
        .env_remove("RUST_BACKTRACE")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the worker exits at once")
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].starts_with("error: registering 0x"), "{stderr}");
    assert!(errors[0].contains("not be a contract"), "{stderr}");
    assert!(!stderr.contains("backtrace") && !stderr.contains("Location:"), "{stderr}");
    assert!(!stderr.contains("trying again"), "{stderr}");
}

#[tokio::test]
async fn a_one_shot_command_retries_then_exits_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    // Nothing listens on the discard port: every call is refused.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["deploy", "--rpc-url", "http://127.0.0.1:9"])
        .arg("--deployment")
        .arg(dir.path().join("deployment.json"))
        .env_remove("RUST_BACKTRACE")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("error: reaching the chain at http://127.0.0.1:9/: "), "{stderr}");
    assert!(lines[0].ends_with("Connection refused (os error 111)"), "{stderr}");
    assert_eq!(lines[0].matches("error sending request").count(), 1, "{stderr}");
    // Retried with backoff (five waits of at least 125, 250, 500, 1000 and
    // 2000 ms: 3.875 s), within the 20 s bound.
    assert!(elapsed >= Duration::from_millis(3_875), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(25), "{elapsed:?}");
    assert!(!dir.path().join("deployment.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiter_and_indexer_wait_for_their_chain_and_store_saying_not_ready() {
    let (env, dir, workers) = support::chain_with_workers_for(DeployConfig::default(), &[]).await;
    let proxy = Proxy::start(env.chain.endpoint_url().to_string()).await;
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let arbiter_key = format!("0x{}", alloy::hex::encode(env.actors.arbiter.to_bytes()));
    let sqlite = |name: &str| format!("sqlite://{}", dir.path().join(name).display());
    // Both behind a chain that answers 503 to everything.
    let (_arbiter, arbiter_lines) = spawn_reading(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["arbiter", "run", "--poll-ms", "100", "--metrics-addr", ANY_PORT])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", &proxy.url])
            .args(["--database-url", &sqlite("arbiter.db")])
            .arg("--blobs")
            .arg(dir.path().join("arbiter-blobs"))
            .env("TESSERA_ARBITER_KEY", &arbiter_key)
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_BACKTRACE"),
    );
    let (_indexer, indexer_lines) = spawn_reading(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "run", "--listen", ANY_PORT, "--poll-ms", "100"])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", &proxy.url])
            .args(["--database-url", &sqlite("index.db")])
            .arg("--blobs")
            .arg(dir.path().join("index-blobs"))
            .env_remove("RUST_BACKTRACE"),
    );
    // An indexer whose PostgreSQL does not answer (nothing listens there).
    let (mut no_store, no_store_lines) = spawn_reading(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "run", "--listen", ANY_PORT, "--poll-ms", "100"])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--database-url", "postgres://postgres@127.0.0.1:9/index"])
            .arg("--blobs")
            .arg(dir.path().join("lost-blobs"))
            .env_remove("RUST_BACKTRACE"),
    );
    let arbiter = base_in(&line_with(&arbiter_lines, "starting on http://", 60));
    let indexer = base_in(&line_with(&indexer_lines, "starting on http://", 60));
    let lost = base_in(&line_with(&no_store_lines, "starting on http://", 60));
    let http = reqwest::Client::new();
    tokio::time::sleep(Duration::from_secs(2)).await;
    for api in [&arbiter, &indexer, &lost] {
        assert_eq!(status(&http, &format!("{api}/healthz")).await, 200, "{api}");
        assert_eq!(status(&http, &format!("{api}/readyz")).await, 503, "{api}");
    }
    assert!(no_store.0.try_wait().unwrap().is_none(), "still trying its store");
    proxy.heal();
    line_with(&arbiter_lines, "ruling with the", 60);
    line_with(&indexer_lines, "indexer API on http://", 60);
    for api in [&arbiter, &indexer] {
        let end = std::time::Instant::now() + Duration::from_secs(30);
        while status(&http, &format!("{api}/readyz")).await != 200 {
            assert!(std::time::Instant::now() < end, "{api} never ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert_eq!(status(&http, &format!("{lost}/readyz")).await, 503, "its store still out of reach");
    drop(workers);
}
