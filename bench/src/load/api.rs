//! Calls to a `tessera serve` replica's HTTP API the load and failover
//! benches make: health and readiness, and authorised POSTs.

use std::time::{Duration, Instant};

use eyre::{Result, WrapErr, bail};
use serde_json::Value;

/// The API token every replica of a bench serves with.
pub(crate) const TOKEN: &str = "bench-load-token-0123456789";

/// Waits until `api` answers its health check.
pub(crate) async fn wait_up(http: &reqwest::Client, api: &str) -> Result<()> {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if http.get(format!("{api}/api/health")).send().await.is_ok_and(|r| r.status().is_success())
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the orchestrator at {api} did not answer within 60 s")
}

pub(crate) async fn post(
    http: &reqwest::Client,
    url: String,
    body: Option<&Value>,
) -> Result<Value> {
    let mut req = http.post(&url).bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(b);
    }
    let resp = req.send().await.wrap_err_with(|| format!("POST {url}"))?;
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("POST {url}: {status}: {body}");
    }
    Ok(body)
}

/// Waits until `api` says it is ready (in replica mode: its lane's lease
/// is held).
pub(crate) async fn wait_ready(http: &reqwest::Client, api: &str) -> Result<()> {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if http.get(format!("{api}/readyz")).send().await.is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the orchestrator at {api} was not ready within 60 s")
}
