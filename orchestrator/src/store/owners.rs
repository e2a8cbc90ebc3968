//! Which sponsor a run belongs to, and the grant that funds it (see
//! migration `0011_sponsors.sql`).

use super::{Store, StoreError};

/// A run's sponsor-side funding: the signed grant and the permit that came
/// with it, as stored (JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRow {
    /// `tessera_bindings::grant::SignedGrant` as JSON.
    pub grant_json: String,
    /// The EIP-2612 permit sent with it, as JSON, if any.
    pub permit_json: Option<String>,
}

impl Store {
    /// Records that run `id` belongs to `owner` (lowercase 0x address).
    pub async fn set_owner(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE runs SET owner = $1 WHERE id = $2")
            .bind(owner)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The sponsor run `id` belongs to; `None` for a run from before owners
    /// (or no such run).
    pub async fn owner(&self, id: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(Option<String>,)> = sqlx::query_as("SELECT owner FROM runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.and_then(|(o,)| o))
    }

    /// Stores the grant (and permit) that fund run `id`.
    pub async fn set_grant(&self, id: &str, grant: &GrantRow) -> Result<(), StoreError> {
        sqlx::query("UPDATE runs SET grant_json = $1, permit_json = $2 WHERE id = $3")
            .bind(&grant.grant_json)
            .bind(grant.permit_json.as_deref())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The grant that funds run `id`, when it has one.
    pub async fn grant(&self, id: &str) -> Result<Option<GrantRow>, StoreError> {
        let row: Option<(Option<String>, Option<String>)> =
            sqlx::query_as("SELECT grant_json, permit_json FROM runs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row
            .and_then(|(g, permit_json)| g.map(|grant_json| GrantRow { grant_json, permit_json })))
    }

    /// Forgets run `id`'s permit (once sent, or found unusable).
    pub async fn clear_permit(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE runs SET permit_json = NULL WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The ids of `owner`'s runs, newest first.
    pub async fn runs_of(&self, owner: &str) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT id FROM runs WHERE owner = $1 ORDER BY created_at DESC, id")
                .bind(owner)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{RunState, Stakes};

    #[tokio::test]
    async fn owner_and_grant_round_trip_and_runs_are_listed_per_owner() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("o.db").display());
        let store = Store::connect(&url).await.unwrap();
        for id in ["0x01", "0x02", "0x03"] {
            store.insert_run_with(id, "{}", RunState::Proposed, Stakes::Low, None).await.unwrap();
        }
        assert_eq!(store.owner("0x01").await.unwrap(), None, "no owner yet");
        store.set_owner("0x01", "0xaa").await.unwrap();
        store.set_owner("0x03", "0xaa").await.unwrap();
        store.set_owner("0x02", "0xbb").await.unwrap();
        assert_eq!(store.owner("0x01").await.unwrap().as_deref(), Some("0xaa"));
        let mut of_a = store.runs_of("0xaa").await.unwrap();
        of_a.sort();
        assert_eq!(of_a, ["0x01", "0x03"]);
        assert_eq!(store.runs_of("0xbb").await.unwrap(), ["0x02"]);
        assert!(store.runs_of("0xcc").await.unwrap().is_empty());

        assert_eq!(store.grant("0x01").await.unwrap(), None);
        let row =
            GrantRow { grant_json: "{\"g\":1}".into(), permit_json: Some("{\"p\":1}".into()) };
        store.set_grant("0x01", &row).await.unwrap();
        assert_eq!(store.grant("0x01").await.unwrap(), Some(row.clone()));
        store.clear_permit("0x01").await.unwrap();
        assert_eq!(store.grant("0x01").await.unwrap(), Some(GrantRow { permit_json: None, ..row }));
    }
}
