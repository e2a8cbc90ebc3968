//! `GET /blobs/{hash}`: every service that writes content-addressed blobs
//! (the orchestrator at `/api/blobs/{hash}`, each worker, the arbiter, the
//! indexer) serves its local store this way, so a party on another machine
//! can read them: the URIs it publishes carry the base URL
//! (`sha256:<hex>?src=<base>`), and readers resolve them through
//! `tessera_bindings::envelope::BlobSources`.
//!
//! | answer | when |
//! | --- | --- |
//! | `200`, the bytes (`application/json` when they are JSON, else `application/octet-stream`), `ETag` and an immutable `Cache-Control` | the store holds bytes that hash to the name |
//! | `400` | the name is not 64 hex digits (a `sha256:` prefix is allowed) |
//! | `404` | the store does not hold it |
//! | `500` | the stored copy is damaged, or the store failed |
//!
//! The bytes are re-hashed before answering, so a damaged copy is never
//! served. Read-only and unauthenticated: the blobs are public by design
//! (anyone may read a task's spec and result).

use std::sync::Arc;

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use tessera_bindings::envelope::{BlobHash, BlobStore, HARD_MAX_BYTES};

use crate::{ApiError, Path};

/// A store served over HTTP.
pub type SharedStore = Arc<dyn BlobStore + Send + Sync>;

/// The route every service serves its store at.
pub const ROUTE: &str = "/blobs/{hash}";

/// `GET /blobs/{hash}` over `store` (see the module docs). Merge it into a
/// service's router; it keeps that router's fallbacks and time limit.
pub fn router(store: SharedStore) -> Router {
    routed(ROUTE, store)
}

/// The same handler at another path (which must capture `{hash}`), such as
/// the orchestrator's `/api/blobs/{hash}`.
pub fn routed(path: &str, store: SharedStore) -> Router {
    Router::new()
        .route(path, get(handler))
        .method_not_allowed_fallback(crate::method_not_allowed)
        .with_state(store)
}

async fn handler(State(store): State<SharedStore>, Path(hash): Path<String>) -> Response {
    match answer(store, &hash).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// The answer to `GET …/{name}` from `store`, for a handler of another
/// state (see the module docs for the statuses).
pub async fn answer(store: SharedStore, name: &str) -> Result<Response, ApiError> {
    let hex = name.strip_prefix("sha256:").unwrap_or(name);
    let hash: BlobHash = hex
        .parse()
        .map_err(|_| ApiError::bad_request("a blob is named by 64 hex digits (its sha256)"))?;
    let got = tokio::task::spawn_blocking(move || store.get(&hash, HARD_MAX_BYTES))
        .await
        .map_err(|e| e.to_string())
        .and_then(|got| got.map_err(|e| e.to_string()));
    let bytes = match got {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(ApiError::not_found(format!("no blob {hash}"))),
        Err(e) => {
            tracing::error!(%hash, error = %e, "reading a blob failed");
            return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "the blob store failed"));
        }
    };
    if BlobHash::of(&bytes) != hash {
        tracing::error!(%hash, "stored blob does not match its hash");
        return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "stored blob is corrupt"));
    }
    let json = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok();
    let content_type = if json { "application/json" } else { "application/octet-stream" };
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (header::ETAG, format!("\"{hash}\"")),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable".to_owned()),
        ],
        bytes,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tessera_bindings::envelope::MemoryBlobStore;
    use tower::ServiceExt;

    use super::*;

    async fn get(app: &Router, path: &str) -> (StatusCode, Option<String>, Vec<u8>) {
        let req = axum::http::Request::get(path).body(Body::empty()).unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let ct = resp.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned());
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 21).await.unwrap();
        (status, ct, bytes.to_vec())
    }

    #[tokio::test]
    async fn serves_verified_bytes_by_hash() {
        let store = Arc::new(MemoryBlobStore::new());
        let json = br#"{"spec":"a large envelope"}"#;
        let hash = store.put(json).unwrap();
        let raw = store.put(b"\x00not json").unwrap();
        let damaged = BlobHash::of(b"original");
        store.insert_raw(damaged, b"tampered".to_vec());
        let app = router(store).fallback(crate::not_found);

        let (status, ct, body) = get(&app, &format!("/blobs/{hash}")).await;
        assert_eq!(
            (status, ct.as_deref(), body.as_slice()),
            (StatusCode::OK, Some("application/json"), &json[..])
        );
        let upper = hash.to_string().to_uppercase();
        assert_eq!(get(&app, &format!("/blobs/sha256:{upper}")).await.2, json);
        let (status, ct, _) = get(&app, &format!("/blobs/{raw}")).await;
        assert_eq!((status, ct.as_deref()), (StatusCode::OK, Some("application/octet-stream")));

        let (status, ct, body) = get(&app, "/blobs/not-a-hash").await;
        assert_eq!((status, ct.as_deref()), (StatusCode::BAD_REQUEST, Some("application/json")));
        assert!(String::from_utf8(body).unwrap().contains("64 hex digits"));
        let (status, _, body) = get(&app, &format!("/blobs/{}", "ab".repeat(32))).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(String::from_utf8(body).unwrap().contains("no blob abab"));
        let (status, _, body) = get(&app, &format!("/blobs/{damaged}")).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(String::from_utf8(body).unwrap().contains("corrupt"));

        let post = axum::http::Request::post(format!("/blobs/{hash}")).body(Body::empty()).unwrap();
        assert_eq!(
            app.clone().oneshot(post).await.unwrap().status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }

    #[tokio::test]
    async fn another_path_serves_the_same() {
        let store = Arc::new(MemoryBlobStore::new());
        let hash = store.put(b"{}").unwrap();
        let app = routed("/api/blobs/{hash}", store);
        let (status, _, body) = get(&app, &format!("/api/blobs/{hash}")).await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"{}"[..]));
    }
}
