//! The indexer's read-only HTTP API (axum): tasks with filters and cursor
//! pagination, one task with its history, a plan's lineage tree, agents with
//! their stats, disputes, the reorg journal, status, an SSE stream scoped to
//! a plan, and the OpenAPI document. Every answer says which block it
//! reflects.

use std::{convert::Infallible, time::Duration};

use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::get,
};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};
use tokio_stream::{Stream, StreamExt, wrappers::ReceiverStream};

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
}

/// The router over `store`, reporting `progress` and streaming `updates`.
pub fn router(
    store: IndexStore,
    progress: watch::Receiver<Progress>,
    updates: broadcast::Sender<Update>,
    reorg_depth: u64,
) -> Router {
    Router::new()
        .route("/api/status", get(status))
        .route("/api/tasks", get(tasks))
        .route("/api/tasks/{id}", get(task))
        .route("/api/plans/{id}/tree", get(tree))
        .route("/api/plans/{id}/events", get(plan_events))
        .route("/api/agents", get(agents))
        .route("/api/agents/{address}", get(agent))
        .route("/api/disputes", get(disputes))
        .route("/api/reorgs", get(reorgs))
        .route("/api/openapi.json", get(openapi))
        .with_state(AppState { store, progress, updates, reorg_depth })
}

/// The router over a running indexer: its store, progress and updates.
pub fn of(indexer: &crate::Indexer) -> Router {
    router(indexer.store().clone(), indexer.progress(), indexer.updates(), indexer.reorg_depth())
}

struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<tessera_orchestrator::store::StoreError> for ApiError {
    fn from(e: tessera_orchestrator::store::StoreError) -> Self {
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

fn check_plan_id(id: &str) -> Result<String, ApiError> {
    id.parse::<alloy::primitives::B256>().map(|b| b.to_string()).map_err(|_| {
        ApiError(StatusCode::BAD_REQUEST, format!("{id:?} is not a plan id (0x + 64 hex)"))
    })
}

async fn status(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    let p = *s.progress.borrow();
    Ok(Json(json!({
        "head": p.head,
        "indexed_block": p.indexed,
        "safe_block": p.indexed.min(p.head.saturating_sub(s.reorg_depth)),
        "reorg_depth": s.reorg_depth,
        "events": s.store.event_count().await?,
        "block": p.indexed,
    })))
}

async fn tasks(
    State(s): State<AppState>,
    Query(f): Query<TaskFilter>,
) -> Result<Json<Value>, ApiError> {
    if let Some(c) = &f.cursor {
        check_task_id(c)?;
    }
    let f = TaskFilter { plan: f.plan.as_deref().map(check_plan_id).transpose()?, ..f };
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
    Ok(Json(
        json!({ "block": block(&s), "task": t, "ancestors": ancestors, "descendants": descendants }),
    ))
}

async fn tree(State(s): State<AppState>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let id = check_plan_id(&id)?;
    let mut t = s.store.plan_tree(&id).await?;
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
    if address.parse::<alloy::primitives::Address>().is_err() {
        return Err(ApiError(StatusCode::BAD_REQUEST, format!("{address:?} is not an address")));
    }
    let a = s
        .store
        .agent(&address)
        .await?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no agent {address}")))?;
    Ok(Json(json!({ "block": block(&s), "agent": a })))
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
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let plan = check_plan_id(&id)?;
    let mut updates = s.updates.subscribe();
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(256);
    let store = s.store;
    tokio::spawn(async move {
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
                let body = json!({ "block": update.block, "task_id": task, "status": t["status"], "task": t });
                if tx.send(Event::default().event("task").data(body.to_string())).await.is_err() {
                    return;
                }
            }
        }
    });
    let stream = ReceiverStream::new(rx).map(Ok);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
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
        let mut routes: Vec<(String, String)> =
            ROUTES.iter().map(|(m, p)| ((*m).into(), (*p).into())).collect();
        documented.sort();
        routes.sort();
        assert_eq!(documented, routes);
    }
}
