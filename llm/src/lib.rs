//! The one way Tessera reaches an OpenAI-compatible provider (workers, the
//! classifier, the council judge): the endpoint and key from the
//! environment, a chat client whose transport does not retry on its own
//! (callers retry exactly once, by policy), and the forced tool call read
//! back as JSON arguments.

use std::time::Duration;

use async_openai::{
    Client,
    config::OpenAIConfig,
    types::chat::{
        ChatCompletionMessageToolCalls, CreateChatCompletionRequest, CreateChatCompletionResponse,
    },
};
use serde_json::Value;

/// Why one attempt at a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The provider answered with an error or could not be reached.
    #[error("provider: {0}")]
    Provider(String),
    /// No answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The answer did not call the tool with valid arguments.
    #[error("malformed answer: {0}")]
    Malformed(String),
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
        .map_err(|e| CallError::Provider(e.to_string()))
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
) -> Result<Value, String> {
    let message = &response.choices.first().ok_or("no choices")?.message;
    let call = message
        .tool_calls
        .iter()
        .flatten()
        .find_map(|c| match c {
            ChatCompletionMessageToolCalls::Function(f) if f.function.name == tool => Some(f),
            _ => None,
        })
        .ok_or_else(|| format!("no `{tool}` call"))?;
    serde_json::from_str(&call.function.arguments)
        .map_err(|e| format!("arguments are not JSON: {e}"))
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
        assert!(tool_arguments(&response("other", "{}"), "t").unwrap_err().contains("no `t` call"));
        assert!(tool_arguments(&response("t", "{oops"), "t").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn debug_hides_the_key() {
        assert!(!format!("{:?}", Endpoint::new("http://x", "sk-secret")).contains("sk-secret"));
    }
}
