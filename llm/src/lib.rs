//! The one way Tessera reaches an OpenAI-compatible provider (workers, the
//! classifier, the council judge): the endpoint and key from the
//! environment, a chat client whose transport does not retry on its own
//! (callers retry exactly once, by policy, when [`CallError::retryable`]
//! says another attempt may succeed), and the forced tool call —
//! [`ForcedTool`] builds the request (one system and one user message, the
//! one function the model must call), [`ForcedTool::call`] sends it with a
//! timeout, and the arguments read back as JSON or as a typed value.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

use std::time::Duration;

use async_openai::{
    Client,
    config::OpenAIConfig,
    error::OpenAIError,
    types::chat::{
        ChatCompletionMessageToolCalls, CreateChatCompletionRequest, CreateChatCompletionResponse,
    },
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Why one attempt at a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The provider answered with an error (its HTTP status and error
    /// object kept: see [`Self::status`]) or could not be reached.
    #[error("provider: {0}")]
    Provider(#[source] OpenAIError),
    /// No answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The answer did not call the tool with valid arguments.
    #[error("malformed answer: {0}")]
    Malformed(String),
}

impl CallError {
    /// The HTTP status the provider answered with, when it answered with
    /// an error status (e.g. 401 for a bad key, 429 when rate limited).
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Provider(OpenAIError::ApiError(e)) => Some(e.status_code.as_u16()),
            _ => None,
        }
    }

    /// The provider's error code, when its error object names one (e.g.
    /// `rate_limit_exceeded`, `invalid_api_key`).
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Provider(OpenAIError::ApiError(e)) => e.api_error.code.as_deref(),
            _ => None,
        }
    }

    /// Whether another attempt may succeed: a timeout, a malformed answer,
    /// an unreachable or garbled provider, rate limiting (429), a request
    /// timeout (408), a conflict (409) or a server error (5xx) — but not an
    /// authentication, permission or request error (any other 4xx), which
    /// the same request meets again.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Timeout(_) | Self::Malformed(_) => true,
            Self::Provider(e) => match e {
                OpenAIError::ApiError(e) => {
                    let status = e.status_code.as_u16();
                    matches!(status, 408 | 409 | 429) || status >= 500
                }
                OpenAIError::InvalidArgument(_) => false,
                _ => true,
            },
        }
    }

    /// Whether the provider refused the key (401) or its permissions (403).
    pub fn is_auth(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }

    /// Whether the provider is rate limiting (429).
    pub fn is_rate_limited(&self) -> bool {
        self.status() == Some(429)
    }
}

/// One chat completion, cut off after `timeout`.
pub async fn complete(
    client: &Client<OpenAIConfig>,
    request: CreateChatCompletionRequest,
    timeout: Duration,
) -> Result<CreateChatCompletionResponse, CallError> {
    let chat = client.chat();
    tokio::time::timeout(timeout, chat.create(request))
        .await
        .map_err(|_| CallError::Timeout(timeout))?
        .map_err(CallError::Provider)
}

/// Default base URL when none is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Where the provider is and the key to it. Debug output hides the key.
#[derive(Clone)]
pub struct Endpoint {
    /// Base URL, e.g. `https://api.openai.com/v1` or any compatible server.
    pub base_url: String,
    api_key: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

/// The first of `names` set to a non-blank value.
pub fn env_var(names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
}

impl Endpoint {
    /// An endpoint at `base_url` with `api_key`.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self { base_url: base_url.into(), api_key: api_key.into() }
    }

    /// From `TESSERA_LLM_API_KEY` (or `OPENAI_API_KEY`) and
    /// `TESSERA_LLM_BASE_URL` (or `OPENAI_BASE_URL`); `None` without a key.
    pub fn from_env() -> Option<Self> {
        let key = env_var(&["TESSERA_LLM_API_KEY", "OPENAI_API_KEY"])?;
        let base = env_var(&["TESSERA_LLM_BASE_URL", "OPENAI_BASE_URL"])
            .unwrap_or_else(|| DEFAULT_BASE_URL.into());
        Some(Self::new(base, key))
    }

