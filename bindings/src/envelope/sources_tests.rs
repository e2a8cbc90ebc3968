//! [`BlobSources`] against a real HTTP server on loopback, one route per
//! behaviour: `/good`, `/flaky` (503 twice), `/limited` (429 with
//! `Retry-After` once), `/tampered`, `/big` (with or without a
//! `Content-Length`), `/loop` (redirects to itself), `/gone` (404), `/redirect` (302
//! to the base set in `redirect_to`).
//!
//! The server is on loopback: the readers here allow private hints
//! ([`BlobSources::allow_private_hints`]), but those that test the guard,
//! which trust the fixture's own `host:port` and nothing else on loopback.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{
    Router,
    body::Body,
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

use futures_util::StreamExt as _;

use super::*;
use crate::envelope::{MemoryBlobStore, Parent, uri_hash};

#[derive(Default)]
struct Server {
    blobs: Mutex<HashMap<String, Vec<u8>>>,
    hits: Mutex<HashMap<String, usize>>,
    /// Bytes `/big` produced.
    produced: Arc<AtomicUsize>,
    /// Where `/redirect/<hex>` sends: `<base>/<hex>`.
    redirect_to: Mutex<String>,
}

impl Server {
    fn hit(&self, kind: &str) -> usize {
        let mut hits = self.hits.lock().unwrap();
        let n = hits.entry(kind.to_owned()).or_default();
        *n += 1;
        *n
    }

    fn hits(&self, kind: &str) -> usize {
        self.hits.lock().unwrap().get(kind).copied().unwrap_or_default()
    }
}

const BIG_CHUNK: usize = 64 * 1024;
const BIG_CHUNKS: usize = 1024;

