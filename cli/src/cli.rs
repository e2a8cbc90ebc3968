//! Argument parsing and dispatch for the `tessera` binary.

use std::path::PathBuf;

use alloy::transports::http::reqwest::Url;
use clap::{Args, Parser, Subcommand};
use eyre::{Context, Result, bail};
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DeployConfig},
};

/// Tessera: composite agent work, planned, approved and settled through an
/// on-chain escrow.
///
/// A brief becomes a plan of sub-tasks; each sub-task is a task in the escrow
/// that an executor agent accepts, runs and delivers, and each result flows
/// into the sub-tasks that need it. This one binary runs every part:
///
///   plan      turn a brief (or a plan file) into a plan, approve it, follow it
///   serve     the orchestrator: runs plans; HTTP API, web UI, embedded indexer
///   worker    an executor agent from its card (offline rules or an LLM)
///   arbiter   rule on disputes, finalize rulings, decide appeals
///   indexer   chain events into SQLite or PostgreSQL, with a read API
///   tasks     a plan's lineage from the indexer
///   agents    agents' records, identities and feedback; how a policy ranks them
///   runs      inspect runs through the orchestrator's API
///   chain     a local chain with the contracts and demo agents, until Ctrl-C
///   deploy    deploy the contracts to a running chain
///   demo      the whole system on a throwaway local chain, each party at
///             its own home: a lifecycle, then plans (nested, delegated,
///             disputed, declined and reassigned), with their lineage
///   bench     gas, plans, load, replicas' failover, classification, indexer
///
/// Run `tessera <command> --help` for each command's options.
#[derive(Debug, Parser)]
#[command(name = "tessera", version, verbatim_doc_comment, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More log output (-v info, -vv debug); logs go to stderr.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// How logs are written: text for people, json for collectors (one
    /// object per line, with the fields of the spans an event happened in,
    /// such as a run's plan id).
    #[arg(long, global = true, env = "TESSERA_LOG_FORMAT", value_enum, default_value_t)]
    log_format: LogFormat,
}

/// How logs are written on stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, target, fields, and the
    /// current span and the spans around it with their fields.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a local chain, deploy and register the demo agents; run one task
    /// lifecycle printing each transaction, then plans through the
    /// orchestrator and workers, each party at a home of its own (a chain, a
    /// nested plan, a delegation, a dispute, a plan between homes with a
    /// decline on chain), with each plan's lineage from the indexer; the
    /// chain is stopped at the end.
    Demo(ChainArgs),
    /// Start a local chain with the contracts deployed and demo agents
    /// registered, write the deployment file, and keep running until Ctrl-C.
    Chain {
        #[command(flatten)]
        chain: ChainArgs,
        /// Seconds between blocks, as on a real chain; without it every
        /// transaction is mined at once in a block of its own (automine).
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        block_time: Option<u64>,
        /// Where to write the deployment record.
        #[arg(long, default_value = "deployment.json")]
        deployment: PathBuf,
    },
    /// Deploy the contracts to a running chain (a local one or any other)
    /// and write the deployment file: chain id, start block, addresses.
    ///
    /// The deployer's key comes from TESSERA_DEPLOYER_KEY (hex) or an
    /// encrypted keystore file (--keystore, its password from
    /// TESSERA_KEYSTORE_PASSWORD or --password-file); never the command
    /// line, never the logs. With neither, the accounts of --mnemonic (anvil's
    /// dev accounts by default) take every role, as on a local chain.
    #[command(verbatim_doc_comment)]
    Deploy(crate::deploying::DeployCmd),
    /// Run an executor agent: register its card, then accept, run and deliver
    /// the tasks assigned to it until Ctrl-C. The key comes from TESSERA_WORKER_KEY.
    Worker(WorkerArgs),
    /// Run the orchestrator: resume every live run, follow new blocks, serve
    /// the HTTP API. Keys come from TESSERA_SPONSOR_KEY and TESSERA_API_TOKEN.
    Serve(crate::orchestrate::ServeArgs),
    /// Turn a brief (or a plan JSON file) into a plan, show its card, ask
    /// approve / edit / cancel, then follow it to settlement.
    Plan(crate::orchestrate::PlanArgs),
    /// Inspect runs and take their decisions through the orchestrator's API:
    /// review, retry, change-executor, cancel, checkpoint, appeal (queued;
    /// `runs show` tells what came of each). Decisions need TESSERA_API_TOKEN.
    #[command(subcommand, after_help = crate::client::EXIT_CODES)]
    Runs(RunsCommand),
    /// The indexer: events into SQLite or PostgreSQL, reorg-safe, with a read API.
    #[command(subcommand)]
    Indexer(crate::index::IndexerCommand),
    /// Lineage views from the indexer.
    #[command(subcommand)]
    Tasks(crate::index::TasksCommand),
    /// The agents: status, offers, record weighed by the money behind it,
    /// ERC-8004 identity and settlement-backed feedback (from the indexer);
    /// `show` one in full, `rank` how a policy ranks those offering a
    /// capability and why (from the orchestrator).
    #[command(after_help = crate::client::EXIT_CODES)]
    Agents(crate::agents::AgentsArgs),
    /// The arbiter: rule on disputes, finalize rulings, decide appeals.
    #[command(subcommand)]
    Arbiter(crate::arbitrate::ArbiterCommand),
    /// Benchmarks: gas per lifecycle path, plans (blocks, seconds, RPC per
    /// sub-task), load through `serve`, replicas' failover, the planner's
    /// classification, indexer throughput and lag.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Debug, Subcommand)]
