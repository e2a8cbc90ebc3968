//! Fresh, uniquely named databases on a PostgreSQL server, for tests and
//! benchmarks that must not share state.

use sqlx::{AnyPool, Row, any::AnyPoolOptions};

use crate::{DbError, now_ms};

/// The server scratch databases are made on when none is named.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Creates an empty database `tessera_<label>_<pid>_<ms>` on the server
/// `admin` connects to and returns its URL. Scratch databases of processes
/// that no longer run are dropped on the way.
pub async fn create_scratch_database(admin: &str, label: &str) -> Result<String, DbError> {
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(std::time::Duration::from_secs(3))
        .connect(admin)
        .await?;
    let name = format!(
        "tessera_{}_{}_{}",
        label.chars().filter(char::is_ascii_alphanumeric).take(24).collect::<String>(),
        std::process::id(),
        now_ms()
    )
    .to_lowercase();
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await?;
    drop_stale_scratch(&pool).await;
    let base = admin.rsplit_once('/').map_or(admin, |(b, _)| b);
    Ok(format!("{base}/{name}"))
}

/// Drops the scratch database `url` (made by [`create_scratch_database`] on
/// the server `admin` connects to), closing its remaining connections.
pub async fn drop_scratch_database(admin: &str, url: &str) -> Result<(), DbError> {
    sqlx::any::install_default_drivers();
    let name = url.rsplit('/').next().unwrap_or_default();
    if !name.starts_with("tessera_") || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(DbError::UnsupportedUrl(url.to_owned()));
    }
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(std::time::Duration::from_secs(3))
        .connect(admin)
        .await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&pool).await?;
    Ok(())
}

/// Drops scratch databases left by processes that no longer run.
async fn drop_stale_scratch(pool: &AnyPool) {
    let Ok(rows) = sqlx::query(
        "SELECT datname::text AS datname FROM pg_database WHERE datname LIKE 'tessera\\_%'",
    )
    .fetch_all(pool)
    .await
    else {
        return;
    };
    for row in rows {
        let Ok(name) = row.try_get::<String, _>("datname") else { continue };
        // tessera_<label>_<pid>_<ms>
        let pid = name.rsplit('_').nth(1).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        }) {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name}")).execute(pool).await;
        }
    }
}
