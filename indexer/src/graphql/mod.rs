//! GraphQL over the index (async-graphql): tasks, plans (the lineage tree,
//! nested plans, foreign tasks), agents (record, weight, identity,
//! feedback), the capability catalogue, disputes (verdict, shares,
//! rationale, appeal), reorganisations and status, with filters, cursor
//! pagination and decoded `data:` documents; subscriptions for live changes
//! over server-sent events.
//!
//! Routes (beside the REST API, under the same prefix):
//!
//! - `GET /graphql`: the GraphiQL explorer (or, with a `query` parameter,
//!   that query's answer);
//! - `POST /graphql`: a query (`{"query", "variables", "operationName"}`);
//! - `GET|POST /graphql/stream`: a subscription, as server-sent events
//!   (`next` per answer, `complete` at the end), under the process's cap on
//!   open streams.
//!
//! Every query is bounded before it runs: its depth ([`MAX_DEPTH`]), its
//! complexity ([`MAX_COMPLEXITY`]: a list counts its page size times its
//! items), its page sizes ([`MAX_PAGE`]), its text ([`MAX_QUERY_BYTES`]),
//! and its time (the API's request timeout). A query past a bound is
//! answered with a GraphQL error naming it, without touching the database.

pub mod types;

#[cfg(test)]
mod tests;

use async_graphql::{
    Context, EmptyMutation, Error, Schema, Subscription,
    futures_util::{Stream, StreamExt, stream},
    http::GraphiQLSource,
};
use axum::{
    Router,
    body::Bytes,
    extract::{OriginalUri, State},
    http::{StatusCode, header},
    middleware,
    response::{Html, IntoResponse, Response, sse::Event},
    routing::get,
};
use tessera_http::limits::{self, StreamGate};
use tokio::sync::{broadcast, watch};
use tokio_stream::wrappers::BroadcastStream;

use crate::{
    ingest::{Progress, Update},
    store::IndexStore,
};

pub use types::Query;
use types::{Reorg, Task};

/// Deepest a query nests its selections.
pub const MAX_DEPTH: usize = 12;

/// Most complexity a query may add up to: a field counts 1, a list its page
/// size times what each item selects, a field that reads the database more.
pub const MAX_COMPLEXITY: usize = 20_000;

/// Largest page a list answers (`first`).
pub const MAX_PAGE: i32 = 500;

/// Page size when a query names none.
pub const DEFAULT_PAGE: i32 = 50;

/// Longest query text (with its variables) taken.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// The index's schema.
pub type IndexSchema = Schema<Query, EmptyMutation, SubscriptionRoot>;

/// What every resolver reads: the store, where the index stands, and the
/// live updates.
#[derive(Clone)]
pub(crate) struct Index {
    pub(crate) store: IndexStore,
    pub(crate) progress: watch::Receiver<Progress>,
    pub(crate) updates: broadcast::Sender<Update>,
    pub(crate) reorg_depth: u64,
}

/// The schema over `store`, reporting `progress` and streaming `updates`,
/// with its bounds set.
pub fn schema(
    store: IndexStore,
    progress: watch::Receiver<Progress>,
    updates: broadcast::Sender<Update>,
    reorg_depth: u64,
) -> IndexSchema {
    Schema::build(Query, EmptyMutation, SubscriptionRoot)
        .data(Index { store, progress, updates, reorg_depth })
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .limit_recursive_depth(32)
        .limit_directives(8)
        .finish()
}

#[derive(Clone)]
struct AppState {
    schema: IndexSchema,
    gate: StreamGate,
}

/// The GraphQL routes (see the module docs) over `store`, under the
/// request timeout and the stream cap of `gate`.
pub fn router(
    store: IndexStore,
    progress: watch::Receiver<Progress>,
    updates: broadcast::Sender<Update>,
    reorg_depth: u64,
    gate: StreamGate,
) -> Router {
    let timeout = gate.limits().request_timeout;
    let schema = schema(store, progress, updates, reorg_depth);
    let queries = Router::new()
        .route("/graphql", get(explorer_or_query).post(query))
        .layer(middleware::from_fn_with_state(timeout, limits::request_timeout));
    Router::new()
        .route("/graphql/stream", get(stream_get).post(stream_post))
        .merge(queries)
        // A method the route does not take: JSON 405, as the API's routes.
        .method_not_allowed_fallback(tessera_http::method_not_allowed)
        .with_state(AppState { schema, gate })
}

/// A refusal before the query runs: `400` with the error twice, as the
/// API's other rejections (`error`) and as GraphQL clients read it
/// (`errors`).
fn refused(message: impl Into<String>) -> Response {
    let message = message.into();
    (
        StatusCode::BAD_REQUEST,
        axum::Json(serde_json::json!({ "error": message, "errors": [{ "message": message }] })),
    )
        .into_response()
}

/// A request from a JSON body, size-checked; why not, when not.
fn request_of(body: &[u8]) -> Result<async_graphql::Request, String> {
    if body.len() > MAX_QUERY_BYTES {
        return Err(format!(
            "the request is {} bytes, more than the {MAX_QUERY_BYTES} a query may have",
            body.len()
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| format!("the body is not a GraphQL request ({{\"query\": …}}): {e}"))
}

/// A request from a query string, size-checked; why not, when not.
fn request_of_query(query: &str) -> Result<async_graphql::Request, String> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(format!(
            "the query string is {} bytes, more than the {MAX_QUERY_BYTES} a query may have",
            query.len()
        ));
    }
    async_graphql::http::parse_query_string(query)
        .map_err(|e| format!("the query string is not a GraphQL request: {e}"))
}

