//! Scratch PostgreSQL databases for tests (feature `test-utils`).

use crate::{DEFAULT_ADMIN_URL, create_scratch_database};

/// A scratch PostgreSQL database and the server it was made on.
#[derive(Debug, Clone)]
pub struct ScratchPostgres {
    /// The server's admin URL (`TESSERA_TEST_PG`, or the local default).
    pub admin: String,
    /// The fresh database's own URL.
    pub url: String,
}

/// A scratch PostgreSQL database for tests, created fresh on the server at
/// `TESSERA_TEST_PG` (default [`DEFAULT_ADMIN_URL`]), with that server's
/// admin URL; `None`, with the reason printed, when the variable is unset
/// and no server answers at the default, so only the PostgreSQL variants
/// of tests are skipped. When `TESSERA_TEST_PG` is set (`make test` sets it
/// where a server answers on 127.0.0.1:5432), a server that does not answer
/// fails the test instead: a skipped variant must never pass for one that
/// ran. Every test that needs PostgreSQL goes through here.
///
/// # Panics
///
/// When `TESSERA_TEST_PG` is set and no scratch database can be made there.
pub async fn scratch_postgres(label: &str) -> Option<ScratchPostgres> {
    let required = std::env::var("TESSERA_TEST_PG").ok().filter(|v| !v.trim().is_empty());
    scratch_on(required, label).await
}

/// The URL of [`scratch_postgres`]'s database.
///
/// # Panics
///
/// When `TESSERA_TEST_PG` is set and no scratch database can be made there.
pub async fn scratch_postgres_url(label: &str) -> Option<String> {
    scratch_postgres(label).await.map(|s| s.url)
}

/// [`scratch_postgres`] on the server `required` names (which must
/// answer) or, when `None`, on the default server if it answers.
async fn scratch_on(required: Option<String>, label: &str) -> Option<ScratchPostgres> {
    let admin = required.clone().unwrap_or_else(|| DEFAULT_ADMIN_URL.to_owned());
    match create_scratch_database(&admin, label).await {
        Ok(url) => Some(ScratchPostgres { admin, url }),
        Err(e) => {
            assert!(
                required.is_none(),
                "TESSERA_TEST_PG is set, so the PostgreSQL variant of {label} must run: \
                 no scratch database at {admin}: {e}"
            );
            eprintln!(
                "skipping PostgreSQL variant of {label}: TESSERA_TEST_PG is unset and there is \
                 no scratch database at the default {admin}: {e}"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port nothing listens on.
    const NOBODY: &str = "postgres://postgres@127.0.0.1:1/postgres";

    #[tokio::test]
    #[should_panic(expected = "TESSERA_TEST_PG is set")]
    async fn a_required_server_that_does_not_answer_fails_the_test() {
        scratch_on(Some(NOBODY.to_owned()), "required").await;
    }

    #[tokio::test]
    async fn a_required_server_that_answers_gives_a_fresh_database() {
        // Runs only where CI (or the developer) names a server.
        let Ok(admin) = std::env::var("TESSERA_TEST_PG") else { return };
        let one = scratch_on(Some(admin.clone()), "fresh").await.unwrap();
        let two = scratch_on(Some(admin.clone()), "fresh").await.unwrap();
        assert_ne!(one.url, two.url, "every call makes its own database");
        assert_eq!((one.admin, two.admin), (admin.clone(), admin), "made on the named server");
    }
}
