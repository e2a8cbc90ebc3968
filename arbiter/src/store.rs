//! The arbiter's decisions and scan cursors through sqlx (SQLite or
//! PostgreSQL; migrations of the component `arbiter`). A decision's level
//! and verdict are typed here and stored as their names, converted in
//! [`level_from_text`] and [`verdict_from_text`] only.

use serde::Serialize;
use sqlx::{AnyPool, Row};
use tessera_db::{Backend, DbError, Schema, now_ms, open_pool};

use crate::judge::VerdictKind;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The arbiter's schema: migration `n` was version `1000 + n` in the single
/// history table of earlier releases.
const SCHEMA: Schema<'static> = Schema::new("arbiter", &MIGRATOR).with_legacy_offset(1000);

/// Which ruling a decision is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The first ruling on a dispute.
    Dispute,
    /// The appeal arbiter's final ruling.
    Appeal,
}

impl Level {
    /// Every level.
    pub const ALL: [Level; 2] = [Level::Dispute, Level::Appeal];

    /// The level's name, as serialized and stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Dispute => "dispute",
            Level::Appeal => "appeal",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The level stored as `text`.
fn level_from_text(text: &str) -> Result<Level, DbError> {
    Level::ALL.into_iter().find(|l| l.as_str() == text).ok_or_else(|| DbError::Corrupt {
        table: "arbiter_decisions",
        detail: format!("level {text:?}"),
    })
}

/// The verdict stored as `text`.
fn verdict_from_text(text: &str) -> Result<VerdictKind, DbError> {
    text.parse().map_err(|e| DbError::Corrupt {
        table: "arbiter_decisions",
        detail: format!("verdict: {e}"),
    })
}

/// A stored decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Task id (decimal).
    pub task_id: String,
    /// The first ruling or the appeal's.
    pub level: Level,
    /// Who the ruling favours.
    pub verdict: VerdictKind,
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
    pub async fn connect(url: &str) -> Result<Self, DbError> {
        let (pool, backend) = open_pool(url, &SCHEMA).await?;
        Ok(Self { pool, backend })
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `SELECT 1`: the database answers (`/readyz`).
    pub async fn ping(&self) -> Result<(), DbError> {
        sqlx::query("SELECT 1").execute(&self.pool).await.map_err(DbError::from)?;
        Ok(())
    }

    /// The decision for `task_id` at `level`, if any.
    pub async fn decision(&self, task_id: &str, level: Level) -> Result<Option<Decision>, DbError> {
        let row = sqlx::query(
            "SELECT task_id, level, verdict, share_bps, rationale_uri, judge, body, tx_hash \
             FROM arbiter_decisions WHERE task_id = $1 AND level = $2",
        )
        .bind(task_id)
        .bind(level.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            let share: i64 = r.try_get("share_bps")?;
            Ok(Decision {
                task_id: r.try_get("task_id")?,
                level: level_from_text(&r.try_get::<String, _>("level")?)?,
                verdict: verdict_from_text(&r.try_get::<String, _>("verdict")?)?,
                share_bps: u16::try_from(share).map_err(|_| DbError::Corrupt {
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
    pub async fn record(&self, d: &Decision) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO arbiter_decisions (task_id, level, verdict, share_bps, rationale_uri, judge, body, decided_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (task_id, level) DO NOTHING",
        )
        .bind(&d.task_id)
        .bind(d.level.as_str())
        .bind(d.verdict.as_str())
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
        level: Level,
        tx_hash: Option<&str>,
    ) -> Result<(), DbError> {
        sqlx::query(
            "UPDATE arbiter_decisions SET tx_hash = $1, executed_at = $2 \
             WHERE task_id = $3 AND level = $4 AND executed_at IS NULL",
        )
        .bind(tx_hash)
        .bind(now_ms())
        .bind(task_id)
        .bind(level.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Decisions recorded but not executed (a previous life died in between).
    pub async fn pending(&self) -> Result<Vec<(String, Level)>, DbError> {
        let rows = sqlx::query("SELECT task_id, level FROM arbiter_decisions WHERE executed_at IS NULL ORDER BY decided_at")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok((r.try_get("task_id")?, level_from_text(&r.try_get::<String, _>("level")?)?))
            })
            .collect()
    }

    /// Every decision, newest first.
    pub async fn all(&self) -> Result<Vec<Decision>, DbError> {
        let rows =
            sqlx::query("SELECT task_id, level FROM arbiter_decisions ORDER BY decided_at DESC")
                .fetch_all(&self.pool)
                .await?;
        let mut out = Vec::new();
        for r in rows {
            let t: String = r.try_get("task_id")?;
            let l = level_from_text(&r.try_get::<String, _>("level")?)?;
            if let Some(d) = self.decision(&t, l).await? {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// The block the scan of the arbiter ruling at `level` resumes at (the
    /// arbiter and the appeal arbiter may share a store).
    pub async fn cursor(&self, level: Level) -> Result<Option<u64>, DbError> {
        let row = sqlx::query("SELECT next_block FROM arbiter_cursor WHERE id = $1")
            .bind(cursor_id(level))
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<i64, _>("next_block")).transpose()?.map(|b| b as u64))
    }

    /// Saves the scan cursor of the arbiter ruling at `level`.
    pub async fn set_cursor(&self, level: Level, next_block: u64) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO arbiter_cursor (id, next_block) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET next_block = excluded.next_block",
        )
        .bind(cursor_id(level))
        .bind(next_block as i64)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// The cursor row of the arbiter ruling at `level`: `scan` (the name the
/// arbiter's cursor always had) or `appeal-scan`.
const fn cursor_id(level: Level) -> &'static str {
    match level {
        Level::Dispute => "scan",
        Level::Appeal => "appeal-scan",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sqlite() -> (tempfile::TempDir, ArbiterStore) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("arbiter.db").display());
        (dir, ArbiterStore::connect(&url).await.unwrap())
    }

    fn decision(task: &str, level: Level, verdict: VerdictKind) -> Decision {
        Decision {
            task_id: task.to_owned(),
            level,
            verdict,
            share_bps: 1_234,
            rationale_uri: "data:,why".into(),
            judge: "offline-rubric".into(),
            body: "{}".into(),
            tx_hash: None,
        }
    }

    async fn every_level_and_verdict_round_trips(store: ArbiterStore) {
        let mut written = Vec::new();
        for (i, verdict) in VerdictKind::ALL.into_iter().enumerate() {
            for level in Level::ALL {
                let d = decision(&i.to_string(), level, verdict);
                store.record(&d).await.unwrap();
                assert_eq!(store.decision(&d.task_id, level).await.unwrap(), Some(d.clone()));
                written.push(d);
            }
        }
        let mut all = store.all().await.unwrap();
        all.sort_by_key(|d| (d.task_id.clone(), d.level.as_str()));
        written.sort_by_key(|d| (d.task_id.clone(), d.level.as_str()));
        assert_eq!(all, written);
        store.executed("0", Level::Appeal, Some("0xaa")).await.unwrap();
        let pending = store.pending().await.unwrap();
        assert_eq!(pending.len(), written.len() - 1);
        assert!(!pending.contains(&("0".to_owned(), Level::Appeal)));
        assert!(pending.contains(&("0".to_owned(), Level::Dispute)));
    }

    #[tokio::test]
    async fn every_level_and_verdict_round_trips_on_sqlite() {
        let (_dir, store) = sqlite().await;
        every_level_and_verdict_round_trips(store).await;
    }

    #[tokio::test]
    async fn every_level_and_verdict_round_trips_on_postgresql() {
        let Some(url) = tessera_db::test_utils::scratch_postgres_url("arbiter_store").await else {
            return;
        };
        let store = ArbiterStore::connect(&url).await.unwrap();
        assert_eq!(store.backend(), Backend::Postgres);
        every_level_and_verdict_round_trips(store).await;
    }

    #[tokio::test]
    async fn the_arbiter_and_the_appeal_arbiter_keep_their_own_cursor() {
        let (_dir, store) = sqlite().await;
        assert_eq!(store.cursor(Level::Dispute).await.unwrap(), None);
        store.set_cursor(Level::Dispute, 40).await.unwrap();
        assert_eq!(store.cursor(Level::Appeal).await.unwrap(), None);
        store.set_cursor(Level::Appeal, 7).await.unwrap();
        store.set_cursor(Level::Dispute, 41).await.unwrap();
        assert_eq!(store.cursor(Level::Dispute).await.unwrap(), Some(41));
        assert_eq!(store.cursor(Level::Appeal).await.unwrap(), Some(7));
        // The arbiter's row keeps the name earlier releases wrote.
        let row = sqlx::query("SELECT next_block FROM arbiter_cursor WHERE id = 'scan'")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(row.try_get::<i64, _>("next_block").unwrap(), 41);
    }

    #[tokio::test]
    async fn unknown_stored_text_is_reported_not_guessed() {
        let (_dir, store) = sqlite().await;
        sqlx::query(
            "INSERT INTO arbiter_decisions (task_id, level, verdict, share_bps, rationale_uri, judge, body, decided_at) \
             VALUES ('1', 'dispute', 'Worker', 0, '', '', '', 0)",
        )
        .execute(&store.pool)
        .await
        .unwrap();
        let err = store.decision("1", Level::Dispute).await.unwrap_err();
        assert!(matches!(err, DbError::Corrupt { table: "arbiter_decisions", .. }), "{err}");
    }
}