async fn serve(
    State(s): State<Arc<Server>>,
    Path((kind, hex)): Path<(String, String)>,
) -> Response {
    let n = s.hit(&kind);
    let stored = s.blobs.lock().unwrap().get(&hex).cloned();
    let ok = |bytes: Vec<u8>| (StatusCode::OK, bytes).into_response();
    match (kind.as_str(), stored) {
        ("flaky", Some(_)) if n <= 2 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        ("limited", Some(_)) if n == 1 => {
            (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "1")]).into_response()
        }
        ("slow-down", Some(_)) if n == 1 => {
            (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "60")]).into_response()
        }
        ("down", _) => StatusCode::BAD_GATEWAY.into_response(),
        ("good" | "flaky" | "limited" | "slow-down", Some(bytes)) => ok(bytes),
        ("tampered", Some(mut bytes)) => {
            bytes[0] ^= 1;
            ok(bytes)
        }
        ("big" | "big-chunked", _) => {
            let produced = Arc::clone(&s.produced);
            let chunks = futures_util::stream::iter(0..BIG_CHUNKS).map(move |_| {
                produced.fetch_add(BIG_CHUNK, Ordering::SeqCst);
                Ok::<_, std::io::Error>(vec![b'x'; BIG_CHUNK])
            });
            let mut resp = Response::new(Body::from_stream(chunks));
            if kind == "big" {
                resp.headers_mut().insert(
                    header::CONTENT_LENGTH,
                    (BIG_CHUNK * BIG_CHUNKS).to_string().parse().unwrap(),
                );
            }
            resp
        }
        ("redirect", _) => {
            let to = format!("{}/{hex}", s.redirect_to.lock().unwrap());
            (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
        }
        ("loop", _) => {
            (StatusCode::FOUND, [(header::LOCATION, format!("/loop/{hex}"))]).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

struct Fixture {
    server: Arc<Server>,
    base: String,
}

impl Fixture {
    async fn start() -> Self {
        let server = Arc::new(Server::default());
        let app = Router::new().route("/{kind}/{hex}", get(serve)).with_state(Arc::clone(&server));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { server, base }
    }

    /// Serves `json` on every route; its hash.
    fn offer(&self, json: &[u8]) -> BlobHash {
        let hash = BlobHash::of(json);
        self.server.blobs.lock().unwrap().insert(hash.to_string(), json.to_vec());
        hash
    }

    fn port(&self) -> u16 {
        self.base.rsplit_once(':').unwrap().1.parse().unwrap()
    }

    fn url(&self, kind: &str) -> BlobUrl {
        BlobUrl::parse(&format!("{}/{kind}", self.base)).unwrap()
    }

    fn uri(&self, hash: BlobHash, kind: &str) -> String {
        BlobRef { hash, hint: Some(self.url(kind)) }.to_string()
    }
}

fn fast() -> FetchLimits {
    FetchLimits { backoff: Duration::from_millis(20), ..FetchLimits::default() }
}

fn reader() -> (Arc<MemoryBlobStore>, BlobSources) {
    let local = Arc::new(MemoryBlobStore::new());
    let sources = BlobSources::new(local.clone()).with_limits(fast()).allow_private_hints(true);
    (local, sources)
}

fn big_json() -> Vec<u8> {
    let mut env = Envelope::new(Parent::Task("1".into()), "Summarize");
    env.source = Some("word ".repeat(2_000));
    env.to_json().unwrap()
}

#[tokio::test]
async fn a_hinted_blob_is_fetched_verified_and_kept() {
    let f = Fixture::start().await;
    let json = big_json();
    let hash = f.offer(&json);
    let (local, sources) = reader();
    let uri = f.uri(hash, "good");
    assert_eq!(sources.fetch(&uri).await.unwrap(), json);
    assert_eq!(local.get(&hash, HARD_MAX_BYTES).unwrap().as_deref(), Some(json.as_slice()));
    // Kept: the next read is local, and the sync codec reads it too.
    sources.ensure(&uri).await.unwrap();
    assert_eq!(sources.decode(&uri).await.unwrap().spec, "Summarize");
    assert_eq!(f.server.hits("good"), 1);
    assert_eq!(EnvelopeCodec::default().decode(&uri, local.as_ref()).unwrap().spec, "Summarize");
}

#[tokio::test]
async fn a_gateway_serves_what_the_uri_does_not_locate() {
    let f = Fixture::start().await;
    let json = big_json();
    let hash = f.offer(&json);
    let (_, sources) = reader();
    let sources = sources.with_gateways(vec![f.url("gone"), f.url("good")]);
    assert_eq!(sources.fetch(&format!("sha256:{hash}")).await.unwrap(), json);
    assert_eq!((f.server.hits("gone"), f.server.hits("good")), (1, 1));
    // A hint that serves tampered bytes does not stop the gateway's answer.
    let other = br#"{"parent":"task:2","spec":"another"}"#;
    let hash = f.offer(other);
    let (_, sources) = reader();
    let sources = sources.with_gateways(vec![f.url("good")]);
    assert_eq!(sources.fetch(&f.uri(hash, "tampered")).await.unwrap(), other);
}

#[tokio::test]
async fn nothing_anywhere_is_not_found() {
    let f = Fixture::start().await;
    let hash = BlobHash::of(b"nobody has this");
    let (_, sources) = reader();
    let sources = sources.with_gateways(vec![f.url("gone")]);
    let err = sources.ensure(&f.uri(hash, "good")).await.unwrap_err();
    assert!(matches!(&err, FetchError::NotFound { hash: h, .. } if *h == hash), "{err}");
    assert!(!err.is_transient());
    let msg = err.to_string();
    assert!(msg.contains("local: none") && msg.contains("/good/") && msg.contains("404"), "{msg}");
    // Asked once each: a 404 is not retried.
    assert_eq!((f.server.hits("good"), f.server.hits("gone")), (1, 1));
}

#[tokio::test]
async fn transient_failures_are_retried_then_reported_as_unavailable() {
    let f = Fixture::start().await;
    let json = big_json();
    let hash = f.offer(&json);
    let (_, sources) = reader();
    assert_eq!(sources.fetch(&f.uri(hash, "flaky")).await.unwrap(), json);
    assert_eq!(f.server.hits("flaky"), 3);

    let (_, sources) = reader();
    let err = sources.fetch(&f.uri(hash, "down")).await.unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(err.to_string().contains("502 after 3 attempt(s)"), "{err}");
    assert_eq!(f.server.hits("down"), 3);

    // Nobody listening: a transport error, retried, unavailable.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let (_, sources) = reader();
    let hint = BlobUrl::parse(&format!("http://{addr}/blobs")).unwrap();
    let err = sources.fetch(&BlobRef { hash, hint: Some(hint) }.to_string()).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::Unavailable { tried, .. } if tried.contains("could not connect")),
        "{err}"
    );

    // Unavailable beats not found: another source may come back.
    let (_, sources) = reader();
    let sources = sources.with_gateways(vec![f.url("gone")]);
    assert!(sources.fetch(&f.uri(hash, "down")).await.unwrap_err().is_transient());
}

