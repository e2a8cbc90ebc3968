//! The spec envelope: the JSON each sub-task's spec URI resolves to, and its
//! encoding to and from URIs.
//!
//! ```json
//! { "parent": "plan:0x…", "spec": "Summarize the text", "capability": "summarize",
//!   "source": "original material", "inputs": [{ "from": 0, "task_id": "7", "output": "…" }],
//!   "path": "1.0", "groups": ["research the market"] }
//! ```
//!
//! A task of a nested plan carries its step `path` (`1.0`: the top-level
//! step 1 is a plan, and this is its step 0) and the `groups` labelling the
//! plans around it, outermost first, so the nesting can be rebuilt from the
//! chain alone.
//!
//! Small envelopes travel inline as `data:application/json;base64,…`; larger
//! ones are content-addressed as `sha256:<hex>` with the bytes in a
//! [`BlobStore`]. Anyone can create a task with any URI, so decoding treats
//! the URI as hostile: every failure is an [`EnvelopeError`], sizes are
//! bounded before decoding, and content-addressed bytes are re-hashed.
//!
//! A content-addressed URI may carry where its writer serves it,
//! `sha256:<hex>?src=<base-url>` (`GET <base-url>/<hex>` answers the
//! bytes); the hash stays the only thing trusted. [`BlobSources`] reads a
//! blob written on another machine: the local store, then the hint, then
//! configured gateways, every answer bounded and verified.
//!
//! The module is split by job: [`model`] (the envelope and its parent),
//! [`codec`] (URIs to and from envelopes, size limits), [`hint`] (the
//! location hint and base URLs), [`blob`] (content-addressed storage),
//! [`sources`] (fetching blobs over HTTP), [`fetch`] (its bounds and
//! failures) and [`guard`] (the addresses a hint may lead to).

mod blob;
mod codec;
mod fetch;
pub mod guard;
mod hint;
mod model;
mod sources;

pub use blob::{BlobError, BlobHash, BlobStore, FsBlobStore, MemoryBlobStore};
pub use codec::{DEFAULT_INLINE_LIMIT, EnvelopeCodec, HARD_MAX_BYTES, percent_data_uri, uri_hash};
pub use fetch::{FetchCategory, FetchError, FetchLimits};
pub use guard::{AddressRefused, LOCAL_CHAIN_ID, is_local_chain};
pub use hint::{BlobRef, BlobUrl, HintError, MAX_HINT_BYTES};
pub use model::{
    Envelope, Input, MAX_GROUP_LABEL_BYTES, MAX_PATH_BYTES, MAX_PATH_SEGMENTS, Parent, Upstream,
    path_segments, readable,
};
pub use sources::{
    BLOB_FETCH_BUCKETS, BLOB_FETCH_SECONDS, BLOB_FETCHES, BlobSources, METRICS as BLOB_METRICS,
};

