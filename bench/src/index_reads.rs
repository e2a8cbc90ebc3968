//! What `make bench-indexer` reads back from the big index: GraphQL queries
//! timed through real HTTP POSTs to `/graphql` (a plan's tree, an agent's
//! page, a filtered task list and its next page), and a webhook receiver in
//! this process that notes when each delivery arrives.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use alloy::primitives::{Address, keccak256};
use axum::{Router, body::Bytes, extract::State, http::StatusCode, routing};
use eyre::{Result, bail, eyre};
use serde::Serialize;
use serde_json::{Value, json};

use crate::percentile;

/// Requests per query before the timed ones (excluded from the figures).
pub const WARM_UP: usize = 30;

/// Timed requests per query.
pub const SAMPLES: usize = 300;

/// The goal every query's p99 is held to, ms.
pub const QUERY_GOAL_P99_MS: f64 = 20.0;

/// One query's latencies over its timed requests.
#[derive(Debug, Clone, Serialize)]
pub struct QueryRow {
    /// What was asked.
    pub query: String,
    /// Timed requests.
    pub samples: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

fn row(query: &str, mut ms: Vec<f64>) -> QueryRow {
    ms.sort_by(f64::total_cmp);
    QueryRow {
        query: query.to_owned(),
        samples: ms.len(),
        p50_ms: percentile(&ms, 0.5),
        p99_ms: percentile(&ms, 0.99),
    }
}

/// POSTs `query` with `variables` to `{api}/graphql` and returns the
/// answer's `data` with the time from sending to the whole body read, ms.
/// An answer with errors, or not 200, fails the bench.
async fn graphql(
    http: &reqwest::Client,
    api: &str,
    query: &str,
    variables: Value,
) -> Result<(Value, f64)> {
    let body = json!({ "query": query, "variables": variables }).to_string();
    let t = Instant::now();
    let r = http
        .post(format!("{api}/graphql"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await?;
    let status = r.status();
    let bytes = r.bytes().await?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let v: Value = serde_json::from_slice(&bytes)?;
    if !status.is_success() || v.get("errors").is_some_and(|e| !e.is_null()) {
        bail!("GraphQL answered {status}: {}", String::from_utf8_lossy(&bytes));
    }
    Ok((v["data"].clone(), ms))
}

/// A plan's tree: the plan, its cost, its roots' tasks and their children.
const PLAN_TREE: &str = "query($id: String!) { plan(id: $id) { id sponsor cost truncated \
    roots { depth subtreeCost task { id status executor amount capability createdAt } \
    children { task { id status } } } } }";

/// An agent's page: its record, weight, offers and its first page of tasks.
const AGENT_PAGE: &str = "query($a: String!) { agent(address: $a) { address status name \
    offers { capability price } \
    record { tasks completed disputed refunded expired declined earnings \
             medianAcceptSecs medianCompletionSecs successRate lastActiveAt } \
    weight { completed failed settled funders } \
    tasks(first: 20) { nodes { id status amount capability createdAt } \
                       pageInfo { hasNextPage endCursor } } } }";

/// A filtered task list, one page of 50 (after a cursor when given).
const TASK_LIST: &str = "query($status: [String!], $executor: String, $capability: String, \
    $after: String) { tasks(filter: { status: $status, executor: $executor, \
    capability: $capability }, first: 50, after: $after) { \
    nodes { id status executor amount capability planId createdAt } \
    pageInfo { hasNextPage endCursor } } }";

/// The plan id of the generator's plan `k` (`bench-plan-{k}`).
pub fn bench_plan(k: usize) -> String {
    keccak256(format!("bench-plan-{k}")).to_string()
}

/// Times the three queries against the index at `api`, holding `plans`
/// plans of the generator's (ten tasks each): `WARM_UP` requests each, then
/// `SAMPLES` timed. Every answer is checked (a plan's ten tasks, the agent's
/// page of tasks, full task pages and a second page after the first's
/// cursor). The executor, its tasks' status and capability are taken from
/// the API's own answers, as a client would.
pub async fn query_rows(http: &reqwest::Client, api: &str, plans: usize) -> Result<Vec<QueryRow>> {
    if plans == 0 {
        bail!("no plans to query");
    }
    // (a) plan trees, walking the plans in a stride so pages are cold-ish.
    let mut plan_ms = Vec::with_capacity(SAMPLES);
    let mut sample = None;
    for i in 0..WARM_UP + SAMPLES {
        let k = (i * 7_919) % plans;
        let (data, ms) = graphql(http, api, PLAN_TREE, json!({ "id": bench_plan(k) })).await?;
        let roots = data["plan"]["roots"].as_array().map_or(0, Vec::len);
        if roots != 10 {
            bail!("plan bench-plan-{k} answered {roots} roots, not 10: {data}");
        }
        if i >= WARM_UP {
            plan_ms.push(ms);
        }
        sample.get_or_insert_with(|| data["plan"]["roots"][0]["task"].clone());
    }
    let task = sample.ok_or_else(|| eyre!("no plan answered"))?;
    let field = |name: &str| {
        task[name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| eyre!("the plan's task has no {name}: {task}"))
    };
    let (executor, status, capability) =
        (field("executor")?, field("status")?, field("capability")?);

    // (b) the executor's page.
    let mut agent_ms = Vec::with_capacity(SAMPLES);
    for i in 0..WARM_UP + SAMPLES {
        let (data, ms) = graphql(http, api, AGENT_PAGE, json!({ "a": executor })).await?;
        let listed = data["agent"]["tasks"]["nodes"].as_array().map_or(0, Vec::len);
        if listed != 20 {
            bail!("agent {executor} listed {listed} tasks, not 20: {data}");
        }
        if i >= WARM_UP {
            agent_ms.push(ms);
        }
    }

    // (c) the filtered list and its second page by the first one's cursor.
    let mut list_ms = Vec::with_capacity(2 * SAMPLES);
    let filter = |after: Option<&str>| json!({ "status": [status], "executor": executor, "capability": capability, "after": after });
    for i in 0..WARM_UP + SAMPLES {
        let (first, a) = graphql(http, api, TASK_LIST, filter(None)).await?;
        let cursor = first["tasks"]["pageInfo"]["endCursor"]
            .as_str()
            .ok_or_else(|| eyre!("the first page has no cursor: {first}"))?
            .to_owned();
        let (second, b) = graphql(http, api, TASK_LIST, filter(Some(&cursor))).await?;
        for page in [&first, &second] {
            let n = page["tasks"]["nodes"].as_array().map_or(0, Vec::len);
            if n != 50 {
                bail!("a page of the filtered list held {n} tasks, not 50: {page}");
            }
        }
        if second["tasks"]["nodes"][0]["id"] == first["tasks"]["nodes"][0]["id"] {
            bail!("the second page repeats the first");
        }
        if i >= WARM_UP {
            list_ms.extend([a, b]);
        }
    }
    Ok(vec![
        row("plan tree (plan, roots' tasks, children)", plan_ms),
        row("agent page (record, weight, 20 tasks)", agent_ms),
        row("task list: status+executor+capability, 50, then page 2", list_ms),
    ])
}

/// First arrivals of each task's `TaskCreated`, by task id.
type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

/// Webhook deliveries arriving at this process: the first arrival of each
/// task's `TaskCreated`, by task id. Its server stops when it is dropped.
#[derive(Debug)]
pub struct Receiver {
    arrivals: Arrivals,
    server: tokio::task::AbortHandle,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn receive(State(arrivals): State<Arrivals>, body: Bytes) -> StatusCode {
    let at = Instant::now();
    let Ok(v) = serde_json::from_slice::<Value>(&body) else { return StatusCode::BAD_REQUEST };
    if v["kind"] == "event"
        && v["event"]["name"] == "TaskCreated"
        && let Some(task) = v["event"]["task_id"].as_str()
    {
        arrivals.lock().expect("not poisoned").entry(task.to_owned()).or_insert(at);
    }
    StatusCode::OK
}

impl Receiver {
    /// Starts the receiver on a port of its own; returns it with the URL
    /// to register.
    pub async fn start() -> Result<(Self, String)> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let arrivals = Arrivals::default();
        let app = Router::new().route("/hook", routing::post(receive)).with_state(arrivals.clone());
        let server = tokio::spawn(async move { axum::serve(listener, app).await }).abort_handle();
        Ok((Self { arrivals, server }, url))
    }

    /// When task `id`'s creation arrived, waiting up to `limit` for it.
    pub async fn arrival(&self, id: &str, limit: Duration) -> Result<Instant> {
        let end = Instant::now() + limit;
        loop {
            if let Some(at) = self.arrivals.lock().expect("not poisoned").get(id) {
                return Ok(*at);
            }
            if Instant::now() > end {
                bail!("no webhook delivery of task {id}'s creation within {limit:?}");
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }
}

/// Registers `url` for the `TaskCreated` events of tasks `executor` is
/// named executor of, with the indexer's bearer `token`.
pub async fn register(
    http: &reqwest::Client,
    api: &str,
    token: &str,
    url: &str,
    executor: Address,
) -> Result<()> {
    let r = http
        .post(format!("{api}/api/webhooks"))
        .bearer_auth(token)
        .json(&json!({
            "url": url,
            "filter": { "agent": executor.to_string(), "kinds": ["TaskCreated"] },
        }))
        .send()
        .await?;
    if r.status() != StatusCode::CREATED {
        let status = r.status();
        bail!("registering the webhook: {status} {}", r.text().await.unwrap_or_default());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_plans_are_the_generators_ids() {
        let id = bench_plan(3);
        assert_eq!(id, keccak256("bench-plan-3").to_string());
        assert_eq!(id.len(), 66);
    }
}
