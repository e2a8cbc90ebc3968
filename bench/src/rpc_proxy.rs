//! A counting JSON-RPC proxy: forwards every HTTP request to the chain and
//! counts the JSON-RPC calls in it (each element of a batch counts), by
//! method, and the `eth_call`s by the contract function they call (named
//! from the bindings' selectors, see [`function_of`]). The plan bench puts one in front of the orchestrator and one in
//! front of the workers, so each side's requests per settled sub-task are
//! measured where a hosted provider would meter them. In front of the
//! stand-in provider ([`tessera_anvil::standin`]) it also counts the
//! requests answered 429 and 503, and passes `Retry-After` on.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use reqwest::Url;
use serde_json::Value;

/// Calls counted so far, by method, and the HTTP requests the chain's side
/// answered 429 (rate limited) or 503 (unavailable): each one a request
/// its client sends again, counted again in `by_method`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Method → calls.
    pub by_method: BTreeMap<String, u64>,
    /// Contract function → `eth_call`s (of `by_method["eth_call"]`).
    pub calls_by_function: BTreeMap<String, u64>,
    /// HTTP requests answered 429.
    pub rate_limited: u64,
    /// HTTP requests answered 503.
    pub unavailable: u64,
}

impl Counts {
    /// All calls.
    pub fn total(&self) -> u64 {
        self.by_method.values().sum()
    }

    /// The counts of several proxies together.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a Counts>) -> Counts {
        let mut out = Counts::default();
        for c in all {
            for (k, n) in &c.by_method {
                *out.by_method.entry(k.clone()).or_default() += n;
            }
            for (k, n) in &c.calls_by_function {
                *out.calls_by_function.entry(k.clone()).or_default() += n;
            }
            out.rate_limited += c.rate_limited;
            out.unavailable += c.unavailable;
        }
        out
    }

    /// What was counted since `earlier`.
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            by_method: minus(&self.by_method, &earlier.by_method),
            calls_by_function: minus(&self.calls_by_function, &earlier.calls_by_function),
            rate_limited: self.rate_limited - earlier.rate_limited,
            unavailable: self.unavailable - earlier.unavailable,
        }
    }
}

/// `later - earlier`, key by key, without the keys that did not grow.
fn minus(later: &BTreeMap<String, u64>, earlier: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    later
        .iter()
        .map(|(k, n)| (k.clone(), n - earlier.get(k).copied().unwrap_or_default()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[derive(Clone)]
struct Shared {
    upstream: Url,
    client: reqwest::Client,
    counts: Arc<Mutex<Counts>>,
}

/// A running proxy; stops when dropped.
#[derive(Debug)]
pub struct RpcProxy {
    url: Url,
    counts: Arc<Mutex<Counts>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RpcProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RpcProxy {
    /// Listens on a free local port and forwards to `upstream`.
    pub async fn start(upstream: Url) -> std::io::Result<Self> {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let shared =
            Shared { upstream, client: reqwest::Client::new(), counts: Arc::clone(&counts) };
        let app = Router::new().route("/", post(forward)).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "rpc proxy stopped");
            }
        });
        let url = Url::parse(&format!("http://{addr}/")).expect("a socket address is a URL");
        Ok(Self { url, counts, task })
    }

    /// Where to send requests.
    pub fn url(&self) -> Url {
        self.url.clone()
    }

    /// The calls counted so far.
    pub fn counts(&self) -> Counts {
        self.counts.lock().expect("counts lock").clone()
    }
}

/// Counts the calls in `body`: one per object, one per element of a batch.
fn count(body: &[u8], counts: &Mutex<Counts>) {
    let calls: Vec<(String, Option<String>)> = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(calls)) => calls.iter().map(|c| (method_of(c), function_of(c))).collect(),
        Ok(call) => vec![(method_of(&call), function_of(&call))],
        Err(_) => vec![("<not json>".to_owned(), None)],
    };
    let mut counts = counts.lock().expect("counts lock");
    for (method, function) in calls {
        *counts.by_method.entry(method).or_default() += 1;
        if let Some(f) = function {
            *counts.calls_by_function.entry(f).or_default() += 1;
        }
    }
}

