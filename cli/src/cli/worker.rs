//! `tessera worker`: an executor agent from its card.

use std::path::PathBuf;

use clap::Args;
use eyre::{Context, Result};

use super::Connection;

/// Where a worker runs. The agent's private key (hex) comes from the
/// environment variable TESSERA_WORKER_KEY only: never the command line, never logs.
#[derive(Debug, Args)]
pub(super) struct WorkerArgs {
    /// The agent card (YAML: id, description, role, capabilities with prices, and a model with
    /// instructions or a handler: `handler: {http: <url>}` or `handler: {command: [...]}`, whose
    /// relative paths are resolved against the card's directory, where it runs).
    #[arg(long)]
    card: PathBuf,
    #[command(flatten)]
    conn: Connection,
    /// Milliseconds between scans when no new block is announced; without
    /// a websocket, between polls of the newest block until the chain's
    /// block time is known (then once a block, just after each is due).
    #[arg(long, default_value_t = 1000)]
    poll_ms: u64,
    /// Serve this worker's blobs (GET /blobs/{hash}), /metrics and /healthz here; port 0 picks one, printed at start.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
    /// Base URL others fetch this worker's blobs from, put in its large results' URIs (default: http://<bound address>/blobs).
    #[arg(long, value_name = "URL", value_parser = crate::serving::parse_blob_url)]
    public_url: Option<tessera_bindings::envelope::BlobUrl>,
}

/// Registers the worker, then polls until Ctrl-C or SIGTERM. RPC failures are
/// logged and retried on the next tick; the chain is the worker's only state.
/// Its critical tasks: `ops` (blobs and operator routes) and `worker`.
pub(super) async fn run(args: WorkerArgs) -> Result<()> {
    use std::sync::Arc;

    use alloy::{network::EthereumWallet, signers::local::PrivateKeySigner};
    use tessera_bindings::client::connect;
    use tessera_workers::{AgentCard, runtime::Worker};

    let card = AgentCard::load(&args.card)?;
    // A card that needs a model and has no key is refused before anything
    // is registered: it would offer work it can only decline.
    let llm = tessera_workers::llm::LlmConfig::for_card(
        &card,
        tessera_workers::llm::LlmConfig::from_env(),
    )?;
    let deployment = args.conn.deployment()?;
    let key = std::env::var("TESSERA_WORKER_KEY")
        .map_err(|_| eyre::eyre!("set TESSERA_WORKER_KEY to the agent's private key (hex)"))?;
    let signer: PrivateKeySigner = key
        .trim()
        .parse()
        .map_err(|_| eyre::eyre!("TESSERA_WORKER_KEY is not a hex private key"))?;
    let me = signer.address();
    let provider = connect(args.conn.rpc_url(), EthereumWallet::new(signer.clone()));
    let sources = args.conn.blob_sources();
    // Its blobs (large results, child envelopes, dispute reasons) served
    // for the parties that read them, beside its ops routes.
    let mut tasks = tessera_http::tasks::Tasks::new();
    let ops = tessera_http::ops::Ops::new()
        .ready_when("chain", tessera_bindings::client::chain_ready(provider.clone()))
        .ready_when("tasks", tasks.health().check());
    let app = crate::serving::ops_and_blobs(ops, Arc::clone(sources.local()));
    let listener = crate::serving::bind(args.listen, "--listen").await?;
    let addr = listener.local_addr()?;
    crate::serving::serve_in(&mut tasks, "ops", listener, app);
    let public = crate::serving::public_url(args.public_url, Some(addr), "/blobs");
    println!(
        "blobs on http://{addr}/blobs (published as {}), metrics on /metrics",
        public.as_ref().map_or("no hint", |u| u.as_str())
    );
    let sources = sources.with_public_url(public);
    let worker_provider = provider.clone();
    // The card's handler (its command run beside the card), the LLM, or
    // the built-in offline runner: logged without a key or a URL's query.
    let brain = tessera_workers::brain::for_card(&card, args.card.parent(), llm.as_ref());
    println!("the work is done by {}", brain.describe());
    let mut worker =
        Worker::new(provider, me, card, deployment.clone(), Arc::clone(sources.local()))
            .with_blob_sources(sources)
            .with_brain(brain);
    // A signal while it starts stops it as cleanly as one while it works.
    let shutdown = super::shutdown_signal();
    tokio::pin!(shutdown);
    let started = tokio::select! {
        started = start(&args.conn, &worker, &worker_provider, &deployment, &signer) => Some(started?),
        () = &mut shutdown => None,
    };
    let Some(registration) = started else {
        crate::serving::supervise(tasks, std::future::ready(())).await?;
        println!("worker stopped");
        return Ok(());
    };
    println!("worker {me} ({registration:?}); watching for tasks. Ctrl-C to stop.");
    let poll = std::time::Duration::from_millis(args.poll_ms.max(50));
    let (ws, stop) = (args.conn.ws(), tasks.root().clone().cancelled_owned());
    tasks.spawn_critical("worker", async move {
        worker.run(ws.as_deref(), poll, |h| println!("{h:?}"), stop).await;
    });
    crate::serving::supervise(tasks, shutdown).await?;
    println!("worker stopped");
    Ok(())
}

/// Registers the worker (its offer, and its ERC-8004 identity when the
/// deployment has the registries), waiting for a chain not reachable yet
/// (/readyz answers 503 meanwhile); how it was registered.
async fn start(
    conn: &Connection,
    worker: &tessera_workers::runtime::Worker,
    provider: &alloy::providers::DynProvider,
    deployment: &tessera_bindings::deployment::Deployment,
    signer: &alloy::signers::local::PrivateKeySigner,
) -> Result<tessera_workers::runtime::Registration> {
    let me = signer.address();
    conn.check_chain(provider, deployment).await?;
    let what = format!("registering {me} at {}", conn.rpc_url());
    let registration = crate::starting::until_reachable(&what, || worker.ensure_registered())
        .await
        .wrap_err(what)?;
    // Its ERC-8004 identity (when the deployment has the registries): the
    // card as the registration file, the wallet proven, the offer linked.
    let what = format!("registering {me}'s ERC-8004 identity");
    let identity = crate::starting::until_reachable(&what, || worker.ensure_identity(signer))
        .await
        .wrap_err(what)?;
    match identity {
        Some(id) => println!("ERC-8004 agent id {} ({} changes sent)", id.agent_id, id.changes),
        None => println!("the deployment names no ERC-8004 identity registry"),
    }
    Ok(registration)
}
