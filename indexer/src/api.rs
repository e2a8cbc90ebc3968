//! The indexer's read-only HTTP API (axum): tasks with filters and cursor
//! pagination, one task with its history, a plan's lineage tree, agents with
//! their stats, the capability catalogue, disputes, the reorg journal,
//! status, an SSE stream scoped to a plan, and the OpenAPI document. Every
//! answer says which block it reflects. Every rejection, the extractors' and routing's included, is
//! JSON `{"error": …}` (through `tessera_http`); a parameter the document
//! constrains is checked as documented, so the server is never looser than
//! its contract.

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    middleware,
    response::{IntoResponse, Response, sse::Event},
    routing::get,
};
use serde_json::{Value, json};
use tessera_http::limits::{self, StreamGate};
use tessera_http::{Path, Query};
use tokio::sync::{broadcast, watch};

use crate::{
    ingest::{Progress, Update},
    store::{IndexStore, TaskFilter},
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
}

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
    let timeout = gate.limits().request_timeout;
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
        .with_state(AppState { store, progress, updates, reorg_depth, gate })
}

/// The router over a running indexer: its store, progress and updates.
pub fn of(indexer: &crate::Indexer, gate: StreamGate) -> Router {
    router(
        indexer.store().clone(),
        indexer.progress(),
        indexer.updates(),
        indexer.reorg_depth(),
        gate,
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

fn check_task_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 78 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("{id:?} is not a task id (decimal)"),
        ));
    }
    Ok(())
}

/// Whether `s` is `0x` and `digits` hex digits, as the document's patterns
/// say (the hex parsers alone would also take the digits without `0x`).
fn is_prefixed_hex(s: &str, digits: usize) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|hex| hex.len() == digits && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn check_plan_id(id: &str) -> Result<String, ApiError> {
    if !is_prefixed_hex(id, 64) {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("{id:?} is not a plan id (0x + 64 hex)"),
        ));
    }
    id.parse::<alloy::primitives::B256>().map(|b| b.to_string()).map_err(|_| {
        ApiError(StatusCode::BAD_REQUEST, format!("{id:?} is not a plan id (0x + 64 hex)"))
    })
}

fn check_address(what: &str, address: &str) -> Result<(), ApiError> {
    if is_prefixed_hex(address, 40) {
        return Ok(());
    }
    Err(ApiError(
        StatusCode::BAD_REQUEST,
        format!("{what} {address:?} is not an address (0x + 40 hex)"),
    ))
}

/// The task list's filters checked as documented: an empty `cursor` is the
/// first page, a status is one the contract has, addresses and plan ids are
/// spelled out, and `limit` is within 1..=500 (not quietly clamped).
fn check_filter(f: TaskFilter) -> Result<TaskFilter, ApiError> {
    let cursor = f.cursor.filter(|c| !c.is_empty());
    if let Some(c) = &cursor {
        check_task_id(c)?;
    }
    if let Some(st) = &f.status
        && !tessera_bindings::task::Status::ALL.iter().any(|s| s.as_str() == st)
    {
        return Err(ApiError(StatusCode::BAD_REQUEST, format!("{st:?} is not a task status")));
    }
    if let Some(a) = &f.executor {
        check_address("executor", a)?;
    }
    if let Some(a) = &f.client {
        check_address("client", a)?;
    }
    if let Some(l) = f.limit
        && !(1..=500).contains(&l)
    {
        return Err(ApiError(StatusCode::BAD_REQUEST, format!("limit {l} is not within 1..=500")));
    }
    let plan = f.plan.as_deref().map(check_plan_id).transpose()?;
    Ok(TaskFilter { plan, cursor, ..f })
}

async fn status(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
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
    Query(f): Query<TaskFilter>,
) -> Result<Json<Value>, ApiError> {
    let f = check_filter(f)?;
    let (tasks, next) = s.store.tasks(&f).await?;
    Ok(Json(json!({ "block": block(&s), "tasks": tasks, "next": next })))
}

async fn task(State(s): State<AppState>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    check_task_id(&id)?;
    let t = s
        .store
        .task(&id)
        .await?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no task {id} indexed")))?;
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
struct TreeQuery {
    sponsor: Option<String>,
}

async fn tree(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<TreeQuery>,
) -> Result<Json<Value>, ApiError> {
    let id = check_plan_id(&id)?;
    let sponsor =
        match q.sponsor.as_deref() {
            Some(a) => {
                check_address("sponsor", a)?;
                Some(a.parse::<alloy::primitives::Address>().map_err(|e| {
                    ApiError(StatusCode::BAD_REQUEST, format!("sponsor {a:?}: {e}"))
                })?)
            }
            None => None,
        };
    let tree = s.store.plan_tree_of(&id, sponsor).await?;
    let mut t = serde_json::to_value(&tree).expect("a plan tree serializes");
    t["block"] = json!(block(&s));
    Ok(Json(t))
}

async fn agents(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({ "block": block(&s), "agents": s.store.agents().await? })))
}

async fn agent(
    State(s): State<AppState>,
    Path(address): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_address("agent", &address)?;
    let a = s
        .store
        .agent(&address)
        .await?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no agent {address}")))?;
    Ok(Json(json!({ "block": block(&s), "agent": a })))
}

/// The live capability catalogue: `{"block", "entries"}` (see
/// [`crate::store::catalogue`]).
async fn capabilities(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    let catalogue = s.store.catalogue().await?;
    Ok(Json(json!({ "block": block(&s), "entries": catalogue.entries })))
}

async fn disputes(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({ "block": block(&s), "disputes": s.store.disputes().await? })))
}

async fn reorgs(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({ "block": block(&s), "reorgs": s.store.reorgs().await? })))
}

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

/// Changes to a plan's tasks, live: one event per rebuilt task (with its new
/// status) and one per reorganisation.
async fn plan_events(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let plan = check_plan_id(&id)?;
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
}
