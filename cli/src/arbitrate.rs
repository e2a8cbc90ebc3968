//! `tessera arbiter`: the arbiter service and the appeal arbiter's commands.

use std::{sync::Arc, time::Duration};

use alloy::{network::EthereumWallet, primitives::U256, signers::local::PrivateKeySigner};
use clap::{Args, Subcommand, ValueEnum};
use eyre::{Context, Result, bail, eyre};
use tessera_arbiter::{
    Arbiter, Judge, Verdict, VerdictKind,
    service::{appeals, decide_appeal},
    store::{ArbiterStore, Level},
};
use tessera_bindings::{
    client::{EscrowClient, connect},
    envelope::{BlobUrl, FsBlobStore},
    task::TaskRecord,
};

use tessera_http::tasks::Tasks;

/// Where the arbiter works.
#[derive(Debug, Args)]
pub(crate) struct ArbiterChain {
    #[command(flatten)]
    conn: crate::cli::Connection,
    /// Decision store: sqlite://<file> or postgres://…
    #[arg(
        long,
        env = "TESSERA_ARBITER_DATABASE_URL",
        default_value = "sqlite://.tessera/arbiter.db"
    )]
    database_url: String,
}

/// Where the arbiter answers operators, if anywhere.
#[derive(Debug, Args)]
pub(crate) struct OpsArgs {
    /// Serve /metrics (Prometheus), /healthz and /readyz (decision store and
    /// chain answer), and the rationales at /blobs/{hash}, on this address,
    /// e.g. 127.0.0.1:9102; none by default.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Base URL others fetch the arbiter's rationales from, put in their URIs (default: http://<--metrics-addr>/blobs; no hint without a server).
    #[arg(long, value_name = "URL", value_parser = crate::serving::parse_blob_url)]
    public_url: Option<BlobUrl>,
}

/// `tessera arbiter …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ArbiterCommand {
    /// Watch for disputes and rule on them with the arbiter key
    /// (TESSERA_ARBITER_KEY); finalize rulings after their appeal window.
    /// The council judge is used when TESSERA_LLM_API_KEY / OPENAI_API_KEY is
    /// set, the offline rubric otherwise.
    Run {
        #[command(flatten)]
        chain: ArbiterChain,
        /// Milliseconds between looks when no block is announced.
        #[arg(long, default_value_t = 1000)]
        poll_ms: u64,
        #[command(flatten)]
        ops: OpsArgs,
    },
    /// The arbiter's recorded decisions.
    Decisions {
        #[command(flatten)]
        chain: ArbiterChain,
        /// Print them as JSON (`decisions`: task_id, level, verdict,
        /// share_bps, rationale_uri, judge, body, tx_hash) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Appeals, for the appeal arbiter.
    #[command(subcommand)]
    Appeals(AppealsCommand),
}

/// `tessera arbiter appeals …`.
#[derive(Debug, Subcommand)]
pub(crate) enum AppealsCommand {
    /// Watch for appeals and rule on them finally with the appeal arbiter key
    /// (TESSERA_APPEAL_ARBITER_KEY): the council judge with an LLM key (it
    /// sees the ruling appealed and the appellant's reason), the offline
    /// rubric otherwise (it judges the same work again, so it upholds the
    /// ruling). May share the arbiter's decision store.
    Run {
        #[command(flatten)]
        chain: ArbiterChain,
        /// Milliseconds between looks when no block is announced.
        #[arg(long, default_value_t = 1000)]
        poll_ms: u64,
        #[command(flatten)]
        ops: OpsArgs,
    },
    /// Tasks under appeal, with the first ruling.
    List {
        #[command(flatten)]
        chain: ArbiterChain,
        /// Print them as JSON (`appeals`: task_id, plan_id, amount,
        /// executor_share_bps, executor, client, funder, appealed_at,
        /// rule_by) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Decide an appeal finally, with the appeal arbiter key (TESSERA_APPEAL_ARBITER_KEY).
    Decide {
        /// The task id (decimal or 0x-hex).
        task: String,
        /// Who the final ruling favours.
        #[arg(long, value_enum)]
        verdict: CliVerdict,
        /// Executor's share in basis points, for a split (1..=9999).
        #[arg(long)]
        share_bps: Option<u16>,
        /// Why, published with the ruling.
        #[arg(long, default_value = "Decided on appeal.")]
        rationale: String,
        #[command(flatten)]
        chain: ArbiterChain,
    },
}

/// A verdict on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum CliVerdict {
    /// Pay the executor in full.
    Worker,
    /// Refund the funder in full.
    Client,
    /// Split at --share-bps.
    Split,
}

fn key(var: &str, role: &str) -> Result<PrivateKeySigner> {
    let k = std::env::var(var).map_err(|_| eyre!("set {var} to the {role}'s private key (hex)"))?;
    k.trim().parse().map_err(|_| eyre!("{var} is not a hex private key"))
}

