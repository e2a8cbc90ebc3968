//! `tessera serve`, `tessera plan --file` and `tessera runs show`: the
//! orchestrator service and its command-line client.

use std::{
    collections::BTreeMap,
    io::{BufRead, Write},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use alloy::{network::EthereumWallet, signers::local::PrivateKeySigner};
use clap::Args;
use eyre::{Context, Result, bail, eyre};
use futures_util::StreamExt;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use tessera_bindings::{client::connect, envelope::FsBlobStore, usdc::Usdc};
use tessera_orchestrator::{
    plan::Plan,
    replica::ReplicaConfig,
    runner::{Chain, RunnerConfig},
    service::{Service, ServiceConfig},
    store::{Store, lock_sqlite},
};

use crate::client::Client;

/// Where the orchestrator service runs. The sponsor's key comes from
/// TESSERA_SPONSOR_KEY and the API token from TESSERA_API_TOKEN (environment only).
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    /// Base URL others fetch the sponsor's blobs from, put in large envelopes' URIs (default: http://<listen>/api/blobs; none when listening on 0.0.0.0 or ::).
    #[arg(long, value_name = "URL", value_parser = crate::serving::parse_blob_url)]
    public_url: Option<tessera_bindings::envelope::BlobUrl>,
    #[command(flatten)]
    conn: crate::cli::Connection,
    /// Run store: sqlite://<file> or postgres://…
    #[arg(long, env = "TESSERA_SERVE_DATABASE_URL", default_value = "sqlite://.tessera/runs.db")]
    database_url: String,
    /// Seconds a paused run waits for a recovery decision before it is
    /// cancelled, in chain time (block timestamps).
    #[arg(long, default_value_t = 120)]
    decision_timeout_secs: u64,
    /// Most one plan may spend, in whole USDC (decimals allowed: 0.5).
    #[arg(long, alias = "max-plan-spend", value_name = "USDC", default_value = "50")]
    max_plan_spend_usdc: String,
    /// Milliseconds between looks at the chain's newest block when no
    /// websocket answers (a hosted provider's HTTP URL): about half the
    /// chain's block time keeps up, and costs one request a look.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(50..=60_000))]
    poll_ms: u64,
    /// Levels a proposed plan may nest (the root plan is level 1; at most 8).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=8))]
    max_nesting_depth: u8,
    /// Blocks on top of a payment before a run counts it done, on a chain
    /// that reorganises (0 on one that does not): the runner reads the
    /// newest N+1 blocks again at every head and sends again what a
    /// reorganisation took out.
    #[arg(long, env = "TESSERA_CONFIRMATIONS", default_value_t = 0)]
    confirmations: u64,
    /// ERC-8004 feedback the sponsor gives its executors once their tasks
    /// settle, backed by the settlement (docs/reputation.md): per-task,
    /// per-plan (one per executor when a run is over) or off. Nothing is
    /// given without a reputation registry in the deployment.
    #[arg(long, env = "TESSERA_FEEDBACK", default_value = "per-task")]
    feedback: tessera_orchestrator::feedback::FeedbackMode,
    /// Store of the embedded indexer, which feeds the web UI's history and
    /// agents pages (served under /index/api/…): sqlite://<file> or postgres://…
    #[arg(long, env = "TESSERA_INDEX_DATABASE_URL", default_value = "sqlite://.tessera/index.db")]
    index_database_url: String,
    /// Run without the embedded indexer (the UI then shows no history,
    /// agents or reliability).
    #[arg(long)]
    no_index: bool,
    /// Run as one of several replicas on a PostgreSQL run store: the
    /// replicas with this sponsor key share its lane, one at a time holds
    /// the lane's lease and drives its runs, the others answer the API and
    /// take over when the holder stops. Without it, one process per store
    /// (SQLite files are locked).
    #[arg(long)]
    replica: bool,
    /// With --replica: how long the lane's lease lasts without a renewal;
    /// a standby takes over within this after the holder dies.
    #[arg(long, default_value_t = 5_000, requires = "replica")]
    lease_ttl_ms: u64,
    /// With --replica: how often the holder renews the lease (and a
    /// standby tries to claim it); below --lease-ttl-ms.
    #[arg(long, default_value_t = 1_000, requires = "replica")]
    lease_heartbeat_ms: u64,
    #[command(flatten)]
    limits: crate::cli::Limits,
}

impl ServeArgs {
    /// Replica mode, when asked for (checked: PostgreSQL, a heartbeat
    /// inside the TTL).
    fn replica(&self) -> Result<Option<ReplicaConfig>> {
        if !self.replica {
            return Ok(None);
        }
        let config = ReplicaConfig {
            ttl: Duration::from_millis(self.lease_ttl_ms),
            heartbeat: Duration::from_millis(self.lease_heartbeat_ms),
            ..ReplicaConfig::new(self.database_url.clone())
        };
        config.check().map_err(|e| eyre!("--replica: {e}"))?;
        Ok(Some(config))
    }
}

/// Where the API is, for the client commands.
#[derive(Debug, Args)]
pub(crate) struct ApiArgs {
    /// Orchestrator API base URL.
    #[arg(
        long = "api-url",
        alias = "api",
        value_name = "URL",
        env = "TESSERA_API_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub(crate) api: String,
}

