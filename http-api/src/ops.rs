//! What operators expect of every Tessera service: `/metrics` in the
//! Prometheus text format, `/healthz` (the process answers) and `/readyz`
//! (what it depends on answers): the exporter alone. The metrics are named,
//! described and recorded by the crates that record them, each in a table
//! ([`Metric`], from `tessera-metrics`): `tessera_bindings::rpc_metrics`
//! and `tessera_bindings::envelope` ([`COMMON`] to every process),
//! `tessera_orchestrator::ops`, `tessera_indexer::metrics` and
//! `tessera_arbiter::metrics`.
//!
//! Metrics are recorded through the [`metrics`] facade; [`install`] puts the
//! Prometheus recorder in place once per process with the tables it is
//! given (recording before it, or in a process that never installs it,
//! costs next to nothing and is dropped).
//! The exporter never listens on its own: [`Ops::router`] renders it from an
//! axum handler, served beside a service's API (`tessera serve`, `tessera
//! indexer run`) or on its own address (`tessera arbiter run --metrics-addr`).
//!
//! | route | answers |
//! | --- | --- |
//! | `GET /metrics` | `200`, every metric in the Prometheus text format (0.0.4) |
//! | `GET /healthz` | `200 {"status": "ok"}` while the process serves |
//! | `GET /readyz` | `200 {"ready": true, "checks": {…}}` when every check passed in time, else `503` with `"ready": false`, `error` naming what failed, and each check's outcome |
//!
//! The routes are read-only and unauthenticated; they keep the request time
//! limit of the API they are served with.

use std::{
    future::Future,
    sync::{Arc, OnceLock},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::get,
};
use futures_util::future::{BoxFuture, join_all};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde_json::{Map, Value, json};

use crate::limits;

pub use tessera_metrics::{Kind, Metric, check};

/// The tables every process exports whatever it runs: the JSON-RPC calls
/// and the blob fetches `tessera-bindings` records.
pub const COMMON: &[&[Metric]] =
    &[tessera_bindings::rpc_metrics::METRICS, tessera_bindings::envelope::BLOB_METRICS];

/// The histograms the installed recorder has buckets for.
static BUCKETED: OnceLock<Vec<&'static str>> = OnceLock::new();

/// The process's Prometheus recorder, installed on first use with the
/// buckets of every histogram in [`COMMON`] and `tables`; every call
/// describes the metrics of `tables` (the first, [`COMMON`]'s too). A
/// process installs once with the tables of every part it runs (`tessera`
/// does at start-up), so each histogram has its buckets; a histogram of a
/// later table that was not known then keeps the exporter's default
/// buckets, with a warning. When some other recorder was installed first, a
/// handle of a detached recorder is returned (it renders nothing), and a
/// warning is logged.
pub fn install(tables: &[&'static [Metric]]) -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    let handle = HANDLE
        .get_or_init(|| {
            let (builder, bucketed) = builder(tables);
            let _ = BUCKETED.set(bucketed);
            let handle = match builder.install_recorder() {
                Ok(handle) => handle,
                Err(e) => {
                    tracing::warn!(error = %e, "another metrics recorder is installed; /metrics stays empty");
                    PrometheusBuilder::new().build_recorder().handle()
                }
            };
            COMMON.iter().flat_map(|t| t.iter()).for_each(describe);
            handle
        })
        .clone();
    let bucketed = BUCKETED.get().map(Vec::as_slice).unwrap_or_default();
    for m in tables.iter().flat_map(|t| t.iter()) {
        if m.kind == Kind::Histogram && !m.buckets.is_empty() && !bucketed.contains(&m.name) {
            tracing::warn!(
                metric = m.name,
                "histogram described after the recorder was installed; default buckets"
            );
        }
        describe(m);
    }
    handle
}

/// A Prometheus builder with the buckets of every histogram in [`COMMON`]
/// and `tables`, and those histograms' names.
fn builder(tables: &[&'static [Metric]]) -> (PrometheusBuilder, Vec<&'static str>) {
    let mut builder = PrometheusBuilder::new();
    let mut bucketed = Vec::new();
    let every = COMMON.iter().chain(tables).flat_map(|t| t.iter());
    for m in every.filter(|m| m.kind == Kind::Histogram && !m.buckets.is_empty()) {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(m.name.to_owned()), m.buckets)
            .expect("the buckets are not empty");
        bucketed.push(m.name);
    }
    (builder, bucketed)
}

/// What `record` records, as `/metrics` would render it with `tables`
/// (and [`COMMON`]) described and bucketed, on a recorder of its own: what
/// a crate's tests check of its metrics, apart from anything else the
/// process records.
pub fn render_with(tables: &[&'static [Metric]], record: impl FnOnce()) -> String {
    let recorder = builder(tables).0.build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        COMMON.iter().chain(tables).flat_map(|t| t.iter()).for_each(describe);
        record();
    });
    render(&handle)
}

