//! Why opening, migrating or using a database failed.

/// Why a database operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database refused or the connection failed.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// A component's migration failed to apply.
    #[error("database migration {component} {version} ({description}): {source}")]
    Migrate {
        /// The component whose schema it belongs to.
        component: &'static str,
        /// The migration's version within the component.
        version: i64,
        /// The migration's description.
        description: String,
        /// The database's refusal.
        #[source]
        source: sqlx::Error,
    },
    /// An applied migration differs from the one this build carries.
    #[error(
        "database migration {component} {version} was applied with different contents; \
         this build cannot use this database"
    )]
    MigrationChanged {
        /// The component whose schema it belongs to.
        component: &'static str,
        /// The migration's version within the component.
        version: i64,
    },
    /// The URL names no supported database.
    #[error("unsupported database URL {0:?}: use sqlite://<file> or postgres://…")]
    UnsupportedUrl(String),
    /// The directory of an SQLite file could not be created.
    #[error("creating {path}: {source}")]
    Io {
        /// The directory.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A value does not fit the column it is written to (nothing is
    /// clamped).
    #[error("{table}.{column}: {source}")]
    OutOfRange {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// Why the value does not fit.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Another process holds the SQLite file's lock (see [`crate::lock_sqlite`]).
    #[error(
        "another process uses this SQLite database (it holds {path}): SQLite serves one \
         process; stop the other one, or use PostgreSQL"
    )]
    Locked {
        /// The lock file.
        path: String,
    },
    /// A row holds something this version cannot read.
    #[error("corrupt row in {table}: {detail}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// What was wrong.
        detail: String,
    },
}

impl DbError {
    /// The database is overloaded rather than broken: no connection was
    /// free in time, or the server cancelled a statement that ran past its
    /// limit. Worth a `503` and a retry, not a `500`.
    pub fn is_overload(&self) -> bool {
        match self {
            DbError::Db(sqlx::Error::PoolTimedOut) => true,
            // 57014: query_canceled (statement_timeout).
            DbError::Db(sqlx::Error::Database(e)) => e.code().as_deref() == Some("57014"),
            _ => false,
        }
    }
}

/// Whether `err` (or an error it was caused by) is a database out of reach
/// for now: no connection (refused, reset, timed out), no free connection
/// in time, or a Postgres server that is starting, shutting down or full
/// (SQLSTATE class 08, `57P03`, `53300`). A service starting up waits on
/// these; any other failure (a bad URL, a migration refused, a wrong
/// password) is returned.
pub fn is_transient(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(e) = e.downcast_ref::<sqlx::Error>() {
            return match e {
                sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut => true,
                sqlx::Error::Database(db) => {
                    db.code().is_some_and(|c| c.starts_with("08") || c == "57P03" || c == "53300")
                }
                _ => false,
            };
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_server_is_transient_a_bad_url_is_not() {
        // Nothing listens on the discard port.
        let refused = sqlx::postgres::PgPoolOptions::new()
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect("postgres://postgres@127.0.0.1:9/postgres")
            .await
            .unwrap_err();
        assert!(is_transient(&DbError::Db(refused)));
        assert!(!is_transient(&DbError::UnsupportedUrl("mysql://x".into())));
        assert!(!is_transient(&DbError::Db(sqlx::Error::RowNotFound)));
    }
}
