//! Where a content-addressed blob may be fetched: a `sha256:` URI may carry a
//! location hint, `sha256:<64 hex>?src=<base-url>`, naming an HTTP(S) base
//! under which `GET <base-url>/<hex>` answers the bytes. The hash stays the
//! only thing trusted: a reader may follow the hint, and refuses whatever
//! it answers unless it hashes to the URI.

use std::{fmt, str::FromStr};

use super::{BlobHash, EnvelopeError, truncate};

/// The longest base URL a hint may carry, in bytes.
pub const MAX_HINT_BYTES: usize = 256;

const SHA256_PREFIX: &str = "sha256:";
const DATA_PREFIX: &str = "data:";
const SRC_PARAM: &str = "src=";

/// Why a base URL cannot be a location hint (or a gateway).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HintError {
    /// Longer than [`MAX_HINT_BYTES`].
    #[error("blob URL is {0} bytes, over the limit of {MAX_HINT_BYTES}")]
    TooLong(usize),
    /// Neither `http://` nor `https://`.
    #[error("blob URL `{0}` is not http:// or https://")]
    NotHttp(String),
    /// A byte outside printable ASCII, whitespace, `?` or `#`.
    #[error("blob URL `{0}` has whitespace, `?`, `#` or a byte outside printable ASCII")]
    ForbiddenChar(String),
    /// No host, credentials in it, or otherwise not a URL.
    #[error("blob URL `{0}` is not a URL with a host and no credentials")]
    Malformed(String),
    /// A `sha256:` URI's query is not `src=<base-url>`.
    #[error("blob URI query `{0}` is not `src=<base-url>`")]
    UnknownQuery(String),
}

/// A base URL serving blobs by hash: `GET <base>/<64 hex>` answers the
/// bytes. HTTP(S), printable ASCII without whitespace, `?` or `#`, at most
/// [`MAX_HINT_BYTES`] bytes; trailing `/` are dropped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlobUrl(String);

impl BlobUrl {
    /// Checks and normalizes `s` (see the type docs).
    pub fn parse(s: &str) -> Result<Self, HintError> {
        if s.len() > MAX_HINT_BYTES {
            return Err(HintError::TooLong(s.len()));
        }
        if !s.bytes().all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#') {
            return Err(HintError::ForbiddenChar(truncate(s, 80)));
        }
        let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(HintError::NotHttp(truncate(s, 80)));
        }
        let base = s.trim_end_matches('/');
        let url = reqwest::Url::parse(base).map_err(|_| HintError::Malformed(truncate(s, 80)))?;
        if url.host().is_none() || !url.username().is_empty() || url.password().is_some() {
            return Err(HintError::Malformed(truncate(s, 80)));
        }
        Ok(Self(base.to_owned()))
    }

    /// The base URL, without a trailing `/`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the blob named `hash` is: `<base>/<hex>`.
    pub fn blob(&self, hash: &BlobHash) -> String {
        format!("{}/{hash}", self.0)
    }
}

impl fmt::Display for BlobUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for BlobUrl {
    type Err = HintError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A content-addressed URI read: the blob's hash and where it may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRef {
    /// What the bytes must hash to.
    pub hash: BlobHash,
    /// The writer's location hint, if the URI carries one.
    pub hint: Option<BlobUrl>,
}

impl BlobRef {
    /// The blob a URI names: `None` for an inline `data:` URI, the hash and
    /// hint of `sha256:<hex>[?src=<base-url>]`; any other scheme, a bad
    /// digest or a bad hint is an error.
    pub fn of_uri(uri: &str) -> Result<Option<Self>, EnvelopeError> {
        if strip_prefix_ci(uri, DATA_PREFIX).is_some() {
            return Ok(None);
        }
        let Some(rest) = strip_prefix_ci(uri, SHA256_PREFIX) else {
            let scheme = uri.split_once(':').map_or(uri, |(scheme, _)| scheme);
            return Err(EnvelopeError::UnknownScheme(truncate(scheme, 32)));
        };
        let (hex, query) = match rest.split_once('?') {
            Some((hex, query)) => (hex, Some(query)),
            None => (rest, None),
        };
        let hash: BlobHash = hex.parse()?;
        let hint = match query {
            None => None,
            Some(query) => {
                let src = query
                    .strip_prefix(SRC_PARAM)
                    .ok_or_else(|| HintError::UnknownQuery(truncate(query, 80)))?;
                Some(BlobUrl::parse(src)?)
            }
        };
        Ok(Some(Self { hash, hint }))
    }
}