enum RunsCommand {
    /// List runs, newest first (optionally only those in one state).
    #[command(after_help = crate::client::EXIT_CODES)]
    List {
        /// Only runs in this state.
        #[arg(long, value_parser = crate::runs::run_states())]
        state: Option<String>,
        /// At most this many (the newest).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        api: crate::orchestrate::ApiArgs,
    },
    /// Show a run: its plan card and each sub-task's progress.
    #[command(after_help = crate::client::EXIT_CODES)]
    Show {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        id: String,
        #[command(flatten)]
        api: crate::orchestrate::ApiArgs,
    },
    #[command(flatten)]
    Decide(crate::runs::DecideCommand),
}

/// Where a worker runs. The agent's private key (hex) comes from the
/// environment variable TESSERA_WORKER_KEY only: never the command line, never logs.
#[derive(Debug, Args)]
struct WorkerArgs {
    /// The agent card (YAML: id, description, role, capabilities with prices, model, instructions).
    #[arg(long)]
    card: PathBuf,
    #[command(flatten)]
    conn: Connection,
    /// Milliseconds between scans when no new block is announced.
    #[arg(long, default_value_t = 1000)]
    poll_ms: u64,
    /// Serve this worker's blobs (GET /blobs/{hash}), /metrics and /healthz here; port 0 picks one, printed at start.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
    /// Base URL others fetch this worker's blobs from, put in its large results' URIs (default: http://<bound address>/blobs).
    #[arg(long, value_name = "URL", value_parser = crate::serving::parse_blob_url)]
    public_url: Option<tessera_bindings::envelope::BlobUrl>,
}

/// Where a service finds the chain and the blobs it shares with the others.
#[derive(Debug, Args)]
pub(crate) struct Connection {
    /// The deployment record to work against.
    #[arg(long, default_value = "deployment.json")]
    pub(crate) deployment: PathBuf,
    /// JSON-RPC endpoint of the chain [default: the one the deployment file
    /// records, else http://127.0.0.1:8545]
    #[arg(long = "rpc-url", value_name = "URL", env = "TESSERA_RPC_URL")]
    pub(crate) rpc_url_arg: Option<Url>,
    /// Websocket endpoint for new blocks (default: the RPC URL with ws://);
    /// without one the service polls.
    #[arg(long, env = "TESSERA_WS_URL")]
    pub(crate) ws_url: Option<String>,
    /// Directory of content-addressed envelopes, results and rationales.
    #[arg(long, default_value = ".tessera/blobs")]
    pub(crate) blobs: PathBuf,
    /// Base URL serving blobs as GET <URL>/<sha256 hex>, asked after the local store and a URI's hint (repeatable, in order; the env variable takes them comma-separated).
    #[arg(
        long = "blob-gateway",
        value_name = "URL",
        env = "TESSERA_BLOB_GATEWAYS",
        value_delimiter = ',',
        value_parser = crate::serving::parse_blob_url
    )]
    pub(crate) blob_gateways: Vec<tessera_bindings::envelope::BlobUrl>,
    /// Never follow the ?src= location hint of a blob URI: read only the local store and the gateways.
    #[arg(long)]
    pub(crate) ignore_blob_hints: bool,
}

