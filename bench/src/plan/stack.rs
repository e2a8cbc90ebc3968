//! The stack a plan bench drives: a fresh chain with the contracts and the
//! demo agents, the orchestrator and offline workers each behind a counting
//! RPC proxy (or the stand-in hosted provider), and what it measures of one
//! settlement.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use alloy::{
    primitives::{U256, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::Filter,
    sol_types::SolValue,
};
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, Endpoints, LocalChain},
    deploy::{self, DEMO_AGENTS, DeployConfig},
    standin::{Limits, StandIn},
};
use tessera_bindings::{TaskEscrow::TaskEscrowEvents, deployment::Deployment, usdc::Usdc};
use tessera_orchestrator::{
    plan::{Plan, PlanId, ReviewMode, SubTask},
    runner::{Chain, Orchestrator, RunnerConfig},
    store::Store,
};

use tessera_stack::{
    Blobs, Error, spawn_polling_worker, spawn_worker, start_orchestrator,
    start_polling_orchestrator,
};

use super::{locked, report::IdleRow};
use crate::rpc_proxy::{Counts, RpcProxy};

const SOURCE: &str = "Tessera settles each sub-task through an escrow. Workers accept and \
deliver results on chain. The orchestrator approves and pays each one. Results flow forward \
to the next step, so a chain of steps builds on what came before.";

