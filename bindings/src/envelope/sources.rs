//! Reading content-addressed blobs written on another machine: a
//! `sha256:` URI resolves through an ordered list of sources, the local
//! store first, then the writer's location hint (`?src=<base-url>`, see
//! [`BlobRef`]), then the configured gateways, each asked `GET
//! <base>/<hex>`. Whatever a source answers is refused unless it hashes to
//! the URI; a blob fetched is put in the local store, so the reader has it
//! next time and serves it on.
//!
//! Every request is bounded ([`FetchLimits`]): the body's size (the
//! `Content-Length` is checked first, the body is streamed and dropped past
//! the cap), the time to connect and to answer, the redirects followed, and
//! the attempts (429, 5xx and transport errors are retried with exponential
//! backoff, a `Retry-After` honoured up to a cap) within a time budget per
//! source. A failure says whether trying again later may help
//! ([`FetchError`]).
//!
//! A hint is a stranger's: unless private hints are allowed (on a local
//! chain, [`BlobSources::on_chain`], or by the operator,
//! [`BlobSources::allow_private_hints`]), the hint and every redirect from
//! it may reach public addresses only ([`super::guard`]); a hint that
//! leads elsewhere is a [`FetchError::RefusedAddress`]. The operator's own
//! gateways are trusted as they are.
//!
//! Fetches are counted through the `metrics` facade:
//! `tessera_blob_fetches_total{source, outcome}` (`source` = `local`,
//! `hint` or `gateway`; `outcome` = `hit`, `not_found`, `error` or
//! `refused`), one per source consulted, and
//! `tessera_blob_fetch_seconds{source}`, the time each remote source took
//! (its retries included). Both are described in [`METRICS`].

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use tessera_metrics::{Kind, Metric};

use super::{
    BlobError, BlobHash, BlobRef, BlobStore, BlobUrl, Envelope, EnvelopeCodec, EnvelopeError,
    FetchError, FetchLimits, HARD_MAX_BYTES,
    fetch::{retry_after, transport},
    guard::{self, Trusted},
};

/// Blob fetches, by source and outcome.
pub const BLOB_FETCHES: &str = "tessera_blob_fetches_total";
/// Seconds a remote source took to answer a blob, retries included.
pub const BLOB_FETCH_SECONDS: &str = "tessera_blob_fetch_seconds";

/// Buckets of [`BLOB_FETCH_SECONDS`]: 5 ms to half a minute.
pub const BLOB_FETCH_BUCKETS: &[f64] =
    &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The blob metrics every party that reads blobs records.
pub const METRICS: &[Metric] = &[
    Metric {
        name: BLOB_FETCHES,
        kind: Kind::Counter,
        labels: &["source", "outcome"],
        help: "Content-addressed blobs looked for, one per source consulted: source=local (this party's store), hint (the URI's ?src= location) or gateway (a configured --blob-gateway); outcome=hit, not_found, error (transient after retries, or a redirect loop or other 4xx), refused (bytes that do not hash right, or over the size limit) or blocked (a hint, or a redirect from it, to a loopback, private, link-local or metadata address).",
        buckets: &[],
    },
    Metric {
        name: BLOB_FETCH_SECONDS,
        kind: Kind::Histogram,
        labels: &["source"],
        help: "Seconds a remote blob source (source=hint or gateway) took to answer, retries included.",
        buckets: BLOB_FETCH_BUCKETS,
    },
];

/// Where blobs are read from (the local store, URI hints, gateways) and
/// how this party publishes its own (its public base URL); see the module
/// docs. Cheap to clone.
#[derive(Clone)]
pub struct BlobSources {
    local: Arc<dyn BlobStore + Send + Sync>,
    gateways: Vec<BlobUrl>,
    follow_hints: bool,
    public: Option<BlobUrl>,
    limits: FetchLimits,
    codec: EnvelopeCodec,
    /// Asks the gateways (and hints, where private ones are allowed).
    client: reqwest::Client,
    /// Asks hints where private ones are refused: public addresses only,
    /// redirects included.
    guarded: reqwest::Client,
    /// The operator's word on private hints, if given.
    private_hints: Option<bool>,
    /// Whether the chain read is a local one (private hints allowed unless
    /// the operator said otherwise).
    local_chain: bool,
    /// Hosts the operator trusts in hints, private or not.
    trusted: Trusted,
}

