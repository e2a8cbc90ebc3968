//! Sponsors' sign-in: login nonces, sessions (their tokens stored hashed)
//! and the budgets each sponsor approved, for its rolling spend cap (see
//! migration `0012_sessions.sql` and [`crate::auth`]).

use super::{Store, StoreError};

fn to_i64(secs: u64) -> i64 {
    i64::try_from(secs).unwrap_or(i64::MAX)
}

impl Store {
    /// Records a login nonce, usable once until `expires_at` (unix
    /// seconds); forgets the expired nonces and sessions as of `now`.
    pub async fn put_login_nonce(
        &self,
        nonce: &str,
        expires_at: u64,
        now: u64,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM login_nonces WHERE expires_at <= $1")
            .bind(to_i64(now))
            .execute(&self.pool)
            .await?;
        sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
            .bind(to_i64(now))
            .execute(&self.pool)
            .await?;
        sqlx::query("INSERT INTO login_nonces (nonce, expires_at) VALUES ($1, $2)")
            .bind(nonce)
            .bind(to_i64(expires_at))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Uses up `nonce`: true when it was issued and unexpired at `now` (and
    /// nobody used it before; a second call answers false).
    pub async fn take_login_nonce(&self, nonce: &str, now: u64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM login_nonces WHERE nonce = $1 AND expires_at > $2")
            .bind(nonce)
            .bind(to_i64(now))
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Stores a session for `address` (lowercase 0x) under its token's hash.
    pub async fn put_session(
        &self,
        token_hash: &str,
        address: &str,
        expires_at: u64,
        now: u64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO sessions (token_hash, address, expires_at, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash)
        .bind(address)
        .bind(to_i64(expires_at))
        .bind(to_i64(now))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The address of the live session with this token hash at `now`.
    pub async fn session(&self, token_hash: &str, now: u64) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as(
            "SELECT address FROM sessions WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(to_i64(now))
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(a,)| a))
    }

    /// Ends the session with this token hash.
    pub async fn end_session(&self, token_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records that `sponsor` approved `budget` (base units) for run `id`
    /// at `at` (unix seconds), unless what it approved after `since`,
    /// with `budget` on top, would pass `cap`: then nothing is recorded and
    /// the answer is `Some(approved)`, what it approved after `since`. A
    /// second approval of the run replaces the first. The sum and the
    /// insert are one transaction that no other reservation for the same
    /// sponsor overlaps, on any replica sharing the store, so two
    /// approvals at once cannot both pass the cap.
    pub async fn reserve_sponsor_spend(
        &self,
        id: &str,
        sponsor: &str,
        budget: u128,
        at: u64,
        since: u64,
        cap: u128,
    ) -> Result<Option<u128>, StoreError> {
        let key = format!("sponsor-cap:{sponsor}");
        let mut tx = tessera_db::begin_numbering(&self.pool, self.backend, &key).await?;
        sqlx::query("DELETE FROM sponsor_approvals WHERE run_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT budget FROM sponsor_approvals WHERE sponsor = $1 AND approved_at > $2",
        )
        .bind(sponsor)
        .bind(to_i64(since))
        .fetch_all(&mut *tx)
        .await?;
        let approved = sum_budgets(&rows)?;
        if approved.saturating_add(budget) > cap {
            tx.rollback().await?;
            return Ok(Some(approved));
        }
        sqlx::query(
            "INSERT INTO sponsor_approvals (run_id, sponsor, budget, approved_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(id)
        .bind(sponsor)
        .bind(budget.to_string())
        .bind(to_i64(at))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(None)
    }

    /// Forgets run `id`'s approval record (its approval did not go through).
    pub async fn drop_sponsor_approval(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sponsor_approvals WHERE run_id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// What `sponsor` approved since `since` (unix seconds), base units.
    pub async fn sponsor_spend_since(&self, sponsor: &str, since: u64) -> Result<u128, StoreError> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT budget FROM sponsor_approvals WHERE sponsor = $1 AND approved_at > $2",
        )
        .bind(sponsor)
        .bind(to_i64(since))
        .fetch_all(&self.pool)
        .await?;
        sum_budgets(&rows)
    }
}

/// The sum of the stored budgets (decimal strings), base units.
fn sum_budgets(rows: &[(String,)]) -> Result<u128, StoreError> {
    rows.iter().try_fold(0u128, |sum, (b,)| {
        let b: u128 = b.parse().map_err(|_| StoreError::Corrupt {
            table: "sponsor_approvals",
            detail: format!("budget {b:?}"),
        })?;
        Ok(sum.saturating_add(b))
    })
}
