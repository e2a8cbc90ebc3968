//! `POST /api/webhooks` (register: the secret is answered once),
//! `GET /api/webhooks` (list, without secrets), `DELETE /api/webhooks/{id}`.
//! Every route asks for `Authorization: Bearer <token>`; without a token
//! configured they answer 403, saying which variable turns them on.

use std::time::Duration;

use axum::{
    Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{delete, get},
};
use serde::Deserialize;
use serde_json::json;
use tessera_http::{ApiError, Json, Path, Query, limits};

use super::{MAX_WEBHOOKS, WebhookFilter, check_secret, check_url, new_id, new_secret};
use crate::store::IndexStore;

/// Every webhook route, as documented in the OpenAPI document.
pub const ROUTES: &[(&str, &str)] =
    &[("post", "/api/webhooks"), ("get", "/api/webhooks"), ("delete", "/api/webhooks/{id}")];

/// Who may manage webhooks: the holder of `token`. Without one the routes
/// are off, and say that `variable` turns them on.
#[derive(Clone)]
pub struct WebhookAuth {
    token: Option<String>,
    variable: &'static str,
}

impl std::fmt::Debug for WebhookAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is never shown.
        f.debug_struct("WebhookAuth")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("variable", &self.variable)
            .finish()
    }
}

impl WebhookAuth {
    /// The bearer `token` (none, or empty, turns the routes off), named
    /// after the environment `variable` it comes from.
    pub fn new(token: Option<String>, variable: &'static str) -> Self {
        let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        Self { token, variable }
    }
}

#[derive(Clone)]
struct WebhookState {
    store: IndexStore,
    auth: WebhookAuth,
}

/// No query parameters: one given is refused, never ignored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

/// A registration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewWebhook {
    url: String,
    #[serde(default)]
    filter: WebhookFilter,
    /// The HMAC key; a fresh one when left out.
    #[serde(default)]
    secret: Option<String>,
}

/// The webhook routes over `store`, guarded by `auth`, each request within
/// `timeout`. Merge it into the read API's router.
pub fn router(store: IndexStore, auth: WebhookAuth, timeout: Duration) -> Router {
    let state = WebhookState { store, auth };
    Router::new()
        .route("/api/webhooks", get(list).post(add))
        .route("/api/webhooks/{id}", delete(remove))
        .method_not_allowed_fallback(tessera_http::method_not_allowed)
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(middleware::from_fn_with_state(timeout, limits::request_timeout))
        .with_state(state)
}

/// Lets the request through only with the configured bearer token.
async fn authenticate(State(s): State<WebhookState>, req: Request, next: Next) -> Response {
    let Some(token) = &s.auth.token else {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "webhooks are turned off: set {} to a bearer token, then send Authorization: Bearer <token>",
                s.auth.variable
            ),
        )
        .into_response();
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(t) if constant_time_eq(t.trim().as_bytes(), token.as_bytes()) => next.run(req).await,
        Some(_) => ApiError::new(StatusCode::UNAUTHORIZED, "invalid bearer token").into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!(
                "missing bearer token: send Authorization: Bearer <the {} value>",
                s.auth.variable
            ),
        )
        .into_response(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn internal(e: &tessera_db::DbError) -> ApiError {
    tracing::error!(error = %e, "webhook store failed");
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error; see the indexer log")
}

async fn add(
    State(s): State<WebhookState>,
    Query(NoParams {}): Query<NoParams>,
    Json(req): Json<NewWebhook>,
) -> Result<Response, ApiError> {
    // A string JSON Schema takes but no delivery can go to: refused on its
    // merits (422), as the orchestrator refuses a plan it cannot run.
    let url = check_url(req.url.trim())
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e))?;
    let filter = req.filter.checked().map_err(ApiError::bad_request)?;
    let secret = match req.secret {
        Some(secret) => {
            check_secret(&secret).map_err(ApiError::bad_request)?;
            secret
        }
        None => new_secret(),
    };
    if s.store.webhook_count().await.map_err(|e| internal(&e))? >= MAX_WEBHOOKS {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("{MAX_WEBHOOKS} webhooks are registered already; remove one first"),
        ));
    }
    let id = new_id();
    s.store.add_webhook(&id, url.as_str(), &secret, &filter).await.map_err(|e| internal(&e))?;
    tracing::info!(webhook = id, "webhook registered");
    let body = json!({ "id": id, "url": url.as_str(), "filter": filter, "secret": secret });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