#[tokio::test]
async fn retry_after_is_honoured_up_to_its_cap() {
    let f = Fixture::start().await;
    let json = big_json();
    let hash = f.offer(&json);
    let (_, sources) = reader();
    let started = Instant::now();
    assert_eq!(sources.fetch(&f.uri(hash, "limited")).await.unwrap(), json);
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(f.server.hits("limited"), 2);

    // Retry-After: 60 waits the cap, not a minute.
    let (_, sources) = reader();
    let sources =
        sources.with_limits(FetchLimits { max_retry_after: Duration::from_millis(100), ..fast() });
    let started = Instant::now();
    assert_eq!(sources.fetch(&f.uri(hash, "slow-down")).await.unwrap(), json);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test]
async fn tampered_bytes_are_refused() {
    let f = Fixture::start().await;
    let hash = f.offer(&big_json());
    let (local, sources) = reader();
    let err = sources.fetch(&f.uri(hash, "tampered")).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::Refused { reason: EnvelopeError::HashMismatch { expected, .. }, at } if *expected == hash && at.contains("/tampered/")),
        "{err}"
    );
    assert!(!err.is_transient());
    assert_eq!(local.get(&hash, HARD_MAX_BYTES).unwrap(), None, "nothing kept");
    assert_eq!(f.server.hits("tampered"), 1, "not retried");
}

#[tokio::test]
async fn oversized_bodies_are_refused_without_reading_them_whole() {
    let total = BIG_CHUNK * BIG_CHUNKS;
    for kind in ["big", "big-chunked"] {
        let f = Fixture::start().await;
        let hash = BlobHash::of(kind.as_bytes());
        let (_, sources) = reader();
        let max = 4 * BIG_CHUNK;
        let sources = sources.with_limits(FetchLimits { max_bytes: max, ..fast() });
        let err = sources.fetch(&f.uri(hash, kind)).await.unwrap_err();
        match &err {
            FetchError::Refused { reason: EnvelopeError::TooLarge { len, max: m }, .. } => {
                assert_eq!(*m, max);
                if kind == "big" {
                    assert_eq!(*len, total, "the Content-Length is refused up front");
                } else {
                    assert!(*len > max && *len <= max + BIG_CHUNK, "{len}");
                }
            }
            other => panic!("{kind}: {other}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let produced = f.server.produced.load(Ordering::SeqCst);
        assert!(produced < total / 4, "{kind}: the server produced {produced} of {total} bytes");
        assert_eq!(f.server.hits(kind), 1, "not retried");
    }
}

#[tokio::test]
async fn a_redirect_loop_is_cut_short() {
    let f = Fixture::start().await;
    let hash = f.offer(&big_json());
    let (_, sources) = reader();
    let err = sources.fetch(&f.uri(hash, "loop")).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::NotFound { tried, .. } if tried.contains("too many redirects")),
        "{err}"
    );
    // The first request and three redirects, not retried.
    assert_eq!(f.server.hits("loop"), 4);
}

#[tokio::test]
async fn hints_are_ignored_when_disabled() {
    let f = Fixture::start().await;
    let json = big_json();
    let hash = f.offer(&json);
    let (_, sources) = reader();
    let sources = sources.follow_hints(false);
    assert!(!sources.follows_hints());
    let err = sources.fetch(&f.uri(hash, "good")).await.unwrap_err();
    assert!(matches!(err, FetchError::NotFound { .. }), "{err}");
    assert_eq!(f.server.hits("good"), 0);
    // The gateways still are asked.
    let sources = sources.with_gateways(vec![f.url("good")]);
    assert_eq!(sources.fetch(&f.uri(hash, "good")).await.unwrap(), json);
    assert_eq!(f.server.hits("good"), 1, "once, not once as hint and once as gateway");
}