/// The whole stack on one chain: orchestrator and demo workers, each
/// talking to the chain through its own counting proxy.
pub(super) struct Stack {
    /// Kept running for as long as the stack is.
    pub(super) _chain: LocalChain,
    pub(super) actors: Actors,
    pub(super) deployment: Deployment,
    pub(super) direct: DynProvider,
    pub(super) orch: Arc<Orchestrator>,
    pub(super) orch_rpc: RpcProxy,
    /// One proxy a worker, in [`DEMO_AGENTS`]' order.
    pub(super) worker_rpc: Vec<RpcProxy>,
    pub(super) tasks: Vec<tokio::task::JoinHandle<()>>,
    pub(super) dir: PathBuf,
    /// The stand-in provider both proxies forward to, when hosted.
    pub(super) stand_in: Option<StandIn>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh directory for the `label` stack, and the orchestrator's run
/// store in it.
async fn run_store(label: &str) -> Result<(PathBuf, Store), Error> {
    let dir =
        std::env::temp_dir().join(format!("tessera-bench-plan-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|source| Error::Io { path: dir.display().to_string(), source })?;
    let db = format!("sqlite://{}", dir.join("runs.db").display());
    let store = Store::connect(&db).await?;
    Ok((dir, store))
}

impl Stack {
    /// A fresh chain with the contracts and the demo agents registered.
    pub(super) async fn chain(
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
    pub(super) async fn start(
        (chain, actors, deployment, direct): (LocalChain, Actors, Deployment, DynProvider),
        label: &str,
    ) -> Result<Self, Error> {
        let orch_rpc = RpcProxy::start(chain.endpoint_url()).await.map_err(Error::Proxy)?;
        let ws = chain.ws_endpoint();

        let blobs: Blobs = Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
        let mut tasks = Vec::new();
        let mut worker_rpc = Vec::new();
        for agent in DEMO_AGENTS {
            let proxy = RpcProxy::start(chain.endpoint_url()).await.map_err(Error::Proxy)?;
            let at = Endpoints { http: proxy.url(), ws: ws.clone() };
            tasks.push(spawn_worker(&at, &actors, &deployment, agent, Arc::clone(&blobs)).await?);
            worker_rpc.push(proxy);
        }
        let (dir, store) = run_store(label).await?;
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
    pub(super) async fn start_hosted(
        (chain, actors, deployment, direct): (LocalChain, Actors, Deployment, DynProvider),
        secs: u64,
        seed: u64,
    ) -> Result<Self, Error> {
        let stand_in = StandIn::start(chain.endpoint_url().as_str(), Limits::hosted(seed)).await;
        let orch_rpc = RpcProxy::start(stand_in.url.clone()).await.map_err(Error::Proxy)?;
        let poll = Duration::from_millis(secs.max(1) * 500);
        let blobs: Blobs = Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
        let mut tasks = Vec::new();
        let mut worker_rpc = Vec::new();
        for agent in DEMO_AGENTS {
            let proxy = RpcProxy::start(stand_in.url.clone()).await.map_err(Error::Proxy)?;
            let blobs = Arc::clone(&blobs);
            let (http, actors, deployment) = (proxy.url(), &actors, &deployment);
            tasks.push(spawn_polling_worker(&http, poll, actors, deployment, agent, blobs).await?);
            worker_rpc.push(proxy);
        }
        let (dir, store) = run_store("hosted").await?;
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
    pub(super) fn faults(&self) -> (u64, u64) {
        self.stand_in.as_ref().map_or((0, 0), |s| {
            let c = s.counts();
            (c.rate_limited, c.failed)
        })
    }

    /// A plan of `shape`, labelled `label`.
    pub(super) fn plan(&self, shape: Shape, label: &str) -> Plan {
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
    pub(super) async fn park(&self, n: usize, label: &str) -> Result<(), Error> {
        let mut events = self.orch.subscribe();
        let mut open = std::collections::HashSet::new();
        for i in 0..n {
            let mut plan = self.plan(Shape::Single, &format!("{label}-{i}"));
            plan.review = ReviewMode::Manual;
            open.insert(plan.id.to_string());
            self.orch.propose(plan.clone()).await?;
            self.orch.approve(&plan.id.to_string(), None).await?;
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
            _ => Err(Error::Unfinished {
                plan: "parked plans".into(),
                end: "reach their review gate",
                secs: 120,
            }),
        }
    }

    /// What each worker's proxy counted so far.
    fn worker_counts(&self) -> Vec<Counts> {
        self.worker_rpc.iter().map(RpcProxy::counts).collect()
    }

    /// JSON-RPC requests per block of the orchestrator and of the workers
    /// over the next `blocks` blocks of `secs` seconds, with nothing to do
    /// but wait; `mode` names the row.
    pub(super) async fn idle(
        &self,
        (mode, secs): (&str, u64),
        live_runs: usize,
        blocks: u64,
    ) -> Result<IdleRow, Error> {
        let at = |n: u64| async move {
            loop {
                if self.direct.get_block_number().await? >= n {
                    return Ok::<_, Error>(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        // Count from the middle of a block to the middle of another: each
        // service has asked about the block it was counted from, and not
        // yet about the next (counting from the moment a block is seen
        // would count one poll more or less at each end).
        let half = Duration::from_millis(secs * 500);
        let block0 = self.direct.get_block_number().await? + 1;
        at(block0).await?;
        tokio::time::sleep(half).await;
        let (orch0, workers0) = (self.orch_rpc.counts(), self.worker_counts());
        at(block0 + blocks).await?;
        tokio::time::sleep(half).await;
        let (orch1, workers1) = (self.orch_rpc.counts(), self.worker_counts());
        let per_block = |c: Counts| c.total() as f64 / blocks as f64;
        let since: Vec<Counts> =
            workers1.iter().zip(&workers0).map(|(w1, w0)| w1.since(w0)).collect();
        let each: Vec<f64> = since.iter().cloned().map(per_block).collect();
        // The same without the requests the stand-in answered 429 or 503
        // (each one asked again): what the worker's own pace asks.
        let own = |c: &Counts| {
            c.total().saturating_sub(c.rate_limited + c.unavailable) as f64 / blocks as f64
        };
        Ok(IdleRow {
            mode: mode.to_owned(),
            live_runs,
            blocks,
            orch_per_block: per_block(orch1.since(&orch0)),
            worker_per_block: each.iter().sum(),
            worker_per_block_max: each.iter().copied().fold(0.0, f64::max),
            worker_per_block_max_unfailed: since.iter().map(own).fold(0.0, f64::max),
        })
    }

    /// Proposes and approves `plans` together and waits for all of them to
    /// settle; what it took.
    pub(super) async fn settle(&self, plans: Vec<Plan>) -> Result<Sample, Error> {
        let ids: Vec<String> = plans.iter().map(|p| p.id.to_string()).collect();
        let plan_ids: Vec<PlanId> = plans.iter().map(|p| p.id).collect();
        let subtasks: usize = plans.iter().map(|p| p.subtasks.len()).sum();
        for plan in plans {
            self.orch.propose(plan).await?;
        }
        let mut events = self.orch.subscribe();
        let (orch0, workers0) = (self.orch_rpc.counts(), self.worker_counts());
        let faults0 = self.faults();
        let block0 = self.direct.get_block_number().await?;
        let started = Instant::now();
        for id in &ids {
            self.orch.approve(id, None).await?;
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
            Ok(Err(reason)) => return Err(Error::PlanFailed(reason)),
            Err(_) => {
                return Err(Error::Unfinished {
                    plan: "bench plans".into(),
                    end: "settle",
                    secs: 600,
                });
            }
        }
        let wall_ms = started.elapsed().as_secs_f64() * 1e3;
        let (orch1, workers1) = (self.orch_rpc.counts(), self.worker_counts());
        let faults1 = self.faults();
        let per_worker: Vec<Counts> =
            workers1.iter().zip(&workers0).map(|(w1, w0)| w1.since(w0)).collect();
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
            workers: Counts::sum(&per_worker),
            per_worker,
            faults: (faults1.0 - faults0.0, faults1.1 - faults0.1),
        })
    }

    /// Every task of `plans` since `block0`: the block each (plan, index)
    /// was created in, and the last block any of them changed in.
    pub(super) async fn blocks_of(
        &self,
        plans: &[PlanId],
        block0: u64,
    ) -> Result<PlanBlocks, Error> {
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
        let mut ids: HashMap<U256, (PlanId, u32)> = HashMap::new();
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
pub(super) struct PlanBlocks {
    created: HashMap<(PlanId, u32), u64>,
    last_block: u64,
    /// Each task's funding, from its creation to its settlement.
    spans: HashMap<U256, locked::Span>,
}

/// One measured settlement of one or more plans.
#[derive(Debug)]
pub(super) struct Sample {
    pub(super) subtasks: usize,
    /// USDC·s the plans kept locked in the escrow (see [`locked`]).
    pub(super) locked_usdc_s: f64,
    pub(super) wall_ms: f64,
    pub(super) cycles: Vec<f64>,
    /// Blocks from approval to the last change of any of its tasks.
    pub(super) settled_after: u64,
    /// Blocks from approval to each (plan, index)'s creation.
    pub(super) created_after: HashMap<(PlanId, u32), u64>,
    pub(super) orch: Counts,
    /// All the workers' requests together.
    pub(super) workers: Counts,
    /// Each worker's requests.
    pub(super) per_worker: Vec<Counts>,
    /// The stand-in's 429s and 503s to anyone meanwhile.
    pub(super) faults: (u64, u64),
}

/// Blocks the idle requests are counted over.
pub(super) const IDLE_BLOCKS: u64 = 5;

/// Blocks the idle requests are counted over through the stand-in hosted
/// provider, where each worker's goal is one request a block at most.
pub(super) const HOSTED_IDLE_BLOCKS: u64 = 20;

/// The plans a scenario settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// `n` steps, each on the one before.
    Chain(usize),
    /// One step, four on it, one on those four.
    FanOut,
    /// One step (ten such plans approved together).
    Single,
}

impl Shape {
    pub(super) fn subtasks(self) -> usize {
        match self {
            Shape::Chain(n) => n,
            Shape::FanOut => 6,
            Shape::Single => 1,
        }
    }
}
