//! The one error shape both Tessera HTTP APIs answer with, and the pieces
//! that make the framework keep it too.
//!
//! Every rejection is `{"error": "<message>"}` with `Content-Type:
//! application/json`, whoever produced it: a handler ([`ApiError`]), an
//! extractor ([`Path`], [`Query`], [`Json`], [`JsonBytes`]), or routing
//! ([`not_found`], [`method_not_allowed`], both installed by
//! [`json_fallbacks`]). The extractors are axum's own with their rejections
//! mapped, so the status stays the one axum chose:
//!
//! | rejection | status |
//! | --- | --- |
//! | a path segment that does not parse (`/runs/x/subtasks/-1/…`) | 400 |
//! | a query string that does not parse (`?limit=ten`) | 400 |
//! | a body sent with a content type other than JSON | 415 |
//! | a body over the router's `DefaultBodyLimit` | 413 |
//! | a body that is not JSON, or JSON of the wrong shape | 422 |
//! | no route for the path | 404 |
//! | a route, but not for this method (with `Allow`) | 405 |
//!
//! A number without a fraction is an integer, as JSON Schema counts it: an
//! integer field of a body takes `1288.0` as `1288` ([`whole_numbers`]).
//!
//! A malformed JSON body is `422` like an ill-typed one, not axum's `400`:
//! both mean "this body is not what the route documents", and a client
//! needs one status for that, while `400` is kept for the URL.
//!
//! [`limits`] holds what every API keeps whatever its clients do: a time
//! limit on each request and a gate on open event streams.
//!
//! [`ops`] holds what every service offers its operators: `/metrics`
//! (Prometheus, the tables of metrics each crate records), `/healthz`,
//! `/readyz`.
//!
//! [`tasks`] supervises a service's long-lived tasks: one that is
//! critical ending takes readiness down and the process with it.
//!
//! [`blobs`] serves a service's content-addressed blob store at
//! `GET /blobs/{hash}`, the same way everywhere.
//!
//! The crate depends on axum, serde, tokio (and `tokio-util`'s
//! cancellation token), the `metrics` facade with its
//! Prometheus exporter and `tessera-bindings` (for the blob store) only, so
//! every service crate can share it without depending on the others.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod blobs;
pub mod limits;
pub mod ops;
pub mod tasks;

use axum::{
    extract::{FromRequest, FromRequestParts, Request},
    http::{HeaderMap, Method, StatusCode, Uri, header, request::Parts},
    response::{IntoResponse, Response},
};
use serde::de::DeserializeOwned;

/// An API error: the status and the message a caller reads in `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// An error answered with `status`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    /// `400 Bad Request`: the URL (a path segment or the query) is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// `404 Not Found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// `422 Unprocessable Content`: the body is not what the route takes.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    /// The status answered.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message answered in `error`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

/// Path parameters (axum's [`axum::extract::Path`]); a segment that does not
/// parse is `400` with the usual error body.
#[derive(Debug, Clone, Copy)]
pub struct Path<T>(pub T);

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(Self(v)),
            // A route whose pattern and extractor disagree is our bug: axum
            // answers 500 for it, and so do we.
            Err(e) => Err(ApiError::new(
                if e.status().is_server_error() { e.status() } else { StatusCode::BAD_REQUEST },
                format!("path: {}", e.body_text()),
            )),
        }
    }
}

/// The query string (axum's [`axum::extract::Query`]); one that does not
/// parse into `T` is `400` with the usual error body.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<T, S> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(v)| Self(v))
            .map_err(|e| ApiError::bad_request(format!("query: {}", e.body_text())))
    }
}

/// A JSON body (axum's [`axum::Json`]): `415` without a JSON content type,
/// `413` over the body limit, `422` when it is not JSON or not a `T`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let JsonBytes(bytes) = JsonBytes::from_request(req, state).await?;
        parse(&bytes).map(Self)
    }
}

/// Parses a JSON body, `422` when it is not a `T`. A number without a
/// fraction is an integer, as JSON Schema counts it: an integer field takes
/// `1288.0` as `1288` (see [`whole_numbers`]).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let body = whole_numbers(bytes);
    serde_json::from_slice(body.as_deref().unwrap_or(bytes))
        .map_err(|e| ApiError::unprocessable(format!("invalid JSON body: {e}")))
}

