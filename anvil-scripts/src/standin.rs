//! A stand-in for a hosted JSON-RPC provider in front of a real anvil: an
//! HTTP proxy (axum in, reqwest out) that forwards what a hosted provider
//! would forward and imposes what such providers impose, each limit
//! configurable in [`Limits`]:
//!
//! - HTTP only: no websocket on the URL (a `GET` upgrade is refused);
//! - methods a hosted node does not serve (`anvil_*`, `debug_*`,
//!   `txpool_*`, `evm_*`, `eth_getBlockReceipts`) answered -32601 "method
//!   not found";
//! - `eth_getLogs` refused when its block range exceeds a cap (-32602
//!   "block range too large") or its result exceeds a cap (-32005 "query
//!   returned more than N results"), as a JSON-RPC error over HTTP 200;
//! - a per-client rate limit (a token bucket keyed by a header or the
//!   client's IP, each batch element one token) answered HTTP 429 with
//!   `Retry-After`;
//! - a seeded fraction of requests answered HTTP 503, the same requests
//!   for the same seed;
//! - batches up to a size, each element handled as a request of its own;
//! - an answer lost on the way back: a call of a chosen method forwarded
//!   to the chain, then answered HTTP 502 as a gateway whose upstream
//!   connection broke would ([`Limits::lose_answers`]).
//!
//! [`StandIn::counts`] tells what it did, for tests and benches to check.
//! The end-to-end suite (`tests/it/provider.rs`, `tests/it/hosted.rs`)
//! runs the services through it; `make bench-plan` has a row through it.

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    Json, Router,
    extract::{ConnectInfo, State},
    http::{HeaderMap, HeaderValue, StatusCode, header::RETRY_AFTER},
    response::{IntoResponse, Response},
    routing::post,
};
use serde_json::{Value, json};

/// What the stand-in imposes. [`Limits::default`] imposes nothing but the
/// missing websocket; [`Limits::hosted`] is a typical hosted provider.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Method prefixes answered "method not found" (e.g. `anvil_`).
    pub refused_prefixes: Vec<String>,
    /// Whole method names answered "method not found".
    pub refused_methods: Vec<String>,
    /// Most blocks one `eth_getLogs` may span.
    pub max_log_range: Option<u64>,
    /// Most logs one `eth_getLogs` may return.
    pub max_log_results: Option<usize>,
    /// Requests (batch elements) per second per client; `None` for no limit.
    pub rate_per_sec: Option<u32>,
    /// Most requests a client may send at once (its bucket's size); the
    /// rate when `None`.
    pub burst: Option<u32>,
    /// The header that names the client; its IP when absent.
    pub client_header: Option<String>,
    /// Fraction of HTTP requests answered 503 (0.0 to 1.0).
    pub fail_rate: f64,
    /// Seed of the 503s.
    pub seed: u64,
    /// Most elements in one batch.
    pub max_batch: usize,
    /// Calls of this method forwarded to the chain, then answered HTTP 502
    /// (the chain took them; the client is not told): the method and the
    /// numbers of its calls so answered (1 for the first call received).
    pub lose_answers: Option<(String, Vec<u64>)>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            refused_prefixes: Vec::new(),
            refused_methods: Vec::new(),
            max_log_range: None,
            max_log_results: None,
            rate_per_sec: None,
            burst: None,
            client_header: None,
            fail_rate: 0.0,
            seed: 0,
            max_batch: 1_000,
            lose_answers: None,
        }
    }
}

impl Limits {
    /// A hosted provider's usual limits: no `anvil_*`, `debug_*`,
    /// `txpool_*`, `evm_*` nor `eth_getBlockReceipts`; `eth_getLogs` capped
    /// at 2 000 blocks and 10 000 logs; 25 requests/s per client; 1 % of
    /// requests answered 503; batches of at most 100.
    pub fn hosted(seed: u64) -> Self {
        Self {
            refused_prefixes: ["anvil_", "debug_", "txpool_", "evm_"].map(String::from).to_vec(),
            refused_methods: vec!["eth_getBlockReceipts".into()],
            max_log_range: Some(2_000),
            max_log_results: Some(10_000),
            rate_per_sec: Some(25),
            burst: None,
            client_header: None,
            fail_rate: 0.01,
            seed,
            max_batch: 100,
            lose_answers: None,
        }
    }

