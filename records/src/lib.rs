//! Agents' records, below both the indexer that reads them and the
//! orchestrator that chooses on them.
//!
//! - [`AgentRecord`]: what an agent's settled tasks show (counts, median
//!   delivery time, and the same tasks weighed by the money behind them),
//!   with the Beta prior's reliability and the latency factor the
//!   orchestrator's selection scores;
//! - [`evidence`]: the pure weighing of a record by its funders and amounts;
//! - [`AgentRecords`]: where records come from. The indexer's store
//!   implements it; whoever builds the orchestrator hands it one, so the
//!   orchestrator does not depend on the indexer.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

use std::{collections::HashMap, future::Future, pin::Pin};

use alloy::primitives::Address;

pub mod evidence;

use evidence::Evidence;

/// Successes the prior counts before any record (`a` of Beta(a, b)).
pub const PRIOR_SUCCESSES: u64 = 2;
/// Failures the prior counts before any record (`b` of Beta(a, b)).
pub const PRIOR_FAILURES: u64 = 1;
/// The delivery time, in seconds, at which the latency factor is 0.9.
pub const TARGET_SECS: u64 = 300;
/// How recent a sign of life must be for an agent to count as seen working
/// (a day of chain time): the executor choice prefers such agents.
pub const RECENT_SECS: u64 = 24 * 60 * 60;
/// The lowest the latency factor goes (an agent infinitely slow).
pub const LATENCY_FLOOR: f64 = 0.8;
/// Share of the time from acceptance to the deadline, in basis points,
/// within which an executor may give an accepted task back and have it
/// count as a decline (nothing against it). Past it (the last 20%), the
/// client could neither cancel nor reassign the task all that while, and
/// little time is left to find another executor: the decline weighs as an
/// expiry (see [`decline_is_late`]).
pub const DECLINE_GRACE_BPS: u64 = 8_000;

/// Whether a decline made at `declined_at` (chain time) weighs in the
/// executor's record as an expiry rather than a decline: made past the
/// task's `deadline` (the escrow refuses it now; an older escrow took it
/// for a task nobody accepted), or made after acceptance at `accepted_at`
/// later than [`DECLINE_GRACE_BPS`] of the time from acceptance to the
/// deadline. A task nobody accepted (`accepted_at` `None`) may be declined
/// up to its deadline: its client could cancel or reassign it all along.
pub fn decline_is_late(accepted_at: Option<u64>, deadline: u64, declined_at: u64) -> bool {
    if declined_at > deadline {
        return true;
    }
    let Some(accepted) = accepted_at else { return false };
    let span = u128::from(deadline.saturating_sub(accepted));
    let grace = span * u128::from(DECLINE_GRACE_BPS) / 10_000;
    u128::from(declined_at) > u128::from(accepted) + grace
}

/// What an agent's settled tasks show.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AgentRecord {
    /// Paid, or split after a dispute.
    pub completed: u64,
    /// Refunded in full after a dispute: a dispute it lost.
    pub refunded: u64,
    /// Not accepted, or not delivered, before the deadline; or declined
    /// late ([`decline_is_late`]).
    pub expired: u64,
    /// Median seconds from acceptance to delivery, when any was delivered.
    pub median_completion_secs: Option<u64>,
    /// The same tasks weighed by the money and the funders behind them:
    /// what [`AgentRecord::reliability`] is computed from.
    pub weight: Evidence,
    /// Chain seconds of its latest sign of life as an executor (a task
    /// accepted, delivered or declined); `None` when never seen working.
    pub last_active_at: Option<u64>,
}

impl AgentRecord {
    /// A record whose every task a distinct stranger paid at least a dollar
    /// for, so each weighs one: the counts and the weights agree.
    pub fn uniform(
        completed: u64,
        refunded: u64,
        expired: u64,
        median_completion_secs: Option<u64>,
    ) -> Self {
        let failed = refunded.saturating_add(expired);
        Self {
            completed,
            refunded,
            expired,
            median_completion_secs,
            weight: Evidence {
                completed: completed as f64,
                failed: failed as f64,
                funders: completed.saturating_add(failed),
                ..Evidence::default()
            },
            last_active_at: None,
        }
    }

