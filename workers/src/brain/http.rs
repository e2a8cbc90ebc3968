//! `handler: {http: <url>}`: each task `POST`ed to the operator's service
//! as the request JSON; the answer is the response body.
//!
//! Bounded: the whole exchange within the request's `timeout_ms` (the
//! card's `timeout_secs`, cut to the time left before the task's deadline);
//! status 200 only (a redirect is not followed: `HTTP 302`); at most
//! `max_answer_bytes` read; JSON required. Nothing of the URL or of what
//! answered goes into a reason: `handler failed: HTTP 500`, `handler
//! failed: cannot connect`.

use std::time::Duration;

use serde_json::Value;

use super::{Answering, Brain, Failure, HandlerRequest};

/// The operator's HTTP service.
#[derive(Debug, Clone)]
pub struct HttpBrain {
    url: String,
    /// The client, or why it could not be built (then every call fails,
    /// saying so in the log).
    client: Result<reqwest::Client, String>,
}

impl HttpBrain {
    /// Posts to `url`, following no redirect.
    pub fn new(url: &str) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string());
        Self { url: url.to_owned(), client }
    }

    async fn post(&self, request: &HandlerRequest) -> Result<Value, Failure> {
        let client = self.client.as_ref().map_err(|e| {
            tracing::error!(error = %e, "no HTTP client for the handler");
            Failure::Failed("the worker has no HTTP client".into())
        })?;
        let mut response =
            client.post(&self.url).json(request).send().await.map_err(|e| failed(&e))?;
        let status = response.status();
        if status != reqwest::StatusCode::OK {
            return Err(Failure::Failed(format!("HTTP {}", status.as_u16())));
        }
        let cap = request.limits.max_answer_bytes;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| failed(&e))? {
            if body.len() + chunk.len() > cap {
                return Err(Failure::OffSchema(format!("the answer is over {cap} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body)
            .map_err(|e| Failure::OffSchema(format!("the answer is not JSON ({e})")))
    }
}

impl Brain for HttpBrain {
    fn answer<'a>(&'a self, request: &'a HandlerRequest) -> Answering<'a> {
        Box::pin(async move {
            let timeout = Duration::from_millis(request.limits.timeout_ms);
            match tokio::time::timeout(timeout, self.post(request)).await {
                Ok(answer) => answer,
                Err(_) => Err(Failure::TimedOut(timeout)),
            }
        })
    }

    fn describe(&self) -> String {
        format!("the HTTP handler at {}", shown(&self.url))
    }
}

/// What a transport failure is, in words that hold nothing of the URL.
fn failed(e: &reqwest::Error) -> Failure {
    let what = if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the answer could not be read"
    } else if e.is_builder() || e.is_request() {
        "the request could not be sent"
    } else {
        "no answer"
    };
    Failure::Failed(what.to_owned())
}

/// `url` fit to log: no user, password, query or fragment.
pub(super) fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "an unreadable URL".to_owned(),
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