/// What an HTTP API keeps, whatever its clients do.
#[derive(Debug, Args)]
pub(crate) struct Limits {
    /// Milliseconds a request may take before it is answered 503 with Retry-After.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) request_timeout_ms: u64,
    /// Open event streams at most; beyond it a new one is answered 503 with Retry-After.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) max_streams: u64,
    /// Seconds between keep-alives on an idle event stream; a client that left
    /// is noticed at the next one.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub(crate) keep_alive_secs: u64,
}

impl Limits {
    /// The gate the routers share, made from these limits.
    pub(crate) fn gate(&self) -> tessera_http::limits::StreamGate {
        tessera_http::limits::StreamGate::new(&tessera_http::limits::HttpLimits {
            request_timeout: std::time::Duration::from_millis(self.request_timeout_ms),
            max_streams: usize::try_from(self.max_streams).unwrap_or(usize::MAX),
            keep_alive: std::time::Duration::from_secs(self.keep_alive_secs),
        })
    }
}

impl Connection {
    /// The deployment record.
    pub(crate) fn deployment(&self) -> Result<tessera_bindings::deployment::Deployment> {
        use tessera_bindings::deployment::{Deployment, DeploymentError};
        match Deployment::load(&self.deployment) {
            Err(DeploymentError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                bail!(
                    "no deployment file at {}: start a local chain with `tessera chain` (it writes one), deploy with `tessera deploy`, or name one with --deployment",
                    self.deployment.display()
                )
            }
            other => Ok(other?),
        }
    }

    /// The chain's JSON-RPC endpoint: `--rpc-url` (or TESSERA_RPC_URL),
    /// else the one the deployment file records, else the local default.
    pub(crate) fn rpc_url(&self) -> Url {
        self.rpc_url_arg
            .clone()
            .or_else(|| self.deployment().ok()?.rpc_url?.parse().ok())
            .unwrap_or_else(|| DEFAULT_RPC_URL.parse().expect("the default RPC URL parses"))
    }

    /// Refuses to go on when the chain behind `provider` is not the one the
    /// deployment record names (one clear line). A chain that does not
    /// answer yet is waited for, with backoff.
    pub(crate) async fn check_chain(
        &self,
        provider: &alloy::providers::DynProvider,
        deployment: &tessera_bindings::deployment::Deployment,
    ) -> Result<()> {
        use alloy::providers::Provider;
        // A service waits for its chain to answer (as for everything else
        // at start) rather than run unchecked.
        let what = format!("reading the chain id through {}", self.rpc_url());
        let actual = crate::starting::until_reachable(&what, || provider.get_chain_id())
            .await
            .wrap_err(what)?;
        deployment.check_chain(actual).map_err(|err| {
            eyre::eyre!("{} against {}: {err}", self.deployment.display(), self.rpc_url())
        })
    }

    /// The local blob store under `--blobs`, read first, then URI hints
    /// (unless `--ignore-blob-hints`) and the gateways.
    pub(crate) fn blob_sources(&self) -> tessera_bindings::envelope::BlobSources {
        let local = std::sync::Arc::new(tessera_bindings::envelope::FsBlobStore::new(&self.blobs));
        tessera_bindings::envelope::BlobSources::new(local)
            .with_gateways(self.blob_gateways.clone())
            .follow_hints(!self.ignore_blob_hints)
    }

