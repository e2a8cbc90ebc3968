//! An agent's record weighed by the money behind it, so that it costs real
//! money to fake.
//!
//! Every settled task says something about its executor, but not equally:
//! a task a stranger paid a dollar for says more than one the agent funded
//! to itself for a millionth of one. The escrow forbids only executor ==
//! funder; anyone can fund tasks to an agent from a second wallet. So a
//! task counts in proportion to what was paid for it, and a funder's tasks
//! count with diminishing weight:
//!
//! - **Amount.** A task counts `min(amount, CAP) / CAP` units
//!   ([`EVIDENCE_CAP_UNITS`], 1 USDC), and nothing below
//!   [`EVIDENCE_FLOOR_UNITS`] (0.01 USDC): a hundred one-unit tasks weigh
//!   nothing at all.
//! - **Distinct funders.** A funder whose tasks add up to `n > 1` units
//!   counts `√n` of them, completed and failed in the same proportion: a
//!   hundred dollars from one wallet weigh ten, from a hundred wallets a
//!   hundred.
//! - **Linked funders.** A funder the agent itself paid through the escrow
//!   (the agent funded a task that this funder executed) is likely the
//!   agent's own money going round: its tasks count a tenth
//!   ([`LINKED_WEIGHT`]).
//! - **The sponsor's own history.** Tasks funded by the sponsor who is
//!   choosing count double ([`OWN_WEIGHT`]): what it saw itself weighs more
//!   than what strangers report.
//!
//! Only settled tasks that speak for or against the agent count: paid or
//! split (completed), refunded after a dispute, expired, or declined late
//! ([`crate::decline_is_late`]) (failed). Cancels and declines in time say
//! nothing about the work.
//!
//! - **The client's word.** A client approving a task rates the work (0
//!   to [`FULL_RATING`] percent, in the escrow's `TaskSettled`): a task
//!   approved at `r` counts `r/100` of its units completed and the rest
//!   failed ([`rated_failed_units`]), on its funder's record. The
//!   orchestrator approves at [`FULL_RATING`], which moves nothing.
//!
//! The weighing is pure: the indexer reads each funder's [`FunderRecord`]
//! from its store and weighs them here.

use serde::Serialize;

/// A task paid below this (base units, 0.01 USDC) counts for nothing.
pub const EVIDENCE_FLOOR_UNITS: i64 = 10_000;
/// A task counts `min(amount, CAP) / CAP` units (base units, 1 USDC).
pub const EVIDENCE_CAP_UNITS: i64 = 1_000_000;
/// The weight of a funder the agent itself paid through the escrow.
pub const LINKED_WEIGHT: f64 = 0.1;
/// The weight of the choosing sponsor's own tasks.
pub const OWN_WEIGHT: f64 = 2.0;
/// A client's rating of approved work in full (percent): the escrow's
/// `MAX_RATING`.
pub const FULL_RATING: u8 = 100;

/// Of a task's `units` (capped, at or above the floor), those a client's
/// approval at `rating` percent counts failed: `units · (1 − rating/100)`,
/// rounded half up, none at [`FULL_RATING`] (a rating above it counts as
/// it), all at 0. The rest count completed.
pub fn rated_failed_units(units: i64, rating: u8) -> i64 {
    let short = i64::from(FULL_RATING.saturating_sub(rating));
    (units.max(0).saturating_mul(short) + 50) / 100
}
/// What one funder's settled tasks with an agent show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunderRecord {
    /// The funder's address.
    pub funder: String,
    /// Its tasks the agent completed (paid, or split after a dispute).
    pub completed: i64,
    /// Its tasks the agent failed (refunded after a dispute, expired, or
    /// declined late).
    pub failed: i64,
    /// Of those, settled below [`EVIDENCE_FLOOR_UNITS`].
    pub below_floor: i64,
    /// `Σ min(amount, CAP)` over completed tasks at or above the floor, in
    /// base units, less what their clients' ratings count failed
    /// ([`rated_failed_units`]).
    pub completed_units: i64,
    /// The same over failed tasks, and what the ratings of completed ones
    /// count failed.
    pub failed_units: i64,
    /// The agent funded a task this funder executed.
    pub linked: bool,
}

/// An agent's record weighed by the money and the funders behind it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// Weighted completed tasks.
    pub completed: f64,
    /// Weighted failed tasks.
    pub failed: f64,
    /// Funders whose tasks count (at or above the floor).
    pub funders: u64,
    /// Of those, funders the agent itself paid (weighed at [`LINKED_WEIGHT`]).
    pub linked_funders: u64,
    /// Settled tasks that count for nothing, below the floor.
    pub below_floor: u64,
    /// Weighted tasks funded by the choosing sponsor (counted at
    /// [`OWN_WEIGHT`]); zero when no sponsor is choosing.
    pub own: f64,
}

