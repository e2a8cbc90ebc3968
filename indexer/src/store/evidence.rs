//! An agent's record weighed by the money behind it, read from the index:
//! each funder's settled tasks with the agent ([`IndexStore::funders`]),
//! the funders' own feedback taken into account ([`with_feedback`]), then
//! weighed as [`tessera_records::evidence`] says (re-exported here).

use std::collections::{BTreeMap, BTreeSet};

use alloy::primitives::U256;
use sqlx::Row;
use tessera_db::DbError;
pub use tessera_records::evidence::{
    EVIDENCE_CAP_UNITS, EVIDENCE_FLOOR_UNITS, Evidence, FULL_RATING, FunderRecord, LINKED_WEIGHT,
    OWN_WEIGHT, rated_failed_units, weigh,
};

use super::{IndexStore, feedback::FeedbackView, totals::Totals};

/// Funders read per agent, the heaviest first; lighter ones beyond are not
/// counted (a record is never heavier than its reads show).
pub const MAX_FUNDERS: usize = 1_000;
/// Agents an agent's own funding is checked against, at most.
const MAX_PAID: i64 = 10_000;

impl IndexStore {
    /// What each funder's settled tasks with `agent` show, the heaviest
    /// first (at most [`MAX_FUNDERS`]), each marked when `agent` itself
    /// funded a task the funder executed.
    pub async fn funders(&self, agent: &str) -> Result<Vec<FunderRecord>, DbError> {
        let mut per_funder: BTreeMap<String, Totals> = BTreeMap::new();
        for (key, t) in self.totals(agent).await? {
            per_funder.entry(key.funder).or_default().add(&t);
        }
        let paid: BTreeSet<String> = sqlx::query(&format!(
            "SELECT DISTINCT executor FROM ix_agent_totals WHERE funder = $1 \
             AND completed > 0 LIMIT {MAX_PAID}"
        ))
        .bind(agent)
        .fetch_all(&self.api)
        .await?
        .iter()
        .map(|r| r.try_get::<String, _>("executor").map(|a| a.to_lowercase()))
        .collect::<Result<_, _>>()?;
        let mut rows: Vec<FunderRecord> = per_funder
            .into_iter()
            .filter(|(_, t)| t.completed > 0 || t.failed() > 0)
            .map(|(funder, t)| FunderRecord {
                linked: paid.contains(&funder.to_lowercase()),
                funder,
                completed: t.completed,
                failed: t.failed(),
                below_floor: t.below_floor,
                completed_units: t.completed_units,
                failed_units: t.failed_units,
            })
            .collect();
        // The heaviest first, ties in funder order (the map's).
        rows.sort_by_key(|r| std::cmp::Reverse(r.completed_units.saturating_add(r.failed_units)));
        rows.truncate(MAX_FUNDERS);
        Ok(rows)
    }

    /// `agent`'s record weighed for `sponsor` (see the module docs), with
    /// the matched feedback on it taken into account ([`with_feedback`]).
    pub async fn evidence(&self, agent: &str, sponsor: Option<&str>) -> Result<Evidence, DbError> {
        let ids: Vec<U256> =
            self.identities(agent).await?.iter().filter_map(|i| i.agent_id.parse().ok()).collect();
        let feedback = self.feedback(agent, &ids).await?;
        self.evidence_with(agent, sponsor, &feedback).await
    }

    /// [`IndexStore::evidence`] with the agent's feedback already read.
    pub async fn evidence_with(
        &self,
        agent: &str,
        sponsor: Option<&str>,
        feedback: &[FeedbackView],
    ) -> Result<Evidence, DbError> {
        let mut rows = self.funders(agent).await?;
        with_feedback(&mut rows, feedback);
        Ok(weigh(&rows, sponsor))
    }
}

