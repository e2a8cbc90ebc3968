//! `tessera indexer run` and `tessera tasks tree`.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use alloy::network::EthereumWallet;
use clap::{Args, Subcommand};
use eyre::{Context, Result};
use serde_json::Value;
use tessera_bindings::client::connect;
use tessera_http::tasks::Tasks;
use tessera_indexer::{IndexStore, Indexer, IndexerConfig, api, webhooks};

use crate::work::TaskOutput;

/// `tessera indexer …`.
#[derive(Debug, Subcommand)]
pub(crate) enum IndexerCommand {
    /// Index every escrow and registry event from the deploy block, follow
    /// the head, and serve the read API.
    Run(IndexerRun),
    /// Manage an indexer's webhook subscribers (docs/indexer.md#webhooks).
    #[command(subcommand, after_help = crate::client::EXIT_CODES)]
    Webhooks(WebhooksCommand),
}

/// Where the indexer's API is, and its token.
#[derive(Debug, Args)]
pub(crate) struct WebhookTarget {
    /// Indexer API base URL: a standalone `tessera indexer run`, or
    /// `tessera serve`'s embedded one at http://127.0.0.1:8080/index.
    #[arg(
        long = "indexer-url",
        value_name = "URL",
        env = "TESSERA_INDEXER_URL",
        default_value = "http://127.0.0.1:8090"
    )]
    indexer: String,
    /// The bearer token the indexer was started with (TESSERA_INDEXER_TOKEN;
    /// serve's TESSERA_API_TOKEN for its embedded index).
    #[arg(long, env = "TESSERA_INDEXER_TOKEN", hide_env_values = true)]
    token: String,
}

/// `tessera indexer webhooks …`.
#[derive(Debug, Subcommand)]
pub(crate) enum WebhooksCommand {
    /// Register a subscriber: prints its id and the secret deliveries are
    /// signed with (shown this once).
    Add {
        /// Where deliveries are POSTed (http or https).
        url: String,
        /// Only events of tasks of this plan (0x + 64 hex).
        #[arg(long)]
        plan: Option<String>,
        /// Only this agent's registry events and its tasks' events.
        #[arg(long)]
        agent: Option<String>,
        /// Only events of tasks this address funded.
        #[arg(long)]
        funder: Option<String>,
        /// Only these event names (repeat: --kind TaskCreated --kind TaskSettled).
        #[arg(long = "kind", value_name = "NAME")]
        kinds: Vec<String>,
        #[command(flatten)]
        target: WebhookTarget,
        /// Print the indexer's JSON reply.
        #[arg(long)]
        json: bool,
    },
    /// List the subscribers with their pending and dropped deliveries.
    List {
        #[command(flatten)]
        target: WebhookTarget,
        /// Print the indexer's JSON reply.
        #[arg(long)]
        json: bool,
    },
    /// Remove a subscriber and its pending deliveries.
    Rm {
        /// The subscriber's id (wh_…).
        id: String,
        #[command(flatten)]
        target: WebhookTarget,
    },
}

/// Where the indexer reads and writes.
#[derive(Debug, Args)]
pub(crate) struct IndexerRun {
    #[command(flatten)]
    conn: crate::cli::Connection,
    /// Index store: sqlite://<file> or postgres://… (not the file `tessera
    /// serve`'s embedded indexer uses by default: one writer per file).
    #[arg(
        long,
        env = "TESSERA_INDEXER_DATABASE_URL",
        default_value = "sqlite://.tessera/indexer.db"
    )]
    database_url: String,
    /// Address the API listens on.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: std::net::SocketAddr,
    /// Recent blocks remembered to find a fork point.
    #[arg(long, default_value_t = 64)]
    reorg_depth: u64,
    /// Milliseconds between passes when no block is announced.
    #[arg(long, default_value_t = 1000)]
    poll_ms: u64,
    #[command(flatten)]
    webhooks: WebhookArgs,
    #[command(flatten)]
    limits: crate::cli::Limits,
}

/// How webhook deliveries are made (registration needs a bearer token:
/// TESSERA_INDEXER_TOKEN for `tessera indexer run`, TESSERA_API_TOKEN for
/// `tessera serve`).
#[derive(Debug, Clone, Args)]
pub(crate) struct WebhookArgs {
    /// Pending deliveries a webhook keeps at most; past it the oldest are
    /// dropped (and counted in its `dropped`).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(i64).range(1..=10_000_000))]
    webhook_max_pending: i64,
    /// Milliseconds one delivery request may take.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=300_000))]
    webhook_timeout_ms: u64,
    /// Requests in flight per webhook at most.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    webhook_concurrency: u64,
}