/// `tessera plan "<brief>"` or `tessera plan --file plan.json`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["brief", "file"])))]
pub(crate) struct PlanArgs {
    /// A brief to classify ("translate this to French, then summarize it").
    brief: Option<String>,
    /// A plan as JSON instead of a brief (see `GET /api/openapi.json`, schema Plan).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Material the sub-tasks work on (an article, a document), with a brief.
    #[arg(long, requires = "brief")]
    payload_file: Option<PathBuf>,
    /// Approve low-stakes plans without asking (high-stakes plans still need
    /// --confirm-amount and --confirm-recipients, or typing them).
    #[arg(long)]
    yes: bool,
    /// For a high-stakes plan: the total you agree to pay, in USDC.
    #[arg(long, requires = "confirm_recipients")]
    confirm_amount: Option<String>,
    /// For a high-stakes plan: the recipients you agree to pay, comma-separated.
    #[arg(long, requires = "confirm_amount", value_delimiter = ',')]
    confirm_recipients: Vec<String>,
    /// With a brief: how executors are chosen among the agents offering a
    /// capability: by price, by record, or both weighed together.
    #[arg(long, default_value = "balanced", value_parser = ["cheapest", "reliable", "balanced"])]
    policy: String,
    /// While following the run, ask on standard input what to do when it
    /// waits for someone: a delivered sub-task under manual review
    /// (approve / dispute <reason> / skip) or a checkpoint (approve /
    /// reject [reason] / skip). On by default when standard input is a terminal.
    #[arg(long, overrides_with = "no_interactive")]
    interactive: bool,
    /// Only follow the run; decide with `tessera runs …`.
    #[arg(long, overrides_with = "interactive")]
    no_interactive: bool,
    #[command(flatten)]
    api: ApiArgs,
}

impl PlanArgs {
    /// Whether to ask at the run's pauses: as told, else when standard
    /// input is a terminal.
    fn interactive(&self) -> bool {
        use std::io::IsTerminal;
        !self.no_interactive && (self.interactive || std::io::stdin().is_terminal())
    }
}

fn env_secret(name: &str, what: &str) -> Result<String> {
    let v = std::env::var(name).map_err(|_| eyre!("set {name} to {what}"))?;
    if v.trim().is_empty() {
        bail!("{name} is empty; set it to {what}");
    }
    Ok(v.trim().to_owned())
}

/// Runs the orchestrator until Ctrl-C or SIGTERM: resumes every live run,
/// follows new blocks, serves the API; on the signal, stops serving and
/// drains the run drivers (each finishes its current step) before returning.
pub(crate) async fn serve(
    args: ServeArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let key = env_secret("TESSERA_SPONSOR_KEY", "the sponsor's private key (hex)")?;
    let token = env_secret("TESSERA_API_TOKEN", "the bearer token clients must send")?;
    let signer: PrivateKeySigner =
        key.parse().map_err(|_| eyre!("TESSERA_SPONSOR_KEY is not a hex private key"))?;
    let deployment = args.conn.deployment()?;
    let replica = args.replica()?;
    // One process per SQLite file, for as long as this one runs.
    let _lock = lock_sqlite(&args.database_url)
        .wrap_err_with(|| format!("opening the run store {}", redact(&args.database_url)))?;
    let _index_lock = match args.no_index {
        true => None,
        false => lock_sqlite(&args.index_database_url)
            .wrap_err_with(|| format!("opening the index {}", redact(&args.index_database_url)))?,
    };
    let provider = connect(args.conn.rpc_url(), EthereumWallet::new(signer.clone()));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .wrap_err_with(|| format!("listening on {}", args.listen))?;
    // Until the database and the chain answer, the address serves /healthz
    // and a /readyz that says 503; the service takes the socket over after.
    let opening = format!("opening the run store {}", redact(&args.database_url));
    let reaching = format!("reaching the contracts through {}", args.conn.rpc_url());
    let (started, listener) = crate::starting::while_starting(listener, provider.clone(), || {
        let (opening, reaching) = (&opening, &reaching);
        let url = &args.database_url;
        let (provider, signer, deployment) = (&provider, &signer, &deployment);
        let conn = &args.conn;
        async move {
            let store = crate::starting::until_reachable(opening, || Store::connect(url))
                .await
                .wrap_err(opening.clone())?;
            let chain = crate::starting::until_reachable(reaching, || {
                Chain::new(provider.clone(), signer.clone(), deployment.clone())
            })
            .await
            .wrap_err(reaching.clone())?;
            // The chain answers: it must be the deployment's.
            conn.check_chain(provider, deployment).await?;
            eyre::Ok((store, chain))
        }
    })
    .await?;
    let (store, chain) = started?;
    let max_plan_spend = Usdc::parse(&args.max_plan_spend_usdc)
        .wrap_err_with(|| format!("--max-plan-spend-usdc {:?}", args.max_plan_spend_usdc))?;
    let runner = RunnerConfig {
        decision_timeout: Duration::from_secs(args.decision_timeout_secs),
        max_plan_spend,
        max_nesting_depth: usize::from(args.max_nesting_depth),
        confirmations: args.confirmations,
        feedback: args.feedback,
        poll_interval: Duration::from_millis(args.poll_ms),
        // Confirmation tokens survive restarts: keyed by the service's own secret.
        confirm_secret: alloy::primitives::keccak256(format!("tessera-confirm:{token}")),
        ..RunnerConfig::default()
    };
    let classifier = tessera_classifier::Classifier::from_env();
    let uses_llm = classifier.uses_llm();
    let ws = args.conn.ws();
    let public = crate::serving::public_url(
        args.public_url.clone(),
        listener.local_addr().ok(),
        "/api/blobs",
    );
    let gate = args.limits.gate();
    let mut nested = Vec::new();
    let mut indexer = None;
    if !args.no_index {
        let ix = crate::index::open(&args.conn, &args.index_database_url, 64)
            .await
            .wrap_err_with(|| format!("opening the index {}", redact(&args.index_database_url)))?;
        nested.push(("/index".to_owned(), tessera_indexer::api::of(&ix, gate.clone())));
        indexer = Some(ix);
    }
    let config = ServiceConfig {
        store,
        chain,
        blobs: Arc::new(FsBlobStore::new(&args.conn.blobs)),
        blob_sources: Some(args.conn.blob_sources().with_public_url(public)),
        runner,
        ws_url: ws.clone(),
        listener,
        token,
        classifier,
        gate,
        nested,
    };
    let mut service = match replica {
        Some(replica) => Service::start_replica(config, replica).await?,
        None => Service::start(config).await?,
    };
    if let Some(ix) = &indexer {
        // Executors are chosen on the records the embedded indexer keeps.
        service.orchestrator().with_records(Arc::new(ix.store().clone()));
    }
    println!(
        "orchestrator on http://{} (sponsor {}, {} run(s) resumed). Ctrl-C to stop.",
        service.addr(),
        service.orchestrator().chain().sponsor(),
        service.resumed()
    );
    if let Some(replica) = service.replica() {
        let lane = replica.lane();
        println!(
            "replica {} of lane {}: {} (lease TTL {} ms, heartbeat {} ms)",
            lane.id(),
            lane.name(),
            if lane.holds() { "holding the lane, driving its runs" } else { "standing by" },
            lane.config().ttl.as_millis(),
            lane.config().heartbeat.as_millis()
        );
    }
    println!(
        "classifier: {}",
        if uses_llm {
            "LLM (TESSERA_LLM_API_KEY / OPENAI_API_KEY set)"
        } else {
            "offline planner (no LLM key)"
        }
    );
    println!(
        "web UI on http://{}/ (state changes ask for the TESSERA_API_TOKEN value once){}",
        service.addr(),
        if indexer.is_some() { "; index API under /index/api" } else { "" }
    );
    match indexer.as_mut() {
        // The embedded indexer follows the chain for as long as the API serves.
        Some(ix) => tokio::select! {
            () = shutdown => {}
            () = ix.run(ws.as_deref(), Duration::from_secs(1), std::future::pending()) => {}
        },
        None => shutdown.await,
    }
    println!("stopping: draining the run drivers");
    service.shutdown().await?;
    println!("orchestrator stopped");
    Ok(())
}

