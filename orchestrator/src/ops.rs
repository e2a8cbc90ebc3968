//! The orchestrator's metrics and readiness (see `tessera_http::ops` for
//! every name): runs by state read from the store at each scrape, sub-task
//! phase latencies observed when the runner sees a step, and `/readyz`
//! answering once the run store and the chain both do (and, in replica
//! mode, once this replica holds its lane's lease).

use alloy::rpc::types::Log;
use tessera_bindings::{
    TaskEscrow::TaskEscrowEvents,
    task::{Status, decode_log},
};
use tessera_http::ops::{self, Ops};

use crate::{replica::Lane, runner::Orchestrator, state::Phase, store::Store};

/// The service's `/metrics`, `/healthz` and `/readyz` over `orch`: ready
/// when its store answers `SELECT 1` and its chain `eth_blockNumber`.
pub fn service_ops(orch: &Orchestrator) -> Ops {
    let store = orch.store().clone();
    let scraped = store.clone();
    let provider = orch.chain().provider().clone();
    Ops::new()
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
        Ok(counts) => ops::runs(&counts),
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
        ops::phase_seconds(phase, seconds);
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
                at: U40::from(111),
            }
            .encode_log_data()),
        ]
    }

    #[tokio::test]
    async fn a_standby_replica_is_not_ready() {
        let lane = Lane::new(crate::replica::ReplicaConfig::new("postgres://x"), Address::ZERO);
        let name = lane.name().to_owned();
        let ops = with_lease(Ops::new(), std::sync::Arc::new(lane));
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
