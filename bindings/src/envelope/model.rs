//! The envelope itself: what a sub-task's spec URI resolves to, the
//! [`Parent`] it belongs to, the upstream [`Input`]s it carries (or names,
//! [`Upstream`]) and, for a
//! task of a nested plan, its step path and the labels of the plans around
//! it.

use std::{fmt, str::FromStr};

use alloy::primitives::B256;
use serde::{Deserialize, Serialize};

use super::{BlobHash, EnvelopeError, truncate};

/// Segments a step path has at most (`2.1.0` has three): how deep plans
/// nest.
pub const MAX_PATH_SEGMENTS: usize = 8;

/// Bytes a step path has at most, dots included.
pub const MAX_PATH_BYTES: usize = 64;

/// Bytes a nested plan's label (an entry of [`Envelope::groups`]) has at
/// most.
pub const MAX_GROUP_LABEL_BYTES: usize = 200;

/// The segments of a step path such as `2.1.0`: one to
/// [`MAX_PATH_SEGMENTS`] decimal `u32`s separated by `.`, without sign or
/// leading zeros (`0` itself is fine), at most [`MAX_PATH_BYTES`] in all.
pub fn path_segments(path: &str) -> Result<Vec<u32>, EnvelopeError> {
    let invalid = || EnvelopeError::InvalidPath(truncate(path, 80));
    if path.is_empty() || path.len() > MAX_PATH_BYTES {
        return Err(invalid());
    }
    let mut segments = Vec::new();
    for segment in path.split('.') {
        let digits = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
        if !digits || (segment.len() > 1 && segment.starts_with('0')) {
            return Err(invalid());
        }
        if segments.len() == MAX_PATH_SEGMENTS {
            return Err(invalid());
        }
        segments.push(segment.parse::<u32>().map_err(|_| invalid())?);
    }
    Ok(segments)
}

/// What the envelope belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    /// A plan, by id; written `plan:0x<64 hex>`.
    Plan(B256),
    /// A task, by its on-chain id (decimal); written `task:<id>`.
    Task(String),
}

impl fmt::Display for Parent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Plan(id) => write!(f, "plan:{id}"),
            Self::Task(id) => write!(f, "task:{id}"),
        }
    }
}

impl FromStr for Parent {
    type Err = EnvelopeError;

    /// Accepts `plan:` with or without `0x`, and `task:` followed by a
    /// non-empty run of ASCII digits.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || EnvelopeError::InvalidParent(truncate(s, 80));
        if let Some(hex) = s.strip_prefix("plan:") {
            let hex = hex.strip_prefix("0x").unwrap_or(hex);
            let BlobHash(bytes) = hex.parse().map_err(|_| invalid())?;
            return Ok(Self::Plan(B256::from(bytes)));
        }
        match s.strip_prefix("task:") {
            Some(id)
                if !id.is_empty() && id.len() <= 78 && id.bytes().all(|b| b.is_ascii_digit()) =>
            {
                Ok(Self::Task(id.to_owned()))
            }
            _ => Err(invalid()),
        }
    }
}

impl Serialize for Parent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Parent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The output of an upstream sub-task, handed to a dependent one: carried
/// in the envelope (`output`), or, in a pipeline funded up front, named by
/// its task (`upstream` and `task_id`, `output` empty) for the executor to
/// read from the escrow's delivery once there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// Plan index of the upstream sub-task.
    pub from: u32,
    /// Its on-chain task id, once known, so the executor can check the
    /// source; always set with `upstream`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The upstream output itself (e.g. the translation a summary needs);
    /// empty while only named by `upstream`.
    #[serde(default)]
    pub output: String,
    /// Where the upstream sub-task sits, when the output is not carried:
    /// the executor resolves it from the task's delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
}

impl Input {
    /// An input carrying `output` of sub-task `from` (task `task_id`).
    pub fn carried(from: u32, task_id: Option<String>, output: impl Into<String>) -> Self {
        Self { from, task_id, output: output.into(), upstream: None }
    }

    /// An input naming the upstream task `task_id` (step `path` of
    /// `plan`, the run's sub-task `from`) whose delivery it is.
    pub fn named(from: u32, plan: B256, path: impl Into<String>, task_id: String) -> Self {
        Self {
            from,
            task_id: Some(task_id),
            output: String::new(),
            upstream: Some(Upstream { plan, path: path.into() }),
        }
    }

    /// The upstream task to read the output from: set when the output is
    /// named rather than carried (and not filled in yet).
    pub fn unresolved(&self) -> Option<&str> {
        self.upstream.as_ref().and(self.task_id.as_deref()).filter(|_| self.output.is_empty())
    }
}

