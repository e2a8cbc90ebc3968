//! Argument parsing and dispatch for the `tessera` binary.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use eyre::Result;

mod bench;
mod chain;
mod connection;
mod worker;

use self::{bench::BenchCommand, chain::ChainArgs, worker::WorkerArgs};
pub(crate) use self::{
    chain::DeployArgs,
    connection::{Connection, DEFAULT_RPC_URL, Limits},
};

/// Tessera: composite agent work, planned, approved and settled through an
/// on-chain escrow.
///
/// A brief becomes a plan of sub-tasks; each sub-task is a task in the escrow
/// that an executor agent accepts, runs and delivers, and each result flows
/// into the sub-tasks that need it. This one binary runs every part:
///
///   init      write the example cards and plans into a directory
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
    /// Write the example agent cards (workers/cards/) and plans (examples/)
    /// the quick starts use into a directory, the current one by default.
    Init(crate::init::InitArgs),
    /// Start a local chain, deploy and register the demo agents; run one task
    /// lifecycle printing each transaction, then plans through the
    /// orchestrator and workers, each party at a home of its own (a chain, a
    /// nested plan, a delegation, a dispute, a plan between homes with a
    /// decline on chain), with each plan's lineage from the indexer; the
    /// chain is stopped at the end.
    Demo(ChainArgs),
    /// Start a local chain with the contracts deployed and demo agents
    /// registered, write the deployment file, and keep running until Ctrl-C.
    #[command(args_conflicts_with_subcommands = true)]
    Chain {
        /// `advance`: move a running local chain's clock instead.
        #[command(subcommand)]
        action: Option<chain::ChainAction>,
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
    /// Show a run: its plan card, each sub-task's progress and output (cut
    /// for a glance: `runs output` gives one whole), and each ruling with
    /// who ruled and why.
    #[command(after_help = crate::client::EXIT_CODES)]
    Show {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        id: String,
        /// Print the run's view as JSON (each sub-task's output whole, and
        /// `rulings`: index, kind, executor_share_bps, by, rationale).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        api: crate::orchestrate::ApiArgs,
    },
    /// Write one sub-task's output whole: what its executor delivered, as
    /// the run hands it on.
    #[command(after_help = crate::client::EXIT_CODES)]
    Output {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        id: String,
        /// The sub-task's index in the plan.
        index: u32,
        /// Write it into this file instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print it as JSON instead: run, index, attempt, phase, executor,
        /// task_id, result_uri and the output whole.
        #[arg(long, conflicts_with = "output")]
        json: bool,
        #[command(flatten)]
        api: crate::orchestrate::ApiArgs,
    },
    /// Operator mode: revoke, on chain, the grant that funds one of your
    /// runs (`revokeGrant` from the sponsor's own key, TESSERA_SPONSOR_KEY
    /// or --keystore): the operator can create no more of its tasks; what
    /// is already escrowed settles or is refunded to you.
    #[command(after_help = crate::client::EXIT_CODES)]
    RevokeGrant {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        id: String,
        /// JSON-RPC endpoint the revocation is sent through.
        #[arg(long, env = "TESSERA_RPC_URL")]
        rpc_url: String,
        #[command(flatten)]
        api: crate::orchestrate::ApiArgs,
    },
    #[command(flatten)]
    Decide(crate::runs::DecideCommand),
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
            Command::Init(args) => crate::init::run(&args)?,
            Command::Demo(chain) => {
                let outcome =
                    until_interrupted(Box::pin(tessera_stack::demo::run(&chain.options()))).await?;
                print!("{}", outcome.transcript);
            }
            Command::Chain { action: Some(action), .. } => chain::act(action).await?,
            Command::Chain { action: None, chain, block_time, deployment } => {
                chain::run(&chain, block_time, &deployment).await?;
            }
            Command::Deploy(cmd) => crate::deploying::run(cmd).await?,
            Command::Worker(args) => worker::run(args).await?,
            Command::Serve(args) => crate::orchestrate::serve(args, shutdown_signal()).await?,
            Command::Plan(args) => crate::orchestrate::plan(args).await?,
            Command::Arbiter(cmd) => crate::arbitrate::run(cmd, shutdown_signal()).await?,
            Command::Indexer(cmd) => crate::index::run(cmd, shutdown_signal()).await?,
            Command::Tasks(cmd) => crate::index::tree(cmd).await?,
            Command::Agents(args) => crate::agents::run(args).await?,
            Command::Runs(RunsCommand::Show { id, json, api }) => {
                crate::work::show(&api, &id, json).await?;
            }
            Command::Runs(RunsCommand::Output { id, index, output, json, api }) => {
                let to = match (json, output) {
                    (true, _) => crate::work::OutputTo::Json,
                    (false, Some(file)) => crate::work::OutputTo::File(file),
                    (false, None) => crate::work::OutputTo::Stdout,
                };
                crate::work::output(&api, &id, index, to).await?;
            }
            Command::Runs(RunsCommand::List { state, limit, json, api }) => {
                crate::runs::list(&api, state.as_deref(), limit, json).await?;
            }
            Command::Runs(RunsCommand::RevokeGrant { id, rpc_url, api }) => {
                let client = crate::client::Client::connect(&api).await?;
                let Some((signer, _)) = client.sponsor.clone() else {
                    eyre::bail!(
                        "revoking a grant needs the sponsor's key (TESSERA_SPONSOR_KEY or --keystore) and an operator-mode orchestrator"
                    );
                };
                crate::sponsor::revoke(&client, signer, &rpc_url, &id).await?;
            }
            Command::Runs(RunsCommand::Decide(cmd)) => {
                crate::runs::decide(cmd).await?;
            }
            Command::Bench(cmd) => cmd.run().await?,
        }
        Ok(())
    }
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