    /// Whether it was seen working (see [`AgentRecord::last_active_at`])
    /// within [`RECENT_SECS`] before chain time `now`.
    pub fn seen_recently(&self, now: u64) -> bool {
        self.last_active_at.is_some_and(|t| now.saturating_sub(t) <= RECENT_SECS)
    }

    /// Tasks settled in a way that speaks for or against the agent.
    pub fn settled(&self) -> u64 {
        self.completed.saturating_add(self.refunded).saturating_add(self.expired)
    }

    /// `R = (completed + 2) / (settled + 3)` over the weighted tasks, in
    /// `(0, 1)`.
    pub fn reliability(&self) -> f64 {
        let w = &self.weight;
        (w.completed.max(0.0) + PRIOR_SUCCESSES as f64)
            / (w.settled().max(0.0) + (PRIOR_SUCCESSES + PRIOR_FAILURES) as f64)
    }

    /// The same prior over the raw counts, every task weighing one: the
    /// rule before records were weighed, which a self-funded record games
    /// (kept to show what weighing changes).
    pub fn unweighted_reliability(&self) -> f64 {
        (self.completed as f64 + PRIOR_SUCCESSES as f64)
            / (self.settled() as f64 + (PRIOR_SUCCESSES + PRIOR_FAILURES) as f64)
    }

    /// `L = 0.8 + 0.2 · T / (T + m)`, in `(0.8, 1]`; `m = T` when unknown.
    pub fn latency(&self) -> f64 {
        let target = TARGET_SECS as f64;
        let median = self.median_completion_secs.map_or(target, |m| m as f64);
        LATENCY_FLOOR + (1.0 - LATENCY_FLOOR) * target / (target + median)
    }
}

/// Why a record could not be read.
pub type RecordsError = Box<dyn std::error::Error + Send + Sync>;

/// A record being read.
pub type RecordFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AgentRecord, RecordsError>> + Send + 'a>>;

/// Where agents' records come from.
pub trait AgentRecords: Send + Sync {
    /// What `agent`'s settled tasks show, weighed for `sponsor` (its own
    /// tasks count double, see [`evidence`]); the empty record when it has
    /// none.
    fn record(&self, agent: Address, sponsor: Address) -> RecordFuture<'_>;
}

/// Fixed records (tests, or a snapshot); an agent not listed has none.
impl AgentRecords for HashMap<Address, AgentRecord> {
    fn record(&self, agent: Address, _sponsor: Address) -> RecordFuture<'_> {
        let record = self.get(&agent).copied().unwrap_or_default();
        Box::pin(async move { Ok(record) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decline_is_late_past_the_grace_share_or_the_deadline() {
        // Accepted at 1000, deadline 2000: the grace runs to 1800.
        let late = |at| decline_is_late(Some(1_000), 2_000, at);
        assert!(!late(1_000), "at once");
        assert!(!late(1_799));
        assert!(!late(1_800), "the grace's last second");
        assert!(late(1_801), "past the grace share");
        assert!(late(2_000), "at the deadline");
        assert!(late(2_001), "past the deadline");
        // Nobody accepted it: any time up to the deadline is in time.
        assert!(!decline_is_late(None, 2_000, 1_999));
        assert!(!decline_is_late(None, 2_000, 2_000));
        assert!(decline_is_late(None, 2_000, 2_001), "an expiry turned into a decline");
        // A deadline at acceptance leaves no grace; no overflow at the ends.
        assert!(!decline_is_late(Some(5), 5, 5));
        assert!(decline_is_late(Some(5), 5, 6));
        assert!(!decline_is_late(Some(0), u64::MAX, u64::MAX / 10 * 8));
        assert!(decline_is_late(Some(0), u64::MAX, u64::MAX - 1));
    }
}
