//! What the load bench reports: one row per round, and the table with its
//! goals.

use serde::Serialize;

/// One round: `plans` plans on one chain mode.
#[derive(Debug, Clone, Serialize)]
pub struct LoadRow {
    /// `automine` or `N s blocks`.
    pub mode: String,
    /// Where the runs were stored.
    pub store: String,
    /// Replicas serving.
    pub replicas: usize,
    /// Plans settled.
    pub plans: usize,
    /// Sub-tasks settled.
    pub subtasks: usize,
    /// Seconds from the first approval to the last completion.
    pub seconds: f64,
    /// Sub-tasks settled per second.
    pub subtasks_per_sec: f64,
    /// Direct lifecycles per second on the same chain.
    pub baseline_per_sec: f64,
    /// Orchestrated throughput over direct throughput.
    pub ratio_to_baseline: f64,
    /// Approve → completed, per plan.
    pub latency_p50_ms: f64,
    /// Approve → completed, per plan.
    pub latency_p99_ms: f64,
    /// Highest peak RSS among the replicas, MiB.
    pub peak_rss_mib: f64,
    /// CPU seconds over wall seconds, all replicas together (1.0 = one core).
    pub cpu_cores: f64,
    /// Run store size after the round, MiB.
    pub db_mib: f64,
    /// JSON-RPC requests of the replicas per settled sub-task.
    pub rpc_per_subtask: f64,
    /// JSON-RPC requests of the replicas per block the round spanned.
    pub rpc_per_block: f64,
    /// Blocks the round spanned.
    pub blocks: u64,
    /// Lane leases that changed hands during the round, over every replica
    /// (`tessera_lease_takeovers_total`).
    pub lease_handovers: u64,
    /// PostgreSQL: the share of lock samples (one every 50 ms, of
    /// `pg_stat_activity`) in which a session of the run store waited on a lock.
    pub lock_wait_share: Option<f64>,
    /// PostgreSQL: sessions waiting on a lock, summed over the samples.
    pub lock_waiting: Option<u64>,
    /// PostgreSQL: lock samples taken.
    pub lock_samples: Option<u64>,
    /// JSON-RPC requests per block, by method.
    pub rpc_per_block_by_method: std::collections::BTreeMap<String, f64>,
    /// `eth_call`s per block, by the contract function called.
    pub eth_call_per_block_by_function: std::collections::BTreeMap<String, f64>,
}

/// The bench's results.
#[derive(Debug, Clone, Serialize)]
pub struct LoadBenchReport {
    /// Every round.
    pub rows: Vec<LoadRow>,
}