/// Why an envelope could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    /// The bytes are not a JSON envelope.
    #[error("envelope is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The envelope has no (or an empty) `spec`.
    #[error("envelope has no `spec`; there is nothing to do")]
    MissingSpec,
    /// `parent` is not `plan:<hex>` or `task:<id>`.
    #[error("envelope parent `{0}` is neither `plan:<32-byte hex>` nor `task:<id>`")]
    InvalidParent(String),
    /// `path` is not a step path such as `2.1.0` (see [`path_segments`]).
    #[error(
        "envelope path `{0}` is not 1 to {MAX_PATH_SEGMENTS} decimal segments separated by `.` \
         (no sign, no leading zeros, at most {MAX_PATH_BYTES} bytes)"
    )]
    InvalidPath(String),
    /// `groups` does not label exactly the plans enclosing the path (one
    /// fewer than its segments), or is given without a path.
    #[error(
        "envelope has {groups} group label(s) for path {}: expected {expected} (one per enclosing plan)",
        path.as_deref().map_or_else(|| "(none)".to_owned(), |p| format!("`{p}`"))
    )]
    GroupsMismatch {
        /// Labels given.
        groups: usize,
        /// The path (shortened), if any.
        path: Option<String>,
        /// Labels the path calls for.
        expected: usize,
    },
    /// A group label longer than [`MAX_GROUP_LABEL_BYTES`].
    #[error(
        "envelope group label {index} is {len} bytes, over the limit of {MAX_GROUP_LABEL_BYTES}"
    )]
    GroupLabelTooLong {
        /// Its position in `groups`.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// Larger than [`HARD_MAX_BYTES`] (or the codec's configured maximum).
    #[error("envelope is {len} bytes, over the limit of {max}")]
    TooLarge {
        /// Size seen (or a lower bound of it).
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A `sha256:` URI's location hint is malformed.
    #[error("bad blob location hint: {0}")]
    InvalidHint(#[from] HintError),
    /// The URI scheme is not `data:` or `sha256:`.
    #[error("unsupported spec URI scheme `{0}`; expected `data:` or `sha256:`")]
    UnknownScheme(String),
    /// A `data:` URI that does not follow RFC 2397.
    #[error("malformed data URI: {0}")]
    MalformedDataUri(&'static str),
    /// A `data:` URI that does not carry JSON.
    #[error("data URI media type `{0}` is not application/json")]
    UnsupportedMediaType(String),
    /// The base64 payload does not decode.
    #[error("data URI payload is not valid base64: {0}")]
    InvalidBase64(#[from] base64::DecodeError),
    /// A `%` escape that is not two hex digits.
    #[error("data URI payload has an invalid percent escape")]
    InvalidPercentEncoding,
    /// `sha256:` not followed by 64 hex digits.
    #[error("`{0}` is not a sha256 digest (64 hex digits)")]
    InvalidDigest(String),
    /// The blob store does not hold the content.
    #[error("no blob stored for sha256:{0}")]
    BlobNotFound(BlobHash),
    /// The store returned bytes that do not hash to the URI.
    #[error("blob for sha256:{expected} hashes to sha256:{actual}; refusing tampered content")]
    HashMismatch {
        /// Hash named by the URI.
        expected: BlobHash,
        /// Hash of the bytes returned.
        actual: BlobHash,
    },
    /// The blob store failed.
    #[error(transparent)]
    Store(#[from] BlobError),
}

pub(super) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Shortens hostile input before echoing it in an error.
pub(super) fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use alloy::primitives::{B256, keccak256};

    use super::*;

    fn envelope() -> Envelope {
        let mut env = Envelope::new(Parent::Plan(B256::repeat_byte(0x12)), "Summarize it");
        env.source = Some("Bonjour le monde".into());
        env.capability = Some("summarize".into());
        env.inputs.push(Input::carried(0, Some("7".into()), "Hello"));
        env
    }

    #[test]
    fn inputs_carried_before_upstream_names_existed_still_read_and_named_ones_round_trip() {
        let old = br#"{"parent": "task:7", "spec": "s", "inputs": [{"from": 0, "task_id": "7", "output": "Hi"}]}"#;
        let env = Envelope::from_json(old).unwrap();
        assert_eq!(env.inputs, [Input::carried(0, Some("7".into()), "Hi")]);
        assert_eq!(env.inputs[0].unresolved(), None);
        let mut named = Envelope::new(Parent::Task("7".into()), "s");
        named.inputs.push(Input::named(0, B256::repeat_byte(1), "0", "7".into()));
        let json = named.to_json().unwrap();
        assert!(!String::from_utf8_lossy(&json).contains("Hi"));
        let back = Envelope::from_json(&json).unwrap();
        assert_eq!(back, named);
        assert_eq!(back.inputs[0].unresolved(), Some("7"));
        assert_eq!(back.inputs[0].upstream.as_ref().unwrap().path, "0");
        // Filled in by the executor: resolved.
        let mut filled = back.inputs[0].clone();
        filled.output = "Bonjour".into();
        assert_eq!(filled.unresolved(), None);
        // A carried input never serializes an `upstream`.
        let carried = serde_json::to_string(&Input::carried(1, None, "x")).unwrap();
        assert!(!carried.contains("upstream"), "{carried}");
    }

    #[test]
    fn readable_prefers_text_and_lists_fields_otherwise() {
        assert_eq!(readable(&serde_json::json!({"text": "Bonjour", "x": 1})), "Bonjour");
        let v = serde_json::json!({"capability": "sentiment-classify", "label": "positive", "names": []});
        assert_eq!(readable(&v), "label: positive");
    }

    #[test]
    fn parent_round_trips() {
        let plan = Parent::Plan(B256::repeat_byte(0xab));
        assert_eq!(plan.to_string(), format!("plan:0x{}", "ab".repeat(32)));
        assert_eq!(plan.to_string().parse::<Parent>().unwrap(), plan);
        assert_eq!(format!("plan:{}", "AB".repeat(32)).parse::<Parent>().unwrap(), plan);
        assert_eq!("task:42".parse::<Parent>().unwrap(), Parent::Task("42".into()));
        for bad in ["task:", "task:x1", "plan:0x12", "job:1", ""] {
            assert!(matches!(bad.parse::<Parent>(), Err(EnvelopeError::InvalidParent(_))), "{bad}");
        }
    }

    #[test]
    fn small_envelope_inlines_and_round_trips() {
        let store = MemoryBlobStore::new();
        let codec = EnvelopeCodec::default();
        let uri = codec.encode(&envelope(), &store).unwrap();
        assert!(uri.starts_with("data:application/json;base64,"), "{uri}");
        assert_eq!(codec.decode(&uri, &store).unwrap(), envelope());
        assert!(store.lock().is_empty());
    }

    #[test]
    fn serde_deserialize_refuses_missing_spec() {
        let err = serde_json::from_str::<Envelope>(r#"{"parent":"task:1"}"#).unwrap_err();
        assert!(err.to_string().contains("no `spec`"), "{err}");
        let env: Envelope = serde_json::from_str(r#"{"parent":"task:1","spec":"s"}"#).unwrap();
        assert_eq!(env, Envelope::new(Parent::Task("1".into()), "s"));
    }

    #[test]
    fn json_omits_empty_optionals() {
        let env = Envelope::new(Parent::Task("1".into()), "go");
        let json = String::from_utf8(env.to_json().unwrap()).unwrap();
        assert_eq!(json, r#"{"parent":"task:1","spec":"go"}"#);
    }

    fn nested() -> Envelope {
        let mut env = envelope();
        env.path = Some("2.10.0".into());
        env.groups = vec!["research the market".into(), "dig déeper".into()];
        env
    }

    #[test]
    fn path_and_groups_round_trip() {
        let env = nested();
        let json = String::from_utf8(env.to_json().unwrap()).unwrap();
        assert!(
            json.ends_with(r#""path":"2.10.0","groups":["research the market","dig déeper"]}"#),
            "{json}"
        );
        assert_eq!(Envelope::from_json(json.as_bytes()).unwrap(), env);
        assert_eq!(serde_json::from_str::<Envelope>(&json).unwrap(), env);
        let store = MemoryBlobStore::new();
        let codec = EnvelopeCodec::default();
        assert_eq!(codec.decode(&codec.encode(&env, &store).unwrap(), &store).unwrap(), env);
        // A top-level step: a path of one segment, no groups.
        let mut top = envelope();
        top.path = Some("0".into());
        let json = String::from_utf8(top.to_json().unwrap()).unwrap();
        assert!(json.ends_with(r#""path":"0"}"#), "{json}");
        assert_eq!(Envelope::from_json(json.as_bytes()).unwrap(), top);
        // Groups may be left out even when the path nests; null and [] read
        // as absent.
        let bare = br#"{"parent":"task:1","spec":"s","path":"1.1.0","groups":[]}"#;
        assert_eq!(Envelope::from_json(bare).unwrap().path.as_deref(), Some("1.1.0"));
        let null = br#"{"parent":"task:1","spec":"s","path":null}"#;
        assert_eq!(
            Envelope::from_json(null).unwrap(),
            Envelope::new(Parent::Task("1".into()), "s")
        );
    }

    #[test]
    fn path_segments_are_bounded_decimal_u32s() {
        assert_eq!(path_segments("0").unwrap(), [0]);
        assert_eq!(path_segments("2.1.0").unwrap(), [2, 1, 0]);
        assert_eq!(path_segments("4294967295").unwrap(), [u32::MAX]);
        let eight = ["7"; MAX_PATH_SEGMENTS].join(".");
        assert_eq!(path_segments(&eight).unwrap(), [7; MAX_PATH_SEGMENTS]);
        // 64 bytes exactly: five 10-digit segments and one of 9, dots included.
        let longest = format!("{}.100000000", ["1000000000"; 5].join("."));
        assert_eq!(longest.len(), MAX_PATH_BYTES);
        assert_eq!(path_segments(&longest).unwrap().len(), 6);
        let nine = ["7"; MAX_PATH_SEGMENTS + 1].join(".");
        let too_long = format!("{longest}0");
        for bad in [
            "",
            ".",
            "1.",
            ".1",
            "1..2",
            "01",
            "1.00",
            "+1",
            "-1",
            "1.-0",
            " 1",
            "1 ",
            "1,2",
            "x",
            "１",
            "4294967296",
            "0x1",
            &nine,
            &too_long,
        ] {
            assert!(matches!(path_segments(bad), Err(EnvelopeError::InvalidPath(_))), "{bad:?}");
        }
        let huge = "9".repeat(10_000);
        let Err(EnvelopeError::InvalidPath(echoed)) = path_segments(&huge) else {
            panic!("a huge path is refused")
        };
        assert!(echoed.chars().count() <= 81, "the echo is shortened: {}", echoed.len());
    }

    #[test]
    fn malformed_nesting_is_refused_on_both_sides() {
        let json = |extra: &str| format!(r#"{{"parent":"task:1","spec":"s",{extra}}}"#);
        let read = |extra: &str| Envelope::from_json(json(extra).as_bytes()).unwrap_err();
        assert!(matches!(read(r#""path":"01""#), EnvelopeError::InvalidPath(p) if p == "01"));
        assert!(matches!(read(r#""path":"""#), EnvelopeError::InvalidPath(_)));
        assert!(matches!(read(r#""path":7"#), EnvelopeError::Json(_)));
        assert!(matches!(
            read(r#""groups":["a"]"#),
            EnvelopeError::GroupsMismatch { groups: 1, path: None, expected: 0 }
        ));
        assert!(matches!(
            read(r#""path":"3","groups":["a"]"#),
            EnvelopeError::GroupsMismatch { groups: 1, expected: 0, .. }
        ));
        let err = read(r#""path":"1.2.3","groups":["a"]"#);
        assert!(
            matches!(&err, EnvelopeError::GroupsMismatch { groups: 1, expected: 2, path: Some(p) } if p == "1.2.3"),
            "{err}"
        );
        assert!(err.to_string().contains("expected 2"), "{err}");
        assert!(matches!(
            read(r#""path":"1.2","groups":["a","b"]"#),
            EnvelopeError::GroupsMismatch { groups: 2, expected: 1, .. }
        ));
        let fits = "l".repeat(MAX_GROUP_LABEL_BYTES);
        let env = Envelope::from_json(
            json(&format!(r#""path":"1.2.3","groups":["a","{fits}"]"#)).as_bytes(),
        )
        .unwrap();
        assert_eq!(env.groups[1], fits);
        // Bytes, not characters: 101 two-byte characters are 202 bytes.
        let over = "é".repeat(101);
        assert!(matches!(
            read(&format!(r#""path":"1.2.3","groups":["a","{over}"]"#)),
            EnvelopeError::GroupLabelTooLong { index: 1, len: 202 }
        ));
        // Through serde and through a URI alike.
        let err = serde_json::from_str::<Envelope>(&json(r#""path":"1.+2""#)).unwrap_err();
        assert!(err.to_string().contains("envelope path `1.+2`"), "{err}");
        let store = MemoryBlobStore::new();
        let uri = percent_data_uri(json(r#""path":"1.2","groups":[]"#).as_bytes());
        assert!(EnvelopeCodec::default().decode(&uri, &store).is_ok());
        let uri = percent_data_uri(json(r#""path":"9.9.9.9.9.9.9.9.9""#).as_bytes());
        assert!(matches!(
            EnvelopeCodec::default().decode(&uri, &store),
            Err(EnvelopeError::InvalidPath(_))
        ));
        // A writer cannot produce what readers refuse.
        let mut env = nested();
        env.path = Some("2.1".into());
        assert!(matches!(env.to_json(), Err(EnvelopeError::GroupsMismatch { .. })));
        assert!(matches!(
            EnvelopeCodec::default().encode(&env, &store),
            Err(EnvelopeError::GroupsMismatch { .. })
        ));
        env.path = Some("2.1.x".into());
        assert!(matches!(env.to_json(), Err(EnvelopeError::InvalidPath(_))));
        env.path = None;
        env.groups.clear();
        assert!(env.to_json().is_ok());
    }

    #[test]
    fn large_envelope_is_content_addressed() {
        let store = MemoryBlobStore::new();
        let codec = EnvelopeCodec::default();
        let mut env = envelope();
        env.source = Some("x".repeat(DEFAULT_INLINE_LIMIT));
        let uri = codec.encode(&env, &store).unwrap();
        let hex = uri.strip_prefix("sha256:").unwrap();
        let json = env.to_json().unwrap();
        assert_eq!(hex, BlobHash::of(&json).to_string());
        assert_eq!(codec.decode(&uri, &store).unwrap(), env);
    }

    #[test]
    fn tampered_blob_is_refused() {
        let store = MemoryBlobStore::new();
        let hash = BlobHash::of(b"original");
        store.insert_raw(hash, br#"{"parent":"task:1","spec":"evil"}"#.to_vec());
        let err = EnvelopeCodec::default().decode(&format!("sha256:{hash}"), &store).unwrap_err();
        assert!(matches!(err, EnvelopeError::HashMismatch { expected, .. } if expected == hash));
    }

    #[test]
    fn missing_blob_and_bad_digest() {
        let store = MemoryBlobStore::new();
        let codec = EnvelopeCodec::default();
        let hash = BlobHash::of(b"nothing");
        assert!(matches!(
            codec.decode(&format!("sha256:{hash}"), &store),
            Err(EnvelopeError::BlobNotFound(h)) if h == hash
        ));
        for bad in ["sha256:", "sha256:zz", &format!("sha256:{}", "g".repeat(64))] {
            assert!(
                matches!(codec.decode(bad, &store), Err(EnvelopeError::InvalidDigest(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn decodes_percent_encoded_data() {
        let store = MemoryBlobStore::new();
        let uri = "data:application/json;charset=utf-8,%7B%22parent%22:%22task:9%22,%22spec%22:%22hi%20there%22%7D";
        let env = EnvelopeCodec::default().decode(uri, &store).unwrap();
        assert_eq!(env.spec, "hi there");
        assert_eq!(env.parent, Parent::Task("9".into()));
        assert!(matches!(
            EnvelopeCodec::default().decode("data:application/json,%7", &store),
            Err(EnvelopeError::InvalidPercentEncoding)
        ));
    }

    #[test]
    fn hostile_uris_are_refused_with_reasons() {
        let store = MemoryBlobStore::new();
        let codec = EnvelopeCodec::default();
        let decode = |uri: &str| codec.decode(uri, &store).unwrap_err();
        assert!(matches!(decode("ipfs://Qm"), EnvelopeError::UnknownScheme(s) if s == "ipfs"));
        assert!(matches!(decode("no scheme at all"), EnvelopeError::UnknownScheme(_)));
        assert!(matches!(
            decode("data:application/json;base64"),
            EnvelopeError::MalformedDataUri(_)
        ));
        assert!(matches!(decode("data:text/plain,{}"), EnvelopeError::UnsupportedMediaType(_)));
        assert!(matches!(
            decode("data:application/json;base64,@@@"),
            EnvelopeError::InvalidBase64(_)
        ));
        assert!(matches!(decode("data:application/json,{not json"), EnvelopeError::Json(_)));
        assert!(matches!(
            decode("data:application/json,{\"parent\":\"task:1\"}"),
            EnvelopeError::MissingSpec
        ));
        assert!(matches!(
            decode("data:application/json,{\"parent\":\"task:1\",\"spec\":\"\"}"),
            EnvelopeError::MissingSpec
        ));
        assert!(matches!(
            decode("data:application/json,{\"parent\":\"boss\",\"spec\":\"x\"}"),
            EnvelopeError::Json(_)
        ));
        let huge = format!("data:application/json;base64,{}", "A".repeat(4 * HARD_MAX_BYTES));
        assert!(matches!(decode(&huge), EnvelopeError::TooLarge { .. }));
    }

    #[test]
    fn oversize_is_refused_on_both_sides() {
        let store = MemoryBlobStore::new();
        let codec = EnvelopeCodec { inline_limit: 16, max_bytes: 256 };
        let mut env = envelope();
        env.spec = "y".repeat(300);
        assert!(matches!(
            codec.encode(&env, &store),
            Err(EnvelopeError::TooLarge { max: 256, .. })
        ));
        // A blob stored by a more lenient writer is refused on read.
        let big = EnvelopeCodec::default().encode(&env, &store).unwrap();
        assert!(big.starts_with("data:"));
        let hash = store.put(&env.to_json().unwrap()).unwrap();
        assert!(matches!(
            codec.decode(&format!("sha256:{hash}"), &store),
            Err(EnvelopeError::Store(BlobError::TooLarge { max: 256, .. }))
        ));
    }

    #[test]
    fn fs_store_round_trips_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsBlobStore::new(dir.path());
        let codec = EnvelopeCodec { inline_limit: 8, ..EnvelopeCodec::default() };
        let uri = codec.encode(&envelope(), &store).unwrap();
        let hash: BlobHash = uri.strip_prefix("sha256:").unwrap().parse().unwrap();
        let path = store.path_of(&hash);
        assert!(path.starts_with(dir.path().join("sha256")));
        assert_eq!(fs::read(&path).unwrap(), envelope().to_json().unwrap());
        // No temporary files left beside the blob.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
        assert_eq!(codec.decode(&uri, &store).unwrap(), envelope());
        // Storing again is idempotent.
        assert_eq!(store.put(&envelope().to_json().unwrap()).unwrap(), hash);

        fs::write(&path, b"tampered").unwrap();
        assert!(matches!(codec.decode(&uri, &store), Err(EnvelopeError::HashMismatch { .. })));
        // Putting the content again repairs the damaged copy.
        store.put(&envelope().to_json().unwrap()).unwrap();
        assert_eq!(codec.decode(&uri, &store).unwrap(), envelope());
        fs::write(&path, b"tampered").unwrap();
        assert_eq!(store.get(&BlobHash::of(b"absent"), 10).unwrap(), None);
        assert!(matches!(store.get(&hash, 4), Err(BlobError::TooLarge { len: 8, max: 4 })));
    }

    #[test]
    fn percent_data_uris_round_trip_inline_only() {
        let json = r#"{"a":"Résumé — 50% off, x~y"}"#.as_bytes();
        let uri = percent_data_uri(json);
        let body = uri.strip_prefix("data:application/json,").unwrap();
        assert!(body.contains("50%25%20off"), "{body}");
        assert!(body.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.~%".contains(&b)));
        let codec = EnvelopeCodec::default();
        assert_eq!(codec.fetch_inline(&uri).unwrap(), json);
        assert_eq!(codec.fetch(&uri, &MemoryBlobStore::new()).unwrap(), json);
        let hash = BlobHash::of(json);
        assert!(matches!(
            codec.fetch_inline(&format!("sha256:{hash}")),
            Err(EnvelopeError::UnknownScheme(s)) if s == "sha256"
        ));
        let small = EnvelopeCodec { inline_limit: 8, max_bytes: 8 };
        assert!(matches!(small.fetch_inline(&uri), Err(EnvelopeError::TooLarge { .. })));
    }

    #[test]
    fn uri_hash_is_keccak_of_bytes() {
        let uri = "sha256:00";
        assert_eq!(uri_hash(uri), keccak256(uri.as_bytes()));
        assert_ne!(uri_hash("a"), uri_hash("b"));
    }

    #[test]
    fn blob_hash_matches_known_vector() {
        assert_eq!(
            BlobHash::of(b"abc").to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