    /// The websocket endpoint: given, or the RPC URL's ws:// twin.
    pub(crate) fn ws(&self) -> Option<String> {
        let recorded = || match self.rpc_url_arg {
            // The recorded websocket belongs to the recorded RPC endpoint.
            None => self.deployment().ok()?.ws_url,
            Some(_) => None,
        };
        self.ws_url.clone().or_else(recorded).or_else(|| ws_of(&self.rpc_url()))
    }
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Receipt gas of every lifecycle path on a fresh local chain.
    Gas {
        #[command(flatten)]
        chain: ChainArgs,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// N task lifecycles on anvil, then the indexer binary's backfill
    /// throughput (SQLite, PostgreSQL), live lag p50/p99 and peak RSS.
    Indexer {
        #[command(flatten)]
        chain: ChainArgs,
        /// Lifecycles to generate.
        #[arg(long, default_value_t = 50_000)]
        lifecycles: usize,
        /// Tasks created one by one to measure the live lag.
        #[arg(long, default_value_t = 100)]
        live: usize,
        /// Write the SQLite indexer's debug log (per-batch timings) here,
        /// and the PostgreSQL one beside it (`<name>.postgres.log`).
        #[arg(long)]
        indexer_log: Option<PathBuf>,
        /// Keep the generated chain in this folder, and load it from there
        /// when it holds the same number of lifecycles (saves generating it
        /// again between runs).
        #[arg(long)]
        hold_chain: Option<PathBuf>,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Offline classification latency over the brief corpus, against the
    /// heuristic scan alone.
    Classify {
        /// Rounds over the corpus (after one warm-up round).
        #[arg(long, default_value_t = 200)]
        rounds: usize,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Many plans at once through `tessera serve` processes with offline
    /// workers, on automine and with block time: sub-tasks settled per
    /// second against the same lifecycles sent directly, plan latency
    /// p50/p99, RSS, CPU, store size, JSON-RPC requests per sub-task and
    /// per block.
    Load {
        #[command(flatten)]
        chain: ChainArgs,
        /// Plans in the full round (a tenth of them in the small round);
        /// half 3-step chains, half 1 -> 2 fan-outs.
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000))]
        plans: u64,
        /// Seconds between blocks of the second chain (0 skips it).
        #[arg(long, default_value_t = 2)]
        block_time: u64,
        /// Lifecycles the direct baseline sends (its rate is what counts).
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        baseline: u64,
        /// Also run the full round on scratch databases on this PostgreSQL
        /// server (e.g. postgres://postgres@127.0.0.1:5432/postgres), once
        /// per number of --replicas; skipped, with the reason, when it does
        /// not answer.
        #[arg(long = "database-url", alias = "postgres", value_name = "URL")]
        postgres: Option<String>,
        /// Replica counts of the PostgreSQL rounds (each replica its own
        /// funded sponsor key, so its own lane), 1 to 4.
        #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
        replicas: Vec<usize>,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The failover trial: replicas with one sponsor key on one PostgreSQL
    /// database drive waves of plans while one replica at a time is killed
    /// with SIGKILL at random moments and started again; checks that every
    /// plan completes, every sub-task is funded and settled exactly once
    /// and the tokens are conserved, and reports the takeover times.
    /// Exits non-zero when a check fails.
    Failover {
        #[command(flatten)]
        chain: ChainArgs,
        /// The PostgreSQL server to make a scratch database on.
        #[arg(
            long = "database-url",
            alias = "postgres",
            value_name = "URL",
            env = "TESSERA_TEST_PG",
            default_value = "postgres://postgres@127.0.0.1:5432/postgres"
        )]
        postgres: String,
        /// Replicas sharing the lane.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(2..=8))]
        replicas: u64,
        /// Kills, one replica at a time.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=1_000))]
        kills: u64,
        /// Plans approved before the first kill and after each one.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=200))]
        plans_per_wave: u64,
        /// Seconds between blocks (0: every transaction mines a block).
        #[arg(long, default_value_t = 0)]
        block_time: u64,
        /// The replicas' lease TTL, ms.
        #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u64).range(500..=60_000))]
        lease_ttl_ms: u64,
        /// The replicas' lease heartbeat, ms (below the TTL).
        #[arg(long = "lease-heartbeat-ms", alias = "heartbeat-ms", default_value_t = 500, value_parser = clap::value_parser!(u64).range(100..=30_000))]
        heartbeat_ms: u64,
        /// Seeds the moments and victims of the kills.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Approve -> settled wall time of a chain plan through the orchestrator
    /// and offline workers, sub-task cycle latency, and a direct baseline.
    Plan {
        #[command(flatten)]
        chain: ChainArgs,
        /// Sub-tasks per chain plan.
        #[arg(long, default_value_t = 5)]
        steps: usize,
        /// Plans measured per automine scenario (after one warm-up).
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// Seconds between blocks of the second chain every scenario also
        /// runs on (0 skips it).
        #[arg(long, default_value_t = 2)]
        block_time: u64,
        /// Samples per scenario on that chain (the ten plans run once).
        #[arg(long, default_value_t = 3)]
        timed_runs: usize,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

/// Where every service looks for the chain when told nothing else.
pub(crate) const DEFAULT_RPC_URL: &str = "http://127.0.0.1:8545";

/// The port `tessera chain` listens on unless told otherwise: the default
/// RPC URL's.
const DEFAULT_CHAIN_PORT: u16 = 8545;

/// Where and how to start anvil.
#[derive(Debug, Args)]
struct ChainArgs {
    /// Port for anvil: 0 for a free one [default: 8545 for `tessera chain`,
    /// where every service looks by default; a free one otherwise]
    #[arg(long)]
    port: Option<u16>,
    /// Load chain state from this file and keep saving it there.
    #[arg(long)]
    state: Option<PathBuf>,
    /// The anvil binary (default: $TESSERA_ANVIL, the project's .tools/, then $PATH).
    #[arg(long, env = "TESSERA_ANVIL")]
    anvil: Option<PathBuf>,
}

impl ChainArgs {
    fn options(&self) -> ChainOptions {
        ChainOptions {
            port: self.port.filter(|p| *p != 0),
            state_file: self.state.clone(),
            anvil: self.anvil.clone(),
            ..ChainOptions::default()
        }
    }
}

/// Escrow settings for a deployment.
#[derive(Debug, Args)]
pub(crate) struct DeployArgs {
    /// Seconds the arbiter has to rule on a dispute.
    #[arg(
        long = "dispute-window-secs",
        alias = "dispute-window",
        value_name = "SECS",
        default_value_t = 86_400
    )]
    dispute_window: u32,
    /// Seconds to appeal a ruling (0 makes rulings final at once).
    #[arg(
        long = "appeal-window-secs",
        alias = "appeal-window",
        value_name = "SECS",
        default_value_t = 86_400
    )]
    appeal_window: u32,
    /// Seconds the appeal arbiter has to rule on an appeal before the first
    /// ruling stands.
    #[arg(
        long = "appeal-ruling-window-secs",
        alias = "appeal-ruling-window",
        value_name = "SECS",
        default_value_t = 86_400
    )]
    appeal_ruling_window: u32,
}