/// The JSON `bytes` with every number that has no fraction (`1288.0`,
/// `1.2e3`) written as an integer, so serde reads it into an integer field
/// as JSON Schema's `"type": "integer"` promises; `None` when there is no
/// such number (or the bytes are not JSON: the caller's own parse reports
/// that, with its position).
pub fn whole_numbers(bytes: &[u8]) -> Option<Vec<u8>> {
    fn rewrite(v: &mut serde_json::Value) -> bool {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => match n.as_f64().and_then(whole) {
                Some(w) => {
                    *n = w;
                    true
                }
                None => false,
            },
            serde_json::Value::Array(items) => {
                items.iter_mut().fold(false, |any, v| rewrite(v) | any)
            }
            serde_json::Value::Object(fields) => {
                fields.values_mut().fold(false, |any, v| rewrite(v) | any)
            }
            _ => false,
        }
    }
    fn whole(x: f64) -> Option<serde_json::Number> {
        // 2^64 and -2^63 are exact in f64; integers outside stay as sent.
        const U64_END: f64 = 18_446_744_073_709_551_616.0;
        const I64_START: f64 = -9_223_372_036_854_775_808.0;
        if x.fract() != 0.0 || !x.is_finite() {
            None
        } else if (0.0..U64_END).contains(&x) {
            Some((x as u64).into())
        } else if (I64_START..0.0).contains(&x) {
            Some((x as i64).into())
        } else {
            None
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    rewrite(&mut value).then(|| serde_json::to_vec(&value).ok()).flatten()
}

/// A body for handlers that read JSON themselves (an optional body, or one
/// with a parser of its own): the bytes, `413` over the body limit, and `415`
/// when a non-empty body is not declared as JSON. An empty body needs no
/// content type, so a route may treat it as "no body".
#[derive(Debug, Clone, Default)]
pub struct JsonBytes(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBytes {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = is_json(req.headers());
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::new(e.status(), format!("request body: {}", e.body_text())))?;
        if !json && !bytes.is_empty() {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON: send Content-Type: application/json",
            ));
        }
        Ok(Self(bytes))
    }
}

/// Whether the request declares a JSON body (`application/json`, or
/// `application/<anything>+json`), as axum's own `Json` decides.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(mime) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json"
        || essence.strip_prefix("application/").is_some_and(|sub| sub.ends_with("+json"))
}

/// The fallback for a path no route serves: `404` with the usual body.
pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {method} {}", uri.path()))
}

/// The fallback for a route asked with a method it does not serve: `405`
/// with the usual body (axum adds the `Allow` header).
pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not take {method}; see the Allow header", uri.path()),
    )
}

/// `router` answering unknown paths with [`not_found`] and wrong methods
/// with [`method_not_allowed`]. Call it after every route is added: axum
/// sets the method fallback on the routes present at the call.
pub fn json_fallbacks<S: Clone + Send + Sync + 'static>(
    router: axum::Router<S>,
) -> axum::Router<S> {
    router.fallback(not_found).method_not_allowed_fallback(method_not_allowed)
}

#[cfg(test)]
mod tests {
    use axum::{
        Router,
        body::Body,
        extract::DefaultBodyLimit,
        routing::{get, post},
    };
    use serde::Deserialize;
    use tower::ServiceExt;

    use super::*;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Item {
        #[allow(dead_code)]
        name: String,
    }

    #[derive(Deserialize)]
    struct Page {
        #[allow(dead_code)]
        limit: Option<u32>,
    }

    fn app() -> Router {
        let r = Router::new()
            .route("/items/{n}", get(|Path(n): Path<u32>| async move { n.to_string() }))
            .route("/items", get(|Query(_): Query<Page>| async { "ok" }))
            .route("/items", post(|Json(_): Json<Item>| async { "created" }))
            .route("/raw", post(|JsonBytes(b): JsonBytes| async move { b.len().to_string() }))
            .layer(DefaultBodyLimit::max(64));
        json_fallbacks(r)
    }

    async fn call(req: axum::http::Request<Body>) -> (StatusCode, HeaderMap, serde_json::Value) {
        let resp = app().oneshot(req).await.expect("infallible");
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.expect("body");
        let ct = parts.headers.get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(ct.as_deref(), Some("application/json"), "{:?}", parts.status);
        (parts.status, parts.headers, serde_json::from_slice(&bytes).expect("JSON error body"))
    }

