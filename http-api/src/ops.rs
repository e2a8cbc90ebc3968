//! What operators expect of every Tessera service: `/metrics` in the
//! Prometheus text format, `/healthz` (the process answers) and `/readyz`
//! (what it depends on answers), and the metrics themselves, named and
//! described in one place ([`METRICS`]).
//!
//! Metrics are recorded through the [`metrics`] facade; [`install`] puts the
//! Prometheus recorder in place once per process (recording before it, or in
//! a process that never installs it, costs next to nothing and is dropped).
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

/// What a metric is, for [`METRICS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (resets when the process restarts).
    Counter,
    /// A value now.
    Gauge,
    /// Observations in buckets (`_bucket`, `_sum`, `_count`).
    Histogram,
}

impl Kind {
    /// The Prometheus type word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// One metric: name, kind, label names and what it means.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// The exported name.
    pub name: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// Its label names.
    pub labels: &'static [&'static str],
    /// What it means (the `# HELP` line).
    pub help: &'static str,
}

/// Runs by state (`state`: proposed, running, paused, cancelling, completed,
/// cancelled, failed), read from the run store at each scrape.
pub const RUNS: &str = "tessera_runs";
/// Seconds between two steps of a sub-task's task, in chain time.
pub const PHASE_SECONDS: &str = "tessera_subtask_phase_seconds";
/// Run decisions the runner applied.
pub const DECISIONS: &str = "tessera_decisions_applied_total";
/// JSON-RPC calls sent to the chain (recorded by `tessera-bindings`).
pub const RPC_REQUESTS: &str = "tessera_rpc_requests_total";
/// JSON-RPC calls that failed (recorded by `tessera-bindings`).
pub const RPC_ERRORS: &str = "tessera_rpc_errors_total";
/// JSON-RPC calls sent again after a transient failure (recorded by `tessera-bindings`).
pub const RPC_RETRIES: &str = "tessera_rpc_retries_total";
/// Whether this process holds a lane's run lease.
pub const LEASE_OWNED: &str = "tessera_lease_owned";
/// Leases this process took over from another holder.
pub const LEASE_TAKEOVERS: &str = "tessera_lease_takeovers_total";
/// The chain head the indexer last read.
pub const INDEXER_HEAD: &str = "tessera_indexer_head_block";
/// The highest block the index reflects.
pub const INDEXER_INDEXED: &str = "tessera_indexer_indexed_block";
/// Chain head − indexed block.
pub const INDEXER_LAG: &str = "tessera_indexer_head_lag_blocks";
/// Escrow and registry events stored by the indexer.
pub const INDEXER_EVENTS: &str = "tessera_indexer_events_total";
/// Disputes or appeals the arbiter has seen and not ruled on yet.
pub const ARBITER_QUEUE: &str = "tessera_arbiter_queue";
/// Rulings the arbiter sent.
pub const ARBITER_RULINGS: &str = "tessera_arbiter_rulings_total";
/// Other arbiter actions (finalizations, default refunds).
pub const ARBITER_ACTIONS: &str = "tessera_arbiter_actions_total";
/// Blob fetches by source and outcome (recorded by `tessera-bindings`).
pub const BLOB_FETCHES: &str = "tessera_blob_fetches_total";
/// Seconds a remote blob source took (recorded by `tessera-bindings`).
pub const BLOB_FETCH_SECONDS: &str = "tessera_blob_fetch_seconds";

