//! The plan bench's report: its types and the table `make bench-plan`
//! prints.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Sample;

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
    /// Every scenario on automine and on timed blocks.
    pub scenarios: Vec<ScenarioRow>,
    /// Idle requests per block on timed blocks, by number of live runs.
    pub idle: Vec<IdleRow>,
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
        let mut out = String::new();
        // Without the automine rows (a hosted-only run), the table starts
        // with the scenarios.
        if self.plan_wall.n > 0 {
            out += &format!(
                "{:<44} {:>5} {:>10} {:>10} {:>10}\n",
                "measure", "n", "p50 ms", "p99 ms", "max ms"
            );
            out += &row(
                &format!("{}-step chain: approve -> plan settled", self.steps),
                &self.plan_wall,
            );
            out += &row("sub-task cycle: created -> paid", &self.subtask_cycle);
            out +=
                &row(&format!("baseline: {} direct lifecycles", self.steps), &self.baseline_wall);
            out += &format!(
                "orchestrated / direct: {:.2}x; goal p50 <= {:.0} ms: {}\n",
                self.ratio_to_baseline,
                self.goal_ms,
                if self.plan_wall.p50_ms <= self.goal_ms { "met" } else { "NOT met" }
            );
        }
        out += &format!(
            "\n{:<17} {:<26} {:>3} {:>7} {:>8} {:>7} {:>9} {:>9} {:>9}  {}\n",
            "mode",
            "scenario",
            "n",
            "blocks",
            "seconds",
            "blk/stp",
            "rpc orch",
            "rpc work",
            "USDC*s",
            "goal"
        );
        for s in &self.scenarios {
            out += &format!(
                "{:<17} {:<26} {:>3} {:>7.0} {:>8.2} {:>7.2} {:>9.1} {:>9.1} {:>9.1}  {}{}\n",
                s.mode,
                s.scenario,
                s.samples,
                s.blocks_p50,
                s.seconds_p50,
                s.blocks_per_step,
                s.orch_rpc_per_subtask,
                s.worker_rpc_per_subtask,
                s.locked_usdc_s,
                if s.goal.is_empty() {
                    String::new()
                } else {
                    format!("{}: {}", s.goal, if s.met { "met" } else { "NOT met" })
                },
                if s.creation.is_empty() { String::new() } else { format!("; {}", s.creation) },
            );
        }
        let hosted: Vec<_> = self.scenarios.iter().filter(|s| s.mode.contains("hosted")).collect();
        if !hosted.is_empty() {
            out += "\nThrough the stand-in hosted provider (25 req/s per client, 1 % 503s), per sample:\n";
            for s in hosted {
                out += &format!(
                    "  {}: 429s {:.1} ({:.1} to the orchestrator), 503s {:.1} ({:.1}); \
                     orchestrator retries {:.2} per sub-task; busiest worker {:.1} requests \
                     per sub-task (goal <= {WORKER_RPC_GOAL:.0}: {})\n",
                    s.scenario,
                    s.faults.rate_limited,
                    s.faults.orch_rate_limited,
                    s.faults.unavailable,
                    s.faults.orch_unavailable,
                    s.faults.orch_retries_per_subtask,
                    s.worker_rpc_per_subtask_max,
                    if s.worker_rpc_per_subtask_max <= WORKER_RPC_GOAL { "met" } else { "NOT met" },
                );
            }
        }
        if !self.idle.is_empty() {
            out += "\nIdle JSON-RPC requests per block, runs waiting at their review gates:\n";
            for i in &self.idle {
                let goal = if i.mode.contains("hosted") {
                    let verdict = |v: f64| if v <= IDLE_WORKER_GOAL { "met" } else { "NOT met" };
                    format!(
                        "; goal each worker <= {IDLE_WORKER_GOAL:.0}/block: {} with the \
                         provider's 429s and 503s asked again, {} without them \
                         (busiest {:.2}/block)",
                        verdict(i.worker_per_block_max),
                        verdict(i.worker_per_block_max_unfailed),
                        i.worker_per_block_max_unfailed,
                    )
                } else {
                    String::new()
                };
                out += &format!(
                    "  {:<12} {:>3} live run(s), {} blocks: orchestrator {:.2}/block, \
                     workers {:.2}/block (busiest {:.2}){goal}\n",
                    i.mode,
                    i.live_runs,
                    i.blocks,
                    i.orch_per_block,
                    i.worker_per_block,
                    i.worker_per_block_max,
                );
            }
        }
        out += "\nJSON-RPC requests per settled sub-task, by method (first sample of each timed scenario):\n";
        for s in self.scenarios.iter().filter(|s| s.mode != "automine") {
            let fmt = |m: &BTreeMap<String, f64>| {
                m.iter().map(|(k, v)| format!("{k} {v:.1}")).collect::<Vec<_>>().join(", ")
            };
            out += &format!("  {} orchestrator: {}\n", s.scenario, fmt(&s.orch_methods));
            out += &format!("  {} workers: {}\n", s.scenario, fmt(&s.worker_methods));
        }
        out
    }
}

