//! What operators ask of the store: whether it answers, and how many runs
//! stand in each state (`/readyz` and `/metrics`).

use sqlx::Row;

use super::{Store, StoreError};
use crate::state::RunState;

impl Store {
    /// `SELECT 1`: the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Runs in each state, every state listed (0 when none is in it).
    pub async fn runs_by_state(&self) -> Result<Vec<(&'static str, u64)>, StoreError> {
        let rows = sqlx::query("SELECT state, COUNT(*) AS n FROM runs GROUP BY state")
            .fetch_all(&self.pool)
            .await?;
        let mut counts: Vec<(&'static str, u64)> =
            RunState::ALL.iter().map(|s| (s.as_str(), 0)).collect();
        for row in rows {
            let state: String = row.try_get("state")?;
            let n: i64 = row.try_get("n")?;
            let state = RunState::parse(&state)
                .map_err(|e| StoreError::Corrupt { table: "runs", detail: e.to_string() })?;
            if let Some(c) = counts.iter_mut().find(|(s, _)| *s == state.as_str()) {
                c.1 = u64::try_from(n).unwrap_or_default();
            }
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn counts_every_state(store: Store) {
        store.ping().await.unwrap();
        store.insert_run("0x01", "{}", RunState::Proposed).await.unwrap();
        store.insert_run("0x02", "{}", RunState::Completed).await.unwrap();
        store.insert_run("0x03", "{}", RunState::Completed).await.unwrap();
        let counts = store.runs_by_state().await.unwrap();
        assert_eq!(counts.len(), RunState::ALL.len());
        assert!(counts.contains(&("completed", 2)));
        assert!(counts.contains(&("proposed", 1)));
        assert!(counts.contains(&("failed", 0)));
    }

    #[tokio::test]
    async fn runs_are_counted_by_state_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("runs.db").display());
        counts_every_state(Store::connect(&url).await.unwrap()).await;
    }

    #[tokio::test]
    async fn runs_are_counted_by_state_on_postgres() {
        if let Some(url) = tessera_db::test_utils::scratch_postgres_url("runs_by_state").await {
            counts_every_state(Store::connect(&url).await.unwrap()).await;
        }
    }
}
