//! The indexer's read-only HTTP API (axum): tasks with filters and cursor
//! pagination, one task with its history, a plan's lineage tree, agents with
//! their stats, the capability catalogue, disputes, the reorg journal,
//! status, an SSE stream scoped to a plan, and the OpenAPI document. Every
//! answer says which block it reflects. Every rejection, the extractors' and routing's included, is
//! JSON `{"error": …}` (through `tessera_http`); a parameter the document
//! constrains is checked as documented, so the server is never looser than
//! its contract, and a query parameter a route does not take is refused
//! with 400, never ignored (a misspelt filter would otherwise answer every
//! task).

use std::sync::Arc;

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    middleware,
    response::{IntoResponse, Response, sse::Event},
    routing::get,
};
use serde_json::{Value, json};
use tessera_bindings::envelope::BlobStore;
use tessera_http::limits::{self, StreamGate};
use tessera_http::{Path, Query};
use tokio::sync::{broadcast, watch};

use crate::{
    ingest::{Progress, Update},
    params,
    store::{AgentFilter, DisputeFilter, IndexStore, TaskQuery},
};

/// The OpenAPI document.
pub const OPENAPI: &str = include_str!("openapi.json");

/// Every route, as documented.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/status"),
    ("get", "/api/tasks"),
    ("get", "/api/tasks/{id}"),
    ("get", "/api/plans/{id}/tree"),
    ("get", "/api/plans/{id}/events"),
    ("get", "/api/agents"),
    ("get", "/api/agents/{address}"),
    ("get", "/api/capabilities"),
    ("get", "/api/disputes"),
    ("get", "/api/reorgs"),
    ("get", "/api/openapi.json"),
];

#[derive(Clone)]
struct AppState {
    store: IndexStore,
    progress: watch::Receiver<Progress>,
    updates: broadcast::Sender<Update>,
    reorg_depth: u64,
    gate: StreamGate,
    /// Where the one-task answer reads content-addressed URIs from.
    blobs: Option<Arc<dyn BlobStore + Send + Sync>>,
}

/// The query of a route that takes no parameters: any is refused.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

/// The router over `store`, reporting `progress` and streaming `updates`,
/// keeping the limits of `gate` (a time limit on every request, a cap on
/// open event streams).
pub fn router(
    store: IndexStore,
    progress: watch::Receiver<Progress>,
    updates: broadcast::Sender<Update>,
    reorg_depth: u64,
    gate: StreamGate,
) -> Router {
    router_with_blobs(store, progress, updates, reorg_depth, gate, None)
}

/// [`router`], the one-task answer reading content-addressed URIs (a
/// large result, a rationale) from `blobs` when it holds them.
pub fn router_with_blobs(
    store: IndexStore,
    progress: watch::Receiver<Progress>,
    updates: broadcast::Sender<Update>,
    reorg_depth: u64,
    gate: StreamGate,
    blobs: Option<Arc<dyn BlobStore + Send + Sync>>,
) -> Router {
    let timeout = gate.limits().request_timeout;
    let graphql = crate::graphql::router(
        store.clone(),
        progress.clone(),
        updates.clone(),
        reorg_depth,
        gate.clone(),
    );
    Router::new()
        .route("/api/status", get(status))
        .route("/api/tasks", get(tasks))
        .route("/api/tasks/{id}", get(task))
        .route("/api/plans/{id}/tree", get(tree))
        .route("/api/plans/{id}/events", get(plan_events))
        .route("/api/agents", get(agents))
        .route("/api/agents/{address}", get(agent))
        .route("/api/capabilities", get(capabilities))
        .route("/api/disputes", get(disputes))
        .route("/api/reorgs", get(reorgs))
        .route("/api/openapi.json", get(openapi))
        // JSON 404 and 405; after every route, so the 405 covers them all.
        .fallback(tessera_http::not_found)
        .method_not_allowed_fallback(tessera_http::method_not_allowed)
        .layer(middleware::from_fn_with_state(timeout, limits::request_timeout))
        .with_state(AppState { store, progress, updates, reorg_depth, gate, blobs })
        .merge(graphql)
}