impl WebhookArgs {
    /// The webhook routes over `ix`'s store, guarded by `token` (from the
    /// variable `variable`; none turns them off).
    pub(crate) fn routes(
        &self,
        ix: &Indexer,
        token: Option<String>,
        variable: &'static str,
        timeout: Duration,
    ) -> axum::Router {
        let store = ix.store().clone();
        store.set_max_pending(self.webhook_max_pending);
        let auth = webhooks::routes::WebhookAuth::new(token, variable);
        webhooks::routes::router(store, auth, timeout)
    }

    /// Starts the delivery loop of `ix`'s outbox, critical under `tasks`:
    /// a loop that died would stop every delivery while the service looked
    /// healthy; the outbox is durable, so the restart a critical failure
    /// asks for loses nothing.
    pub(crate) fn spawn(&self, ix: &Indexer, tasks: &mut Tasks) {
        let cfg = webhooks::deliver::DeliveryConfig {
            timeout: Duration::from_millis(self.webhook_timeout_ms),
            per_webhook: usize::try_from(self.webhook_concurrency).unwrap_or(4),
            ..webhooks::deliver::DeliveryConfig::default()
        };
        let stop = tasks.root().clone().cancelled_owned();
        tasks.spawn_critical("webhooks", webhooks::deliver::run(ix.store().clone(), cfg, stop));
    }
}

/// `tessera tasks …`.
#[derive(Debug, Subcommand)]
pub(crate) enum TasksCommand {
    /// A plan's lineage as a tree: id, spec, status, executor, cost; with
    /// --outputs, what each task delivered under it.
    #[command(after_help = crate::client::EXIT_CODES)]
    Tree {
        /// The plan id (0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        plan: String,
        /// Indexer API base URL: `tessera serve`'s embedded one by default,
        /// a standalone `tessera indexer run` at http://127.0.0.1:8090.
        #[arg(
            long = "indexer-url",
            alias = "indexer",
            value_name = "URL",
            env = "TESSERA_INDEXER_URL",
            default_value = "http://127.0.0.1:8080/index"
        )]
        indexer: String,
        /// Print the indexer's JSON reply instead of the tree (with
        /// --outputs, each delivered task's `output` whole in it).
        #[arg(long)]
        json: bool,
        /// Under each task that delivered, its output (cut for a glance,
        /// with the command that prints it whole): as the orchestrator's
        /// run handed it on, or the result read through the orchestrator
        /// at --api-url.
        #[arg(long)]
        outputs: bool,
        #[command(flatten)]
        api: crate::orchestrate::ApiArgs,
    },
}

/// An indexer of the deployment in `conn` into the store at `database_url`.
pub(crate) async fn open(
    conn: &crate::cli::Connection,
    database_url: &str,
    reorg_depth: u64,
) -> Result<Indexer> {
    let deployment = conn.deployment()?;
    let store = crate::starting::until_reachable("opening the index store", || {
        IndexStore::connect(database_url)
    })
    .await
    .wrap_err("opening the index store")?;
    let provider = connect(conn.rpc_url(), EthereumWallet::default());
    conn.check_chain(&provider, &deployment).await?;
    let cfg = IndexerConfig { reorg_depth, ..IndexerConfig::default() };
    let sources = conn.blob_sources();
    Ok(Indexer::new(provider, deployment, store, Some(Arc::clone(sources.local())), cfg)
        .with_blob_sources(sources))
}

