//! The arbiter's decisions and scan cursor through sqlx (SQLite or
//! PostgreSQL, one set of migrations).

use serde::Serialize;
use sqlx::{AnyPool, Row};
use tessera_orchestrator::store::{Backend, StoreError, now_ms, open_pool};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// A stored decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Task id (decimal).
    pub task_id: String,
    /// `dispute` or `appeal`.
    pub level: String,
    /// `worker`, `client` or `split`.
    pub verdict: String,
    /// Executor's share.
    pub share_bps: u16,
    /// Where the rationale is published.
    pub rationale_uri: String,
    /// Which judge decided.
    pub judge: String,
    /// The whole verdict as JSON.
    pub body: String,
    /// The ruling's transaction, once sent.
    pub tx_hash: Option<String>,
}

/// The arbiter's store.
#[derive(Debug, Clone)]
pub struct ArbiterStore {
    pool: AnyPool,
    backend: Backend,
}

impl ArbiterStore {
    /// Connects and migrates.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let (pool, backend) = open_pool(url, &MIGRATOR).await?;
        Ok(Self { pool, backend })
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The decision for `task_id` at `level`, if any.
    pub async fn decision(
        &self,
        task_id: &str,
        level: &str,
    ) -> Result<Option<Decision>, StoreError> {
        let row = sqlx::query(
            "SELECT task_id, level, verdict, share_bps, rationale_uri, judge, body, tx_hash \
             FROM arbiter_decisions WHERE task_id = $1 AND level = $2",
        )
        .bind(task_id)
        .bind(level)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            let share: i64 = r.try_get("share_bps")?;
            Ok(Decision {
                task_id: r.try_get("task_id")?,
                level: r.try_get("level")?,
                verdict: r.try_get("verdict")?,
                share_bps: u16::try_from(share).map_err(|_| StoreError::Corrupt {
                    table: "arbiter_decisions",
                    detail: format!("share {share}"),
                })?,
                rationale_uri: r.try_get("rationale_uri")?,
                judge: r.try_get("judge")?,
                body: r.try_get("body")?,
                tx_hash: r.try_get("tx_hash")?,
            })
        })
        .transpose()
    }

    /// Records a decision before it is sent; keeps an existing one.
    pub async fn record(&self, d: &Decision) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO arbiter_decisions (task_id, level, verdict, share_bps, rationale_uri, judge, body, decided_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (task_id, level) DO NOTHING",
        )
        .bind(&d.task_id)
        .bind(&d.level)
        .bind(&d.verdict)
        .bind(i64::from(d.share_bps))
        .bind(&d.rationale_uri)
        .bind(&d.judge)
        .bind(&d.body)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a decision executed by `tx_hash` (or by someone else, `None`).
    pub async fn executed(
        &self,
        task_id: &str,
        level: &str,
        tx_hash: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE arbiter_decisions SET tx_hash = $1, executed_at = $2 \
             WHERE task_id = $3 AND level = $4 AND executed_at IS NULL",
        )
        .bind(tx_hash)
        .bind(now_ms())
        .bind(task_id)
        .bind(level)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Decisions recorded but not executed (a previous life died in between).
    pub async fn pending(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT task_id, level FROM arbiter_decisions WHERE executed_at IS NULL ORDER BY decided_at")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| Ok((r.try_get("task_id")?, r.try_get("level")?))).collect()
    }

    /// Every decision, newest first.
    pub async fn all(&self) -> Result<Vec<Decision>, StoreError> {
        let rows =
            sqlx::query("SELECT task_id, level FROM arbiter_decisions ORDER BY decided_at DESC")
                .fetch_all(&self.pool)
                .await?;
        let mut out = Vec::new();
        for r in rows {
            let (t, l): (String, String) = (r.try_get("task_id")?, r.try_get("level")?);
            if let Some(d) = self.decision(&t, &l).await? {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// The block the scan resumes at.
    pub async fn cursor(&self) -> Result<Option<u64>, StoreError> {
        let row = sqlx::query("SELECT next_block FROM arbiter_cursor WHERE id = 'scan'")
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<i64, _>("next_block")).transpose()?.map(|b| b as u64))
    }

    /// Saves the scan cursor.
    pub async fn set_cursor(&self, next_block: u64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO arbiter_cursor (id, next_block) VALUES ('scan', $1) \
             ON CONFLICT (id) DO UPDATE SET next_block = excluded.next_block",
        )
        .bind(next_block as i64)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
