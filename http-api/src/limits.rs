//! Limits every HTTP API of ours keeps, whatever a client does: a time limit
//! on each request, and event streams that end.
//!
//! - [`request_timeout`]: a middleware that answers `503` with `Retry-After`
//!   when a handler (its database queries included) has not answered in
//!   time. Only the response head is timed: an event stream, once started,
//!   runs for as long as its client listens.
//! - [`StreamGate`]: a per-process cap on open event streams (`503` with
//!   `Retry-After` beyond it), keep-alives so a vanished client is noticed
//!   within seconds, and an end for every stream on shutdown. A stream's
//!   producer runs only while its client is connected: it is stopped the
//!   moment the response body is dropped, not when it next has something to
//!   send (a quiet plan may never have).

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    Json,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::{mpsc, watch};

/// The limits an API server keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// How long a request may take to produce its response head.
    pub request_timeout: Duration,
    /// Open event streams at most, per process.
    pub max_streams: usize,
    /// Interval of the comments an idle event stream sends; a client that
    /// vanished is noticed at the next one.
    pub keep_alive: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            max_streams: 1024,
            keep_alive: Duration::from_secs(5),
        }
    }
}

/// Seconds a client is asked to wait before trying again after a `503`.
const RETRY_AFTER_SECS: &str = "1";

/// `503 Service Unavailable` with `Retry-After` and the usual error body.
pub fn unavailable(message: impl Into<String>) -> Response {
    let mut resp =
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "error": message.into() }))).into_response();
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
    resp
}

/// Middleware: answers `503` with `Retry-After` when the rest of the stack
/// has not produced a response within `limit`. Dropping the handler's future
/// cancels its pending database work; a query already inside the database is
/// bounded by the database's own statement limit where it has one.
pub async fn request_timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => {
            tracing::warn!(%path, limit_ms = limit.as_millis() as u64, "request timed out");
            unavailable(format!("the request took longer than {} ms; try again", limit.as_millis()))
        }
    }
}

/// The cap on open event streams, shared by every stream route of a process.
#[derive(Debug, Clone)]
pub struct StreamGate {
    open: Arc<AtomicUsize>,
    limits: HttpLimits,
    closed: watch::Sender<bool>,
}

impl StreamGate {
    /// A gate for `limits.max_streams` streams; it carries the other
    /// limits for the routers it is given to.
    pub fn new(limits: &HttpLimits) -> Self {
        Self {
            open: Arc::new(AtomicUsize::new(0)),
            limits: *limits,
            closed: watch::channel(false).0,
        }
    }

    /// The limits this gate was made with.
    pub fn limits(&self) -> &HttpLimits {
        &self.limits
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Ends every open stream and refuses new ones (graceful shutdown: a
    /// server waits for its connections, and a stream would never end).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// An event stream fed by `producer` (`text/event-stream`), or `503`
    /// when the cap is reached or the server is shutting down. `producer`
    /// gets the sending half and is stopped as soon as the client is gone,
    /// the server shuts down, or it returns.
    pub fn stream<F, Fut>(&self, producer: F) -> Response
    where
        F: FnOnce(mpsc::Sender<Event>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut closed = self.closed.subscribe();
        if *closed.borrow() {
            return unavailable("the server is shutting down");
        }
        let Some(permit) = self.acquire() else {
            return unavailable(format!(
                "{} event streams are open, the most this server keeps",
                self.limits.max_streams
            ));
        };
        let (tx, rx) = mpsc::channel::<Event>(64);
        let watcher = tx.clone();
        let work = producer(tx);
        // Owned by the stream: it ends when the body is dropped (the client
        // left), when the server closes the gate, or when it is done.
        tokio::spawn(async move {
            tokio::select! {
                () = work => {}
                () = watcher.closed() => {}
                _ = closed.wait_for(|c| *c) => {}
            }
        });
        let stream = GatedStream { rx, closed: self.closed.subscribe(), _permit: permit };
        Sse::new(stream)
            .keep_alive(KeepAlive::new().interval(self.limits.keep_alive))
            .into_response()
    }

    fn acquire(&self) -> Option<Permit> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limits.max_streams).then_some(n + 1)
            })
            .ok()
            .map(|_| Permit(Arc::clone(&self.open)))
    }
}

