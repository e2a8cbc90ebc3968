use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use alloy::{
    providers::{Provider, ProviderBuilder},
    rpc::{
        client::ClientBuilder,
        json_rpc::{ErrorPayload, Id, Response, ResponsePayload},
    },
};

use super::*;

fn methods(m: &'static str) -> Vec<Cow<'static, str>> {
    vec![Cow::Borrowed(m)]
}

fn rpc_error(code: i64, message: &'static str) -> Result<ResponsePacket, TransportError> {
    let payload = ResponsePayload::Failure(ErrorPayload {
        code,
        message: Cow::Borrowed(message),
        data: None,
    });
    Ok(ResponsePacket::Single(Response { id: Id::Number(1), payload }))
}

fn http(status: u16, retry_after: Option<Duration>) -> Result<ResponsePacket, TransportError> {
    Err(TransportErrorKind::http_error_with_retry_after(status, String::new(), retry_after))
}

#[test]
fn statuses_429_and_5xx_are_retried_others_are_final() {
    let m = methods("eth_blockNumber");
    let hint = Some(Duration::from_secs(2));
    assert_eq!(
        RetryPolicy::verdict(&m, &http(429, hint)),
        Verdict::Retry { reason: Reason::RateLimited, hint }
    );
    for status in [500, 502, 503, 504] {
        assert_eq!(
            RetryPolicy::verdict(&m, &http(status, None)),
            Verdict::Retry { reason: Reason::Unavailable, hint: None },
            "{status}"
        );
    }
    for status in [400, 401, 403, 404, 413, 501] {
        assert_eq!(RetryPolicy::verdict(&m, &http(status, None)), Verdict::Final, "{status}");
    }
}

#[test]
fn rate_limit_rpc_errors_are_retried_reverts_are_not() {
    let m = methods("eth_call");
    assert_eq!(
        RetryPolicy::verdict(&m, &rpc_error(-32005, "limit exceeded")),
        Verdict::Retry { reason: Reason::RateLimited, hint: None }
    );
    assert_eq!(
        RetryPolicy::verdict(&m, &rpc_error(429, "Too Many Requests")),
        Verdict::Retry { reason: Reason::RateLimited, hint: None }
    );
    assert_eq!(RetryPolicy::verdict(&m, &rpc_error(3, "execution reverted")), Verdict::Final);
    assert_eq!(RetryPolicy::verdict(&m, &rpc_error(-32000, "nonce too low")), Verdict::Final);
    assert_eq!(RetryPolicy::verdict(&m, &rpc_error(-32601, "method not found")), Verdict::Final);
}

#[test]
fn a_log_query_refused_for_its_size_is_left_to_the_reader() {
    // Same code as a rate limit: the reader shrinks its range instead.
    let m = methods("eth_getLogs");
    let refused = rpc_error(-32005, "query returned more than 10000 results");
    assert_eq!(RetryPolicy::verdict(&m, &refused), Verdict::Final);
    assert_eq!(
        RetryPolicy::verdict(&m, &rpc_error(-32602, "block range too large")),
        Verdict::Final
    );
    // Anything else about a log query is retried as for any call.
    assert_eq!(
        RetryPolicy::verdict(&m, &rpc_error(429, "Too Many Requests")),
        Verdict::Retry { reason: Reason::RateLimited, hint: None }
    );
    assert_eq!(
        RetryPolicy::verdict(&m, &http(503, None)),
        Verdict::Retry { reason: Reason::Unavailable, hint: None }
    );
    // Another method's -32005 is its rate limit.
    assert_eq!(
        RetryPolicy::verdict(&methods("eth_call"), &refused),
        Verdict::Retry { reason: Reason::RateLimited, hint: None }
    );
}

#[tokio::test]
async fn a_refused_connection_is_retried_even_for_a_send() {
    // Nothing listens on the discard port: the connection is refused.
    let err = alloy::transports::http::reqwest::Client::new()
        .post("http://127.0.0.1:9")
        .send()
        .await
        .unwrap_err();
    let outcome = Err(TransportErrorKind::custom(err));
    for m in ["eth_blockNumber", SEND_RAW] {
        assert_eq!(
            RetryPolicy::verdict(&methods(m), &outcome),
            Verdict::Retry { reason: Reason::Connect, hint: None },
            "{m}"
        );
    }
}

#[tokio::test]
async fn a_timeout_is_retried_except_for_a_send() {
    // A listener that accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let err = alloy::transports::http::reqwest::Client::new()
        .post(format!("http://{addr}"))
        .timeout(Duration::from_millis(100))
        .send()
        .await
        .unwrap_err();
    hold.abort();
    assert!(err.is_timeout(), "{err}");
    let outcome = Err(TransportErrorKind::custom(err));
    assert_eq!(
        RetryPolicy::verdict(&methods("eth_getLogs"), &outcome),
        Verdict::Retry { reason: Reason::Timeout, hint: None }
    );
    assert_eq!(RetryPolicy::verdict(&methods(SEND_RAW), &outcome), Verdict::Final);
    // A send refused by an HTTP status never reached the node: retried.
    assert!(matches!(
        RetryPolicy::verdict(&methods(SEND_RAW), &http(503, None)),
        Verdict::Retry { .. }
    ));
}

#[test]
fn delays_grow_with_jitter_and_honour_a_bounded_retry_after() {
    let p = RetryPolicy::default();
    assert_eq!(p.delay(1, None, 0.0), Duration::from_millis(125));
    assert!(p.delay(1, None, 0.999_999) < Duration::from_millis(250));
    assert_eq!(p.delay(3, None, 0.0), Duration::from_millis(500));
    // Capped at max_backoff however many retries.
    assert_eq!(p.delay(30, None, 0.0), Duration::from_secs(2));
    assert!(p.delay(30, None, 0.99) < Duration::from_secs(4));
    // The server's hint wins, up to max_hint.
    assert_eq!(p.delay(1, Some(Duration::from_secs(3)), 0.5), Duration::from_secs(3));
    assert_eq!(p.delay(1, Some(Duration::from_secs(600)), 0.5), Duration::from_secs(5));
    let j = jitter();
    assert!((0.0..1.0).contains(&j), "{j}");
}

#[test]
fn attempts_and_total_time_are_bounded() {
    let p = RetryPolicy::default();
    let short = Duration::from_millis(100);
    assert!(p.allows(5, Duration::ZERO, short));
    assert!(!p.allows(6, Duration::ZERO, short));
    assert!(p.allows(1, Duration::from_secs(19), short));
    assert!(!p.allows(1, Duration::from_secs(19), Duration::from_secs(2)));
}

/// A JSON-RPC endpoint over real HTTP answering its first `fail` requests
/// with `status` (and `Retry-After: 1` on a 429), then `eth_blockNumber`
/// with 0x10; it counts the requests it saw.
async fn endpoint(
    status: u16,
    fail: u32,
) -> (alloy::transports::http::reqwest::Url, Arc<AtomicU32>) {
    use axum::{http::StatusCode, response::IntoResponse};
    let seen = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |body: axum::Json<serde_json::Value>| {
            let n = count.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < fail {
                    let code = StatusCode::from_u16(status).unwrap();
                    return (code, [("retry-after", "1")], "busy").into_response();
                }
                let id = body.0["id"].clone();
                axum::Json(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": "0x10"}))
                    .into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap()).parse().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test]
async fn a_provider_rides_out_503s_and_waits_as_a_429_asks() {
    let (url, seen) = endpoint(503, 3).await;
    let client = ClientBuilder::default().layer(RetryLayer::default()).http(url);
    let provider = ProviderBuilder::new().connect_client(client);
    assert_eq!(provider.get_block_number().await.unwrap(), 16);
    assert_eq!(seen.load(Ordering::SeqCst), 4);

    let (url, seen) = endpoint(429, 1).await;
    let client = ClientBuilder::default().layer(RetryLayer::default()).http(url);
    let provider = ProviderBuilder::new().connect_client(client);
    let start = std::time::Instant::now();
    assert_eq!(provider.get_block_number().await.unwrap(), 16);
    assert!(start.elapsed() >= Duration::from_secs(1), "{:?}", start.elapsed());
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn retries_stop_at_the_bound_and_the_last_failure_is_returned() {
    let (url, seen) = endpoint(503, u32::MAX).await;
    let policy = RetryPolicy { base: Duration::from_millis(10), ..RetryPolicy::default() };
    let client = ClientBuilder::default().layer(RetryLayer::new(policy)).http(url);
    let provider = ProviderBuilder::new().connect_client(client);
    let err = provider.get_block_number().await.unwrap_err();
    assert!(err.to_string().contains("503"), "{err}");
    assert_eq!(seen.load(Ordering::SeqCst), 1 + policy.max_retries);

    // A 400 is an answer: sent once.
    let (url, seen) = endpoint(400, u32::MAX).await;
    let client = ClientBuilder::default().layer(RetryLayer::new(policy)).http(url);
    let provider = ProviderBuilder::new().connect_client(client);
    assert!(provider.get_block_number().await.is_err());
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn transient_failures_are_told_from_answers_through_their_wrappers() {
    use crate::client::ClientError;
    let unavailable = || TransportErrorKind::http_error(503, String::new());
    assert!(is_transient(&unavailable()));
    let wrapped = ClientError::Call(alloy::contract::Error::TransportError(unavailable()));
    assert!(is_transient(&wrapped));
    let shared = ClientError::Shared(Arc::new(ClientError::Rpc(unavailable())));
    assert!(is_transient(&shared));
    let refused = alloy::transports::http::reqwest::Client::new()
        .post("http://127.0.0.1:9")
        .send()
        .await
        .unwrap_err();
    assert!(is_transient(&ClientError::Rpc(TransportErrorKind::custom(refused))));

    let answer = |code, message| {
        RpcError::ErrorResp(ErrorPayload { code, message: Cow::Borrowed(message), data: None })
    };
    assert!(is_transient(&ClientError::Rpc(answer(-32005, "limit exceeded"))));
    assert!(!is_transient(&ClientError::Rpc(answer(3, "execution reverted"))));
    assert!(!is_transient(&TransportErrorKind::http_error(404, String::new())));
    let no_code = alloy::contract::Error::ZeroData(
        "MAX_BATCH".into(),
        alloy::sol_types::Error::Other("no data".into()).into(),
    );
    assert!(!is_transient(&ClientError::Call(no_code)));
}

#[test]
fn a_send_is_known_by_the_hash_of_its_signed_bytes() {
    let raw = alloy::hex::encode_prefixed([0x02u8, 0xf8, 0x01, 0x02]);
    let req = Request::new(SEND_RAW, Id::Number(9), [raw]).serialize().unwrap();
    let (id, hash) = raw_send(&RequestPacket::Single(req)).expect("a send");
    assert_eq!(id, Id::Number(9));
    assert_eq!(hash, keccak256([0x02u8, 0xf8, 0x01, 0x02]));
    let other = Request::new("eth_call", Id::Number(1), ()).serialize().unwrap();
    assert!(raw_send(&RequestPacket::Single(other)).is_none());
    // A resend refused as a transaction the node has is checked by hash;
    // a revert or a rate limit is not such a refusal.
    assert!(refused_as_known(&rpc_error(-32000, "nonce too low")));
    assert!(refused_as_known(&rpc_error(-32000, "already known")));
    assert!(!refused_as_known(&rpc_error(3, "execution reverted")));
    assert!(!refused_as_known(&http(502, None)));
}
