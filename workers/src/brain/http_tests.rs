//! An HTTP handler on a local listener: what it is sent, and every way it
//! can answer badly, each declined with a reason that holds nothing of
//! its URL.

use std::sync::{Arc, Mutex};

use axum::{
    Json, Router,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Redirect},
    routing::post,
};
use serde_json::json;

use super::*;
use crate::brain::{Verdict, think, wire::tests::request};

/// The request bodies and content types the handler received.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// A handler service with one route per behaviour; its base URL.
async fn serve(seen: Seen) -> String {
    let keep = move |headers: HeaderMap, Json(body): Json<Value>| {
        let seen = Arc::clone(&seen);
        async move {
            let ty =
                headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
            seen.lock().unwrap().push((ty, body.clone()));
            Json(json!({"result": {"haiku": format!("leaves for task {}", body["task"]["id"])}}))
        }
    };
    let app = Router::new()
        .route("/ok", post(keep))
        .route(
            "/slow",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Json(json!({"result": {"haiku": "late"}}))
            }),
        )
        .route("/fail", post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom at /secret") }))
        .route("/off", post(|| async { Json(json!({"result": {"lines": 3}})) }))
        .route("/decline", post(|| async { Json(json!({"decline": {"reason": "I only\nwrite sonnets"}})) }))
        .route(
            "/big",
            post(|| async {
                let haiku = "x".repeat(MAX_ANSWER_BYTES);
                Json(json!({"result": {"haiku": haiku}}))
            }),
        )
        .route(
            "/hire",
            post(|| async {
                Json(json!({"hire": [{"capability": "translate", "spec": "Translate to French: leaves"}]}))
            }),
        )
        .route("/garbage", post(|| async { "<html>not json</html>".into_response() }))
        .route("/moved", post(|| async { Redirect::temporary("/ok") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

use crate::brain::MAX_ANSWER_BYTES;

async fn verdict(url: &str, timeout_ms: u64) -> Verdict {
    let mut req = request();
    req.limits.timeout_ms = timeout_ms;
    think(&HttpBrain::new(url), &req).await
}

fn declined(v: Verdict) -> String {
    match v {
        Verdict::Decline(reason) => reason,
        other => panic!("a decline: {other:?}"),
    }
}

#[tokio::test]
async fn the_handler_is_posted_the_request_and_its_result_taken() {
    let seen = Seen::default();
    let base = serve(Arc::clone(&seen)).await;
    let Verdict::Deliver(result) = verdict(&format!("{base}/ok"), 5000).await else {
        panic!("a result")
    };
    assert_eq!(result["haiku"], "leaves for task \"1234\"");
    let seen = seen.lock().unwrap();
    let (ty, body) = &seen[0];
    assert_eq!(ty.as_deref(), Some("application/json"));
    let mut sent = request();
    sent.limits.timeout_ms = 5000;
    assert_eq!(*body, serde_json::to_value(sent).unwrap(), "the request as sent");
}

#[tokio::test]
async fn every_bad_answer_is_declined_with_a_reason_free_of_the_url() {
    let base = serve(Seen::default()).await;
    let started = std::time::Instant::now();
    let slow = declined(verdict(&format!("{base}/slow?token=s3cret"), 1000).await);
    assert_eq!(slow, "handler timed out after 1 s");
    assert!(started.elapsed() < Duration::from_secs(3), "gave up on time");
    for (path, reason) in [
        ("/fail?token=s3cret", "handler failed: HTTP 500"),
        ("/moved", "handler failed: HTTP 307"),
        ("/off", "handler answered off-schema: the result field .haiku: is required and missing"),
        ("/decline", "handler declined: I only write sonnets"),
        ("/big", "handler answered off-schema: the answer is over 262144 bytes"),
        (
            "/hire",
            "handler answered off-schema: hire[0].capability \"translate\" is hired once per task",
        ),
    ] {
        let mut req = request();
        // The hire route asks for a capability hired already.
        req.hired = Some(vec![crate::brain::Hired {
            capability: "translate".into(),
            task: "9".into(),
            executor: "0x0".into(),
            paid: "1".into(),
            spec: "x".into(),
            result: json!({}),
        }]);
        let v = think(&HttpBrain::new(&format!("{base}{path}")), &req).await;
        assert_eq!(declined(v), reason, "{path}");
    }
    let garbage = declined(verdict(&format!("{base}/garbage"), 5000).await);
    assert!(
        garbage.starts_with("handler answered off-schema: the answer is not JSON"),
        "{garbage}"
    );
    // Nobody listening: a category, no address.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let refused = declined(verdict(&format!("http://{closed}/agent?token=s3cret"), 5000).await);
    assert_eq!(refused, "handler failed: cannot connect");
}

#[tokio::test]
async fn a_hire_within_the_delegates_is_taken() {
    let base = serve(Seen::default()).await;
    let Verdict::Hire(hires) = verdict(&format!("{base}/hire"), 5000).await else {
        panic!("a hire")
    };
    assert_eq!(hires[0].capability, "translate");
    assert_eq!(hires[0].spec, "Translate to French: leaves");
}
