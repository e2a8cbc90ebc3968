//! Envelope URIs: inline `data:` (base64 or percent-encoded JSON) or
//! content-addressed `sha256:<hex>` (with an optional location hint,
//! `?src=<base-url>`, see [`super::hint`]), with size limits on both sides
//! and the hash the escrow stores for a URI.

use alloy::primitives::{B256, keccak256};
use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};

use super::{
    BlobHash, BlobRef, BlobStore, BlobUrl, Envelope, EnvelopeError, hex_value,
    hint::strip_prefix_ci, truncate,
};

/// Envelopes up to this many JSON bytes are inlined by default.
pub const DEFAULT_INLINE_LIMIT: usize = 4 * 1024;
/// Envelopes larger than this are refused outright, encoded or decoded.
pub const HARD_MAX_BYTES: usize = 1024 * 1024;

const DATA_PREFIX: &str = "data:";
const JSON_MEDIA_TYPE: &str = "application/json";

/// Encodes envelopes to URIs and decodes them back, with size limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeCodec {
    /// JSON up to this many bytes is inlined as a `data:` URI.
    pub inline_limit: usize,
    /// Nothing larger is encoded or decoded.
    pub max_bytes: usize,
}

impl Default for EnvelopeCodec {
    fn default() -> Self {
        Self { inline_limit: DEFAULT_INLINE_LIMIT, max_bytes: HARD_MAX_BYTES }
    }
}

impl EnvelopeCodec {
    /// The URI for `envelope`: inline when small, else `sha256:<hex>` with the
    /// JSON put in `store`.
    pub fn encode(
        &self,
        envelope: &Envelope,
        store: &dyn BlobStore,
    ) -> Result<String, EnvelopeError> {
        self.encode_at(envelope, store, None)
    }

    /// [`Self::encode`], a content-addressed URI carrying the location hint
    /// `?src=<hint>` when `hint` is given (see [`Self::publish_at`]).
    pub fn encode_at(
        &self,
        envelope: &Envelope,
        store: &dyn BlobStore,
        hint: Option<&BlobUrl>,
    ) -> Result<String, EnvelopeError> {
        if envelope.spec.is_empty() {
            return Err(EnvelopeError::MissingSpec);
        }
        self.publish_at(&envelope.to_json()?, store, hint)
    }

    /// The envelope behind `uri`: `data:` (base64 or percent-encoded JSON)
    /// or `sha256:` (fetched from `store`, hash verified).
    pub fn decode(&self, uri: &str, store: &dyn BlobStore) -> Result<Envelope, EnvelopeError> {
        Envelope::from_json(&self.fetch(uri, store)?)
    }

    /// A URI for any JSON document (results too): inline when small, else
    /// content-addressed in `store`.
    pub fn publish(&self, json: &[u8], store: &dyn BlobStore) -> Result<String, EnvelopeError> {
        self.publish_at(json, store, None)
    }

    /// [`Self::publish`] by a writer that serves its store at `hint`
    /// (`GET <hint>/<hex>`): a content-addressed URI reads
    /// `sha256:<hex>?src=<hint>`, so a reader on another machine knows where
    /// to look. An inline URI is the same either way.
    pub fn publish_at(
        &self,
        json: &[u8],
        store: &dyn BlobStore,
        hint: Option<&BlobUrl>,
    ) -> Result<String, EnvelopeError> {
        self.check_len(json.len())?;
        if json.len() <= self.inline_limit {
            Ok(format!("{DATA_PREFIX}{JSON_MEDIA_TYPE};base64,{}", BASE64.encode(json)))
        } else {
            let hash = store.put(json)?;
            Ok(BlobRef { hash, hint: hint.cloned() }.to_string())
        }
    }