pub(crate) async fn run(cmd: ArbiterCommand, shutdown: impl Future<Output = ()>) -> Result<()> {
    match cmd {
        ArbiterCommand::Run { chain, poll_ms, ops } => {
            Box::pin(serve(Level::Dispute, chain, poll_ms, ops, shutdown)).await?;
        }
        ArbiterCommand::Appeals(AppealsCommand::Run { chain, poll_ms, ops }) => {
            Box::pin(serve(Level::Appeal, chain, poll_ms, ops, shutdown)).await?;
        }
        ArbiterCommand::Decisions { chain, json } => {
            let store = ArbiterStore::connect(&chain.database_url).await?;
            let decisions = store.all().await?;
            if json {
                let doc = serde_json::json!({ "decisions": decisions });
                println!("{}", serde_json::to_string_pretty(&doc)?);
                return Ok(());
            }
            for d in decisions {
                println!(
                    "task {} {:<7} {:<6} {:>5} bps  {:<16} {}",
                    d.task_id,
                    d.level,
                    d.verdict,
                    d.share_bps,
                    d.judge,
                    d.tx_hash.as_deref().unwrap_or("(not sent)")
                );
            }
        }
        ArbiterCommand::Appeals(AppealsCommand::List { chain, json }) => {
            let deployment = chain.conn.deployment()?;
            let provider = connect(chain.conn.rpc_url(), EthereumWallet::default());
            let escrow = EscrowClient::new(provider.clone(), deployment.task_escrow);
            let list = appeals(&escrow, &deployment).await?;
            if json {
                let doc = serde_json::json!({ "appeals": list.iter().map(appeal_json).collect::<Vec<_>>() });
                println!("{}", serde_json::to_string_pretty(&doc)?);
                return Ok(());
            }
            if list.is_empty() {
                println!("no task is under appeal");
            }
            for rec in list {
                println!(
                    "task {}  amount {}  first ruling {} bps to the executor  executor {}  client {}",
                    rec.id,
                    rec.task.amount,
                    rec.task.executorShareBps,
                    rec.task.executor,
                    rec.task.client
                );
            }
        }
        ArbiterCommand::Appeals(AppealsCommand::Decide {
            task,
            verdict,
            share_bps,
            rationale,
            chain,
        }) => {
            let id: U256 = task.parse().map_err(|_| eyre!("{task:?} is not a task id"))?;
            let kind = match verdict {
                CliVerdict::Worker => VerdictKind::Worker,
                CliVerdict::Client => VerdictKind::Client,
                CliVerdict::Split => VerdictKind::Split,
            };
            let share = match (kind, share_bps) {
                (VerdictKind::Split, Some(s)) if (1..10_000).contains(&s) => s,
                (VerdictKind::Split, _) => bail!("a split needs --share-bps between 1 and 9999"),
                (_, Some(_)) => bail!("--share-bps applies to a split only"),
                (_, None) => 0,
            };
            let signer = key("TESSERA_APPEAL_ARBITER_KEY", "appeal arbiter")?;
            let me = signer.address();
            let deployment = chain.conn.deployment()?;
            let provider = connect(chain.conn.rpc_url(), EthereumWallet::new(signer));
            let escrow = EscrowClient::new(provider, deployment.task_escrow);
            let store = ArbiterStore::connect(&chain.database_url).await?;
            let verdict = Verdict::new(kind, share, rationale, "appeal-arbiter");
            let blobs = FsBlobStore::new(&chain.conn.blobs);
            let tx =
                decide_appeal(&escrow, me, &deployment, id, &verdict, &blobs, Some(&store)).await?;
            println!(
                "appeal on task {id} decided: {:?} ({} bps) in {tx}",
                verdict.verdict, verdict.executor_share_bps
            );
        }
    }
    Ok(())
}

/// A task under appeal as `appeals list --json` prints it: ids and amount
/// as decimal strings, the first ruling's share, the parties, when it was
/// appealed and by when the appeal arbiter must rule (unix seconds).
fn appeal_json(rec: &TaskRecord) -> serde_json::Value {
    let t = &rec.task;
    let appealed_at: u64 = t.updatedAt.to();
    serde_json::json!({
        "task_id": rec.id.to_string(),
        "plan_id": rec.plan_id,
        "parent_id": rec.parent_id.to_string(),
        "amount": t.amount.to_string(),
        "executor_share_bps": t.executorShareBps,
        "executor": t.executor,
        "client": t.client,
        "funder": t.funder,
        "appealed_at": appealed_at,
        "rule_by": appealed_at + u64::from(t.appealRulingWindow),
        "spec_uri": rec.spec_uri,
        "result_uri": rec.result_uri,
    })
}