pub(crate) async fn run(
    cmd: IndexerCommand,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let a = match cmd {
        IndexerCommand::Run(a) => a,
        IndexerCommand::Webhooks(cmd) => return manage_webhooks(cmd).await,
    };
    // One writer per SQLite file, for as long as this one runs.
    let _lock = tessera_orchestrator::store::lock_sqlite(&a.database_url).wrap_err_with(|| {
        format!("opening the index store {}", crate::orchestrate::redact(&a.database_url))
    })?;
    let listener = tokio::net::TcpListener::bind(a.listen)
        .await
        .wrap_err_with(|| format!("listening on {}", a.listen))?;
    // Until the store and the chain answer (each waited for with backoff),
    // the address serves /healthz and a /readyz that says 503.
    let provider = connect(a.conn.rpc_url(), EthereumWallet::default());
    let (opened, listener) = crate::starting::while_starting(listener, provider, || {
        open(&a.conn, &a.database_url, a.reorg_depth)
    })
    .await?;
    let mut indexer = opened?;
    let gate = a.limits.gate();
    let mut tasks = Tasks::new();
    // /metrics, /healthz and /readyz beside the read API, and the envelopes
    // it fetched at /blobs/{hash}, outside its OpenAPI document.
    let timeout = gate.limits().request_timeout;
    let ops = api::ops(&indexer).ready_when("tasks", tasks.health().check());
    let token = std::env::var("TESSERA_INDEXER_TOKEN").ok();
    let hooks = a.webhooks.routes(&indexer, token, "TESSERA_INDEXER_TOKEN", timeout);
    a.webhooks.spawn(&indexer, &mut tasks);
    let mut app = api::of(&indexer, gate.clone()).merge(hooks).merge(ops.router(timeout));
    if let Some(blobs) = indexer.blobs() {
        app = app.merge(tessera_http::blobs::router(Arc::clone(blobs)).layer(
            axum::middleware::from_fn_with_state(timeout, tessera_http::limits::request_timeout),
        ));
    }
    println!("indexer API on http://{}. Ctrl-C to stop.", listener.local_addr()?);
    let root = tasks.root().clone();
    tasks.spawn_critical("api", async move {
        // Streams end first, then the server drains its requests.
        let stop = async move {
            root.cancelled().await;
            gate.close();
        };
        axum::serve(listener, app).with_graceful_shutdown(stop).await
    });
    let (ws, stop) = (a.conn.ws(), tasks.root().clone().cancelled_owned());
    let poll = Duration::from_millis(a.poll_ms.max(50));
    tasks.spawn_critical("indexer", async move {
        indexer.run(ws.as_deref(), poll, stop).await;
    });
    crate::serving::supervise(tasks, shutdown).await?;
    println!("indexer stopped");
    Ok(())
}

/// One call of the webhook routes: the JSON answer, or the failure as
/// the orchestrator client's exit codes say.
async fn webhook_call(
    target: &WebhookTarget,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Result<Value> {
    let base = target.indexer.trim_end_matches('/');
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}/api/webhooks{path}"))
        .bearer_auth(target.token.trim());
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| crate::client::ApiError::unreachable(base, &e).of("indexer"))?;
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let message = body["error"].as_str().unwrap_or("no details").to_owned();
        return Err(crate::client::ApiError::from_status(status.as_u16(), message)
            .of("indexer")
            .into());
    }
    Ok(body)
}

/// `tessera indexer webhooks add|list|rm`.
async fn manage_webhooks(cmd: WebhooksCommand) -> Result<()> {
    match cmd {
        WebhooksCommand::Add { url, plan, agent, funder, kinds, target, json } => {
            let filter = serde_json::json!({
                "plan": plan, "agent": agent, "funder": funder, "kinds": kinds,
            });
            let filter: serde_json::Map<String, Value> = filter
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let body = serde_json::json!({ "url": url, "filter": filter });
            let made = webhook_call(&target, reqwest::Method::POST, "", Some(body)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&made)?);
            } else {
                println!(
                    "webhook {} → {}",
                    made["id"].as_str().unwrap_or("?"),
                    made["url"].as_str().unwrap_or("?")
                );
                println!("secret (shown this once): {}", made["secret"].as_str().unwrap_or("?"));
            }
        }
        WebhooksCommand::List { target, json } => {
            let listed = webhook_call(&target, reqwest::Method::GET, "", None).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&listed)?);
                return Ok(());
            }
            let hooks = listed["webhooks"].as_array().cloned().unwrap_or_default();
            if hooks.is_empty() {
                println!("no webhooks");
            }
            for h in hooks {
                println!(
                    "{}  {}  filter {}  pending {}  dropped {}",
                    h["id"].as_str().unwrap_or("?"),
                    h["url"].as_str().unwrap_or("?"),
                    h["filter"],
                    h["pending"],
                    h["dropped"]
                );
            }
        }
        WebhooksCommand::Rm { id, target } => {
            webhook_call(&target, reqwest::Method::DELETE, &format!("/{id}"), None).await?;
            println!("webhook {id} removed");
        }
    }
    Ok(())
}