/// The router over a running indexer: its store, progress and updates.
pub fn of(indexer: &crate::Indexer, gate: StreamGate) -> Router {
    router_with_blobs(
        indexer.store().clone(),
        indexer.progress(),
        indexer.updates(),
        indexer.reorg_depth(),
        gate,
        indexer.blobs().cloned(),
    )
}

/// The indexer's `/metrics`, `/healthz` and `/readyz` (served beside the
/// API, not in its OpenAPI document): ready when its store answers `SELECT
/// 1` and its chain `eth_blockNumber`.
pub fn ops(indexer: &crate::Indexer) -> tessera_http::ops::Ops {
    let store = indexer.store().clone();
    let provider = indexer.provider().clone();
    tessera_http::ops::Ops::with_metrics(&[crate::metrics::METRICS])
        .ready_when("database", move || {
            let store = store.clone();
            async move { store.ping().await.map_err(|e| e.to_string()) }
        })
        .ready_when("chain", tessera_bindings::client::chain_ready(provider))
}

struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.0 == StatusCode::SERVICE_UNAVAILABLE {
            return limits::unavailable(self.1);
        }
        tessera_http::ApiError::new(self.0, self.1).into_response()
    }
}

impl From<tessera_db::DbError> for ApiError {
    fn from(e: tessera_db::DbError) -> Self {
        if e.is_overload() {
            tracing::warn!(error = %e, "index query refused under load");
            return Self(StatusCode::SERVICE_UNAVAILABLE, "the index is busy; try again".into());
        }
        tracing::error!(error = %e, "index query failed");
        Self(StatusCode::INTERNAL_SERVER_ERROR, "internal error; see the indexer log".into())
    }
}

fn block(s: &AppState) -> u64 {
    s.progress.borrow().indexed
}

impl From<crate::params::ParamError> for ApiError {
    fn from(e: crate::params::ParamError) -> Self {
        bad(e.0)
    }
}

/// A 400 saying `message`.
fn bad(message: String) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, message)
}

/// A page size within 1..=500 (not quietly clamped).
fn check_limit(limit: Option<i64>) -> Result<(), ApiError> {
    if let Some(l) = limit {
        params::page_size("limit", l, 500)?;
    }
    Ok(())
}

/// The task list's query parameters as the document names them; a query
/// naming anything else is refused (`deny_unknown_fields`), so a misspelt
/// filter is an error, not a list of every task.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskParams {
    /// Status name (`Paid`, `Disputed`, …).
    status: Option<String>,
    /// Executor address.
    executor: Option<String>,
    /// Client address.
    client: Option<String>,
    /// Funder address.
    funder: Option<String>,
    /// Plan id.
    plan: Option<String>,
    /// Parent task id (decimal).
    parent: Option<String>,
    /// Capability name the task was created for.
    capability: Option<String>,
    /// Created at or after this chain time (unix seconds).
    since: Option<i64>,
    /// Created before this chain time (unix seconds).
    until: Option<i64>,
    /// Changed (last event folded) at or after this block.
    changed_since_block: Option<i64>,
    /// Ever disputed (`true`) or never (`false`).
    disputed: Option<bool>,
    /// Approved with a rating below this (percent).
    rating_below: Option<i64>,
    /// Continue after this task id (from the previous page's `next`).
    cursor: Option<String>,
    /// Page size (default 50, at most 500).
    limit: Option<i64>,
}