    fn req(method: &str, uri: &str, ct: Option<&str>, body: &str) -> axum::http::Request<Body> {
        let mut b = axum::http::Request::builder().method(method).uri(uri);
        if let Some(ct) = ct {
            b = b.header(header::CONTENT_TYPE, ct);
        }
        b.body(Body::from(body.to_owned())).unwrap()
    }

    #[tokio::test]
    async fn every_rejection_is_a_json_error_with_its_status() {
        let json = Some("application/json");
        let cases = [
            (req("GET", "/items/x", None, ""), StatusCode::BAD_REQUEST),
            (req("GET", "/items/-1", None, ""), StatusCode::BAD_REQUEST),
            (req("GET", "/items?limit=ten", None, ""), StatusCode::BAD_REQUEST),
            (req("POST", "/items", Some("text/plain"), "{}"), StatusCode::UNSUPPORTED_MEDIA_TYPE),
            (req("POST", "/items", None, r#"{"name":"a"}"#), StatusCode::UNSUPPORTED_MEDIA_TYPE),
            (req("POST", "/items", json, "{"), StatusCode::UNPROCESSABLE_ENTITY),
            (req("POST", "/items", json, r#"{"name":1}"#), StatusCode::UNPROCESSABLE_ENTITY),
            (
                req("POST", "/items", json, r#"{"name":"a","x":1}"#),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (req("POST", "/items", json, &"x".repeat(65)), StatusCode::PAYLOAD_TOO_LARGE),
            (req("POST", "/raw", Some("text/plain"), "x"), StatusCode::UNSUPPORTED_MEDIA_TYPE),
            (req("GET", "/nowhere", None, ""), StatusCode::NOT_FOUND),
            (req("DELETE", "/items", None, ""), StatusCode::METHOD_NOT_ALLOWED),
        ];
        for (request, status) in cases {
            let what = format!("{} {}", request.method(), request.uri());
            let (got, headers, body) = call(request).await;
            assert_eq!(got, status, "{what}: {body}");
            assert!(body["error"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {body}");
            assert_eq!(body.as_object().unwrap().len(), 1, "{what}: only `error`");
            if status == StatusCode::METHOD_NOT_ALLOWED {
                let allow = headers.get(header::ALLOW).expect("Allow on 405").to_str().unwrap();
                assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
            }
        }
    }

    #[tokio::test]
    async fn accepted_requests_pass_through() {
        let ok = |uri: &str| req("GET", uri, None, "");
        for r in [ok("/items/7"), ok("/items"), ok("/items?limit=3")] {
            assert_eq!(app().oneshot(r).await.unwrap().status(), StatusCode::OK);
        }
        let r = req("POST", "/items", Some("application/json; charset=utf-8"), r#"{"name":"a"}"#);
        assert_eq!(app().oneshot(r).await.unwrap().status(), StatusCode::OK);
        // An empty body needs no content type where a route reads raw bytes.
        assert_eq!(
            app().oneshot(req("POST", "/raw", None, "")).await.unwrap().status(),
            StatusCode::OK
        );
    }

    #[test]
    fn json_content_types() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::CONTENT_TYPE, v.parse().unwrap());
            m
        };
        assert!(is_json(&h("application/json")));
        assert!(is_json(&h("Application/JSON; charset=utf-8")));
        assert!(is_json(&h("application/problem+json")));
        assert!(!is_json(&h("text/json")));
        assert!(!is_json(&h("application/jsonx")));
        assert!(!is_json(&HeaderMap::new()));
    }

    /// JSON Schema's integers: `1288.0` reads into an integer field as
    /// `1288`; a fraction is still refused, and the body's own errors keep
    /// their position.
    #[test]
    fn whole_numbers_are_integers() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Body {
            n: u32,
            list: Vec<i64>,
        }
        let body: Body = parse(br#"{"n": 1288.0, "list": [-3.0, 1.2e3, 5]}"#).unwrap();
        assert_eq!(body, Body { n: 1288, list: vec![-3, 1200, 5] });
        let err = parse::<Body>(br#"{"n": 1288.5, "list": []}"#).unwrap_err();
        assert_eq!(err.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(err.message().contains("floating point"), "{}", err.message());
        let err = parse::<Body>(b"{\"n\": 1,").unwrap_err();
        assert!(err.message().contains("line 1 column"), "{}", err.message());
        assert_eq!(whole_numbers(br#"{"n": 1, "x": 1.5}"#), None, "nothing to rewrite");
        assert_eq!(whole_numbers(br#"[2.0]"#).as_deref(), Some(&b"[2]"[..]));
    }
}