/// Takes the funders' own word on their completed tasks into account:
/// a matched, unrevoked feedback of value `v` (−100 to 100) on a paid task
/// counts that task `max(v, 0)/100` completed and the rest failed, so a
/// sponsor that paid but was not satisfied says so, and every sponsor's
/// settlement-backed feedback moves the record, not only the chooser's.
///
/// A task its client approved with a rating `r` is already counted `r/100`
/// completed in `rows` (the totals, [`rated_failed_units`]): both are the
/// client's word on the same task, so it counts once, the lower of the two.
/// The feedback moves only what it takes beyond the rating, nothing when
/// `v ≥ r`.
pub fn with_feedback(rows: &mut [FunderRecord], feedback: &[FeedbackView]) {
    for f in feedback.iter().filter(|f| f.matched && !f.revoked) {
        // The record of the tasks' funder: the giver itself, or the sponsor
        // whose tasks the giver (its operator, their client) approved.
        let whose = f.funder.as_deref().unwrap_or(&f.client);
        let Some(row) = rows.iter_mut().find(|r| r.funder.eq_ignore_ascii_case(whose)) else {
            continue;
        };
        let Ok(value) = f.value.parse::<f64>() else { continue };
        let scale = 10f64.powi(i32::from(f.value_decimals));
        let quality = (value / scale / 100.0).clamp(0.0, 1.0);
        for t in f.settled.iter().filter(|t| t.status == "Paid" || t.status == "Split") {
            let amount = t.executor_amount.parse::<i64>().unwrap_or(0)
                + t.funder_amount.parse::<i64>().unwrap_or(0);
            if amount < EVIDENCE_FLOOR_UNITS {
                continue;
            }
            let units = amount.min(EVIDENCE_CAP_UNITS);
            let said = ((units as f64) * (1.0 - quality)).round() as i64;
            // What the client's rating already moved (none unrated).
            let rated = f.ratings.get(&t.task_id).map_or(0, |r| rated_failed_units(units, *r));
            let moved = (said - rated).max(0).min(row.completed_units);
            row.completed_units -= moved;
            row.failed_units += moved;
        }
    }
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
    fn matched_feedback_moves_a_paid_task_towards_failed() {
        use tessera_bindings::feedback::SettledTask;
        let task = |id: &str| SettledTask {
            task_id: id.into(),
            status: "Paid".into(),
            executor_amount: "500000".into(),
            funder_amount: "0".into(),
            tx: alloy::primitives::B256::repeat_byte(1),
        };
        let proof = tessera_bindings::feedback::Proof::new(
            1,
            alloy::primitives::Address::ZERO,
            None,
            vec![task("1")],
        );
        let (uri, hash) = proof.encode();
        let view = |client: &str, value: &str, matched: bool| FeedbackView {
            agent_id: "1".into(),
            client: client.into(),
            index: 1,
            value: value.into(),
            value_decimals: 0,
            tag1: String::new(),
            tag2: String::new(),
            uri: uri.clone(),
            hash: hash.to_string(),
            task_ids: vec!["1".into()],
            task_id: Some("1".into()),
            tx: String::new(),
            block: 1,
            matched,
            why: None,
            revoked: false,
            funder: None,
            settled: vec![task("1")],
            ratings: BTreeMap::new(),
        };
        let base = || vec![row("0xA", 2, 2 * USDC, false)];
        // Satisfied at 60: 0.4 of the 0.5 USDC task moves to failed.
        let mut rows = base();
        with_feedback(&mut rows, &[view("0xa", "60", true)]);
        assert_eq!((rows[0].completed_units, rows[0].failed_units), (2 * USDC - 200_000, 200_000));
        // Unmatched feedback, or another funder's, changes nothing.
        for f in [view("0xa", "0", false), view("0xb", "0", true)] {
            let mut rows = base();
            with_feedback(&mut rows, &[f]);
            assert_eq!(rows, base());
        }
        // An operator's feedback on tasks a sponsor's grant funded moves
        // the sponsor's record: the giver is the tasks' client.
        let operator = FeedbackView { funder: Some("0xa".into()), ..view("0xc", "60", true) };
        let mut rows = base();
        with_feedback(&mut rows, &[operator]);
        assert_eq!((rows[0].completed_units, rows[0].failed_units), (2 * USDC - 200_000, 200_000));

        // The same task approved at 40: the totals already count 60% of its
        // 0.5 USDC failed. The client's word counts once, the lower of the
        // rating and the feedback.
        let rated = FeedbackView {
            ratings: BTreeMap::from([("1".to_owned(), 40)]),
            ..view("0xa", "60", true)
        };
        let moved = rated_failed_units(500_000, 40);
        assert_eq!(moved, 300_000);
        let rated_base = || {
            vec![FunderRecord {
                completed_units: 2 * USDC - moved,
                failed_units: moved,
                ..row("0xA", 2, 0, false)
            }]
        };
        // Feedback at 60, above the rating: nothing more moves.
        let mut rows = rated_base();
        with_feedback(&mut rows, std::slice::from_ref(&rated));
        assert_eq!(rows, rated_base());
        // Feedback at 20, below it: the task counts 20% completed in all.
        let lower = FeedbackView { value: "20".into(), ..rated };
        let mut rows = rated_base();
        with_feedback(&mut rows, &[lower]);
        assert_eq!((rows[0].completed_units, rows[0].failed_units), (2 * USDC - 400_000, 400_000));
        // A full rating moved nothing: feedback at 60 moves as if unrated.
        let full = FeedbackView {
            ratings: BTreeMap::from([("1".to_owned(), FULL_RATING)]),
            ..view("0xa", "60", true)
        };
        let mut rows = base();
        with_feedback(&mut rows, &[full]);
        assert_eq!((rows[0].completed_units, rows[0].failed_units), (2 * USDC - 200_000, 200_000));
    }
}