impl TaskParams {
    /// The store's query of these parameters, checked as documented: an
    /// empty `cursor` is the first page, a status is one the contract has,
    /// addresses, task and plan ids and capability names are spelled out,
    /// times and blocks are not negative, and `limit` is within 1..=500
    /// (not quietly clamped).
    fn query(self) -> Result<TaskQuery, ApiError> {
        let after = self.cursor.filter(|c| !c.is_empty());
        if let Some(c) = &after {
            params::task_id(c)?;
        }
        if let Some(p) = &self.parent {
            params::task_id(p)?;
        }
        if let Some(c) = &self.capability {
            params::capability(c)?;
        }
        params::non_negative("since", self.since)?;
        params::non_negative("until", self.until)?;
        params::non_negative("changed_since_block", self.changed_since_block)?;
        params::non_negative("rating_below", self.rating_below)?;
        check_limit(self.limit)?;
        let address = |what, a: Option<String>| a.map(|a| params::address(what, &a)).transpose();
        Ok(TaskQuery {
            status: params::statuses(self.status.into_iter().collect())?,
            executor: address("executor", self.executor)?,
            client: address("client", self.client)?,
            funder: address("funder", self.funder)?,
            plan: self.plan.as_deref().map(params::plan_id).transpose()?,
            parent: self.parent,
            capability: self.capability,
            created_at_from: self.since,
            // `until` is exclusive; the query's bound is inclusive.
            created_at_to: self.until.map(|u| u - 1),
            changed_since_block: self.changed_since_block,
            disputed: self.disputed,
            rating_below: self.rating_below,
            after,
            limit: self.limit.unwrap_or(50),
            ..TaskQuery::default()
        })
    }
}

/// The dispute list's filters checked as documented.
fn check_dispute_filter(f: DisputeFilter) -> Result<DisputeFilter, ApiError> {
    const STATES: [&str; 4] =
        ["awaiting_ruling", "appealable", "awaiting_appeal_ruling", "settled"];
    const VERDICTS: [&str; 3] = ["worker", "client", "split"];
    if let Some(st) = &f.state
        && !STATES.contains(&st.as_str())
    {
        return Err(bad(format!("state {st:?} is not one of {}", STATES.join(", "))));
    }
    if let Some(v) = &f.verdict
        && !VERDICTS.contains(&v.as_str())
    {
        return Err(bad(format!("verdict {v:?} is not one of {}", VERDICTS.join(", "))));
    }
    let cursor = f.cursor.filter(|c| !c.is_empty());
    if let Some(c) = &cursor {
        let ok = c.split_once(':').is_some_and(|(block, task)| {
            !block.is_empty()
                && block.len() <= 18
                && block.bytes().all(|b| b.is_ascii_digit())
                && params::task_id(task).is_ok()
        });
        if !ok {
            return Err(bad(format!("cursor {c:?} is not a page's `next` (<block>:<task id>)")));
        }
    }
    check_limit(f.limit)?;
    let executor = f.executor.as_deref().map(|a| params::address("executor", a)).transpose()?;
    let client = f.client.as_deref().map(|a| params::address("client", a)).transpose()?;
    let plan = f.plan.as_deref().map(params::plan_id).transpose()?;
    Ok(DisputeFilter { cursor, executor, client, plan, ..f })
}

/// The agent list's filters checked as documented.
fn check_agent_filter(f: AgentFilter) -> Result<AgentFilter, ApiError> {
    if let Some(st) = &f.status {
        crate::derive::AgentStatus::parse(st).map_err(|e| bad(e.to_string()))?;
    }
    if let Some(c) = &f.capability {
        params::capability(c)?;
    }
    check_limit(f.limit)?;
    let cursor = f.cursor.filter(|c| !c.is_empty());
    let cursor = cursor.as_deref().map(|a| params::address("cursor", a)).transpose()?;
    Ok(AgentFilter { cursor, ..f })
}