impl std::fmt::Debug for BlobSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobSources")
            .field("gateways", &self.gateways)
            .field("follow_hints", &self.follow_hints)
            .field("private_hints", &self.allows_private_hints())
            .field("trusted", &self.trusted)
            .field("public", &self.public)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Where one source was asked, for metrics and errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Local,
    Hint,
    Gateway,
}

impl Source {
    fn label(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Hint => "hint",
            Self::Gateway => "gateway",
        }
    }
}

/// What one source answered, after its retries.
enum Answer {
    Hit(Vec<u8>),
    /// It does not have the blob, for good: it said so (404, 410: `absent`),
    /// or answered another 4xx or a redirect loop.
    Missing {
        why: String,
        absent: bool,
    },
    /// It failed in a way that may pass.
    Transient(String),
    /// It answered bytes that are refused.
    Refused(EnvelopeError),
    /// It (or a redirect from it) is an address this reader does not reach.
    Blocked(guard::AddressRefused),
}

impl Answer {
    fn outcome(&self) -> &'static str {
        match self {
            Self::Hit(_) => "hit",
            Self::Missing { absent: true, .. } => "not_found",
            Self::Missing { .. } | Self::Transient(_) => "error",
            Self::Refused(_) => "refused",
            Self::Blocked(_) => "blocked",
        }
    }
}

/// One request's outcome, before retries are decided.
enum Attempt {
    Body(Vec<u8>),
    Missing { why: String, absent: bool },
    TooLarge(u64),
    Retry { why: String, after: Option<Duration> },
    Blocked(guard::AddressRefused),
}

impl From<Arc<dyn BlobStore + Send + Sync>> for BlobSources {
    /// [`BlobSources::new`] over `local`.
    fn from(local: Arc<dyn BlobStore + Send + Sync>) -> Self {
        Self::new(local)
    }
}

impl BlobSources {
    /// Reads from `local`, then from each URI's hint; no gateways; publishes
    /// without a hint; [`FetchLimits::default`].
    pub fn new(local: Arc<dyn BlobStore + Send + Sync>) -> Self {
        let limits = FetchLimits::default();
        let trusted = Trusted::default();
        Self {
            client: client(&limits),
            guarded: guarded_client(&limits, &trusted),
            local,
            gateways: Vec::new(),
            follow_hints: true,
            public: None,
            codec: EnvelopeCodec::default(),
            limits,
            private_hints: None,
            local_chain: false,
            trusted,
        }
    }

    /// Whether hints (and their redirects) may lead to loopback, private,
    /// link-local and metadata addresses: the operator's explicit word,
    /// which [`Self::on_chain`] does not override. Refused by default.
    #[must_use]
    pub fn allow_private_hints(mut self, allow: bool) -> Self {
        self.private_hints = Some(allow);
        self
    }

    /// Reads for the chain `chain_id`: on a local one
    /// ([`guard::is_local_chain`]) private hints are allowed, unless
    /// [`Self::allow_private_hints`] said otherwise.
    #[must_use]
    pub fn on_chain(mut self, chain_id: u64) -> Self {
        self.local_chain = guard::is_local_chain(chain_id);
        self
    }

    /// Hosts trusted in hints whatever their address (`host` or
    /// `host:port`): the operator's partners on a private network.
    #[must_use]
    pub fn trust_hint_hosts(mut self, hosts: Vec<String>) -> Self {
        self.trusted = Trusted::new(hosts);
        self.guarded = guarded_client(&self.limits, &self.trusted);
        self
    }

    /// Whether hints may lead to private addresses (see
    /// [`Self::allow_private_hints`], [`Self::on_chain`]).
    pub fn allows_private_hints(&self) -> bool {
        self.private_hints.unwrap_or(self.local_chain)
    }

    /// Asks `gateways`, in order, after the local store and the hint.
    #[must_use]
    pub fn with_gateways(mut self, gateways: Vec<BlobUrl>) -> Self {
        self.gateways = gateways;
        self
    }

    /// Whether URI hints are followed (yes by default); without them only
    /// the local store and the gateways are asked.
    #[must_use]
    pub fn follow_hints(mut self, follow: bool) -> Self {
        self.follow_hints = follow;
        self
    }

    /// Publishes content-addressed URIs with the hint `?src=<public>`: the
    /// base URL under which this party serves its local store.
    #[must_use]
    pub fn with_public_url(mut self, public: Option<BlobUrl>) -> Self {
        self.public = public;
        self
    }

