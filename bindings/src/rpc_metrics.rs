//! JSON-RPC calls counted by method, on the transport every service's HTTP
//! provider ([`crate::client::connect`]) sends through:
//!
//! - `tessera_rpc_requests_total{method}`: calls sent (each call of a batch
//!   counts, and each attempt of a call [`crate::retry`] sends again);
//! - `tessera_rpc_errors_total{method, kind}`: calls that failed, `kind`
//!   `transport` when no answer came (refused, timed out, not JSON-RPC),
//!   `rpc` when the node answered an error (a revert included).
//!
//! They go through the `metrics` facade: a process that installed a
//! recorder (every service, through `tessera_http::ops`) exports them, any
//! other drops them for the price of an atomic load. They are described,
//! with [`crate::retry`]'s retries, in [`METRICS`].

use std::task::{Context, Poll};

use alloy::{
    rpc::json_rpc::{RequestPacket, ResponsePacket},
    transports::{TransportError, TransportFut},
};
use tessera_metrics::{Kind, Metric};

use crate::retry::RPC_RETRIES;

/// Calls sent, by method.
pub const RPC_REQUESTS: &str = "tessera_rpc_requests_total";
/// Calls failed, by method and kind.
pub const RPC_ERRORS: &str = "tessera_rpc_errors_total";

/// The JSON-RPC metrics every service records through its provider.
pub const METRICS: &[Metric] = &[
    Metric {
        name: RPC_REQUESTS,
        kind: Kind::Counter,
        labels: &["method"],
        help: "JSON-RPC calls sent to the chain over HTTP, by method (each call of a batch counts).",
        buckets: &[],
    },
    Metric {
        name: RPC_ERRORS,
        kind: Kind::Counter,
        labels: &["method", "kind"],
        help: "JSON-RPC attempts that failed, by method: kind=transport (no answer: refused, timed out, or an HTTP error status such as 429/503) or kind=rpc (the node answered an error, a revert included).",
        buckets: &[],
    },
    Metric {
        name: RPC_RETRIES,
        kind: Kind::Counter,
        labels: &["method", "reason"],
        help: "JSON-RPC calls sent again after a transient failure, by method and reason: rate_limited (429 or a rate-limit error), unavailable (500/502/503/504), connect (no connection), timeout.",
        buckets: &[],
    },
];

/// The tower layer that counts calls; see the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct RpcMetricsLayer;

impl<S> tower::Layer<S> for RpcMetricsLayer {
    type Service = RpcMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RpcMetrics { inner }
    }
}

/// A transport counting the calls it sends ([`RpcMetricsLayer`]).
#[derive(Debug, Clone)]
pub struct RpcMetrics<S> {
    inner: S,
}

impl<S> tower::Service<RequestPacket> for RpcMetrics<S>
where
    S: tower::Service<
            RequestPacket,
            Response = ResponsePacket,
            Error = TransportError,
            Future = TransportFut<'static>,
        > + Send
        + Sync
        + Clone
        + 'static,
{
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: RequestPacket) -> Self::Future {
        // Method names are static strings for every call alloy makes: no
        // allocation on the way.
        let calls: Vec<_> =
            req.requests().iter().map(|r| (r.id().clone(), r.method_clone())).collect();
        for (_, method) in &calls {
            metrics::counter!(RPC_REQUESTS, "method" => method.clone()).increment(1);
        }
        let sent = self.inner.call(req);
        Box::pin(async move {
            let answer = sent.await;
            match &answer {
                Err(_) => {
                    for (_, method) in calls {
                        metrics::counter!(RPC_ERRORS, "method" => method, "kind" => "transport")
                            .increment(1);
                    }
                }
                Ok(ResponsePacket::Single(r)) if r.is_error() => {
                    if let Some((_, method)) = calls.into_iter().next() {
                        metrics::counter!(RPC_ERRORS, "method" => method, "kind" => "rpc")
                            .increment(1);
                    }
                }
                Ok(ResponsePacket::Batch(answers)) => {
                    for r in answers.iter().filter(|r| r.is_error()) {
                        let method = calls
                            .iter()
                            .find(|(id, _)| *id == r.id)
                            .map_or(std::borrow::Cow::Borrowed("unknown"), |(_, m)| m.clone());
                        metrics::counter!(RPC_ERRORS, "method" => method, "kind" => "rpc")
                            .increment(1);
                    }
                }
                Ok(ResponsePacket::Single(_)) => {}
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use alloy::{
        providers::{Provider, ProviderBuilder},
        rpc::client::ClientBuilder,
    };

    use super::*;

    /// A recorder that keeps what it is given, to read back.
    #[derive(Debug, Default, Clone)]
    struct Seen(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl metrics::Recorder for Seen {
        fn describe_counter(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn describe_gauge(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn describe_histogram(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn register_counter(
            &self,
            key: &metrics::Key,
            _: &metrics::Metadata<'_>,
        ) -> metrics::Counter {
            let labels: Vec<String> =
                key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
            self.0.lock().unwrap().push(format!("{}{{{}}}", key.name(), labels.join(",")));
            metrics::Counter::noop()
        }
        fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
            metrics::Gauge::noop()
        }
        fn register_histogram(
            &self,
            _: &metrics::Key,
            _: &metrics::Metadata<'_>,
        ) -> metrics::Histogram {
            metrics::Histogram::noop()
        }
    }

    #[tokio::test]
    async fn calls_and_failures_are_counted_by_method() {
        let seen = Seen::default();
        let _guard = metrics::set_default_local_recorder(&seen);
        // Nothing listens there: the call fails without an answer.
        let url = "http://127.0.0.1:9".parse().unwrap();
        let client = ClientBuilder::default().layer(RpcMetricsLayer).http(url);
        let provider = ProviderBuilder::new().connect_client(client);
        assert!(provider.get_block_number().await.is_err());
        let seen = seen.0.lock().unwrap().clone();
        assert!(
            seen.contains(&"tessera_rpc_requests_total{method=eth_blockNumber}".to_owned()),
            "{seen:?}"
        );
        assert!(
            seen.contains(
                &"tessera_rpc_errors_total{method=eth_blockNumber,kind=transport}".to_owned()
            ),
            "{seen:?}"
        );
    }
}
