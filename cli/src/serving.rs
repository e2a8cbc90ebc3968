//! What a party serves beside its work: its content-addressed blobs
//! (`GET /blobs/{hash}`, so parties on other machines can read what it
//! wrote) and its operator routes (`/metrics`, `/healthz`, `/readyz`), and
//! the public base URL its blob URIs carry as their location hint.

use std::{net::SocketAddr, time::Duration};

use eyre::{Context, Result};
use tessera_bindings::envelope::{BlobStore, BlobUrl};

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

/// A router served on its own listener until stopped.
pub(crate) struct Served {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    addr: SocketAddr,
}

impl Served {
    /// Binds `addr` (`flag` names the option in the error) and serves `app`.
    pub(crate) async fn bind(addr: SocketAddr, flag: &str, app: axum::Router) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .wrap_err_with(|| format!("listening on {addr} ({flag})"))?;
        Self::serve(listener, app)
    }

    /// Serves `app` on a socket already bound.
    pub(crate) fn serve(listener: tokio::net::TcpListener, app: axum::Router) -> Result<Self> {
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Self { stop, task, addr })
    }

    /// The address bound.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving; requests in flight get a few seconds.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        match tokio::time::timeout(Duration::from_secs(5), self.task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "the server failed"),
            Ok(Err(e)) => tracing::warn!(error = %e, "the server task failed"),
            Err(_) => tracing::warn!("the server did not drain within 5 s"),
        }
    }
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
