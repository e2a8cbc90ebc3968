//! The failover trial (`make soak-replicas`; a small one in `make test`):
//! three `tessera serve --replica` processes with one sponsor key on one
//! PostgreSQL database — one holds the lane, two stand by — drive plans
//! with the offline workers on anvil while one replica at a time is
//! killed with SIGKILL at random moments and started again.
//!
//! A wave of plans is approved (through any live replica) before each
//! kill, and the kill comes at a random moment while the wave is being
//! driven, so it lands under load. A kill of the lane holder orphans its runs:
//! the takeover time runs from the kill to the moment another replica holds
//! the lease (its drivers resume at once from there). At the end every plan
//! must have completed; from the escrow's own logs, every sub-task was
//! funded exactly once (one task per sub-task, no second attempt) and
//! settled once; and the tokens are conserved to the unit: the sponsor's
//! debit is the plans' cost and equals the executors' credit, and the
//! escrow holds what it held before.

use std::{
    collections::{BTreeMap, HashMap},
    path::PathBuf,
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, B256, U256},
    providers::Provider,
    rpc::types::Filter,
    sol_types::SolEvent,
};
use eyre::{Result, bail, eyre};
use serde::Serialize;
use serde_json::Value;
use tessera_anvil::chain::ChainOptions;
use tessera_bindings::{MockUSDC, TaskEscrow};
use tessera_orchestrator::{state::RunState, store::Store};

use crate::{
    load::{Agents, Bench, plan_json, post, scratch, wait_ready, wait_up, workers},
    percentile,
    process::Running,
};

/// What to run.
#[derive(Debug, Clone)]
pub struct FailoverConfig {
    /// Replicas sharing the lane.
    pub replicas: usize,
    /// Kills, one replica at a time.
    pub kills: usize,
    /// Plans approved before the first kill, and again after each kill.
    pub plans_per_wave: usize,
    /// The PostgreSQL server to make a scratch database on.
    pub postgres: String,
    /// Seconds between blocks; automine when `None`.
    pub block_time: Option<u64>,
    /// The replicas' lease TTL and heartbeat, ms.
    pub lease_ttl_ms: u64,
    /// See `lease_ttl_ms`.
    pub heartbeat_ms: u64,
    /// Seeds the choice of moments and victims (printed, to replay a trial).
    pub seed: u64,
    /// The `tessera` executable the replicas run (the running one when
    /// `None`).
    pub exe: Option<PathBuf>,
}

impl Default for FailoverConfig {
    fn default() -> Self {
        Self {
            replicas: 3,
            kills: 20,
            plans_per_wave: 10,
            postgres: "postgres://postgres@127.0.0.1:5432/postgres".into(),
            block_time: None,
            lease_ttl_ms: 3_000,
            heartbeat_ms: 500,
            seed: 1,
            exe: None,
        }
    }
}

/// One kill.
#[derive(Debug, Clone, Serialize)]
pub struct Kill {
    /// Which replica (by slot) was killed.
    pub slot: usize,
    /// Whether it held the lane.
    pub held_lane: bool,
    /// Kill → another replica holds the lease, ms (a holder's kill only).
    pub takeover_ms: Option<f64>,
    /// Runs not yet over when it was killed.
    pub live_runs: usize,
}

/// What the trial found.
#[derive(Debug, Clone, Serialize)]
pub struct FailoverReport {
    /// The seed, to replay it.
    pub seed: u64,
    /// Replicas.
    pub replicas: usize,
    /// Plans approved.
    pub plans: usize,
    /// Plans completed.
    pub completed: usize,
    /// Sub-tasks of the plans.
    pub subtasks: usize,
    /// Every kill.
    pub kills: Vec<Kill>,
    /// Takeover times, ms.
    pub takeover_p50_ms: f64,
    /// Takeover times, ms.
    pub takeover_p99_ms: f64,
    /// Takeover times, ms.
    pub takeover_max_ms: f64,
    /// The lease TTL the replicas ran with, ms.
    pub lease_ttl_ms: u64,
    /// Tasks the escrow created for the plans (one per sub-task is right).
    pub tasks_created: usize,
    /// Tasks created more than once, or settled other than once.
    pub not_exactly_once: usize,
    /// The sponsor's debit, base units.
    pub sponsor_debit: String,
    /// The plans' cost, base units.
    pub plans_cost: String,
    /// The executors' credit, base units.
    pub executors_credit: String,
    /// The escrow's balance change, base units (zero is right).
    pub escrow_change: String,
    /// Seconds from the first approval to the last completion.
    pub seconds: f64,
}

