//! `tessera bench …`: the benchmarks, each printing its table and, when
//! asked, writing its report as JSON.

use std::path::PathBuf;

use clap::Subcommand;
use eyre::{Context, Result, bail};
use tessera_anvil::{
    actors::Actors,
    chain::LocalChain,
    deploy::{self, DeployConfig},
};

use super::{chain::ChainArgs, until_interrupted};

#[derive(Debug, Subcommand)]
pub(super) enum BenchCommand {
    /// Receipt gas of every lifecycle path on a fresh local chain.
    Gas {
        #[command(flatten)]
        chain: ChainArgs,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// N task lifecycles on anvil, then the indexer binary's backfill
    /// throughput (SQLite, PostgreSQL), live lag p50/p99, webhook delivery
    /// lag p50/p99, GraphQL query latency p50/p99 on the full index and
    /// peak RSS.
    Indexer {
        #[command(flatten)]
        chain: ChainArgs,
        /// Lifecycles to generate.
        #[arg(long, default_value_t = 50_000)]
        lifecycles: usize,
        /// Tasks created one by one to measure the live lag and the
        /// webhook delivery lag.
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
        /// Only the rows through the stand-in hosted provider (on
        /// --block-time blocks): no automine chain, no baseline.
        #[arg(long)]
        hosted_only: bool,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

impl BenchCommand {
    /// Runs the benchmark.
    pub(super) async fn run(self) -> Result<()> {
        match self {
            Self::Indexer { chain, lifecycles, live, indexer_log, hold_chain, json } => {
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
            Self::Classify { rounds, json } => {
                let report = tessera_bench::classify::run(rounds).await;
                show(&report.table(), json.as_deref(), &report)?;
            }
            Self::Load { chain, plans, block_time, baseline, postgres, replicas, json } => {
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
            Self::Failover {
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
            } => {
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
            Self::Plan { chain, steps, runs, block_time, timed_runs, hosted_only, json } => {
                if hosted_only && block_time == 0 {
                    bail!("--hosted-only needs timed blocks: a --block-time above 0");
                }
                let cfg = tessera_bench::plan::PlanBenchConfig {
                    steps,
                    runs,
                    block_time: (block_time > 0).then_some(block_time),
                    timed_runs: timed_runs.max(1),
                    hosted_seed: Some(tessera_bench::plan::HOSTED_SEED),
                    hosted_only,
                };
                let report =
                    until_interrupted(Box::pin(tessera_bench::plan::run(&chain.options(), &cfg)))
                        .await?;
                show(&report.table(), json.as_deref(), &report)?;
            }
            Self::Gas { chain, json } => {
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