/// The contract function an `eth_call` calls: its name when one of the
/// bindings' contracts has its selector, else the selector in hex; `None`
/// for any other method.
fn function_of(call: &Value) -> Option<String> {
    use tessera_bindings::{
        AgentRegistry::AgentRegistryCalls, IdentityRegistry::IdentityRegistryCalls,
        MockUSDC::MockUSDCCalls, ReputationRegistry::ReputationRegistryCalls,
        TaskEscrow::TaskEscrowCalls,
    };
    if call.get("method").and_then(Value::as_str) != Some("eth_call") {
        return None;
    }
    let tx = call.get("params").and_then(|p| p.get(0));
    let data = tx.and_then(|t| t.get("input").or_else(|| t.get("data"))).and_then(Value::as_str);
    let Some(hex) = data.and_then(|d| d.strip_prefix("0x")).and_then(|d| d.get(..8)) else {
        return Some("<no selector>".to_owned());
    };
    let Ok(selector) = <[u8; 4]>::try_from(alloy::hex::decode(hex).unwrap_or_default()) else {
        return Some(format!("0x{hex}"));
    };
    let name = TaskEscrowCalls::name_by_selector(selector)
        .or_else(|| AgentRegistryCalls::name_by_selector(selector))
        .or_else(|| MockUSDCCalls::name_by_selector(selector))
        .or_else(|| IdentityRegistryCalls::name_by_selector(selector))
        .or_else(|| ReputationRegistryCalls::name_by_selector(selector));
    Some(name.map_or_else(|| format!("0x{hex}"), str::to_owned))
}

fn method_of(call: &Value) -> String {
    call.get("method").and_then(Value::as_str).unwrap_or("<no method>").to_owned()
}

async fn forward(State(s): State<Shared>, body: Bytes) -> Response {
    count(&body, &s.counts);
    let sent = s
        .client
        .post(s.upstream.clone())
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    let reply = match sent {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = StatusCode::from_u16(reply.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    {
        let mut counts = s.counts.lock().expect("counts lock");
        match status {
            StatusCode::TOO_MANY_REQUESTS => counts.rate_limited += 1,
            StatusCode::SERVICE_UNAVAILABLE => counts.unavailable += 1,
            _ => {}
        }
    }
    // The server's hint of when to come back goes back with its answer.
    let retry_after = reply.headers().get(header::RETRY_AFTER).cloned();
    match reply.bytes().await {
        Ok(bytes) => {
            let mut resp =
                (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response();
            if let Some(v) = retry_after {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            resp
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use alloy::sol_types::SolCall;

    use super::*;

    #[test]
    fn batches_count_each_call() {
        let counts = Mutex::new(Counts::default());
        count(br#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}"#, &counts);
        count(
            br#"[{"id":2,"method":"eth_getLogs"},{"id":3,"method":"eth_blockNumber"},{"id":4}]"#,
            &counts,
        );
        count(b"garbage", &counts);
        let balance_of = alloy::hex::encode(tessera_bindings::MockUSDC::balanceOfCall::SELECTOR);
        let eth_call = format!(
            r#"[{{"id":5,"method":"eth_call","params":[{{"to":"0x01","input":"0x{balance_of}00"}},"latest"]}},
                {{"id":6,"method":"eth_call","params":[{{"to":"0x01","data":"0xdeadbeef"}}]}}]"#
        );
        count(eth_call.as_bytes(), &counts);
        let c = counts.lock().unwrap().clone();
        assert_eq!(c.by_method["eth_call"], 2);
        assert_eq!(c.calls_by_function["balanceOf"], 1);
        assert_eq!(c.calls_by_function["0xdeadbeef"], 1);
        assert_eq!(c.by_method["eth_blockNumber"], 2);
        assert_eq!(c.by_method["eth_getLogs"], 1);
        assert_eq!(c.by_method["<no method>"], 1);
        assert_eq!(c.by_method["<not json>"], 1);
        assert_eq!(c.total(), 7);
        let later =
            Counts { by_method: [("eth_blockNumber".into(), 5)].into(), ..Counts::default() };
        assert_eq!(later.since(&c).by_method, [("eth_blockNumber".to_owned(), 3)].into());
    }
}