    /// A chat client on a plain transport: no library retries.
    pub fn client(&self) -> Client<OpenAIConfig> {
        let config = OpenAIConfig::new()
            .with_api_base(self.base_url.trim_end_matches('/'))
            .with_api_key(self.api_key.clone());
        let transport =
            async_openai::middleware::ReqwestService::new(reqwest_openai::Client::new());
        Client::with_config(config).with_http_service(transport)
    }
}

/// The JSON arguments of the call to `tool` in the first choice, or why
/// there is none.
pub fn tool_arguments(
    response: &CreateChatCompletionResponse,
    tool: &str,
) -> Result<Value, CallError> {
    let malformed = |m: String| CallError::Malformed(m);
    let message = &response.choices.first().ok_or_else(|| malformed("no choices".into()))?.message;
    let call = message
        .tool_calls
        .iter()
        .flatten()
        .find_map(|c| match c {
            ChatCompletionMessageToolCalls::Function(f) if f.function.name == tool => Some(f),
            _ => None,
        })
        .ok_or_else(|| malformed(format!("no `{tool}` call")))?;
    serde_json::from_str(&call.function.arguments)
        .map_err(|e| malformed(format!("arguments are not JSON: {e}")))
}

/// A function the model is forced to call: its name, what it is for, and the
/// JSON schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ForcedTool {
    /// The function's name (what `tool_choice` forces).
    pub name: String,
    /// What the function is for, as the model reads it.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
}

