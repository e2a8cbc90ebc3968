//! Lane leases and the notifications between replicas (PostgreSQL only;
//! see [`crate::replica`]): a lease per sponsor lane, claimed with `SELECT
//! … FOR UPDATE SKIP LOCKED`, renewed only while its owner is still the
//! claimant, released on a graceful stop; `NOTIFY` on the two channels the
//! replicas listen on. Expiries are compared on the database's clock, so
//! replicas with skewed clocks still agree on when a lease lapsed.

use sqlx::Row;

use super::{Backend, EventRow, Store, StoreError};
use crate::state::RunState;

/// The channel a queued decision or an approval is announced on: payload
/// the run id. The lane holder wakes (or starts) that run's driver.
pub const WAKE_CHANNEL: &str = "tessera_wake";

/// The channel a stored event is announced on: payload `<run id>:<seq>:<origin>`
/// (`origin` the writing replica's id, so it skips its own).
pub const EVENTS_CHANNEL: &str = "tessera_events";

/// The database's clock, in ms.
const DB_NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// A lane's lease as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    /// The lane (the sponsor's address, lower-case hex).
    pub lane: String,
    /// The replica holding it; `None` once released.
    pub owner: Option<String>,
    /// When it lapses without a renewal (database clock, ms).
    pub expires_at: i64,
    /// When it was last claimed or renewed (database clock, ms).
    pub heartbeat_at: i64,
    /// Grows by one with each change of holder.
    pub epoch: i64,
}

/// What a claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The lease is this replica's, at `epoch`; `took_over` when it was
    /// taken from another replica whose lease had lapsed.
    Held {
        /// The lease's epoch.
        epoch: i64,
        /// Taken from another holder that stopped renewing.
        took_over: bool,
    },
    /// Another replica holds it (or is claiming it right now).
    Taken,
}

impl Store {
    fn require_postgres(&self, what: &'static str) -> Result<(), StoreError> {
        match self.backend {
            Backend::Postgres => Ok(()),
            Backend::Sqlite => Err(StoreError::NeedsPostgres(what)),
        }
    }

