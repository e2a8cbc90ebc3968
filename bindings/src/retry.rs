//! Transient failures retried, on the transport every service's HTTP
//! provider ([`crate::client::connect`]) sends through.
//!
//! A call is sent again, after an exponential backoff with jitter, when the
//! answer says the provider could not serve it now:
//!
//! - HTTP 429 (`rate_limited`), honouring `Retry-After` up to
//!   [`RetryPolicy::max_hint`];
//! - HTTP 500/502/503/504 (`unavailable`);
//! - a JSON-RPC error a provider uses for its rate limit (`-32005`, code
//!   `429`, "rate limit" and the like: alloy's list; `rate_limited`);
//! - no answer: the connection could not be made (`connect`), or the call
//!   timed out or broke off (`timeout`).
//!
//! Every other answer is final: a revert or any other JSON-RPC error is the
//! node's answer, not a fault of the way to it.
//!
//! `eth_sendRawTransaction` is retried after an HTTP error status or a
//! connection never made, and never blindly: a proxy may have forwarded the
//! transaction before answering 502. Before each resend the node is asked
//! for the transaction by its hash (`eth_getTransactionByHash`, the hash of
//! the signed bytes); if it has it, the send is answered with that hash,
//! as the node would have, and nothing goes out again. A resend the node
//! refuses as a transaction it already has ("already known", "nonce too
//! low" and the like) is checked the same way. The signed bytes are the
//! same on every attempt, so no second, different transaction is ever
//! signed for one send here. After a timeout the transaction may have been
//! accepted, so the transport does not guess: the failure goes back to
//! the [`crate::sender::Sender`]'s caller as before.
//!
//! Attempts are bounded ([`RetryPolicy::max_retries`]) and so is the time
//! spent waiting between them ([`RetryPolicy::max_elapsed`]); the last
//! failure is returned as it came. Each retry is counted in
//! `tessera_rpc_retries_total{method, reason}`.

use std::{
    borrow::Cow,
    task::{Context, Poll},
    time::Duration,
};

use alloy::{
    primitives::{B256, keccak256},
    rpc::json_rpc::{Id, Request, RequestPacket, Response, ResponsePacket, ResponsePayload},
    transports::{RpcError, TransportError, TransportErrorKind, TransportFut},
};

/// Retries sent, by method and reason.
pub const RPC_RETRIES: &str = "tessera_rpc_retries_total";

/// The method whose blind resend could matter.
const SEND_RAW: &str = "eth_sendRawTransaction";

/// Why a call is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// HTTP 429 or a provider's rate-limit JSON-RPC error.
    RateLimited,
    /// HTTP 500, 502, 503 or 504.
    Unavailable,
    /// The connection could not be made: nothing was sent.
    Connect,
    /// No answer in time, or the connection broke off mid-call.
    Timeout,
}

impl Reason {
    /// The `reason` label of [`RPC_RETRIES`].
    pub const fn label(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::Unavailable => "unavailable",
            Self::Connect => "connect",
            Self::Timeout => "timeout",
        }
    }
}

/// What a failed attempt calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The answer stands (a success, a revert, any other error).
    Final,
    /// Send again, after the server's hint when it gave one.
    Retry {
        /// Why the attempt failed.
        reason: Reason,
        /// How long the server asked to wait, when it said.
        hint: Option<Duration>,
    },
}

