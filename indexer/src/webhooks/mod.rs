//! Webhooks: subscribers register a URL and a filter (plan, agent, funder,
//! event kinds); every event indexed after that which the filter matches
//! is POSTed to them, signed with their secret (HMAC-SHA256), at least
//! once, under an idempotency key.
//!
//! - The outbox is durable ([`crate::store`]): a delivery is written in
//!   the transaction that stores its event, and the retraction of an event
//!   a reorganisation takes away in the one that rolls it back. A crash
//!   loses none and writes none twice; ingestion only inserts rows.
//! - [`deliver`]: the loop that reads the outbox and POSTs, with retries
//!   under a capped exponential backoff, a time limit per request and a
//!   bound on the requests in flight per subscriber.
//! - [`routes`]: `POST`, `GET` and `DELETE` on `/api/webhooks`, behind a
//!   bearer token.
//!
//! This module holds the pure parts: filters and their matching, the
//! signature, the backoff, the checks of a registration.

pub mod deliver;
pub mod routes;

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// Header carrying `sha256=<hex HMAC-SHA256(secret, body)>`.
pub const SIGNATURE_HEADER: &str = "X-Tessera-Signature";
/// Header carrying the delivery's idempotency key.
pub const DELIVERY_HEADER: &str = "X-Tessera-Delivery";
/// Header carrying when the attempt was sent (Unix milliseconds).
pub const TIMESTAMP_HEADER: &str = "X-Tessera-Timestamp";

/// Subscribers one index keeps at most.
pub const MAX_WEBHOOKS: i64 = 100;

/// Longest URL a subscriber may register.
pub const MAX_URL_LEN: usize = 2_048;

/// Bounds of a secret the subscriber chooses (characters).
pub const SECRET_LEN: std::ops::RangeInclusive<usize> = 16..=256;

/// Every event name the index stores, as a filter's `kinds` names them.
pub const KINDS: &[&str] = &[
    "TaskCreated",
    "TaskAccepted",
    "TaskCompleted",
    "TaskDisputed",
    "DisputeRuled",
    "RulingAppealed",
    "AppealRuled",
    "TaskReassigned",
    "TaskDeclined",
    "TaskSettled",
    "AgentRegistered",
    "CapabilitySet",
    "CapabilityRemoved",
    "MetadataUpdated",
    "AgentPaused",
    "AgentResumed",
    "AgentLeft",
    "IdentityLinked",
    "NewFeedback",
    "FeedbackRevoked",
    "ResponseAppended",
    "Other",
];

/// Which events a subscriber wants. A part left out matches every event;
/// the parts given must all match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookFilter {
    /// Events of tasks of this plan (`0x` + 64 hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Registry events of this agent, and events of tasks it was named
    /// executor of at creation (`0x` + 40 hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Events of tasks this address funded (`0x` + 40 hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub funder: Option<String>,
    /// Event names ([`KINDS`]); empty for every kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
}

/// What a filter is matched against: an event's name and, lowercase, the
/// plan, funder and executor of its task (escrow events) or its agent
/// (registry events).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventFacts<'a> {
    /// Event name.
    pub kind: &'a str,
    /// The task's plan.
    pub plan: Option<&'a str>,
    /// The task's funder.
    pub funder: Option<&'a str>,
    /// The task's executor at creation.
    pub executor: Option<&'a str>,
    /// The registry event's agent.
    pub agent: Option<&'a str>,
}

impl WebhookFilter {
    /// Whether the event is one the subscriber wants.
    pub fn matches(&self, e: &EventFacts<'_>) -> bool {
        let same = |want: &Option<String>, got: Option<&str>| {
            want.as_deref().is_none_or(|w| got.is_some_and(|g| g.eq_ignore_ascii_case(w)))
        };
        (self.kinds.is_empty() || self.kinds.iter().any(|k| k == e.kind))
            && same(&self.plan, e.plan)
            && same(&self.funder, e.funder)
            && self.agent.as_deref().is_none_or(|a| {
                [e.agent, e.executor].iter().flatten().any(|g| g.eq_ignore_ascii_case(a))
            })
    }