impl ForcedTool {
    /// A tool named `name`, described by `description`, taking `parameters`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self { name: name.into(), description: description.into(), parameters }
    }

    /// The request: `system` and `user` messages to `model`, with this tool
    /// as the only one and `tool_choice` forcing it.
    pub fn request(&self, model: &str, system: &str, user: &str) -> CreateChatCompletionRequest {
        let body = json!({
            "model": model,
            "messages": [
                { "role": "system", "content": system },
                { "role": "user", "content": user },
            ],
            "tools": [{ "type": "function", "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }}],
            "tool_choice": { "type": "function", "function": { "name": self.name } },
        });
        // Every field above is a plain string or JSON value the request type
        // accepts, so this cannot fail for any input.
        serde_json::from_value(body).expect("the request matches the chat-completions schema")
    }

    /// The JSON arguments of the call to this tool in `response`.
    pub fn arguments(&self, response: &CreateChatCompletionResponse) -> Result<Value, CallError> {
        tool_arguments(response, &self.name)
    }

    /// The arguments of the call to this tool, as a `T`.
    pub fn typed_arguments<T: DeserializeOwned>(
        &self,
        response: &CreateChatCompletionResponse,
    ) -> Result<T, CallError> {
        typed(self.arguments(response)?)
    }

    /// Sends `request` (built by [`Self::request`]), cut off after
    /// `timeout`, and reads back the arguments of the call to this tool.
    pub async fn call(
        &self,
        client: &Client<OpenAIConfig>,
        request: CreateChatCompletionRequest,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        self.arguments(&complete(client, request, timeout).await?)
    }

    /// [`Self::call`], with the arguments read as a `T`.
    pub async fn call_as<T: DeserializeOwned>(
        &self,
        client: &Client<OpenAIConfig>,
        request: CreateChatCompletionRequest,
        timeout: Duration,
    ) -> Result<T, CallError> {
        typed(self.call(client, request, timeout).await?)
    }
}

/// Arguments as a `T`, or why they do not fit.
pub fn typed<T: DeserializeOwned>(arguments: Value) -> Result<T, CallError> {
    serde_json::from_value(arguments)
        .map_err(|e| CallError::Malformed(format!("arguments do not match the schema: {e}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn response(name: &str, args: &str) -> CreateChatCompletionResponse {
        serde_json::from_value(json!({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{ "id": "c", "type": "function", "function": { "name": name, "arguments": args } }]
            }}]
        }))
        .unwrap()
    }

    #[test]
    fn reads_the_forced_call() {
        assert_eq!(tool_arguments(&response("t", r#"{"a":1}"#), "t").unwrap(), json!({"a": 1}));
        let err = |name, args| tool_arguments(&response(name, args), "t").unwrap_err().to_string();
        assert!(err("other", "{}").contains("no `t` call"));
        assert!(err("t", "{oops").contains("not JSON"));
    }

    #[test]
    fn request_forces_the_one_tool() {
        let tool = ForcedTool::new("t", "Do it.", json!({"type": "object"}));
        let req = serde_json::to_value(tool.request("m", "sys", "usr")).unwrap();
        assert_eq!(req["model"], "m");
        assert_eq!(req["messages"][0], json!({"role": "system", "content": "sys"}));
        assert_eq!(req["messages"][1], json!({"role": "user", "content": "usr"}));
        assert_eq!(req["tools"].as_array().unwrap().len(), 1);
        assert_eq!(req["tools"][0]["function"]["name"], "t");
        assert_eq!(req["tools"][0]["function"]["description"], "Do it.");
        assert_eq!(req["tools"][0]["function"]["parameters"], json!({"type": "object"}));
        assert_eq!(req["tool_choice"], json!({"type": "function", "function": {"name": "t"}}));
    }

    #[test]
    fn typed_arguments_say_what_does_not_fit() {
        #[derive(Debug, serde::Deserialize, PartialEq)]
        struct Args {
            a: u8,
        }
        let tool = ForcedTool::new("t", "", json!({}));
        assert_eq!(
            tool.typed_arguments::<Args>(&response("t", r#"{"a":1}"#)).unwrap(),
            Args { a: 1 }
        );
        let err = tool.typed_arguments::<Args>(&response("t", r#"{"a":"x"}"#)).unwrap_err();
        assert!(matches!(&err, CallError::Malformed(m) if m.contains("do not match the schema")));
        let err = tool.typed_arguments::<Args>(&response("u", "{}")).unwrap_err();
        assert!(matches!(&err, CallError::Malformed(m) if m.contains("no `t` call")));
    }

    fn status_error(status: u16, code: &str) -> CallError {
        CallError::Provider(OpenAIError::ApiError(async_openai::error::ApiErrorResponse {
            status_code: reqwest_openai::StatusCode::from_u16(status).unwrap(),
            api_error: async_openai::error::ApiError {
                message: "scripted".into(),
                code: Some(code.into()),
                ..Default::default()
            },
        }))
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried_refusals_are_not() {
        let limited = status_error(429, "rate_limit_exceeded");
        assert_eq!((limited.status(), limited.code()), (Some(429), Some("rate_limit_exceeded")));
        assert!(limited.retryable() && limited.is_rate_limited() && !limited.is_auth());
        let refused = status_error(401, "invalid_api_key");
        assert_eq!(refused.status(), Some(401));
        assert!(!refused.retryable() && refused.is_auth() && !refused.is_rate_limited());
        for (status, retryable) in
            [(400, false), (403, false), (404, false), (408, true), (500, true), (503, true)]
        {
            assert_eq!(status_error(status, "x").retryable(), retryable, "{status}");
        }
        assert!(CallError::Timeout(Duration::from_secs(1)).retryable());
        assert!(CallError::Malformed("x".into()).retryable());
        assert_eq!(CallError::Timeout(Duration::from_secs(1)).status(), None);
        assert!(!CallError::Provider(OpenAIError::InvalidArgument("x".into())).retryable());
        let source = std::error::Error::source(&refused).expect("the provider's error is kept");
        assert!(source.to_string().starts_with("401 "), "{source}");
    }

    #[test]
    fn debug_hides_the_key() {
        assert!(!format!("{:?}", Endpoint::new("http://x", "sk-secret")).contains("sk-secret"));
    }
}
