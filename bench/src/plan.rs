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

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use serde::Serialize;
use tessera_bindings::usdc::Usdc;
use tessera_orchestrator::{
    plan::{Plan, ReviewMode, SubTask},
    runner::RunnerConfig,
    store::Store,
};

use tessera_anvil::{
    Error,
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DEMO_AGENTS, DeployConfig},
    lifecycle::Driver,
    stack::{Blobs, spawn_worker, start_orchestrator},
};

/// What to measure.
#[derive(Debug, Clone)]
pub struct PlanBenchConfig {
    /// Sub-tasks per chain plan.
    pub steps: usize,
    /// Plans measured (after one warm-up plan).
    pub runs: usize,
}

impl Default for PlanBenchConfig {
    fn default() -> Self {
        Self { steps: 5, runs: 10 }
    }
}

/// Percentiles of a sample, in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub n: usize,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// The bench's results.
#[derive(Debug, Clone, Serialize)]
pub struct PlanBenchReport {
    /// Sub-tasks per plan.
    pub steps: usize,
    /// Approve → `plan_completed`, per plan.
    pub plan_wall: Percentiles,
    /// `subtask_created` → `subtask_paid`, per sub-task.
    pub subtask_cycle: Percentiles,
    /// The same number of lifecycles sent directly, per chain.
    pub baseline_wall: Percentiles,
    /// Median plan wall time over median baseline.
    pub ratio_to_baseline: f64,
    /// The goal for the median plan wall time, ms.
    pub goal_ms: f64,
}

impl PlanBenchReport {
    /// A printable table.
    pub fn table(&self) -> String {
        let row = |name: &str, p: &Percentiles| {
            format!(
                "{name:<44} {:>5} {:>10.1} {:>10.1} {:>10.1}\n",
                p.n, p.p50_ms, p.p99_ms, p.max_ms
            )
        };
        let mut out = format!(
            "{:<44} {:>5} {:>10} {:>10} {:>10}\n",
            "measure", "n", "p50 ms", "p99 ms", "max ms"
        );
        out +=
            &row(&format!("{}-step chain: approve -> plan settled", self.steps), &self.plan_wall);
        out += &row("sub-task cycle: created -> paid", &self.subtask_cycle);
        out += &row(&format!("baseline: {} direct lifecycles", self.steps), &self.baseline_wall);
        out += &format!(
            "orchestrated / direct: {:.2}x; goal p50 <= {:.0} ms: {}\n",
            self.ratio_to_baseline,
            self.goal_ms,
            if self.plan_wall.p50_ms <= self.goal_ms { "met" } else { "NOT met" }
        );
        out
    }
}

fn percentiles(mut ms: Vec<f64>) -> Percentiles {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if ms.is_empty() {
            return 0.0;
        }
        let i = ((ms.len() as f64 - 1.0) * q).round() as usize;
        ms[i.min(ms.len() - 1)]
    };
    Percentiles { n: ms.len(), p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) }
}

const SOURCE: &str = "Tessera settles each sub-task through an escrow. Workers accept and \
deliver results on chain. The orchestrator approves and pays each one. Results flow forward \
to the next step, so a chain of steps builds on what came before.";

