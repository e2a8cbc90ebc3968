//! One seam for every brain: whatever does a worker's work — the built-in
//! offline runner, the LLM runner, or the operator's own code behind
//! `handler: {http: …}` or `handler: {command: […]}` — takes a
//! [`HandlerRequest`] and gives a [`HandlerAnswer`]: a result, a decline,
//! or a request to hire sub-agents ([`wire`], published as
//! `docs/handler.schema.json`). The worker ([`crate::runtime`]) keeps
//! everything chain- and blob-related and calls [`think`] for every task:
//! there is one path.
//!
//! Every answer is checked the same way, whoever gave it ([`think`]): a
//! JSON object with exactly one of `result`, `decline` and `hire`; a result
//! passing the capability's result schema within the size cap; a decline
//! reason one line and bounded; a hire within the card's `delegates`. What
//! fails a check, fails, times out or declines becomes a [`Verdict::Decline`]
//! with a reason fit to publish (no URL, no environment, no key):
//! `handler timed out after 2 s`, `handler answered off-schema: the result
//! field .haiku: is required and missing`, `handler declined: <its
//! reason>`, `handler failed: HTTP 500`.
//!
//! The offline and LLM brains answer inline ([`Brain::inline`]); a
//! handler's calls run off the worker's pass, a few at a time, so a slow
//! handler never holds up the worker's other tasks
//! ([`crate::runtime::calls`]).

use std::{fmt, future::Future, path::Path, pin::Pin, sync::Arc, time::Duration};

use serde_json::Value;

use crate::{AgentCard, llm::LlmConfig};

mod builtin;
mod command;
mod http;
mod llm;
pub mod wire;

pub use builtin::OfflineBrain;
pub use command::CommandBrain;
pub use http::HttpBrain;
pub use llm::LlmBrain;
pub use wire::{
    HandlerAnswer, HandlerRequest, Hire, Hired, MAX_ANSWER_BYTES, MAX_HIRES, OffSchema,
};

/// A brain's answer on the way back, before it is checked.
pub type Answering<'a> = Pin<Box<dyn Future<Output = Result<Value, Failure>> + Send + 'a>>;

/// Why a brain gave no answer. The message is published with the decline:
/// it never holds a URL, an error's text from a remote side, or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// No answer within the call's timeout.
    #[error("timed out after {}", seconds(*.0))]
    TimedOut(Duration),
    /// The call failed: `HTTP 500`, `exit status 3`, `cannot connect`.
    #[error("failed: {0}")]
    Failed(String),
    /// An answer that is not the wire format ([`OffSchema`]).
    #[error("answered off-schema: {0}")]
    OffSchema(String),
    /// A failure in the brain's own words, published as they are (the LLM
    /// runner's `LLM: no answer within 60 s`).
    #[error("{0}")]
    Said(String),
}

impl Failure {
    /// The reason published for this failure of a brain labelled `label`.
    pub fn reason(&self, label: &str) -> String {
        match self {
            Self::Said(words) => words.clone(),
            other => format!("{label} {other}"),
        }
    }
}

/// `2 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// What to do with a task, from a checked answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Deliver this result.
    Deliver(Value),
    /// Fund these child tasks, then ask again with their results.
    Hire(Vec<Hire>),
    /// Decline the task on chain with this reason (one line).
    Decline(String),
}

/// Whatever does a worker's work: one JSON request in, one JSON answer out
/// (the [`wire`] format), unchecked — [`think`] checks it.
pub trait Brain: fmt::Debug + Send + Sync {
    /// Answers `request`, within `request.limits.timeout_ms`.
    fn answer<'a>(&'a self, request: &'a HandlerRequest) -> Answering<'a>;

    /// Whether the worker asks inline, on its pass (a brain that answers
    /// at once); `false` runs the calls off the pass.
    fn inline(&self) -> bool {
        false
    }

    /// Who answered, for a reason: `handler`, `LLM`.
    fn label(&self) -> &'static str {
        "handler"
    }

    /// Whether a decline of this brain is published as its reason alone
    /// (the built-in runner's own words) rather than as `<label> declined: …`.
    fn declines_plainly(&self) -> bool {
        false
    }

    /// The largest answer taken, in bytes (the request's
    /// `limits.max_answer_bytes`).
    fn max_answer_bytes(&self) -> usize {
        MAX_ANSWER_BYTES
    }

    /// What the worker logs at start: which brain, never a secret.
    fn describe(&self) -> String;
}

/// Asks `brain` about `request` and checks the answer ([`HandlerAnswer::from_json`]):
/// what to do with the task.
pub async fn think(brain: &dyn Brain, request: &HandlerRequest) -> Verdict {
    let label = brain.label();
    let value = match brain.answer(request).await {
        Ok(value) => value,
        Err(failure) => return Verdict::Decline(failure.reason(label)),
    };
    verdict(brain, request, value)
}

/// The verdict on `value`, `brain`'s answer to `request`.
pub fn verdict(brain: &dyn Brain, request: &HandlerRequest, value: Value) -> Verdict {
    let label = brain.label();
    let size = serde_json::to_vec(&value).map_or(usize::MAX, |b| b.len());
    let cap = request.limits.max_answer_bytes;
    let checked = if size > cap {
        Err(OffSchema(format!("the answer is {size} bytes, over the cap of {cap}")))
    } else {
        HandlerAnswer::from_json(value, request)
    };
    match checked {
        Ok(HandlerAnswer::Result(result)) => Verdict::Deliver(Value::Object(result)),
        Ok(HandlerAnswer::Hire(hires)) => Verdict::Hire(hires),
        Ok(HandlerAnswer::Decline { reason }) if brain.declines_plainly() => {
            Verdict::Decline(reason)
        }
        Ok(HandlerAnswer::Decline { reason }) => {
            Verdict::Decline(format!("{label} declined: {reason}"))
        }
        Err(e) => Verdict::Decline(Failure::OffSchema(e.0).reason(label)),
    }
}

/// The brain a worker running `card` uses: its handler (a `command`
/// resolved against `card_dir`, the card file's directory, when given), the
/// LLM at `llm` for a card naming a model, or the built-in offline runner.
pub fn for_card(
    card: &AgentCard,
    card_dir: Option<&Path>,
    llm: Option<&LlmConfig>,
) -> Arc<dyn Brain> {
    if let Some(handler) = &card.handler {
        if let Some(url) = &handler.http {
            return Arc::new(HttpBrain::new(url));
        }
        if let Some(argv) = &handler.command {
            return Arc::new(CommandBrain::new(argv.clone(), card_dir));
        }
    }
    match llm {
        Some(config) if !card.is_offline() => Arc::new(LlmBrain::new(card.clone(), config)),
        _ => Arc::new(OfflineBrain),
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