impl LoadBenchReport {
    /// A printable table, with the goals.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<12} {:<10} {:>3} {:>6} {:>8} {:>9} {:>9} {:>7} {:>9} {:>9} {:>8} {:>6} {:>7} {:>8} {:>8}\n",
            "mode",
            "store",
            "rep",
            "plans",
            "seconds",
            "subtask/s",
            "direct/s",
            "ratio",
            "p50 ms",
            "p99 ms",
            "rss MiB",
            "cpu",
            "db MiB",
            "rpc/task",
            "rpc/blk"
        );
        for r in &self.rows {
            out += &format!(
                "{:<12} {:<10} {:>3} {:>6} {:>8.1} {:>9.2} {:>9.2} {:>7.2} {:>9.0} {:>9.0} {:>8.1} {:>6.2} {:>7.2} {:>8.1} {:>8.1}\n",
                r.mode,
                r.store,
                r.replicas,
                r.plans,
                r.seconds,
                r.subtasks_per_sec,
                r.baseline_per_sec,
                r.ratio_to_baseline,
                r.latency_p50_ms,
                r.latency_p99_ms,
                r.peak_rss_mib,
                r.cpu_cores,
                r.db_mib,
                r.rpc_per_subtask,
                r.rpc_per_block
            );
        }
        out += "\nRequests per block, by method:\n";
        for r in &self.rows {
            let methods: Vec<String> =
                r.rpc_per_block_by_method.iter().map(|(m, n)| format!("{m} {n:.2}")).collect();
            out += &format!("  {} {} plans: {}\n", r.mode, r.plans, methods.join(", "));
        }
        out += "\neth_call per block, by function:\n";
        for r in &self.rows {
            let functions: Vec<String> = r
                .eth_call_per_block_by_function
                .iter()
                .map(|(f, n)| format!("{f} {n:.2}"))
                .collect();
            out += &format!("  {} {} plans: {}\n", r.mode, r.plans, functions.join(", "));
        }
        out += "\nGoals:\n";
        for r in &self.rows {
            let within = r.subtasks_per_sec * 2.0 >= r.baseline_per_sec;
            let rss = r.peak_rss_mib < 100.0;
            out += &format!(
                "  {} ({} plans, {} replica(s)): throughput within 2x of direct: {} (orchestrated {:.2}x direct); RSS < 100 MiB: {} ({:.1} MiB)\n",
                r.mode,
                r.plans,
                r.replicas,
                if within { "met" } else { "NOT met" },
                r.ratio_to_baseline,
                if rss { "met" } else { "NOT met" },
                r.peak_rss_mib
            );
        }
        // Requests per block against the number of live sub-tasks: the
        // small and the full round of each timed mode side by side.
        let timed: Vec<&LoadRow> =
            self.rows.iter().filter(|r| r.mode != "automine" && r.store == "sqlite").collect();
        if let [small, .., full] = timed.as_slice() {
            out += &format!(
                "  requests per block do not grow with live sub-tasks: {} ({:.1}/block at {} plans, {:.1}/block at {})\n",
                if full.rpc_per_block <= small.rpc_per_block * 1.5 + 2.0 {
                    "met"
                } else {
                    "NOT met"
                },
                small.rpc_per_block,
                small.plans,
                full.rpc_per_block,
                full.plans
            );
        }
        // What the replicas contended over, per PostgreSQL row.
        let pg: Vec<&LoadRow> = self.rows.iter().filter(|r| r.store == "postgres").collect();
        if !pg.is_empty() {
            out += "
Contention (PostgreSQL rounds): lease hand-overs, and lock waits sampled every 50 ms:
";
        }
        for r in pg {
            out += &format!(
                "  {} {} plans, {} replica(s): lease hand-overs {}; lock waits in {:.1}% of {} samples ({} waiting sessions in all)
",
                r.mode,
                r.plans,
                r.replicas,
                r.lease_handovers,
                100.0 * r.lock_wait_share.unwrap_or(0.0),
                r.lock_samples.unwrap_or(0),
                r.lock_waiting.unwrap_or(0),
            );
        }
        out += "
Goals, replicas:
";
        // Scale-out: each number of replicas against one, per chain mode
        // (goals: throughput at least one replica's, p99 within 1.5x of it).
        for mode in ["automine".to_owned()]
            .into_iter()
            .chain(self.rows.iter().map(|r| r.mode.clone()).filter(|m| m != "automine").take(1))
        {
            let pg: Vec<&LoadRow> =
                self.rows.iter().filter(|r| r.mode == mode && r.store == "postgres").collect();
            let Some(one) = pg.iter().find(|r| r.replicas == 1) else { continue };
            let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
            for more in pg.iter().filter(|r| r.replicas > 1) {
                let x = more.subtasks_per_sec / one.subtasks_per_sec.max(f64::MIN_POSITIVE);
                let p99 = more.latency_p99_ms / one.latency_p99_ms.max(f64::MIN_POSITIVE);
                out += &format!(
                    "  {mode}: {} replicas against one: throughput {x:.2}x (goal >= 1: {}), \
                     p99 {p99:.2}x (goal <= 1.5: {}); CPU {:.2} vs {:.2} cores of this \
                     machine's {}\n",
                    more.replicas,
                    verdict(x >= 1.0),
                    verdict(p99 <= 1.5),
                    more.cpu_cores,
                    one.cpu_cores,
                    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                );
            }
        }
        out
    }
}
