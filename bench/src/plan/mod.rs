//! The plan bench (`make bench-plan`): approve → settled wall time of an
//! N-step chain through the orchestrator and offline workers on anvil, and the
//! per-sub-task cycle latency (created → paid) p50/p99.
//!
//! The baseline, measured in the same run on the same chain, is the floor of
//! the same work: the same number of create → accept → complete → approve
//! lifecycles sent back to back by one process through the bindings, with no
//! runner, no workers and no waiting for anyone to notice anything. The ratio
//! says how much the orchestration (block notifications, worker reaction,
//! database writes, envelopes) costs on top of the transactions themselves.
//!
//! On timed blocks the chain and the fan-out also run through the stand-in
//! hosted provider ([`tessera_anvil::standin`], `Limits::hosted`): HTTP
//! only (every service polls twice a block), 25 requests/s per client
//! answered 429 with `Retry-After` past it (every service comes from one
//! address: one allowance), 1 % of requests answered 503, capped log
//! queries, no `anvil_*` methods. Its row counts the orchestrator's
//! requests with every retry, and the 429s and 503s it took.

use std::{
    collections::{BTreeMap, HashMap},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use alloy::{
    primitives::{B256, U256, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::Filter,
    sol_types::SolValue,
};
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, Endpoints, LocalChain},
    deploy::{self, DEMO_AGENTS, DeployConfig},
    lifecycle::Driver,
    standin::{Limits, StandIn},
};
use tessera_bindings::{TaskEscrow::TaskEscrowEvents, deployment::Deployment, usdc::Usdc};
use tessera_orchestrator::{
    plan::{Funding, Plan, ReviewMode, SubTask},
    runner::{Chain, Orchestrator, RunnerConfig},
    store::Store,
};
use tessera_stack::{
    Blobs, Error, spawn_polling_worker, spawn_worker, start_orchestrator,
    start_polling_orchestrator,
};

use crate::rpc_proxy::{Counts, RpcProxy};

mod locked;
mod report;

pub use report::{Faults, IdleRow, Percentiles, PlanBenchReport, ScenarioRow};
use report::{median, percentiles};

/// What to measure.
#[derive(Debug, Clone)]
pub struct PlanBenchConfig {
    /// Sub-tasks per chain plan.
    pub steps: usize,
    /// Plans measured (after one warm-up plan) per automine scenario.
    pub runs: usize,
    /// Seconds between blocks of the second chain; `None` skips it.
    pub block_time: Option<u64>,
    /// Samples per scenario on that chain (the ten plans run once).
    pub timed_runs: usize,
    /// The seed of the stand-in hosted provider the chain and the fan-out
    /// run through on timed blocks too; `None` skips them.
    pub hosted_seed: Option<u64>,
}

/// The stand-in provider's seed `make bench-plan` uses.
pub const HOSTED_SEED: u64 = 30;

impl Default for PlanBenchConfig {
    fn default() -> Self {
        Self {
            steps: 5,
            runs: 10,
            block_time: Some(2),
            timed_runs: 3,
            hosted_seed: Some(HOSTED_SEED),
        }
    }
}

const SOURCE: &str = "Tessera settles each sub-task through an escrow. Workers accept and \
deliver results on chain. The orchestrator approves and pays each one. Results flow forward \
to the next step, so a chain of steps builds on what came before.";

