//! The built-in offline runner through the seam: each capability run by
//! [`crate::offline::run`], at once, on the worker's pass.
//!
//! A composite capability (`brief`: a translation, then its summary) whose
//! delegable part the card may hire answers `hire` for that part on the
//! first call and builds its result from the child's on the call after
//! ([`crate::offline::brief_of`], the child named in `delegated`); a card
//! that delegates nothing has it all done here.

use serde_json::Value;
use tessera_bindings::envelope::HARD_MAX_BYTES;

use super::{Answering, Brain, HandlerAnswer, HandlerRequest, Hire, Hired};
use crate::{
    OFFLINE_CAPABILITIES, Output, TaskInput,
    offline::{DelegatedWork, brief_of, composite},
    run,
};

/// The built-in deterministic runner.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineBrain;

impl OfflineBrain {
    /// The runner's answer to `request`.
    pub fn decide(request: &HandlerRequest) -> HandlerAnswer {
        let capability = request.task.capability.as_str();
        if let Some(part) = composite(capability)
            && request.limits.may_hire.iter().any(|m| m.capability == part.delegable)
        {
            let hired = request.hired.iter().flatten().find(|h| h.capability == part.delegable);
            return match hired {
                Some(child) => finish(request, child),
                None => HandlerAnswer::Hire(vec![Hire {
                    capability: part.delegable.to_owned(),
                    spec: request.spec.clone(),
                    source: material(request),
                }]),
            };
        }
        let inputs: Vec<String> = request.inputs.iter().map(|i| i.output.clone()).collect();
        let input =
            TaskInput { spec: &request.spec, source: request.source.as_deref(), inputs: &inputs };
        match run(capability, &input) {
            Ok(output) => result(&output),
            Err(e) => HandlerAnswer::Decline { reason: e.to_string() },
        }
    }
}

impl Brain for OfflineBrain {
    fn answer<'a>(&'a self, request: &'a HandlerRequest) -> Answering<'a> {
        Box::pin(async move { Ok(Self::decide(request).to_json()) })
    }

    fn inline(&self) -> bool {
        true
    }

    fn label(&self) -> &'static str {
        "the offline runner"
    }

    fn declines_plainly(&self) -> bool {
        true
    }

    fn max_answer_bytes(&self) -> usize {
        HARD_MAX_BYTES
    }

    fn describe(&self) -> String {
        format!("the built-in offline runner ({})", OFFLINE_CAPABILITIES.join(", "))
    }
}

/// The material the delegated part works on: the source, else the
/// upstream results (the spec itself says the rest).
fn material(request: &HandlerRequest) -> Option<String> {
    if let Some(source) = request.source.as_deref().filter(|s| !s.trim().is_empty()) {
        return Some(source.to_owned());
    }
    let inputs: Vec<&str> =
        request.inputs.iter().map(|i| i.output.trim()).filter(|s| !s.is_empty()).collect();
    (!inputs.is_empty()).then(|| inputs.join("\n\n"))
}

/// The composite's result from its delegated part's.
fn finish(request: &HandlerRequest, child: &Hired) -> HandlerAnswer {
    let Some(text) = child.result.get("text").and_then(Value::as_str) else {
        return HandlerAnswer::Decline { reason: "the delegated result has no text".into() };
    };
    let work = DelegatedWork {
        capability: child.capability.clone(),
        task: child.task.clone(),
        executor: child.executor.clone(),
        paid: child.paid.clone(),
    };
    match brief_of(text, &request.spec, Some(work)) {
        Ok(brief) => result(&Output::Brief(brief)),
        Err(e) => HandlerAnswer::Decline { reason: e.to_string() },
    }
}

fn result(output: &Output) -> HandlerAnswer {
    match output.to_json() {
        Value::Object(map) => HandlerAnswer::Result(map),
        // Every output is a tagged struct: an object.
        other => HandlerAnswer::Decline { reason: format!("the offline runner gave {other}") },
    }
}