    /// The filter checked and normalised (lowercase hex, kinds once each);
    /// a message naming the first bad part otherwise.
    pub fn checked(mut self) -> Result<Self, String> {
        let hex = |v: &mut Option<String>, name: &str, digits: usize| -> Result<(), String> {
            if let Some(s) = v {
                let ok = s.len() == digits + 2
                    && (s.starts_with("0x") || s.starts_with("0X"))
                    && s[2..].bytes().all(|b| b.is_ascii_hexdigit());
                if !ok {
                    return Err(format!("filter.{name} {s:?} is not 0x and {digits} hex digits"));
                }
                *s = s.to_ascii_lowercase();
            }
            Ok(())
        };
        hex(&mut self.plan, "plan", 64)?;
        hex(&mut self.agent, "agent", 40)?;
        hex(&mut self.funder, "funder", 40)?;
        if self.kinds.len() > KINDS.len() {
            return Err(format!(
                "filter.kinds lists {} names; at most {}",
                self.kinds.len(),
                KINDS.len()
            ));
        }
        for k in &self.kinds {
            if !KINDS.contains(&k.as_str()) {
                return Err(format!(
                    "filter.kinds: {k:?} is not an event name (one of {})",
                    KINDS.join(", ")
                ));
            }
        }
        self.kinds.sort();
        self.kinds.dedup();
        Ok(self)
    }
}

/// A subscriber's URL checked: absolute, `http` or `https`, with a host,
/// without credentials, at most [`MAX_URL_LEN`] long.
pub fn check_url(url: &str) -> Result<reqwest::Url, String> {
    if url.len() > MAX_URL_LEN {
        return Err(format!("url is {} characters long; at most {MAX_URL_LEN}", url.len()));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("url {url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "url {url:?}: the scheme must be http or https, not {}",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("url {url:?} has no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!("url {url:?} carries credentials; deliveries are signed instead"));
    }
    Ok(parsed)
}

/// A secret the subscriber chose, checked: [`SECRET_LEN`] printable ASCII
/// characters.
pub fn check_secret(secret: &str) -> Result<(), String> {
    if !SECRET_LEN.contains(&secret.len()) {
        return Err(format!(
            "secret must be {} to {} characters long",
            SECRET_LEN.start(),
            SECRET_LEN.end()
        ));
    }
    if !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("secret must be printable ASCII without spaces".into());
    }
    Ok(())
}

/// A fresh secret: 32 random bytes as 64 hex digits.
pub fn new_secret() -> String {
    alloy::hex::encode(random_bytes())
}

/// A fresh subscriber id: `wh_` and 24 hex digits.
pub fn new_id() -> String {
    format!("wh_{}", alloy::hex::encode(&random_bytes()[..12]))
}

/// 32 bytes from the operating system's CSPRNG (the one the local signer
/// draws its keys from).
fn random_bytes() -> [u8; 32] {
    alloy::signers::local::PrivateKeySigner::random().to_bytes().0
}

/// The value of [`SIGNATURE_HEADER`] for `body`: `sha256=` and the hex
/// HMAC-SHA256 of the body under `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(body);
    format!("sha256={}", alloy::hex::encode(mac.finalize().into_bytes()))
}

/// Whether `header` is the signature of `body` under `secret` (compared in
/// constant time): what a receiver checks.
pub fn verify(secret: &[u8], body: &[u8], header: &str) -> bool {
    let Some(hex) = header.strip_prefix("sha256=") else { return false };
    let Ok(tag) = alloy::hex::decode(hex) else { return false };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(body);
    mac.verify_slice(&tag).is_ok()
}

/// The wait before attempt `attempts + 1` after `attempts` failed ones:
/// `base` doubled per failure, at most `cap`.
pub fn backoff(attempts: u32, base: Duration, cap: Duration) -> Duration {
    let doublings = attempts.saturating_sub(1).min(30);
    base.saturating_mul(1u32 << doublings).min(cap)
}