impl DeployArgs {
    pub(crate) fn config(&self) -> DeployConfig {
        DeployConfig {
            dispute_window: self.dispute_window,
            appeal_window: self.appeal_window,
            appeal_ruling_window: self.appeal_ruling_window,
            ..DeployConfig::default()
        }
    }
}

impl Cli {
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbose
    }

    pub(crate) fn log_format(&self) -> LogFormat {
        self.log_format
    }

    /// Whether classification passes write their trace: not in a benchmark,
    /// where thousands of passes would time their own logging.
    pub(crate) fn classify_trace(&self) -> bool {
        !matches!(self.command, Command::Bench(_))
    }

    pub(crate) async fn run(self) -> Result<()> {
        match self.command {
            Command::Demo(chain) => {
                let outcome =
                    until_interrupted(Box::pin(tessera_stack::demo::run(&chain.options()))).await?;
                print!("{}", outcome.transcript);
            }
            Command::Chain { chain, block_time, deployment } => {
                let port = chain.port.unwrap_or(DEFAULT_CHAIN_PORT);
                let options = ChainOptions { block_time, ..chain.options() };
                let running = LocalChain::start(&ChainOptions {
                    port: (port != 0).then_some(port),
                    ..options
                })
                .wrap_err_with(|| {
                    format!("starting anvil on port {port} (--port 0 takes a free one)")
                })?;
                let actors = Actors::from_keys(&running.keys())?;
                let provider = actors.provider(running.endpoint_url());
                let record = deploy::deploy(&provider, &actors, &DeployConfig::default()).await?;
                deploy::register_demo_agents(&provider, &actors, record.agent_registry).await?;
                // Every service reading this file connects here unless told otherwise.
                let record = tessera_bindings::deployment::Deployment {
                    rpc_url: Some(running.endpoint_url().to_string()),
                    ws_url: Some(running.ws_endpoint()),
                    ..record
                };
                record.save(&deployment)?;
                let mining =
                    block_time.map_or("automine".to_owned(), |s| format!("a block every {s} s"));
                // The accounts past the roles' are nobody's yet: one for an agent of your own.
                let keys = running.keys();
                let spare: Vec<_> = keys
                    .iter()
                    .skip(5 + tessera_anvil::actors::AGENT_ACCOUNTS)
                    .take(2)
                    .map(|k| alloy::signers::local::PrivateKeySigner::from_signing_key(k.clone()))
                    .collect();
                let funds = tessera_bindings::usdc::Usdc::from_base_units(
                    DeployConfig::default().sponsor_funds.to::<u128>(),
                );
                print!("{}", crate::local::roles(&actors, &spare, funds));
                println!(
                    "anvil on {} (ws {}), chain id {}, {mining}; deployment written to {}. Ctrl-C to stop.",
                    running.endpoint_url(),
                    running.ws_endpoint(),
                    running.chain_id(),
                    deployment.display()
                );
                shutdown_signal().await;
                drop(running);
                println!("anvil stopped");
            }
            Command::Deploy(cmd) => crate::deploying::run(cmd).await?,
            Command::Worker(args) => run_worker(args).await?,
            Command::Serve(args) => crate::orchestrate::serve(args, shutdown_signal()).await?,
            Command::Plan(args) => crate::orchestrate::plan(args).await?,
            Command::Arbiter(cmd) => crate::arbitrate::run(cmd, shutdown_signal()).await?,
            Command::Indexer(cmd) => crate::index::run(cmd, shutdown_signal()).await?,
            Command::Tasks(cmd) => crate::index::tree(cmd).await?,
            Command::Agents(args) => crate::agents::run(args).await?,
            Command::Runs(RunsCommand::Show { id, api }) => {
                crate::orchestrate::show(&api, &id).await?;
            }
            Command::Runs(RunsCommand::List { state, limit, json, api }) => {
                crate::runs::list(&api, state.as_deref(), limit, json).await?;
            }
            Command::Runs(RunsCommand::Decide(cmd)) => {
                crate::runs::decide(cmd).await?;
            }
            Command::Bench(BenchCommand::Indexer {
                chain,
                lifecycles,
                live,
                indexer_log,
                hold_chain,
                json,
            }) => {
                let report = Box::pin(tessera_bench::indexer::run(
                    &chain.options(),
                    lifecycles,
                    live,
                    indexer_log.as_deref(),
                    hold_chain.as_deref(),
                ))
                .await?;
                show(&report.table(), json.as_deref(), &report)?;
            }
            Command::Bench(BenchCommand::Classify { rounds, json }) => {
                let report = tessera_bench::classify::run(rounds).await;
                show(&report.table(), json.as_deref(), &report)?;
            }
            Command::Bench(BenchCommand::Load {
                chain,
                plans,
                block_time,
                baseline,
                postgres,
                replicas,
                json,
            }) => {
                let cfg = tessera_bench::load::LoadBenchConfig {
                    plans: usize::try_from(plans).unwrap_or(usize::MAX),
                    block_time: (block_time > 0).then_some(block_time),
                    baseline: usize::try_from(baseline).unwrap_or(usize::MAX),
                    postgres,
                    replicas,
                };
                let report =
                    until_interrupted(Box::pin(tessera_bench::load::run(&chain.options(), &cfg)))
                        .await?;
                show(&report.table(), json.as_deref(), &report)?;
            }
            Command::Bench(BenchCommand::Failover {
                chain,
                postgres,
                replicas,
                kills,
                plans_per_wave,
                block_time,
                lease_ttl_ms,
                heartbeat_ms,
                seed,
                json,
            }) => {
                if heartbeat_ms >= lease_ttl_ms {
                    bail!("--lease-heartbeat-ms must be below --lease-ttl-ms");
                }
                let cfg = tessera_bench::failover::FailoverConfig {
                    replicas: usize::try_from(replicas).unwrap_or(usize::MAX),
                    kills: usize::try_from(kills).unwrap_or(usize::MAX),
                    plans_per_wave: usize::try_from(plans_per_wave).unwrap_or(usize::MAX),
                    postgres,
                    block_time: (block_time > 0).then_some(block_time),
                    lease_ttl_ms,
                    heartbeat_ms,
                    seed,
                    exe: None,
                };
                let report = until_interrupted(Box::pin(tessera_bench::failover::run(
                    &chain.options(),
                    &cfg,
                )))
                .await?;
                show(&report.table(), json.as_deref(), &report)?;
                if !report.passed() {
                    bail!("the failover trial failed a check (see above)");
                }
            }
            Command::Bench(BenchCommand::Plan {
                chain,
                steps,
                runs,
                block_time,
                timed_runs,
                json,
            }) => {
                let cfg = tessera_bench::plan::PlanBenchConfig {
                    steps,
                    runs,
                    block_time: (block_time > 0).then_some(block_time),
                    timed_runs: timed_runs.max(1),
                    hosted_seed: Some(tessera_bench::plan::HOSTED_SEED),
                };
                let report =
                    until_interrupted(Box::pin(tessera_bench::plan::run(&chain.options(), &cfg)))
                        .await?;
                show(&report.table(), json.as_deref(), &report)?;
            }
            Command::Bench(BenchCommand::Gas { chain, json }) => {
                let report = until_interrupted(Box::pin(async {
                    let running = LocalChain::start(&chain.options())?;
                    let actors = Actors::from_keys(&running.keys())?;
                    let provider = actors.provider(running.endpoint_url());
                    let record =
                        deploy::deploy(&provider, &actors, &DeployConfig::default()).await?;
                    Box::pin(tessera_anvil::gas::run(provider, &actors, &record)).await
                }))
                .await?;
                show(&report.table(), json.as_deref(), &report)?;
            }
        }
        Ok(())
    }
}