/// Registers a metric's help text with the recorder.
fn describe(m: &Metric) {
    match m.kind {
        Kind::Counter => metrics::describe_counter!(m.name, m.help),
        Kind::Gauge => metrics::describe_gauge!(m.name, m.help),
        Kind::Histogram => metrics::describe_histogram!(m.name, m.help),
    }
}

/// The metrics as Prometheus text, histograms drained first.
pub fn render(handle: &PrometheusHandle) -> String {
    handle.run_upkeep();
    handle.render()
}

// --- Routes --------------------------------------------------------------

/// A readiness check: `Ok` when the dependency answered, else why not.
type Check = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;
/// Work done before each scrape (gauges read from a store).
type Refresh = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// A service's `/metrics`, `/healthz` and `/readyz`: what readiness means
/// for it, and what to refresh before a scrape.
#[derive(Clone)]
pub struct Ops {
    handle: PrometheusHandle,
    checks: Vec<(&'static str, Check)>,
    refresh: Vec<Refresh>,
    check_timeout: Duration,
}

impl std::fmt::Debug for Ops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ops")
            .field("checks", &self.checks.iter().map(|(n, _)| *n).collect::<Vec<_>>())
            .field("refresh", &self.refresh.len())
            .field("check_timeout", &self.check_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for Ops {
    fn default() -> Self {
        Self::new()
    }
}

/// How long a readiness check may take by default before it counts as failed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

impl Ops {
    /// Ops over the process's recorder ([`install`]ed now if it was not,
    /// with [`COMMON`] alone), ready as long as no check is added.
    pub fn new() -> Self {
        Self::with_metrics(&[])
    }

    /// [`Ops::new`] for a service that records the metrics of `tables`:
    /// installs the recorder with them if it was not yet, and describes
    /// them.
    pub fn with_metrics(tables: &[&'static [Metric]]) -> Self {
        Self {
            handle: install(tables),
            checks: Vec::new(),
            refresh: Vec::new(),
            check_timeout: CHECK_TIMEOUT,
        }
    }

    /// Adds a readiness check named `name` (`database`, `chain`, `leases`):
    /// `/readyz` is 200 only when every check answers `Ok` within the check
    /// timeout.
    #[must_use]
    pub fn ready_when<F, Fut>(mut self, name: &'static str, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.checks.push((name, Arc::new(move || Box::pin(check()))));
        self
    }

    /// Adds work done before each scrape, such as setting gauges from a
    /// store. It runs within the request's time limit; what it could not
    /// refresh keeps its last value.
    #[must_use]
    pub fn on_scrape<F, Fut>(mut self, refresh: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.refresh.push(Arc::new(move || Box::pin(refresh())));
        self
    }

    /// How long each readiness check may take ([`CHECK_TIMEOUT`] by default).
    #[must_use]
    pub fn check_timeout(mut self, timeout: Duration) -> Self {
        self.check_timeout = timeout;
        self
    }

    /// The three routes, each answered within `request_timeout` (`503` with
    /// `Retry-After` past it), a wrong method answered with the JSON `405`.
    /// No fallback: merge it into an API router, or use [`Ops::standalone`]
    /// to serve it alone.
    pub fn router(self, request_timeout: Duration) -> Router {
        Router::new()
            .route("/metrics", get(scrape))
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            // A JSON 405, also once merged into another router.
            .method_not_allowed_fallback(crate::method_not_allowed)
            .layer(middleware::from_fn_with_state(request_timeout, limits::request_timeout))
            .with_state(Arc::new(self))
    }

    /// [`Ops::router`] with the JSON 404 of every API, for a service that
    /// has no other routes.
    pub fn standalone(self, request_timeout: Duration) -> Router {
        self.router(request_timeout).fallback(crate::not_found)
    }

    /// Runs every check at once; each outcome by name, and whether all passed.
    pub async fn readiness(&self) -> (bool, Map<String, Value>) {
        let timeout = self.check_timeout;
        let outcomes = join_all(self.checks.iter().map(|(name, check)| async move {
            let outcome = match tokio::time::timeout(timeout, check()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
            };
            (*name, outcome)
        }))
        .await;
        let ready = outcomes.iter().all(|(_, o)| o.is_ok());
        let checks = outcomes
            .into_iter()
            .map(|(name, o)| {
                (name.to_owned(), Value::String(o.err().unwrap_or_else(|| "ok".into())))
            })
            .collect();
        (ready, checks)
    }
}

async fn scrape(State(ops): State<Arc<Ops>>) -> Response {
    join_all(ops.refresh.iter().map(|r| r())).await;
    let body = render(&ops.handle);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response()
}

async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn readyz(State(ops): State<Arc<Ops>>) -> Response {
    let (ready, checks) = ops.readiness().await;
    if ready {
        return Json(json!({ "ready": true, "checks": checks })).into_response();
    }
    let failed: Vec<&str> =
        checks.iter().filter(|(_, v)| v.as_str() != Some("ok")).map(|(k, _)| k.as_str()).collect();
    tracing::warn!(failed = ?failed, "not ready");
    let error = format!("not ready: {}", failed.join(", "));
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "ready": false, "error": error, "checks": checks })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt;

    use super::*;

    async fn get(app: &Router, path: &str) -> (StatusCode, String) {
        let req = axum::http::Request::get(path).body(Body::empty()).unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn recorded_metrics_render_with_their_names_labels_and_help() {
        use tessera_bindings::{envelope, rpc_metrics};
        let ops = Ops::new();
        metrics::counter!(rpc_metrics::RPC_REQUESTS, "method" => "eth_blockNumber").increment(1);
        metrics::counter!(rpc_metrics::RPC_ERRORS, "method" => "eth_call", "kind" => "rpc")
            .increment(1);
        metrics::counter!(tessera_bindings::retry::RPC_RETRIES, "method" => "eth_call", "reason" => "rate_limited")
            .increment(1);
        metrics::counter!(envelope::BLOB_FETCHES, "source" => "hint", "outcome" => "hit")
            .increment(1);
        metrics::histogram!(envelope::BLOB_FETCH_SECONDS, "source" => "hint").record(0.02);
        let app = ops.router(Duration::from_secs(5));
        let (status, text) = get(&app, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        for line in [
            "tessera_rpc_requests_total{method=\"eth_blockNumber\"} 1",
            "tessera_rpc_errors_total{method=\"eth_call\",kind=\"rpc\"} 1",
            "tessera_rpc_retries_total{method=\"eth_call\",reason=\"rate_limited\"} 1",
            "tessera_blob_fetches_total{source=\"hint\",outcome=\"hit\"} 1",
            "tessera_blob_fetch_seconds_bucket{source=\"hint\",le=\"0.025\"} 1",
            "# TYPE tessera_blob_fetch_seconds histogram",
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
        }
        // Every metric of the common tables, recorded above, has its help line.
        for table in COMMON {
            check(table).unwrap();
            for m in *table {
                assert!(text.contains(&format!("# HELP {} ", m.name)), "no help for {}", m.name);
            }
        }
    }

    #[tokio::test]
    async fn readiness_names_what_failed_and_health_always_answers() {
        let ready = Ops::new()
            .ready_when("database", || async { Ok(()) })
            .ready_when("chain", || async { Ok(()) })
            .router(Duration::from_secs(5));
        let (status, body) = get(&ready, "/readyz").await;
        assert_eq!(status, StatusCode::OK);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v, json!({"ready": true, "checks": {"database": "ok", "chain": "ok"}}));

        let not = Ops::new()
            .ready_when("database", || async { Ok(()) })
            .ready_when("chain", || async { Err("connection refused".to_owned()) })
            .ready_when("leases", std::future::pending)
            .check_timeout(Duration::from_millis(50))
            .standalone(Duration::from_secs(5));
        let (status, body) = get(&not, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["ready"], false);
        assert_eq!(v["error"], "not ready: chain, leases");
        assert_eq!(v["checks"]["database"], "ok");
        assert_eq!(v["checks"]["chain"], "connection refused");
        assert_eq!(v["checks"]["leases"], "no answer within 50 ms");
        let (status, body) = get(&not, "/healthz").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, r#"{"status":"ok"}"#));
        let (status, _) = get(&not, "/nope").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let post = axum::http::Request::post("/metrics").body(Body::empty()).unwrap();
        let resp = not.clone().oneshot(post).await.unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
    }
}
