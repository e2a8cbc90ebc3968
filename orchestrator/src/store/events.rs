//! The run event stream: numbered per run, each dedup key stored once.

use sqlx::Row;

use super::{Backend, EVENTS_CHANNEL, EventRow, Store, StoreError, now_ms};
use crate::state::EventKind;

impl Store {
    /// Appends an event unless one with the same `dedup` key exists; returns
    /// the stored event when it is new. Numbered in a transaction no other
    /// numbering of the run's events runs beside
    /// ([`tessera_db::begin_numbering`]): two writers sharing the database
    /// never take the same position, nor store one `dedup` key twice.
    pub async fn append_event(
        &self,
        run_id: &str,
        kind: EventKind,
        dedup: &str,
        body: &serde_json::Value,
    ) -> Result<Option<EventRow>, StoreError> {
        let kind = kind.as_str();
        let key = format!("run_events:{run_id}");
        let mut tx = tessera_db::begin_numbering(&self.pool, self.backend, &key).await?;
        let exists = sqlx::query("SELECT seq FROM run_events WHERE run_id = $1 AND dedup = $2")
            .bind(run_id)
            .bind(dedup)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_some() {
            return Ok(None);
        }
        let seq: i64 = sqlx::query(
            "SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM run_events WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(&mut *tx)
        .await?
        .try_get("next")?;
        let mut body = body.clone();
        if let Some(obj) = body.as_object_mut() {
            obj.insert("seq".into(), seq.into());
            obj.insert("kind".into(), kind.into());
        }
        let text = body.to_string();
        sqlx::query(
            "INSERT INTO run_events (run_id, seq, kind, dedup, body, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(run_id)
        .bind(seq)
        .bind(kind)
        .bind(dedup)
        .bind(&text)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        // Replicas hear of it once it is committed (a notification sent in
        // a transaction is delivered at its commit, in commit order).
        if let (Some(origin), Backend::Postgres) = (&self.origin, self.backend) {
            sqlx::query("SELECT 1 AS sent FROM pg_notify($1, $2)")
                .bind(EVENTS_CHANNEL)
                .bind(super::leases::event_payload(run_id, seq, origin))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(Some(EventRow { run_id: run_id.to_owned(), seq, kind: kind.to_owned(), body: text }))
    }

    /// Whether run `run_id` stored an event with key `dedup` already.
    pub async fn has_event(&self, run_id: &str, dedup: &str) -> Result<bool, StoreError> {
        let found = sqlx::query("SELECT seq FROM run_events WHERE run_id = $1 AND dedup = $2")
            .bind(run_id)
            .bind(dedup)
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.is_some())
    }

    /// The bodies of run `run_id`'s events of `kind`, oldest first.
    pub async fn events_of_kind(
        &self,
        run_id: &str,
        kind: EventKind,
    ) -> Result<Vec<String>, StoreError> {
        let rows =
            sqlx::query("SELECT body FROM run_events WHERE run_id = $1 AND kind = $2 ORDER BY seq")
                .bind(run_id)
                .bind(kind.as_str())
                .fetch_all(&self.pool)
                .await?;
        rows.iter().map(|r| Ok(r.try_get("body")?)).collect()
    }

    /// Events of a run after `after_seq`, in order.
    pub async fn events_after(
        &self,
        run_id: &str,
        after_seq: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT run_id, seq, kind, body FROM run_events \
             WHERE run_id = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(run_id)
        .bind(after_seq)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(EventRow {
                    run_id: r.try_get("run_id")?,
                    seq: r.try_get("seq")?,
                    kind: r.try_get("kind")?,
                    body: r.try_get("body")?,
                })
            })
            .collect()
    }
}