impl Evidence {
    /// Weighted tasks in all.
    pub fn settled(&self) -> f64 {
        self.completed + self.failed
    }
}

/// `rows` weighed as the module says, for `sponsor` (an address, compared
/// without case) when one is choosing.
pub fn weigh(rows: &[FunderRecord], sponsor: Option<&str>) -> Evidence {
    let sponsor = sponsor.map(str::to_lowercase);
    let mut out = Evidence::default();
    for row in rows {
        out.below_floor += u64::try_from(row.below_floor).unwrap_or(0);
        let done = row.completed_units.max(0) as f64 / EVIDENCE_CAP_UNITS as f64;
        let failed = row.failed_units.max(0) as f64 / EVIDENCE_CAP_UNITS as f64;
        let units = done + failed;
        if units <= 0.0 {
            continue;
        }
        out.funders += 1;
        let diminish = if units > 1.0 { units.sqrt() / units } else { 1.0 };
        let own = sponsor.as_deref().is_some_and(|s| s == row.funder.to_lowercase());
        let weight = if own {
            OWN_WEIGHT
        } else if row.linked {
            out.linked_funders += 1;
            LINKED_WEIGHT
        } else {
            1.0
        };
        let (done, failed) = (done * diminish * weight, failed * diminish * weight);
        if own {
            out.own += done + failed;
        }
        out.completed += done;
        out.failed += failed;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(funder: &str, completed: i64, units: i64, linked: bool) -> FunderRecord {
        FunderRecord {
            funder: funder.to_owned(),
            completed,
            failed: 0,
            below_floor: 0,
            completed_units: units,
            failed_units: 0,
            linked,
        }
    }

    const USDC: i64 = EVIDENCE_CAP_UNITS;

    #[test]
    fn a_rating_counts_its_share_completed_and_the_rest_failed() {
        assert_eq!(rated_failed_units(USDC, 40), 600_000, "40% leaves 60% failed");
        assert_eq!(rated_failed_units(USDC, FULL_RATING), 0, "a full rating moves nothing");
        assert_eq!(rated_failed_units(USDC, 101), 0, "above full counts as full");
        assert_eq!(rated_failed_units(USDC, 0), USDC);
        assert_eq!(rated_failed_units(10_001, 50), 5_001, "rounded half up");
        assert_eq!(rated_failed_units(-5, 0), 0);
    }

    #[test]
    fn tasks_below_the_floor_weigh_nothing() {
        let spam = FunderRecord { below_floor: 100, ..row("0xS", 100, 0, false) };
        let e = weigh(&[spam], None);
        assert_eq!((e.completed, e.failed, e.funders, e.below_floor), (0.0, 0.0, 0, 100));
    }

    #[test]
    fn one_funder_counts_the_square_root_of_its_units() {
        let e = weigh(&[row("0xa", 100, 100 * USDC, false)], None);
        assert!((e.completed - 10.0).abs() < 1e-9, "{e:?}");
        // The same money from a hundred funders counts in full.
        let many: Vec<_> = (0..100).map(|i| row(&format!("0x{i}"), 1, USDC, false)).collect();
        let e = weigh(&many, None);
        assert!((e.completed - 100.0).abs() < 1e-9, "{e:?}");
        assert_eq!(e.funders, 100);
        // Small tasks count their share of a dollar.
        let e = weigh(&[row("0xa", 1, USDC / 4, false)], None);
        assert!((e.completed - 0.25).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn failures_share_the_funders_weight() {
        let r =
            FunderRecord { failed: 2, failed_units: 2 * USDC, ..row("0xa", 2, 2 * USDC, false) };
        let e = weigh(&[r], None);
        assert!((e.completed - 1.0).abs() < 1e-9 && (e.failed - 1.0).abs() < 1e-9, "{e:?}");
        assert!((e.settled() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn linked_funders_are_weighed_down_and_the_sponsor_up() {
        let e = weigh(&[row("0xa", 1, USDC, true)], None);
        assert!((e.completed - LINKED_WEIGHT).abs() < 1e-9);
        assert_eq!(e.linked_funders, 1);
        let e = weigh(&[row("0xAb", 1, USDC, true)], Some("0xaB"));
        assert!((e.completed - OWN_WEIGHT).abs() < 1e-9, "the sponsor's own, any case");
        assert!((e.own - OWN_WEIGHT).abs() < 1e-9);
        assert_eq!(e.linked_funders, 0);
    }
}
