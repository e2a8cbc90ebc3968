//! Start-up that rides out a chain (or database) that is not reachable yet:
//! a transient failure ([`is_transient`]) is
//! logged, one warning line per attempt naming the next delay, and tried
//! again with a capped backoff; any other failure is returned at once.

use std::{future::Future, time::Duration};

/// The first wait between start-up attempts.
pub(crate) const FIRST_DELAY: Duration = Duration::from_millis(500);
/// The longest wait between start-up attempts.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(30);

/// The wait after failed attempt `n` (1 for the first): doubling from
/// [`FIRST_DELAY`], capped at [`MAX_DELAY`].
pub(crate) fn delay_after(n: u32) -> Duration {
    FIRST_DELAY.saturating_mul(1u32 << n.saturating_sub(1).min(16)).min(MAX_DELAY)
}

/// Runs `attempt` until it succeeds or fails for a reason waiting cannot
/// fix; `what` names the step in the warnings ("registering 0x… at …").
pub(crate) async fn until_reachable<T, E, F, Fut>(what: &str, mut attempt: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::error::Error + 'static,
{
    let mut n = 0;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) if is_transient(&e) => {
                n += 1;
                let delay = delay_after(n);
                tracing::warn!(
                    "{what}: {} (attempt {n}); trying again in {:.1} s",
                    one_line(&e),
                    delay.as_secs_f64()
                );
                tokio::time::sleep(delay).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Runs `start` while `listener` answers `/healthz` (200), `/readyz` (503
/// until `provider`'s chain answers, then still 503 until `start` is
/// done: `starting`), `/metrics`, and any other path 503 with
/// `Retry-After: 1`; then hands the listener back, its
/// queued connections kept, for the service to serve on.
pub(crate) async fn while_starting<T, F, Fut>(
    listener: tokio::net::TcpListener,
    provider: alloy::providers::DynProvider,
    start: F,
) -> std::io::Result<(T, tokio::net::TcpListener)>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = T>,
{
    println!(
        "starting on http://{} (/readyz answers 503 until the service is up)",
        listener.local_addr()?
    );
    let own = listener.into_std()?;
    let interim = tokio::net::TcpListener::from_std(own.try_clone()?)?;
    let ops = tessera_http::ops::Ops::new()
        .ready_when("chain", tessera_bindings::client::chain_ready(provider))
        .ready_when("starting", || async { Err("the service is starting".to_owned()) });
    let timeout = tessera_http::limits::HttpLimits::default().request_timeout;
    // Anything else: not yet, ask again shortly.
    let app = ops.router(timeout).fallback(|| async {
        let body = axum::Json(
            serde_json::json!({"error": "starting: its chain or store is not reachable yet"}),
        );
        (axum::http::StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "1")], body)
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        axum::serve(interim, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    let out = start().await;
    let _ = stop.send(());
    // Requests in flight are answered; the interim socket closes with it.
    if tokio::time::timeout(Duration::from_secs(5), served).await.is_err() {
        tracing::warn!("the start-up server did not drain within 5 s");
    }
    Ok((out, tokio::net::TcpListener::from_std(own)?))
}

/// A chain ([`tessera_bindings::retry::is_transient`]) or a database
/// ([`tessera_db::is_transient`]) out of reach for now.
pub(crate) fn is_transient(e: &(dyn std::error::Error + 'static)) -> bool {
    tessera_bindings::retry::is_transient(e) || tessera_db::is_transient(e)
}

/// `e` and its causes joined by ": ", each said once.
fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use alloy::transports::TransportErrorKind;

    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        assert_eq!(delay_after(1), Duration::from_millis(500));
        assert_eq!(delay_after(2), Duration::from_secs(1));
        assert_eq!(delay_after(4), Duration::from_secs(4));
        assert_eq!(delay_after(40), MAX_DELAY);
    }

    #[tokio::test]
    async fn transient_failures_are_tried_again_and_answers_are_not() {
        let tries = AtomicU32::new(0);
        let got = until_reachable("reading", || async {
            match tries.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(TransportErrorKind::http_error(503, String::new())),
                _ => Ok(7),
            }
        })
        .await;
        assert_eq!(got.unwrap(), 7);
        assert_eq!(tries.load(Ordering::SeqCst), 3);

        let tries = AtomicU32::new(0);
        let got: Result<(), _> = until_reachable("reading", || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err(TransportErrorKind::http_error(404, "no such path".into()))
        })
        .await;
        assert!(got.unwrap_err().to_string().contains("404"));
        assert_eq!(tries.load(Ordering::SeqCst), 1);
    }
}