/// A database URL without its password.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}://{user}:***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// An amount the API sent (a string or number of base units) with its unit;
/// `?` when it is not one.
fn usdc(amount: &Value) -> String {
    serde_json::from_value::<Usdc>(amount.clone())
        .map_or_else(|_| "? USDC".to_owned(), |u| u.with_unit().to_string())
}

/// The plan card: sub-tasks, executors, costs, dependencies, totals.
pub(crate) fn card(view: &Value) -> String {
    let mut out = String::new();
    let plan = &view["plan"];
    out.push_str(&format!(
        "Plan {}  ({}; review: {})\n",
        view["id"].as_str().unwrap_or("?"),
        view["state"].as_str().unwrap_or("?"),
        plan["review"].as_str().unwrap_or("auto")
    ));
    out.push_str(&format!(
        "  {:>3}  {:<20} {:<44} {:>16}  {}\n",
        "#", "capability", "executor", "cost", "after"
    ));
    let groups: Vec<&Value> = plan["groups"].as_array().into_iter().flatten().collect();
    let path_of = step_paths(plan);
    let mut opened = std::collections::BTreeSet::new();
    for t in plan["subtasks"].as_array().into_iter().flatten() {
        let deps: Vec<String> = t["depends_on"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| path_of(d).unwrap_or_else(|| d.to_string()))
            .collect();
        // A nested plan's leaves follow a header naming it, indented one
        // step per level.
        let path = t["path"].as_str().filter(|_| !groups.is_empty());
        let segments: Vec<&str> = path.map(|p| p.split('.').collect()).unwrap_or_default();
        for level in 1..segments.len() {
            let prefix = segments[..level].join(".");
            if !opened.insert(prefix.clone()) {
                continue;
            }
            let g = groups.iter().find(|g| g["path"] == prefix.as_str());
            out.push_str(&format!(
                "  {}▾ {prefix}  nested plan, share {}: {}\n",
                "  ".repeat(level - 1),
                g.map_or_else(|| "?".to_owned(), |g| usdc(&g["budget"])),
                truncate(g.and_then(|g| g["spec"].as_str()).unwrap_or(""), 70)
            ));
            if let Some(when) = view["conditions"][prefix.as_str()].as_str() {
                out.push_str(&format!(
                    "  {}  runs only if {when}; else every step of it is skipped, unfunded\n",
                    "  ".repeat(level - 1),
                ));
            }
        }
        let pad = "  ".repeat(segments.len().saturating_sub(1));
        let at = path.map(|p| format!("  at {p}")).unwrap_or_default();
        out.push_str(&format!(
            "  {pad}{:>3}  {:<20} {:<44} {:>16}  {}{at}\n",
            t["index"].to_string(),
            t["capability"].as_str().unwrap_or("?"),
            t["executor"].as_str().unwrap_or("(unassigned)"),
            usdc(&t["cost"]),
            if deps.is_empty() { "-".to_owned() } else { deps.join(", ") }
        ));
        out.push_str(&format!("       {pad}{}\n", truncate(t["spec"].as_str().unwrap_or(""), 90)));
        // Why the orchestrator chose this executor, while it still is the one.
        let chosen = plan["choices"].as_array().into_iter().flatten().find(|c| {
            c["index"] == t["index"]
                && c["executor"].as_str().map(str::to_lowercase)
                    == t["executor"].as_str().map(str::to_lowercase)
        });
        if let Some(c) = chosen {
            out.push_str(&format!("       {pad}{}\n", choice_line(c)));
        }
        // A nested plan's conditions read by step path, as the API writes them.
        let when = path.and_then(|p| view["conditions"][p].as_str()).or(t["when"].as_str());
        if let Some(when) = when {
            out.push_str(&format!("       {pad}runs only if {when}; else skipped, unfunded\n"));
        }
        if let Some(r) = recovery_line(&t["recovery"]) {
            out.push_str(&format!("       {pad}recovery: {r}\n"));
        }
    }
    for cp in plan["checkpoints"].as_array().into_iter().flatten() {
        out.push_str(&format!("  {}\n", checkpoint_line(cp, &view["gates"], &path_of)));
    }
    if let Some(r) = recovery_line(&plan["recovery"]) {
        out.push_str(&format!("  recovery: {r}\n"));
    }
    let secs = view["estimated_duration_secs"].as_u64().unwrap_or(0);
    out.push_str(&format!(
        "  total {} of budget {}; at most {}h{:02}m if every sub-task uses its whole deadline\n",
        usdc(&view["total_cost"]),
        usdc(&plan["budget"]),
        secs / 3600,
        secs % 3600 / 60
    ));
    out
}

