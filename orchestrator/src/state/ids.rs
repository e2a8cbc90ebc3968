//! The ids the runner passes around: a run's id, typed from the API or the
//! store to the tick and back.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A run's id: its root plan's id as stored (`0x` + 64 hex). Made from the
/// plan id when a run is proposed, or from an id the API or the store
/// names; the store's text is [`RunId::as_str`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// The id as stored and sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for RunId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for RunId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<alloy::primitives::B256> for RunId {
    fn from(plan: alloy::primitives::B256) -> Self {
        Self(plan.to_string())
    }
}

impl From<crate::plan::PlanId> for RunId {
    fn from(plan: crate::plan::PlanId) -> Self {
        Self(plan.to_string())
    }
}

impl From<&crate::plan::PlanId> for RunId {
    fn from(plan: &crate::plan::PlanId) -> Self {
        Self(plan.to_string())
    }
}

impl From<&str> for RunId {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

impl From<String> for RunId {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&String> for RunId {
    fn from(id: &String) -> Self {
        Self(id.clone())
    }
}

impl From<&RunId> for String {
    fn from(id: &RunId) -> Self {
        id.0.clone()
    }
}

impl From<&RunId> for RunId {
    fn from(id: &RunId) -> Self {
        id.clone()
    }
}
