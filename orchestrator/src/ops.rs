//! The orchestrator's metrics ([`METRICS`]) and readiness (served by
//! `tessera_http::ops`): runs by state read from the store at each scrape,
//! sub-task phase latencies observed when the runner sees a step, the
//! decisions it applied, the lanes' leases, and `/readyz` answering once the
//! run store and the chain both do (and, in replica mode, once this replica
//! holds its lane's lease).

use alloy::rpc::types::Log;
use tessera_bindings::{
    TaskEscrow::TaskEscrowEvents,
    task::{Status, decode_log},
};
use tessera_http::ops::{Kind, Metric, Ops};

use crate::{replica::Lane, runner::Orchestrator, state::Phase, store::Store};

/// Runs by state (`state`: proposed, running, paused, cancelling, completed,
/// cancelled, failed), read from the run store at each scrape.
pub const RUNS: &str = "tessera_runs";
/// Seconds between two steps of a sub-task's task, in chain time.
pub const PHASE_SECONDS: &str = "tessera_subtask_phase_seconds";
/// Run decisions the runner applied.
pub const DECISIONS: &str = "tessera_decisions_applied_total";
/// Whether this process holds a lane's run lease.
pub const LEASE_OWNED: &str = "tessera_lease_owned";
/// Leases this process took over from another holder.
pub const LEASE_TAKEOVERS: &str = "tessera_lease_takeovers_total";

/// Buckets of [`PHASE_SECONDS`]: a second to a day.
pub const PHASE_BUCKETS: &[f64] =
    &[1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 21600.0, 86400.0];

/// The orchestrator's metrics.
pub const METRICS: &[Metric] = &[
    Metric {
        name: RUNS,
        kind: Kind::Gauge,
        labels: &["state"],
        help: "Runs in each state, read from the run store at each scrape.",
        buckets: &[],
    },
    Metric {
        name: PHASE_SECONDS,
        kind: Kind::Histogram,
        labels: &["phase"],
        help: "Seconds (block time) a sub-task's task spent before each step: created_to_accepted, accepted_to_completed, completed_to_paid (a delivery, accepted and completed in one call, has accepted_to_completed 0); observed when the runner sees the step.",
        buckets: PHASE_BUCKETS,
    },
    Metric {
        name: DECISIONS,
        kind: Kind::Counter,
        labels: &["kind", "ok"],
        help: "Run decisions the runner applied (approve, dispute, retry, executor, cancel, checkpoint, appeal), by whether they succeeded.",
        buckets: &[],
    },
    Metric {
        name: LEASE_OWNED,
        kind: Kind::Gauge,
        labels: &["lane"],
        help: "1 while this process holds the lane's run lease, 0 once it lost or released it.",
        buckets: &[],
    },
    Metric {
        name: LEASE_TAKEOVERS,
        kind: Kind::Counter,
        labels: &["lane"],
        help: "Run leases this process took over after their holder's lease expired.",
        buckets: &[],
    },
];