/// Runs the arbiter ruling at `level` (the arbiter or the appeal arbiter)
/// until `shutdown`, printing each action as a JSON line; with
/// `--metrics-addr`, answers operators there meanwhile.
async fn serve(
    level: Level,
    chain: ArbiterChain,
    poll_ms: u64,
    ops: OpsArgs,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let (var, role) = match level {
        Level::Dispute => ("TESSERA_ARBITER_KEY", "arbiter"),
        Level::Appeal => ("TESSERA_APPEAL_ARBITER_KEY", "appeal arbiter"),
    };
    let signer = key(var, role)?;
    let me = signer.address();
    let deployment = chain.conn.deployment()?;
    let provider = connect(chain.conn.rpc_url(), EthereumWallet::new(signer));
    let sources = chain.conn.blob_sources();
    let judge_name = match Judge::from_env() {
        Judge::Offline => "offline rubric",
        Judge::Council(_) => "council (LLM)",
    };
    let blobs = Arc::clone(sources.local());
    // Until the store and the chain answer (each waited for with backoff),
    // --metrics-addr serves /healthz and a /readyz that says 503.
    let listener = match ops.metrics_addr {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .wrap_err_with(|| format!("listening on {addr} (--metrics-addr)"))?,
        ),
        None => None,
    };
    let what = format!("reaching the escrow through {}", chain.conn.rpc_url());
    let start = || {
        let (provider, deployment, what) = (provider.clone(), deployment.clone(), what.clone());
        let (conn, url, blobs) = (&chain.conn, &chain.database_url, Arc::clone(&blobs));
        async move {
            let store = crate::starting::until_reachable("opening the decision store", || {
                ArbiterStore::connect(url)
            })
            .await
            .wrap_err("opening the decision store")?;
            conn.check_chain(&provider, &deployment).await?;
            let arbiter = crate::starting::until_reachable(&what, || {
                let (provider, deployment, store) =
                    (provider.clone(), deployment.clone(), store.clone());
                let (judge, blobs) = (Judge::from_env(), Arc::clone(&blobs));
                async move {
                    match level {
                        Level::Dispute => {
                            Arbiter::new(provider, me, deployment, store, judge, blobs).await
                        }
                        Level::Appeal => {
                            Arbiter::appeal_arbiter(provider, me, deployment, store, judge, blobs)
                                .await
                        }
                    }
                }
            })
            .await
            .wrap_err(what)?;
            eyre::Ok((store, arbiter))
        }
    };
    let ((store, arbiter), listener) = match listener {
        Some(listener) => {
            let (started, listener) =
                crate::starting::while_starting(listener, provider.clone(), start).await?;
            (started?, Some(listener))
        }
        None => (start().await?, None),
    };
    let mut tasks = Tasks::new();
    let bound = match listener {
        Some(listener) => Some(serve_ops(
            &mut tasks,
            listener,
            store,
            provider.clone(),
            Arc::clone(sources.local()),
        )?),
        None => None,
    };
    let public = crate::serving::public_url(ops.public_url, bound, "/blobs");
    let sources = sources.with_public_url(public);
    let mut arbiter = arbiter.with_blob_sources(sources);
    println!("{role} {me} ruling with the {judge_name}. Ctrl-C to stop.");
    let (ws, stop) = (chain.conn.ws(), tasks.root().clone().cancelled_owned());
    tasks.spawn_critical("arbiter", async move {
        arbiter
            .run(
                ws.as_deref(),
                Duration::from_millis(poll_ms.max(50)),
                |a| println!("{}", serde_json::to_string(a).unwrap_or_default()),
                stop,
            )
            .await;
    });
    crate::serving::supervise(tasks, shutdown).await?;
    println!("{role} stopped");
    Ok(())
}

/// Serves the ops routes on `listener` as the critical task `ops` of
/// `tasks`, ready when `store` answers `SELECT 1`, `provider`
/// `eth_blockNumber` and every critical task runs, and the arbiter's
/// blobs (its rationales) at `/blobs/{hash}`; the address bound.
fn serve_ops(
    tasks: &mut Tasks,
    listener: tokio::net::TcpListener,
    store: ArbiterStore,
    provider: alloy::providers::DynProvider,
    blobs: Arc<dyn tessera_bindings::envelope::BlobStore + Send + Sync>,
) -> Result<std::net::SocketAddr> {
    let ops = tessera_http::ops::Ops::with_metrics(&[tessera_arbiter::metrics::METRICS])
        .ready_when("database", move || {
            let store = store.clone();
            async move { store.ping().await.map_err(|e| e.to_string()) }
        })
        .ready_when("chain", tessera_bindings::client::chain_ready(provider))
        .ready_when("tasks", tasks.health().check());
    let addr = listener.local_addr()?;
    crate::serving::serve_in(tasks, "ops", listener, crate::serving::ops_and_blobs(ops, blobs));
    println!("metrics on http://{addr}/metrics, blobs on http://{addr}/blobs");
    Ok(addr)
}