/// Prints a plan's lineage like an epic view, with what each task
/// delivered when asked.
pub(crate) async fn tree(cmd: TasksCommand) -> Result<()> {
    let TasksCommand::Tree { plan, indexer, json, outputs, api } = cmd;
    let base = indexer.trim_end_matches('/');
    let url = format!("{base}/api/plans/{plan}/tree");
    // Failures exit as the orchestrator client's do (see its exit codes).
    let resp = reqwest::get(&url)
        .await
        .map_err(|e| crate::client::ApiError::unreachable(base, &e).of("indexer"))?;
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let message = body["error"].as_str().unwrap_or("no details").to_owned();
        return Err(crate::client::ApiError::from_status(status.as_u16(), message)
            .of("indexer")
            .into());
    }
    let delivered = if outputs {
        let client = crate::client::Client::connect(&api).await?;
        crate::work::tree_outputs(&client, &plan, &body).await?
    } else {
        BTreeMap::new()
    };
    if json {
        print!("{}", tree_json(body, &delivered)?);
    } else {
        print!("{}", tree_text(&body, &delivered));
    }
    Ok(())
}

/// The indexer's tree as pretty JSON, each delivered task's output whole
/// in it as `output`.
fn tree_json(mut body: Value, delivered: &BTreeMap<String, TaskOutput>) -> Result<String> {
    for task in body["tasks"].as_array_mut().into_iter().flatten() {
        let id = task["task_id"].as_str().unwrap_or_default();
        if let Some(d) = delivered.get(id) {
            task["output"] = Value::String(d.text.clone());
        }
    }
    Ok(format!("{}\n", serde_json::to_string_pretty(&body)?))
}

/// The tree as text, each delivered task's output under it as `runs show`
/// cuts it.
fn tree_text(body: &Value, delivered: &BTreeMap<String, TaskOutput>) -> String {
    let notes = |task: &Value| {
        delivered
            .get(task["task_id"].as_str().unwrap_or_default())
            .map(|d| crate::work::glance_lines(&d.text, &d.whole))
            .unwrap_or_default()
    };
    tessera_indexer::render::plan_tree_with(body, &notes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body() -> Value {
        let task = |id: &str, parent: &str, depth: i64| {
            json!({
                "task_id": id, "parent_id": parent, "depth": depth, "status": "Paid",
                "capability": "translate", "executor": "0x01", "amount": "1000000",
                "spec": "s", "pending_parent": false, "inputs": [], "merge": false,
                "result_uri": "data:,x",
            })
        };
        json!({"plan_id": "0xab", "block": 9, "tasks": [task("11", "0", 0), task("12", "11", 1)]})
    }

    /// Each delivered task's output under it, cut as `runs show` cuts it,
    /// with the command that prints it whole; whole in the JSON.
    #[test]
    fn outputs_hang_under_their_tasks_and_are_whole_in_the_json() {
        let long = (0..10).map(|i| format!("ligne {i}")).collect::<Vec<_>>().join("\n");
        let delivered = BTreeMap::from([
            (
                "11".to_owned(),
                TaskOutput { text: long.clone(), whole: "tessera runs output 0xab 0".into() },
            ),
            (
                "12".to_owned(),
                TaskOutput { text: "Bonjour".into(), whole: "tessera runs output 0xab 1".into() },
            ),
        ]);
        let text = tree_text(&body(), &delivered);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 11, "{text}");
        assert_eq!(lines[2], "   │  ligne 0", "{text}");
        assert_eq!(lines[7], "   │  ligne 5", "{text}");
        let more = long.len() - long.lines().take(6).collect::<Vec<_>>().join("\n").len();
        assert_eq!(
            lines[8],
            format!("   │  … ({more} more bytes: tessera runs output 0xab 0)"),
            "{text}"
        );
        assert!(lines[9].starts_with("   └─ 12 "), "{text}");
        assert_eq!(lines[10], "         Bonjour", "{text}");
        assert_eq!(
            tree_text(&body(), &BTreeMap::new()),
            tessera_indexer::render::plan_tree(&body())
        );
        let v: Value = serde_json::from_str(&tree_json(body(), &delivered).unwrap()).unwrap();
        assert_eq!(v["tasks"][0]["output"], long.as_str());
        assert_eq!(v["tasks"][1]["output"], "Bonjour");
        let bare: Value =
            serde_json::from_str(&tree_json(body(), &BTreeMap::new()).unwrap()).unwrap();
        assert_eq!(bare, body());
    }
}
