//! Connection pools: the writer's pool (migrated on open), a second reader
//! on an SQLite file, and the API's read pool.

use sqlx::{AnyPool, any::AnyPoolOptions};

use crate::{DbError, Schema};

/// Which database is behind the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file (or memory).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// Opens a pool on `url` (`sqlite://<file>` — created when missing — or
/// `postgres://…`) and brings `schema` up to date. Services that share a
/// database each bring their own schema; their histories are kept apart.
pub async fn open_pool(url: &str, schema: &Schema<'_>) -> Result<(AnyPool, Backend), DbError> {
    open_pool_with(url, schema, &[]).await
}

/// [`open_pool`], with `sqlite_pragmas` (`"wal_autocheckpoint = 16384"`)
/// run on every SQLite connection besides WAL and `synchronous = NORMAL`.
pub async fn open_pool_with(
    url: &str,
    schema: &Schema<'_>,
    sqlite_pragmas: &'static [&'static str],
) -> Result<(AnyPool, Backend), DbError> {
    let (backend, url) = pool_url(url)?;
    // SQLite allows one writer: a single connection keeps writes ordered
    // and avoids busy errors; PostgreSQL gets a small pool.
    let max = if backend == Backend::Sqlite { 1 } else { 8 };
    // Set on every connection the pool opens: `synchronous` does not persist
    // in the file, and the pool replaces connections that grew old or idle.
    let sqlite = backend == Backend::Sqlite;
    let pool = AnyPoolOptions::new()
        .max_connections(max)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if sqlite {
                    let common = ["journal_mode = WAL", "synchronous = NORMAL"];
                    for pragma in common.iter().chain(sqlite_pragmas) {
                        sqlx::query(&format!("PRAGMA {pragma}")).execute(&mut *conn).await?;
                    }
                }
                Ok(())
            })
        })
        .connect(&url)
        .await?;
    schema.apply(&pool, backend).await?;
    Ok((pool, backend))
}

/// The backend behind `url` and the URL sqlx opens: an SQLite file is
/// created when missing (`mode=rwc`), with its directory.
pub(crate) fn pool_url(url: &str) -> Result<(Backend, String), DbError> {
    sqlx::any::install_default_drivers();
    Ok(if let Some(rest) = url.strip_prefix("sqlite:") {
        // A file's directory is created when missing (`sqlite://.tessera/x.db`).
        let file = rest.trim_start_matches("//").split('?').next().unwrap_or_default();
        if let Some(dir) = std::path::Path::new(file).parent()
            && !dir.as_os_str().is_empty()
            && !file.contains(":memory:")
        {
            std::fs::create_dir_all(dir)
                .map_err(|source| DbError::Io { path: dir.display().to_string(), source })?;
        }
        let mut url = format!("sqlite:{rest}");
        if !rest.contains("mode=") && !rest.contains(":memory:") {
            url.push_str(if rest.contains('?') { "&mode=rwc" } else { "?mode=rwc" });
        }
        (Backend::Sqlite, url)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        (Backend::Postgres, url.to_owned())
    } else {
        return Err(DbError::UnsupportedUrl(url.to_owned()));
    })
}

/// A second pool on an SQLite file that [`open_pool_with`] opened, for long
/// reads beside the writer (WAL lets them run at once); `None` for
/// PostgreSQL, whose pool already holds several connections.
pub async fn open_read_pool(url: &str) -> Result<Option<AnyPool>, DbError> {
    let (backend, url) = pool_url(url)?;
    if backend != Backend::Sqlite || url.contains(":memory:") {
        return Ok(None);
    }
    let pool = AnyPoolOptions::new().max_connections(1).connect(&url).await?;
    Ok(Some(pool))
}

/// How long one API query may run on PostgreSQL before the server
/// cancels it (SQLite has no such limit; the API's request timeout and
/// bounded queries stand in for it).
pub const API_STATEMENT_TIMEOUT_MS: u64 = 5_000;

/// Connections of an API read pool.
const API_READERS: u32 = 4;

/// A pool for API readers, apart from the writer's, so that no request,
/// however slow, can starve ingestion of connections: read-only
/// connections on an SQLite file (WAL lets them read while the writer
/// writes), connections whose statements time out after
/// [`API_STATEMENT_TIMEOUT_MS`] on PostgreSQL. A reader waits at most two
/// seconds for a connection. `None` for SQLite in memory, where every user
/// shares the one connection.
pub async fn open_api_pool(url: &str) -> Result<Option<AnyPool>, DbError> {
    let (backend, url) = pool_url(url)?;
    if backend == Backend::Sqlite && url.contains(":memory:") {
        return Ok(None);
    }
    let pool = AnyPoolOptions::new()
        .max_connections(API_READERS)
        .acquire_timeout(std::time::Duration::from_secs(2))
        .after_connect(move |conn, _| {
            Box::pin(async move {
                let setting = match backend {
                    Backend::Sqlite => "PRAGMA query_only = ON".to_owned(),
                    Backend::Postgres => {
                        format!("SET statement_timeout = {API_STATEMENT_TIMEOUT_MS}")
                    }
                };
                sqlx::query(&setting).execute(&mut *conn).await?;
                Ok(())
            })
        })
        .connect(&url)
        .await?;
    Ok(Some(pool))
}

#[cfg(test)]
mod tests {
    use sqlx::Row;

    use super::*;

    #[tokio::test]
    async fn every_sqlite_connection_gets_the_pragmas() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("p.db").display());
        let migrator = sqlx::migrate::Migrator::DEFAULT;
        let schema = Schema::new("empty", &migrator);
        let (pool, _) =
            open_pool_with(&url, &schema, &["wal_autocheckpoint = 1234"]).await.unwrap();
        // Twice, with the pool's connection closed in between: a new
        // connection is set up the same way.
        for _ in 0..2 {
            let mut conn = pool.acquire().await.unwrap();
            let get = |p: &'static str| format!("PRAGMA {p}");
            let sync: i64 =
                sqlx::query(&get("synchronous")).fetch_one(&mut *conn).await.unwrap().get(0);
            let mode: String =
                sqlx::query(&get("journal_mode")).fetch_one(&mut *conn).await.unwrap().get(0);
            let every: i64 =
                sqlx::query(&get("wal_autocheckpoint")).fetch_one(&mut *conn).await.unwrap().get(0);
            assert_eq!((sync, mode.as_str(), every), (1, "wal", 1234), "NORMAL, WAL, 1234");
            conn.close().await.unwrap();
        }
    }

    #[tokio::test]
    async fn sqlite_files_get_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b/runs.db");
        let migrator = sqlx::migrate::Migrator::DEFAULT;
        open_pool(&format!("sqlite://{}", file.display()), &Schema::new("empty", &migrator))
            .await
            .unwrap();
        assert!(file.exists());
    }

    #[tokio::test]
    async fn unknown_url_is_refused() {
        let migrator = sqlx::migrate::Migrator::DEFAULT;
        let schema = Schema::new("empty", &migrator);
        assert!(matches!(open_pool("mysql://x", &schema).await, Err(DbError::UnsupportedUrl(_))));
    }
}
