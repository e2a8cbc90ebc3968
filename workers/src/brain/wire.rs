//! The handler wire format, version 1: one JSON object in
//! ([`HandlerRequest`]), one JSON object out ([`HandlerAnswer`]). The same
//! shapes are published as a JSON Schema in `docs/handler.schema.json`.
//!
//! An answer is a stranger's input: [`HandlerAnswer::parse`] reads it
//! within [`Limits::max_answer_bytes`], refuses anything but an object
//! with exactly one of `result`, `decline` and `hire`, and checks each
//! against the request — a result against its capability's schema, a
//! decline reason bounded to one line, a hire against what the card may
//! hire. Every refusal says what is wrong, naming the field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tessera_bindings::describe::ResultSchema;

use crate::runtime::one_line;

/// The wire format's version, sent as `tessera`.
pub const WIRE_VERSION: u32 = 1;
/// Largest answer read from a handler, in bytes (the whole answer).
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// Most child tasks one answer may ask to hire.
pub const MAX_HIRES: usize = 4;
/// Longest spec of a child task a handler asks for, in bytes.
pub const MAX_HIRE_SPEC_BYTES: usize = 4096;
/// Longest decline reason kept, in characters (longer ones are cut).
pub const MAX_DECLINE_CHARS: usize = 280;

/// What a handler is asked: one task, its verified and decoded envelope,
/// the results of the children hired for it (on a call after a hire) and
/// the bounds of its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerRequest {
    /// The wire format's version, [`WIRE_VERSION`].
    pub tessera: u32,
    /// The task on chain.
    pub task: TaskInfo,
    /// What the client asked for.
    pub spec: String,
    /// Material the funder attached, if any.
    pub source: Option<String>,
    /// The upstream results this task names, in order.
    pub inputs: Vec<InputItem>,
    /// The children hired for this task and their results: present
    /// (possibly empty) only on a call after a hire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hired: Option<Vec<Hired>>,
    /// The bounds of the answer.
    pub limits: Limits,
    /// The capability's published result schema, when it has one.
    pub result_schema: Option<ResultSchema>,
}

/// The task as the escrow holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskInfo {
    /// The task id, a decimal string (uint256).
    pub id: String,
    /// The capability asked for.
    pub capability: String,
    /// What the task pays, USDC base units, a decimal string.
    pub amount: String,
    /// Who funded it (checksummed address).
    pub funder: String,
    /// Whose task it is (checksummed address).
    pub client: String,
    /// The plan id (32-byte hex).
    pub plan: String,
    /// The parent task id, a decimal string; `"0"` when none.
    pub parent: String,
    /// The deadline, unix seconds (chain time).
    pub deadline: u64,
    /// The chain's id.
    pub chain_id: u64,
}

/// One upstream result the task names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputItem {
    /// The upstream step's plan index.
    pub from: u32,
    /// The upstream task id (decimal), when known.
    pub task: Option<String>,
    /// The upstream result as text.
    pub output: String,
}

/// A child task hired for this task, and what it delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hired {
    /// The capability hired.
    pub capability: String,
    /// The child task id (decimal).
    pub task: String,
    /// The agent that did it (checksummed address).
    pub executor: String,
    /// What the child task paid it, USDC base units (decimal).
    pub paid: String,
    /// The spec it was given.
    pub spec: String,
    /// What it delivered (checked against its capability's schema, and paid).
    pub result: Value,
}

/// The bounds of an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The worker gives up after this many milliseconds.
    pub timeout_ms: u64,
    /// The largest answer read, in bytes.
    pub max_answer_bytes: usize,
    /// What the handler may hire: the card's `delegates`.
    pub may_hire: Vec<MayHire>,
}

/// A capability the handler may hire, and the most one child of it costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MayHire {
    /// The capability.
    pub capability: String,
    /// The most one child task of it costs, USDC base units (decimal).
    pub max_price: String,
}

/// A child task a handler asks the worker to fund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hire {
    /// The capability to hire (one of `limits.may_hire`).
    pub capability: String,
    /// What the child is asked, non-empty, at most [`MAX_HIRE_SPEC_BYTES`].
    pub spec: String,
    /// Material handed to the child.
    #[serde(default)]
    pub source: Option<String>,
}

/// A handler's answer: exactly one of a result, a decline, a hire.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerAnswer {
    /// The task's result: a JSON object.
    Result(Map<String, Value>),
    /// It will not do the task: why, one line.
    Decline {
        /// Why.
        reason: String,
    },
    /// Fund these child tasks, then call again with their results.
    Hire(Vec<Hire>),
}

/// Why an answer is refused (it is "off-schema"); the message names the
/// part at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OffSchema(pub String);

fn off<T>(why: impl Into<String>) -> Result<T, OffSchema> {
    Err(OffSchema(why.into()))
}

