//! Migrations per component. Each service embeds its own migrations and
//! names its component; the history table [`HISTORY_TABLE`] keys applied
//! migrations by component and version, so services sharing one database
//! number their migrations independently (each from 1).
//!
//! Earlier releases kept every component's history in sqlx's single
//! `_sqlx_migrations` table, apart by version ranges. A component whose
//! migrations carried other numbers there names the offset
//! ([`Schema::with_legacy_offset`]); a migration recorded there, with the
//! same contents, is adopted into the history instead of being applied
//! again, so such a database opens as it is.

use std::{
    borrow::Cow,
    collections::{BTreeMap, BTreeSet},
    fmt::Write as _,
};

use sqlx::{Any, AnyPool, Row, Transaction, migrate::Migrator};

use crate::{Backend, DbError, now_ms};

/// The table holding every component's applied migrations.
pub const HISTORY_TABLE: &str = "tessera_migrations";

/// The single history table of earlier releases.
const LEGACY_TABLE: &str = "_sqlx_migrations";

/// The PostgreSQL advisory lock held while a schema is brought up to date,
/// so that services starting together apply each migration once.
const LOCK_KEY: i64 = 0x0074_6573_7365_7261;

/// One component's migrations.
#[derive(Debug, Clone, Copy)]
pub struct Schema<'a> {
    component: &'static str,
    migrator: &'a Migrator,
    legacy_offset: Option<i64>,
}

impl<'a> Schema<'a> {
    /// The migrations of `component` (`"orchestrator"`, `"indexer"`, …),
    /// usually embedded with `sqlx::migrate!`.
    pub const fn new(component: &'static str, migrator: &'a Migrator) -> Self {
        Self { component, migrator, legacy_offset: None }
    }

    /// Migration `n` of this component was recorded as version
    /// `n + offset` in the shared `_sqlx_migrations` table of earlier
    /// releases: a database they migrated is adopted, not migrated again.
    pub const fn with_legacy_offset(mut self, offset: i64) -> Self {
        self.legacy_offset = Some(offset);
        self
    }

