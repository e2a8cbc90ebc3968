//! The load bench (`make bench-load`): many plans at once through real
//! `tessera serve` processes, with the offline demo workers, on anvil —
//! automine and a chain with block time.
//!
//! Each replica is the running executable's own `serve` command, talking
//! to the chain through a counting JSON-RPC proxy, so its requests, peak
//! RSS and CPU time are its own. The plans (a mix of 3-step chains and
//! 1 → 2 fan-outs) are proposed and approved through the HTTP API; each
//! plan's latency runs from its approval to the moment its run turned
//! `completed` (the run row's own timestamp). The baseline, measured on the
//! same chain first, is the floor of the same work: lifecycles (create,
//! accept, deliver, approve) sent back to back by one process through the
//! bindings, with no orchestrator and no workers.
//!
//! Several replicas need the lane leases of `tessera serve --replica` on
//! PostgreSQL; one replica runs on SQLite or PostgreSQL.
//!
//! Every phase (a chain started and deployed, a baseline, a round) prints a
//! line on stderr when it starts and when it ends, with its time and the
//! bench's ([`crate::progress`]), and a line every
//! [`crate::progress::EVERY`] while it lasts: the baseline on 2-second
//! blocks alone takes minutes (four blocks per lifecycle, one after the
//! other). Every wait in it is bounded: a transaction's receipt by the
//! sender (dropped or timed out), each HTTP call by [`HTTP_TIMEOUT`], a
//! round by [`ROUND_TIMEOUT`].

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use alloy::signers::local::PrivateKeySigner;
use alloy::{primitives::Address, providers::Provider};
use eyre::{Result, bail, eyre};
use serde_json::{Value, json};
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, Endpoints, LocalChain},
    deploy::{self, DEMO_AGENTS, DeployConfig},
    lifecycle::{Driver, spec_of_len},
};
use tessera_bindings::{MockUSDC, deployment::Deployment, envelope::FsBlobStore};
use tessera_orchestrator::{plan::Plan, state::RunState};
use tessera_stack::spawn_worker;

mod api;
mod contention;
mod report;

pub(crate) use api::{TOKEN, post, wait_ready, wait_up};
pub use report::{LoadBenchReport, LoadRow};

use crate::{
    percentile,
    process::{Running, cpu_secs, peak_rss_mib, spawn_listening},
    progress::Progress,
    rpc_proxy::RpcProxy,
};

/// How long one call to a replica's HTTP API may take.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a round waits for its plans to complete.
pub const ROUND_TIMEOUT: Duration = Duration::from_secs(1800);

/// What to measure.
#[derive(Debug, Clone)]
pub struct LoadBenchConfig {
    /// Plans per round (half chains, half fan-outs, three sub-tasks each).
    pub plans: usize,
    /// Seconds between blocks of the second chain; `None` skips it.
    pub block_time: Option<u64>,
    /// Lifecycles of the direct baseline (its rate is what counts).
    pub baseline: usize,
    /// A PostgreSQL server URL to make scratch databases on: the full
    /// round is also run there with each number of `replicas` (skipped,
    /// with the reason printed, when the server does not answer).
    pub postgres: Option<String>,
    /// Replicas of the PostgreSQL rounds, each with a sponsor key (a
    /// lane) of its own; at most [`MAX_REPLICAS`].
    pub replicas: Vec<usize>,
}

/// The most replicas a round runs (one funded sponsor key each).
pub const MAX_REPLICAS: usize = 4;

impl Default for LoadBenchConfig {
    fn default() -> Self {
        Self {
            plans: 200,
            block_time: Some(2),
            baseline: 60,
            postgres: None,
            replicas: vec![1, 2, 3],
        }
    }
}

