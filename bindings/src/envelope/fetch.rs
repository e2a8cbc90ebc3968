//! What bounds one blob read ([`FetchLimits`]) and how it fails
//! ([`FetchError`], and its [`FetchCategory`]: what may be said about a
//! failure in public without saying what answered).

use std::{fmt, time::Duration};

use super::{BlobHash, EnvelopeError, HARD_MAX_BYTES};

/// How far a reader goes for one blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchLimits {
    /// The largest body accepted, in bytes.
    pub max_bytes: usize,
    /// The most one request may take, body included.
    pub timeout: Duration,
    /// The most connecting may take.
    pub connect_timeout: Duration,
    /// Redirects followed per request.
    pub redirects: usize,
    /// Requests per source (the first and its retries).
    pub attempts: u32,
    /// The wait before the first retry; doubled for each next one.
    pub backoff: Duration,
    /// The longest `Retry-After` honoured (a longer one waits this long).
    pub max_retry_after: Duration,
    /// The most time spent on one source, retries and waits included.
    pub source_budget: Duration,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            max_bytes: HARD_MAX_BYTES,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            redirects: 3,
            attempts: 3,
            backoff: Duration::from_millis(250),
            max_retry_after: Duration::from_secs(2),
            source_budget: Duration::from_secs(15),
        }
    }
}

/// Why a blob could not be read, and whether trying later may help.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Every source answered that it does not have the blob (or was not
    /// reachable for good: a redirect loop, a 4xx). Trying later is unlikely
    /// to help.
    #[error("no source has blob sha256:{hash} ({tried})")]
    NotFound {
        /// The blob.
        hash: BlobHash,
        /// What each source answered.
        tried: String,
    },
    /// A source failed in a way that may pass (a 5xx or 429 after retries,
    /// a timeout, a refused connection, the local store's disk): try later.
    #[error("blob sha256:{hash} is unavailable for now ({tried})")]
    Unavailable {
        /// The blob.
        hash: BlobHash,
        /// What each source answered.
        tried: String,
    },
    /// A location hint, or a redirect from it, named an address this
    /// reader does not reach (loopback, private, link-local, metadata; see
    /// [`super::guard`]), and no other source had the blob. Permanent: the
    /// hint will not become public by waiting.
    #[error("blob sha256:{hash} is behind a refused address ({tried})")]
    RefusedAddress {
        /// The blob.
        hash: BlobHash,
        /// What each source answered.
        tried: String,
    },
    /// The URI is malformed, or the only answers were bytes that do not
    /// hash to it, are too large, or are not what was asked for (an
    /// envelope that is not one).
    #[error("refused {at}: {reason}")]
    Refused {
        /// Where: `the URI`, a source's URL, `the local store`.
        at: String,
        /// Why.
        #[source]
        reason: EnvelopeError,
    },
}

impl FetchError {
    /// Whether trying again later may help ([`FetchError::Unavailable`]).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    pub(super) fn refused(at: impl Into<String>, reason: EnvelopeError) -> Self {
        Self::Refused { at: at.into(), reason }
    }

    /// What kind of failure this is, in words safe to publish: no URL,
    /// status, length or hash of what answered.
    pub fn category(&self) -> FetchCategory {
        match self {
            Self::NotFound { .. } => FetchCategory::NotFound,
            Self::Unavailable { .. } => FetchCategory::Unavailable,
            Self::RefusedAddress { .. } => FetchCategory::RefusedAddress,
            Self::Refused { reason, .. } => match reason {
                EnvelopeError::TooLarge { .. }
                | EnvelopeError::Store(super::BlobError::TooLarge { .. }) => {
                    FetchCategory::TooLarge
                }
                EnvelopeError::HashMismatch { .. } => FetchCategory::Tampered,
                _ => FetchCategory::Malformed,
            },
        }
    }
}

/// A [`FetchError`] as it may be told to a stranger (a decline reason, a
/// run's event): the kind of failure, nothing of what answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FetchCategory {
    /// No source has the blob.
    NotFound,
    /// No source answered in time (or each failed in a way that may pass).
    Unavailable,
    /// The hint leads to an address this reader does not reach.
    RefusedAddress,
    /// Larger than the reader accepts.
    TooLarge,
    /// Bytes that do not hash to the URI.
    Tampered,
    /// A malformed URI or content that is not what was asked for.
    Malformed,
}

impl FetchCategory {
    /// The category in a few words: `not found`, `unavailable`, `refused
    /// address`, `too large`, `tampered`, `malformed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not found",
            Self::Unavailable => "unavailable",
            Self::RefusedAddress => "refused address",
            Self::TooLarge => "too large",
            Self::Tampered => "tampered",
            Self::Malformed => "malformed",
        }
    }
}

impl fmt::Display for FetchCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `Retry-After` in seconds (an HTTP date is not honoured: the backoff
/// applies).
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let secs: u64 =
        headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs))
}

/// A transport failure in a few words (its causes chained).
pub(super) fn transport(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "could not connect".into()
    } else {
        let mut msg = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            msg = format!("{msg}: {s}");
            source = s.source();
        }
        msg
    }
}