    /// Other bounds than [`FetchLimits::default`].
    #[must_use]
    pub fn with_limits(mut self, limits: FetchLimits) -> Self {
        self.client = client(&limits);
        self.guarded = guarded_client(&limits, &self.trusted);
        self.codec.max_bytes = limits.max_bytes.min(HARD_MAX_BYTES);
        self.limits = limits;
        self
    }

    /// The same sources over another local store (`local`): read first,
    /// and where fetched blobs are kept. Gateways, hints and limits stay.
    #[must_use]
    pub fn with_local(mut self, local: Arc<dyn BlobStore + Send + Sync>) -> Self {
        self.local = local;
        self
    }

    /// The local store: read first, and where fetched blobs are kept.
    pub fn local(&self) -> &Arc<dyn BlobStore + Send + Sync> {
        &self.local
    }

    /// The base URL this party publishes in hints, if any.
    pub fn public_url(&self) -> Option<&BlobUrl> {
        self.public.as_ref()
    }

    /// The gateways asked, in order.
    pub fn gateways(&self) -> &[BlobUrl] {
        &self.gateways
    }

    /// Whether URI hints are followed.
    pub fn follows_hints(&self) -> bool {
        self.follow_hints
    }

    /// A URI for the JSON document `json`: inline when small, else put in
    /// the local store and named `sha256:<hex>`, hinted with the public URL
    /// when there is one ([`EnvelopeCodec::publish_at`]). Blocking (the
    /// store may be on disk).
    pub fn publish(&self, json: &[u8]) -> Result<String, EnvelopeError> {
        self.codec.publish_at(json, self.local.as_ref(), self.public.as_ref())
    }

    /// [`Self::publish`] of an envelope ([`EnvelopeCodec::encode_at`]).
    pub fn encode(&self, envelope: &Envelope) -> Result<String, EnvelopeError> {
        self.codec.encode_at(envelope, self.local.as_ref(), self.public.as_ref())
    }

    /// Makes the blob behind `uri` local: nothing to do for a `data:` URI or
    /// a blob already in the local store; else it is fetched, verified and
    /// stored, so the synchronous [`EnvelopeCodec::fetch`] and
    /// [`EnvelopeCodec::decode`] over the local store read it.
    pub async fn ensure(&self, uri: &str) -> Result<(), FetchError> {
        match BlobRef::of_uri(uri) {
            Ok(None) => Ok(()),
            Ok(Some(blob)) => self.resolve(&blob).await.map(drop),
            Err(e) => Err(FetchError::refused("the URI", e)),
        }
    }

    /// The JSON bytes behind `uri`, inline or resolved (see [`Self::ensure`]),
    /// size-bounded and hash-verified.
    pub async fn fetch(&self, uri: &str) -> Result<Vec<u8>, FetchError> {
        match BlobRef::of_uri(uri) {
            Ok(None) => self
                .codec
                .fetch(uri, self.local.as_ref())
                .map_err(|e| FetchError::refused("the URI", e)),
            Ok(Some(blob)) => self.resolve(&blob).await,
            Err(e) => Err(FetchError::refused("the URI", e)),
        }
    }

    /// The envelope behind `uri` ([`Self::fetch`], then parsed and checked).
    pub async fn decode(&self, uri: &str) -> Result<Envelope, FetchError> {
        let bytes = self.fetch(uri).await?;
        Envelope::from_json(&bytes).map_err(|e| FetchError::refused("the envelope", e))
    }

