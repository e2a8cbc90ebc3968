//! Tessera's benchmarks in one place, each measuring against a baseline of
//! the same run and reporting a table and JSON (`tessera bench …`, the
//! Makefile's `bench-*` targets):
//!
//! - [`indexer`]: task lifecycles on anvil, then the `tessera indexer run`
//!   process: backfill events/s into SQLite and PostgreSQL, live lag,
//!   webhook delivery lag, GraphQL query latency on the full index
//!   ([`index_reads`]), peak RSS. It starts the running executable's
//!   `indexer run`, so it runs from the `tessera` binary.
//! - [`plan`]: approve → settled wall time of an N-step chain plan through
//!   the orchestrator and offline workers, against the same lifecycles sent
//!   directly.
//! - [`load`]: many plans at once through `tessera serve` processes:
//!   sub-tasks settled per second against the same lifecycles sent
//!   directly, plan latency, RSS, CPU, store size, JSON-RPC requests.
//! - [`classify`]: offline classification latency against the heuristic
//!   scan alone, and the planner's accuracy per axis on the brief corpus.
//!
//! The gas bench stays with the chain tooling (`tessera_anvil::gas`).
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod classify;
pub mod failover;
pub mod index_reads;
pub mod indexer;
pub mod load;
pub mod plan;
pub mod process;
pub mod progress;
pub mod rpc_proxy;

/// The value at quantile `q` (0.0–1.0) of `sorted`, ascending, by nearest
/// rank; 0 when it is empty. Every bench's p50/p99 is this one.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 1.0), 100.0);
        assert_eq!(percentile(&[], 0.99), 0.0);
        assert_eq!(percentile(&[-3.0, 4.0], 0.0), -3.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 0.5), 2.0);
    }
}
