//! The spec envelope: the JSON each sub-task's spec URI resolves to, and its
//! encoding to and from URIs.
//!
//! ```json
//! { "parent": "plan:0x…", "spec": "Summarize the text", "capability": "summarize",
//!   "source": "original material", "inputs": [{ "from": 0, "task_id": "7", "output": "…" }] }
//! ```
//!
//! Small envelopes travel inline as `data:application/json;base64,…`; larger
//! ones are content-addressed as `sha256:<hex>` with the bytes in a
//! [`BlobStore`]. Anyone can create a task with any URI, so decoding treats
//! the URI as hostile: every failure is an [`EnvelopeError`], sizes are
//! bounded before decoding, and content-addressed bytes are re-hashed.

use std::{
    collections::HashMap,
    fmt, fs,
    io::{self, Read, Write},
    path::{Path, PathBuf},
    str::FromStr,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use alloy::primitives::{B256, keccak256};
use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Envelopes up to this many JSON bytes are inlined by default.
pub const DEFAULT_INLINE_LIMIT: usize = 4 * 1024;
/// Envelopes larger than this are refused outright, encoded or decoded.
pub const HARD_MAX_BYTES: usize = 1024 * 1024;

const DATA_PREFIX: &str = "data:";
const SHA256_PREFIX: &str = "sha256:";
const JSON_MEDIA_TYPE: &str = "application/json";

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
    /// Larger than [`HARD_MAX_BYTES`] (or the codec's configured maximum).
    #[error("envelope is {len} bytes, over the limit of {max}")]
    TooLarge {
        /// Size seen (or a lower bound of it).
        len: usize,
        /// The limit.
        max: usize,
    },
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

/// A blob store failure.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// Filesystem error at `path`.
    #[error("blob store I/O error at {}: {source}", path.display())]
    Io {
        /// File or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The stored blob is larger than the caller accepts.
    #[error("stored blob is {len} bytes, over the limit of {max}")]
    TooLarge {
        /// Size of the blob.
        len: u64,
        /// The caller's limit.
        max: usize,
    },
}

/// SHA-256 digest naming a blob; displays as 64 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobHash(pub [u8; 32]);

impl BlobHash {
    /// Hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }
}

impl fmt::Display for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for BlobHash {
    type Err = EnvelopeError;

    /// Parses exactly 64 hex digits (either case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || EnvelopeError::InvalidDigest(truncate(s, 80));
        if s.len() != 64 {
            return Err(invalid());
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let hi = hex_value(pair[0]).ok_or_else(invalid)?;
            let lo = hex_value(pair[1]).ok_or_else(invalid)?;
            out[i] = hi << 4 | lo;
        }
        Ok(Self(out))
    }
}

/// Content-addressed storage for envelopes too large to inline.
pub trait BlobStore {
    /// Stores `bytes` and returns their hash; storing twice is harmless.
    fn put(&self, bytes: &[u8]) -> Result<BlobHash, BlobError>;
    /// The bytes stored under `hash`, or `None`. Blobs over `max_len` bytes
    /// are refused without reading them whole. Callers verify the hash.
    fn get(&self, hash: &BlobHash, max_len: usize) -> Result<Option<Vec<u8>>, BlobError>;
}

/// A [`BlobStore`] in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryBlobStore {
    blobs: Mutex<HashMap<BlobHash, Vec<u8>>>,
}