/// An upstream sub-task named instead of carried: the plan and the step
/// path (`2.1.0`) it has there. Its task id is the input's `task_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upstream {
    /// The plan's id.
    pub plan: B256,
    /// The step's path in it (`1`, or `2.1.0` in a nested plan).
    pub path: String,
}

/// An upstream result document (the JSON its executor delivered) as the
/// text a dependant works on: its `text` when it has one, else each field
/// on a line (`key: value`, the capability left out).
pub fn readable(v: &serde_json::Value) -> String {
    use serde_json::Value;
    if let Some(text) = v.get("text").and_then(Value::as_str) {
        return text.to_owned();
    }
    let Some(obj) = v.as_object() else { return v.to_string() };
    let mut lines = Vec::new();
    for (key, value) in obj {
        if key == "capability" {
            continue;
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Array(items) if items.is_empty() => continue,
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", "),
            Value::Null => continue,
            other => other.to_string(),
        };
        lines.push(format!("{}: {text}", key.replace('_', " ")));
    }
    lines.join("\n")
}

/// What a sub-task's spec URI resolves to. Deserializing refuses a missing
/// or empty `spec` (as [`Envelope::from_json`] does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawEnvelope")]
pub struct Envelope {
    /// The plan or task this work belongs to.
    pub parent: Parent,
    /// The instruction; never empty.
    pub spec: String,
    /// The capability the sub-task asks for (e.g. `summarize`), so an agent
    /// offering several knows which to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    /// The brief's original material, on root sub-tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Outputs of upstream sub-tasks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<Input>,
    /// The task's step in its (possibly nested) plan, such as `2.1.0`: the
    /// top-level sub-task 2, its child plan's sub-task 1, that one's child
    /// 0. A top-level step has one segment. See [`path_segments`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The labels of the nested plans enclosing the task, outermost first:
    /// one fewer than the path has segments, or none at all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// Wire form, so a missing `spec` is reported as such rather than as a
/// generic JSON error.
#[derive(Deserialize)]
struct RawEnvelope {
    parent: Parent,
    spec: Option<String>,
    #[serde(default)]
    capability: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    inputs: Vec<Input>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    groups: Vec<String>,
}

impl TryFrom<RawEnvelope> for Envelope {
    type Error = EnvelopeError;

    fn try_from(raw: RawEnvelope) -> Result<Self, Self::Error> {
        let spec = raw.spec.filter(|s| !s.is_empty()).ok_or(EnvelopeError::MissingSpec)?;
        let envelope = Self {
            parent: raw.parent,
            spec,
            capability: raw.capability,
            source: raw.source,
            inputs: raw.inputs,
            path: raw.path,
            groups: raw.groups,
        };
        envelope.check_nesting()?;
        Ok(envelope)
    }
}

impl Envelope {
    /// An envelope with no source, inputs, path or groups.
    pub fn new(parent: Parent, spec: impl Into<String>) -> Self {
        Self {
            parent,
            spec: spec.into(),
            capability: None,
            source: None,
            inputs: Vec::new(),
            path: None,
            groups: Vec::new(),
        }
    }

    /// Parses envelope JSON, refusing a missing or empty `spec` and a
    /// malformed `path` or `groups` ([`Envelope::check_nesting`]).
    pub fn from_json(bytes: &[u8]) -> Result<Self, EnvelopeError> {
        let raw: RawEnvelope = serde_json::from_slice(bytes)?;
        raw.try_into()
    }

    /// The envelope as compact JSON; refuses what [`Envelope::from_json`]
    /// would refuse to read back (a malformed `path` or `groups`).
    pub fn to_json(&self) -> Result<Vec<u8>, EnvelopeError> {
        self.check_nesting()?;
        Ok(serde_json::to_vec(self)?)
    }

    /// Checks `path` and `groups`: a well-formed path ([`path_segments`]),
    /// and groups either absent or one per enclosing plan (one fewer than
    /// the path's segments), each at most [`MAX_GROUP_LABEL_BYTES`].
    pub fn check_nesting(&self) -> Result<(), EnvelopeError> {
        let segments = self.path.as_deref().map(path_segments).transpose()?.map_or(0, |s| s.len());
        if self.groups.is_empty() {
            return Ok(());
        }
        let expected = segments.saturating_sub(1);
        if self.groups.len() != expected {
            return Err(EnvelopeError::GroupsMismatch {
                groups: self.groups.len(),
                path: self.path.as_deref().map(|p| truncate(p, 80)),
                expected,
            });
        }
        if let Some((index, label)) =
            self.groups.iter().enumerate().find(|(_, g)| g.len() > MAX_GROUP_LABEL_BYTES)
        {
            return Err(EnvelopeError::GroupLabelTooLong { index, len: label.len() });
        }
        Ok(())
    }
}
