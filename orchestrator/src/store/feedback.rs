//! The feedback ledger: which settlements the sponsor has given ERC-8004
//! feedback for. A subject is claimed (`sending`) before its transaction
//! goes out and closed (`given`, with the transaction) after, so a crash
//! in between leaves a `sending` row that the next pass sends again: at
//! least once on chain, and an indexer counts one feedback per giver and
//! hash.

use serde_json::Value;
use sqlx::Row;

use super::{Store, StoreError, now_ms};
use crate::state::RunState;

/// Settlements one pass looks at, at most.
pub const FEEDBACK_PAGE: i64 = 64;

/// A settlement event of the sponsor's runs that has no feedback yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The run.
    pub run_id: String,
    /// `settled:<task id>`.
    pub dedup: String,
    /// The event's body (task id, executor, status, amounts, tx hash).
    pub body: Value,
}

/// A settlement event's row read back.
fn settled_of(r: &sqlx::any::AnyRow) -> Result<Settled, StoreError> {
    let body: String = r.try_get("body")?;
    Ok(Settled {
        run_id: r.try_get("run_id")?,
        dedup: r.try_get("dedup")?,
        body: serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
            table: "run_events",
            detail: format!("body: {e}"),
        })?,
    })
}

/// A feedback row to claim.
#[derive(Debug, Clone, Copy)]
pub struct FeedbackClaim<'a> {
    /// `settled:<task id>`, `plan:<run id>:<executor>` or `plan:<run id>`.
    pub subject: &'a str,
    /// The run.
    pub run_id: &'a str,
    /// The executor the feedback is on (empty for a run's marker).
    pub executor: &'a str,
    /// The feedback's value.
    pub value: i64,
    /// Its URI.
    pub uri: &'a str,
    /// `sending`, `skipped` or `done`.
    pub state: &'a str,
    /// Why it was skipped.
    pub note: Option<&'a str>,
}

/// The settlement kinds that say something about the executor's work.
const SPEAKING: &str = "'subtask_paid', 'subtask_refunded', 'subtask_expired'";

impl Store {
    /// Settlements of `sponsor`'s runs (or runs of no lane) with no
    /// feedback row, oldest first, at most [`FEEDBACK_PAGE`]; with
    /// `closed_only`, only of runs that are over.
    pub async fn settled_without_feedback(
        &self,
        sponsor: &str,
        closed_only: bool,
    ) -> Result<Vec<Settled>, StoreError> {
        let closed = if closed_only {
            // The ended states' words, as the one conversion writes them.
            let ended: Vec<String> =
                RunState::words(&RunState::ENDED).iter().map(|w| format!("'{w}'")).collect();
            format!(
                "AND r.state IN ({}) \
                 AND NOT EXISTS (SELECT 1 FROM feedback p WHERE p.subject = 'plan:' || r.id)",
                ended.join(", ")
            )
        } else {
            "AND NOT EXISTS (SELECT 1 FROM feedback f WHERE f.subject = e.dedup AND f.state <> 'sending')"
                .to_owned()
        };
        let rows = sqlx::query(&format!(
            "SELECT e.run_id, e.dedup, e.body FROM run_events e JOIN runs r ON r.id = e.run_id \
             WHERE e.kind IN ({SPEAKING}) AND e.dedup LIKE 'settled:%' \
             AND (r.sponsor = $1 OR r.sponsor IS NULL) {closed} \
             ORDER BY e.created_at, e.run_id, e.seq LIMIT {FEEDBACK_PAGE}"
        ))
        .bind(sponsor)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(settled_of).collect()
    }

    /// Every settlement event of run `run_id` that speaks of the work.
    pub async fn settlements_of(&self, run_id: &str) -> Result<Vec<Settled>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT run_id, dedup, body FROM run_events WHERE run_id = $1 \
             AND kind IN ({SPEAKING}) AND dedup LIKE 'settled:%' ORDER BY seq"
        ))
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(settled_of).collect()
    }

    /// Claims `c.subject` for sending (or records it as not sent, with
    /// `state` `skipped` and a note); `false` when a row exists: someone
    /// claimed it, unless it is a `sending` row left by a crash, which is
    /// taken over.
    pub async fn claim_feedback(&self, c: &FeedbackClaim<'_>) -> Result<bool, StoreError> {
        let now = now_ms();
        let inserted = sqlx::query(
            "INSERT INTO feedback (subject, run_id, executor, value, uri, state, note, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (subject) DO NOTHING",
        )
        .bind(c.subject)
        .bind(c.run_id)
        .bind(c.executor)
        .bind(c.value)
        .bind(c.uri)
        .bind(c.state)
        .bind(c.note)
        .bind(now)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok(true);
        }
        let left = sqlx::query("SELECT state FROM feedback WHERE subject = $1")
            .bind(c.subject)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| r.try_get::<String, _>("state"))
            .transpose()?;
        Ok(left.as_deref() == Some("sending") && c.state == "sending")
    }

    /// Closes `subject` as given in `tx_hash`.
    pub async fn feedback_given(&self, subject: &str, tx_hash: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE feedback SET state = 'given', tx_hash = $2, updated_at = $3 WHERE subject = $1",
        )
        .bind(subject)
        .bind(tx_hash)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Closes `subject` as refused by the registry, with why.
    pub async fn feedback_refused(&self, subject: &str, note: &str) -> Result<(), StoreError> {
        self.close_feedback(subject, "refused", note).await
    }

    /// Records `subject` as refused by an approval game: the registry
    /// refused the sponsor's feedback as self-feedback though the sponsor
    /// neither owns the agent's identity nor is its wallet (its owner made
    /// the sponsor an operator). Counted against the agent
    /// ([`Store::approval_games`]).
    pub async fn feedback_gamed(&self, subject: &str, note: &str) -> Result<(), StoreError> {
        self.close_feedback(subject, "approval-game", note).await
    }

    /// Closes `subject` in `state` (a refusal), with `note` saying why.
    async fn close_feedback(
        &self,
        subject: &str,
        state: &str,
        note: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE feedback SET state = $2, note = $3, updated_at = $4 WHERE subject = $1",
        )
        .bind(subject)
        .bind(state)
        .bind(note)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// How many of this sponsor's feedbacks `executor` (as stored: its
    /// checksummed address) refused by an approval game.
    pub async fn approval_games(&self, executor: &str) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query(
            "SELECT COUNT(*) AS n FROM feedback WHERE executor = $1 AND state = 'approval-game'",
        )
        .bind(executor)
        .fetch_one(&self.pool)
        .await?
        .try_get("n")?;
        Ok(u64::try_from(n).unwrap_or_default())
    }

    /// The feedback rows of `run_id`: `(subject, executor, value, state, tx hash)`.
    pub async fn feedback_of(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String, i64, String, Option<String>)>, StoreError> {
        let rows = sqlx::query(
            "SELECT subject, executor, value, state, tx_hash FROM feedback WHERE run_id = $1 ORDER BY subject",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("subject")?,
                    r.try_get("executor")?,
                    r.try_get("value")?,
                    r.try_get("state")?,
                    r.try_get("tx_hash")?,
                ))
            })
            .collect()
    }
}