/// The step path of sub-task `i` in a nested plan (`2`, `1.1`); `None` in
/// a flat plan, where a sub-task goes by its index.
fn step_paths(plan: &Value) -> impl Fn(&Value) -> Option<String> + '_ {
    let nested = plan["groups"].as_array().is_some_and(|g| !g.is_empty());
    move |i: &Value| {
        let task = plan["subtasks"].as_array()?.iter().find(|t| t["index"] == *i)?;
        task["path"].as_str().filter(|_| nested).map(str::to_owned)
    }
}

/// `⏸ checkpoint legal after #0, #1: an approver passes or stops the run;
/// after 1h escalate` (after `2`, `1.1` in a nested plan) and, once
/// reached, where it stands.
fn checkpoint_line(
    cp: &Value,
    gates: &Value,
    path_of: impl Fn(&Value) -> Option<String>,
) -> String {
    let after: Vec<String> = cp["after"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| path_of(i).unwrap_or_else(|| format!("#{i}")))
        .collect();
    let name = cp["name"].as_str().unwrap_or("?");
    let timeout = match cp["timeout_secs"].as_u64() {
        Some(t) if t % 3600 == 0 => format!("{}h", t / 3600),
        Some(t) if t % 60 == 0 => format!("{}m", t / 60),
        Some(t) => format!("{t}s"),
        None => "the decision timeout".to_owned(),
    };
    let mut out = format!(
        "⏸ checkpoint {name} after {}: an approver passes or stops the run; after {timeout} {}",
        after.join(", "),
        cp["on_timeout"].as_str().unwrap_or("escalate")
    );
    let gate = &gates[name];
    if let Some(state) = gate["state"].as_str() {
        out.push_str(&format!(" — {state}"));
        if let Some(by) = gate["by"].as_str() {
            out.push_str(&format!(" by the {by}"));
        }
    }
    out
}

