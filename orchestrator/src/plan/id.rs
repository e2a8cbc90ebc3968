//! A plan's id: the 32 bytes that name a plan on chain and in the store,
//! typed so it is not taken for any other hash.

use std::{fmt, str::FromStr};

use alloy::primitives::B256;
use serde::{Deserialize, Serialize};

/// A plan's id (`0x` + 64 lowercase hex as text, the same as a `B256`'s).
///
/// Plans named by a string use [`crate::plan::Plan::id_from_label`]. The
/// raw bytes go to the chain through [`PlanId::as_b256`] or
/// [`PlanId::into_inner`]; there is deliberately no `Deref` to `B256`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct PlanId(B256);

impl PlanId {
    /// The all-zero id (a plan not yet named).
    pub const ZERO: Self = Self(B256::ZERO);

    /// Wraps raw bytes as a plan id.
    pub const fn new(id: B256) -> Self {
        Self(id)
    }

    /// The id as bytes, for the chain.
    pub const fn as_b256(&self) -> &B256 {
        &self.0
    }

    /// The id as bytes, for the chain.
    pub const fn into_inner(self) -> B256 {
        self.0
    }

    /// The id's raw bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::LowerHex for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

impl FromStr for PlanId {
    type Err = <B256 as FromStr>::Err;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        B256::from_str(s).map(Self)
    }
}

impl From<B256> for PlanId {
    fn from(id: B256) -> Self {
        Self(id)
    }
}

impl From<PlanId> for B256 {
    fn from(id: PlanId) -> Self {
        id.0
    }
}

impl From<&PlanId> for B256 {
    fn from(id: &PlanId) -> Self {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_match_b256() {
        let raw = alloy::primitives::keccak256(b"plan");
        let id = PlanId::from(raw);
        assert_eq!(id.to_string(), raw.to_string());
        assert_eq!(serde_json::to_string(&id).unwrap(), serde_json::to_string(&raw).unwrap());
        assert_eq!(id.to_string().parse::<PlanId>().unwrap(), id);
        let back: PlanId = serde_json::from_str(&serde_json::to_string(&raw).unwrap()).unwrap();
        assert_eq!(B256::from(back), raw);
    }
}
