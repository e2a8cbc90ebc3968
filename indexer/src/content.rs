//! What the URIs events carry hold, decoded for the API: a spec envelope,
//! a result, a dispute's or an appeal's reason, a ruling's rationale. An
//! inline `data:` URI (base64 or percent-encoded, any media type) is
//! decoded wherever a task is read; a content-addressed `sha256:` URI only
//! from a blob store, hash verified, which the one-task answer reads
//! ([`fill`] with a blob store). Its value is JSON when the bytes parse as JSON, text
//! otherwise; what cannot be read says why. The URI itself stays beside it.

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use serde::Serialize;
use serde_json::Value;
use tessera_bindings::envelope::{BlobRef, BlobStore, EnvelopeCodec, HARD_MAX_BYTES, uri_hash};

use crate::derive::{RulingRow, TaskRow};

/// A URI's content, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Decoded {
    /// The hash the escrow stores for the URI (keccak256 of its bytes: a
    /// task's `specHash` and `resultHash`), 0x hex; `None` for a URI the
    /// escrow only emits (reasons, rationales).
    pub hash: Option<String>,
    /// The content: JSON when it parses as JSON, else its text; `None`
    /// when it could not be read, or the URI is empty.
    pub value: Option<Value>,
    /// Why the content could not be read, when it could not.
    pub error: Option<String>,
}

/// What a URI holds: JSON when its bytes parse as JSON, else its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// The bytes parsed as JSON.
    Json(Value),
    /// The bytes as UTF-8 text (they are not JSON).
    Text(String),
}

impl From<Content> for Value {
    fn from(c: Content) -> Self {
        match c {
            Content::Json(v) => v,
            Content::Text(s) => Value::String(s),
        }
    }
}

/// Reads `uri`: an inline `data:` URI always, a `sha256:` one from `blobs`
/// when given (hash verified); why not, when it cannot be read. The one
/// reader of URIs for the REST answers and GraphQL's documents.
pub fn read(uri: &str, blobs: Option<&dyn BlobStore>) -> Result<Content, String> {
    bytes_of(uri, blobs).and_then(content_of)
}

/// Reads `uri` as [`read`] does. `hashed` adds the hash the escrow stores.
pub fn decode(uri: &str, hashed: bool, blobs: Option<&dyn BlobStore>) -> Decoded {
    let hash = hashed.then(|| uri_hash(uri).to_string());
    if uri.is_empty() {
        return Decoded { hash, value: None, error: None };
    }
    match read(uri, blobs) {
        Ok(content) => Decoded { hash, value: Some(content.into()), error: None },
        Err(error) => Decoded { hash, value: None, error: Some(error) },
    }
}