/// A recovery object as `on decline retry(2) · on expiry reassign`,
/// defaults left out; `None` when everything is the default.
fn recovery_line(r: &Value) -> Option<String> {
    let parts: Vec<String> = [
        ("on_decline", "on decline", "pause"),
        ("on_expiry", "on expiry", "pause"),
        ("on_dispute_lost", "on a lost dispute", "fail"),
    ]
    .iter()
    .filter_map(|(key, words, default)| {
        r[key].as_str().filter(|v| v != default).map(|v| format!("{words} {v}"))
    })
    .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// `chosen: 0x14dC…9955 — balanced: 91% reliable (…), 0.42 USDC (…);
/// runner-up 0x2361…1E8f (37%: less reliable: …)`.
fn choice_line(c: &Value) -> String {
    let short = |a: &Value| match a.as_str() {
        Some(a) if a.len() == 42 && a.is_ascii() => format!("{}…{}", &a[..6], &a[38..]),
        Some(a) => a.to_owned(),
        None => "?".to_owned(),
    };
    let mut out =
        format!("chosen: {} — {}", short(&c["executor"]), c["reason"].as_str().unwrap_or("?"));
    if let Some(ru) = c.get("runner_up").filter(|r| r.is_object()) {
        out.push_str(&format!(
            "; runner-up {} ({}%: {})",
            short(&ru["executor"]),
            (ru["score_bps"].as_u64().unwrap_or(0) + 50) / 100,
            ru["reason"].as_str().unwrap_or("?")
        ));
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// `tessera plan`: classify a brief (or read a plan), show the card, take
/// the path its quadrant calls for, run with live progress.
pub(crate) async fn plan(args: PlanArgs) -> Result<()> {
    let client = Client::new(&args.api);
    let view = if let Some(file) = &args.file {
        let text = std::fs::read_to_string(file)
            .wrap_err_with(|| format!("reading {}", file.display()))?;
        let mut body: Value = serde_json::from_str(&text)
            .wrap_err_with(|| format!("{} is not JSON", file.display()))?;
        // A plan file without an id (a template, run again and again) gets
        // a fresh one each time it is proposed.
        if let Some(fields) =
            body.as_object_mut().filter(|o| o.get("id").is_none_or(Value::is_null))
        {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            let label = format!("{} at {now}", file.display());
            fields.insert("id".into(), json!(Plan::id_from_label(&label)));
        }
        let plan = Plan::from_json(&body.to_string())
            .wrap_err_with(|| format!("{} is not a plan", file.display()))?;
        plan.validate_shape().wrap_err("the plan is invalid")?;
        client.call(reqwest::Method::POST, "/api/plans", Some(&body)).await?
    } else {
        let brief = args.brief.clone().unwrap_or_default();
        let payload = match &args.payload_file {
            Some(p) => Some(
                std::fs::read_to_string(p).wrap_err_with(|| format!("reading {}", p.display()))?,
            ),
            None => None,
        };
        let outcome = client
            .call(
                reqwest::Method::POST,
                "/api/classify",
                Some(&json!({"brief": brief, "payload": payload, "policy": args.policy})),
            )
            .await?;
        print!("{}", classification_card(&outcome));
        if let Some(reason) = outcome["refusal"].as_str() {
            bail!("nothing to run: {reason}");
        }
        let view = outcome["run"].clone();
        if outcome["ceremony"] == "direct" && view["state"] == "running" {
            println!("atomic, low stakes: executed directly");
            print!("{}", card(&view));
            let id = view["id"].as_str().unwrap_or_default().to_owned();
            return follow(&client, &id, &view, args.interactive()).await;
        }
        view
    };
    decide_and_follow(&client, view, &args).await
}

/// The classification card: quadrant, confidences, signals, reasoning.
pub(crate) fn classification_card(outcome: &Value) -> String {
    let c = &outcome["classification"];
    let mut out = format!(
        "Classification ({}): {} — decomposability {} ({:.2}), stakes {} ({:.2}); ceremony: {}\n",
        c["engine"].as_str().unwrap_or("?"),
        outcome["quadrant"].as_str().unwrap_or("?"),
        c["decomposability"]["value"].as_str().unwrap_or("?"),
        c["decomposability"]["confidence"].as_f64().unwrap_or(0.0),
        c["stakes"]["value"].as_str().unwrap_or("?"),
        c["stakes"]["confidence"].as_f64().unwrap_or(0.0),
        outcome["ceremony"].as_str().unwrap_or("?"),
    );
    out.push_str(&format!("  reasoning: {}\n", c["reasoning"].as_str().unwrap_or("")));
    for sig in c["signals"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  signal {:<8} {:<24} {}\n",
            sig["kind"].as_str().unwrap_or(""),
            sig["name"].as_str().unwrap_or(""),
            truncate(sig["detail"].as_str().unwrap_or(""), 70)
        ));
    }
    if let Some(u) = outcome["unassigned"].as_array().filter(|u| !u.is_empty()) {
        let list: Vec<String> = u.iter().map(Value::to_string).collect();
        out.push_str(&format!(
            "  no active agent offers sub-task(s) {}: reassign them by hand\n",
            list.join(", ")
        ));
    }
    out
}

/// Shows the card, asks (approve / edit / cancel; a typed confirmation for
/// high stakes), approves, follows.
async fn decide_and_follow(client: &Client, mut view: Value, args: &PlanArgs) -> Result<()> {
    let id = view["id"].as_str().unwrap_or_default().to_owned();
    loop {
        print!("{}", card(&view));
        if args.yes {
            break;
        }
        print!("approve / edit / cancel? [a/e/c] ");
        std::io::stdout().flush()?;
        let answer = read_line()?;
        match answer.as_str() {
            "a" | "approve" => break,
            "c" | "cancel" => {
                client.call(reqwest::Method::POST, &format!("/api/runs/{id}/cancel"), None).await?;
                println!("cancelled; nothing was funded");
                return Ok(());
            }
            "e" | "edit" => {
                println!(
                    "edit: `reassign <index> <address>`, `drop <index>`, `order <i> <j> …`, `review auto|manual`"
                );
                let line = read_line()?;
                match parse_edit(&line) {
                    Ok(edit) => match client
                        .call(reqwest::Method::POST, &format!("/api/runs/{id}/edit"), Some(&edit))
                        .await
                    {
                        Ok(v) => view = v,
                        Err(e) => println!("edit refused: {e}"),
                    },
                    Err(e) => println!("{e}"),
                }
            }
            other => println!("unknown answer {other:?}"),
        }
    }
    let mut body = Value::Null;
    if view["stakes"] == "high" {
        let terms = &view["confirmation"];
        println!(
            "HIGH STAKES: this plan pays {} USDC to {}, within a budget of {} USDC. Confirm \
             by typing the amount and the recipients.",
            terms["amount"].as_str().unwrap_or("?"),
            terms["recipients"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
            terms["budget"].as_str().unwrap_or("?")
        );
        let (amount, recipients) = match (&args.confirm_amount, args.confirm_recipients.is_empty())
        {
            (Some(a), false) => (a.clone(), args.confirm_recipients.clone()),
            _ => {
                print!("total amount (USDC): ");
                std::io::stdout().flush()?;
                let amount = read_line()?;
                print!("recipients (comma-separated): ");
                std::io::stdout().flush()?;
                let recipients = read_line()?
                    .split(',')
                    .map(|r| r.trim().to_owned())
                    .filter(|r| !r.is_empty())
                    .collect();
                (amount, recipients)
            }
        };
        let token = client
            .call(
                reqwest::Method::POST,
                &format!("/api/runs/{id}/confirm"),
                Some(&json!({"amount": amount, "recipients": recipients})),
            )
            .await
            .wrap_err("confirmation refused")?;
        body = json!({"confirmation_token": token["confirmation_token"]});
    }
    let body = (!body.is_null()).then_some(body);
    client.call(reqwest::Method::POST, &format!("/api/runs/{id}/approve"), body.as_ref()).await?;
    follow(client, &id, &view, args.interactive()).await
}

fn read_line() -> Result<String> {
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        bail!("no answer on standard input (use --yes to approve without asking)");
    }
    Ok(line.trim().to_lowercase())
}

fn parse_edit(line: &str) -> Result<Value> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let index = |s: Option<&&str>| -> Result<u32> {
        s.and_then(|s| s.parse().ok()).ok_or_else(|| eyre!("expected a sub-task index"))
    };
    Ok(match words.first().copied() {
        Some("reassign") => {
            json!({"op": "reassign", "index": index(words.get(1))?, "executor": words.get(2).ok_or_else(|| eyre!("expected an address"))?})
        }
        Some("drop") => json!({"op": "drop", "index": index(words.get(1))?}),
        Some("order") => {
            let order: Result<Vec<u32>> = words[1..]
                .iter()
                .map(|w| w.parse().map_err(|_| eyre!("{w} is not an index")))
                .collect();
            json!({"op": "reorder", "order": order?})
        }
        Some("review") => {
            json!({"op": "review", "review": words.get(1).ok_or_else(|| eyre!("auto or manual"))?})
        }
        _ => bail!("unknown edit {line:?}"),
    })
}

