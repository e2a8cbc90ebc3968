//! Sub-task progress rows, one per plan index, replaced as they move.

use sqlx::Row;

use super::{Store, StoreError, SubtaskRow, to_u32};

impl Store {
    /// The sub-task rows of a run, by index.
    pub async fn subtasks(&self, run_id: &str) -> Result<Vec<SubtaskRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT idx, attempt, executor, phase, task_id, result_uri, output \
             FROM subtasks WHERE run_id = $1 ORDER BY idx",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(SubtaskRow {
                    idx: to_u32(r.try_get::<i64, _>("idx")?, "subtasks")?,
                    attempt: to_u32(r.try_get::<i64, _>("attempt")?, "subtasks")?,
                    executor: r.try_get("executor")?,
                    phase: r.try_get("phase")?,
                    task_id: r.try_get("task_id")?,
                    result_uri: r.try_get("result_uri")?,
                    output: r.try_get("output")?,
                })
            })
            .collect()
    }

    /// Writes a sub-task row (insert or replace).
    pub async fn put_subtask(&self, run_id: &str, row: &SubtaskRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO subtasks (run_id, idx, attempt, executor, phase, task_id, result_uri, output) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (run_id, idx) DO UPDATE SET attempt = excluded.attempt, \
             executor = excluded.executor, phase = excluded.phase, task_id = excluded.task_id, \
             result_uri = excluded.result_uri, output = excluded.output",
        )
        .bind(run_id)
        .bind(i64::from(row.idx))
        .bind(i64::from(row.attempt))
        .bind(&row.executor)
        .bind(&row.phase)
        .bind(&row.task_id)
        .bind(&row.result_uri)
        .bind(&row.output)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