#[tokio::test]
async fn inline_and_malformed_uris_need_no_request() {
    let (local, sources) = reader();
    let env = Envelope::new(Parent::Task("3".into()), "inline");
    let uri = EnvelopeCodec::default().encode(&env, local.as_ref()).unwrap();
    sources.ensure(&uri).await.unwrap();
    assert_eq!(sources.decode(&uri).await.unwrap(), env);
    for bad in ["ipfs://Qm", "sha256:zz", "sha256:00?src=ftp://x"] {
        let err = sources.ensure(bad).await.unwrap_err();
        assert!(matches!(&err, FetchError::Refused { at, .. } if at == "the URI"), "{bad}: {err}");
    }
    let bad = format!("sha256:{}?src=http://h/a b", BlobHash::of(b"x"));
    assert!(matches!(
        sources.fetch(&bad).await,
        Err(FetchError::Refused { reason: EnvelopeError::InvalidHint(_), .. })
    ));
    // Not an envelope: refused by decode, fine for fetch.
    let uri = crate::envelope::percent_data_uri(br#"{"a":1}"#);
    assert_eq!(sources.fetch(&uri).await.unwrap(), br#"{"a":1}"#);
    assert!(matches!(sources.decode(&uri).await, Err(FetchError::Refused { .. })));
}

#[tokio::test]
async fn a_damaged_local_copy_is_fetched_again_and_repaired() {
    let f = Fixture::start().await;
    let json = big_json();
    let hash = f.offer(&json);
    let dir = tempfile::tempdir().unwrap();
    let local = Arc::new(crate::envelope::FsBlobStore::new(dir.path()));
    local.put(&json).unwrap();
    std::fs::write(local.path_of(&hash), b"damaged").unwrap();
    let sources = BlobSources::new(local.clone()).with_limits(fast()).allow_private_hints(true);
    assert_eq!(sources.fetch(&f.uri(hash, "good")).await.unwrap(), json);
    assert_eq!(std::fs::read(local.path_of(&hash)).unwrap(), json, "repaired");
    assert_eq!(f.server.hits("good"), 1);
}

#[test]
fn writers_publish_with_their_hint() {
    let local = Arc::new(MemoryBlobStore::new());
    let public = BlobUrl::parse("http://10.1.2.3:7000/blobs").unwrap();
    let sources = BlobSources::new(local.clone()).with_public_url(Some(public.clone()));
    let json = big_json();
    let uri = sources.publish(&json).unwrap();
    let hash = BlobHash::of(&json);
    assert_eq!(uri, format!("sha256:{hash}?src=http://10.1.2.3:7000/blobs"));
    assert_eq!(BlobRef::of_uri(&uri).unwrap(), Some(BlobRef { hash, hint: Some(public) }));
    assert_eq!(EnvelopeCodec::default().fetch(&uri, local.as_ref()).unwrap(), json);
    // Small documents stay inline, hint or not.
    assert!(sources.publish(b"{}").unwrap().starts_with("data:"));
    // The escrow's hash is of the URI as written.
    assert_ne!(uri_hash(&uri), uri_hash(&format!("sha256:{hash}")));
    let env = Envelope::from_json(&json).unwrap();
    assert_eq!(sources.encode(&env).unwrap(), uri);
    let plain = BlobSources::new(local);
    assert_eq!(plain.publish(&json).unwrap(), format!("sha256:{hash}"));
}

/// A reader as a stranger's hint finds it by default: private hints
/// refused, nothing trusted.
fn guarded() -> (Arc<MemoryBlobStore>, BlobSources) {
    let local = Arc::new(MemoryBlobStore::new());
    (local.clone(), BlobSources::new(local).with_limits(fast()))
}

#[tokio::test]
async fn a_hint_at_a_private_address_is_refused_by_default_and_never_asked() {
    let f = Fixture::start().await;
    let json = big_json();
    let hash = f.offer(&json);
    let (local, sources) = guarded();
    assert!(!sources.allows_private_hints());
    let err = sources.fetch(&f.uri(hash, "good")).await.unwrap_err();
    assert!(matches!(&err, FetchError::RefusedAddress { hash: h, .. } if *h == hash), "{err}");
    assert!(!err.is_transient(), "waiting does not make a hint public");
    assert_eq!(err.category(), crate::envelope::FetchCategory::RefusedAddress);
    assert_eq!(f.server.hits("good"), 0, "no request made");
    assert_eq!(local.get(&hash, HARD_MAX_BYTES).unwrap(), None);
    // `localhost` and other spellings of loopback, and the metadata names.
    for hint in [
        format!("http://localhost:{}/good", f.port()),
        format!("http://127.1:{}/good", f.port()),
        format!("http://[::ffff:127.0.0.1]:{}/good", f.port()),
        "http://169.254.169.254/latest".to_owned(),
        "http://metadata.google.internal/v1".to_owned(),
    ] {
        let uri = BlobRef { hash, hint: Some(BlobUrl::parse(&hint).unwrap()) }.to_string();
        let err = sources.fetch(&uri).await.unwrap_err();
        assert!(matches!(err, FetchError::RefusedAddress { .. }), "{hint}: {err}");
    }
    assert_eq!(f.server.hits("good"), 0);
    // A gateway the operator configured is trusted as it is.
    let sources = sources.with_gateways(vec![f.url("good")]);
    assert_eq!(sources.fetch(&f.uri(hash, "good")).await.unwrap(), json);
    assert_eq!(f.server.hits("good"), 1, "asked once, as the gateway");
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_refused() {
    // The hint's host is one the operator trusts; what it redirects to is
    // another loopback server (the "internal service"), which answers.
    let hint = Fixture::start().await;
    let internal = Fixture::start().await;
    let json = big_json();
    let hash = internal.offer(&json);
    *hint.server.redirect_to.lock().unwrap() = format!("{}/good", internal.base);
    let (_, sources) = guarded();
    let sources = sources.trust_hint_hosts(vec![format!("127.0.0.1:{}", hint.port())]);
    let err = sources.fetch(&hint.uri(hash, "redirect")).await.unwrap_err();
    assert!(
        matches!(&err, FetchError::RefusedAddress { tried, .. } if tried.contains("refused address")),
        "{err}"
    );
    assert_eq!(hint.server.hits("redirect"), 1, "not retried");
    assert_eq!(internal.server.hits("good"), 0, "the internal server is never asked");
    // By name too: `localhost` on the same port is not the trusted host.
    *hint.server.redirect_to.lock().unwrap() = format!("http://localhost:{}/good", internal.port());
    let err = sources.fetch(&hint.uri(hash, "redirect")).await.unwrap_err();
    assert!(matches!(err, FetchError::RefusedAddress { .. }), "{err}");
    assert_eq!(internal.server.hits("good"), 0);

    // Allowed (a local chain, or the operator's flag): followed.
    let allowed = sources.clone().on_chain(crate::envelope::LOCAL_CHAIN_ID);
    assert!(allowed.allows_private_hints());
    *hint.server.redirect_to.lock().unwrap() = format!("{}/good", internal.base);
    assert_eq!(allowed.fetch(&hint.uri(hash, "redirect")).await.unwrap(), json);
    assert_eq!(internal.server.hits("good"), 1);
    // The operator's word beats the chain's.
    let (_, forced) = guarded();
    let forced = forced.allow_private_hints(false).on_chain(crate::envelope::LOCAL_CHAIN_ID);
    assert!(!forced.allows_private_hints());
    let (_, flagged) = guarded();
    assert!(flagged.allow_private_hints(true).on_chain(1).allows_private_hints());
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_by_the_resolver() {
    // Past the URL check (called directly): the resolver itself refuses,
    // and the refusal is recognised through the client's error.
    let f = Fixture::start().await;
    let hash = f.offer(&big_json());
    let (_, sources) = guarded();
    let url = format!("http://localhost:{}/good/{hash}", f.port());
    let got = sources.get_once(&sources.guarded, &url, Duration::from_secs(5)).await;
    assert!(matches!(got, Attempt::Blocked(r) if r.host == "localhost"));
    assert_eq!(f.server.hits("good"), 0);
}