    /// The component's name in the history table.
    pub fn component(&self) -> &'static str {
        self.component
    }

    /// Applies the migrations not yet recorded for this component, in
    /// version order, all in one transaction under a lock (an immediate
    /// transaction on SQLite, an advisory lock on PostgreSQL).
    pub(crate) async fn apply(&self, pool: &AnyPool, backend: Backend) -> Result<(), DbError> {
        let mut tx = match backend {
            Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => {
                let mut tx = pool.begin().await?;
                sqlx::query("SELECT 1 AS locked FROM pg_advisory_xact_lock($1)")
                    .bind(LOCK_KEY)
                    .execute(&mut *tx)
                    .await?;
                tx
            }
        };
        sqlx::query(&format!(
            "CREATE TABLE IF NOT EXISTS {HISTORY_TABLE} (
                component   TEXT NOT NULL,
                version     BIGINT NOT NULL,
                description TEXT NOT NULL,
                checksum    TEXT NOT NULL,
                applied_at  BIGINT NOT NULL,
                PRIMARY KEY (component, version)
            )"
        ))
        .execute(&mut *tx)
        .await?;
        let applied: BTreeMap<i64, String> = sqlx::query(&format!(
            "SELECT version, checksum FROM {HISTORY_TABLE} WHERE component = $1"
        ))
        .bind(self.component)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("version")?, r.try_get("checksum")?)))
        .collect::<Result<_, sqlx::Error>>()?;
        let legacy = match self.legacy_offset {
            Some(_) => legacy_history(&mut tx, backend).await?,
            None => BTreeSet::new(),
        };
        for m in self.migrator.iter().filter(|m| m.migration_type.is_up_migration()) {
            let sum = hex(&m.checksum);
            let changed =
                || DbError::MigrationChanged { component: self.component, version: m.version };
            if let Some(recorded) = applied.get(&m.version) {
                if *recorded != sum {
                    return Err(changed());
                }
                continue;
            }
            // Recorded by an earlier release: adopted as it is (its comments
            // may have been reworded since, so the contents are not compared).
            let adopted = self.legacy_offset.is_some_and(|o| legacy.contains(&(m.version + o)));
            if !adopted {
                sqlx::raw_sql(&m.sql).execute(&mut *tx).await.map_err(|source| {
                    DbError::Migrate {
                        component: self.component,
                        version: m.version,
                        description: m.description.to_string(),
                        source,
                    }
                })?;
            }
            sqlx::query(&format!(
                "INSERT INTO {HISTORY_TABLE} (component, version, description, checksum, applied_at) \
                 VALUES ($1, $2, $3, $4, $5)"
            ))
            .bind(self.component)
            .bind(m.version)
            .bind(Cow::clone(&m.description).into_owned())
            .bind(sum)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// The versions of the successful migrations in the shared table of
/// earlier releases; none when the table does not exist.
async fn legacy_history(
    tx: &mut Transaction<'static, Any>,
    backend: Backend,
) -> Result<BTreeSet<i64>, DbError> {
    let exists = match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = $1"
        }
        Backend::Postgres => {
            "SELECT COUNT(*) AS n FROM information_schema.tables \
             WHERE table_name = $1 AND table_schema = current_schema()"
        }
    };
    let n: i64 = sqlx::query(exists).bind(LEGACY_TABLE).fetch_one(&mut **tx).await?.try_get("n")?;
    if n == 0 {
        return Ok(BTreeSet::new());
    }
    let rows = sqlx::query(&format!("SELECT version FROM {LEGACY_TABLE} WHERE success"))
        .fetch_all(&mut **tx)
        .await?;
    Ok(rows.iter().map(|r| r.try_get("version")).collect::<Result<_, sqlx::Error>>()?)
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::open_pool;

    /// A migrator over `files` (name, SQL) written to a directory of `dir`.
    async fn migrator(dir: &Path, name: &str, files: &[(&str, &str)]) -> Migrator {
        let at = dir.join(name);
        std::fs::create_dir_all(&at).unwrap();
        for (file, sql) in files {
            std::fs::write(at.join(file), sql).unwrap();
        }
        Migrator::new(at.as_path()).await.unwrap()
    }

    async fn tables(pool: &AnyPool) -> Vec<String> {
        sqlx::query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .fetch_all(pool)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get("name"))
            .collect()
    }

    #[tokio::test]
    async fn components_number_their_migrations_independently() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
        let a = migrator(dir.path(), "a", &[("0001_a.sql", "CREATE TABLE a (x BIGINT);")]).await;
        let b = migrator(dir.path(), "b", &[("0001_b.sql", "CREATE TABLE b (x BIGINT);")]).await;
        open_pool(&url, &Schema::new("a", &a)).await.unwrap();
        let (pool, _) = open_pool(&url, &Schema::new("b", &b)).await.unwrap();
        // Opening again applies nothing twice.
        open_pool(&url, &Schema::new("a", &a)).await.unwrap();
        assert_eq!(tables(&pool).await, ["a", "b", HISTORY_TABLE]);
        let n: i64 = sqlx::query(&format!("SELECT COUNT(*) AS n FROM {HISTORY_TABLE}"))
            .fetch_one(&pool)
            .await
            .unwrap()
            .get("n");
        assert_eq!(n, 2);
    }

    #[tokio::test]
    async fn a_changed_migration_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
        let one = migrator(dir.path(), "1", &[("0001_a.sql", "CREATE TABLE a (x BIGINT);")]).await;
        let two = migrator(dir.path(), "2", &[("0001_a.sql", "CREATE TABLE a (y BIGINT);")]).await;
        open_pool(&url, &Schema::new("a", &one)).await.unwrap();
        let err = open_pool(&url, &Schema::new("a", &two)).await.unwrap_err();
        assert!(matches!(err, DbError::MigrationChanged { component: "a", version: 1 }), "{err}");
    }

    #[tokio::test]
    async fn a_failing_migration_names_itself_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
        let bad = migrator(
            dir.path(),
            "bad",
            &[("0001_ok.sql", "CREATE TABLE ok (x BIGINT);"), ("0002_bad.sql", "NOT SQL;")],
        )
        .await;
        let err = open_pool(&url, &Schema::new("c", &bad)).await.unwrap_err();
        assert!(matches!(err, DbError::Migrate { component: "c", version: 2, .. }), "{err}");
        let (pool, _) = open_pool(&url, &Schema::new("none", &Migrator::DEFAULT)).await.unwrap();
        assert_eq!(tables(&pool).await, [HISTORY_TABLE], "one transaction per component");
    }

    /// A database migrated by earlier releases, every component's history
    /// in sqlx's one table with versions 1…, 1001…, 2001…, opens as it is
    /// and then takes the migrations it lacks.
    #[tokio::test]
    async fn a_database_of_the_single_history_table_is_adopted() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
        let old = migrator(
            dir.path(),
            "old",
            &[
                ("0001_runs.sql", "CREATE TABLE runs (x BIGINT);"),
                ("1001_arb.sql", "CREATE TABLE arb (x BIGINT);"),
                ("2001_ix.sql", "CREATE TABLE ix (x BIGINT);"),
            ],
        )
        .await;
        let (pool, _) =
            crate::pool::open_pool(&url, &Schema::new("none", &Migrator::DEFAULT)).await.unwrap();
        old.run(&pool).await.unwrap();
        // The contents of an adopted migration may have been reworded.
        let runs = migrator(
            dir.path(),
            "runs",
            &[("0001_runs.sql", "-- runs\nCREATE TABLE runs (x BIGINT);")],
        )
        .await;
        let ix = migrator(
            dir.path(),
            "ix",
            &[
                ("0001_ix.sql", "CREATE TABLE ix (x BIGINT);"),
                ("0002_more.sql", "CREATE TABLE ix_more (x BIGINT);"),
            ],
        )
        .await;
        open_pool(&url, &Schema::new("runs", &runs).with_legacy_offset(0)).await.unwrap();
        open_pool(&url, &Schema::new("ix", &ix).with_legacy_offset(2000)).await.unwrap();
        assert_eq!(
            tables(&pool).await,
            ["_sqlx_migrations", "arb", "ix", "ix_more", "runs", HISTORY_TABLE]
        );
        let versions: Vec<(String, i64)> =
            sqlx::query(&format!("SELECT component, version FROM {HISTORY_TABLE} ORDER BY 1, 2"))
                .fetch_all(&pool)
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get("component"), r.get("version")))
                .collect();
        assert_eq!(versions, [("ix".to_owned(), 1), ("ix".to_owned(), 2), ("runs".to_owned(), 1)]);
    }

    /// On PostgreSQL: a database of the single history table is adopted,
    /// and services opening one database at once apply each migration once.
    #[tokio::test]
    async fn postgres_adopts_and_serialises_migrations() {
        let Some(url) = crate::test_utils::scratch_postgres_url("db_migrate").await else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let old =
            migrator(dir.path(), "old", &[("2001_ix.sql", "CREATE TABLE ix (x BIGINT);")]).await;
        let (pool, _) = open_pool(&url, &Schema::new("none", &Migrator::DEFAULT)).await.unwrap();
        old.run(&pool).await.unwrap();
        let ix = migrator(
            dir.path(),
            "ix",
            &[
                ("0001_ix.sql", "CREATE TABLE ix (x BIGINT);"),
                ("0002_more.sql", "CREATE TABLE ix_more (x BIGINT);"),
            ],
        )
        .await;
        let schema = Schema::new("ix", &ix).with_legacy_offset(2000);
        let (one, two) = tokio::join!(open_pool(&url, &schema), open_pool(&url, &schema));
        one.unwrap();
        two.unwrap();
        let n: i64 = sqlx::query(&format!(
            "SELECT COUNT(*) AS n FROM {HISTORY_TABLE} WHERE component = 'ix'"
        ))
        .fetch_one(&pool)
        .await
        .unwrap()
        .get("n");
        assert_eq!(n, 2);
        sqlx::query("INSERT INTO ix_more VALUES (1)").execute(&pool).await.unwrap();
    }
}