/// Runs the bench on a fresh chain.
pub async fn run(opts: &ChainOptions, cfg: &PlanBenchConfig) -> Result<PlanBenchReport, Error> {
    if cfg.steps == 0 || cfg.runs == 0 {
        return Err(Error::Orchestrator("steps and runs must be at least 1".into()));
    }
    let chain = LocalChain::start(opts)?;
    let actors = Actors::from_keys(&chain.keys())?;
    let provider = actors.provider(chain.endpoint_url());
    let deployment = deploy::deploy(&provider, &actors, &DeployConfig::default()).await?;
    deploy::register_demo_agents(&provider, &actors, deployment.agent_registry).await?;

    // Baseline: the same lifecycles, sent back to back.
    let mut baseline = Vec::new();
    {
        let mut d = Driver::new(provider.clone(), &actors, &deployment);
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

    let blobs: Blobs = Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
    let mut tasks = Vec::new();
    for agent in DEMO_AGENTS {
        tasks.push(spawn_worker(&chain, &actors, &deployment, agent, Arc::clone(&blobs)).await?);
    }
    let dir = std::env::temp_dir().join(format!("tessera-bench-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|source| Error::Io { path: dir.display().to_string(), source })?;
    let db = format!("sqlite://{}", dir.join("runs.db").display());
    let store = Store::connect(&db).await.map_err(|e| Error::Orchestrator(e.to_string()))?;
    let (orch, heads) = start_orchestrator(
        &chain,
        &actors,
        &deployment,
        store,
        Arc::clone(&blobs),
        RunnerConfig::default(),
    )
    .await?;
    tasks.push(heads);

    let caps: [(&str, usize, u128, &str); 3] = [
        ("summarize", 1, 400_000, "Summarize the material"),
        ("sentiment-classify", 3, 200_000, "Classify the tone of the material"),
        ("extract-entities", 4, 250_000, "List the entities in the material"),
    ];
    let mut walls = Vec::new();
    let mut cycles = Vec::new();
    for run in 0..=cfg.runs {
        let mut plan = Plan::new(
            Plan::id_from_label(&format!("bench-plan-{}-{run}", std::process::id())),
            Usdc::from_base_units(u128::MAX / 2),
            ReviewMode::Auto,
        );
        plan.source = Some(SOURCE.into());
        plan.subtasks = (0..cfg.steps)
            .map(|i| {
                let (cap, agent, price, spec) = caps[i % caps.len()];
                SubTask {
                    index: i as u32,
                    capability: cap.into(),
                    spec: spec.into(),
                    executor: Some(actors.agent(agent)),
                    cost: Usdc::from_base_units(price),
                    deadline_offset_secs: 3600,
                    depends_on: if i == 0 { vec![] } else { vec![i as u32 - 1] },
                }
            })
            .collect();
        let id = plan.id.to_string();
        orch.propose(plan).await.map_err(|e| Error::Orchestrator(e.to_string()))?;
        let mut events = orch.subscribe();
        let started = Instant::now();
        orch.approve(&id, None).await.map_err(|e| Error::Orchestrator(e.to_string()))?;
        let mut created: HashMap<u64, Instant> = HashMap::new();
        let mut run_cycles = Vec::new();
        let outcome = tokio::time::timeout(Duration::from_secs(120), async {
            while let Ok(ev) = events.recv().await {
                if ev.run_id != id {
                    continue;
                }
                let body: serde_json::Value = serde_json::from_str(&ev.body).unwrap_or_default();
                let index = body["index"].as_u64().unwrap_or_default();
                match ev.kind.as_str() {
                    "subtask_created" => {
                        created.insert(index, Instant::now());
                    }
                    "subtask_paid" => {
                        if let Some(t) = created.get(&index) {
                            run_cycles.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                    }
                    "plan_completed" => return Ok(()),
                    "plan_failed" => return Err(body["reason"].to_string()),
                    _ => {}
                }
            }
            Err("event stream closed".to_owned())
        })
        .await;
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => {
                return Err(Error::Orchestrator(format!("bench plan failed: {reason}")));
            }
            Err(_) => return Err(Error::Orchestrator("bench plan did not settle in 120 s".into())),
        }
        if run > 0 {
            walls.push(started.elapsed().as_secs_f64() * 1e3);
            cycles.extend(run_cycles);
        }
    }
    for t in tasks {
        t.abort();
    }
    let _ = std::fs::remove_dir_all(&dir);
    let plan_wall = percentiles(walls);
    let baseline_wall = percentiles(baseline);
    Ok(PlanBenchReport {
        steps: cfg.steps,
        ratio_to_baseline: plan_wall.p50_ms / baseline_wall.p50_ms.max(f64::MIN_POSITIVE),
        plan_wall,
        subtask_cycle: percentiles(cycles),
        baseline_wall,
        goal_ms: 1500.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_ranks() {
        let p = percentiles((1..=100).map(f64::from).collect());
        assert_eq!(p.n, 100);
        assert_eq!(p.p50_ms, 51.0);
        assert_eq!(p.p99_ms, 99.0);
        assert_eq!(p.max_ms, 100.0);
        assert_eq!(percentiles(vec![]).p50_ms, 0.0);
    }
}