    /// [`Limits::hosted`] without the transient faults (no 429s, no 503s),
    /// `eth_getLogs` capped at `blocks` blocks.
    pub fn strict(blocks: u64) -> Self {
        Self { max_log_range: Some(blocks), rate_per_sec: None, fail_rate: 0.0, ..Self::hosted(0) }
    }

    fn refuses(&self, method: &str) -> bool {
        self.refused_methods.iter().any(|m| m == method)
            || self.refused_prefixes.iter().any(|p| method.starts_with(p.as_str()))
    }
}

/// What the stand-in did so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// HTTP requests received.
    pub http_requests: u64,
    /// JSON-RPC calls (batch elements) forwarded to the chain.
    pub forwarded: u64,
    /// HTTP requests answered 429.
    pub rate_limited: u64,
    /// HTTP requests answered 503.
    pub failed: u64,
    /// Calls answered "method not found".
    pub not_found: u64,
    /// `eth_getLogs` calls refused for their block range.
    pub logs_range_refused: u64,
    /// `eth_getLogs` calls refused for their result count.
    pub logs_results_refused: u64,
    /// Batches refused for their size.
    pub batches_refused: u64,
    /// Calls forwarded whose answer was replaced by HTTP 502.
    pub answers_lost: u64,
    /// Calls received per method (whatever became of them).
    pub per_method: BTreeMap<String, u64>,
}

struct Inner {
    limits: Limits,
    upstream: String,
    http: reqwest::Client,
    counts: Mutex<Counts>,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
    rng: Mutex<u64>,
}

