//! Capability names: the one rule every Tessera component applies to them,
//! and their on-chain form — a short name, left aligned in a `bytes32` and
//! zero padded (what `cast --format-bytes32-string` produces).
//!
//! The registry itself only refuses the zero word, so the rule lives here:
//! a capability name is 1–31 bytes of `[a-z0-9-]` (the last byte of the
//! word stays zero so names read back cleanly). Agent cards, plans and the
//! classifier's proposals are all checked with [`check`], so a plan can never
//! name a capability no agent is able to offer.

use alloy::primitives::B256;

/// Longest capability name, in bytes.
pub const MAX_LEN: usize = 31;

/// Why a capability name is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CapabilityError {
    /// Empty names are refused by the registry.
    #[error("capability name is empty")]
    Empty,
    /// Longer than [`MAX_LEN`] bytes.
    #[error("capability name `{0}` is longer than {MAX_LEN} bytes")]
    TooLong(String),
    /// A byte outside `[a-z0-9-]`.
    #[error("capability name `{0}` has characters other than a-z, 0-9 and '-'")]
    InvalidCharacter(String),
}

/// Checks `name` against the rule: 1–[`MAX_LEN`] bytes of `[a-z0-9-]`.
pub fn check(name: &str) -> Result<(), CapabilityError> {
    if name.is_empty() {
        Err(CapabilityError::Empty)
    } else if name.len() > MAX_LEN {
        Err(CapabilityError::TooLong(name.to_owned()))
    } else if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        Err(CapabilityError::InvalidCharacter(name.to_owned()))
    } else {
        Ok(())
    }
}

/// Whether `name` follows the rule (see [`check`]).
pub fn is_valid(name: &str) -> bool {
    check(name).is_ok()
}

/// Encodes a capability name (e.g. `"summarize"`) as the registry's
/// `bytes32`, refusing names that break the rule.
pub fn encode(name: &str) -> Result<B256, CapabilityError> {
    check(name)?;
    let mut word = [0u8; 32];
    word[..name.len()].copy_from_slice(name.as_bytes());
    Ok(B256::from(word))
}

/// Decodes a registry `bytes32` back to its name; `None` if it is not a
/// zero-padded name that follows the rule (anyone can register any bytes32,
/// but no plan can ask for such a capability).
pub fn decode(word: B256) -> Option<String> {
    let bytes = word.as_slice();
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(32);
    if bytes[len..].iter().any(|&b| b != 0) {
        return None;
    }
    let name = std::str::from_utf8(&bytes[..len]).ok()?;
    is_valid(name).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_names() {
        for name in ["summarize", "translate", "sentiment-classify", "extract-entities", "a", "x1"]
        {
            let word = encode(name).unwrap();
            assert_eq!(decode(word).as_deref(), Some(name));
        }
        let longest = "x".repeat(MAX_LEN);
        assert_eq!(decode(encode(&longest).unwrap()), Some(longest));
    }

    #[test]
    fn refuses_bad_names() {
        assert_eq!(encode(""), Err(CapabilityError::Empty));
        assert!(matches!(encode(&"x".repeat(32)), Err(CapabilityError::TooLong(_))));
        for bad in ["a\0b", "Summarize", "sum marize", "summarize!", "résumé", "extract_entities"]
        {
            assert!(
                matches!(encode(bad), Err(CapabilityError::InvalidCharacter(_))),
                "{bad:?} is refused"
            );
            assert!(!is_valid(bad), "{bad:?}");
        }
        assert!(is_valid("sentiment-classify"));
    }

    #[test]
    fn decode_rejects_words_no_plan_can_name() {
        assert_eq!(decode(B256::ZERO), None);
        let mut gap = [0u8; 32];
        gap[0] = b'a';
        gap[5] = b'b';
        assert_eq!(decode(B256::from(gap)), None);
        let mut invalid = [0u8; 32];
        invalid[0] = 0xff;
        assert_eq!(decode(B256::from(invalid)), None);
        let mut upper = [0u8; 32];
        upper[..3].copy_from_slice(b"ABC");
        assert_eq!(decode(B256::from(upper)), None, "registered, but not a valid name");
        assert_eq!(decode(B256::from([b'a'; 32])), None, "32 bytes leave no terminator");
    }
}
