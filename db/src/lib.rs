//! The database layer every Tessera service stores through: connection
//! pools on an SQLite file or a PostgreSQL server ([`open_pool`], the API
//! read pool [`open_api_pool`]), the [`Backend`] behind them, the
//! [`DbError`] they fail with, the wall clock rows are stamped with
//! ([`now_ms`]), and migrations kept per component ([`Schema`]), each with
//! its own history so services sharing one database never coordinate their
//! version numbers. An SQLite file serves one process: [`lock_sqlite`].
//! Rows numbered per key are written in [`begin_numbering`]'s transactions.
//!
//! Scratch PostgreSQL databases for tests live in `test_utils`, behind the
//! `test-utils` feature.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

mod clock;
mod error;
mod lock;
mod migrate;
mod numbering;
mod pool;
mod scratch;
#[cfg(any(test, feature = "test-utils"))]
pub mod test_utils;

pub use clock::now_ms;
pub use error::{DbError, is_transient};
pub use lock::{FileLock, lock_sqlite};
pub use migrate::{HISTORY_TABLE, Schema};
pub use numbering::{begin_numbering, serialize_on};
pub use pool::{
    API_STATEMENT_TIMEOUT_MS, Backend, open_api_pool, open_pool, open_pool_with, open_read_pool,
};
pub use scratch::{DEFAULT_ADMIN_URL, create_scratch_database, drop_scratch_database};