    /// The bytes of `blob`: from the local store, else from its hint (when
    /// hints are followed) and the gateways in order, verified and kept in
    /// the local store.
    pub async fn resolve(&self, blob: &BlobRef) -> Result<Vec<u8>, FetchError> {
        let hash = blob.hash;
        let mut tried = Vec::new();
        let mut transient = false;
        let mut refused: Option<FetchError> = None;
        let mut blocked = false;
        match self.local_get(hash).await {
            Ok(Some(bytes)) => {
                count(Source::Local, "hit");
                return Ok(bytes);
            }
            Ok(None) => {
                count(Source::Local, "not_found");
                tried.push("local: none".to_owned());
            }
            Err(e @ EnvelopeError::Store(BlobError::TooLarge { .. })) => {
                count(Source::Local, "refused");
                return Err(FetchError::refused("the local store", e));
            }
            // A damaged copy: fetched again below, which repairs it.
            Err(e @ EnvelopeError::HashMismatch { .. }) => {
                count(Source::Local, "refused");
                tracing::warn!(%hash, error = %e, "local blob is damaged; fetching it again");
                tried.push("local: damaged".to_owned());
            }
            Err(e) => {
                count(Source::Local, "error");
                transient = true;
                tried.push(format!("local: {e}"));
            }
        }
        let mut remotes: Vec<(Source, &BlobUrl)> = Vec::new();
        if self.follow_hints
            && let Some(hint) = &blob.hint
        {
            // A hint naming one of the gateways is that gateway: trusted.
            let source = if self.gateways.contains(hint) { Source::Gateway } else { Source::Hint };
            remotes.push((source, hint));
        }
        for gateway in &self.gateways {
            if !remotes.iter().any(|(_, url)| *url == gateway) {
                remotes.push((Source::Gateway, gateway));
            }
        }
        for (source, base) in remotes {
            let url = base.blob(&hash);
            let started = Instant::now();
            let guarded = source == Source::Hint && !self.allows_private_hints();
            let answer = self.remote_get(&url, hash, guarded).await;
            metrics::histogram!(BLOB_FETCH_SECONDS, "source" => source.label())
                .record(started.elapsed().as_secs_f64());
            count(source, answer.outcome());
            match answer {
                Answer::Hit(bytes) => {
                    tracing::debug!(%hash, source = source.label(), %url, "blob fetched");
                    return self.keep(hash, bytes).await;
                }
                Answer::Missing { why, .. } => tried.push(format!("{url}: {why}")),
                Answer::Transient(why) => {
                    transient = true;
                    tried.push(format!("{url}: {why}"));
                }
                Answer::Refused(reason) => {
                    tracing::warn!(%hash, %url, error = %reason, "blob source answered refused content");
                    tried.push(format!("{url}: refused"));
                    refused.get_or_insert(FetchError::refused(url, reason));
                }
                Answer::Blocked(refusal) => {
                    tracing::warn!(%hash, host = %refusal.host, "blob hint leads to a refused address");
                    blocked = true;
                    tried.push(format!("{url}: {refusal}"));
                }
            }
        }
        let tried = tried.join("; ");
        if transient {
            Err(FetchError::Unavailable { hash, tried })
        } else if let Some(refused) = refused {
            Err(refused)
        } else if blocked {
            Err(FetchError::RefusedAddress { hash, tried })
        } else {
            Err(FetchError::NotFound { hash, tried })
        }
    }

    /// The local copy of `hash`, verified.
    async fn local_get(&self, hash: BlobHash) -> Result<Option<Vec<u8>>, EnvelopeError> {
        let store = Arc::clone(&self.local);
        let max = self.limits.max_bytes;
        let got = tokio::task::spawn_blocking(move || store.get(&hash, max))
            .await
            .map_err(|e| blocking_failed(&e))??;
        match got {
            Some(bytes) if BlobHash::of(&bytes) != hash => {
                Err(EnvelopeError::HashMismatch { expected: hash, actual: BlobHash::of(&bytes) })
            }
            other => Ok(other),
        }
    }

    /// Puts fetched `bytes` in the local store and hands them back.
    async fn keep(&self, hash: BlobHash, bytes: Vec<u8>) -> Result<Vec<u8>, FetchError> {
        let store = Arc::clone(&self.local);
        let kept = tokio::task::spawn_blocking(move || store.put(&bytes).map(|_| bytes))
            .await
            .map_err(|e| blocking_failed(&e))
            .and_then(|kept| kept.map_err(EnvelopeError::from));
        kept.map_err(|e| FetchError::Unavailable {
            hash,
            tried: format!("fetched, but keeping it in the local store failed: {e}"),
        })
    }