/// How often and how patiently calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; each next one doubles, up to [`Self::max_backoff`].
    pub base: Duration,
    /// The longest backoff computed.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured.
    pub max_hint: Duration,
    /// No retry starts once this long has passed since the first attempt
    /// (the wait before it included).
    pub max_elapsed: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            base: Duration::from_millis(250),
            max_backoff: Duration::from_secs(4),
            max_hint: Duration::from_secs(5),
            max_elapsed: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// What the outcome of sending `methods` calls for.
    pub fn verdict(
        methods: &[Cow<'static, str>],
        outcome: &Result<ResponsePacket, TransportError>,
    ) -> Verdict {
        let sends = methods.iter().any(|m| m == SEND_RAW);
        // A log query refused for its size is answered again the same way:
        // the reader shrinks its range instead (`crate::logs`).
        let logs = methods.iter().any(|m| m == "eth_getLogs");
        match outcome {
            Ok(ResponsePacket::Single(r)) => match r.payload.as_error() {
                Some(e) if logs && crate::logs::is_range_refusal(e) => Verdict::Final,
                Some(e) if e.is_retry_err() => {
                    Verdict::Retry { reason: Reason::RateLimited, hint: None }
                }
                _ => Verdict::Final,
            },
            // A batch is sent again whole only when none of it sends a
            // transaction: its other answers may have been acted on.
            Ok(ResponsePacket::Batch(answers)) => {
                let limited =
                    answers.iter().any(|r| r.payload.as_error().is_some_and(|e| e.is_retry_err()));
                if limited && !sends {
                    Verdict::Retry { reason: Reason::RateLimited, hint: None }
                } else {
                    Verdict::Final
                }
            }
            Err(RpcError::Transport(kind)) => Self::transport_verdict(kind, sends),
            Err(_) => Verdict::Final,
        }
    }

    fn transport_verdict(kind: &TransportErrorKind, sends: bool) -> Verdict {
        if let Some(http) = kind.as_http_error() {
            let reason = match http.status {
                429 => Reason::RateLimited,
                500 | 502 | 503 | 504 => Reason::Unavailable,
                _ => return Verdict::Final,
            };
            return Verdict::Retry { reason, hint: kind.retry_after() };
        }
        let Some(err) = kind.as_custom() else { return Verdict::Final };
        let Some(err) = err.downcast_ref::<alloy::transports::http::reqwest::Error>() else {
            return Verdict::Final;
        };
        if err.is_connect() {
            Verdict::Retry { reason: Reason::Connect, hint: None }
        } else if (err.is_timeout() || err.is_request() || err.is_body()) && !sends {
            Verdict::Retry { reason: Reason::Timeout, hint: None }
        } else {
            Verdict::Final
        }
    }

    /// The wait before retry number `retry` (1 for the first): the server's
    /// hint (capped at [`Self::max_hint`]) when it gave one, else
    /// `base * 2^(retry-1)` capped at [`Self::max_backoff`], with "equal
    /// jitter": half of it fixed, the other half scaled by `jitter` in [0, 1).
    pub fn delay(&self, retry: u32, hint: Option<Duration>, jitter: f64) -> Duration {
        if let Some(hint) = hint {
            return hint.min(self.max_hint);
        }
        let exp = self.base.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        let d = exp.min(self.max_backoff);
        d / 2 + (d / 2).mul_f64(jitter.clamp(0.0, 1.0))
    }

    /// Whether retry number `retry`, after `delay`, is still allowed when
    /// `elapsed` has passed since the first attempt.
    pub fn allows(&self, retry: u32, elapsed: Duration, delay: Duration) -> bool {
        retry <= self.max_retries && elapsed.saturating_add(delay) <= self.max_elapsed
    }
}

/// Whether `err` (or an error it was caused by) is a transient failure to
/// reach the chain: one [`RetryPolicy::verdict`] would retry, a timeout of
/// any call included. A service starting up keeps trying on these; any
/// other failure (a revert, no contract at the address, a wrong answer) is
/// for a person to fix.
///
/// The causes are walked through their `source()`s; a wrapper that hides
/// its cause (`#[error(transparent)]`) is looked through by type for the
/// errors this crate and alloy return.
pub fn is_transient(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(t) = transport_error_of(e) {
            return transport_is_transient(t);
        }
        if let Some(kind) = e.downcast_ref::<TransportErrorKind>() {
            return kind_is_transient(kind);
        }
        if let Some(r) = e.downcast_ref::<alloy::transports::http::reqwest::Error>() {
            return r.is_connect() || r.is_timeout() || r.is_request() || r.is_body();
        }
        if let Some(c) = e.downcast_ref::<crate::client::ClientError>() {
            if let crate::client::ClientError::Shared(inner) = c {
                return is_transient(inner.as_ref());
            }
            if let crate::client::ClientError::Revert(_) = c {
                return false;
            }
        }
        next = e.source();
    }
    false
}

/// The transport error `e` is or carries directly.
fn transport_error_of<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a TransportError> {
    use alloy::{contract::Error as Call, providers::PendingTransactionError as Pending};
    if let Some(t) = e.downcast_ref::<TransportError>() {
        return Some(t);
    }
    match e.downcast_ref::<Call>() {
        Some(Call::TransportError(t)) => return Some(t),
        Some(Call::PendingTransactionError(Pending::TransportError(t))) => return Some(t),
        _ => {}
    }
    match e.downcast_ref::<Pending>() {
        Some(Pending::TransportError(t)) => Some(t),
        _ => None,
    }
}

fn transport_is_transient(t: &TransportError) -> bool {
    match t {
        RpcError::Transport(kind) => kind_is_transient(kind),
        RpcError::ErrorResp(e) => e.is_retry_err(),
        _ => false,
    }
}

fn kind_is_transient(kind: &TransportErrorKind) -> bool {
    // A timeout of a send is transient here: the caller decides what to do
    // again, not the transport.
    matches!(RetryPolicy::transport_verdict(kind, false), Verdict::Retry { .. })
}

