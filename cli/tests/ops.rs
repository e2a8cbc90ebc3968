//! What operators scrape and probe, against the real binary on anvil:
//! `tessera serve` with JSON logs runs a plan to completion, its `/metrics`
//! count the run, its sub-tasks' steps and its JSON-RPC calls by method,
//! `/readyz` is 200 and turns 503 (naming the chain) once anvil is gone;
//! `tessera arbiter run --metrics-addr` answers the same routes.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use serde_json::Value;
use tessera_e2e::{TEST_TOKEN, TestEnv};
use tessera_orchestrator::plan::Plan;

use support::{
    ANY_PORT, Lines, Service, chain_plan, chain_with_workers, collect, listening,
    propose_and_approve, wait_completed, wait_up,
};

/// `tessera --log-format json -v serve` on a port of its own choosing, its
/// stderr lines collected.
fn serve_json_logs(env: &TestEnv, dir: &std::path::Path) -> (Service, String, Lines) {
    let deployment = dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let sponsor_key = format!("0x{}", alloy::hex::encode(env.actors.sponsor.to_bytes()));
    let (mut service, api) = listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["--log-format", "json", "-v", "serve", "--listen", ANY_PORT])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--database-url", &format!("sqlite://{}", dir.join("runs.db").display())])
            .args(["--index-database-url", &format!("sqlite://{}", dir.join("index.db").display())])
            .arg("--blobs")
            .arg(dir.join("blobs"))
            .env("TESSERA_SPONSOR_KEY", sponsor_key)
            .env("TESSERA_API_TOKEN", TEST_TOKEN)
            .env_remove("DATABASE_URL")
            .env_remove("RUST_LOG")
            .stderr(Stdio::piped()),
    );
    let lines = collect(service.0.stderr.take().expect("piped stderr"));
    (service, api, lines)
}

