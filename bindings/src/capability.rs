//! Capability names as the registry stores them: a short UTF-8 name, left
//! aligned in a `bytes32` and zero padded (what `cast --format-bytes32-string`
//! produces).

use alloy::primitives::B256;

/// Why a capability name cannot be stored.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CapabilityError {
    /// Empty names are refused by the registry.
    #[error("capability name is empty")]
    Empty,
    /// Longer than 31 bytes (the last byte stays zero so names read back cleanly).
    #[error("capability name `{0}` is longer than 31 bytes")]
    TooLong(String),
    /// A NUL byte would end the name early when read back.
    #[error("capability name `{0}` contains a NUL byte")]
    Nul(String),
}

/// Encodes a capability name (e.g. `"summarize"`) as the registry's `bytes32`.
pub fn encode(name: &str) -> Result<B256, CapabilityError> {
    if name.is_empty() {
        return Err(CapabilityError::Empty);
    }
    if name.len() > 31 {
        return Err(CapabilityError::TooLong(name.to_owned()));
    }
    if name.bytes().any(|b| b == 0) {
        return Err(CapabilityError::Nul(name.to_owned()));
    }
    let mut word = [0u8; 32];
    word[..name.len()].copy_from_slice(name.as_bytes());
    Ok(B256::from(word))
}

/// Decodes a registry `bytes32` back to its name; `None` if it is not a
/// zero-padded UTF-8 string (anyone can register any bytes32).
pub fn decode(word: B256) -> Option<String> {
    let bytes = word.as_slice();
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(32);
    if len == 0 || bytes[len..].iter().any(|&b| b != 0) {
        return None;
    }
    String::from_utf8(bytes[..len].to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_names() {
        for name in ["summarize", "translate", "sentiment-classify", "extract-entities"] {
            let word = encode(name).unwrap();
            assert_eq!(decode(word).as_deref(), Some(name));
        }
    }

    #[test]
    fn refuses_bad_names() {
        assert_eq!(encode(""), Err(CapabilityError::Empty));
        assert!(matches!(encode(&"x".repeat(32)), Err(CapabilityError::TooLong(_))));
        assert!(matches!(encode("a\0b"), Err(CapabilityError::Nul(_))));
        assert!(encode(&"x".repeat(31)).is_ok());
    }

    #[test]
    fn decode_rejects_non_strings() {
        assert_eq!(decode(B256::ZERO), None);
        let mut gap = [0u8; 32];
        gap[0] = b'a';
        gap[5] = b'b';
        assert_eq!(decode(B256::from(gap)), None);
        let mut invalid = [0u8; 32];
        invalid[0] = 0xff;
        assert_eq!(decode(B256::from(invalid)), None);
    }
}