async fn list(
    State(s): State<WebhookState>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<Response, ApiError> {
    let hooks = s.store.webhooks().await.map_err(|e| internal(&e))?;
    Ok(axum::Json(json!({ "webhooks": hooks })).into_response())
}

async fn remove(
    State(s): State<WebhookState>,
    Path(id): Path<String>,
    Query(NoParams {}): Query<NoParams>,
) -> Result<StatusCode, ApiError> {
    let well_formed = id.len() == 27
        && id.starts_with("wh_")
        && id[3..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !well_formed {
        return Err(ApiError::bad_request(format!(
            "{id:?} is not a webhook id (wh_ and 24 hex digits)"
        )));
    }
    if s.store.remove_webhook(&id).await.map_err(|e| internal(&e))? {
        tracing::info!(webhook = id, "webhook removed");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("no webhook {id}")))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tower::ServiceExt;

    use super::*;

    const TOKEN: &str = "t0ken-for-the-hooks";

    async fn app(token: Option<&str>) -> (Router, IndexStore) {
        let store = IndexStore::connect("sqlite::memory:").await.expect("in-memory index");
        let auth = WebhookAuth::new(token.map(Into::into), "TESSERA_INDEXER_TOKEN");
        (router(store.clone(), auth, Duration::from_secs(5)), store)
    }

    async fn call(
        app: &Router,
        method: &str,
        uri: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = axum::http::Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let body = match body {
            Some(b) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                axum::body::Body::from(b.to_string())
            }
            None => axum::body::Body::empty(),
        };
        let resp = app.clone().oneshot(req.body(body).unwrap()).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    #[tokio::test]
    async fn without_a_token_configured_the_routes_say_how_to_turn_them_on() {
        let (app, _) = app(None).await;
        for (method, uri) in [
            ("GET", "/api/webhooks"),
            ("POST", "/api/webhooks"),
            ("DELETE", "/api/webhooks/wh_000000000000000000000000"),
        ] {
            let (status, body) = call(&app, method, uri, Some("anything"), None).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{method} {uri}: {body}");
            assert!(body["error"].as_str().unwrap().contains("TESSERA_INDEXER_TOKEN"), "{body}");
        }
    }

    #[tokio::test]
    async fn registrations_are_authenticated_checked_listed_and_removed() {
        let (app, store) = app(Some(TOKEN)).await;
        let good = json!({"url": "http://127.0.0.1:9/hook", "filter": {"kinds": ["TaskSettled"]}});
        let (status, body) = call(&app, "POST", "/api/webhooks", None, Some(good.clone())).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        let (status, body) =
            call(&app, "POST", "/api/webhooks", Some("wrong"), Some(good.clone())).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        for (bad, says) in [
            (json!({"url": "ftp://example.org/"}), "scheme"),
            (json!({"url": "nowhere"}), "not a URL"),
            (json!({"url": "http://user:pw@h/"}), "credentials"),
        ] {
            let (status, body) =
                call(&app, "POST", "/api/webhooks", Some(TOKEN), Some(bad.clone())).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
            assert!(body["error"].as_str().unwrap().contains(says), "{bad}: {body}");
        }
        for (bad, says) in [
            (json!({"url": "http://h/", "filter": {"plan": "0x1"}}), "filter.plan"),
            (json!({"url": "http://h/", "filter": {"kinds": ["Nope"]}}), "Nope"),
            (json!({"url": "http://h/", "secret": "short"}), "secret"),
        ] {
            let (status, body) =
                call(&app, "POST", "/api/webhooks", Some(TOKEN), Some(bad.clone())).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
            assert!(body["error"].as_str().unwrap().contains(says), "{bad}: {body}");
        }
        let (status, body) = call(
            &app,
            "POST",
            "/api/webhooks",
            Some(TOKEN),
            Some(json!({"url": "http://h/", "colour": 1})),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

        let (status, made) = call(&app, "POST", "/api/webhooks", Some(TOKEN), Some(good)).await;
        assert_eq!(status, StatusCode::CREATED, "{made}");
        let id = made["id"].as_str().unwrap().to_owned();
        assert_eq!(made["secret"].as_str().unwrap().len(), 64);
        assert_eq!(made["filter"], json!({"kinds": ["TaskSettled"]}));
        let chosen = json!({"url": "https://hooks.example.org/x", "secret": "a-secret-of-my-own"});
        let (status, mine) = call(&app, "POST", "/api/webhooks", Some(TOKEN), Some(chosen)).await;
        assert_eq!(status, StatusCode::CREATED, "{mine}");
        assert_eq!(mine["secret"], "a-secret-of-my-own");

        let (status, listed) = call(&app, "GET", "/api/webhooks", Some(TOKEN), None).await;
        assert_eq!(status, StatusCode::OK, "{listed}");
        let hooks = listed["webhooks"].as_array().unwrap();
        assert_eq!(hooks.len(), 2, "{listed}");
        assert!(!listed.to_string().contains("secret"), "no secret is listed: {listed}");
        assert_eq!(store.webhook_targets().await.unwrap().len(), 2);

        let (status, body) = call(&app, "DELETE", "/api/webhooks/nope", Some(TOKEN), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let (status, _) =
            call(&app, "DELETE", &format!("/api/webhooks/{id}"), Some(TOKEN), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, body) =
            call(&app, "DELETE", &format!("/api/webhooks/{id}"), Some(TOKEN), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        let (_, listed) = call(&app, "GET", "/api/webhooks", Some(TOKEN), None).await;
        assert_eq!(listed["webhooks"].as_array().unwrap().len(), 1, "{listed}");
        let (status, body) = call(&app, "GET", "/api/webhooks?all=1", Some(TOKEN), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let (status, body) = call(&app, "PUT", "/api/webhooks", Some(TOKEN), None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    }
}
