//! What replicas contend over during a round: the lane leases changing
//! hands (each replica's `tessera_lease_takeovers_total`) and the run
//! store's lock waits (PostgreSQL's `pg_stat_activity`, sampled).

use std::time::Duration;

use eyre::{Result, WrapErr};
use tokio::{sync::oneshot, task::JoinHandle};

/// How often the lock sampler looks at `pg_stat_activity`.
pub(crate) const LOCK_SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// The lease takeovers `api` has counted since it started (the sum over
/// its lanes of `tessera_lease_takeovers_total`).
pub(crate) async fn takeovers(http: &reqwest::Client, api: &str) -> Result<u64> {
    let url = format!("{api}/metrics");
    let req = http.get(&url).bearer_auth(super::TOKEN);
    let text = req.send().await.wrap_err_with(|| format!("GET {url}"))?.text().await?;
    Ok(sum_metric(&text, tessera_orchestrator::ops::LEASE_TAKEOVERS))
}

/// The sum of every sample of counter `name` in a Prometheus text page.
fn sum_metric(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with(['{', ' '])))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// What the lock sampler saw over a round.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LockWaits {
    /// Samples taken.
    pub samples: u64,
    /// Samples in which at least one session of the run store waited on a lock.
    pub with_waiters: u64,
    /// Sessions waiting on a lock, summed over the samples.
    pub waiting: u64,
}

impl LockWaits {
    /// The share of samples with a waiter.
    pub(crate) fn share(&self) -> f64 {
        self.with_waiters as f64 / self.samples.max(1) as f64
    }
}

/// Samples `database`'s sessions waiting on a lock every
/// [`LOCK_SAMPLE_EVERY`] until stopped; its task ends with it (a round
/// that fails before [`LockSampler::finish`] leaves nothing sampling).
pub(crate) struct LockSampler {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<LockWaits>>,
}

impl Drop for LockSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LockSampler {
    /// Starts sampling `database` (a `postgres://` URL).
    pub(crate) async fn start(database: &str) -> Result<Self> {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(database)
            .await
            .wrap_err("the lock sampler's connection")?;
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut seen = LockWaits::default();
            let mut every = tokio::time::interval(LOCK_SAMPLE_EVERY);
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    _ = every.tick() => {}
                }
                let (n,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*)::BIGINT FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                )
                .fetch_one(&pool)
                .await?;
                seen.samples += 1;
                seen.with_waiters += u64::from(n > 0);
                seen.waiting += u64::try_from(n).unwrap_or(0);
            }
            pool.close().await;
            Ok(seen)
        });
        Ok(Self { stop: Some(stop), task })
    }

    /// Stops sampling; what it saw.
    pub(crate) async fn finish(mut self) -> Result<LockWaits> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_is_summed_over_its_labels_and_nothing_else() {
        let page = "# HELP tessera_lease_takeovers_total lane takeovers\n\
                    # TYPE tessera_lease_takeovers_total counter\n\
                    tessera_lease_takeovers_total{lane=\"0xaa\"} 2\n\
                    tessera_lease_takeovers_total{lane=\"0xbb\"} 1\n\
                    tessera_lease_takeovers_totally 9\n\
                    tessera_lease_owned{lane=\"0xaa\"} 1\n";
        assert_eq!(sum_metric(page, "tessera_lease_takeovers_total"), 3);
        assert_eq!(sum_metric("", "tessera_lease_takeovers_total"), 0);
    }

    #[test]
    fn the_share_of_samples_with_a_waiter() {
        let w = LockWaits { samples: 40, with_waiters: 10, waiting: 13 };
        assert!((w.share() - 0.25).abs() < 1e-9);
        assert_eq!(LockWaits::default().share(), 0.0);
    }
}