/// Shows live progress per sub-task from the SSE stream, then the settlement
/// summary. With `interactive`, asks on standard input what to do when the
/// run waits for a review or at a checkpoint, and queues the answer.
async fn follow(client: &Client, id: &str, view: &Value, mut interactive: bool) -> Result<()> {
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>4} {spinner} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let mut rows: BTreeMap<u64, ProgressBar> = BTreeMap::new();
    for t in view["plan"]["subtasks"].as_array().into_iter().flatten() {
        let bar = bars.add(ProgressBar::new_spinner());
        bar.set_style(style.clone());
        bar.set_prefix(format!("#{}", t["index"]));
        bar.set_message(format!("{} — waiting", t["capability"].as_str().unwrap_or("?")));
        bar.enable_steady_tick(Duration::from_millis(120));
        rows.insert(t["index"].as_u64().unwrap_or_default(), bar);
    }
    let resp = client.http.get(format!("{}/api/runs/{id}/events", client.base)).send().await;
    let resp = resp.map_err(|e| crate::client::ApiError::unreachable(&client.base, &e))?;
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut txs: BTreeMap<u64, Vec<(String, String)>> = BTreeMap::new();
    let mut outcome = Value::Null;
    'read: while let Some(chunk) = stream.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) else { continue };
            let ev: Value = serde_json::from_str(data)?;
            let kind = ev["kind"].as_str().unwrap_or_default();
            if ev["ok"] == Value::Bool(false) {
                bars.println(decision_line(&ev))?;
            }
            if kind == "subtask_declined" {
                bars.println(decline_line(&ev))?;
            }
            if let Some(i) = ev["index"].as_u64()
                && let Some(bar) = rows.get(&i)
            {
                bar.set_message(format!("{kind} (block {})", ev["block"]));
                if let Some(tx) = ev["tx_hash"].as_str() {
                    txs.entry(i).or_default().push((kind.to_owned(), tx.to_owned()));
                }
                if matches!(kind, "subtask_paid" | "subtask_refunded") {
                    bar.finish_with_message(format!("{kind}: {}", usdc(&ev["executor_amount"])));
                }
            }
            if matches!(kind, "plan_completed" | "plan_failed") {
                outcome = ev;
                break 'read;
            }
            if interactive && let Some(pause) = crate::runs::Pause::of(&ev) {
                interactive = ask_and_decide(client, id, &bars, &pause).await?;
            }
        }
    }
    for bar in rows.values() {
        if !bar.is_finished() {
            bar.finish();
        }
    }
    println!("\nSettlement of {id}: {}", outcome["kind"].as_str().unwrap_or("stream ended"));
    if let Some(reason) = outcome["reason"].as_str() {
        println!("  reason: {reason}");
    }
    for (i, list) in &txs {
        for (kind, tx) in list {
            println!("  #{i} {kind:<20} {tx}");
        }
    }
    if outcome["kind"] != "plan_completed" {
        bail!("the plan did not complete");
    }
    Ok(())
}

/// Asks what to do at `pause` (the progress bars hidden meanwhile) and
/// queues the answer; whether to go on asking (not once the input ended).
async fn ask_and_decide(
    client: &Client,
    id: &str,
    bars: &MultiProgress,
    pause: &crate::runs::Pause,
) -> Result<bool> {
    use crate::runs::Answer;
    let pause = match client.call(reqwest::Method::GET, &format!("/api/runs/{id}"), None).await {
        Ok(view) => pause.clone().with_view(&view),
        Err(_) => pause.clone(),
    };
    let pause = &pause;
    let answer = tokio::task::block_in_place(|| {
        bars.suspend(|| {
            crate::runs::ask(pause, &mut std::io::stdin().lock(), &mut std::io::stdout())
        })
    })?;
    match answer {
        Answer::Decide(decision) => {
            let what = decision.describe();
            match decision.send(client, id).await {
                Ok(_) => bars.suspend(|| println!("  {what} queued")),
                Err(e) => bars.suspend(|| println!("  {what} refused: {e}")),
            }
        }
        Answer::Skip => bars.suspend(|| println!("  skipped; decide later with `tessera runs …`")),
        Answer::Closed => return Ok(false),
    }
    Ok(true)
}

/// `tessera runs show <id>`.
pub(crate) async fn show(api: &ApiArgs, id: &str) -> Result<()> {
    let client = Client::new(api);
    let view = client.call(reqwest::Method::GET, &format!("/api/runs/{id}"), None).await?;
    print!("{}", card(&view));
    if let Some(reason) = view["reason"].as_str() {
        println!("  reason: {reason}");
    }
    if let Some(line) = spend_line(&view) {
        println!("{line}");
    }
    for s in view["subtasks"].as_array().into_iter().flatten() {
        println!(
            "  #{} attempt {} {:<10} task {}",
            s["idx"],
            s["attempt"],
            s["phase"].as_str().unwrap_or("?"),
            s["task_id"].as_str().unwrap_or("-")
        );
    }
    for n in view["nested"].as_array().into_iter().flatten() {
        println!("{}", nested_line(n));
    }
    for d in view["declines"].as_array().into_iter().flatten() {
        println!("{}", decline_line(d));
    }
    for d in view["decisions"].as_array().into_iter().flatten() {
        println!("{}", decision_line(d));
    }
    Ok(())
}

/// A sub-task attempt its executor declined on chain (a `subtask_declined`
/// event of the run view's `declines`), with the reason it gave.
fn decline_line(d: &Value) -> String {
    format!(
        "  step {} declined by {} (attempt {}, task {}): {}",
        d["index"],
        d["executor"].as_str().unwrap_or("?"),
        d["attempt"],
        d["task_id"].as_str().unwrap_or("-"),
        d["reason"].as_str().unwrap_or("(no reason read)"),
    )
}

/// What a started run has spent against its budget, from the API's view.
/// One nested plan of a run, as `runs show` lists it.
fn nested_line(n: &Value) -> String {
    format!(
        "  nested {} (level {}) {}: leaves {} cost {} of share {}; plan {}",
        n["path"].as_str().unwrap_or("?"),
        n["depth"],
        n["state"].as_str().unwrap_or("?"),
        n["subtasks"].as_array().map_or(0, Vec::len),
        usdc(&n["cost"]),
        usdc(&n["budget"]),
        n["plan_id"].as_str().unwrap_or("?"),
    )
}

fn spend_line(view: &Value) -> Option<String> {
    let spend = view.get("spend").filter(|s| s["committed"] != "0")?;
    Some(format!(
        "  spent: {} funded, {} paid, {} refunded, of a {} budget",
        usdc(&spend["committed"]),
        usdc(&spend["paid"]),
        usdc(&spend["refunded"]),
        usdc(&view["plan"]["budget"])
    ))
}

