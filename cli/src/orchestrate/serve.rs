//! `tessera serve`: the orchestrator service started from its options
//! (the run store, the chain, the embedded indexer), until a signal.

use std::{sync::Arc, time::Duration};

use alloy::{network::EthereumWallet, signers::local::PrivateKeySigner};
use clap::Args;
use eyre::{Context, Result, bail, eyre};
use tessera_bindings::{client::connect, envelope::FsBlobStore, usdc::Usdc};
use tessera_orchestrator::{
    replica::ReplicaConfig,
    runner::{Chain, RunnerConfig},
    service::{Service, ServiceConfig},
    store::{Store, lock_sqlite},
};

/// Where the orchestrator service runs, in one of two modes (keys from the
/// environment only, never logged):
///
/// - operator mode, TESSERA_OPERATOR_KEY: the key pays gas and is the
///   tasks' client, and holds no sponsor's money. Sponsors sign in with
///   Ethereum (EIP-4361), each sees and decides only its own runs, and
///   funds each plan with a grant it signs (its key never reaches this
///   server). TESSERA_API_TOKEN, when set, is the operator's admin token
///   (sees and decides every run).
/// - single-key mode, TESSERA_SPONSOR_KEY: that key is the one sponsor; it
///   funds every plan; TESSERA_API_TOKEN guards the state changes.
///
/// Setting both keys is an error.
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
    /// Seconds a proposed plan waits for its approval before it expires:
    /// cancelled (nothing was funded), with the reason `proposal expired`
    /// (wall-clock time since it was proposed; one day by default).
    #[arg(long, alias = "proposal-ttl", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..))]
    proposal_ttl_secs: u64,
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
    /// Chain seconds a delivered result may stay out of reach (its location
    /// hint and the gateways failing or silent) before the run treats it as
    /// unreadable: disputed under auto review, shown as such under manual
    /// review. At most half the task's review window is used.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    result_wait_secs: u64,
    /// Feedback to executors (docs/reputation.md): approval (the default:
    /// the rating every approval carries, no transaction of its own), or
    /// that and ERC-8004 feedback backed by the settlement, per-plan (one
    /// per executor when a run is over) or per-task. No ERC-8004 feedback
    /// is given without a reputation registry in the deployment.
    #[arg(long, env = "TESSERA_FEEDBACK", default_value = "approval")]
    feedback: tessera_orchestrator::feedback::FeedbackMode,
    /// Store of the embedded indexer, which feeds the web UI's history and
    /// agents pages (served under /index/api/…): sqlite://<file> or postgres://…
    #[arg(long, env = "TESSERA_INDEX_DATABASE_URL", default_value = "sqlite://.tessera/index.db")]
    index_database_url: String,
    /// Run without the embedded indexer (the UI then shows no history,
    /// agents or reliability, and the capability catalogue is the built-in
    /// capabilities alone: briefs are planned from those, and a condition
    /// may read fields of their results only).
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
    /// Operator mode: the most one sponsor may approve in grant budgets
    /// over a rolling 24 hours, in whole USDC (decimals allowed), besides
    /// --max-plan-spend per plan.
    #[arg(long, value_name = "USDC", default_value = "500")]
    max_sponsor_spend: String,
    /// Operator mode: the origin sponsors reach this server at
    /// (https://tessera.example.org), whose host sign-in messages must name
    /// as their domain; by default the request's Host header.
    #[arg(long, value_name = "URL")]
    public_origin: Option<String>,
    #[command(flatten)]
    webhooks: crate::index::WebhookArgs,
    #[command(flatten)]
    limits: crate::cli::Limits,
}

/// Which key serve holds.
enum Mode {
    /// TESSERA_OPERATOR_KEY.
    Operator(PrivateKeySigner),
    /// TESSERA_SPONSOR_KEY.
    SingleKey(PrivateKeySigner),
}