async fn status(
    State(s): State<AppState>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<Json<Value>, ApiError> {
    let p = *s.progress.borrow();
    Ok(Json(json!({
        "head": p.head,
        "indexed_block": p.indexed,
        "safe_block": p.indexed.min(p.head.saturating_sub(s.reorg_depth)),
        "reorg_depth": s.reorg_depth,
        "events": s.store.event_count().await?,
        "open_streams": s.gate.open(),
        "runtime_tasks": tokio::runtime::Handle::current().metrics().num_alive_tasks(),
        "block": p.indexed,
    })))
}

async fn tasks(
    State(s): State<AppState>,
    Query(f): Query<TaskParams>,
) -> Result<Json<Value>, ApiError> {
    let (tasks, next) = s.store.task_page(&f.query()?).await?;
    Ok(Json(json!({ "block": block(&s), "tasks": tasks, "next": next })))
}

async fn task(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<Json<Value>, ApiError> {
    params::task_id(&id)?;
    let mut t = s
        .store
        .task(&id)
        .await?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no task {id} indexed")))?;
    if let Some(blobs) = s.blobs.clone() {
        // Content-addressed URIs read from the blob store: off the runtime,
        // a blob is a file of up to a megabyte.
        t.task = tokio::task::spawn_blocking(move || {
            let mut task = t.task;
            crate::content::fill(&mut task, Some(blobs.as_ref()));
            task
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "decoding a task's content failed");
            ApiError(StatusCode::INTERNAL_SERVER_ERROR, "internal error".into())
        })?;
    }
    let ancestors = s.store.ancestors(&id).await?;
    let descendants = s.store.descendants(&id).await?;
    Ok(Json(json!({
        "block": block(&s),
        "task": t,
        "ancestors": ancestors.tasks,
        "descendants": descendants.tasks,
        "lineage": {
            "cycle": ancestors.cycle || descendants.cycle,
            "ancestors_truncated": ancestors.truncated,
            "descendants_truncated": descendants.truncated,
        },
    })))
}

/// The query of a plan's tree: the plan's sponsor, when the caller knows
/// it (otherwise the funder of the plan's first task).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TreeQuery {
    sponsor: Option<String>,
}

async fn tree(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<TreeQuery>,
) -> Result<Json<Value>, ApiError> {
    let id = params::plan_id(&id)?;
    let sponsor = q.sponsor.as_deref().map(|a| params::address("sponsor", a)).transpose()?;
    let sponsor = sponsor.map(|a| a.parse().expect("a checked address parses"));
    let tree = s.store.plan_tree_of(&id, sponsor).await?;
    let mut t = serde_json::to_value(&tree).expect("a plan tree serializes");
    t["block"] = json!(block(&s));
    Ok(Json(t))
}

async fn agents(
    State(s): State<AppState>,
    Query(f): Query<AgentFilter>,
) -> Result<Json<Value>, ApiError> {
    let f = check_agent_filter(f)?;
    let (agents, next) = s.store.agents_matching(&f).await?;
    Ok(Json(json!({ "block": block(&s), "agents": agents, "next": next })))
}

async fn agent(
    State(s): State<AppState>,
    Path(address): Path<String>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<Json<Value>, ApiError> {
    params::address("agent", &address)?;
    let a = s
        .store
        .agent(&address)
        .await?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no agent {address}")))?;
    Ok(Json(json!({ "block": block(&s), "agent": a })))
}

/// The live capability catalogue: `{"block", "entries"}` (see
/// [`crate::store::catalogue`]).
async fn capabilities(
    State(s): State<AppState>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<Json<Value>, ApiError> {
    let catalogue = s.store.catalogue().await?;
    Ok(Json(json!({ "block": block(&s), "entries": catalogue.entries })))
}

async fn disputes(
    State(s): State<AppState>,
    Query(f): Query<DisputeFilter>,
) -> Result<Json<Value>, ApiError> {
    let f = check_dispute_filter(f)?;
    let (disputes, next) = s.store.disputes_matching(&f).await?;
    Ok(Json(json!({ "block": block(&s), "disputes": disputes, "next": next })))
}

async fn reorgs(
    State(s): State<AppState>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({ "block": block(&s), "reorgs": s.store.reorgs().await? })))
}

