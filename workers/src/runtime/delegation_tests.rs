//! The child's terms: how long a child's price can stay outstanding.

use super::*;

#[test]
fn a_child_runs_a_day_at_most_whatever_its_parents_deadline() {
    let now = 1_000_000;
    let year = 365 * 24 * 3600;
    // A parent due in a year, with a month to review: the child gets a day
    // and an hour, so its price leaves the cap within a day and an hour of
    // its funding (plus the escrow's dispute window when disputed).
    assert_eq!(
        child_terms(now + year, 30 * 24 * 3600, now),
        Some((now + MAX_CHILD_SECS, MAX_CHILD_REVIEW_SECS))
    );
    // A parent due sooner: the margin before the parent's deadline.
    assert_eq!(child_terms(now + 3600, 600, now), Some((now + 3600 - DELEGATION_MARGIN_SECS, 600)));
    // Too close to delegate.
    assert_eq!(child_terms(now + DELEGATION_MARGIN_SECS + 60, 600, now), None);
}