impl FailoverReport {
    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.completed == self.plans
            && self.tasks_created == self.subtasks
            && self.not_exactly_once == 0
            && self.sponsor_debit == self.plans_cost
            && self.executors_credit == self.sponsor_debit
            && self.escrow_change == "0"
            && self.kills.iter().all(|k| !k.held_lane || k.takeover_ms.is_some())
    }

    /// A printable summary.
    pub fn table(&self) -> String {
        let holder = self.kills.iter().filter(|k| k.held_lane).count();
        let check = |ok: bool| if ok { "met" } else { "NOT met" };
        let mut out = format!(
            "failover trial (seed {}): {} replicas, {} kills ({} of the lane holder), {} plans, {} sub-tasks, {:.1} s\n",
            self.seed,
            self.replicas,
            self.kills.len(),
            holder,
            self.plans,
            self.subtasks,
            self.seconds
        );
        out += &format!(
            "  takeover after a holder's kill: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (lease TTL {} ms)\n",
            self.takeover_p50_ms, self.takeover_p99_ms, self.takeover_max_ms, self.lease_ttl_ms
        );
        out += &format!(
            "  every plan reached a terminal state and completed: {} ({} of {})\n",
            check(self.completed == self.plans),
            self.completed,
            self.plans
        );
        out += &format!(
            "  every sub-task funded and settled exactly once: {} ({} tasks for {} sub-tasks, {} not exactly once)\n",
            check(self.tasks_created == self.subtasks && self.not_exactly_once == 0),
            self.tasks_created,
            self.subtasks,
            self.not_exactly_once
        );
        out += &format!(
            "  balances conserved to the unit: {} (sponsor -{}, plans cost {}, executors +{}, escrow {:+})\n",
            check(
                self.sponsor_debit == self.plans_cost
                    && self.executors_credit == self.sponsor_debit
                    && self.escrow_change == "0"
            ),
            self.sponsor_debit,
            self.plans_cost,
            self.executors_credit,
            self.escrow_change.parse::<i128>().unwrap_or_default()
        );
        out
    }
}

/// A small deterministic generator (splitmix64): the trial's moments and
/// victims replay from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A replica's process, its API and its id as the lease names it.
struct Replica {
    /// Killed (SIGKILL) and reaped when dropped.
    _child: Running,
    api: String,
    id: String,
}

/// The trial's replicas, all with the same sponsor key.
struct Replicas<'a> {
    bench: &'a Bench,
    db: String,
    extra: Vec<String>,
    slots: Vec<Replica>,
}

impl Replicas<'_> {
    async fn start(&self, http: &reqwest::Client) -> Result<Replica> {
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        let rpc = self.bench.chain.endpoint_url();
        let (child, api) = self.bench.serve_with(&self.db, rpc.as_str(), true, 0, &extra)?;
        wait_up(http, &api).await?;
        let health: Value = http.get(format!("{api}/api/health")).send().await?.json().await?;
        let id = health["lane"]["replica"]
            .as_str()
            .ok_or_else(|| eyre!("{api} is not a replica: {health}"))?
            .to_owned();
        Ok(Replica { _child: child, api, id })
    }

    /// A live replica's API, at random.
    fn any(&self, rng: &mut Rng) -> &str {
        &self.slots[rng.below(self.slots.len() as u64) as usize].api
    }
}