    /// Claims `lane`'s lease for `owner` for `ttl_ms`: taken when nobody
    /// holds it, when it was released, or when its holder let it lapse;
    /// renewed when `owner` holds it already. A lease another replica is
    /// claiming or renewing at this moment (its row locked) is skipped,
    /// not waited for.
    pub async fn claim_lease(
        &self,
        lane: &str,
        owner: &str,
        ttl_ms: i64,
    ) -> Result<Claim, StoreError> {
        self.require_postgres("leases")?;
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(&format!(
            "SELECT owner, expires_at, epoch, {DB_NOW} AS now FROM leases \
             WHERE lane = $1 FOR UPDATE SKIP LOCKED"
        ))
        .bind(lane)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            // No lease yet, or another replica holds its row locked.
            let made = sqlx::query(&format!(
                "INSERT INTO leases (lane, owner, expires_at, heartbeat_at, epoch) \
                 VALUES ($1, $2, {DB_NOW} + $3, {DB_NOW}, 1) ON CONFLICT (lane) DO NOTHING"
            ))
            .bind(lane)
            .bind(owner)
            .bind(ttl_ms)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            return Ok(if made.rows_affected() == 1 {
                Claim::Held { epoch: 1, took_over: false }
            } else {
                Claim::Taken
            });
        };
        let holder: Option<String> = row.try_get("owner")?;
        let expires_at: i64 = row.try_get("expires_at")?;
        let epoch: i64 = row.try_get("epoch")?;
        let now: i64 = row.try_get("now")?;
        let live = expires_at > now;
        let (epoch, took_over) = match holder.as_deref() {
            Some(h) if h == owner && live => (epoch, false),
            Some(_) if live => {
                tx.commit().await?;
                return Ok(Claim::Taken);
            }
            Some(h) => (epoch + 1, h != owner),
            None => (epoch + 1, false),
        };
        sqlx::query(&format!(
            "UPDATE leases SET owner = $1, expires_at = {DB_NOW} + $2, heartbeat_at = {DB_NOW}, \
             epoch = $3 WHERE lane = $4"
        ))
        .bind(owner)
        .bind(ttl_ms)
        .bind(epoch)
        .bind(lane)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Claim::Held { epoch, took_over })
    }

    /// Renews `lane`'s lease for another `ttl_ms`, only while `owner`
    /// still holds it and it has not lapsed; false when it is lost (taken
    /// over, released, or lapsed).
    pub async fn renew_lease(
        &self,
        lane: &str,
        owner: &str,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        self.require_postgres("leases")?;
        let res = sqlx::query(&format!(
            "UPDATE leases SET expires_at = {DB_NOW} + $1, heartbeat_at = {DB_NOW} \
             WHERE lane = $2 AND owner = $3 AND expires_at > {DB_NOW}"
        ))
        .bind(ttl_ms)
        .bind(lane)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// Gives `lane`'s lease up, when `owner` holds it: a standby takes it
    /// at its next claim instead of waiting for it to lapse.
    pub async fn release_lease(&self, lane: &str, owner: &str) -> Result<bool, StoreError> {
        self.require_postgres("leases")?;
        let res = sqlx::query(
            "UPDATE leases SET owner = NULL, expires_at = 0 WHERE lane = $1 AND owner = $2",
        )
        .bind(lane)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// `lane`'s lease, if it was ever claimed.
    pub async fn lease(&self, lane: &str) -> Result<Option<LeaseRow>, StoreError> {
        let row = sqlx::query(
            "SELECT lane, owner, expires_at, heartbeat_at, epoch FROM leases WHERE lane = $1",
        )
        .bind(lane)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(LeaseRow {
                lane: r.try_get("lane")?,
                owner: r.try_get("owner")?,
                expires_at: r.try_get("expires_at")?,
                heartbeat_at: r.try_get("heartbeat_at")?,
                epoch: r.try_get("epoch")?,
            })
        })
        .transpose()
    }

    /// Gives runs stored without a sponsor (before lanes existed) to
    /// `sponsor`; returns how many.
    pub async fn adopt_runs(&self, sponsor: &str) -> Result<u64, StoreError> {
        let res = sqlx::query("UPDATE runs SET sponsor = $1 WHERE sponsor IS NULL")
            .bind(sponsor)
            .execute(&self.pool)
            .await?;
        Ok(res.rows_affected())
    }

    /// The ids and states of `sponsor`'s live runs (running, paused or
    /// cancelling), oldest first.
    pub async fn live_runs_of(&self, sponsor: &str) -> Result<Vec<(String, String)>, StoreError> {
        let words = RunState::words(&RunState::LIVE);
        let marks: Vec<String> = (0..words.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT id, state FROM runs WHERE sponsor = $1 AND state IN ({}) \
             ORDER BY created_at, id",
            marks.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(sponsor);
        for w in &words {
            query = query.bind(*w);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok((r.try_get("id")?, r.try_get("state")?))).collect()
    }

    /// The sponsor (lane) run `id` belongs to, when recorded.
    pub async fn run_sponsor(&self, id: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT sponsor FROM runs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.and_then(|(s,)| s))
    }

    /// Event `seq` of run `run_id`, if stored.
    pub async fn event(&self, run_id: &str, seq: i64) -> Result<Option<EventRow>, StoreError> {
        let row = sqlx::query(
            "SELECT run_id, seq, kind, body FROM run_events WHERE run_id = $1 AND seq = $2",
        )
        .bind(run_id)
        .bind(seq)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(EventRow {
                run_id: r.try_get("run_id")?,
                seq: r.try_get("seq")?,
                kind: r.try_get("kind")?,
                body: r.try_get("body")?,
            })
        })
        .transpose()
    }

    /// Tells the replicas that run `id` has something new for its driver
    /// (a decision, an approval): `NOTIFY tessera_wake`. Nothing outside
    /// replica mode.
    pub async fn notify_wake(&self, id: &str) -> Result<(), StoreError> {
        if self.origin.is_none() || self.backend != Backend::Postgres {
            return Ok(());
        }
        sqlx::query("SELECT 1 AS sent FROM pg_notify($1, $2)")
            .bind(WAKE_CHANNEL)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// The payload announcing event `seq` of run `run_id`, written by replica `origin`.
pub(super) fn event_payload(run_id: &str, seq: i64, origin: &str) -> String {
    format!("{run_id}:{seq}:{origin}")
}

/// The run id, sequence number and origin of an events payload.
pub fn parse_event_payload(payload: &str) -> Option<(&str, i64, &str)> {
    let mut parts = payload.rsplitn(3, ':');
    let origin = parts.next()?;
    let seq = parts.next()?.parse().ok()?;
    let run = parts.next()?;
    Some((run, seq, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_payloads_round_trip() {
        let run = format!("0x{}", "ab".repeat(32));
        let p = event_payload(&run, 42, "r1f2e3");
        assert!(p.len() < 100, "tiny: {p}");
        assert_eq!(parse_event_payload(&p), Some((run.as_str(), 42, "r1f2e3")));
        assert_eq!(parse_event_payload("x:y"), None);
        assert_eq!(parse_event_payload("r:notanumber:o"), None);
    }
}