pub(super) fn percentiles(mut ms: Vec<f64>) -> Percentiles {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| crate::percentile(&ms, q);
    Percentiles { n: ms.len(), p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) }
}

/// Requests per block while runs wait (at their review gates).
#[derive(Debug, Clone, Serialize)]
pub struct IdleRow {
    /// `N s blocks`, or `N s, hosted` through the stand-in hosted provider.
    pub mode: String,
    /// Runs live and waiting.
    pub live_runs: usize,
    /// Blocks counted over.
    pub blocks: u64,
    /// Orchestrator JSON-RPC requests per block.
    pub orch_per_block: f64,
    /// Workers' JSON-RPC requests per block (all five demo workers).
    pub worker_per_block: f64,
    /// The busiest worker's JSON-RPC requests per block.
    pub worker_per_block_max: f64,
    /// The same without the requests a stand-in answered 429 or 503 (each
    /// asked again, and counted in `worker_per_block_max`).
    pub worker_per_block_max_unfailed: f64,
}

/// An idle worker's goal through a hosted provider: requests per block.
pub const IDLE_WORKER_GOAL: f64 = 1.0;

/// A worker's goal through a hosted provider: requests per settled
/// sub-task, retries included.
pub const WORKER_RPC_GOAL: f64 = 10.0;

/// One scenario in one chain mode.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioRow {
    /// `automine` or `N s blocks`.
    pub mode: String,
    /// What was settled.
    pub scenario: String,
    /// Samples measured.
    pub samples: usize,
    /// Median blocks from approval to the last settlement.
    pub blocks_p50: f64,
    /// Median seconds from approval to the last `plan_completed`.
    pub seconds_p50: f64,
    /// Median blocks per sub-task on the longest dependency path.
    pub blocks_per_step: f64,
    /// Orchestrator JSON-RPC requests per settled sub-task (median).
    pub orch_rpc_per_subtask: f64,
    /// Workers' JSON-RPC requests per settled sub-task (median, all five demo workers).
    pub worker_rpc_per_subtask: f64,
    /// The busiest worker's JSON-RPC requests per settled sub-task, retries
    /// included (median over samples).
    pub worker_rpc_per_subtask_max: f64,
    /// Money the plan kept locked in the escrow times how long, USDC·s
    /// (median): each task's amount from its creation to its settlement.
    pub locked_usdc_s: f64,
    /// What the scenario checks about when tasks were created, and the value.
    pub creation: String,
    /// The goal for this scenario, and whether the median met it.
    pub goal: String,
    /// Whether the goal was met.
    pub met: bool,
    /// Orchestrator requests per settled sub-task, by method (first sample).
    pub orch_methods: BTreeMap<String, f64>,
    /// Workers' requests per settled sub-task, by method (first sample).
    pub worker_methods: BTreeMap<String, f64>,
    /// What a stand-in hosted provider answered with faults (all zero
    /// without one).
    pub faults: Faults,
}

/// The faults a stand-in hosted provider injected, mean per sample.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Faults {
    /// HTTP requests answered 429, to any service.
    pub rate_limited: f64,
    /// HTTP requests answered 503, to any service.
    pub unavailable: f64,
    /// The orchestrator's requests answered 429.
    pub orch_rate_limited: f64,
    /// The orchestrator's requests answered 503.
    pub orch_unavailable: f64,
    /// The orchestrator's requests sent again after a 429 or 503, per
    /// settled sub-task (counted in its requests per sub-task too).
    pub orch_retries_per_subtask: f64,
}

impl Faults {
    pub(super) fn of(rows: &[Sample]) -> Self {
        let n = rows.len().max(1) as f64;
        let mean = |f: &dyn Fn(&Sample) -> f64| rows.iter().map(f).sum::<f64>() / n;
        Self {
            rate_limited: mean(&|s| s.faults.0 as f64),
            unavailable: mean(&|s| s.faults.1 as f64),
            orch_rate_limited: mean(&|s| s.orch.rate_limited as f64),
            orch_unavailable: mean(&|s| s.orch.unavailable as f64),
            orch_retries_per_subtask: mean(&|s| {
                (s.orch.rate_limited + s.orch.unavailable) as f64 / s.subtasks as f64
            }),
        }
    }
}

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    percentiles(std::mem::take(&mut v)).p50_ms
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