    /// One source, with its retries, within its time budget.
    /// A `guarded` source is a stranger's hint: public addresses only.
    async fn remote_get(&self, url: &str, hash: BlobHash, guarded: bool) -> Answer {
        let limits = &self.limits;
        if guarded {
            let checked =
                reqwest::Url::parse(url).map_err(|_| guard::AddressRefused { host: String::new() });
            if let Err(refusal) = checked.and_then(|u| guard::check_url(&u, &self.trusted)) {
                return Answer::Blocked(refusal);
            }
        }
        let client = if guarded { &self.guarded } else { &self.client };
        let started = Instant::now();
        let mut wait = limits.backoff;
        for attempt in 1..=limits.attempts.max(1) {
            let left = limits.source_budget.saturating_sub(started.elapsed());
            let timeout = limits.timeout.min(left);
            match self.get_once(client, url, timeout).await {
                Attempt::Body(bytes) => {
                    let actual = BlobHash::of(&bytes);
                    return if actual == hash {
                        Answer::Hit(bytes)
                    } else {
                        Answer::Refused(EnvelopeError::HashMismatch { expected: hash, actual })
                    };
                }
                Attempt::Missing { why, absent } => return Answer::Missing { why, absent },
                Attempt::Blocked(refusal) => return Answer::Blocked(refusal),
                Attempt::TooLarge(len) => {
                    let len = usize::try_from(len).unwrap_or(usize::MAX);
                    return Answer::Refused(EnvelopeError::TooLarge { len, max: limits.max_bytes });
                }
                Attempt::Retry { why, after } => {
                    let pause = after.map_or(wait, |a| a.min(limits.max_retry_after));
                    let spent = started.elapsed() + pause;
                    if attempt >= limits.attempts || spent >= limits.source_budget {
                        return Answer::Transient(format!("{why} after {attempt} attempt(s)"));
                    }
                    tracing::debug!(%url, attempt, %why, pause_ms = pause.as_millis() as u64, "blob fetch failed; retrying");
                    tokio::time::sleep(pause).await;
                    wait = wait.saturating_mul(2);
                }
            }
        }
        Answer::Transient("no attempt made".into())
    }

    /// One request: the body, up to the size cap, or what went wrong.
    async fn get_once(&self, client: &reqwest::Client, url: &str, timeout: Duration) -> Attempt {
        let max = self.limits.max_bytes;
        let resp = match client.get(url).timeout(timeout).send().await {
            Ok(resp) => resp,
            Err(e) if let Some(refusal) = guard::refusal(&e) => return Attempt::Blocked(refusal),
            Err(e) if e.is_redirect() => {
                return Attempt::Missing { why: "too many redirects".into(), absent: false };
            }
            Err(e) if e.is_builder() => {
                return Attempt::Missing { why: format!("bad request: {e}"), absent: false };
            }
            Err(e) => return Attempt::Retry { why: transport(&e), after: None },
        };
        let status = resp.status();
        if status == StatusCode::TOO_MANY_REQUESTS
            || status == StatusCode::REQUEST_TIMEOUT
            || status.is_server_error()
        {
            return Attempt::Retry {
                why: status.as_u16().to_string(),
                after: retry_after(resp.headers()),
            };
        }
        if !status.is_success() {
            let absent = status == StatusCode::NOT_FOUND || status == StatusCode::GONE;
            return Attempt::Missing { why: status.as_u16().to_string(), absent };
        }
        if let Some(len) = resp.content_length()
            && len > max as u64
        {
            return Attempt::TooLarge(len);
        }
        let mut resp = resp;
        let mut body = Vec::with_capacity(resp.content_length().map_or(0, |l| l as usize));
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > max {
                        // Stop reading: dropping the response closes it.
                        return Attempt::TooLarge((body.len() + chunk.len()) as u64);
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Attempt::Body(body),
                Err(e) => return Attempt::Retry { why: transport(&e), after: None },
            }
        }
    }
}

fn client(limits: &FetchLimits) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(limits.connect_timeout)
        .timeout(limits.timeout)
        .redirect(reqwest::redirect::Policy::limited(limits.redirects))
        .user_agent(concat!("tessera-blobs/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("an HTTP client with timeouts and a redirect policy builds")
}

/// The client for strangers' hints: only public addresses are resolved
/// to, every redirect checked, no proxy (a proxy would reach what the
/// resolver refuses).
fn guarded_client(limits: &FetchLimits, trusted: &Trusted) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(limits.connect_timeout)
        .timeout(limits.timeout)
        .redirect(guard::redirect_policy(limits.redirects, trusted.clone()))
        .dns_resolver(guard::resolver(trusted.clone()))
        .no_proxy()
        .user_agent(concat!("tessera-blobs/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("an HTTP client with timeouts, a resolver and a redirect policy builds")
}

fn count(source: Source, outcome: &'static str) {
    metrics::counter!(BLOB_FETCHES, "source" => source.label(), "outcome" => outcome).increment(1);
}

fn blocking_failed(e: &tokio::task::JoinError) -> EnvelopeError {
    EnvelopeError::Store(BlobError::Io {
        path: "(blob store task)".into(),
        source: std::io::Error::other(e.to_string()),
    })
}

#[cfg(test)]
#[path = "sources_tests.rs"]
mod tests;