/// The plan of number `i` in a round: even numbers a 3-step chain
/// (summarize → tone → entities), odd ones a fan-out (summarize, then tone
/// and entities of it side by side).
pub(crate) fn plan_json(label: &str, i: usize, agents: &Agents) -> Value {
    let step = |index: u32, cap: &str, exec: Address, cost: u64, deps: &[u32]| {
        json!({"index": index, "capability": cap, "spec": format!("{cap} the material"),
               "executor": exec, "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps})
    };
    let second_on: &[u32] = if i.is_multiple_of(2) { &[1] } else { &[0] };
    json!({
        "version": 1,
        "id": Plan::id_from_label(&format!("bench-load-{label}-{}-{i}", std::process::id())),
        "review": "auto",
        "budget": 5_000_000u64,
        "source": "The harbour reopened on Tuesday after the storm. Traders asked for compensation. \
                   The port authority promised new breakwaters before winter.",
        "subtasks": [
            step(0, "summarize", agents.summarizer, 400_000, &[]),
            step(1, "sentiment-classify", agents.sentiment, 200_000, &[0]),
            step(2, "extract-entities", agents.extractor, 250_000, second_on),
        ],
    })
}

/// The demo agents the plans hire.
pub(crate) struct Agents {
    pub(crate) summarizer: Address,
    pub(crate) sentiment: Address,
    pub(crate) extractor: Address,
}

/// A chain with the contracts and the demo agents, and its direct rate.
pub(crate) struct Bench {
    pub(crate) chain: LocalChain,
    pub(crate) actors: Actors,
    pub(crate) deployment: Deployment,
    pub(crate) dir: PathBuf,
    /// One sponsor key per replica (the first is the actors' sponsor),
    /// each funded with tokens.
    pub(crate) sponsors: Vec<PrivateKeySigner>,
    /// The `tessera` executable the replicas run.
    pub(crate) exe: PathBuf,
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Bench {
    pub(crate) async fn start(opts: &ChainOptions, label: &str) -> Result<Self> {
        // The roles' accounts, then one more sponsor per extra replica.
        let roles = 5 + tessera_anvil::actors::AGENT_ACCOUNTS;
        let accounts = u32::try_from(roles + MAX_REPLICAS - 1)?;
        let opts = ChainOptions {
            accounts: Some(opts.accounts.unwrap_or(0).max(accounts)),
            // Automine mines each transaction in a block of its own, so a
            // batch of creations alone fills a block and raises the base
            // fee 12.5 %: a fee market no chain shows for this load. Fixed
            // there; a chain with block time keeps its fee market.
            base_fee: opts.base_fee.or(opts.block_time.is_none().then_some(0)),
            ..opts.clone()
        };
        let chain = LocalChain::start(&opts)?;
        let keys = chain.keys();
        let actors = Actors::from_keys(&keys)?;
        let direct = actors.provider(chain.endpoint_url());
        let config = DeployConfig::default();
        let deployment = deploy::deploy(&direct, &actors, &config).await?;
        deploy::register_demo_agents(&direct, &actors, deployment.agent_registry).await?;
        let mut sponsors = vec![actors.sponsor.clone()];
        let token = MockUSDC::new(deployment.token, &direct);
        for key in &keys[roles..roles + MAX_REPLICAS - 1] {
            let sponsor = PrivateKeySigner::from_signing_key(key.clone());
            let mint = token.mint(sponsor.address(), config.sponsor_funds);
            let sent = mint.from(actors.deployer.address()).send().await;
            deploy::confirm(sent, "funding a sponsor").await?;
            sponsors.push(sponsor);
        }
        let dir =
            std::env::temp_dir().join(format!("tessera-bench-load-{label}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("blobs"))?;
        deployment.save(dir.join("deployment.json")).map_err(|e| eyre!("{e}"))?;
        Ok(Self { chain, actors, deployment, dir, sponsors, exe: std::env::current_exe()? })
    }

    /// `n` lifecycles sent back to back; lifecycles per second. Says how
    /// far it is every [`crate::progress::EVERY`] through `progress`.
    async fn baseline(&self, n: usize, mut progress: crate::progress::Phase) -> Result<f64> {
        let direct = self.actors.provider(self.chain.endpoint_url());
        let mut d = Driver::new(direct, &self.actors, &self.deployment);
        d.scenario("baseline".to_owned());
        let started = Instant::now();
        for i in 0..n {
            progress.tick(|| format!("{i} of {n} lifecycles"));
            let params = d.params(self.actors.agent(1), 400_000, spec_of_len(200)).await?;
            let mut rec = d.create_with_permit(params).await?;
            d.deliver(&mut rec, "data:application/json,{\"text\":\"done\"}").await?;
            d.escrow.approve(self.actors.client.address(), &mut rec).await?;
        }
        Ok(n as f64 / started.elapsed().as_secs_f64())
    }

    /// Starts `tessera serve` on `db` behind `rpc` (a counting proxy) with
    /// sponsor key `sponsor`; `replica` for replica mode (PostgreSQL).
    pub(crate) fn serve(
        &self,
        db: &str,
        rpc: &str,
        replica: bool,
        sponsor: usize,
    ) -> Result<(Running, String)> {
        self.serve_with(db, rpc, replica, sponsor, &[])
    }

    /// [`Self::serve`] with `extra` arguments.
    pub(crate) fn serve_with(
        &self,
        db: &str,
        rpc: &str,
        replica: bool,
        sponsor: usize,
        extra: &[&str],
    ) -> Result<(Running, String)> {
        let key = format!("0x{}", alloy::hex::encode(self.sponsors[sponsor].to_bytes()));
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--no-index"])
            .arg("--deployment")
            .arg(self.dir.join("deployment.json"))
            .arg("--blobs")
            .arg(self.dir.join("blobs"))
            .args(["--rpc-url", rpc, "--ws-url", &self.chain.ws_endpoint()])
            .args(["--database-url", db, "--decision-timeout-secs", "3600"])
            .args(["--max-streams", "4096"])
            .env("TESSERA_SPONSOR_KEY", key)
            .env("TESSERA_API_TOKEN", TOKEN)
            .env("RUST_LOG", std::env::var("TESSERA_BENCH_LOG").unwrap_or_else(|_| "warn".into()))
            .stderr(match std::env::var_os("TESSERA_BENCH_SERVE_LOG") {
                Some(path) => std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_or_else(|_| Stdio::null(), Stdio::from),
                None => Stdio::null(),
            });
        if replica {
            cmd.arg("--replica");
        }
        cmd.args(extra);
        spawn_listening(cmd, "orchestrator")
    }
}

/// A scratch PostgreSQL database on `admin`'s server.
pub(crate) async fn scratch(admin: &str) -> Result<String> {
    tessera_db::create_scratch_database(admin, "bench_load")
        .await
        .map_err(|e| eyre!("no scratch database at {admin}: {e}"))
}

/// Size of the run store, MiB: the SQLite file and its write-ahead log, or
/// the PostgreSQL database.
async fn db_mib(db: &str, dir: &Path) -> f64 {
    if db.starts_with("sqlite:") {
        let size = |name: &str| std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
        return (size("runs.db") + size("runs.db-wal")) as f64 / 1_048_576.0;
    }
    let Ok(pool) = sqlx::PgPool::connect(db).await else { return 0.0 };
    let size: Result<(i64,), _> =
        sqlx::query_as("SELECT CAST(pg_database_size(current_database()) AS BIGINT)")
            .fetch_one(&pool)
            .await;
    size.map_or(0.0, |(bytes,)| bytes as f64 / 1_048_576.0)
}

/// One round of `plans` plans through one replica on `bench`'s chain.
/// One round: `plans` plans through `replicas` replicas (each its own
/// sponsor lane; the plans dealt out in turn), on SQLite or, with
/// `postgres`, a scratch database there.
async fn round(
    bench: &Bench,
    mode: &str,
    plans: usize,
    baseline_per_sec: f64,
    postgres: Option<&str>,
    replicas: usize,
    mut progress: crate::progress::Phase,
) -> Result<LoadRow> {
    let http = reqwest::Client::builder().timeout(HTTP_TIMEOUT).build()?;
    let (db, store) = match postgres {
        Some(admin) => (scratch(admin).await?, "postgres"),
        None if replicas > 1 => bail!("several replicas need PostgreSQL"),
        None => {
            let file = bench.dir.join("runs.db");
            let _ = std::fs::remove_file(&file);
            let _ = std::fs::remove_file(bench.dir.join("runs.db-wal"));
            (format!("sqlite://{}", file.display()), "sqlite")
        }
    };
    let proxy =
        RpcProxy::start(bench.chain.endpoint_url()).await.map_err(|e| eyre!("rpc proxy: {e}"))?;
    let mut procs = Vec::with_capacity(replicas);
    let mut apis = Vec::with_capacity(replicas);
    for r in 0..replicas {
        let (child, api) = bench.serve(&db, proxy.url().as_str(), postgres.is_some(), r)?;
        wait_up(&http, &api).await?;
        procs.push(child);
        apis.push(api);
    }
    // Each replica holds its lane before the clock starts.
    for api in &apis {
        wait_ready(&http, api).await?;
    }
    // What the replicas contend over from here: lease takeovers, and the
    // run store's sessions waiting on a lock (PostgreSQL).
    let takeovers = async |apis: &[String]| -> Result<u64> {
        let mut n = 0;
        for api in apis {
            n += contention::takeovers(&http, api).await?;
        }
        Ok(n)
    };
    let takeovers0 = takeovers(&apis).await?;
    let sampler = match postgres {
        Some(_) => Some(contention::LockSampler::start(&db).await?),
        None => None,
    };
    let api = apis[0].clone();

    let agents = Agents {
        summarizer: bench.actors.agent(1),
        sentiment: bench.actors.agent(3),
        extractor: bench.actors.agent(4),
    };
    // A plan id names its escrow references: each round's are its own.
    let label = format!("{mode}-{plans}-{store}-{replicas}");
    let bodies: Vec<Value> = (0..plans).map(|i| plan_json(&label, i, &agents)).collect();
    // Plan i belongs to replica i mod n: its sponsor funds it.
    let api_of = |i: usize| &apis[i % replicas];
    for (i, body) in bodies.iter().enumerate() {
        post(&http, format!("{}/api/plans", api_of(i)), Some(body)).await?;
    }
    let direct = bench.actors.provider(bench.chain.endpoint_url());
    let block0 = direct.get_block_number().await?;
    let counts0 = proxy.counts();
    let cpu = || procs.iter().map(|p| cpu_secs(p.pid())).sum::<f64>();
    let cpu0 = cpu();
    let started = Instant::now();
    let started_ms = now_ms();
    let mut approved_at: HashMap<String, i64> = HashMap::new();
    for (i, body) in bodies.iter().enumerate() {
        let id = body["id"].as_str().unwrap_or_default().to_owned();
        post(&http, format!("{}/api/runs/{id}/approve", api_of(i)), None).await?;
        approved_at.insert(id, now_ms());
    }
    // The completed runs once a second: each one's own timestamp says when
    // it completed. A failed or cancelled one ends the bench.
    let deadline = Instant::now() + ROUND_TIMEOUT;
    let list = |state: RunState| {
        let url = format!("{api}/api/runs?state={}&limit=1000", state.as_str());
        let http = http.clone();
        async move {
            let body: Value = http.get(url).send().await?.json().await?;
            Ok::<_, eyre::Report>(body["runs"].as_array().cloned().unwrap_or_default())
        }
    };
    let done: HashMap<String, i64> = loop {
        for state in [RunState::Failed, RunState::Cancelled] {
            if let Some(r) = list(state)
                .await?
                .iter()
                .find(|r| approved_at.contains_key(r["id"].as_str().unwrap_or("")))
            {
                bail!("run {} ended {state}: {}", r["id"], r["reason"]);
            }
        }
        let done: HashMap<String, i64> = list(RunState::Completed)
            .await?
            .iter()
            .filter(|r| approved_at.contains_key(r["id"].as_str().unwrap_or("")))
            .map(|r| {
                (r["id"].as_str().unwrap_or("").to_owned(), r["updated_at"].as_i64().unwrap_or(0))
            })
            .collect();
        if done.len() == approved_at.len() {
            break done;
        }
        if Instant::now() > deadline {
            bail!("{} of {plans} plans completed in {ROUND_TIMEOUT:?}", done.len());
        }
        progress.tick(|| format!("{} of {plans} plans completed", done.len()));
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let last = done.values().copied().max().unwrap_or(started_ms);
    let seconds =
        ((last - started_ms) as f64 / 1e3).max(started.elapsed().as_secs_f64().min(0.001));
    let cpu = cpu() - cpu0;
    let lease_handovers = takeovers(&apis).await?.saturating_sub(takeovers0);
    let locks = match sampler {
        Some(s) => Some(s.finish().await?),
        None => None,
    };
    let rss = procs.iter().map(|p| peak_rss_mib(p.pid())).fold(0.0, f64::max);
    let counted = proxy.counts().since(&counts0);
    let requests = counted.total();
    let blocks = direct.get_block_number().await?.saturating_sub(block0).max(1);
    let mut latencies: Vec<f64> =
        done.iter().map(|(id, at)| (at - approved_at[id]).max(0) as f64).collect();
    latencies.sort_by(f64::total_cmp);
    drop(procs);
    let db_size = db_mib(&db, &bench.dir).await;
    let subtasks = plans * 3;
    let per_sec = subtasks as f64 / seconds;
    Ok(LoadRow {
        mode: mode.to_owned(),
        store: store.to_owned(),
        replicas,
        plans,
        subtasks,
        seconds,
        subtasks_per_sec: per_sec,
        baseline_per_sec,
        ratio_to_baseline: per_sec / baseline_per_sec.max(f64::MIN_POSITIVE),
        latency_p50_ms: percentile(&latencies, 0.5),
        latency_p99_ms: percentile(&latencies, 0.99),
        peak_rss_mib: rss,
        cpu_cores: cpu / seconds,
        db_mib: db_size,
        rpc_per_subtask: requests as f64 / subtasks as f64,
        rpc_per_block: requests as f64 / blocks as f64,
        blocks,
        lease_handovers,
        lock_wait_share: locks.map(|l| l.share()),
        lock_waiting: locks.map(|l| l.waiting),
        lock_samples: locks.map(|l| l.samples),
        rpc_per_block_by_method: counted
            .by_method
            .iter()
            .map(|(m, n)| (m.clone(), *n as f64 / blocks as f64))
            .collect(),
        eth_call_per_block_by_function: counted
            .calls_by_function
            .iter()
            .map(|(f, n)| (f.clone(), *n as f64 / blocks as f64))
            .collect(),
    })
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The workers of every demo agent on `bench`'s chain, writing where the
/// orchestrator reads; aborted when dropped.
pub(crate) struct Workers(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Workers {
    fn drop(&mut self) {
        for w in &self.0 {
            w.abort();
        }
    }
}

pub(crate) async fn workers(bench: &Bench) -> Result<Workers> {
    let blobs: tessera_stack::Blobs = Arc::new(FsBlobStore::new(bench.dir.join("blobs")));
    let at = Endpoints { http: bench.chain.endpoint_url(), ws: bench.chain.ws_endpoint() };
    let mut out = Vec::new();
    for agent in DEMO_AGENTS {
        out.push(
            spawn_worker(&at, &bench.actors, &bench.deployment, agent, Arc::clone(&blobs)).await?,
        );
    }
    Ok(Workers(out))
}

/// Runs the bench: on automine, then on a chain with block time, the direct
/// baseline first, then a small round and a full round of plans through
/// one replica.
pub async fn run(opts: &ChainOptions, cfg: &LoadBenchConfig) -> Result<LoadBenchReport> {
    if cfg.plans == 0 || cfg.baseline == 0 {
        bail!("plans and baseline must be at least 1");
    }
    if cfg.replicas.iter().any(|&n| n == 0 || n > MAX_REPLICAS) {
        bail!("replicas must be between 1 and {MAX_REPLICAS}");
    }
    // The PostgreSQL rounds only where the server answers.
    let postgres = match cfg.postgres.as_deref() {
        Some(admin) => match sqlx::PgPool::connect(admin).await {
            Ok(_) => Some(admin.to_owned()),
            Err(e) => {
                eprintln!("skipping the PostgreSQL rounds: {admin} does not answer: {e}");
                None
            }
        },
        None => None,
    };
    let mut modes = vec![("automine".to_owned(), opts.clone())];
    if let Some(secs) = cfg.block_time {
        modes.push((
            format!("{secs} s blocks"),
            ChainOptions { block_time: Some(secs), ..opts.clone() },
        ));
    }
    let mut rows = Vec::new();
    let progress = Progress::new();
    for (mode, chain) in modes {
        let name = format!("{mode}: chain and contracts");
        let bench =
            progress.phase(&name, Box::pin(Bench::start(&chain, &mode.replace(' ', "")))).await?;
        // Before the workers start: they would take the baseline's tasks.
        let name = format!("{mode}: direct baseline, {} lifecycles", cfg.baseline);
        let ticker = progress.ticker(&name);
        let baseline =
            progress.phase(&name, Box::pin(bench.baseline(cfg.baseline, ticker))).await?;
        eprintln!("{mode}: direct baseline {baseline:.2} lifecycles/s");
        let name = format!("{mode}: workers");
        let _workers = progress.phase(&name, Box::pin(workers(&bench))).await?;
        let small = (cfg.plans / 10).max(1);
        let sqlite = [small, cfg.plans].map(|plans| (plans, None, 1));
        let pg = postgres.as_deref().map(|admin| {
            cfg.replicas.iter().map(move |&n| (cfg.plans, Some(admin), n)).collect::<Vec<_>>()
        });
        for (plans, admin, n) in sqlite.into_iter().chain(pg.into_iter().flatten()) {
            let store = if admin.is_some() { "PostgreSQL" } else { "SQLite" };
            // Each PostgreSQL round (the replica rows, compared with each
            // other) on a fresh chain with fresh workers: on the one chain
            // each round ran slower than the one before whatever its
            // replicas (measured: 3, 2, 1 replicas in that order gave
            // 36, 27, 20 sub-tasks/s; 1, 2, 3 gave 42, 27, 20).
            let fresh = match admin {
                Some(_) => {
                    let name = format!("{mode}: a fresh chain for {n} replica(s)");
                    let label = format!("{}-pg{n}", mode.replace(' ', ""));
                    let fresh =
                        progress.phase(&name, Box::pin(Bench::start(&chain, &label))).await?;
                    let workers = progress.phase(&name, Box::pin(workers(&fresh))).await?;
                    // The workers stop before their chain does.
                    Some((workers, fresh))
                }
                None => None,
            };
            let on = fresh.as_ref().map_or(&bench, |(_, b)| b);
            let name = format!("{mode}: {plans} plans through {n} replica(s) on {store}");
            let ticker = progress.ticker(&name);
            let row = round(on, &mode, plans, baseline, admin, n, ticker);
            rows.push(progress.phase(&name, Box::pin(row)).await?);
        }
    }
    Ok(LoadBenchReport { rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_mix_chains_and_fan_outs() {
        let a = Agents {
            summarizer: Address::repeat_byte(1),
            sentiment: Address::repeat_byte(3),
            extractor: Address::repeat_byte(4),
        };
        let chain = plan_json("t", 0, &a);
        let fan = plan_json("t", 1, &a);
        assert_eq!(chain["subtasks"][2]["depends_on"], json!([1]));
        assert_eq!(fan["subtasks"][2]["depends_on"], json!([0]));
        assert_ne!(chain["id"], fan["id"]);
    }
}