/// Writes a report as pretty JSON, creating the directory.
/// Prints a bench's `table` and, when asked, writes its report as JSON.
fn show(table: &str, json: Option<&std::path::Path>, report: &impl serde::Serialize) -> Result<()> {
    print!("{table}");
    match json {
        Some(path) => write_json(path, report),
        None => Ok(()),
    }
}

fn write_json(path: &std::path::Path, report: &impl serde::Serialize) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(report)? + "\n")
        .wrap_err_with(|| format!("writing {}", path.display()))?;
    println!("report written to {}", path.display());
    Ok(())
}

/// Registers the worker, then polls until Ctrl-C or SIGTERM. RPC failures are
/// logged and retried on the next tick; the chain is the worker's only state.
async fn run_worker(args: WorkerArgs) -> Result<()> {
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
    let ops = tessera_http::ops::Ops::new()
        .ready_when("chain", tessera_bindings::client::chain_ready(provider.clone()));
    let app = crate::serving::ops_and_blobs(ops, Arc::clone(sources.local()));
    let served = crate::serving::Served::bind(args.listen, "--listen", app).await?;
    let public = crate::serving::public_url(args.public_url, Some(served.addr()), "/blobs");
    println!(
        "blobs on http://{}/blobs (published as {}), metrics on /metrics",
        served.addr(),
        public.as_ref().map_or("no hint", |u| u.as_str())
    );
    let sources = sources.with_public_url(public);
    let worker_provider = provider.clone();
    let mut worker =
        Worker::new(provider, me, card, deployment.clone(), Arc::clone(sources.local()))
            .with_blob_sources(sources);
    match llm {
        Some(llm) => {
            println!("capabilities run through the LLM at {}", llm.endpoint.base_url);
            worker = worker.with_llm(&llm);
        }
        None => println!("the card's model is `offline`: built-in algorithms, no LLM calls"),
    }
    // A chain not reachable yet is waited for (/readyz answers 503 meanwhile).
    args.conn.check_chain(&worker_provider, &deployment).await?;
    let what = format!("registering {me} at {}", args.conn.rpc_url());
    let registration = crate::starting::until_reachable(&what, || worker.ensure_registered())
        .await
        .wrap_err(what)?;
    // Its ERC-8004 identity (when the deployment has the registries): the
    // card as the registration file, the wallet proven, the offer linked.
    let what = format!("registering {me}'s ERC-8004 identity");
    let identity = crate::starting::until_reachable(&what, || worker.ensure_identity(&signer))
        .await
        .wrap_err(what)?;
    match identity {
        Some(id) => println!("ERC-8004 agent id {} ({} changes sent)", id.agent_id, id.changes),
        None => println!("the deployment names no ERC-8004 identity registry"),
    }
    println!("worker {me} ({registration:?}); watching for tasks. Ctrl-C to stop.");
    let poll = std::time::Duration::from_millis(args.poll_ms.max(50));
    worker.run(args.conn.ws().as_deref(), poll, |h| println!("{h:?}"), shutdown_signal()).await;
    served.stop().await;
    println!("worker stopped");
    Ok(())
}

