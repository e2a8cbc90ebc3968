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

use std::{collections::BTreeMap, time::Instant};

use tessera_anvil::{chain::ChainOptions, lifecycle::Driver};
use tessera_orchestrator::plan::{Funding, Plan};
use tessera_stack::Error;

use crate::rpc_proxy::Counts;

mod locked;
mod report;
mod stack;

pub use report::{
    Faults, IDLE_WORKER_GOAL, IdleRow, Percentiles, PlanBenchReport, ScenarioRow, WORKER_RPC_GOAL,
};
use report::{median, percentiles};
use stack::{HOSTED_IDLE_BLOCKS, IDLE_BLOCKS, Sample, Shape, Stack};

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
    /// Only those rows through the stand-in: no automine chain, no
    /// baseline, no direct timed rows.
    pub hosted_only: bool,
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
            hosted_only: false,
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
    let busiest: Vec<f64> = rows
        .iter()
        .map(|s| {
            let most = s.per_worker.iter().map(Counts::total).max().unwrap_or_default();
            most as f64 / s.subtasks as f64
        })
        .collect();
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
        worker_rpc_per_subtask_max: median(busiest),
        creation,
        goal,
        met,
        orch_methods: per_subtask(&first.orch, first.subtasks),
        worker_methods: per_subtask(&first.workers, first.subtasks),
        faults: Faults::of(&rows),
    })
}

/// The rows through the stand-in hosted provider on `timed` blocks: the
/// chain and the fan-out, then an idle worker's cost with one run waiting.
async fn hosted(
    timed: &ChainOptions,
    cfg: &PlanBenchConfig,
    seed: u64,
    scenarios: &mut Vec<ScenarioRow>,
    idle: &mut Vec<IdleRow>,
) -> Result<(), Error> {
    let secs = timed.block_time.unwrap_or(2);
    let stack = Stack::start_hosted(Stack::chain(timed).await?, secs, seed).await?;
    let mode = format!("{secs} s, hosted");
    for shape in [Shape::Chain(cfg.steps), Shape::FanOut] {
        let (samples, funding) = (cfg.timed_runs, Funding::Stepwise);
        scenarios.push(scenario(&stack, &mode, shape, samples, Some(secs), funding).await?);
    }
    stack.park(1, "idle-hosted").await?;
    idle.push(stack.idle((&mode, secs), 1, HOSTED_IDLE_BLOCKS).await?);
    Ok(())
}

/// [`run`] with [`PlanBenchConfig::hosted_only`]: the hosted rows alone.
async fn hosted_only(opts: &ChainOptions, cfg: &PlanBenchConfig) -> Result<PlanBenchReport, Error> {
    let (mut scenarios, mut idle) = (Vec::new(), Vec::new());
    let timed = ChainOptions { block_time: Some(cfg.block_time.unwrap_or(2)), ..opts.clone() };
    hosted(&timed, cfg, cfg.hosted_seed.unwrap_or(HOSTED_SEED), &mut scenarios, &mut idle).await?;
    let none = percentiles(Vec::new());
    Ok(PlanBenchReport {
        steps: cfg.steps,
        ratio_to_baseline: 0.0,
        plan_wall: none.clone(),
        subtask_cycle: none.clone(),
        baseline_wall: none,
        goal_ms: 1500.0,
        scenarios,
        idle,
    })
}

/// Runs the bench: the automine chain bench and its direct baseline, then
/// every scenario on automine and on a chain with `block_time` blocks.
pub async fn run(opts: &ChainOptions, cfg: &PlanBenchConfig) -> Result<PlanBenchReport, Error> {
    if cfg.steps == 0 || cfg.runs == 0 {
        return Err(Error::AtLeastOne("steps and runs"));
    }
    if cfg.hosted_only {
        return hosted_only(opts, cfg).await;
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
        idle.push(stack.idle((&mode, secs), 1, IDLE_BLOCKS).await?);
        stack.park(9, "idle-b").await?;
        idle.push(stack.idle((&mode, secs), 10, IDLE_BLOCKS).await?);
        drop(stack);
        if let Some(seed) = cfg.hosted_seed {
            hosted(&timed, cfg, seed, &mut scenarios, &mut idle).await?;
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