/// Every metric a Tessera service exports. A process exports those of the
/// parts it runs (`tessera serve` with its embedded indexer: the
/// orchestrator's, the RPC and the indexer's ones).
pub const METRICS: &[Metric] = &[
    Metric {
        name: RUNS,
        kind: Kind::Gauge,
        labels: &["state"],
        help: "Runs in each state, read from the run store at each scrape.",
    },
    Metric {
        name: PHASE_SECONDS,
        kind: Kind::Histogram,
        labels: &["phase"],
        help: "Seconds (block time) a sub-task's task spent before each step: created_to_accepted, accepted_to_completed, completed_to_paid (a delivery, accepted and completed in one call, has accepted_to_completed 0); observed when the runner sees the step.",
    },
    Metric {
        name: DECISIONS,
        kind: Kind::Counter,
        labels: &["kind", "ok"],
        help: "Run decisions the runner applied (approve, dispute, retry, executor, cancel, checkpoint, appeal), by whether they succeeded.",
    },
    Metric {
        name: RPC_REQUESTS,
        kind: Kind::Counter,
        labels: &["method"],
        help: "JSON-RPC calls sent to the chain over HTTP, by method (each call of a batch counts).",
    },
    Metric {
        name: RPC_ERRORS,
        kind: Kind::Counter,
        labels: &["method", "kind"],
        help: "JSON-RPC attempts that failed, by method: kind=transport (no answer: refused, timed out, or an HTTP error status such as 429/503) or kind=rpc (the node answered an error, a revert included).",
    },
    Metric {
        name: RPC_RETRIES,
        kind: Kind::Counter,
        labels: &["method", "reason"],
        help: "JSON-RPC calls sent again after a transient failure, by method and reason: rate_limited (429 or a rate-limit error), unavailable (500/502/503/504), connect (no connection), timeout.",
    },
    Metric {
        name: LEASE_OWNED,
        kind: Kind::Gauge,
        labels: &["lane"],
        help: "1 while this process holds the lane's run lease, 0 once it lost or released it.",
    },
    Metric {
        name: LEASE_TAKEOVERS,
        kind: Kind::Counter,
        labels: &["lane"],
        help: "Run leases this process took over after their holder's lease expired.",
    },
    Metric {
        name: INDEXER_HEAD,
        kind: Kind::Gauge,
        labels: &[],
        help: "The chain head at the indexer's latest pass.",
    },
    Metric {
        name: INDEXER_INDEXED,
        kind: Kind::Gauge,
        labels: &[],
        help: "The highest block the index reflects.",
    },
    Metric {
        name: INDEXER_LAG,
        kind: Kind::Gauge,
        labels: &[],
        help: "Blocks the index is behind the chain: head at the latest pass minus the highest indexed block.",
    },
    Metric {
        name: INDEXER_EVENTS,
        kind: Kind::Counter,
        labels: &[],
        help: "Escrow and registry events the indexer stored.",
    },
    Metric {
        name: ARBITER_QUEUE,
        kind: Kind::Gauge,
        labels: &["level"],
        help: "Disputes (level=dispute) or appeals (level=appeal) seen and not ruled on yet.",
    },
    Metric {
        name: ARBITER_RULINGS,
        kind: Kind::Counter,
        labels: &["level", "verdict"],
        help: "Rulings sent: level=dispute (the arbiter) or appeal (the appeal arbiter), verdict=worker, client or split.",
    },
    Metric {
        name: ARBITER_ACTIONS,
        kind: Kind::Counter,
        labels: &["action"],
        help: "Other arbiter actions sent: finalized (a ruling past its appeal window), default_claimed (a dispute past its window refunded).",
    },
    Metric {
        name: BLOB_FETCHES,
        kind: Kind::Counter,
        labels: &["source", "outcome"],
        help: "Content-addressed blobs looked for, one per source consulted: source=local (this party's store), hint (the URI's ?src= location) or gateway (a configured --blob-gateway); outcome=hit, not_found, error (transient after retries, or a redirect loop or other 4xx) or refused (bytes that do not hash right, or over the size limit).",
    },
    Metric {
        name: BLOB_FETCH_SECONDS,
        kind: Kind::Histogram,
        labels: &["source"],
        help: "Seconds a remote blob source (source=hint or gateway) took to answer, retries included.",
    },
];

/// Buckets of [`PHASE_SECONDS`]: a second to a day.
pub const PHASE_BUCKETS: &[f64] =
    &[1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 21600.0, 86400.0];

