//! Runs: inserted once, read, and moved between states only from the
//! states a caller expects.

use sqlx::{Row, any::AnyRow};

use super::{RunRow, Store, StoreError, now_ms};

/// Most runs one list returns.
pub const MAX_RUN_LIST: u32 = 1_000;

/// A run as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunSummary {
    /// The run id.
    pub id: String,
    /// Its state.
    pub state: String,
    /// Why it paused, failed or was cancelled.
    pub reason: Option<String>,
    /// Created, ms.
    pub created_at: i64,
    /// Last changed (for a completed run: when it completed), ms.
    pub updated_at: i64,
}
use crate::state::{Gates, Reason, RunState, Spend, Stakes};

impl Store {
    /// Inserts a new run; refuses an id that exists.
    pub async fn insert_run(
        &self,
        id: &str,
        plan_json: &str,
        state: RunState,
    ) -> Result<RunRow, StoreError> {
        self.insert_run_with(id, plan_json, state, Stakes::Low, None).await
    }

    /// Inserts a new run with its stakes and classification.
    pub async fn insert_run_with(
        &self,
        id: &str,
        plan_json: &str,
        state: RunState,
        stakes: Stakes,
        classification: Option<&str>,
    ) -> Result<RunRow, StoreError> {
        self.insert_run_for(id, plan_json, state, stakes, classification, None).await
    }

    /// [`Store::insert_run_with`], for `sponsor`'s lane (see [`crate::replica`]).
    pub async fn insert_run_for(
        &self,
        id: &str,
        plan_json: &str,
        state: RunState,
        stakes: Stakes,
        classification: Option<&str>,
        sponsor: Option<&str>,
    ) -> Result<RunRow, StoreError> {
        let now = now_ms();
        let (state, stakes) = (state.as_str(), stakes.as_str());
        let res = sqlx::query(
            "INSERT INTO runs (id, plan_json, state, created_at, updated_at, stakes, \
             classification, sponsor) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(plan_json)
        .bind(state)
        .bind(now)
        .bind(now)
        .bind(stakes)
        .bind(classification)
        .bind(sponsor)
        .execute(&self.pool)
        .await?;
        if res.rows_affected() == 0 {
            return Err(StoreError::Duplicate(id.to_owned()));
        }
        Ok(RunRow {
            id: id.to_owned(),
            plan_json: plan_json.to_owned(),
            state: state.to_owned(),
            reason: None,
            pause_reason: None,
            close_reason: None,
            created_at: now,
            updated_at: now,
            paused_at: None,
            stakes: stakes.to_owned(),
            classification: classification.map(str::to_owned),
        })
    }

    /// The run `id`, if any.
    pub async fn run(&self, id: &str) -> Result<Option<RunRow>, StoreError> {
        let row = sqlx::query(
            "SELECT id, plan_json, state, pause_reason, close_reason, created_at, updated_at, paused_at, stakes, classification \
             FROM runs WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| run_row(&r)).transpose()
    }

    /// Every run, newest first.
    pub async fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, plan_json, state, pause_reason, close_reason, created_at, updated_at, paused_at, stakes, classification \
             FROM runs ORDER BY created_at DESC, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(run_row).collect()
    }

    /// At most `limit` runs, newest first, optionally only those in `state`,
    /// without their plans: what a run list shows.
    pub async fn run_list(
        &self,
        state: Option<RunState>,
        limit: u32,
    ) -> Result<Vec<RunSummary>, StoreError> {
        self.run_list_of(None, state, limit).await
    }

    /// [`Store::run_list`], only the runs `owner` (lowercase 0x address)
    /// owns when given.
    pub async fn run_list_of(
        &self,
        owner: Option<&str>,
        state: Option<RunState>,
        limit: u32,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let limit = i64::from(limit.clamp(1, MAX_RUN_LIST));
        let mut sql =
            "SELECT id, state, pause_reason, close_reason, created_at, updated_at FROM runs WHERE 1 = 1"
                .to_owned();
        let mut n = 0;
        let mut param = || {
            n += 1;
            format!("${n}")
        };
        if owner.is_some() {
            sql.push_str(&format!(" AND owner = {}", param()));
        }
        if state.is_some() {
            sql.push_str(&format!(" AND state = {}", param()));
        }
        sql.push_str(&format!(" ORDER BY created_at DESC, id LIMIT {}", param()));
        let mut query = sqlx::query(&sql);
        if let Some(owner) = owner {
            query = query.bind(owner);
        }
        if let Some(s) = state {
            query = query.bind(s.as_str());
        }
        let rows = query.bind(limit).fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| {
                Ok(RunSummary {
                    id: r.try_get("id")?,
                    state: r.try_get("state")?,
                    reason: shown_reason(r)?,
                    created_at: r.try_get("created_at")?,
                    updated_at: r.try_get("updated_at")?,
                })
            })
            .collect()
    }

    /// Runs in any of `states`.
    pub async fn runs_in(&self, states: &[RunState]) -> Result<Vec<RunRow>, StoreError> {
        let words = RunState::words(states);
        Ok(self.runs().await?.into_iter().filter(|r| words.contains(&r.state.as_str())).collect())
    }

