//! Scratch PostgreSQL databases for tests (feature `test-utils`).

use crate::{DEFAULT_ADMIN_URL, create_scratch_database};

/// A scratch PostgreSQL database for tests, created fresh on the server at
/// `TESSERA_TEST_PG` (default [`DEFAULT_ADMIN_URL`]); returns its URL, or
/// `None` with the reason printed when no server answers, so only the
/// PostgreSQL variants of tests are skipped. When `TESSERA_TEST_PG` is set
/// (CI sets it where a server runs), a server that does not answer fails
/// the test instead: a skipped variant must never pass for one that ran.
///
/// # Panics
///
/// When `TESSERA_TEST_PG` is set and no scratch database can be made there.
pub async fn scratch_postgres_url(label: &str) -> Option<String> {
    let required = std::env::var("TESSERA_TEST_PG").ok().filter(|v| !v.trim().is_empty());
    scratch_on(required, label).await
}

/// [`scratch_postgres_url`] on the server `required` names (which must
/// answer) or, when `None`, on the default server if it answers.
async fn scratch_on(required: Option<String>, label: &str) -> Option<String> {
    let admin = required.clone().unwrap_or_else(|| DEFAULT_ADMIN_URL.to_owned());
    match create_scratch_database(&admin, label).await {
        Ok(url) => Some(url),
        Err(e) => {
            assert!(
                required.is_none(),
                "TESSERA_TEST_PG is set, so the PostgreSQL variant of {label} must run: \
                 no scratch database at {admin}: {e}"
            );
            eprintln!(
                "skipping PostgreSQL variant of {label}: no scratch database at {admin}: {e}"
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
        let two = scratch_on(Some(admin), "fresh").await.unwrap();
        assert_ne!(one, two, "every call makes its own database");
    }
}