    /// The JSON bytes behind a URI written by [`Self::publish`] (or any
    /// `data:` URI of JSON), size-bounded and hash-verified. A
    /// content-addressed URI is read from `store` alone, its hint ignored:
    /// an async reader fetches missing blobs first
    /// ([`super::BlobSources::ensure`]).
    pub fn fetch(&self, uri: &str, store: &dyn BlobStore) -> Result<Vec<u8>, EnvelopeError> {
        // Even a percent-encoded URI is at most three bytes per payload byte.
        self.check_len(uri.len().saturating_sub(64) / 3)?;
        let bytes = match BlobRef::of_uri(uri)? {
            None => self.decode_data(&uri[DATA_PREFIX.len()..])?,
            Some(blob) => {
                let expected = blob.hash;
                let bytes = store
                    .get(&expected, self.max_bytes)?
                    .ok_or(EnvelopeError::BlobNotFound(expected))?;
                let actual = BlobHash::of(&bytes);
                if actual != expected {
                    return Err(EnvelopeError::HashMismatch { expected, actual });
                }
                bytes
            }
        };
        self.check_len(bytes.len())?;
        Ok(bytes)
    }

    /// The JSON bytes of a `data:` URI only (base64 or percent-encoded),
    /// size-bounded; any other scheme is refused. For documents that are
    /// always inline, such as agent cards.
    pub fn fetch_inline(&self, uri: &str) -> Result<Vec<u8>, EnvelopeError> {
        self.check_len(uri.len().saturating_sub(64) / 3)?;
        let Some(rest) = strip_prefix_ci(uri, DATA_PREFIX) else {
            let scheme = uri.split_once(':').map_or(uri, |(scheme, _)| scheme);
            return Err(EnvelopeError::UnknownScheme(truncate(scheme, 32)));
        };
        let bytes = self.decode_data(rest)?;
        self.check_len(bytes.len())?;
        Ok(bytes)
    }

    fn decode_data(&self, rest: &str) -> Result<Vec<u8>, EnvelopeError> {
        let (header, payload) =
            rest.split_once(',').ok_or(EnvelopeError::MalformedDataUri("missing `,`"))?;
        let mut params = header.split(';');
        let media_type = params.next().unwrap_or_default().trim();
        if !media_type.eq_ignore_ascii_case(JSON_MEDIA_TYPE) {
            return Err(EnvelopeError::UnsupportedMediaType(truncate(media_type, 64)));
        }
        let mut base64 = false;
        for param in params {
            if param.eq_ignore_ascii_case("base64") {
                base64 = true;
            } else if !param.contains('=') {
                return Err(EnvelopeError::MalformedDataUri("parameter without `=`"));
            }
        }
        if base64 {
            self.check_len(payload.len() / 4 * 3)?;
            Ok(BASE64.decode(payload)?)
        } else {
            percent_decode(payload)
        }
    }

    fn check_len(&self, len: usize) -> Result<(), EnvelopeError> {
        if len > self.max_bytes {
            Err(EnvelopeError::TooLarge { len, max: self.max_bytes })
        } else {
            Ok(())
        }
    }
}

/// The hash the escrow stores for a spec URI: keccak256 of its bytes.
pub fn uri_hash(uri: &str) -> B256 {
    keccak256(uri.as_bytes())
}

/// `json` as a `data:application/json,` URI with every byte outside the
/// RFC 3986 unreserved set percent-encoded: readable, and safe in any URI
/// context. [`EnvelopeCodec::fetch`] and [`EnvelopeCodec::fetch_inline`]
/// read it back.
pub fn percent_data_uri(json: &[u8]) -> String {
    let mut out = String::with_capacity(DATA_PREFIX.len() + JSON_MEDIA_TYPE.len() + json.len() * 2);
    out.push_str(DATA_PREFIX);
    out.push_str(JSON_MEDIA_TYPE);
    out.push(',');
    for &b in json {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
            out.push(char::from(HEX_UPPER[usize::from(b & 0x0f)]));
        }
    }
    out
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn percent_decode(s: &str) -> Result<Vec<u8>, EnvelopeError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = bytes.get(i + 1).copied().and_then(hex_value);
            let lo = bytes.get(i + 2).copied().and_then(hex_value);
            let (Some(hi), Some(lo)) = (hi, lo) else {
                return Err(EnvelopeError::InvalidPercentEncoding);
            };
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}