impl MemoryBlobStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `bytes` under `hash` without checking, to simulate tampering.
    pub fn insert_raw(&self, hash: BlobHash, bytes: Vec<u8>) {
        self.lock().insert(hash, bytes);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BlobHash, Vec<u8>>> {
        // A panic elsewhere cannot leave a HashMap of blobs half-updated.
        self.blobs.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl BlobStore for MemoryBlobStore {
    fn put(&self, bytes: &[u8]) -> Result<BlobHash, BlobError> {
        let hash = BlobHash::of(bytes);
        self.lock().entry(hash).or_insert_with(|| bytes.to_vec());
        Ok(hash)
    }

    fn get(&self, hash: &BlobHash, max_len: usize) -> Result<Option<Vec<u8>>, BlobError> {
        match self.lock().get(hash) {
            Some(bytes) if bytes.len() > max_len => {
                Err(BlobError::TooLarge { len: bytes.len() as u64, max: max_len })
            }
            other => Ok(other.cloned()),
        }
    }
}

/// A [`BlobStore`] on disk: each blob lives at `<root>/sha256/<hh>/<hash>`
/// (`hh` = first two hex digits, so no directory grows huge). Writes go to a
/// temporary file in the same directory, are synced, then renamed into place,
/// so readers never see a partial blob.
#[derive(Debug)]
pub struct FsBlobStore {
    root: PathBuf,
    counter: AtomicU64,
}

impl FsBlobStore {
    /// A store rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), counter: AtomicU64::new(0) }
    }

    /// Where the blob named `hash` lives.
    pub fn path_of(&self, hash: &BlobHash) -> PathBuf {
        let hex = hash.to_string();
        self.root.join("sha256").join(&hex[..2]).join(hex)
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> BlobError + '_ {
    move |source| BlobError::Io { path: path.to_owned(), source }
}

impl BlobStore for FsBlobStore {
    fn put(&self, bytes: &[u8]) -> Result<BlobHash, BlobError> {
        let hash = BlobHash::of(bytes);
        let path = self.path_of(&hash);
        // Content-addressed: an intact copy is already the right answer, but a
        // damaged one is rewritten.
        if fs::read(&path).is_ok_and(|existing| BlobHash::of(&existing) == hash) {
            return Ok(hash);
        }
        let dir = path.parent().unwrap_or(&self.root);
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let tmp = dir.join(format!(
            ".{hash}.{}.{}.tmp",
            std::process::id(),
            self.counter.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        if let Err(source) = written.and_then(|()| fs::rename(&tmp, &path)) {
            let _ = fs::remove_file(&tmp);
            return Err(BlobError::Io { path, source });
        }
        Ok(hash)
    }

    fn get(&self, hash: &BlobHash, max_len: usize) -> Result<Option<Vec<u8>>, BlobError> {
        let path = self.path_of(hash);
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(BlobError::Io { path, source }),
        };
        let mut bytes = Vec::new();
        // Read one byte past the limit to tell "exactly max" from "over".
        file.take(max_len as u64 + 1).read_to_end(&mut bytes).map_err(io_err(&path))?;
        if bytes.len() > max_len {
            let len = fs::metadata(&path).map_or(bytes.len() as u64, |m| m.len());
            return Err(BlobError::TooLarge { len, max: max_len });
        }
        Ok(Some(bytes))
    }
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
        if envelope.spec.is_empty() {
            return Err(EnvelopeError::MissingSpec);
        }
        self.publish(&envelope.to_json()?, store)
    }

    /// The envelope behind `uri`: `data:` (base64 or percent-encoded JSON)
    /// or `sha256:` (fetched from `store`, hash verified).
    pub fn decode(&self, uri: &str, store: &dyn BlobStore) -> Result<Envelope, EnvelopeError> {
        Envelope::from_json(&self.fetch(uri, store)?)
    }

    /// A URI for any JSON document (results too): inline when small, else
    /// content-addressed in `store`.
    pub fn publish(&self, json: &[u8], store: &dyn BlobStore) -> Result<String, EnvelopeError> {
        self.check_len(json.len())?;
        if json.len() <= self.inline_limit {
            Ok(format!("{DATA_PREFIX}{JSON_MEDIA_TYPE};base64,{}", BASE64.encode(json)))
        } else {
            Ok(format!("{SHA256_PREFIX}{}", store.put(json)?))
        }
    }

    /// The JSON bytes behind a URI written by [`Self::publish`] (or any
    /// `data:` URI of JSON), size-bounded and hash-verified.
    pub fn fetch(&self, uri: &str, store: &dyn BlobStore) -> Result<Vec<u8>, EnvelopeError> {
        // Even a percent-encoded URI is at most three bytes per payload byte.
        self.check_len(uri.len().saturating_sub(64) / 3)?;
        let bytes = if let Some(rest) = strip_prefix_ci(uri, DATA_PREFIX) {
            self.decode_data(rest)?
        } else if let Some(hex) = strip_prefix_ci(uri, SHA256_PREFIX) {
            let expected: BlobHash = hex.parse()?;
            let bytes = store
                .get(&expected, self.max_bytes)?
                .ok_or(EnvelopeError::BlobNotFound(expected))?;
            let actual = BlobHash::of(&bytes);
            if actual != expected {
                return Err(EnvelopeError::HashMismatch { expected, actual });
            }
            bytes
        } else {
            let scheme = uri.split_once(':').map_or(uri, |(scheme, _)| scheme);
            return Err(EnvelopeError::UnknownScheme(truncate(scheme, 32)));
        };
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

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

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

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Shortens hostile input before echoing it in an error.
fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope() -> Envelope {
        let mut env = Envelope::new(Parent::Plan(B256::repeat_byte(0x12)), "Summarize it");
        env.source = Some("Bonjour le monde".into());
        env.capability = Some("summarize".into());
        env.inputs.push(Input { from: 0, task_id: Some("7".into()), output: "Hello".into() });
        env
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