/// Sets [`RUNS`] for each `(state, runs)`.
pub fn runs(counts: &[(&'static str, u64)]) {
    for &(state, n) in counts {
        metrics::gauge!(RUNS, "state" => state).set(n as f64);
    }
}

/// Observes one [`PHASE_SECONDS`] sample of `phase`
/// (`created_to_accepted`, `accepted_to_completed`, `completed_to_paid`).
pub fn phase_seconds(phase: &'static str, seconds: f64) {
    metrics::histogram!(PHASE_SECONDS, "phase" => phase).record(seconds);
}

/// Counts one decision of `kind` applied, successfully or not.
pub fn decision_applied(kind: &'static str, ok: bool) {
    metrics::counter!(DECISIONS, "kind" => kind, "ok" => if ok { "true" } else { "false" })
        .increment(1);
}

/// Sets [`LEASE_OWNED`] of `lane`: this process holds its lease or not.
pub fn lease_owned(lane: &str, owned: bool) {
    metrics::gauge!(LEASE_OWNED, "lane" => lane.to_owned()).set(if owned { 1.0 } else { 0.0 });
}

/// Counts one [`LEASE_TAKEOVERS`] of `lane`.
pub fn lease_takeover(lane: &str) {
    metrics::counter!(LEASE_TAKEOVERS, "lane" => lane.to_owned()).increment(1);
}

/// The service's `/metrics`, `/healthz` and `/readyz` over `orch`: ready
/// when its store answers `SELECT 1` and its chain `eth_blockNumber`.
pub fn service_ops(orch: &Orchestrator) -> Ops {
    let store = orch.store().clone();
    let scraped = store.clone();
    let provider = orch.chain().provider().clone();
    Ops::with_metrics(&[METRICS])
        .ready_when("database", move || {
            let store = store.clone();
            async move { store.ping().await.map_err(|e| e.to_string()) }
        })
        .ready_when("chain", tessera_bindings::client::chain_ready(provider))
        .on_scrape(move || {
            let store = scraped.clone();
            async move { refresh_runs(&store).await }
        })
}

/// In replica mode, `/readyz` also asks that this replica hold its lane's
/// lease: a standby answers 503 (`lease`), so a load balancer that follows
/// readiness sends to the holder.
pub fn with_lease(ops: Ops, lane: std::sync::Arc<Lane>) -> Ops {
    ops.ready_when("lease", move || {
        std::future::ready(if lane.holds() {
            Ok(())
        } else {
            Err(format!("standby: another replica holds the lease of lane {}", lane.name()))
        })
    })
}

/// Sets `tessera_runs{state}` for every state (0 for those without runs).
pub async fn refresh_runs(store: &Store) {
    match store.runs_by_state().await {
        Ok(counts) => runs(&counts),
        Err(e) => tracing::warn!(error = %e, "counting runs by state for /metrics"),
    }
}

/// The steps a sub-task's task reached, in order: created (0), accepted
/// (1), completed (2), paid (3).
fn reached(phase: Phase) -> u8 {
    match phase {
        Phase::Waiting | Phase::Skipped => 0,
        Phase::Chain(s) => match s {
            Status::None
            | Status::Created
            | Status::Cancelled
            | Status::Expired
            | Status::Declined => 0,
            Status::Accepted => 1,
            Status::Completed
            | Status::Disputed
            | Status::Ruled
            | Status::Appealed
            | Status::Refunded => 2,
            Status::Paid | Status::Split => 3,
        },
    }
}

/// The phase latency names, by the step they end at.
const PHASES: [(u8, &str); 3] =
    [(1, "created_to_accepted"), (2, "accepted_to_completed"), (3, "completed_to_paid")];

/// Block times of a task's steps from its logs: when it was created (or
/// last reassigned), accepted, completed, and paid. A delivery (the
/// executor accepts and completes in one call) is accepted when it completed.
fn step_times(logs: &[Log]) -> [Option<u64>; 4] {
    let mut at = [None; 4];
    for log in logs {
        match decode_log(log) {
            Some(TaskEscrowEvents::TaskCreated(e)) => at[0] = Some(e.task.updatedAt.to::<u64>()),
            // A new executor starts over from here.
            Some(TaskEscrowEvents::TaskReassigned(e)) => {
                at = [Some(e.at.to::<u64>()), None, None, None]
            }
            Some(TaskEscrowEvents::TaskAccepted(e)) => at[1] = Some(e.at.to::<u64>()),
            Some(TaskEscrowEvents::TaskCompleted(e)) => at[2] = Some(e.at.to::<u64>()),
            Some(TaskEscrowEvents::TaskSettled(e))
                if matches!(Status::try_from(e.status), Ok(Status::Paid | Status::Split)) =>
            {
                at[3] = Some(e.at.to::<u64>());
            }
            _ => {}
        }
    }
    if at[1].is_none() {
        at[1] = at[2];
    }
    at
}

/// The phase latencies a move from `before` to `after` completes, in
/// seconds of block time: each step passed in the move whose start and end
/// the logs date. A restarted runner that finds a sub-task further along
/// observes the steps it had not seen; a step seen once is not seen again.
pub fn phase_latencies(before: Phase, after: Phase, logs: &[Log]) -> Vec<(&'static str, f64)> {
    let (from, to) = (reached(before), reached(after));
    if to <= from {
        return Vec::new();
    }
    let at = step_times(logs);
    PHASES
        .iter()
        .filter(|(step, _)| (from + 1..=to).contains(step))
        .filter_map(|&(step, name)| {
            let (start, end) = (at[usize::from(step) - 1]?, at[usize::from(step)]?);
            Some((name, end.saturating_sub(start) as f64))
        })
        .collect()
}

/// Records [`phase_latencies`] of a move.
pub fn observe_phases(before: Phase, after: Phase, logs: &[Log]) {
    for (phase, seconds) in phase_latencies(before, after, logs) {
        phase_seconds(phase, seconds);
    }
}

#[cfg(test)]
mod tests {
    use alloy::{
        primitives::{Address, B256, LogData, U256, aliases::U40},
        sol_types::SolEvent,
    };
    use tessera_bindings::{ITaskEscrow::Task, TaskEscrow};

    use super::*;

    fn log(data: LogData) -> Log {
        Log { inner: alloy::primitives::Log { address: Address::ZERO, data }, ..Log::default() }
    }

    fn history() -> Vec<Log> {
        let id = U256::from(7);
        let task = Task { updatedAt: U40::from(100), ..Task::default() };
        vec![
            log(TaskEscrow::TaskCreated {
                taskId: id,
                planId: B256::ZERO,
                parentId: U256::ZERO,
                r#ref: B256::ZERO,
                capability: B256::ZERO,
                task,
                specURI: String::new(),
            }
            .encode_log_data()),
            log(TaskEscrow::TaskAccepted {
                taskId: id,
                executor: Address::ZERO,
                at: U40::from(103),
            }
            .encode_log_data()),
            log(TaskEscrow::TaskCompleted {
                taskId: id,
                executor: Address::ZERO,
                resultURI: String::new(),
                at: U40::from(110),
            }
            .encode_log_data()),
            log(TaskEscrow::TaskSettled {
                taskId: id,
                status: Status::Paid as u8,
                settlement: 0,
                executorAmount: 1,
                funderAmount: 0,
                rating: 100,
                at: U40::from(111),
            }
            .encode_log_data()),
        ]
    }

    #[test]
    fn recorded_metrics_render_with_their_names_labels_and_help() {
        let text = tessera_http::ops::render_with(&[METRICS], || {
            runs(&[("completed", 2), ("running", 0)]);
            phase_seconds("created_to_accepted", 3.0);
            phase_seconds("created_to_accepted", 7.0);
            decision_applied("approve", true);
            lease_owned("lane-0", true);
            lease_takeover("lane-0");
        });
        for line in [
            "tessera_runs{state=\"completed\"} 2",
            "tessera_runs{state=\"running\"} 0",
            "tessera_subtask_phase_seconds_bucket{phase=\"created_to_accepted\",le=\"5\"} 1",
            "tessera_subtask_phase_seconds_bucket{phase=\"created_to_accepted\",le=\"+Inf\"} 2",
            "tessera_subtask_phase_seconds_sum{phase=\"created_to_accepted\"} 10",
            "tessera_subtask_phase_seconds_count{phase=\"created_to_accepted\"} 2",
            "tessera_decisions_applied_total{kind=\"approve\",ok=\"true\"} 1",
            "tessera_lease_owned{lane=\"lane-0\"} 1",
            "tessera_lease_takeovers_total{lane=\"lane-0\"} 1",
            "# TYPE tessera_subtask_phase_seconds histogram",
            "# TYPE tessera_runs gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
        }
        // Every metric of the table, recorded above, has its help line.
        tessera_http::ops::check(METRICS).unwrap();
        for m in METRICS {
            assert!(text.contains(&format!("# HELP {} ", m.name)), "no help for {}", m.name);
        }
    }

    #[tokio::test]
    async fn a_standby_replica_is_not_ready() {
        let lane = Lane::new(crate::replica::ReplicaConfig::new("postgres://x"), Address::ZERO);
        let name = lane.name().to_owned();
        let ops = with_lease(Ops::with_metrics(&[METRICS]), std::sync::Arc::new(lane));
        let (ready, checks) = ops.readiness().await;
        assert!(!ready);
        assert_eq!(
            checks["lease"],
            format!("standby: another replica holds the lease of lane {name}")
        );
    }

    #[test]
    fn each_step_passed_is_observed_once_in_block_time() {
        let logs = history();
        let created = Phase::Chain(Status::Created);
        let paid = Phase::Chain(Status::Paid);
        assert_eq!(
            phase_latencies(created, paid, &logs),
            vec![
                ("created_to_accepted", 3.0),
                ("accepted_to_completed", 7.0),
                ("completed_to_paid", 1.0)
            ]
        );
        let completed = Phase::Chain(Status::Completed);
        assert_eq!(phase_latencies(completed, paid, &logs), vec![("completed_to_paid", 1.0)]);
        assert_eq!(phase_latencies(paid, paid, &logs), vec![]);
        assert_eq!(phase_latencies(Phase::Waiting, created, &logs), vec![]);
        // Steps the logs do not date are skipped.
        assert_eq!(phase_latencies(Phase::Waiting, paid, &logs[..1]), Vec::<(&str, f64)>::new());
        // A delivery is accepted and completed at once.
        let delivered = [logs[0].clone(), logs[2].clone(), logs[3].clone()];
        assert_eq!(
            phase_latencies(created, paid, &delivered),
            vec![
                ("created_to_accepted", 10.0),
                ("accepted_to_completed", 0.0),
                ("completed_to_paid", 1.0)
            ]
        );
    }
}