    /// Records the block run `id` was approved at: its tasks' logs are read
    /// from there.
    pub async fn set_from_block(&self, id: &str, block: u64) -> Result<(), StoreError> {
        let block = i64::try_from(block).unwrap_or(i64::MAX);
        sqlx::query("UPDATE runs SET from_block = $1 WHERE id = $2")
            .bind(block)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records what run `id` has spent (see [`Spend`]).
    pub async fn set_spend(&self, id: &str, spend: &Spend) -> Result<(), StoreError> {
        let json = serde_json::to_string(spend).expect("amounts serialize");
        sqlx::query("UPDATE runs SET spend = $1 WHERE id = $2")
            .bind(json)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records where run `id`'s checkpoints stand (see [`Gates`]).
    pub async fn set_gates(&self, id: &str, gates: &Gates) -> Result<(), StoreError> {
        let json = serde_json::to_string(gates).expect("gates serialize");
        sqlx::query("UPDATE runs SET gates = $1 WHERE id = $2")
            .bind(json)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Where run `id`'s checkpoints stand; empty before any is reached.
    pub async fn gates(&self, id: &str) -> Result<Gates, StoreError> {
        let row: Option<(Option<String>,)> = sqlx::query_as("SELECT gates FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        let Some(json) = row.and_then(|(s,)| s) else { return Ok(Gates::new()) };
        serde_json::from_str(&json)
            .map_err(|e| StoreError::Corrupt { table: "runs", detail: format!("{id}: gates: {e}") })
    }

    /// What run `id` has spent, as last recorded; `None` before the first
    /// look at the chain after approval.
    pub async fn spend(&self, id: &str) -> Result<Option<Spend>, StoreError> {
        let row: Option<(Option<String>,)> = sqlx::query_as("SELECT spend FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        let Some(json) = row.and_then(|(s,)| s) else { return Ok(None) };
        serde_json::from_str(&json)
            .map(Some)
            .map_err(|e| StoreError::Corrupt { table: "runs", detail: format!("{id}: spend: {e}") })
    }

    /// The block run `id` was approved at; `None` for a run approved before
    /// that was recorded (or not approved).
    pub async fn from_block(&self, id: &str) -> Result<Option<u64>, StoreError> {
        let row: Option<(Option<i64>,)> =
            sqlx::query_as("SELECT from_block FROM runs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.and_then(|(b,)| b).and_then(|b| u64::try_from(b).ok()))
    }

    /// Replaces the plan of a run still in `expected_state`; false when the
    /// run moved on meanwhile.
    pub async fn update_plan(
        &self,
        id: &str,
        plan_json: &str,
        expected_state: RunState,
    ) -> Result<bool, StoreError> {
        let res = sqlx::query(
            "UPDATE runs SET plan_json = $1, updated_at = $2 WHERE id = $3 AND state = $4",
        )
        .bind(plan_json)
        .bind(now_ms())
        .bind(id)
        .bind(expected_state.as_str())
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// The chain time (seconds) a paused run began waiting for a decision:
    /// `now`, the head's timestamp, at the first call since it paused, and
    /// that same time at every call after, until the run changes state.
    /// `None` when the run is not paused.
    pub async fn pause_began(&self, id: &str, now: u64) -> Result<Option<u64>, StoreError> {
        let chain = |v: i64| {
            u64::try_from(v).map_err(|_| StoreError::Corrupt {
                table: "runs",
                detail: format!("paused_block_time {v}"),
            })
        };
        let stamp = i64::try_from(now).map_err(|_| StoreError::Corrupt {
            table: "runs",
            detail: format!("chain time {now} past what a column holds"),
        })?;
        let paused = RunState::Paused.as_str();
        sqlx::query(
            "UPDATE runs SET paused_block_time = $1 \
             WHERE id = $2 AND state = $3 AND paused_block_time IS NULL",
        )
        .bind(stamp)
        .bind(id)
        .bind(paused)
        .execute(&self.pool)
        .await?;
        let row = sqlx::query("SELECT paused_block_time FROM runs WHERE id = $1 AND state = $2")
            .bind(id)
            .bind(paused)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) => r.try_get::<Option<i64>, _>("paused_block_time")?.map(chain).transpose(),
            None => Ok(None),
        }
    }

    /// Moves a run from one of `from` to `to`; false when it was in none of them.
    pub async fn transition(
        &self,
        id: &str,
        from: &[RunState],
        to: RunState,
        reason: Option<&Reason>,
    ) -> Result<bool, StoreError> {
        let Some(run) = self.run(id).await? else { return Ok(false) };
        if !RunState::words(from).contains(&run.state.as_str()) {
            return Ok(false);
        }
        let paused_at = (to == RunState::Paused).then(now_ms);
        // A new pause's wait is stamped with chain time at the runner's
        // next look ([`Self::pause_began`]).
        let (pause, close) = match reason {
            Some(Reason::Pause(p)) => (Some(p.to_string()), None),
            Some(Reason::Close(c)) => (None, Some(c.to_string())),
            None => (None, None),
        };
        let res = sqlx::query(
            "UPDATE runs SET state = $1, pause_reason = $2, close_reason = $3, paused_at = $4, \
               updated_at = $5, paused_block_time = NULL \
             WHERE id = $6 AND state = $7",
        )
        .bind(to.as_str())
        .bind(pause)
        .bind(close)
        .bind(paused_at)
        .bind(now_ms())
        .bind(id)
        .bind(&run.state)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() == 1)
    }
}

pub(super) fn run_row(r: &AnyRow) -> Result<RunRow, StoreError> {
    Ok(RunRow {
        id: r.try_get("id")?,
        plan_json: r.try_get("plan_json")?,
        state: r.try_get("state")?,
        reason: shown_reason(r)?,
        pause_reason: r.try_get("pause_reason")?,
        close_reason: r.try_get("close_reason")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        paused_at: r.try_get("paused_at")?,
        stakes: r.try_get("stakes")?,
        classification: r.try_get("classification")?,
    })
}

/// The reason a run shows: its close reason, else its pause's.
fn shown_reason(r: &AnyRow) -> Result<Option<String>, StoreError> {
    let close: Option<String> = r.try_get("close_reason")?;
    Ok(match close {
        Some(c) => Some(c),
        None => r.try_get("pause_reason")?,
    })
}
