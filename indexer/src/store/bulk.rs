//! A first backfill writes every task once, in no order the task table's
//! secondary indexes are kept in: each of its rows costs a dozen scattered
//! index updates. So while the table is empty and a long range is folded
//! for the first time, those indexes are set aside and built afterwards
//! (one sort each, not fifty thousand inserts).
//!
//! What is set aside is written down first, in the same transaction as the
//! drop ([`IndexStore::set_aside_indexes`]): the definitions as the
//! database itself states them, so nothing here repeats the migrations. A
//! derivation that ends, however it ends, builds them again, each in one
//! transaction with the note of it ([`IndexStore::build_set_aside`]), and
//! so does opening the store after a crash. A reader meanwhile gets right
//! answers, from scans instead of indexes.

use sqlx::Row;
use tessera_db::{Backend, DbError, serialize_on};

use super::{IndexStore, totals::TOTALS_LOCK};

/// Blocks a first derivation must span before the task table's indexes
/// are set aside for it.
pub(super) const SET_ASIDE_FROM_BLOCKS: u64 = 64;

impl IndexStore {
    /// Drops the task table's secondary indexes, noting each definition in
    /// `ix_deferred_indexes`, when the table holds no task; returns how
    /// many were set aside.
    pub(super) async fn set_aside_indexes(&self) -> Result<usize, DbError> {
        let mut tx = self.pool.begin().await?;
        serialize_on(&mut tx, self.backend, TOTALS_LOCK).await?;
        let any =
            sqlx::query("SELECT 1 AS found FROM ix_tasks LIMIT 1").fetch_optional(&mut *tx).await?;
        if any.is_some() {
            return Ok(0);
        }
        let listed = match self.backend {
            Backend::Sqlite => {
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' \
                 AND tbl_name = 'ix_tasks' AND sql IS NOT NULL"
            }
            Backend::Postgres => {
                "SELECT CAST(indexname AS TEXT) AS name, indexdef AS sql FROM pg_indexes \
                 WHERE schemaname = current_schema() AND tablename = 'ix_tasks' \
                 AND indexname NOT IN (SELECT conname FROM pg_constraint)"
            }
        };
        let indexes: Vec<(String, String)> = sqlx::query(listed)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| Ok((r.try_get("name")?, r.try_get("sql")?)))
            .collect::<Result<_, sqlx::Error>>()?;
        for (name, sql) in &indexes {
            sqlx::query("INSERT INTO ix_deferred_indexes (name, sql) VALUES ($1, $2)")
                .bind(name)
                .bind(sql)
                .execute(&mut *tx)
                .await?;
            sqlx::query(&format!("DROP INDEX {name}")).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        tracing::debug!(indexes = indexes.len(), "task indexes set aside for the backfill");
        Ok(indexes.len())
    }

    /// Builds every index set aside again, each in one transaction with
    /// the removal of its note; returns how many.
    pub(super) async fn build_set_aside(&self) -> Result<usize, DbError> {
        let mut built = 0;
        loop {
            let mut tx = self.pool.begin().await?;
            serialize_on(&mut tx, self.backend, TOTALS_LOCK).await?;
            let Some(row) =
                sqlx::query("SELECT name, sql FROM ix_deferred_indexes ORDER BY name LIMIT 1")
                    .fetch_optional(&mut *tx)
                    .await?
            else {
                return Ok(built);
            };
            let (name, sql): (String, String) = (row.try_get("name")?, row.try_get("sql")?);
            let t = std::time::Instant::now();
            sqlx::query(&sql).execute(&mut *tx).await?;
            sqlx::query("DELETE FROM ix_deferred_indexes WHERE name = $1")
                .bind(&name)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            tracing::debug!(index = name, ms = t.elapsed().as_millis(), "task index built");
            built += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task table's indexes, by name, with their definitions.
    async fn indexes(store: &IndexStore) -> Vec<(String, String)> {
        let sql = match store.backend {
            Backend::Sqlite => {
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' \
                 AND tbl_name = 'ix_tasks' AND sql IS NOT NULL ORDER BY name"
            }
            Backend::Postgres => {
                "SELECT CAST(indexname AS TEXT) AS name, indexdef AS sql FROM pg_indexes \
                 WHERE schemaname = current_schema() AND tablename = 'ix_tasks' ORDER BY indexname"
            }
        };
        sqlx::query(sql)
            .fetch_all(&store.pool)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.try_get("name").unwrap(), r.try_get("sql").unwrap()))
            .collect()
    }

    /// Set aside, the indexes are gone and noted; a store opened after a
    /// crash (nothing built yet) builds them again as they were; with a
    /// task stored, nothing is set aside.
    async fn set_aside_indexes_come_back(url: &str) {
        let store = IndexStore::connect(url).await.unwrap();
        let all = indexes(&store).await;
        assert!(all.len() >= 10, "{all:?}");
        let n = store.set_aside_indexes().await.unwrap();
        assert_eq!(n, all.len() - usize::from(store.backend == Backend::Postgres));
        let left = indexes(&store).await;
        assert!(left.len() < 2, "only the key's own index is left: {left:?}");
        drop(store);
        let store = IndexStore::connect(url).await.unwrap();
        assert_eq!(indexes(&store).await, all, "built again on opening");
        let noted = sqlx::query("SELECT name FROM ix_deferred_indexes")
            .fetch_all(&store.pool)
            .await
            .unwrap();
        assert!(noted.is_empty());
        assert_eq!(store.build_set_aside().await.unwrap(), 0, "nothing left to build");
    }

    #[tokio::test]
    async fn set_aside_indexes_come_back_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("index.db").display());
        set_aside_indexes_come_back(&url).await;
    }

    #[tokio::test]
    async fn set_aside_indexes_come_back_on_postgresql() {
        let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_bulk").await else {
            return;
        };
        set_aside_indexes_come_back(&url).await;
    }
}