async fn openapi(Query(NoParams {}): Query<NoParams>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

/// Changes to a plan's tasks, live: one event per rebuilt task (with its new
/// status) and one per reorganisation.
async fn plan_events(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<Response, ApiError> {
    let plan = params::plan_id(&id)?;
    let mut updates = s.updates.subscribe();
    let store = s.store;
    Ok(s.gate.stream(move |tx| async move {
        loop {
            let update = match updates.recv().await {
                Ok(u) => u,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if let Some(r) = &update.reorg {
                let ev = Event::default()
                    .event("reorg")
                    .data(serde_json::to_string(r).unwrap_or_default());
                if tx.send(ev).await.is_err() {
                    return;
                }
            }
            for (task, task_plan) in &update.tasks {
                if task_plan.to_lowercase() != plan {
                    continue;
                }
                let Ok(Some(t)) = store.task(task).await else { continue };
                let body = json!({ "block": update.block, "task_id": task, "status": t.task.status, "task": t });
                if tx.send(Event::default().event("task").data(body.to_string())).await.is_err() {
                    return;
                }
            }
        }
    }))
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod filter_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_documents_every_route() {
        let doc: Value = serde_json::from_str(OPENAPI).unwrap();
        let mut documented: Vec<(String, String)> = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                documented.push((method.clone(), path.clone()));
            }
        }
        let mut routes: Vec<(String, String)> = ROUTES
            .iter()
            .chain(crate::webhooks::routes::ROUTES)
            .map(|(m, p)| ((*m).into(), (*p).into()))
            .collect();
        documented.sort();
        routes.sort();
        assert_eq!(documented, routes);
    }

    /// docs/indexer.md has a section per route, each with a curl example
    /// of that route.
    #[test]
    fn the_docs_list_every_route_with_a_curl_example() {
        let doc = include_str!("../../docs/indexer.md");
        for (method, path) in ROUTES.iter().chain(crate::webhooks::routes::ROUTES) {
            let heading = format!("### `{} {path}`", method.to_uppercase());
            let Some(at) = doc.find(&heading) else {
                panic!("docs/indexer.md has no section {heading}")
            };
            let section = &doc[at + heading.len()..];
            let section = &section[..section.find("\n#").unwrap_or(section.len())];
            let stem = path.split('{').next().unwrap_or(path);
            assert!(
                section.lines().any(|l| l.starts_with("curl ") && l.contains(stem)),
                "the section {heading} has no curl example of {path}"
            );
        }
    }

    /// The router over an empty in-memory index.
    async fn app() -> Router {
        let store = IndexStore::connect("sqlite::memory:").await.expect("in-memory index");
        let (_, progress) = watch::channel(Progress::default());
        let gate = StreamGate::new(&tessera_http::limits::HttpLimits::default());
        router(store, progress, broadcast::channel(16).0, 12, gate)
    }

    async fn call(uri: &str, method: &str) -> (StatusCode, Option<String>, Value) {
        use tower::ServiceExt;
        let req = axum::http::Request::builder().method(method).uri(uri);
        let resp = app().await.oneshot(req.body(axum::body::Body::empty()).unwrap()).await.unwrap();
        let status = resp.status();
        let allow = resp.headers().get(header::ALLOW).map(|v| v.to_str().unwrap().to_owned());
        let ct = resp.headers().get(header::CONTENT_TYPE).cloned();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        if !status.is_success() {
            assert_eq!(ct.unwrap(), "application/json", "{method} {uri}");
        }
        (status, allow, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    #[tokio::test]
    async fn the_catalogue_answers_with_its_block() {
        let (status, _, body) = call("/api/capabilities", "GET").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["block"], 0);
        let names: Vec<&str> =
            body["entries"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
        assert_eq!(names.len(), tessera_bindings::describe::BUILTIN.len(), "{body}");
        assert!(names.contains(&"sentiment-classify"), "{body}");
        assert_eq!(body["entries"][0]["offered_by"], 0);
    }

    #[tokio::test]
    async fn rejections_are_json_with_the_documented_status() {
        let plan = format!("0x{}", "ab".repeat(32));
        let bad = StatusCode::BAD_REQUEST;
        for (uri, status) in [
            ("/api/tasks?limit=ten".to_owned(), bad),
            ("/api/tasks?limit=0".to_owned(), bad),
            ("/api/tasks?limit=501".to_owned(), bad),
            ("/api/tasks?status=Lost".to_owned(), bad),
            ("/api/tasks?executor=0x12".to_owned(), bad),
            ("/api/tasks?plan=ab".to_owned(), bad),
            ("/api/tasks?cursor=x".to_owned(), bad),
            (format!("/api/tasks/{}", "1".repeat(79)), bad),
            ("/api/tasks/abc".to_owned(), bad),
            (format!("/api/plans/{}/tree", "ab".repeat(32)), bad),
            (format!("/api/plans/{plan}/tree?sponsor=0x12"), bad),
            (format!("/api/plans/{plan}/tree?sponsor=0x{}", "1".repeat(40)), StatusCode::OK),
            ("/api/agents/0x1234".to_owned(), bad),
            ("/api/tasks/7".to_owned(), StatusCode::NOT_FOUND),
            ("/api/nowhere".to_owned(), StatusCode::NOT_FOUND),
            ("/api/tasks?cursor=&limit=500&status=Paid".to_owned(), StatusCode::OK),
            (format!("/api/tasks?plan={plan}&cursor=12"), StatusCode::OK),
        ] {
            let (got, _, body) = call(&uri, "GET").await;
            assert_eq!(got, status, "GET {uri}: {body}");
            if !status.is_success() {
                assert!(body["error"].is_string(), "GET {uri}: {body}");
            }
        }
        let (got, allow, body) = call("/api/tasks", "POST").await;
        assert_eq!(got, StatusCode::METHOD_NOT_ALLOWED, "{body}");
        assert!(body["error"].is_string(), "{body}");
        assert!(allow.is_some_and(|a| a.contains("GET")));
    }

    /// A parameter a route does not take is refused, not ignored: a
    /// misspelt or unsupported filter would otherwise answer every row.
    /// So is one given twice, and every malformed filter value.
    #[tokio::test]
    async fn unknown_and_malformed_parameters_are_400() {
        let plan = format!("0x{}", "ab".repeat(32));
        let agent = format!("0x{}", "12".repeat(20));
        let unknown = [
            "/api/tasks?capabilty=haiku-write".to_owned(),
            "/api/tasks?status=Paid&color=red".to_owned(),
            "/api/tasks?sponsor=0x0000000000000000000000000000000000000001".to_owned(),
            "/api/status?verbose=1".to_owned(),
            "/api/tasks/7?expand=all".to_owned(),
            format!("/api/plans/{plan}/tree?depth=2"),
            format!("/api/plans/{plan}/events?since=3"),
            "/api/agents?name=x".to_owned(),
            format!("/api/agents/{agent}?x=1"),
            "/api/capabilities?capability=summarize".to_owned(),
            "/api/disputes?status=Paid".to_owned(),
            "/api/reorgs?limit=5".to_owned(),
            "/api/openapi.json?format=yaml".to_owned(),
        ];
        for uri in &unknown {
            let (got, _, body) = call(uri, "GET").await;
            assert_eq!(got, StatusCode::BAD_REQUEST, "GET {uri}: {body}");
            let error = body["error"].as_str().unwrap_or_default();
            assert!(error.contains("unknown field"), "GET {uri}: {error}");
        }
        let (_, _, body) = call("/api/tasks?capabilty=haiku-write", "GET").await;
        let error = body["error"].as_str().unwrap();
        assert!(
            error.starts_with(
                "query: Failed to deserialize query string: capabilty: unknown field \
                 `capabilty`, expected one of `status`, `executor`,"
            ),
            "the error docs/indexer.md shows: {error}"
        );
        let malformed = [
            "/api/tasks?status=Paid&status=Created",
            "/api/tasks?capability=Haiku%20Write",
            "/api/tasks?capability=",
            "/api/tasks?funder=0x12",
            "/api/tasks?client=0xzz00000000000000000000000000000000000000",
            "/api/tasks?parent=-1",
            "/api/tasks?parent=x",
            "/api/tasks?since=-1",
            "/api/tasks?since=yesterday",
            "/api/tasks?until=1.5",
            "/api/tasks?changed_since_block=-3",
            "/api/tasks?disputed=maybe",
            "/api/tasks?rating_below=-1",
            "/api/tasks?rating_below=high",
            "/api/disputes?state=open",
            "/api/disputes?verdict=executor",
            "/api/disputes?appealed=2",
            "/api/disputes?cursor=12",
            "/api/disputes?cursor=x:1",
            "/api/disputes?limit=0",
            "/api/disputes?executor=0x12",
            "/api/disputes?plan=0x12",
            "/api/agents?status=Active",
            "/api/agents?capability=A",
            "/api/agents?cursor=0x12",
            "/api/agents?limit=501",
        ];
        for uri in malformed {
            let (got, _, body) = call(uri, "GET").await;
            assert_eq!(got, StatusCode::BAD_REQUEST, "GET {uri}: {body}");
            assert!(body["error"].is_string(), "GET {uri}: {body}");
        }
        // The same routes answer when their parameters are as documented.
        for uri in [
            format!(
                "/api/tasks?capability=haiku-write&funder={agent}&since=0&until=9&disputed=true"
            ),
            "/api/tasks?parent=0&changed_since_block=0&cursor=".to_owned(),
            "/api/tasks?rating_below=100&status=Paid".to_owned(),
            format!("/api/disputes?state=settled&verdict=split&appealed=false&plan={plan}"),
            "/api/disputes?cursor=12:7&limit=500".to_owned(),
            format!("/api/agents?status=active&capability=summarize&cursor={agent}&limit=1"),
            "/api/reorgs".to_owned(),
        ] {
            let (got, _, body) = call(&uri, "GET").await;
            assert_eq!(got, StatusCode::OK, "GET {uri}: {body}");
        }
    }

    /// The query parameters each route takes are those its OpenAPI
    /// operation documents, no more and no fewer: the server's refusal of
    /// an unknown one names those it expects.
    #[tokio::test]
    async fn every_query_parameter_is_documented_and_no_other() {
        let doc: Value = serde_json::from_str(OPENAPI).unwrap();
        for (_, path) in ROUTES {
            let op = &doc["paths"][path]["get"];
            let mut documented: Vec<String> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "query")
                .map(|p| p["name"].as_str().unwrap().to_owned())
                .collect();
            let uri = path
                .replace("{id}", &format!("0x{}", "ab".repeat(32)))
                .replace("{address}", &format!("0x{}", "12".repeat(20)));
            let uri = if path.starts_with("/api/tasks/") { "/api/tasks/7".into() } else { uri };
            let (status, _, body) = call(&format!("{uri}?zz_unknown=1"), "GET").await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "GET {uri}: {body}");
            assert_eq!(
                op["responses"]["400"]["$ref"], "#/components/responses/BadRequest",
                "{path}"
            );
            let error = body["error"].as_str().unwrap();
            let expected = error.split("unknown field `zz_unknown`").nth(1).unwrap_or_default();
            let mut taken: Vec<String> =
                expected.split('`').skip(1).step_by(2).map(str::to_owned).collect();
            documented.sort();
            taken.sort();
            assert_eq!(
                taken, documented,
                "GET {path}: the server takes what the document lists ({error})"
            );
        }
    }

    #[tokio::test]
    async fn methods_other_than_get_are_405() {
        let (got, allow, body) = call("/api/tasks", "POST").await;
        assert_eq!(got, StatusCode::METHOD_NOT_ALLOWED, "{body}");
        assert!(body["error"].is_string(), "{body}");
        assert!(allow.is_some_and(|a| a.contains("GET")));
    }
}
