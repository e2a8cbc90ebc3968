//! A local stand-in for an OpenAI-compatible provider: an axum server that
//! speaks `POST /v1/chat/completions` with tool calls, so async-openai is
//! exercised over real HTTP. Replies follow a script (server errors, error
//! statuses such as 429 and 401, malformed tool arguments, slow answers) and then a default that calls the
//! request's forced tool with arguments derived from the request itself.
//! Every request is recorded for inspection.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Json, Router, extract::State, http::HeaderMap, response::IntoResponse, routing::post};
use serde_json::{Value, json};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A 500 with an OpenAI-style error body.
    ServerError,
    /// This HTTP error status with an OpenAI-style error body (for 401 an
    /// `invalid_api_key`, for 429 a `rate_limit_exceeded`).
    Status(u16),
    /// A tool call whose arguments are not valid JSON.
    Malformed,
    /// A tool call with these exact arguments.
    Arguments(Value),
    /// Wait this long, then answer normally.
    Slow(Duration),
}

#[derive(Debug, Default)]
struct Inner {
    script: VecDeque<Reply>,
    requests: Vec<(HeaderMap, Value)>,
}

/// A running mock provider; stops when dropped.
#[derive(Debug)]
pub struct MockOpenAi {
    /// Base URL to configure clients with (ends in `/v1`).
    pub base_url: String,
    inner: Arc<Mutex<Inner>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockOpenAi {
    /// Starts the server on a free local port.
    pub async fn start() -> Self {
        Self::start_at("127.0.0.1:0").await
    }

    /// Starts the server listening on `addr` (`HOST:PORT`, port 0 for any).
    pub async fn start_at(addr: &str) -> Self {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(Arc::clone(&inner));
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("mock serves");
        });
        Self { base_url, inner, task }
    }

    /// Queues replies used before the default one.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.inner.lock().expect("lock").script.extend(replies);
    }

    /// Bodies of the requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.inner.lock().expect("lock").requests.iter().map(|(_, b)| b.clone()).collect()
    }

    /// The `Authorization` header of every request.
    pub fn auth_headers(&self) -> Vec<String> {
        self.inner
            .lock()
            .expect("lock")
            .requests
            .iter()
            .map(|(h, _)| {
                h.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
            })
            .collect()
    }
}

/// An error answer with `status`, its body shaped as OpenAI's.
fn status_reply(status: u16) -> axum::response::Response {
    let (kind, code) = match status {
        401 => ("invalid_request_error", "invalid_api_key"),
        429 => ("requests", "rate_limit_exceeded"),
        _ => ("invalid_request_error", "scripted"),
    };
    let status = axum::http::StatusCode::from_u16(status).expect("an HTTP status");
    let body = json!({"error": {"message": format!("scripted {status}"), "type": kind, "param": null, "code": code}});
    (status, Json(body)).into_response()
}

async fn completions(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> axum::response::Response {
    let reply = {
        let mut g = inner.lock().expect("lock");
        g.requests.push((headers, body.clone()));
        g.script.pop_front()
    };
    let arguments = match reply {
        Some(Reply::ServerError) => {
            return (
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"error": {"message": "scripted failure", "type": "server_error", "param": null, "code": null}})),
            )
                .into_response();
        }
        Some(Reply::Status(status)) => return status_reply(status),
        Some(Reply::Malformed) => "{\"text\": unquoted".to_owned(),
        Some(Reply::Arguments(v)) => v.to_string(),
        Some(Reply::Slow(d)) => {
            tokio::time::sleep(d).await;
            default_arguments(&body).to_string()
        }
        None => default_arguments(&body).to_string(),
    };
    let tool = body["tool_choice"]["function"]["name"].as_str().unwrap_or("deliver_result");
    Json(json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_mock",
                    "type": "function",
                    "function": { "name": tool, "arguments": arguments }
                }]
            }
        }]
    }))
    .into_response()
}

/// Arguments a cooperative model would send: every required field of the
/// forced tool's schema, a `text` naming what it read, an enum's `neutral`
/// (or first) value, an example when the schema gives one, a date for a
/// `date` format, `0` for a number and one item for a list.
fn default_arguments(body: &Value) -> Value {
    let user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let words = user.split_whitespace().count();
    let params = &body["tools"][0]["function"]["parameters"];
    let args = fill(params, "", words);
    if args.as_object().is_some_and(|o| !o.is_empty()) {
        args
    } else {
        json!({ "text": format!("mock model read {words} words") })
    }
}

/// A value for `schema`, the field `name`.
fn fill(schema: &Value, name: &str, words: usize) -> Value {
    if let Some(options) = schema["enum"].as_array() {
        return options
            .iter()
            .find(|o| *o == "neutral")
            .or(options.first())
            .cloned()
            .unwrap_or_default();
    }
    if let Some(example) = schema["examples"].as_array().and_then(|e| e.first()) {
        return example.clone();
    }
    match schema["type"].as_str() {
        Some("object") => {
            let required = schema["required"].as_array().cloned().unwrap_or_default();
            let fields = required
                .iter()
                .filter_map(Value::as_str)
                .map(|field| (field.to_owned(), fill(&schema["properties"][field], field, words)));
            Value::Object(fields.collect())
        }
        Some("array") => json!([fill(&schema["items"], name, words)]),
        Some("number" | "integer") => json!(0),
        Some("boolean") => json!(false),
        _ if schema["format"] == "date" => json!("2024-01-01"),
        _ if name == "text" => json!(format!("mock model read {words} words")),
        _ => json!(format!("mock {name}")),
    }
}