/// The value of the sample `series` (name and labels, as rendered) in a
/// Prometheus text scrape.
fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Methods with a `tessera_rpc_requests_total` sample, and their counts.
fn rpc_requests(scrape: &str) -> Vec<(String, f64)> {
    scrape
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("tessera_rpc_requests_total{method=\"")?;
            let (method, value) = rest.split_once("\"} ")?;
            Some((method.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// A webhook receiver keeping the keys of the settlements it gets.
async fn settlement_receiver() -> (std::sync::Arc<std::sync::Mutex<Vec<String>>>, String) {
    let keys = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&keys);
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |body: axum::body::Bytes| async move {
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if v["event"]["name"] == "TaskSettled" {
                let key = v["key"].as_str().unwrap_or_default().to_owned();
                let mut kept = kept.lock().unwrap();
                if !kept.contains(&key) {
                    kept.push(key);
                }
            }
            axum::http::StatusCode::OK
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (keys, url)
}

async fn get(http: &reqwest::Client, url: &str) -> (u16, String) {
    let resp = http.get(url).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Polls `url` (30 s at most) until it answers `status`; returns the body.
async fn wait_status(http: &reqwest::Client, url: &str, status: u16) -> String {
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (got, body) = get(http, url).await;
        if got == status {
            return body;
        }
        assert!(tokio::time::Instant::now() < end, "{url} never answered {status}: {got} {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn serve_and_arbiter_export_metrics_readiness_and_json_logs() {
    let (env, dir, workers) = chain_with_workers().await;
    let http = reqwest::Client::new();
    let (_orch, api, logs) = serve_json_logs(&env, dir.path());
    wait_up(&http, &api).await;

    // Liveness and readiness before any work.
    let (status, body) = get(&http, &format!("{api}/healthz")).await;
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (status, body) = get(&http, &format!("{api}/readyz")).await;
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["checks"]["database"], "ok");
    assert_eq!(ready["checks"]["chain"], "ok");

    // The arbiter beside it, answering operators on an address of its own.
    let arbiter_key = format!("0x{}", alloy::hex::encode(env.actors.arbiter.to_bytes()));
    let (_arbiter, arbiter_ops) = listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["arbiter", "run", "--poll-ms", "100", "--metrics-addr", ANY_PORT])
            .arg("--deployment")
            .arg(dir.path().join("deployment.json"))
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args([
                "--database-url",
                &format!("sqlite://{}", dir.path().join("arbiter.db").display()),
            ])
            .arg("--blobs")
            .arg(dir.path().join("blobs"))
            .env("TESSERA_ARBITER_KEY", arbiter_key)
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stderr(Stdio::inherit()),
    );

    // A webhook on the embedded index, managed with serve's admin token,
    // for every settlement.
    let (settled, hook_url) = settlement_receiver().await;
    let hooks = format!("{api}/index/api/webhooks");
    let body = serde_json::json!({"url": hook_url, "filter": {"kinds": ["TaskSettled"]}});
    let resp = http.post(&hooks).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 401, "the admin token manages webhooks");
    let resp = http.post(&hooks).bearer_auth(TEST_TOKEN).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201);

    // A two-step plan to completion.
    let (a1, a3) = (env.actors.agent(1), env.actors.agent(3));
    let plan = chain_plan(
        Plan::id_from_label("ops-metrics"),
        "Operators scrape every service. Prometheus reads the text format. Alerts follow.",
        &[("summarize", a1, 400_000), ("sentiment-classify", a3, 200_000)],
    );
    let id = propose_and_approve(&http, &api, &plan).await;
    wait_completed(&http, &api, &id).await;

    let (status, scrape) = get(&http, &format!("{api}/metrics")).await;
    assert_eq!(status, 200);
    println!("--- tessera serve /metrics ---\n{scrape}");
    assert_eq!(sample(&scrape, r#"tessera_runs{state="completed"}"#), Some(1.0), "{scrape}");
    assert_eq!(sample(&scrape, r#"tessera_runs{state="running"}"#), Some(0.0));
    // Each sub-task's every step is seen once (a delivery is accepted and
    // completed in one call).
    for phase in ["created_to_accepted", "accepted_to_completed", "completed_to_paid"] {
        let count = format!(r#"tessera_subtask_phase_seconds_count{{phase="{phase}"}}"#);
        assert_eq!(sample(&scrape, &count), Some(2.0), "{count} in\n{scrape}");
    }
    assert!(scrape.contains("# TYPE tessera_subtask_phase_seconds histogram"));
    let rpc = rpc_requests(&scrape);
    for method in ["eth_sendRawTransaction", "eth_getLogs", "eth_blockNumber"] {
        assert!(rpc.iter().any(|(m, n)| m == method && *n > 0.0), "no {method} counted: {rpc:?}");
    }
    assert!(sample(&scrape, "tessera_indexer_events_total").is_some_and(|n| n > 0.0));
    assert!(sample(&scrape, "tessera_indexer_head_lag_blocks").is_some());
    // Both settlements were delivered to the webhook, and counted.
    for _ in 0..200 {
        if settled.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(settled.lock().unwrap().len(), 2, "{:?}", settled.lock().unwrap());
    let (_, scrape) = get(&http, &format!("{api}/metrics")).await;
    let delivered = r#"tessera_indexer_webhook_deliveries_total{outcome="delivered"}"#;
    assert!(sample(&scrape, delivered).is_some_and(|n| n >= 2.0), "{scrape}");

    let (status, arbiter_scrape) = get(&http, &format!("{arbiter_ops}/metrics")).await;
    assert_eq!(status, 200);
    println!("--- tessera arbiter run /metrics ---\n{arbiter_scrape}");
    assert_eq!(sample(&arbiter_scrape, r#"tessera_arbiter_queue{level="dispute"}"#), Some(0.0));
    assert!(rpc_requests(&arbiter_scrape).iter().any(|(m, _)| m == "eth_getLogs"));
    wait_status(&http, &format!("{arbiter_ops}/readyz"), 200).await;
    // Its rationales are served beside (none is content-addressed here).
    let (status, _) = get(&http, &format!("{arbiter_ops}/blobs/{}", "ab".repeat(32))).await;
    assert_eq!(status, 404);
    let (status, _) = get(&http, &format!("{arbiter_ops}/blobs/nope")).await;
    assert_eq!(status, 400);

    // JSON log lines, a run's events inside its span with the plan id.
    let lines = logs.lock().unwrap().clone();
    let events: Vec<Value> =
        lines.iter().filter_map(|(_, l)| serde_json::from_str(l).ok()).collect();
    assert!(!events.is_empty(), "no JSON log line in {lines:?}");
    assert!(events.iter().all(|e| e["timestamp"].is_string() && e["level"].is_string()));
    let run_event = events
        .iter()
        .find(|e| e["fields"]["message"] == "run event" && e["span"]["plan"] == id)
        .unwrap_or_else(|| panic!("no run event logged in its run's span: {lines:#?}"));
    println!("--- a JSON log line ---\n{run_event}");

    // The chain goes away: not ready, and the reason says so.
    for w in workers {
        w.abort();
    }
    let TestEnv { chain, .. } = env;
    drop(chain);
    for base in [&api, &arbiter_ops] {
        let body = wait_status(&http, &format!("{base}/readyz"), 503).await;
        println!("--- {base}/readyz without the chain ---\n{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["ready"], false, "{body}");
        assert_eq!(v["error"], "not ready: chain", "{body}");
        assert_eq!(v["checks"]["database"], "ok", "{body}");
    }
    let (_, scrape) = get(&http, &format!("{api}/metrics")).await;
    assert!(
        sample(&scrape, r#"tessera_rpc_errors_total{method="eth_blockNumber",kind="transport"}"#)
            .is_some_and(|n| n > 0.0),
        "{scrape}"
    );
    // Still alive.
    assert_eq!(get(&http, &format!("{api}/healthz")).await.0, 200);
}