/// Runs `work`, abandoning it on Ctrl-C or SIGTERM; abandoning drops whatever
/// it owns, so an anvil it started is stopped either way.
async fn until_interrupted<T, E>(work: impl Future<Output = Result<T, E>>) -> Result<T>
where
    eyre::Report: From<E>,
{
    tokio::select! {
        out = work => Ok(out?),
        () = shutdown_signal() => eyre::bail!("interrupted"),
    }
}

/// The websocket URL anvil (and most nodes) serve beside an HTTP one.
pub(crate) fn ws_of(http: &Url) -> Option<String> {
    let s = http.as_str();
    s.strip_prefix("http://")
        .map(|rest| format!("ws://{rest}"))
        .or_else(|| s.strip_prefix("https://").map(|rest| format!("wss://{rest}")))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Logs to stderr in `format`; `RUST_LOG` overrides the verbosity flag.
/// With `classify_trace`, every classification pass also writes its trace.
pub(crate) fn init_tracing(verbose: u8, classify_trace: bool, format: LogFormat) {
    use tracing_subscriber::{
        Layer, filter::Targets, layer::SubscriberExt, util::SubscriberInitExt,
    };

    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Logs filtered by -v / RUST_LOG, as text or JSON lines; the
    // classifier's trace events always go to stderr as JSON lines, one per
    // event, so a pass can be followed (and parsed) whatever the verbosity.
    let human = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_writer(std::io::stderr).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    let human = human
        .with_filter(filter)
        .with_filter(tracing_subscriber::filter::filter_fn(|m| m.target() != "tessera::classify"));
    let trace = tracing_subscriber::fmt::layer().json().with_writer(std::io::stderr).with_filter(
        Targets::new().with_target(
            "tessera::classify",
            if classify_trace { tracing::Level::INFO } else { tracing::Level::ERROR },
        ),
    );
    tracing_subscriber::registry().with(human).with(trace).init();
}