impl fmt::Display for BlobRef {
    /// `sha256:<hex>`, with `?src=<base-url>` when hinted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SHA256_PREFIX}{}", self.hash)?;
        if let Some(hint) = &self.hint {
            write!(f, "?{SRC_PARAM}{hint}")?;
        }
        Ok(())
    }
}

pub(super) fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash() -> BlobHash {
        BlobHash::of(b"blob")
    }

    #[test]
    fn urls_are_checked_and_normalized() {
        let url = BlobUrl::parse("http://10.0.0.7:8080/blobs/").unwrap();
        assert_eq!(url.as_str(), "http://10.0.0.7:8080/blobs");
        assert_eq!(url.blob(&hash()), format!("http://10.0.0.7:8080/blobs/{}", hash()));
        assert_eq!(BlobUrl::parse("HTTPS://example.org").unwrap().as_str(), "HTTPS://example.org");
        let long = format!("http://h/{}", "a".repeat(MAX_HINT_BYTES));
        for (bad, want) in [
            ("ftp://h/x", "NotHttp"),
            ("file:///etc/passwd", "NotHttp"),
            ("//h/x", "NotHttp"),
            ("http://h/a b", "ForbiddenChar"),
            ("http://h/x?y=1", "ForbiddenChar"),
            ("http://h/x#y", "ForbiddenChar"),
            ("http://h/é", "ForbiddenChar"),
            ("http://h/\n", "ForbiddenChar"),
            ("http://", "Malformed"),
            ("http://user:pw@h/x", "Malformed"),
            (long.as_str(), "TooLong"),
        ] {
            let err = BlobUrl::parse(bad).unwrap_err();
            assert!(format!("{err:?}").starts_with(want), "{bad:?}: {err:?}");
        }
        assert!(BlobUrl::parse(&format!("http://h/{}", "a".repeat(MAX_HINT_BYTES - 9))).is_ok());
    }

    #[test]
    fn uris_with_and_without_hints_parse_and_print_back() {
        let plain = format!("sha256:{}", hash());
        let r = BlobRef::of_uri(&plain).unwrap().unwrap();
        assert_eq!(r, BlobRef { hash: hash(), hint: None });
        assert_eq!(r.to_string(), plain);
        let hinted = format!("sha256:{}?src=http://127.0.0.1:9/blobs", hash());
        let r = BlobRef::of_uri(&hinted).unwrap().unwrap();
        assert_eq!(r.hint.as_ref().map(BlobUrl::as_str), Some("http://127.0.0.1:9/blobs"));
        assert_eq!(r.to_string(), hinted);
        let upper =
            format!("SHA256:{}?src=https://gw.example/b", hash().to_string().to_uppercase());
        assert_eq!(BlobRef::of_uri(&upper).unwrap().unwrap().hash, hash());
        assert_eq!(BlobRef::of_uri("data:application/json,{}").unwrap(), None);
    }

    #[test]
    fn bad_hints_are_typed_errors() {
        let h = hash();
        let err = |uri: String| BlobRef::of_uri(&uri).unwrap_err();
        assert!(matches!(
            err(format!("sha256:{h}?url=http://h")),
            EnvelopeError::InvalidHint(HintError::UnknownQuery(q)) if q == "url=http://h"
        ));
        assert!(matches!(
            err(format!("sha256:{h}?")),
            EnvelopeError::InvalidHint(HintError::UnknownQuery(_))
        ));
        assert!(matches!(
            err(format!("sha256:{h}?src=gopher://h")),
            EnvelopeError::InvalidHint(HintError::NotHttp(_))
        ));
        assert!(matches!(
            err(format!("sha256:{h}?src=http://h/x?src=http://i")),
            EnvelopeError::InvalidHint(HintError::ForbiddenChar(_))
        ));
        assert!(matches!(err("sha256:abc?src=http://h".into()), EnvelopeError::InvalidDigest(_)));
        assert!(matches!(err("ipfs://Qm".into()), EnvelopeError::UnknownScheme(s) if s == "ipfs"));
    }
}