/// Buckets of [`BLOB_FETCH_SECONDS`]: 5 ms to half a minute.
pub const BLOB_FETCH_BUCKETS: &[f64] =
    &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The process's Prometheus recorder, installed on first use. When some
/// other recorder was installed first, a handle of a detached recorder is
/// returned (it renders nothing), and a warning is logged.
pub fn install() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(PHASE_SECONDS.to_owned()), PHASE_BUCKETS)
                .expect("the phase buckets are not empty")
                .set_buckets_for_metric(
                    Matcher::Full(BLOB_FETCH_SECONDS.to_owned()),
                    BLOB_FETCH_BUCKETS,
                )
                .expect("the blob fetch buckets are not empty");
            let handle = match builder.install_recorder() {
                Ok(handle) => handle,
                Err(e) => {
                    tracing::warn!(error = %e, "another metrics recorder is installed; /metrics stays empty");
                    PrometheusBuilder::new().build_recorder().handle()
                }
            };
            describe();
            handle
        })
        .clone()
}

/// Registers every metric's help text with the recorder.
fn describe() {
    for m in METRICS {
        match m.kind {
            Kind::Counter => metrics::describe_counter!(m.name, m.help),
            Kind::Gauge => metrics::describe_gauge!(m.name, m.help),
            Kind::Histogram => metrics::describe_histogram!(m.name, m.help),
        }
    }
}

/// The metrics as Prometheus text, histograms drained first.
pub fn render(handle: &PrometheusHandle) -> String {
    handle.run_upkeep();
    handle.render()
}

// --- Recording -----------------------------------------------------------

