//! Numbering rows per key (a run's events, its decisions, the journal of
//! reorganisations) under concurrent writers. The next number is read as
//! `MAX + 1` and written in the same transaction; two writers sharing a
//! database (replicas on one PostgreSQL server, or a replica and an API
//! process) must not both read the same maximum. A numbering transaction
//! is therefore serialised per key before it reads: on SQLite it begins
//! `IMMEDIATE` (the write lock is taken first, and waited for), on
//! PostgreSQL it takes a transaction-scoped advisory lock on the key.

use sqlx::{Any, AnyPool, Transaction};

use crate::Backend;

/// The first key of the two-key advisory locks numbering takes on
/// PostgreSQL (`pg_advisory_xact_lock(int, int)`, a key space apart from
/// the one-key locks migrations take).
const NUMBERING_LOCKS: i32 = 0x7473;

/// Begins a transaction in which no other numbering transaction on `key`
/// runs until it ends: the `MAX(seq) + 1` read in it is the number its
/// insert writes.
pub async fn begin_numbering(
    pool: &AnyPool,
    backend: Backend,
    key: &str,
) -> Result<Transaction<'static, Any>, sqlx::Error> {
    match backend {
        Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
        Backend::Postgres => {
            let mut tx = pool.begin().await?;
            serialize_on(&mut tx, backend, key).await?;
            Ok(tx)
        }
    }
}

/// Makes `tx` wait until no other transaction serialised on `key` runs,
/// and keeps them waiting until it ends: a transaction-scoped advisory
/// lock on PostgreSQL. On SQLite, where one process writes a file and its
/// writes are serialised by the database itself, nothing is taken.
pub async fn serialize_on(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    key: &str,
) -> Result<(), sqlx::Error> {
    if backend == Backend::Postgres {
        sqlx::query(&format!(
            "SELECT 1 AS locked FROM pg_advisory_xact_lock({NUMBERING_LOCKS}, hashtext($1))"
        ))
        .bind(key)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