/// The whole stack on one chain: orchestrator and demo workers, each side
/// talking to the chain through its own counting proxy.
struct Stack {
    /// Kept running for as long as the stack is.
    _chain: LocalChain,
    actors: Actors,
    deployment: Deployment,
    direct: DynProvider,
    orch: Arc<Orchestrator>,
    orch_rpc: RpcProxy,
    worker_rpc: RpcProxy,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    dir: PathBuf,
    /// The stand-in provider both proxies forward to, when hosted.
    stand_in: Option<StandIn>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Stack {
    /// A fresh chain with the contracts and the demo agents registered.
    async fn chain(
        opts: &ChainOptions,
    ) -> Result<(LocalChain, Actors, Deployment, DynProvider), Error> {
        let chain = LocalChain::start(opts)?;
        let actors = Actors::from_keys(&chain.keys())?;
        let direct = actors.provider(chain.endpoint_url());
        let deployment = deploy::deploy(&direct, &actors, &DeployConfig::default()).await?;
        deploy::register_demo_agents(&direct, &actors, deployment.agent_registry).await?;
        Ok((chain, actors, deployment, direct))
    }

    /// The orchestrator and the demo workers on `chain`, each side behind its
    /// own counting proxy.
    async fn start(
        (chain, actors, deployment, direct): (LocalChain, Actors, Deployment, DynProvider),
        label: &str,
    ) -> Result<Self, Error> {
        let proxy = |e: std::io::Error| Error::Orchestrator(format!("rpc proxy: {e}"));
        let orch_rpc = RpcProxy::start(chain.endpoint_url()).await.map_err(proxy)?;
        let worker_rpc = RpcProxy::start(chain.endpoint_url()).await.map_err(proxy)?;
        let ws = chain.ws_endpoint();

        let blobs: Blobs = Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
        let mut tasks = Vec::new();
        let workers = Endpoints { http: worker_rpc.url(), ws: ws.clone() };
        for agent in DEMO_AGENTS {
            tasks.push(
                spawn_worker(&workers, &actors, &deployment, agent, Arc::clone(&blobs)).await?,
            );
        }
        let dir =
            std::env::temp_dir().join(format!("tessera-bench-plan-{label}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|source| Error::Io { path: dir.display().to_string(), source })?;
        let db = format!("sqlite://{}", dir.join("runs.db").display());
        let store = Store::connect(&db).await.map_err(|e| Error::Orchestrator(e.to_string()))?;
        let (orch, heads) = start_orchestrator(
            &Endpoints { http: orch_rpc.url(), ws },
            &actors,
            &deployment,
            store,
            blobs,
            RunnerConfig::default(),
        )
        .await?;
        tasks.push(heads);
        Ok(Self {
            _chain: chain,
            actors,
            deployment,
            direct,
            orch,
            orch_rpc,
            worker_rpc,
            tasks,
            dir,
            stand_in: None,
        })
    }

    /// [`Stack::start`] on a chain mining a block every `secs` seconds,
    /// both proxies forwarding to a stand-in hosted provider (seeded with
    /// `seed`) in front of it: no websocket, every service polls twice a
    /// block.
    async fn start_hosted(
        (chain, actors, deployment, direct): (LocalChain, Actors, Deployment, DynProvider),
        secs: u64,
        seed: u64,
    ) -> Result<Self, Error> {
        let stand_in = StandIn::start(chain.endpoint_url().as_str(), Limits::hosted(seed)).await;
        let proxy = |e: std::io::Error| Error::Orchestrator(format!("rpc proxy: {e}"));
        let orch_rpc = RpcProxy::start(stand_in.url.clone()).await.map_err(proxy)?;
        let worker_rpc = RpcProxy::start(stand_in.url.clone()).await.map_err(proxy)?;
        let poll = Duration::from_millis(secs.max(1) * 500);
        let blobs: Blobs = Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
        let mut tasks = Vec::new();
        for agent in DEMO_AGENTS {
            let blobs = Arc::clone(&blobs);
            let (http, actors, deployment) = (worker_rpc.url(), &actors, &deployment);
            tasks.push(spawn_polling_worker(&http, poll, actors, deployment, agent, blobs).await?);
        }
        let dir =
            std::env::temp_dir().join(format!("tessera-bench-plan-hosted-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|source| Error::Io { path: dir.display().to_string(), source })?;
        let db = format!("sqlite://{}", dir.join("runs.db").display());
        let store = Store::connect(&db).await.map_err(|e| Error::Orchestrator(e.to_string()))?;
        let config = RunnerConfig { poll_interval: poll, ..RunnerConfig::default() };
        let (orch, heads) =
            start_polling_orchestrator(&orch_rpc.url(), &actors, &deployment, store, blobs, config)
                .await?;
        tasks.push(heads);
        Ok(Self {
            _chain: chain,
            actors,
            deployment,
            direct,
            orch,
            orch_rpc,
            worker_rpc,
            tasks,
            dir,
            stand_in: Some(stand_in),
        })
    }

    /// The stand-in's 429s and 503s so far (none without one).
    fn faults(&self) -> (u64, u64) {
        self.stand_in.as_ref().map_or((0, 0), |s| {
            let c = s.counts();
            (c.rate_limited, c.failed)
        })
    }

    /// A plan of `shape`, labelled `label`.
    fn plan(&self, shape: Shape, label: &str) -> Plan {
        let caps: [(&str, usize, u128, &str); 3] = [
            ("summarize", 1, 400_000, "Summarize the material"),
            ("sentiment-classify", 3, 200_000, "Classify the tone of the material"),
            ("extract-entities", 4, 250_000, "List the entities in the material"),
        ];
        let mut plan = Plan::new(
            Plan::id_from_label(&format!("bench-plan-{}-{label}", std::process::id())),
            // Under the runner's default per-plan spend cap (50 USDC).
            Usdc::from_base_units(20_000_000),
            ReviewMode::Auto,
        );
        plan.source = Some(SOURCE.into());
        let deps = |i: usize| -> Vec<u32> {
            match shape {
                Shape::Chain(_) if i > 0 => vec![i as u32 - 1],
                Shape::FanOut if (1..=4).contains(&i) => vec![0],
                Shape::FanOut if i == 5 => vec![1, 2, 3, 4],
                _ => vec![],
            }
        };
        plan.subtasks = (0..shape.subtasks())
            .map(|i| {
                let (cap, agent, price, spec) = caps[i % caps.len()];
                SubTask {
                    index: i as u32,
                    capability: cap.into(),
                    spec: spec.into(),
                    executor: Some(self.actors.agent(agent)),
                    cost: Usdc::from_base_units(price),
                    deadline_offset_secs: 3600,
                    depends_on: deps(i),
                    ..Default::default()
                }
            })
            .collect();
        plan
    }

    /// Proposes and approves `n` one-step plans under manual review and
    /// waits until each stops at its review gate: live runs that wait.
    async fn park(&self, n: usize, label: &str) -> Result<(), Error> {
        let orch_err = |e: &dyn std::fmt::Display| Error::Orchestrator(e.to_string());
        let mut events = self.orch.subscribe();
        let mut open = std::collections::HashSet::new();
        for i in 0..n {
            let mut plan = self.plan(Shape::Single, &format!("{label}-{i}"));
            plan.review = ReviewMode::Manual;
            open.insert(plan.id.to_string());
            self.orch.propose(plan.clone()).await.map_err(|e| orch_err(&e))?;
            self.orch.approve(&plan.id.to_string(), None).await.map_err(|e| orch_err(&e))?;
        }
        let waited = tokio::time::timeout(Duration::from_secs(120), async {
            while let Ok(ev) = events.recv().await {
                if ev.kind.as_str() == "review_required" {
                    open.remove(&ev.run_id);
                    if open.is_empty() {
                        return true;
                    }
                }
            }
            false
        })
        .await;
        match waited {
            Ok(true) => Ok(()),
            _ => Err(orch_err(&"parked plans did not reach their review gate in 120 s")),
        }
    }

    /// JSON-RPC requests per block of the orchestrator and of the workers
    /// over the next `blocks` blocks, with nothing to do but wait.
    async fn idle(&self, live_runs: usize, blocks: u64) -> Result<IdleRow, Error> {
        let at = |n: u64| async move {
            loop {
                if self.direct.get_block_number().await? >= n {
                    return Ok::<_, Error>(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        // Start counting right after a block.
        let block0 = self.direct.get_block_number().await? + 1;
        at(block0).await?;
        let (orch0, workers0) = (self.orch_rpc.counts(), self.worker_rpc.counts());
        at(block0 + blocks).await?;
        let (orch1, workers1) = (self.orch_rpc.counts(), self.worker_rpc.counts());
        let per_block = |c: Counts| c.total() as f64 / blocks as f64;
        Ok(IdleRow {
            live_runs,
            blocks,
            orch_per_block: per_block(orch1.since(&orch0)),
            worker_per_block: per_block(workers1.since(&workers0)),
        })
    }

    /// Proposes and approves `plans` together and waits for all of them to
    /// settle; what it took.
    async fn settle(&self, plans: Vec<Plan>) -> Result<Sample, Error> {
        let orch_err = |e: &dyn std::fmt::Display| Error::Orchestrator(e.to_string());
        let ids: Vec<String> = plans.iter().map(|p| p.id.to_string()).collect();
        let plan_ids: Vec<B256> = plans.iter().map(|p| p.id).collect();
        let subtasks: usize = plans.iter().map(|p| p.subtasks.len()).sum();
        for plan in plans {
            self.orch.propose(plan).await.map_err(|e| orch_err(&e))?;
        }
        let mut events = self.orch.subscribe();
        let (orch0, workers0) = (self.orch_rpc.counts(), self.worker_rpc.counts());
        let faults0 = self.faults();
        let block0 = self.direct.get_block_number().await?;
        let started = Instant::now();
        for id in &ids {
            self.orch.approve(id, None).await.map_err(|e| orch_err(&e))?;
        }
        let mut open: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut created: HashMap<(String, u64), Instant> = HashMap::new();
        let mut cycles = Vec::new();
        let waited = tokio::time::timeout(Duration::from_secs(600), async {
            while let Ok(ev) = events.recv().await {
                if !open.contains(ev.run_id.as_str()) {
                    continue;
                }
                let body: serde_json::Value = serde_json::from_str(&ev.body).unwrap_or_default();
                let index = body["index"].as_u64().unwrap_or_default();
                match ev.kind.as_str() {
                    "subtask_created" => {
                        created.insert((ev.run_id.clone(), index), Instant::now());
                    }
                    "subtask_paid" => {
                        if let Some(t) = created.get(&(ev.run_id.clone(), index)) {
                            cycles.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                    }
                    "plan_completed" => {
                        open.remove(ev.run_id.as_str());
                        if open.is_empty() {
                            return Ok(());
                        }
                    }
                    "plan_failed" => return Err(body["reason"].to_string()),
                    _ => {}
                }
            }
            Err("event stream closed".to_owned())
        })
        .await;
        match waited {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return Err(orch_err(&format!("bench plan failed: {reason}"))),
            Err(_) => return Err(orch_err(&"bench plans did not settle in 600 s")),
        }
        let wall_ms = started.elapsed().as_secs_f64() * 1e3;
        let (orch1, workers1) = (self.orch_rpc.counts(), self.worker_rpc.counts());
        let faults1 = self.faults();
        let blocks = self.blocks_of(&plan_ids, block0).await?;
        let head = self.direct.get_block_number().await?;
        let locked_usdc_s = locked::usdc_seconds(&self.direct, &blocks.spans, head).await?;
        Ok(Sample {
            locked_usdc_s,
            subtasks,
            wall_ms,
            cycles,
            settled_after: blocks.last_block.saturating_sub(block0),
            created_after: blocks.created.into_iter().map(|(k, b)| (k, b - block0)).collect(),
            orch: orch1.since(&orch0),
            workers: workers1.since(&workers0),
            faults: (faults1.0 - faults0.0, faults1.1 - faults0.1),
        })
    }

    /// Every task of `plans` since `block0`: the block each (plan, index)
    /// was created in, and the last block any of them changed in.
    async fn blocks_of(&self, plans: &[B256], block0: u64) -> Result<PlanBlocks, Error> {
        let head = self.direct.get_block_number().await?;
        let logs = self
            .direct
            .get_logs(
                &Filter::new()
                    .address(self.deployment.task_escrow)
                    .from_block(block0 + 1)
                    .to_block(head),
            )
            .await?;
        let sponsor = self.actors.sponsor.address();
        let mut ids: HashMap<U256, (B256, u32)> = HashMap::new();
        for plan in plans {
            for index in 0..64 {
                let id = U256::from_be_bytes(
                    keccak256((sponsor, Chain::reference(*plan, index, 0)).abi_encode()).0,
                );
                ids.insert(id, (*plan, index));
            }
        }
        let mut out = PlanBlocks::default();
        for log in &logs {
            let Some(id) = log.topics().get(1).map(|t| U256::from_be_bytes(t.0)) else {
                continue;
            };
            let Some(&(plan, index)) = ids.get(&id) else { continue };
            let block = log.block_number.unwrap_or_default();
            out.last_block = out.last_block.max(block);
            match tessera_bindings::task::decode_log(log) {
                Some(TaskEscrowEvents::TaskCreated(ev)) => {
                    out.created.insert((plan, index), block);
                    let span = out.spans.entry(id).or_default();
                    (span.amount, span.created) = (ev.task.amount, block);
                }
                Some(TaskEscrowEvents::TaskSettled(_)) => {
                    out.spans.entry(id).or_default().settled = Some(block);
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

#[derive(Debug, Default)]
struct PlanBlocks {
    created: HashMap<(B256, u32), u64>,
    last_block: u64,
    /// Each task's funding, from its creation to its settlement.
    spans: HashMap<U256, locked::Span>,
}

/// One measured settlement of one or more plans.
#[derive(Debug)]
struct Sample {
    subtasks: usize,
    /// USDC·s the plans kept locked in the escrow (see [`locked`]).
    locked_usdc_s: f64,
    wall_ms: f64,
    cycles: Vec<f64>,
    /// Blocks from approval to the last change of any of its tasks.
    settled_after: u64,
    /// Blocks from approval to each (plan, index)'s creation.
    created_after: HashMap<(B256, u32), u64>,
    orch: Counts,
    workers: Counts,
    /// The stand-in's 429s and 503s to anyone meanwhile.
    faults: (u64, u64),
}

/// Blocks the idle requests are counted over.
const IDLE_BLOCKS: u64 = 5;

/// The plans a scenario settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `n` steps, each on the one before.
    Chain(usize),
    /// One step, four on it, one on those four.
    FanOut,
    /// One step (ten such plans approved together).
    Single,
}

impl Shape {
    fn subtasks(self) -> usize {
        match self {
            Shape::Chain(n) => n,
            Shape::FanOut => 6,
            Shape::Single => 1,
        }
    }
}

fn per_subtask(c: &Counts, n: usize) -> BTreeMap<String, f64> {
    c.by_method.iter().map(|(m, k)| (m.clone(), *k as f64 / n as f64)).collect()
}

/// Settles `shape` `samples` times on `stack`, funded by `funding`, and
/// summarizes it.
async fn scenario(
    stack: &Stack,
    mode: &str,
    shape: Shape,
    samples: usize,
    block_time: Option<u64>,
    funding: Funding,
) -> Result<ScenarioRow, Error> {
    let mut rows = Vec::new();
    for k in 0..samples {
        let label = format!("{mode}-{shape:?}-{k}").replace([' ', ','], "");
        let funded = |mut plan: Plan| {
            plan.funding = funding;
            plan
        };
        let plans = match shape {
            Shape::Single => {
                (0..10).map(|i| funded(stack.plan(shape, &format!("{label}-{i}")))).collect()
            }
            _ => vec![funded(stack.plan(shape, &label))],
        };
        rows.push(stack.settle(plans).await?);
    }
    let depth = match shape {
        Shape::Chain(n) => n,
        Shape::FanOut => 3,
        Shape::Single => 1,
    };
    let blocks: Vec<f64> = rows.iter().map(|s| s.settled_after as f64).collect();
    let blocks_p50 = median(blocks);
    // What the creations say: the fan-out's four parallel sub-tasks share a
    // block; ten plans are all created within a block of their approval.
    let (creation, creation_ok) = match shape {
        Shape::FanOut => {
            let spread: Vec<u64> = rows
                .iter()
                .map(|s| {
                    let blocks: Vec<u64> = s
                        .created_after
                        .iter()
                        .filter(|((_, i), _)| (1..=4).contains(i))
                        .map(|(_, b)| *b)
                        .collect();
                    blocks.iter().max().unwrap_or(&0) - blocks.iter().min().unwrap_or(&0)
                })
                .collect();
            let worst = spread.iter().copied().max().unwrap_or_default();
            (format!("parallel four created across {} block(s) (worst)", worst + 1), worst == 0)
        }
        Shape::Single => {
            let worst = rows
                .iter()
                .flat_map(|s| s.created_after.values().copied())
                .max()
                .unwrap_or_default();
            (format!("all created by block +{worst} after approval (worst)"), worst <= 1)
        }
        Shape::Chain(_) => (String::new(), true),
    };
    let orch: Vec<f64> = rows.iter().map(|s| s.orch.total() as f64 / s.subtasks as f64).collect();
    let orch_p50 = median(orch);
    let hosted = stack.stand_in.is_some();
    let upfront = funding == Funding::Upfront;
    let (goal, met) = match (block_time, shape) {
        (Some(_), Shape::Chain(5)) if upfront => {
            ("<= 7 blocks, <= 15 rpc orch".to_owned(), blocks_p50 <= 7.0 && orch_p50 <= 15.0)
        }
        (Some(_), Shape::FanOut) if upfront => (
            "<= 5 blocks, <= 15 rpc orch".to_owned(),
            blocks_p50 <= 5.0 && orch_p50 <= 15.0 && creation_ok,
        ),
        (Some(_), Shape::Chain(5)) if hosted => {
            ("<= 11 blocks, <= 15 rpc orch".to_owned(), blocks_p50 <= 11.0 && orch_p50 <= 15.0)
        }
        (Some(_), Shape::FanOut) if hosted => (
            "<= 7 blocks, <= 15 rpc orch".to_owned(),
            blocks_p50 <= 7.0 && orch_p50 <= 15.0 && creation_ok,
        ),
        (None, Shape::Chain(5)) => {
            let p50 = median(rows.iter().map(|s| s.wall_ms).collect());
            ("p50 <= 350 ms".to_owned(), p50 <= 350.0)
        }
        (Some(_), Shape::Chain(5)) => ("<= 11 blocks".to_owned(), blocks_p50 <= 11.0),
        (Some(_), Shape::FanOut) => ("<= 7 blocks".to_owned(), blocks_p50 <= 7.0 && creation_ok),
        (Some(_), Shape::Single) => ("created within 1 block".to_owned(), creation_ok),
        _ => (String::new(), true),
    };
    let workers: Vec<f64> =
        rows.iter().map(|s| s.workers.total() as f64 / s.subtasks as f64).collect();
    let first = &rows[0];
    Ok(ScenarioRow {
        mode: mode.to_owned(),
        scenario: match shape {
            Shape::Chain(n) => format!("{n}-step chain"),
            Shape::FanOut => "1 -> 4 -> 1 fan-out".to_owned(),
            Shape::Single => "10 one-step plans at once".to_owned(),
        },
        samples,
        blocks_p50,
        seconds_p50: median(rows.iter().map(|s| s.wall_ms / 1e3).collect()),
        blocks_per_step: blocks_p50 / depth as f64,
        orch_rpc_per_subtask: orch_p50,
        locked_usdc_s: median(rows.iter().map(|s| s.locked_usdc_s).collect()),
        worker_rpc_per_subtask: median(workers),
        creation,
        goal,
        met,
        orch_methods: per_subtask(&first.orch, first.subtasks),
        worker_methods: per_subtask(&first.workers, first.subtasks),
        faults: Faults::of(&rows),
    })
}

/// Runs the bench: the automine chain bench and its direct baseline, then
/// every scenario on automine and on a chain with `block_time` blocks.
pub async fn run(opts: &ChainOptions, cfg: &PlanBenchConfig) -> Result<PlanBenchReport, Error> {
    if cfg.steps == 0 || cfg.runs == 0 {
        return Err(Error::Orchestrator("steps and runs must be at least 1".into()));
    }
    let (chain, actors, deployment, direct) = Stack::chain(opts).await?;

    // Baseline: the same lifecycles, sent back to back, before any service
    // runs (the workers would take the baseline's tasks for their own).
    let mut baseline = Vec::new();
    {
        let mut d = Driver::new(direct.clone(), &actors, &deployment);
        for run in 0..=cfg.runs {
            d.scenario(format!("baseline-{run}"));
            let started = Instant::now();
            for _ in 0..cfg.steps {
                let params = d
                    .params(actors.agent(1), 400_000, tessera_anvil::lifecycle::spec_of_len(200))
                    .await?;
                let mut rec = d.create_with_permit(params).await?;
                d.deliver(&mut rec, "data:application/json,{\"text\":\"done\"}").await?;
                d.escrow.approve(actors.client.address(), &mut rec).await?;
            }
            if run > 0 {
                baseline.push(started.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let stack = Stack::start((chain, actors, deployment, direct), "automine").await?;

    let mut walls = Vec::new();
    let mut cycles = Vec::new();
    for run in 0..=cfg.runs {
        let plan = stack.plan(Shape::Chain(cfg.steps), &format!("warm-{run}"));
        let sample = stack.settle(vec![plan]).await?;
        if run > 0 {
            walls.push(sample.wall_ms);
            cycles.extend(sample.cycles);
        }
    }
    let mut scenarios = Vec::new();
    let mut idle = Vec::new();
    for shape in [Shape::Chain(cfg.steps), Shape::FanOut, Shape::Single] {
        let (mode, funding) = ("automine", Funding::Stepwise);
        scenarios.push(scenario(&stack, mode, shape, cfg.runs, None, funding).await?);
    }
    drop(stack);

    if let Some(secs) = cfg.block_time {
        let timed = ChainOptions { block_time: Some(secs), ..opts.clone() };
        let stack = Stack::start(Stack::chain(&timed).await?, "timed").await?;
        let mode = format!("{secs} s blocks");
        for shape in [Shape::Chain(cfg.steps), Shape::FanOut, Shape::Single] {
            let samples = if shape == Shape::Single { 1 } else { cfg.timed_runs };
            let funding = Funding::Stepwise;
            scenarios.push(scenario(&stack, &mode, shape, samples, Some(secs), funding).await?);
        }
        // The same chain and fan-out funded up front: every sub-task at
        // approval, each step delivered in the block after its upstream's.
        let upfront = format!("{secs} s, upfront");
        for shape in [Shape::Chain(cfg.steps), Shape::FanOut] {
            let (samples, funding) = (cfg.timed_runs, Funding::Upfront);
            scenarios.push(scenario(&stack, &upfront, shape, samples, Some(secs), funding).await?);
        }
        // Idle cost against live runs: one waiting run, then ten.
        stack.park(1, "idle-a").await?;
        idle.push(stack.idle(1, IDLE_BLOCKS).await?);
        stack.park(9, "idle-b").await?;
        idle.push(stack.idle(10, IDLE_BLOCKS).await?);
        drop(stack);
        if let Some(seed) = cfg.hosted_seed {
            let stack = Stack::start_hosted(Stack::chain(&timed).await?, secs, seed).await?;
            let mode = format!("{secs} s, hosted");
            for shape in [Shape::Chain(cfg.steps), Shape::FanOut] {
                let (samples, funding) = (cfg.timed_runs, Funding::Stepwise);
                scenarios.push(scenario(&stack, &mode, shape, samples, Some(secs), funding).await?);
            }
        }
    }

    let plan_wall = percentiles(walls);
    let baseline_wall = percentiles(baseline);
    Ok(PlanBenchReport {
        steps: cfg.steps,
        ratio_to_baseline: plan_wall.p50_ms / baseline_wall.p50_ms.max(f64::MIN_POSITIVE),
        plan_wall,
        subtask_cycle: percentiles(cycles),
        baseline_wall,
        goal_ms: 1500.0,
        scenarios,
        idle,
    })
}