/// Runs the trial.
pub async fn run(opts: &ChainOptions, cfg: &FailoverConfig) -> Result<FailoverReport> {
    if cfg.replicas < 2 {
        bail!("a failover trial needs at least two replicas");
    }
    if cfg.plans_per_wave == 0 {
        bail!("plans per wave must be at least 1");
    }
    let opts = ChainOptions { block_time: cfg.block_time, ..opts.clone() };
    let mut bench = Bench::start(&opts, "failover").await?;
    if let Some(exe) = &cfg.exe {
        bench.exe = exe.clone();
    }
    let _workers = workers(&bench).await?;
    let db = scratch(&cfg.postgres).await?;
    let store = Store::connect(&db).await.map_err(|e| eyre!("{db}: {e}"))?;
    let sponsor = bench.sponsors[0].address();
    let lane = sponsor.to_string().to_lowercase();
    let http = reqwest::Client::new();
    let mut rng = Rng(cfg.seed);
    let agents = Agents {
        summarizer: bench.actors.agent(1),
        sentiment: bench.actors.agent(3),
        extractor: bench.actors.agent(4),
    };
    let executors = [agents.summarizer, agents.sentiment, agents.extractor];
    let provider = bench.actors.provider(bench.chain.endpoint_url());
    let token = MockUSDC::new(bench.deployment.token, &provider);
    let balance = |who: Address| {
        let token = token.clone();
        async move { token.balanceOf(who).call().await.map_err(|e| eyre!("balance: {e}")) }
    };
    let escrow = bench.deployment.task_escrow;
    let mut before = HashMap::new();
    for who in [sponsor, escrow].into_iter().chain(executors) {
        before.insert(who, balance(who).await?);
    }

    let mut replicas = Replicas {
        bench: &bench,
        db: db.clone(),
        extra: vec![
            "--lease-ttl-ms".into(),
            cfg.lease_ttl_ms.to_string(),
            "--lease-heartbeat-ms".into(),
            cfg.heartbeat_ms.to_string(),
        ],
        slots: Vec::new(),
    };
    for _ in 0..cfg.replicas {
        let r = replicas.start(&http).await?;
        replicas.slots.push(r);
    }
    wait_holder(&store, &lane, &replicas, Duration::from_secs(30)).await?;

    let started = Instant::now();
    let started_ms = crate::load::now_ms();
    let mut ids: Vec<String> = Vec::new();
    let mut cost = U256::ZERO;
    let label = format!("failover-{}", cfg.seed);
    let mut kills = Vec::with_capacity(cfg.kills);
    for wave in 0..=cfg.kills {
        // A wave of plans, through any live replica.
        for _ in 0..cfg.plans_per_wave {
            let body = plan_json(&label, ids.len(), &agents);
            let api = replicas.any(&mut rng).to_owned();
            post(&http, format!("{api}/api/plans"), Some(&body)).await?;
            let id = body["id"].as_str().unwrap_or_default().to_owned();
            post(&http, format!("{api}/api/runs/{id}/approve"), None).await?;
            cost += plan_cost(&body);
            ids.push(id);
        }
        if wave == cfg.kills {
            break;
        }
        // A random moment while the wave is being driven: within 400 ms
        // of its approval on automine (a wave takes about a second), within
        // a block time otherwise.
        let holder = wait_holder(&store, &lane, &replicas, Duration::from_secs(60)).await?;
        let window = cfg.block_time.map_or(400, |secs| secs * 1_000);
        tokio::time::sleep(Duration::from_millis(rng.below(window))).await;
        // Three kills in four hit the holder (the case that orphans runs).
        let slot = if rng.below(4) < 3 {
            holder
        } else {
            let others: Vec<usize> = (0..replicas.slots.len()).filter(|&s| s != holder).collect();
            others[rng.below(others.len() as u64) as usize]
        };
        let live_runs = live(&store, &ids).await?;
        let victim = replicas.slots.remove(slot);
        let killed_id = victim.id.clone();
        let killed = Instant::now();
        drop(victim); // SIGKILL, reaped
        let held_lane = slot == holder;
        let takeover_ms = if held_lane {
            let deadline = Duration::from_millis(cfg.lease_ttl_ms * 4 + 10_000);
            loop {
                let row = store.lease(&lane).await.map_err(|e| eyre!("lease: {e}"))?;
                if let Some(owner) = row.and_then(|r| r.owner)
                    && owner != killed_id
                {
                    break Some(killed.elapsed().as_secs_f64() * 1e3);
                }
                if killed.elapsed() > deadline {
                    break None;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } else {
            None
        };
        eprintln!(
            "kill {}/{}: replica {slot}{} with {live_runs} runs live{}",
            kills.len() + 1,
            cfg.kills,
            if held_lane { " (the lane holder)" } else { "" },
            takeover_ms.map_or(String::new(), |ms| format!("; taken over in {ms:.0} ms"))
        );
        kills.push(Kill { slot, held_lane, takeover_ms, live_runs });
        // Back to full strength.
        let fresh = replicas.start(&http).await?;
        replicas.slots.insert(slot, fresh);
    }

    // Every plan ends.
    let deadline = Instant::now() + Duration::from_secs(600);
    let ended = loop {
        let mut ended = Vec::with_capacity(ids.len());
        for id in &ids {
            let run = store.run(id).await.map_err(|e| eyre!("run {id}: {e}"))?;
            let run = run.ok_or_else(|| eyre!("run {id} was lost"))?;
            let state = RunState::parse(&run.state).map_err(|e| eyre!("run {id}: {e}"))?;
            if state.is_ended() {
                ended.push((state, run.updated_at));
            }
        }
        if ended.len() == ids.len() || Instant::now() > deadline {
            break ended;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let completed: Vec<i64> =
        ended.iter().filter(|(s, _)| *s == RunState::Completed).map(|(_, at)| *at).collect();
    let last = completed.iter().copied().max().unwrap_or(started_ms);
    let seconds = ((last - started_ms) as f64 / 1e3).max(started.elapsed().as_secs_f64().min(1e-3));
    // Quiet before the balances are read: the replicas are stopped.
    replicas.slots.clear();

    // The escrow's own account of it.
    let plan_ids: Vec<B256> = ids.iter().filter_map(|id| id.parse().ok()).collect();
    let created = per_task(&bench, TaskEscrow::TaskCreated::SIGNATURE_HASH, &plan_ids).await?;
    let settled = per_task(&bench, TaskEscrow::TaskSettled::SIGNATURE_HASH, &plan_ids).await?;
    let not_exactly_once = created
        .iter()
        .filter(|(id, n)| **n != 1 || settled.get(id).copied().unwrap_or(0) != 1)
        .count();
    let after_sponsor = balance(sponsor).await?;
    let mut credit = U256::ZERO;
    for who in executors {
        credit += balance(who).await? - before[&who];
    }
    let escrow_now = balance(escrow).await?;
    let escrow_change = if escrow_now >= before[&escrow] {
        (escrow_now - before[&escrow]).to_string()
    } else {
        format!("-{}", before[&escrow] - escrow_now)
    };
    let mut takeovers: Vec<f64> = kills.iter().filter_map(|k| k.takeover_ms).collect();
    takeovers.sort_by(f64::total_cmp);
    Ok(FailoverReport {
        seed: cfg.seed,
        replicas: cfg.replicas,
        plans: ids.len(),
        completed: completed.len(),
        subtasks: ids.len() * 3,
        takeover_p50_ms: percentile(&takeovers, 0.5),
        takeover_p99_ms: percentile(&takeovers, 0.99),
        takeover_max_ms: takeovers.last().copied().unwrap_or(0.0),
        kills,
        lease_ttl_ms: cfg.lease_ttl_ms,
        tasks_created: created.len(),
        not_exactly_once,
        sponsor_debit: (before[&sponsor] - after_sponsor).to_string(),
        plans_cost: cost.to_string(),
        executors_credit: credit.to_string(),
        escrow_change,
        seconds,
    })
}

/// What a bench plan costs in all.
fn plan_cost(body: &Value) -> U256 {
    let subtasks = body["subtasks"].as_array().map(Vec::as_slice).unwrap_or_default();
    subtasks.iter().filter_map(|s| s["cost"].as_u64()).map(U256::from).sum()
}

/// The slot of the replica holding `lane`, once one does.
async fn wait_holder(
    store: &Store,
    lane: &str,
    replicas: &Replicas<'_>,
    within: Duration,
) -> Result<usize> {
    let end = Instant::now() + within;
    loop {
        let owner = store.lease(lane).await.map_err(|e| eyre!("lease: {e}"))?.and_then(|r| r.owner);
        if let Some(slot) = replicas.slots.iter().position(|r| Some(&r.id) == owner.as_ref()) {
            // Its API is ready once it holds the lane.
            wait_ready(&reqwest::Client::new(), &replicas.slots[slot].api).await?;
            return Ok(slot);
        }
        if Instant::now() > end {
            bail!("no replica held lane {lane} within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs of `ids` not over yet.
async fn live(store: &Store, ids: &[String]) -> Result<usize> {
    let mut n = 0;
    for id in ids {
        let run = store.run(id).await.map_err(|e| eyre!("run {id}: {e}"))?;
        if run.is_some_and(|r| RunState::parse(&r.state).is_ok_and(|s| !s.is_ended())) {
            n += 1;
        }
    }
    Ok(n)
}

/// How many logs with signature `sig` each task of plans `plans` has
/// (`TaskCreated` names the plan; other logs only the task).
async fn per_task(bench: &Bench, sig: B256, plans: &[B256]) -> Result<BTreeMap<U256, usize>> {
    let provider = bench.actors.provider(bench.chain.endpoint_url());
    let head = provider.get_block_number().await?;
    let mut of_plans = std::collections::BTreeSet::new();
    let mut out = BTreeMap::new();
    let mut from = bench.deployment.deploy_block;
    while from <= head {
        let to = head.min(from + 999);
        let created = TaskEscrow::TaskCreated::SIGNATURE_HASH;
        let filter = Filter::new()
            .address(bench.deployment.task_escrow)
            .event_signature(vec![sig, created])
            .from_block(from)
            .to_block(to);
        for log in provider.get_logs(&filter).await? {
            let Some(id) = log.topics().get(1).map(|t| U256::from_be_bytes(t.0)) else { continue };
            if log.topic0() == Some(&created) {
                let ev = TaskEscrow::TaskCreated::decode_log(&log.inner)
                    .map_err(|e| eyre!("TaskCreated: {e}"))?;
                if plans.contains(&ev.planId) {
                    of_plans.insert(id);
                }
            }
            if log.topic0() == Some(&sig) && of_plans.contains(&id) {
                *out.entry(id).or_default() += 1;
            }
        }
        from = to + 1;
    }
    Ok(out)
}
