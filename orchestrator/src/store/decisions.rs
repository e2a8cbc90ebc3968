//! User decisions: queued in order, taken by the runner, answered with
//! whether they worked.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use super::{DecisionRow, Store, StoreError, now_ms, to_u32};
use crate::state::DecisionKind;

/// Most pending decisions one step takes.
pub(crate) const MAX_PENDING_DECISIONS: i64 = 100;

/// Most decisions a run's view lists (its latest).
pub(crate) const MAX_LISTED_DECISIONS: i64 = 500;

/// The sub-task index of a decision row, when it has one.
fn index_of(r: &sqlx::any::AnyRow) -> Result<Option<u32>, StoreError> {
    let idx: Option<i64> = r.try_get("idx")?;
    idx.map(|i| to_u32(i, "decisions")).transpose()
}

impl Store {
    /// Queues a decision; returns its position. Numbered in a transaction
    /// no other numbering of the run's decisions runs beside
    /// ([`tessera_db::begin_numbering`]): two writers sharing the database
    /// never take the same position.
    pub async fn push_decision(
        &self,
        run_id: &str,
        idx: Option<u32>,
        kind: DecisionKind,
        arg: Option<&str>,
    ) -> Result<i64, StoreError> {
        let key = format!("decisions:{run_id}");
        let mut tx = tessera_db::begin_numbering(&self.pool, self.backend, &key).await?;
        let seq: i64 = sqlx::query(
            "SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM decisions WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(&mut *tx)
        .await?
        .try_get("next")?;
        sqlx::query(
            "INSERT INTO decisions (run_id, seq, idx, kind, arg, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(run_id)
        .bind(seq)
        .bind(idx.map(i64::from))
        .bind(kind.as_str())
        .bind(arg)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(seq)
    }

    /// Decisions not yet taken, oldest first: at most
    /// [`MAX_PENDING_DECISIONS`] a call (the rest wait for the next step).
    pub async fn pending_decisions(&self, run_id: &str) -> Result<Vec<DecisionRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, idx, kind, arg FROM decisions \
             WHERE run_id = $1 AND done_at IS NULL ORDER BY seq LIMIT $2",
        )
        .bind(run_id)
        .bind(MAX_PENDING_DECISIONS)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(DecisionRow {
                    seq: r.try_get("seq")?,
                    idx: index_of(r)?,
                    kind: r.try_get("kind")?,
                    arg: r.try_get("arg")?,
                })
            })
            .collect()
    }

    /// Takes a pending decision at chain time `now` (the head's timestamp)
    /// before it is applied; returns the chain time it was first taken at,
    /// or `None` when it is no longer pending (recorded meanwhile).
    ///
    /// A decision is applied, then recorded: a runner stopped in between
    /// (its transaction sent, its outcome not written) takes it again. It
    /// then resolves against the time it was first taken at, so that what
    /// it sends is what was sent before — a reassignment carries the same
    /// deadline, and is not sent at all when the chain already shows it.
    pub async fn take_decision(
        &self,
        run_id: &str,
        seq: i64,
        now: u64,
    ) -> Result<Option<u64>, StoreError> {
        let stamp = i64::try_from(now).map_err(|_| StoreError::Corrupt {
            table: "decisions",
            detail: format!("chain time {now} past what a column holds"),
        })?;
        sqlx::query(
            "UPDATE decisions SET taken_block_time = $1 \
             WHERE run_id = $2 AND seq = $3 AND done_at IS NULL AND taken_block_time IS NULL",
        )
        .bind(stamp)
        .bind(run_id)
        .bind(seq)
        .execute(&self.pool)
        .await?;
        let row = sqlx::query(
            "SELECT taken_block_time FROM decisions \
             WHERE run_id = $1 AND seq = $2 AND done_at IS NULL",
        )
        .bind(run_id)
        .bind(seq)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let taken: Option<i64> = row.try_get("taken_block_time")?;
        taken
            .map(|t| {
                u64::try_from(t).map_err(|_| StoreError::Corrupt {
                    table: "decisions",
                    detail: format!("taken_block_time {t}"),
                })
            })
            .transpose()
    }

    /// Marks a pending decision taken with what came of it: `ok` false when
    /// its transaction failed, with the error and, when the chain refused,
    /// the decoded revert. False when it was recorded already (by another
    /// runner): the first outcome stands.
    pub async fn record_decision(
        &self,
        run_id: &str,
        seq: i64,
        outcome: &DecisionOutcome,
    ) -> Result<bool, StoreError> {
        let res = sqlx::query(
            "UPDATE decisions SET done_at = $1, outcome = $2, ok = $3, error = $4, revert = $5 \
             WHERE run_id = $6 AND seq = $7 AND done_at IS NULL",
        )
        .bind(now_ms())
        .bind(&outcome.outcome)
        .bind(i64::from(outcome.ok))
        .bind(&outcome.error)
        .bind(&outcome.revert)
        .bind(run_id)
        .bind(seq)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// A run's latest [`MAX_LISTED_DECISIONS`] decisions, oldest first, with
    /// what came of it.
    pub async fn decisions(&self, run_id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM (SELECT seq, idx, kind, arg, created_at, done_at, outcome, ok, error, \
               revert FROM decisions WHERE run_id = $1 ORDER BY seq DESC LIMIT $2) latest \
             ORDER BY seq",
        )
        .bind(run_id)
        .bind(MAX_LISTED_DECISIONS)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let ok: Option<i64> = r.try_get("ok")?;
                Ok(DecisionRecord {
                    seq: r.try_get("seq")?,
                    idx: index_of(r)?,
                    kind: decision_kind(&r.try_get::<String, _>("kind")?)?,
                    arg: r.try_get("arg")?,
                    created_at: r.try_get("created_at")?,
                    done_at: r.try_get("done_at")?,
                    // Written with the outcome (older rows by migration 0013).
                    ok: ok.map(|ok| ok != 0),
                    outcome: r.try_get("outcome")?,
                    error: r.try_get("error")?,
                    revert: r.try_get("revert")?,
                })
            })
            .collect()
    }
}

/// What came of a decision, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionOutcome {
    /// In words (`approved`, `failed: …`).
    pub outcome: String,
    /// Whether it worked.
    pub ok: bool,
    /// Why not, when it did not.
    pub error: Option<String>,
    /// The contract's decoded refusal, when the chain refused.
    pub revert: Option<String>,
}

/// A decision with what came of it, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// Position in the run's decisions.
    pub seq: i64,
    /// The sub-task, when the decision is about one.
    pub idx: Option<u32>,
    /// What was decided.
    pub kind: DecisionKind,
    /// The argument (reason, new executor).
    pub arg: Option<String>,
    /// Wall-clock ms when it was queued.
    pub created_at: i64,
    /// Wall-clock ms when it was taken; `None` while queued.
    pub done_at: Option<i64>,
    /// What came of it, once taken.
    pub outcome: Option<String>,
    /// Whether it worked, once taken.
    pub ok: Option<bool>,
    /// Why not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The contract's decoded refusal, when the chain refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revert: Option<String>,
}

fn decision_kind(text: &str) -> Result<DecisionKind, StoreError> {
    DecisionKind::parse(text)
        .map_err(|e| StoreError::Corrupt { table: "decisions", detail: e.to_string() })
}