/// A number in [0, 1) from the process's random hasher keys: jitter needs
/// no more.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(u64::from(std::process::id()));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The tower layer that retries transient failures; see the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct RetryLayer {
    policy: RetryPolicy,
}

impl RetryLayer {
    /// A layer retrying by `policy`.
    pub const fn new(policy: RetryPolicy) -> Self {
        Self { policy }
    }
}

impl<S> tower::Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry { inner, policy: self.policy }
    }
}

/// A transport retrying transient failures ([`RetryLayer`]).
#[derive(Debug, Clone)]
pub struct Retry<S> {
    inner: S,
    policy: RetryPolicy,
}

impl<S> tower::Service<RequestPacket> for Retry<S>
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
        // The service that was polled ready takes the first attempt; clones
        // take the others.
        let inner = self.inner.clone();
        let first = std::mem::replace(&mut self.inner, inner);
        let policy = self.policy;
        Box::pin(async move {
            let mut service = first;
            let methods: Vec<_> = req.requests().iter().map(|r| r.method_clone()).collect();
            let start = std::time::Instant::now();
            let mut retry = 0;
            // A single send's transaction hash: what a resend checks first.
            let sent = raw_send(&req);
            loop {
                let outcome = service.call(req.clone()).await;
                if retry > 0
                    && let Some((id, hash)) = &sent
                    && refused_as_known(&outcome)
                    && let Some(answer) = known(&mut service, id, *hash).await
                {
                    return Ok(answer);
                }
                let Verdict::Retry { reason, hint } = RetryPolicy::verdict(&methods, &outcome)
                else {
                    return outcome;
                };
                retry += 1;
                let delay = policy.delay(retry, hint, jitter());
                if !policy.allows(retry, start.elapsed(), delay) {
                    return outcome;
                }
                for method in &methods {
                    metrics::counter!(RPC_RETRIES, "method" => method.clone(), "reason" => reason.label())
                        .increment(1);
                }
                tracing::debug!(
                    methods = ?methods,
                    reason = reason.label(),
                    retry,
                    delay_ms = delay.as_millis() as u64,
                    "rpc call retried"
                );
                tokio::time::sleep(delay).await;
                std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
                if let Some((id, hash)) = &sent
                    && let Some(answer) = known(&mut service, id, *hash).await
                {
                    tracing::info!(%hash, "a send whose answer was lost reached the node; not sent again");
                    return Ok(answer);
                }
            }
        })
    }
}

/// The request id and transaction hash of a single `eth_sendRawTransaction`.
fn raw_send(req: &RequestPacket) -> Option<(Id, B256)> {
    let RequestPacket::Single(r) = req else { return None };
    if r.method() != SEND_RAW {
        return None;
    }
    let [raw]: [String; 1] = serde_json::from_str(r.params()?.get()).ok()?;
    let bytes = alloy::hex::decode(raw).ok()?;
    Some((r.id().clone(), keccak256(bytes)))
}

/// Whether a send's answer is the node refusing a transaction it may
/// already have (in its pool, or mined: its nonce is then used).
fn refused_as_known(outcome: &Result<ResponsePacket, TransportError>) -> bool {
    let Ok(packet) = outcome else { return false };
    let Some(e) = packet.as_error() else { return false };
    let m = e.message.to_lowercase();
    ["already known", "known transaction", "already imported", "nonce too low", "already exists"]
        .iter()
        .any(|k| m.contains(k))
}

/// When the node has transaction `hash`: the answer a send of it gets
/// (`id`, the hash). `None` when it does not, or the question failed (the
/// send is then retried as before).
async fn known<S>(service: &mut S, id: &Id, hash: B256) -> Option<ResponsePacket>
where
    S: tower::Service<RequestPacket, Response = ResponsePacket, Error = TransportError>,
{
    let ask = Request::new("eth_getTransactionByHash", id.clone(), [hash]).serialize().ok()?;
    std::future::poll_fn(|cx| service.poll_ready(cx)).await.ok()?;
    let answer = service.call(RequestPacket::Single(ask)).await.ok()?;
    let found = match answer.single_payload()? {
        ResponsePayload::Success(raw) => raw.get() != "null",
        ResponsePayload::Failure(_) => false,
    };
    std::future::poll_fn(|cx| service.poll_ready(cx)).await.ok()?;
    if !found {
        return None;
    }
    let result = serde_json::value::to_raw_value(&hash).ok()?;
    Some(ResponsePacket::Single(Response {
        id: id.clone(),
        payload: ResponsePayload::Success(result),
    }))
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