/// Sets [`RUNS`] for each `(state, runs)`.
pub fn runs(counts: &[(&'static str, u64)]) {
    for &(state, n) in counts {
        metrics::gauge!(RUNS, "state" => state).set(n as f64);
    }
}

/// Observes one [`PHASE_SECONDS`] sample of `phase`
/// (`created_to_accepted`, `accepted_to_completed`, `completed_to_paid`).
pub fn phase_seconds(phase: &'static str, seconds: f64) {
    metrics::histogram!(PHASE_SECONDS, "phase" => phase).record(seconds);
}

/// Counts one decision of `kind` applied, successfully or not.
pub fn decision_applied(kind: &'static str, ok: bool) {
    metrics::counter!(DECISIONS, "kind" => kind, "ok" => if ok { "true" } else { "false" })
        .increment(1);
}

/// Sets [`LEASE_OWNED`] of `lane`: this process holds its lease or not.
pub fn lease_owned(lane: &str, owned: bool) {
    metrics::gauge!(LEASE_OWNED, "lane" => lane.to_owned()).set(if owned { 1.0 } else { 0.0 });
}

/// Counts one [`LEASE_TAKEOVERS`] of `lane`.
pub fn lease_takeover(lane: &str) {
    metrics::counter!(LEASE_TAKEOVERS, "lane" => lane.to_owned()).increment(1);
}

/// Sets the indexer's head, indexed block and lag.
pub fn indexer_progress(head: u64, indexed: u64) {
    metrics::gauge!(INDEXER_HEAD).set(head as f64);
    metrics::gauge!(INDEXER_INDEXED).set(indexed as f64);
    metrics::gauge!(INDEXER_LAG).set(head.saturating_sub(indexed) as f64);
}

/// Sets the indexer's head only (its indexed block is not known yet).
pub fn indexer_head(head: u64) {
    metrics::gauge!(INDEXER_HEAD).set(head as f64);
}

/// Counts `n` events stored by the indexer.
pub fn events_indexed(n: u64) {
    metrics::counter!(INDEXER_EVENTS).increment(n);
}

/// Sets [`ARBITER_QUEUE`] of `level` (`dispute` or `appeal`).
pub fn arbiter_queue(level: &'static str, queued: usize) {
    metrics::gauge!(ARBITER_QUEUE, "level" => level).set(queued as f64);
}

/// Counts one ruling sent at `level` with `verdict`.
pub fn arbiter_ruling(level: &'static str, verdict: &'static str) {
    metrics::counter!(ARBITER_RULINGS, "level" => level, "verdict" => verdict).increment(1);
}

/// Counts one other arbiter `action` sent.
pub fn arbiter_action(action: &'static str) {
    metrics::counter!(ARBITER_ACTIONS, "action" => action).increment(1);
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
    /// Ops over the process's recorder ([`install`]ed now if it was not),
    /// ready as long as no check is added.
    pub fn new() -> Self {
        Self {
            handle: install(),
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
        let ops = Ops::new().on_scrape(|| async { runs(&[("completed", 2), ("running", 0)]) });
        phase_seconds("created_to_accepted", 3.0);
        phase_seconds("created_to_accepted", 7.0);
        decision_applied("approve", true);
        lease_owned("lane-0", true);
        lease_takeover("lane-0");
        indexer_progress(120, 100);
        events_indexed(5);
        arbiter_queue("dispute", 1);
        arbiter_ruling("dispute", "worker");
        arbiter_action("finalized");
        metrics::counter!(RPC_REQUESTS, "method" => "eth_blockNumber").increment(1);
        metrics::counter!(RPC_ERRORS, "method" => "eth_call", "kind" => "rpc").increment(1);
        metrics::counter!(RPC_RETRIES, "method" => "eth_call", "reason" => "rate_limited")
            .increment(1);
        metrics::counter!(BLOB_FETCHES, "source" => "hint", "outcome" => "hit").increment(1);
        metrics::histogram!(BLOB_FETCH_SECONDS, "source" => "hint").record(0.02);
        let app = ops.router(Duration::from_secs(5));
        let (status, text) = get(&app, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        for line in [
            "tessera_runs{state=\"completed\"} 2",
            "tessera_runs{state=\"running\"} 0",
            "tessera_subtask_phase_seconds_bucket{phase=\"created_to_accepted\",le=\"5\"} 1",
            "tessera_subtask_phase_seconds_bucket{phase=\"created_to_accepted\",le=\"+Inf\"} 2",
            "tessera_subtask_phase_seconds_sum{phase=\"created_to_accepted\"} 10",
            "tessera_subtask_phase_seconds_count{phase=\"created_to_accepted\"} 2",
            "tessera_decisions_applied_total{kind=\"approve\",ok=\"true\"} 1",
            "tessera_lease_owned{lane=\"lane-0\"} 1",
            "tessera_lease_takeovers_total{lane=\"lane-0\"} 1",
            "tessera_indexer_head_block 120",
            "tessera_indexer_indexed_block 100",
            "tessera_indexer_head_lag_blocks 20",
            "tessera_indexer_events_total 5",
            "tessera_arbiter_queue{level=\"dispute\"} 1",
            "tessera_arbiter_rulings_total{level=\"dispute\",verdict=\"worker\"} 1",
            "tessera_arbiter_actions_total{action=\"finalized\"} 1",
            "tessera_rpc_requests_total{method=\"eth_blockNumber\"} 1",
            "tessera_rpc_errors_total{method=\"eth_call\",kind=\"rpc\"} 1",
            "tessera_rpc_retries_total{method=\"eth_call\",reason=\"rate_limited\"} 1",
            "tessera_blob_fetches_total{source=\"hint\",outcome=\"hit\"} 1",
            "tessera_blob_fetch_seconds_bucket{source=\"hint\",le=\"0.025\"} 1",
            "# TYPE tessera_subtask_phase_seconds histogram",
            "# TYPE tessera_runs gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
        }
        // Every documented metric recorded above has its help line.
        for m in METRICS {
            assert!(text.contains(&format!("# HELP {} ", m.name)), "no help for {}", m.name);
            assert!(m.name.starts_with("tessera_"));
            assert_eq!(m.kind == Kind::Counter, m.name.ends_with("_total"), "{}", m.name);
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