/// A running stand-in provider; stops when dropped.
#[derive(Debug)]
pub struct StandIn {
    /// The URL clients use, e.g. `http://127.0.0.1:40123/`.
    pub url: reqwest::Url,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("upstream", &self.upstream).finish_non_exhaustive()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StandIn {
    /// Starts a stand-in on a free local port in front of `upstream` (the
    /// chain's HTTP URL).
    pub async fn start(upstream: &str, limits: Limits) -> Self {
        let inner = Arc::new(Inner {
            rng: Mutex::new(limits.seed),
            limits,
            upstream: upstream.to_owned(),
            http: reqwest::Client::new(),
            counts: Mutex::new(Counts::default()),
            buckets: Mutex::new(HashMap::new()),
        });
        let app = Router::new().route("/", post(handle)).with_state(Arc::clone(&inner));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            let service = app.into_make_service_with_connect_info::<SocketAddr>();
            let _ = axum::serve(listener, service).await;
        });
        let url = format!("http://{addr}/").parse().expect("a URL");
        Self { url, inner, task }
    }

    /// What it did so far.
    pub fn counts(&self) -> Counts {
        self.inner.counts.lock().expect("counts").clone()
    }
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    inner.count(|c| c.http_requests += 1);
    let calls = match &body {
        Value::Array(calls) => calls.len(),
        _ => 1,
    };
    let client = inner
        .limits
        .client_header
        .as_deref()
        .and_then(|h| headers.get(h))
        .and_then(|v| v.to_str().ok())
        .map_or_else(|| peer.ip().to_string(), str::to_owned);
    if let Some(wait) = inner.take_tokens(&client, calls) {
        inner.count(|c| c.rate_limited += 1);
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        let body = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": 429, "message": "Too Many Requests"}});
        let mut resp = (StatusCode::TOO_MANY_REQUESTS, Json(body)).into_response();
        resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
        return resp;
    }
    if inner.fails() {
        inner.count(|c| c.failed += 1);
        return (StatusCode::SERVICE_UNAVAILABLE, "upstream unavailable").into_response();
    }
    match body {
        Value::Array(calls) if calls.is_empty() => {
            Json(error(Value::Null, -32600, "empty batch")).into_response()
        }
        Value::Array(calls) if calls.len() > inner.limits.max_batch => {
            inner.count(|c| c.batches_refused += 1);
            let message =
                format!("batch size too large: {} > {}", calls.len(), inner.limits.max_batch);
            Json(error(Value::Null, -32600, &message)).into_response()
        }
        Value::Array(calls) => {
            let answers =
                futures_util::future::join_all(calls.into_iter().map(|c| inner.call(c))).await;
            Json(Value::Array(answers)).into_response()
        }
        call => {
            let method = call.get("method").and_then(Value::as_str).map(str::to_owned);
            let answer = inner.call(call).await;
            if method.is_some_and(|m| inner.loses_answer(&m)) {
                return (StatusCode::BAD_GATEWAY, "upstream connection reset").into_response();
            }
            Json(answer).into_response()
        }
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

impl Inner {
    fn count(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.counts.lock().expect("counts"));
    }

    /// Takes `n` tokens from `client`'s bucket; how long to wait when
    /// there are not enough.
    fn take_tokens(&self, client: &str, n: usize) -> Option<Duration> {
        let rate = f64::from(self.limits.rate_per_sec?);
        let burst = self.limits.burst.map_or(rate, f64::from);
        let mut buckets = self.buckets.lock().expect("buckets");
        let now = Instant::now();
        let (tokens, at) = buckets.entry(client.to_owned()).or_insert((burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * rate).min(burst);
        *at = now;
        let n = n as f64;
        if *tokens >= n {
            *tokens -= n;
            None
        } else {
            Some(Duration::from_secs_f64((n - *tokens) / rate))
        }
    }

    /// Whether the answer to this single call of `method`, forwarded, is
    /// lost ([`Limits::lose_answers`]).
    fn loses_answer(&self, method: &str) -> bool {
        let Some((lost, numbers)) = &self.limits.lose_answers else { return false };
        if lost != method {
            return false;
        }
        let mut counts = self.counts.lock().expect("counts");
        let number = counts.per_method.get(method).copied().unwrap_or(0);
        if !numbers.contains(&number) {
            return false;
        }
        counts.answers_lost += 1;
        true
    }

    /// Whether this request is one of the seeded failures (splitmix64).
    fn fails(&self) -> bool {
        if self.limits.fail_rate <= 0.0 {
            return false;
        }
        let mut state = self.rng.lock().expect("rng");
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64) < self.limits.fail_rate
    }

    /// Answers one JSON-RPC call.
    async fn call(&self, call: Value) -> Value {
        let id = call.get("id").cloned().unwrap_or(Value::Null);
        let Some(method) = call.get("method").and_then(Value::as_str).map(str::to_owned) else {
            return error(id, -32600, "invalid request");
        };
        self.count(|c| *c.per_method.entry(method.clone()).or_default() += 1);
        if self.limits.refuses(&method) {
            self.count(|c| c.not_found += 1);
            let message = format!("the method {method} does not exist/is not available");
            return error(id, -32601, &message);
        }
        if method == "eth_getLogs"
            && let Some(max) = self.limits.max_log_range
            && let Some(span) = self.log_span(&call).await
            && span > max
        {
            self.count(|c| c.logs_range_refused += 1);
            let message = format!("block range too large: {span} blocks, at most {max} allowed");
            return error(id, -32602, &message);
        }
        let answer = self.forward(&call).await;
        if method == "eth_getLogs"
            && let Some(max) = self.limits.max_log_results
            && answer["result"].as_array().is_some_and(|logs| logs.len() > max)
        {
            self.count(|c| c.logs_results_refused += 1);
            return error(id, -32005, &format!("query returned more than {max} results"));
        }
        answer
    }

    async fn forward(&self, call: &Value) -> Value {
        self.count(|c| c.forwarded += 1);
        let id = call.get("id").cloned().unwrap_or(Value::Null);
        let sent = self.http.post(&self.upstream).json(call).send().await;
        match sent {
            Ok(resp) => match resp.json::<Value>().await {
                Ok(v) => v,
                Err(e) => error(id, -32603, &format!("upstream answer: {e}")),
            },
            Err(e) => error(id, -32603, &format!("upstream: {e}")),
        }
    }

    /// Blocks an `eth_getLogs` call spans (`None` for a block hash query).
    async fn log_span(&self, call: &Value) -> Option<u64> {
        let filter = call.get("params")?.get(0)?;
        if filter.get("blockHash").is_some() {
            return None;
        }
        let from = self.block(filter.get("fromBlock")).await?;
        let to = self.block(filter.get("toBlock")).await?;
        Some(to.saturating_sub(from) + 1)
    }

    /// A block number or tag as a number (tags as the chain's head).
    async fn block(&self, tag: Option<&Value>) -> Option<u64> {
        match tag.and_then(Value::as_str) {
            Some("earliest") => Some(0),
            Some(hex) if hex.starts_with("0x") => {
                u64::from_str_radix(hex.trim_start_matches("0x"), 16).ok()
            }
            _ => {
                let req = json!({"jsonrpc": "2.0", "id": 0, "method": "eth_blockNumber"});
                let resp = self.http.post(&self.upstream).json(&req).send().await.ok()?;
                let head: Value = resp.json().await.ok()?;
                u64::from_str_radix(head["result"].as_str()?.trim_start_matches("0x"), 16).ok()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner(limits: Limits) -> Inner {
        Inner {
            rng: Mutex::new(limits.seed),
            limits,
            upstream: "http://127.0.0.1:1/".into(),
            http: reqwest::Client::new(),
            counts: Mutex::new(Counts::default()),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    #[test]
    fn each_client_has_a_bucket_of_its_own_refilled_at_the_rate() {
        let s = inner(Limits { rate_per_sec: Some(10), burst: Some(3), ..Limits::default() });
        assert_eq!(s.take_tokens("a", 3), None, "a full bucket");
        let wait = s.take_tokens("a", 1).expect("empty: told to wait");
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(100), "{wait:?}");
        assert_eq!(s.take_tokens("b", 2), None, "another client's bucket is full");
        // Time passing refills it (the bucket's clock set back by hand).
        s.buckets.lock().unwrap().get_mut("a").unwrap().1 -= Duration::from_millis(200);
        assert_eq!(s.take_tokens("a", 2), None, "two tokens back after 200 ms at 10/s");
        assert!(s.take_tokens("a", 4).is_some(), "never more than the burst");
        let unlimited = inner(Limits::default());
        assert!((0..1_000).all(|_| unlimited.take_tokens("a", 100).is_none()));
    }

    #[test]
    fn failures_follow_the_seed_at_about_the_rate() {
        let draws = |seed: u64, rate: f64| {
            let s = inner(Limits { fail_rate: rate, seed, ..Limits::default() });
            (0..10_000).map(|_| s.fails()).collect::<Vec<_>>()
        };
        assert_eq!(draws(1, 0.01), draws(1, 0.01), "the same seed, the same failures");
        assert_ne!(draws(1, 0.01), draws(2, 0.01));
        let failed = draws(3, 0.01).iter().filter(|f| **f).count();
        assert!((50..=150).contains(&failed), "about 1 % of 10 000: {failed}");
        assert!(draws(4, 0.0).iter().all(|f| !f));
    }

    #[test]
    fn hosted_limits_refuse_node_only_methods() {
        let hosted = Limits::hosted(0);
        for m in ["anvil_mine", "evm_snapshot", "debug_traceCall", "txpool_content"] {
            assert!(hosted.refuses(m), "{m}");
        }
        assert!(hosted.refuses("eth_getBlockReceipts"));
        for m in ["eth_getLogs", "eth_call", "eth_sendRawTransaction", "eth_blockNumber"] {
            assert!(!hosted.refuses(m), "{m}");
        }
        assert!(!Limits::default().refuses("anvil_mine"));
        let strict = Limits::strict(5);
        assert_eq!(
            (strict.max_log_range, strict.rate_per_sec, strict.fail_rate),
            (Some(5), None, 0.0)
        );
    }
}