impl HandlerRequest {
    /// The capabilities hired for this task already.
    pub fn hired_capabilities(&self) -> impl Iterator<Item = &str> {
        self.hired.iter().flatten().map(|h| h.capability.as_str())
    }
}

impl HandlerAnswer {
    /// Reads an answer to `request` from its bytes: within the size cap,
    /// JSON, and checked ([`Self::from_json`]).
    pub fn parse(bytes: &[u8], request: &HandlerRequest) -> Result<Self, OffSchema> {
        let cap = request.limits.max_answer_bytes;
        if bytes.len() > cap {
            return off(format!("the answer is {} bytes, over the cap of {cap}", bytes.len()));
        }
        let value: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => return off(format!("the answer is not JSON ({e})")),
        };
        Self::from_json(value, request)
    }

    /// Checks an answer to `request`: an object with exactly one of
    /// `result` (an object passing `request.result_schema`), `decline`
    /// (`{"reason": …}`, made one line of at most [`MAX_DECLINE_CHARS`])
    /// and `hire` (1-[`MAX_HIRES`] children of capabilities in
    /// `limits.may_hire`, each once per task).
    pub fn from_json(value: Value, request: &HandlerRequest) -> Result<Self, OffSchema> {
        let Value::Object(answer) = value else {
            return off("the answer is not a JSON object");
        };
        if answer.len() != 1 {
            let keys: Vec<&str> = answer.keys().map(String::as_str).collect();
            return off(format!(
                "the answer holds exactly one of result, decline, hire (it has: {})",
                if keys.is_empty() { "nothing".into() } else { keys.join(", ") }
            ));
        }
        let Some((key, body)) = answer.into_iter().next() else {
            return off("the answer is empty");
        };
        match key.as_str() {
            "result" => check_result(body, request).map(Self::Result),
            "decline" => check_decline(body).map(|reason| Self::Decline { reason }),
            "hire" => check_hire(body, request).map(Self::Hire),
            other => off(format!("the answer holds result, decline or hire, not {other:?}")),
        }
    }

    /// The answer as its wire JSON.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Result(r) => serde_json::json!({ "result": r }),
            Self::Decline { reason } => serde_json::json!({ "decline": { "reason": reason } }),
            Self::Hire(h) => serde_json::json!({ "hire": h }),
        }
    }
}

fn check_result(body: Value, request: &HandlerRequest) -> Result<Map<String, Value>, OffSchema> {
    let Value::Object(result) = body else {
        return off("the result is not a JSON object");
    };
    let result = Value::Object(result);
    if let Some(schema) = &request.result_schema
        && let Err(e) = schema.check(&result)
    {
        return off(e.to_string());
    }
    let Value::Object(result) = result else { unreachable!("an object above") };
    Ok(result)
}

fn check_decline(body: Value) -> Result<String, OffSchema> {
    let reason = match body {
        Value::Object(mut d) if d.len() == 1 => match d.remove("reason") {
            Some(Value::String(r)) => r,
            Some(_) => return off("decline.reason is not a string"),
            None => return off("decline holds only a reason"),
        },
        Value::Object(_) => return off("decline holds only a reason"),
        _ => return off("decline is not an object"),
    };
    let line = one_line(&reason);
    if line.is_empty() {
        return off("decline.reason is empty");
    }
    Ok(match line.char_indices().nth(MAX_DECLINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    })
}

fn check_hire(body: Value, request: &HandlerRequest) -> Result<Vec<Hire>, OffSchema> {
    let Value::Array(items) = body else {
        return off("hire is not a list");
    };
    if items.is_empty() || items.len() > MAX_HIRES {
        return off(format!("hire lists 1-{MAX_HIRES} children, not {}", items.len()));
    }
    let may: Vec<&str> = request.limits.may_hire.iter().map(|m| m.capability.as_str()).collect();
    let mut hires: Vec<Hire> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let hire: Hire = match serde_json::from_value(item) {
            Ok(h) => h,
            Err(e) => return off(format!("hire[{i}]: {e}")),
        };
        let cap = hire.capability.as_str();
        if !may.contains(&cap) {
            let allowed = if may.is_empty() { "nothing".into() } else { may.join(", ") };
            return off(format!(
                "hire[{i}].capability {cap:?} is not among the card's delegates (may hire: \
                 {allowed})"
            ));
        }
        if request.hired_capabilities().any(|h| h == cap)
            || hires.iter().any(|h| h.capability == cap)
        {
            return off(format!("hire[{i}].capability {cap:?} is hired once per task"));
        }
        if hire.spec.trim().is_empty() {
            return off(format!("hire[{i}].spec is empty"));
        }
        if hire.spec.len() > MAX_HIRE_SPEC_BYTES {
            return off(format!(
                "hire[{i}].spec is {} bytes, over {MAX_HIRE_SPEC_BYTES}",
                hire.spec.len()
            ));
        }
        hires.push(hire);
    }
    Ok(hires)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "schema_tests.rs"]
mod schema_tests;