/// A registered subscriber, as listed (its secret is never shown again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Webhook {
    /// Its id.
    pub id: String,
    /// Where deliveries are POSTed.
    pub url: String,
    /// Which events it gets.
    pub filter: WebhookFilter,
    /// When it was registered (Unix ms).
    pub created: i64,
    /// Deliveries waiting (or being retried).
    pub pending: i64,
    /// Deliveries discarded, oldest first, when its pending ones passed the
    /// bound.
    pub dropped: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_hmac_sha256_hex_and_verify() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let sig = signature(b"s3cret-s3cret-s3cret", b"{\"a\":1}");
        assert!(verify(b"s3cret-s3cret-s3cret", b"{\"a\":1}", &sig));
        assert!(!verify(b"s3cret-s3cret-s3cret", b"{\"a\":2}", &sig));
        assert!(!verify(b"another-secret-entirely", b"{\"a\":1}", &sig));
        assert!(!verify(b"s3cret-s3cret-s3cret", b"{\"a\":1}", sig.trim_start_matches("sha256=")));
        assert!(!verify(b"s3cret-s3cret-s3cret", b"{\"a\":1}", "sha256=zz"));
    }

    #[test]
    fn backoff_doubles_from_the_base_up_to_the_cap() {
        let (base, cap) = (Duration::from_millis(500), Duration::from_secs(60));
        let waits: Vec<u128> = (1..=9).map(|n| backoff(n, base, cap).as_millis()).collect();
        assert_eq!(waits, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
        assert_eq!(backoff(0, base, cap), base);
        assert_eq!(backoff(u32::MAX, base, cap), cap);
    }

    fn facts() -> EventFacts<'static> {
        EventFacts {
            kind: "TaskCreated",
            plan: Some("0xaa"),
            funder: Some("0xf1"),
            executor: Some("0xe1"),
            agent: None,
        }
    }

    #[test]
    fn filters_match_when_every_part_given_matches() {
        let f = |plan: Option<&str>, agent: Option<&str>, funder: Option<&str>, kinds: &[&str]| {
            WebhookFilter {
                plan: plan.map(Into::into),
                agent: agent.map(Into::into),
                funder: funder.map(Into::into),
                kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
            }
        };
        let e = facts();
        assert!(WebhookFilter::default().matches(&e));
        assert!(f(Some("0xAA"), None, None, &[]).matches(&e));
        assert!(!f(Some("0xab"), None, None, &[]).matches(&e));
        assert!(f(None, Some("0xe1"), None, &[]).matches(&e), "the executor");
        assert!(!f(None, Some("0xf1"), None, &[]).matches(&e), "the funder is not the agent");
        assert!(f(None, None, Some("0xF1"), &["TaskCreated", "TaskSettled"]).matches(&e));
        assert!(!f(None, None, Some("0xf1"), &["TaskSettled"]).matches(&e));
        assert!(!f(Some("0xaa"), None, Some("0xf2"), &[]).matches(&e), "every part must match");
        let registry =
            EventFacts { kind: "AgentPaused", agent: Some("0xe1"), ..EventFacts::default() };
        assert!(f(None, Some("0xe1"), None, &[]).matches(&registry));
        assert!(!f(Some("0xaa"), None, None, &[]).matches(&registry), "no plan: no match");
        assert!(!f(None, None, Some("0xf1"), &[]).matches(&registry));
    }

    #[test]
    fn registrations_are_checked_with_clear_messages() {
        let plan = format!("0x{}", "AB".repeat(32));
        let ok = WebhookFilter {
            plan: Some(plan),
            kinds: vec!["TaskSettled".into(), "TaskCreated".into(), "TaskSettled".into()],
            ..WebhookFilter::default()
        }
        .checked()
        .unwrap();
        assert_eq!(ok.plan.unwrap(), format!("0x{}", "ab".repeat(32)));
        assert_eq!(ok.kinds, ["TaskCreated", "TaskSettled"]);
        let bad = |f: WebhookFilter| f.checked().unwrap_err();
        assert!(
            bad(WebhookFilter { plan: Some("0x12".into()), ..Default::default() })
                .contains("filter.plan")
        );
        assert!(
            bad(WebhookFilter { agent: Some("1".repeat(42)), ..Default::default() })
                .contains("filter.agent")
        );
        assert!(
            bad(WebhookFilter {
                funder: Some(format!("0x{}", "g".repeat(40))),
                ..Default::default()
            })
            .contains("filter.funder")
        );
        assert!(
            bad(WebhookFilter { kinds: vec!["TaskEaten".into()], ..Default::default() })
                .contains("TaskEaten")
        );

        assert!(check_url("https://hooks.example.org/tessera?x=1").is_ok());
        assert!(check_url("http://127.0.0.1:9000/").is_ok());
        for (url, says) in [
            ("ftp://example.org/", "scheme"),
            ("file:///etc/passwd", "scheme"),
            ("example.org/hook", "not a URL"),
            ("https://user:pw@example.org/", "credentials"),
        ] {
            let e = check_url(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
        }
        assert!(check_url(&format!("https://example.org/{}", "a".repeat(MAX_URL_LEN))).is_err());

        assert!(check_secret("0123456789abcdef").is_ok());
        assert!(check_secret("short").unwrap_err().contains("16 to 256"));
        assert!(check_secret("with a space in it!").unwrap_err().contains("printable"));
        assert_eq!(new_secret().len(), 64);
        assert_ne!(new_secret(), new_secret());
        assert!(new_id().starts_with("wh_") && new_id().len() == 27);
    }
}