/// One decision of a run (from the API's view or a `decision_applied`
/// event): what came of it, and a failure plainly, with the chain's refusal.
fn decision_line(d: &Value) -> String {
    // An event names the decision in `decision` (its `kind` and `seq` are
    // the event's own); the API's row in `kind`.
    let event = d.get("decision").is_some();
    let kind = d["decision"].as_str().or_else(|| d["kind"].as_str()).unwrap_or("?");
    let seq = d["seq"].as_i64().filter(|_| !event).map(|s| format!(" {s}")).unwrap_or_default();
    let index = d["idx"].as_u64().or_else(|| d["index"].as_u64());
    let index = index.map(|i| format!(" #{i}")).unwrap_or_default();
    let what = match d["ok"].as_bool() {
        Some(false) => {
            let error = d["error"].as_str().or_else(|| d["outcome"].as_str()).unwrap_or("failed");
            match d["revert"].as_str() {
                Some(revert) => format!("FAILED: {error} (revert: {revert})"),
                None => format!("FAILED: {error}"),
            }
        }
        Some(true) => d["outcome"].as_str().unwrap_or("done").to_owned(),
        None => "queued".to_owned(),
    };
    format!("  decision{seq} {kind}{index}: {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decline_reads_with_its_executor_and_reason() {
        let d = json!({"kind": "subtask_declined", "index": 1, "attempt": 0, "task_id": "42",
            "executor": "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
            "reason": "capability \"x\" is not offered", "reason_uri": "data:…"});
        assert_eq!(
            decline_line(&d),
            "  step 1 declined by 0x90f79bf6eb2c4f870365e785982e1f101e93b906 (attempt 0, task \
             42): capability \"x\" is not offered"
        );
        assert!(decline_line(&json!({"index": 0})).ends_with("(no reason read)"));
    }

    #[test]
    fn edits_parse() {
        assert_eq!(parse_edit("drop 2").unwrap(), json!({"op": "drop", "index": 2}));
        assert_eq!(parse_edit("order 1 0").unwrap(), json!({"op": "reorder", "order": [1, 0]}));
        assert!(parse_edit("drop x").is_err());
        assert!(parse_edit("fly").is_err());
    }

    #[test]
    fn database_passwords_are_redacted() {
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact("sqlite://.tessera/runs.db"), "sqlite://.tessera/runs.db");
    }

    #[test]
    fn a_nested_plan_card_shows_its_levels() {
        let leaf = |index: u32, path: &str, cap: &str| {
            json!({"index": index, "path": path, "capability": cap, "spec": format!("do {cap}"),
                   "executor": null, "cost": 100_000, "depends_on": []})
        };
        let view = json!({"id": "0xabc", "state": "proposed", "total_cost": "300000",
            "estimated_duration_secs": 3600,
            "plan": {"review": "auto", "budget": 1_000_000,
                "groups": [{"path": "1", "spec": "Digest", "budget": 250_000},
                           {"path": "1.1", "spec": "Judge", "budget": 100_000}],
                "subtasks": [leaf(0, "0", "translate"), leaf(1, "1.0", "summarize"),
                             leaf(2, "1.1.0", "sentiment-classify")]}});
        let text = card(&view);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("    0  translate") && lines[2].ends_with("at 0"), "{text}");
        assert_eq!(lines[4], "  ▾ 1  nested plan, share 0.250000 USDC: Digest");
        assert!(
            lines[5].starts_with("      1  summarize") && lines[5].ends_with("at 1.0"),
            "{text}"
        );
        assert_eq!(lines[7], "    ▾ 1.1  nested plan, share 0.100000 USDC: Judge");
        assert!(lines[8].starts_with("        2  sentiment-classify"), "{text}");
        let flat = json!({"id": "0x1", "plan": {"subtasks": [leaf(0, "0", "translate")]}});
        assert!(!card(&flat).contains("at 0"), "a flat plan reads as before");
        let n = json!({"path": "1.1", "depth": 3, "state": "completed", "subtasks": [2],
                       "cost": "100000", "budget": "100000", "plan_id": "0xdef"});
        assert_eq!(
            nested_line(&n),
            "  nested 1.1 (level 3) completed: leaves 1 cost 0.100000 USDC of share 0.100000 \
             USDC; plan 0xdef"
        );
    }

    #[test]
    fn a_nested_plan_card_names_steps_by_path() {
        // Issue 28's plan: 0 translate; 1 nested {1.0 entities, 1.1
        // sentiment}; 2 sentiment; 3 summarize after 1 and 2 when out[2]'s
        // score is at least -1; a checkpoint after 2; and a nested step with
        // its own condition.
        let leaf = |index: u32, cap: &str, deps: &[u32]| {
            json!({"index": index, "capability": cap, "spec": format!("do {cap}"),
                   "executor": "0x00000000000000000000000000000000000000aa", "cost": 100,
                   "deadline_offset_secs": 3600, "depends_on": deps})
        };
        let mut summarize = leaf(3, "summarize", &[1, 2]);
        summarize["when"] = json!("out[2].score >= -1");
        let file = json!({"version": 1, "id": format!("0x{}", "11".repeat(32)), "budget": 10_000,
            "checkpoints": [{"name": "tone", "after": [2]}],
            "subtasks": [leaf(0, "translate", &[]),
                {"index": 1, "spec": "Digest", "cost": 200, "deadline_offset_secs": 3600,
                 "depends_on": [0], "when": "len(out[0].text) > 0",
                 "plan": {"subtasks": [leaf(0, "entities", &[]), leaf(1, "sentiment", &[])]}},
                leaf(2, "sentiment", &[0]), summarize]});
        let plan = Plan::from_json(&file.to_string()).unwrap();
        let view = json!({"id": "0x1", "state": "proposed", "plan": plan,
            "conditions": tessera_orchestrator::runner::views::conditions_by_path(&plan)});
        let text = card(&view);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[4], "  ▾ 1  nested plan, share 0.000200 USDC: Digest", "{text}");
        assert_eq!(
            lines[5],
            "    runs only if len(out[0].text) > 0; else every step of it is skipped, unfunded",
            "{text}"
        );
        let summarize = lines.iter().position(|l| l.contains("summarize")).unwrap();
        assert!(lines[summarize].ends_with("1.0, 1.1, 2  at 3"), "{text}");
        assert_eq!(
            lines[summarize + 2],
            "       runs only if out[2].score >= -1; else skipped, unfunded",
            "{text}"
        );
        assert!(
            text.contains("⏸ checkpoint tone after 2: an approver passes"),
            "the checkpoint follows root step 2: {text}"
        );
    }

    #[test]
    fn the_card_shows_checkpoints_conditions_and_recovery() {
        let view = json!({"id": "0x1", "state": "paused", "total_cost": "600000",
            "gates": {"tone-check": {"state": "reached", "at": 1}},
            "plan": {"budget": 1_000_000,
                "recovery": {"on_decline": "retry(2)", "on_expiry": "pause", "on_dispute_lost": "fail"},
                "checkpoints": [{"name": "tone-check", "after": [0], "timeout_secs": 3600,
                                 "on_timeout": "escalate"},
                                {"name": "final", "after": [0, 1], "on_timeout": "approve"}],
                "subtasks": [
                    {"index": 0, "capability": "sentiment-classify", "spec": "Tone",
                     "executor": "0x1", "cost": 200_000, "depends_on": []},
                    {"index": 1, "capability": "summarize", "spec": "Summary", "executor": "0x2",
                     "cost": 400_000, "depends_on": [0], "when": "out[0].score < 0",
                     "recovery": {"on_expiry": "reassign"}}]}});
        let text = card(&view);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[6], "       runs only if out[0].score < 0; else skipped, unfunded",
            "{text}"
        );
        assert_eq!(lines[7], "       recovery: on expiry reassign", "{text}");
        assert_eq!(
            lines[8],
            "  ⏸ checkpoint tone-check after #0: an approver passes or stops the run; after 1h \
             escalate — reached"
        );
        assert_eq!(
            lines[9],
            "  ⏸ checkpoint final after #0, #1: an approver passes or stops the run; after the \
             decision timeout approve"
        );
        assert_eq!(lines[10], "  recovery: on decline retry(2)");
        assert_eq!(recovery_line(&json!({"on_decline": "pause"})), None, "defaults say nothing");
    }

    #[test]
    fn the_card_says_why_an_executor_was_chosen() {
        let (a, b) = (
            "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
            "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
        );
        let choice = json!({"index": 0, "policy": "balanced", "executor": a, "price": 420_000,
            "score_bps": 7589,
            "reason": "balanced: 91% reliable (19/20 settled, 1 expired, prior 2:1), 0.42 USDC (cheapest 0.35 USDC)",
            "runner_up": {"executor": b, "price": 350_000, "score_bps": 3745,
                          "reason": "less reliable: 38% reliable (1/5 settled, 4 expired), 0.35 USDC"}});
        let view = |executor: &str| {
            json!({"id": "0x1", "plan": {"choices": [choice.clone()], "subtasks": [
                {"index": 0, "capability": "summarize", "spec": "Summarize", "executor": executor,
                 "cost": 420_000, "depends_on": []}]}})
        };
        let text = card(&view(&a.to_lowercase()));
        assert_eq!(
            text.lines().nth(4).unwrap(),
            "       chosen: 0x14dC…9955 — balanced: 91% reliable (19/20 settled, 1 expired, \
             prior 2:1), 0.42 USDC (cheapest 0.35 USDC); runner-up 0x2361…1E8f (37%: less \
             reliable: 38% reliable (1/5 settled, 4 expired), 0.35 USDC)"
        );
        assert!(!card(&view(b)).contains("chosen"), "a hand-picked executor has no choice line");
        let alone =
            json!({"executor": a, "reason": "cheapest: 0.35 USDC, the only eligible offer"});
        assert_eq!(
            choice_line(&alone),
            "chosen: 0x14dC…9955 — cheapest: 0.35 USDC, the only eligible offer"
        );
    }

    #[test]
    fn spend_shows_once_money_moved() {
        let view = |committed: &str| {
            json!({"plan": {"budget": "5000000"},
                   "spend": {"committed": committed, "paid": "800000", "refunded": "400000"}})
        };
        assert_eq!(spend_line(&view("0")), None, "nothing funded yet");
        assert_eq!(
            spend_line(&view("1200000")).unwrap(),
            "  spent: 1.200000 USDC funded, 0.800000 USDC paid, 0.400000 USDC refunded, \
             of a 5.000000 USDC budget"
        );
    }

    #[test]
    fn usdc_formats_base_units() {
        assert_eq!(usdc(&json!("1200000")), "1.200000 USDC");
        assert_eq!(usdc(&json!(5)), "0.000005 USDC");
        assert_eq!(usdc(&json!("x")), "? USDC");
    }

    #[test]
    fn failed_decisions_are_shown_plainly() {
        let failed = json!({"seq": 2, "idx": 0, "kind": "retry", "ok": false,
            "outcome": "failed: chain: …", "error": "chain: refused",
            "revert": "TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 9 })"});
        assert_eq!(
            decision_line(&failed),
            "  decision 2 retry #0: FAILED: chain: refused (revert: TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 9 }))"
        );
        let fine =
            json!({"seq": 1, "idx": null, "kind": "cancel", "ok": true, "outcome": "cancelling"});
        assert_eq!(decision_line(&fine), "  decision 1 cancel: cancelling");
        let queued = json!({"seq": 3, "idx": 1, "kind": "approve", "ok": null, "outcome": null});
        assert_eq!(decision_line(&queued), "  decision 3 approve #1: queued");
    }
}