/// One open stream's place under the cap, given back on drop.
#[derive(Debug)]
struct Permit(Arc<AtomicUsize>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The events of one stream; it ends when its producer is done or the gate
/// closes, and gives its place back when dropped.
struct GatedStream {
    rx: mpsc::Receiver<Event>,
    closed: watch::Receiver<bool>,
    _permit: Permit,
}

impl Stream for GatedStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if *self.closed.borrow() {
            return Poll::Ready(None);
        }
        // Woken on close too: the receiver's producer is stopped by then,
        // which drops its sender and ends `rx`.
        self.rx.poll_recv(cx).map(|ev| ev.map(Ok))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn limits(max: usize) -> HttpLimits {
        HttpLimits { max_streams: max, ..HttpLimits::default() }
    }

    #[tokio::test]
    async fn the_cap_answers_503_with_retry_after_and_frees_on_drop() {
        let gate = StreamGate::new(&limits(2));
        let a = gate.stream(|_tx| std::future::pending());
        let b = gate.stream(|_tx| std::future::pending());
        assert_eq!((a.status(), b.status()), (StatusCode::OK, StatusCode::OK));
        assert_eq!(gate.open(), 2);
        let refused = gate.stream(|_tx| std::future::pending());
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        drop(a);
        assert_eq!(gate.open(), 1);
        drop(b);
        assert_eq!(gate.open(), 0);
        assert_eq!(gate.stream(|_tx| std::future::pending()).status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_quiet_producer_stops_when_its_client_leaves() {
        let gate = StreamGate::new(&limits(4));
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let sse = gate.stream(move |_tx| async move {
            // Never sends; holds `done_tx` until it is stopped.
            let _keep = done_tx;
            std::future::pending::<()>().await;
        });
        assert_eq!(sse.status(), StatusCode::OK);
        drop(sse);
        tokio::time::timeout(Duration::from_secs(2), done_rx)
            .await
            .expect("the producer was stopped")
            .unwrap_err();
        assert_eq!(gate.open(), 0);
    }

    #[tokio::test]
    async fn closing_the_gate_ends_streams_and_refuses_new_ones() {
        let gate = StreamGate::new(&limits(4));
        let (_tx, rx) = mpsc::channel::<Event>(4);
        let permit = gate.acquire().expect("permit");
        let mut stream = GatedStream { rx, closed: gate.closed.subscribe(), _permit: permit };
        gate.close();
        assert!(stream.next().await.is_none(), "a closed gate ends its streams");
        drop(stream);
        assert_eq!(gate.open(), 0);
        let refused = gate.stream(|_tx| std::future::pending());
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn timed_out_requests_answer_503_json() {
        use axum::{Router, body::Body, middleware::from_fn_with_state, routing::get};
        use tower::ServiceExt;
        let app = Router::new()
            .route("/slow", get(|| async { tokio::time::sleep(Duration::from_secs(5)).await }))
            .route("/fast", get(|| async { "ok" }))
            .layer(from_fn_with_state(Duration::from_millis(50), request_timeout));
        let get = |path: &str| Request::get(path).body(Body::empty()).expect("request");
        let slow = app.clone().oneshot(get("/slow")).await.expect("infallible");
        assert_eq!(slow.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(slow.headers()[header::RETRY_AFTER], "1");
        let body = axum::body::to_bytes(slow.into_body(), 1 << 16).await.expect("body");
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert!(v["error"].as_str().expect("error").contains("50 ms"), "{v}");
        let fast = app.oneshot(get("/fast")).await.expect("infallible");
        assert_eq!(fast.status(), StatusCode::OK);
    }
}
