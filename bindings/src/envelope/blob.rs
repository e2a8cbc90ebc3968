//! Content-addressed storage for envelopes (and results) too large to
//! inline: the [`BlobStore`] trait, its digest [`BlobHash`], and an
//! in-memory and an on-disk store.

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

use sha2::{Digest as _, Sha256};

use super::{EnvelopeError, hex_value, truncate};

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

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BlobHash, Vec<u8>>> {
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
        file.take((max_len as u64).saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_err(&path))?;
        if bytes.len() > max_len {
            let len = fs::metadata(&path).map_or(bytes.len() as u64, |m| m.len());
            return Err(BlobError::TooLarge { len, max: max_len });
        }
        Ok(Some(bytes))
    }
}