/// The key and the mode it means, from the environment.
fn mode() -> Result<Mode> {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let parse = |name: &str, what: &str| -> Result<PrivateKeySigner> {
        env_secret(name, what)?.parse().map_err(|_| eyre!("{name} is not a hex private key"))
    };
    match (set(OPERATOR_KEY_VAR), set(SPONSOR_KEY_VAR)) {
        (true, true) => bail!(
            "set either {OPERATOR_KEY_VAR} (operator mode: sponsors sign in and sign grants) or {SPONSOR_KEY_VAR} (single-key mode), not both"
        ),
        (true, false) => {
            Ok(Mode::Operator(parse(OPERATOR_KEY_VAR, "the operator's private key (hex)")?))
        }
        (false, _) => Ok(Mode::SingleKey(parse(
            SPONSOR_KEY_VAR,
            "the sponsor's private key (hex), or set TESSERA_OPERATOR_KEY for operator mode",
        )?)),
    }
}

const OPERATOR_KEY_VAR: &str = "TESSERA_OPERATOR_KEY";
const SPONSOR_KEY_VAR: &str = "TESSERA_SPONSOR_KEY";

/// The authority (`host[:port]`) of `--public-origin`.
fn origin_authority(origin: &str) -> Result<String> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or_else(|| eyre!("--public-origin {origin:?} is not an http(s) URL"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() || authority.contains(char::is_whitespace) {
        bail!("--public-origin {origin:?} names no host");
    }
    Ok(authority.to_owned())
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
/// A critical task that ends (the API, the head follower, the feedback
/// writer, the proposal sweeper, the embedded indexer) stops it the same
/// way, and it returns the failure naming the task (the webhook delivery
/// loop is one of them when the indexer is embedded).
pub(crate) async fn serve(
    args: ServeArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let mode = mode()?;
    let (signer, operator) = match mode {
        Mode::Operator(signer) => {
            let max = Usdc::parse(&args.max_sponsor_spend)
                .wrap_err_with(|| format!("--max-sponsor-spend {:?}", args.max_sponsor_spend))?;
            let public_origin = args.public_origin.as_deref().map(origin_authority).transpose()?;
            let access = tessera_orchestrator::api::OperatorAccess {
                admin_token: None,
                public_origin,
                max_sponsor_spend: max,
            };
            (signer, Some(access))
        }
        Mode::SingleKey(signer) => (signer, None),
    };
    let token = match operator {
        // The operator's admin token is optional.
        Some(_) => std::env::var("TESSERA_API_TOKEN").unwrap_or_default().trim().to_owned(),
        None => env_secret("TESSERA_API_TOKEN", "the bearer token clients must send")?,
    };
    // Confirmation tokens survive restarts: keyed by the service's own secret.
    let confirm_secret = match operator {
        Some(_) => alloy::primitives::keccak256(
            [b"tessera-confirm:".as_slice(), signer.to_bytes().as_slice()].concat(),
        ),
        None => alloy::primitives::keccak256(format!("tessera-confirm:{token}")),
    };
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
        result_wait: Duration::from_secs(args.result_wait_secs),
        feedback: args.feedback,
        poll_interval: Duration::from_millis(args.poll_ms),
        confirm_secret,
        grants_required: operator.is_some(),
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
        // Webhooks are managed with the admin token (none: turned off).
        let admin = Some(token.clone()).filter(|t| !t.is_empty());
        let timeout = gate.limits().request_timeout;
        let hooks = args.webhooks.routes(&ix, admin, "TESSERA_API_TOKEN", timeout);
        nested
            .push(("/index".to_owned(), tessera_indexer::api::of(&ix, gate.clone()).merge(hooks)));
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
        token: token.clone(),
        operator: operator.clone(),
        classifier,
        gate,
        nested,
        // Executors are chosen on the records the embedded indexer keeps,
        // and plans made from (and checked against) its catalogue, from the
        // first step of the first run resumed.
        records: indexer.as_ref().map(|ix| Arc::new(ix.store().clone()) as _),
        catalogue: indexer.as_ref().map(|ix| Arc::new(ix.store().clone()) as _),
    };
    let mut service = match replica {
        Some(replica) => Service::start_replica(config, replica).await?,
        None => Service::start(config).await?,
    };
    // Proposals nobody approves expire (swept every quarter of their
    // lifetime, at least once a second, at most once a minute).
    let ttl = Duration::from_secs(args.proposal_ttl_secs);
    let sweeper =
        expire_proposals(Arc::clone(service.orchestrator()), ttl, service.tasks().root().clone());
    service.tasks().spawn_critical("proposals", sweeper);
    let indexed = indexer.is_some();
    if let Some(mut ix) = indexer {
        args.webhooks.spawn(&ix, service.tasks());
        // The embedded indexer follows the chain for as long as the API serves.
        let stop = service.tasks().root().clone().cancelled_owned();
        let ws = ws.clone();
        service.tasks().spawn_critical("indexer", async move {
            ix.run(ws.as_deref(), Duration::from_secs(1), stop).await;
        });
    }
    println!(
        "orchestrator on http://{} ({} {}, {} run(s) resumed). Ctrl-C to stop.",
        service.addr(),
        if operator.is_some() { "operator" } else { "sponsor" },
        service.orchestrator().chain().sponsor(),
        service.resumed()
    );
    if let Some(op) = &operator {
        println!(
            "operator mode: sponsors sign in with Ethereum (domain {}) and fund each plan with a signed grant; at most {} USDC per sponsor a day{}",
            op.public_origin.as_deref().unwrap_or("the request's Host"),
            op.max_sponsor_spend,
            if token.is_empty() { "" } else { "; TESSERA_API_TOKEN is the admin token" }
        );
    }
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
        "web UI on http://{}/ ({}){}",
        service.addr(),
        if operator.is_some() {
            "sponsors sign in with their wallet"
        } else {
            "state changes ask for the TESSERA_API_TOKEN value once"
        },
        if indexed { "; index API under /index/api" } else { "" }
    );
    // Until the signal, or until a critical task ends: then the process
    // stops too, non-zero, for its supervisor to start it again.
    let watched = service.tasks().watch(shutdown).await;
    println!("stopping: draining the run drivers");
    let grace = tessera_http::tasks::SHUTDOWN_GRACE;
    let stopped = match tokio::time::timeout(grace, service.shutdown()).await {
        Ok(stopped) => stopped,
        // What was cut short resumes at the next start, as after a crash.
        Err(_) => {
            tracing::warn!("not stopped within {} s; leaving the rest", grace.as_secs());
            Ok(())
        }
    };
    // The task that failed is the cause; what did not stop after it, a consequence.
    watched?;
    stopped?;
    println!("orchestrator stopped");
    Ok(())
}

/// Expires the proposals older than `ttl`, every quarter of it (at least
/// once a second, at most once a minute), until `stop`.
async fn expire_proposals(
    orch: Arc<tessera_orchestrator::runner::Orchestrator>,
    ttl: Duration,
    stop: tessera_http::tasks::CancellationToken,
) {
    let every = (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = orch.expire_proposals(ttl, tessera_db::now_ms()).await {
            tracing::warn!(error = %e, "expiring proposals");
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_origins_name_their_authority() {
        assert_eq!(origin_authority("https://t.example.org/app").unwrap(), "t.example.org");
        assert_eq!(origin_authority("http://127.0.0.1:8080").unwrap(), "127.0.0.1:8080");
        assert!(origin_authority("t.example.org").is_err());
        assert!(origin_authority("https://").is_err());
    }

    #[test]
    fn database_passwords_are_redacted() {
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact("sqlite://.tessera/runs.db"), "sqlite://.tessera/runs.db");
    }
}
