//! The LLM runner through the seam ([`crate::llm::LlmRunner`]): one chat
//! completion per task, its arguments checked against the fields the
//! capability promises, then against the capability's result schema like
//! any answer. A composite capability's delegated part is hired and
//! finished as the offline runner does it.

use std::time::Duration;

use super::{Answering, Brain, Failure, HandlerAnswer, HandlerRequest, builtin::OfflineBrain};
use crate::{
    AgentCard, TaskInput,
    llm::{LlmConfig, LlmRunner},
    offline::composite,
};

/// A hosted model running the card's capabilities.
#[derive(Debug, Clone)]
pub struct LlmBrain {
    card: AgentCard,
    runner: LlmRunner,
    /// Where the provider is (no key, no query).
    at: String,
}

impl LlmBrain {
    /// The model `card` names, at the provider in `config`.
    pub fn new(card: AgentCard, config: &LlmConfig) -> Self {
        let at = super::http::shown(&config.endpoint.base_url);
        Self { card, runner: LlmRunner::new(config), at }
    }
}

impl Brain for LlmBrain {
    fn answer<'a>(&'a self, request: &'a HandlerRequest) -> Answering<'a> {
        Box::pin(async move {
            let capability = request.task.capability.as_str();
            if let Some(part) = composite(capability)
                && request.limits.may_hire.iter().any(|m| m.capability == part.delegable)
            {
                return Ok(OfflineBrain::decide(request).to_json());
            }
            let inputs: Vec<String> = request.inputs.iter().map(|i| i.output.clone()).collect();
            let input = TaskInput {
                spec: &request.spec,
                source: request.source.as_deref(),
                inputs: &inputs,
            };
            // Bounded by the task's deadline too, whatever the provider's
            // own timeouts.
            let timeout = Duration::from_millis(request.limits.timeout_ms);
            let ran =
                tokio::time::timeout(timeout, self.runner.run(&self.card, capability, &input));
            match ran.await {
                Ok(Ok(serde_json::Value::Object(result))) => {
                    Ok(HandlerAnswer::Result(result).to_json())
                }
                Ok(Ok(_)) => Err(Failure::Said("LLM: the result is not an object".into())),
                Ok(Err(e)) => Err(Failure::Said(format!("LLM: {e}"))),
                Err(_) => Err(Failure::TimedOut(timeout)),
            }
        })
    }

    fn inline(&self) -> bool {
        true
    }

    fn label(&self) -> &'static str {
        "LLM"
    }

    fn declines_plainly(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!("the LLM {} at {}", self.card.model, self.at)
    }
}
