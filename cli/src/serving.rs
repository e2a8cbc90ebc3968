//! What a party serves beside its work: its content-addressed blobs
//! (`GET /blobs/{hash}`, so parties on other machines can read what it
//! wrote) and its operator routes (`/metrics`, `/healthz`, `/readyz`), and
//! the public base URL its blob URIs carry as their location hint.

use std::net::SocketAddr;

use eyre::{Context, Result};
use tessera_bindings::envelope::{BlobStore, BlobUrl};
use tessera_http::tasks::{SHUTDOWN_GRACE, Tasks};

/// A `--blob-gateway` or `--public-url` value: an http(s) base URL under
/// which `GET <url>/<sha256 hex>` answers a blob.
pub(crate) fn parse_blob_url(s: &str) -> Result<BlobUrl, String> {
    BlobUrl::parse(s).map_err(|e| e.to_string())
}

/// The base URL published in blob hints: `given` (`--public-url`), else
/// `http://<bound><path>` when the server listens on a definite address,
/// else none (a wildcard address names no host others can reach; a
/// warning says so).
pub(crate) fn public_url(
    given: Option<BlobUrl>,
    bound: Option<SocketAddr>,
    path: &str,
) -> Option<BlobUrl> {
    if given.is_some() {
        return given;
    }
    let bound = bound?;
    if bound.ip().is_unspecified() {
        println!(
            "warning: listening on {bound}, which names no host: large blobs are published without a location hint; set --public-url to where others reach this server"
        );
        return None;
    }
    match BlobUrl::parse(&format!("http://{bound}{path}")) {
        Ok(url) => Some(url),
        Err(e) => {
            println!("warning: no blob location hint ({e}); set --public-url");
            None
        }
    }
}

/// Binds `addr` (`flag` names the option in the error).
pub(crate) async fn bind(addr: SocketAddr, flag: &str) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .wrap_err_with(|| format!("listening on {addr} ({flag})"))
}

/// Serves `app` on `listener` as the critical task `name` of `tasks`,
/// until their root is cancelled (then requests in flight are answered
/// within the shutdown grace).
pub(crate) fn serve_in(
    tasks: &mut Tasks,
    name: &'static str,
    listener: tokio::net::TcpListener,
    app: axum::Router,
) {
    let stop = tasks.root().clone().cancelled_owned();
    tasks.spawn_critical(name, async move {
        axum::serve(listener, app).with_graceful_shutdown(stop).await
    });
}

/// Runs until `shutdown` (Ctrl-C or SIGTERM: `Ok`) or until a critical task
/// of `tasks` ends (the failure, naming it), then stops every task within
/// [`SHUTDOWN_GRACE`]: a supervisor starts a process that failed again.
pub(crate) async fn supervise(mut tasks: Tasks, shutdown: impl Future<Output = ()>) -> Result<()> {
    let watched = tasks.watch(shutdown).await;
    let unclean = tasks.drain(SHUTDOWN_GRACE).await;
    watched?;
    if !unclean.is_empty() {
        eyre::bail!("tasks that did not stop cleanly: {}", unclean.join(", "));
    }
    Ok(())
}

/// `ops`' routes and `GET /blobs/{hash}` over `store`, each request within
/// the default time limit, the JSON 404 elsewhere.
pub(crate) fn ops_and_blobs(
    ops: tessera_http::ops::Ops,
    store: std::sync::Arc<dyn BlobStore + Send + Sync>,
) -> axum::Router {
    let timeout = tessera_http::limits::HttpLimits::default().request_timeout;
    ops.router(timeout)
        .merge(tessera_http::blobs::router(store).layer(axum::middleware::from_fn_with_state(
            timeout,
            tessera_http::limits::request_timeout,
        )))
        .fallback(tessera_http::not_found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_url_is_given_or_the_bound_address() {
        let given = BlobUrl::parse("https://blobs.example.org/b").unwrap();
        let bound: SocketAddr = "127.0.0.1:9100".parse().unwrap();
        assert_eq!(public_url(Some(given.clone()), Some(bound), "/blobs"), Some(given));
        assert_eq!(
            public_url(None, Some(bound), "/blobs").unwrap().as_str(),
            "http://127.0.0.1:9100/blobs"
        );
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(
            public_url(None, Some(v6), "/api/blobs").unwrap().as_str(),
            "http://[::1]:80/api/blobs"
        );
        assert_eq!(public_url(None, Some("0.0.0.0:80".parse().unwrap()), "/blobs"), None);
        assert_eq!(public_url(None, Some("[::]:80".parse().unwrap()), "/blobs"), None);
        assert_eq!(public_url(None, None, "/blobs"), None);
        assert!(parse_blob_url("ftp://x").unwrap_err().contains("not http"));
    }
}
