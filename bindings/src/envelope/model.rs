//! The envelope itself: what a sub-task's spec URI resolves to, the
//! [`Parent`] it belongs to and the upstream [`Input`]s it carries.

use std::{fmt, str::FromStr};

use alloy::primitives::B256;
use serde::{Deserialize, Serialize};

use super::{BlobHash, EnvelopeError, truncate};

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

/// The output of an upstream sub-task, handed to a dependent one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// Plan index of the upstream sub-task.
    pub from: u32,
    /// Its on-chain task id, once known, so the executor can check the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The upstream output itself (e.g. the translation a summary needs).
    pub output: String,
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
}

impl TryFrom<RawEnvelope> for Envelope {
    type Error = EnvelopeError;

    fn try_from(raw: RawEnvelope) -> Result<Self, Self::Error> {
        let spec = raw.spec.filter(|s| !s.is_empty()).ok_or(EnvelopeError::MissingSpec)?;
        Ok(Self {
            parent: raw.parent,
            spec,
            capability: raw.capability,
            source: raw.source,
            inputs: raw.inputs,
        })
    }
}

impl Envelope {
    /// An envelope with no source or inputs.
    pub fn new(parent: Parent, spec: impl Into<String>) -> Self {
        Self { parent, spec: spec.into(), capability: None, source: None, inputs: Vec::new() }
    }

    /// Parses envelope JSON, refusing a missing or empty `spec`.
    pub fn from_json(bytes: &[u8]) -> Result<Self, EnvelopeError> {
        let raw: RawEnvelope = serde_json::from_slice(bytes)?;
        raw.try_into()
    }

    /// The envelope as compact JSON.
    pub fn to_json(&self) -> Result<Vec<u8>, EnvelopeError> {
        Ok(serde_json::to_vec(self)?)
    }
}