/// `response` with the bounds named in the errors of a query past them
/// (the library says only that it is too complex, or too deep).
fn explained(mut response: async_graphql::Response) -> async_graphql::Response {
    for e in &mut response.errors {
        if e.message == "Query is too complex." {
            e.message = format!(
                "Query is too complex: more than {MAX_COMPLEXITY} (a field counts 1, a list its \
                 page size times its items); ask for smaller pages or fewer fields"
            );
        } else if e.message == "Query is nested too deep." {
            e.message = format!("Query is nested too deep: more than {MAX_DEPTH} levels");
        }
    }
    response
}

/// A query's answer: `200` with `data` and, when any, `errors`.
async fn answer(schema: &IndexSchema, request: async_graphql::Request) -> Response {
    let response = explained(schema.execute(request).await);
    axum::Json(response).into_response()
}

async fn query(State(s): State<AppState>, body: Bytes) -> Response {
    match request_of(&body) {
        Ok(request) => answer(&s.schema, request).await,
        Err(message) => refused(message),
    }
}

/// The explorer, pointed at this very path (so it works under any prefix
/// the router is nested at), or the answer to the `query` parameter.
async fn explorer_or_query(State(s): State<AppState>, OriginalUri(uri): OriginalUri) -> Response {
    if let Some(q) = uri.query().filter(|q| q.split('&').any(|p| p.starts_with("query="))) {
        return match request_of_query(q) {
            Ok(request) => answer(&s.schema, request).await,
            Err(message) => refused(message),
        };
    }
    let endpoint = uri.path().to_owned();
    let html = GraphiQLSource::build().endpoint(&endpoint).title("Tessera index").finish();
    ([(header::CACHE_CONTROL, "no-store")], Html(html)).into_response()
}

async fn stream_get(State(s): State<AppState>, OriginalUri(uri): OriginalUri) -> Response {
    match request_of_query(uri.query().unwrap_or_default()) {
        Ok(request) => subscribe(&s, request),
        Err(message) => refused(message),
    }
}

async fn stream_post(State(s): State<AppState>, body: Bytes) -> Response {
    match request_of(&body) {
        Ok(request) => subscribe(&s, request),
        Err(message) => refused(message),
    }
}

/// A subscription (or any operation) as server-sent events: `next` with
/// each answer, `complete` when its stream ends.
fn subscribe(s: &AppState, request: async_graphql::Request) -> Response {
    let schema = s.schema.clone();
    s.gate.stream(move |tx| async move {
        let mut answers = schema.execute_stream(request);
        while let Some(answer) = answers.next().await {
            let answer = explained(answer);
            let data = serde_json::to_string(&answer).unwrap_or_default();
            if tx.send(Event::default().event("next").data(data)).await.is_err() {
                return;
            }
        }
        let _ = tx.send(Event::default().event("complete").data("")).await;
    })
}

/// The index's error as a GraphQL error: busy, or internal (logged).
pub(crate) fn db_error(e: tessera_db::DbError) -> Error {
    if e.is_overload() {
        tracing::warn!(error = %e, "index query refused under load");
        return Error::new("the index is busy; try again");
    }
    tracing::error!(error = %e, "index query failed");
    Error::new("internal error; see the indexer log")
}

/// A change to a task, live.
#[derive(Debug, Clone)]
pub struct TaskUpdate {
    block: u64,
    task: Task,
}

#[async_graphql::Object]
impl TaskUpdate {
    /// The highest block indexed with this change.
    async fn block(&self) -> u64 {
        self.block
    }

    /// The task as it now stands.
    async fn task(&self) -> &Task {
        &self.task
    }
}

/// The subscriptions.
#[derive(Debug)]
pub struct SubscriptionRoot;

#[Subscription]
impl SubscriptionRoot {
    /// Tasks as they change (created, moved on, or rebuilt after a
    /// reorganisation), filtered by plan, status and executor.
    async fn task_updates(
        &self,
        ctx: &Context<'_>,
        plan: Option<String>,
        status: Option<Vec<String>>,
        executor: Option<String>,
    ) -> async_graphql::Result<impl Stream<Item = TaskUpdate> + use<>> {
        let index = ctx.data::<Index>()?.clone();
        let plan = plan.as_deref().map(crate::params::plan_id).transpose()?;
        let status = crate::params::statuses(status.unwrap_or_default())?;
        // Checksummed, the form the index stores.
        let executor = executor.map(|a| crate::params::address("executor", &a)).transpose()?;
        let store = index.store.clone();
        let updates = BroadcastStream::new(index.updates.subscribe())
            .filter_map(|u| async move { u.ok() })
            .flat_map(move |u| {
                let block = u.block;
                let plan = plan.clone();
                stream::iter(u.tasks.into_iter().filter_map(move |(task, task_plan)| {
                    plan.as_ref()
                        .is_none_or(|p| task_plan.eq_ignore_ascii_case(p))
                        .then_some((block, task))
                }))
            })
            .filter_map(move |(block, id)| {
                let store = store.clone();
                let status = status.clone();
                let executor = executor.clone();
                async move {
                    let t = store.task(&id).await.ok().flatten()?.task;
                    if !status.is_empty() && !status.contains(&t.status) {
                        return None;
                    }
                    if executor.as_ref().is_some_and(|e| *e != t.executor) {
                        return None;
                    }
                    Some(TaskUpdate { block, task: Task(t) })
                }
            });
        Ok(updates)
    }

    /// Reorganisations as they are rolled back.
    async fn reorgs(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<impl Stream<Item = Reorg> + use<>> {
        let index = ctx.data::<Index>()?;
        Ok(BroadcastStream::new(index.updates.subscribe())
            .filter_map(|u| async move { u.ok().and_then(|u| u.reorg).map(Reorg) }))
    }
}