/// The bytes behind `uri`.
fn bytes_of(uri: &str, blobs: Option<&dyn BlobStore>) -> Result<Vec<u8>, String> {
    if let Some(rest) = strip_prefix_ci(uri, "data:") {
        return data_bytes(rest);
    }
    match BlobRef::of_uri(uri) {
        Ok(Some(_)) => match blobs {
            Some(blobs) => EnvelopeCodec::default().fetch(uri, blobs).map_err(|e| e.to_string()),
            None => Err("content-addressed, not inline: the task's own answer \
                         (GET /api/tasks/{id}) reads it from the indexer's blob store \
                         when it holds it"
                .into()),
        },
        Ok(None) => Err("not a data: or sha256: URI".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// `prefix` stripped from `s`, in any case.
fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

/// The bytes of a `data:` URI's rest (`[media type][;param]*[;base64],payload`),
/// at most [`HARD_MAX_BYTES`].
fn data_bytes(rest: &str) -> Result<Vec<u8>, String> {
    if rest.len() / 4 * 3 > HARD_MAX_BYTES + 1024 {
        return Err(format!("data: URI of {} bytes is over {HARD_MAX_BYTES}", rest.len()));
    }
    let (header, payload) = rest.split_once(',').ok_or("malformed data: URI: missing `,`")?;
    let base64 = header.split(';').skip(1).any(|p| p.trim().eq_ignore_ascii_case("base64"));
    if base64 {
        BASE64.decode(payload.trim()).map_err(|e| format!("malformed data: URI: {e}"))
    } else {
        percent_decode(payload)
    }
}

/// `%XX` escapes decoded; anything else is taken as it is.
fn percent_decode(s: &str) -> Result<Vec<u8>, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(b) = hex else {
                return Err(format!("malformed data: URI: bad escape at byte {i}"));
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// JSON when `bytes` parse as JSON, else their text.
fn content_of(bytes: Vec<u8>) -> Result<Content, String> {
    if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
        return Ok(Content::Json(v));
    }
    String::from_utf8(bytes).map(Content::Text).map_err(|e| {
        format!("content is neither JSON nor UTF-8 text ({} bytes)", e.as_bytes().len())
    })
}

/// Fills every decoded field of `row` from its URIs: inline ones always,
/// content-addressed ones from `blobs` when given. The dispute's `state`
/// follows the task's status.
pub fn fill(row: &mut TaskRow, blobs: Option<&dyn BlobStore>) {
    row.envelope = Some(decode(&row.spec_uri, true, blobs));
    row.result = row.result_uri.as_deref().map(|uri| decode(uri, true, blobs));
    let status = row.status.clone();
    if let Some(d) = row.dispute.as_mut() {
        d.state = match status.as_str() {
            "Disputed" => "awaiting_ruling",
            "Ruled" => "appealable",
            "Appealed" => "awaiting_appeal_ruling",
            _ => "settled",
        }
        .into();
        d.reason = Some(decode(&d.reason_uri, false, blobs));
        let fill_ruling = |r: &mut RulingRow| {
            r.rationale = Some(decode(&r.rationale_uri, false, blobs));
        };
        if let Some(r) = d.ruling.as_mut() {
            fill_ruling(r);
        }
        if let Some(a) = d.appeal.as_mut() {
            a.reason = Some(decode(&a.reason_uri, false, blobs));
            if let Some(r) = a.ruling.as_mut() {
                fill_ruling(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tessera_bindings::envelope::{MemoryBlobStore, percent_data_uri};

    use super::*;

    #[test]
    fn inline_uris_decode_to_json_or_text() {
        let json = EnvelopeCodec::default()
            .publish(br#"{"summary":"hi"}"#, &MemoryBlobStore::new())
            .unwrap();
        assert!(json.contains(";base64,"), "{json}");
        let d = decode(&json, true, None);
        assert_eq!(d.value, Some(serde_json::json!({"summary": "hi"})));
        assert_eq!(d.hash, Some(uri_hash(&json).to_string()));
        assert_eq!(d.error, None);

        let percent = percent_data_uri(br#"{"a":[1,2]}"#);
        assert_eq!(decode(&percent, false, None).value, Some(serde_json::json!({"a": [1, 2]})));
        assert_eq!(decode(&percent, false, None).hash, None);

        let text = format!("data:text/plain;base64,{}", BASE64.encode("plain words"));
        assert_eq!(decode(&text, false, None).value, Some(Value::String("plain words".into())));
        assert_eq!(decode("data:,a%20b", false, None).value, Some(Value::String("a b".into())));
    }

    #[test]
    fn unreadable_uris_say_why() {
        let empty = decode("", true, None);
        assert_eq!((empty.value, empty.error), (None, None), "no URI, nothing to read");
        let bad = decode("data:;base64,@@@", false, None);
        assert!(bad.error.unwrap().contains("malformed"));
        let bin = format!("data:;base64,{}", BASE64.encode([0xff, 0xfe, 0x00]));
        assert!(decode(&bin, false, None).error.unwrap().contains("neither JSON nor"));
        assert!(
            decode("ipfs://x", false, None).error.unwrap().contains("ipfs"),
            "the scheme is named"
        );
        assert!(decode("data:,%zz", false, None).error.unwrap().contains("bad escape"));
    }

    #[test]
    fn content_addressed_uris_are_read_from_a_blob_store_only() {
        let blobs = MemoryBlobStore::new();
        let big = serde_json::json!({ "text": "z".repeat(5_000) });
        let uri = EnvelopeCodec::default().publish(big.to_string().as_bytes(), &blobs).unwrap();
        assert!(uri.starts_with("sha256:"));
        let listed = decode(&uri, true, None);
        assert!(listed.error.unwrap().contains("content-addressed"));
        let one = decode(&uri, true, Some(&blobs));
        assert_eq!(one.value, Some(big));
        let missing = decode(&uri, true, Some(&MemoryBlobStore::new()));
        assert!(missing.error.is_some() && missing.value.is_none());
    }
}
