//! The HTTP transport under every service's provider
//! ([`crate::client::connect`]): alloy's reqwest transport, but an answer
//! with HTTP status 429 or 503 is always a transport error carrying its
//! status and its `Retry-After`, whatever its body.
//!
//! Hosted providers answer a rate limit with 429, `Retry-After` and a
//! JSON-RPC error body (`{"error":{"code":429,…}}`). alloy's transport
//! reads such a body as the node's answer and drops the header, so
//! [`crate::retry`] saw a rate-limit error with no hint and backed off on
//! its own schedule — too short under a sustained limit: its retries ran
//! out and a step failed. Read here as an HTTP error, the 429 is retried
//! after the wait the provider asked for.

use std::{
    task::{Context, Poll},
    time::Duration,
};

use alloy::{
    rpc::json_rpc::{RequestPacket, ResponsePacket},
    transports::{
        TransportError, TransportErrorKind, TransportFut,
        http::reqwest::{self, StatusCode, Url, header::RETRY_AFTER},
    },
};

/// The transport; see the module docs.
#[derive(Debug, Clone)]
pub struct HintedHttp {
    client: reqwest::Client,
    url: Url,
}

impl HintedHttp {
    /// Sends to `url` with `client`.
    pub const fn new(client: reqwest::Client, url: Url) -> Self {
        Self { client, url }
    }

    async fn send(self, req: RequestPacket) -> Result<ResponsePacket, TransportError> {
        let resp = self
            .client
            .post(self.url)
            .json(&req)
            .headers(req.headers())
            .send()
            .await
            .map_err(TransportErrorKind::custom)?;
        let status = resp.status();
        // The delay-seconds form only, as alloy reads it.
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_secs);
        let http_error = |body: String| {
            TransportErrorKind::http_error_with_retry_after(status.as_u16(), body, retry_after)
        };
        let body = match resp.bytes().await {
            Ok(body) => body,
            Err(e) if !status.is_success() => {
                return Err(http_error(format!("<failed to read response body: {e}>")));
            }
            Err(e) => return Err(TransportErrorKind::custom(e)),
        };
        let text = || String::from_utf8_lossy(&body).into_owned();
        if matches!(status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE) {
            return Err(http_error(text()));
        }
        if !status.is_success() {
            // As alloy: a JSON-RPC error in the body is the answer.
            return match serde_json::from_slice::<ResponsePacket>(&body) {
                Ok(answer) if answer.first_error_code().is_some() => Ok(answer),
                _ => Err(http_error(text())),
            };
        }
        serde_json::from_slice(&body).map_err(|e| TransportError::deser_err(e, text()))
    }
}

impl tower::Service<RequestPacket> for HintedHttp {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: RequestPacket) -> Self::Future {
        Box::pin(self.clone().send(req))
    }
}

#[cfg(test)]
mod tests {
    use alloy::{providers::Provider, rpc::client::ClientBuilder};

    use super::*;

    /// An endpoint answering every request with `status`, a `Retry-After`
    /// of 3 s and `body`.
    async fn endpoint(status: u16, body: &'static str) -> Url {
        use axum::response::IntoResponse;
        let app = axum::Router::new().route(
            "/",
            axum::routing::post(move || async move {
                let code = axum::http::StatusCode::from_u16(status).unwrap();
                let json = [("content-type", "application/json"), ("retry-after", "3")];
                (code, json, body).into_response()
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap()).parse().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    const LIMITED: &str =
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":429,"message":"Too Many Requests"}}"#;

    async fn block_number(url: Url) -> Result<u64, TransportError> {
        let client =
            ClientBuilder::default().transport(HintedHttp::new(reqwest::Client::new(), url), true);
        alloy::providers::ProviderBuilder::new().connect_client(client).get_block_number().await
    }

    #[tokio::test]
    async fn a_429_with_a_json_rpc_body_keeps_its_status_and_retry_after() {
        for status in [429, 503] {
            let err = block_number(endpoint(status, LIMITED).await).await.unwrap_err();
            let kind = err.as_transport_err().expect("a transport error");
            assert_eq!(kind.as_http_error().map(|h| h.status), Some(status), "{err}");
            assert_eq!(kind.retry_after(), Some(Duration::from_secs(3)), "{err}");
        }
    }

    #[tokio::test]
    async fn another_error_status_with_a_json_rpc_error_is_the_answer() {
        let err = block_number(endpoint(400, LIMITED).await).await.unwrap_err();
        assert_eq!(err.as_error_resp().map(|e| e.code), Some(429), "{err}");
        let err = block_number(endpoint(400, "not json").await).await.unwrap_err();
        let kind = err.as_transport_err().expect("a transport error");
        assert_eq!(kind.as_http_error().map(|h| h.status), Some(400), "{err}");
    }
}
