//! Sign-In with Ethereum (EIP-4361) for sponsors of an operator-mode
//! orchestrator: the message (parsed and written), the checks a login
//! passes (domain, chain, nonce, times, signature: ECDSA, or ERC-1271
//! through an `eth_call` when the address has code), and the session
//! tokens that come out of it (stored hashed, see
//! [`crate::store::sessions`]).
//!
//! The pure checks ([`SiweMessage::check`]) and the signature check
//! ([`verify_signature`]) are separate so each refusal is tested alone.

use std::fmt::Write as _;

use alloy::{
    primitives::{Address, B256, Bytes, FixedBytes, eip191_hash_message, keccak256},
    providers::{DynProvider, Provider},
    signers::Signature,
    sol,
};

sol! {
    /// ERC-1271: a contract account says whether a signature is its own.
    #[sol(rpc)]
    interface IERC1271 {
        function isValidSignature(bytes32 hash, bytes signature) external view returns (bytes4);
    }
}

/// What `isValidSignature` answers for a valid signature.
pub const ERC1271_MAGIC: [u8; 4] = [0x16, 0x26, 0xba, 0x7e];

/// How long a login nonce stays usable.
pub const NONCE_TTL_SECS: u64 = 300;
/// The longest session a message may ask for.
pub const MAX_SESSION_SECS: u64 = 24 * 3600;
/// How far in the future `issued-at` may be (clock skew).
pub const CLOCK_SKEW_SECS: u64 = 60;

const PREAMBLE: &str = " wants you to sign in with your Ethereum account:";

/// Why a login is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// The text is not an EIP-4361 message.
    #[error("not an EIP-4361 sign-in message: {0}")]
    Malformed(String),
    /// Signed for another site.
    #[error("the message is for domain {got:?}, this orchestrator is {want:?}")]
    Domain {
        /// In the message.
        got: String,
        /// Expected.
        want: String,
    },
    /// Signed for another chain.
    #[error("the message is for chain {got}, this orchestrator is on chain {want}")]
    Chain {
        /// In the message.
        got: u64,
        /// Expected.
        want: u64,
    },
    /// Not version 1.
    #[error("EIP-4361 version {0:?} is not supported (only 1)")]
    Version(String),
    /// No expiration time.
    #[error("the message has no Expiration Time: a session must expire (within 24 h)")]
    NoExpiry,
    /// Expired already.
    #[error("the message expired")]
    Expired,
    /// Asks for a session longer than allowed.
    #[error("the message expires more than 24 h from now")]
    TooLong,
    /// Issued in the future.
    #[error("the message is issued in the future")]
    FromTheFuture,
    /// Not valid yet (`not-before`).
    #[error("the message is not valid before its Not Before time")]
    NotYet,
    /// The nonce was not issued here, was used, or expired.
    #[error("the nonce was not issued by this orchestrator, was used already, or expired")]
    Nonce,
    /// The signature is not the address's.
    #[error("the signature is not {0}'s")]
    Signature(Address),
    /// The chain could not be asked (an ERC-1271 check).
    #[error("checking the contract wallet's signature on chain: {0}")]
    Chain1271(String),
}

impl AuthError {
    /// Whether the caller is at fault (else the chain failed us).
    pub fn is_request(&self) -> bool {
        !matches!(self, Self::Chain1271(_))
    }
}

/// An EIP-4361 message, the fields this orchestrator reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiweMessage {
    /// `authority` of the site asking (`host[:port]`).
    pub domain: String,
    /// Who signs in.
    pub address: Address,
    /// A line for the human.
    pub statement: Option<String>,
    /// The resource signed in to.
    pub uri: String,
    /// Always `"1"`.
    pub version: String,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// The server's nonce.
    pub nonce: String,
    /// Unix seconds.
    pub issued_at: u64,
    /// Unix seconds.
    pub expiration_time: Option<u64>,
    /// Unix seconds.
    pub not_before: Option<u64>,
    /// Optional.
    pub request_id: Option<String>,
    /// Optional URIs.
    pub resources: Vec<String>,
}

impl SiweMessage {
    /// Parses the text of an EIP-4361 message.
    pub fn parse(text: &str) -> Result<Self, AuthError> {
        let bad = |m: &str| AuthError::Malformed(m.to_owned());
        let mut lines = text.split('\n');
        let first = lines.next().ok_or_else(|| bad("empty"))?;
        let domain = first
            .strip_suffix(PREAMBLE)
            .filter(|d| !d.is_empty() && !d.contains(char::is_whitespace))
            .ok_or_else(|| bad("the first line is not \"<domain> wants you to sign in …\""))?;
        // A scheme is allowed before the authority (EIP-4361 `scheme://`).
        let domain = domain.split_once("://").map_or(domain, |(_, d)| d).to_owned();
        let address_line = lines.next().ok_or_else(|| bad("no address line"))?;
        let address: Address =
            address_line.trim().parse().map_err(|_| bad("the second line is not an address"))?;
        if lines.next() != Some("") {
            return Err(bad("a blank line must follow the address"));
        }
        let rest: Vec<&str> = lines.collect();
        let mut i = 0;
        let mut statement = None;
        if rest.first().is_some_and(|l| !l.starts_with("URI: ")) {
            statement = Some(rest[0].to_owned());
            if rest.get(1) != Some(&"") {
                return Err(bad("a blank line must follow the statement"));
            }
            i = 2;
        } else if rest.first() == Some(&"") {
            i = 1;
        }
        let mut field = |name: &str, required: bool| -> Result<Option<String>, AuthError> {
            match rest.get(i).and_then(|l| l.strip_prefix(name)).and_then(|l| l.strip_prefix(": "))
            {
                Some(v) => {
                    i += 1;
                    Ok(Some(v.to_owned()))
                }
                None if required => Err(AuthError::Malformed(format!("no {name} field"))),
                None => Ok(None),
            }
        };
        let uri = field("URI", true)?.unwrap_or_default();
        let version = field("Version", true)?.unwrap_or_default();
        let chain_id = field("Chain ID", true)?
            .unwrap_or_default()
            .parse()
            .map_err(|_| bad("Chain ID is not a number"))?;
        let nonce = field("Nonce", true)?.unwrap_or_default();
        if nonce.len() < 8 || !nonce.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(bad("the nonce is not 8 or more letters and digits"));
        }
        let time = |v: Option<String>, name: &str| -> Result<Option<u64>, AuthError> {
            v.map(|v| {
                parse_rfc3339(&v)
                    .ok_or_else(|| AuthError::Malformed(format!("{name} is not an RFC 3339 time")))
            })
            .transpose()
        };
        let issued_at = time(field("Issued At", true)?, "Issued At")?.unwrap_or_default();
        let expiration_time = time(field("Expiration Time", false)?, "Expiration Time")?;
        let not_before = time(field("Not Before", false)?, "Not Before")?;
        let request_id = field("Request ID", false)?;
        let mut resources = Vec::new();
        if rest.get(i) == Some(&"Resources:") {
            i += 1;
            while let Some(r) = rest.get(i).and_then(|l| l.strip_prefix("- ")) {
                resources.push(r.to_owned());
                i += 1;
            }
        }
        // Nothing but an optional final newline may follow.
        if rest[i..].iter().any(|l| !l.is_empty()) || rest.len() > i + 1 {
            return Err(bad("unexpected lines after the fields"));
        }
        Ok(Self {
            domain,
            address,
            statement,
            uri,
            version,
            chain_id,
            nonce,
            issued_at,
            expiration_time,
            not_before,
            request_id,
            resources,
        })
    }

    /// The message's text, as signed (EIP-4361's ABNF; EIP-55 address).
    pub fn to_text(&self) -> String {
        let mut out = format!("{}{PREAMBLE}\n{}\n\n", self.domain, self.address.to_checksum(None));
        if let Some(s) = &self.statement {
            let _ = write!(out, "{s}\n\n");
        }
        let _ = write!(
            out,
            "URI: {}\nVersion: {}\nChain ID: {}\nNonce: {}\nIssued At: {}",
            self.uri,
            self.version,
            self.chain_id,
            self.nonce,
            format_rfc3339(self.issued_at)
        );
        if let Some(t) = self.expiration_time {
            let _ = write!(out, "\nExpiration Time: {}", format_rfc3339(t));
        }
        if let Some(t) = self.not_before {
            let _ = write!(out, "\nNot Before: {}", format_rfc3339(t));
        }
        if let Some(r) = &self.request_id {
            let _ = write!(out, "\nRequest ID: {r}");
        }
        if !self.resources.is_empty() {
            out.push_str("\nResources:");
            for r in &self.resources {
                let _ = write!(out, "\n- {r}");
            }
        }
        out
    }

    /// The checks that need no chain and no store: domain, chain id,
    /// version, and times at `now` (unix seconds). Returns the session's
    /// expiry (the message's expiration time).
    pub fn check(&self, domain: &str, chain_id: u64, now: u64) -> Result<u64, AuthError> {
        if !self.domain.eq_ignore_ascii_case(domain) {
            return Err(AuthError::Domain { got: self.domain.clone(), want: domain.to_owned() });
        }
        if self.version != "1" {
            return Err(AuthError::Version(self.version.clone()));
        }
        if self.chain_id != chain_id {
            return Err(AuthError::Chain { got: self.chain_id, want: chain_id });
        }
        let expiry = self.expiration_time.ok_or(AuthError::NoExpiry)?;
        if expiry <= now {
            return Err(AuthError::Expired);
        }
        if expiry > now + MAX_SESSION_SECS {
            return Err(AuthError::TooLong);
        }
        if self.issued_at > now + CLOCK_SKEW_SECS {
            return Err(AuthError::FromTheFuture);
        }
        if self.not_before.is_some_and(|t| t > now + CLOCK_SKEW_SECS) {
            return Err(AuthError::NotYet);
        }
        Ok(expiry)
    }
}

/// Checks that `signature` over `message` (EIP-191 `personal_sign`) is
/// `address`'s: a 65-byte ECDSA signature recovering to it, or, when the
/// address has code, what its `isValidSignature` accepts (ERC-1271).
pub async fn verify_signature(
    provider: &DynProvider,
    message: &str,
    address: Address,
    signature: &Bytes,
) -> Result<(), AuthError> {
    let hash = eip191_hash_message(message);
    verify_hash(provider, hash, address, signature).await
}

/// Whether `signature` of `hash` is `address`'s: ECDSA for an account
/// without code, ERC-1271 for a contract.
pub async fn verify_hash(
    provider: &DynProvider,
    hash: B256,
    address: Address,
    signature: &Bytes,
) -> Result<(), AuthError> {
    let code =
        provider.get_code_at(address).await.map_err(|e| AuthError::Chain1271(e.to_string()))?;
    if code.is_empty() {
        return if recovers_to(hash, address, signature) {
            Ok(())
        } else {
            Err(AuthError::Signature(address))
        };
    }
    let wallet = IERC1271::new(address, provider.clone());
    match wallet.isValidSignature(hash, signature.clone()).call().await {
        Ok(magic) if magic == FixedBytes(ERC1271_MAGIC) => Ok(()),
        // A revert or another answer: not its signature.
        Ok(_) => Err(AuthError::Signature(address)),
        Err(e) if e.as_revert_data().is_some() => Err(AuthError::Signature(address)),
        Err(e) => Err(AuthError::Chain1271(e.to_string())),
    }
}

/// Whether a 65-byte ECDSA `signature` of `hash` recovers to `address`.
pub fn recovers_to(hash: B256, address: Address, signature: &[u8]) -> bool {
    Signature::try_from(signature)
        .ok()
        .and_then(|s| s.recover_address_from_prehash(&hash).ok())
        .is_some_and(|a| a == address)
}

/// 32 bytes from the operating system's CSPRNG (through the one the
/// local signer draws its keys from).
pub fn random_b256() -> B256 {
    alloy::signers::local::PrivateKeySigner::random().to_bytes()
}

/// A fresh login nonce: 24 letters and digits.
pub fn new_nonce() -> String {
    let bytes = random_b256();
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    bytes[..24].iter().map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()])).collect()
}

/// A fresh session token (`0x` + 64 hex digits) and the hash stored for it.
pub fn new_token() -> (String, String) {
    let token = random_b256().to_string();
    let hash = token_hash(&token);
    (token, hash)
}

/// What is stored for a session token: its keccak-256, hex.
pub fn token_hash(token: &str) -> String {
    keccak256(token.as_bytes()).to_string()
}

/// Unix seconds of an RFC 3339 time (`2026-01-02T03:04:05Z`, fractions
/// and offsets allowed); `None` when it is not one.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let r = rest.as_bytes();
            if r.len() != 6 || r[3] != b':' {
                return None;
            }
            let h: i64 = rest.get(1..3)?.parse().ok()?;
            let m: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset;
    u64::try_from(secs).ok()
}

/// `secs` (unix) as RFC 3339 in UTC, to the second.
pub fn format_rfc3339(secs: u64) -> String {
    let secs = i64::try_from(secs).unwrap_or(i64::MAX / 2);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

// Howard Hinnant's civil-calendar algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use alloy::signers::{SignerSync, local::PrivateKeySigner};

    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn message(address: Address) -> SiweMessage {
        SiweMessage {
            domain: "127.0.0.1:8080".into(),
            address,
            statement: Some("Sign in to Tessera to fund and decide your plans.".into()),
            uri: "http://127.0.0.1:8080".into(),
            version: "1".into(),
            chain_id: 31337,
            nonce: "abcDEF1234567890xyz".into(),
            issued_at: NOW - 5,
            expiration_time: Some(NOW + 3600),
            not_before: None,
            request_id: None,
            resources: vec![],
        }
    }

    #[test]
    fn a_message_round_trips_through_its_text() {
        let m = message(Address::repeat_byte(0xab));
        let text = m.to_text();
        assert!(
            text.starts_with("127.0.0.1:8080 wants you to sign in with your Ethereum account:\n0x")
        );
        assert!(text.contains("\nIssued At: 2027-01-15T07:59:55Z\n"), "{text}");
        assert_eq!(SiweMessage::parse(&text).unwrap(), m);
        let bare = SiweMessage {
            statement: None,
            expiration_time: None,
            resources: vec!["https://x.example/a".into()],
            request_id: Some("r1".into()),
            ..m
        };
        assert_eq!(SiweMessage::parse(&bare.to_text()).unwrap(), bare);
        assert_eq!(SiweMessage::parse(&format!("{}\n", bare.to_text())).unwrap(), bare);
    }

    #[test]
    fn malformed_messages_are_refused() {
        let m = message(Address::repeat_byte(1)).to_text();
        for bad in [
            String::new(),
            m.replace(" wants you to sign in", " would like you to sign in"),
            m.replace("0x0101", "0xZZ01"),
            m.replace("Chain ID: 31337", "Chain ID: thirty"),
            m.replace("Nonce: abcDEF1234567890xyz", "Nonce: short"),
            m.replace("Nonce: abcDEF1234567890xyz", "Nonce: abc-def-1234567"),
            m.replace("Issued At: 2027-01-15T07:59:55Z", "Issued At: yesterday"),
            m.replace("Version: 1\n", ""),
            format!("{m}\nsomething else"),
        ] {
            assert!(
                matches!(SiweMessage::parse(&bad), Err(AuthError::Malformed(_))),
                "{bad:?} parsed"
            );
        }
    }

    #[test]
    fn each_check_refuses_on_its_own() {
        let ok = message(Address::repeat_byte(1));
        assert_eq!(ok.check("127.0.0.1:8080", 31337, NOW), Ok(NOW + 3600));
        assert!(matches!(ok.check("evil.example", 31337, NOW), Err(AuthError::Domain { .. })));
        assert_eq!(
            ok.check("127.0.0.1:8080", 1, NOW),
            Err(AuthError::Chain { got: 31337, want: 1 })
        );
        let v2 = SiweMessage { version: "2".into(), ..ok.clone() };
        assert_eq!(v2.check("127.0.0.1:8080", 31337, NOW), Err(AuthError::Version("2".into())));
        let forever = SiweMessage { expiration_time: None, ..ok.clone() };
        assert_eq!(forever.check("127.0.0.1:8080", 31337, NOW), Err(AuthError::NoExpiry));
        let expired = SiweMessage { expiration_time: Some(NOW), ..ok.clone() };
        assert_eq!(expired.check("127.0.0.1:8080", 31337, NOW), Err(AuthError::Expired));
        let long = SiweMessage { expiration_time: Some(NOW + MAX_SESSION_SECS + 1), ..ok.clone() };
        assert_eq!(long.check("127.0.0.1:8080", 31337, NOW), Err(AuthError::TooLong));
        let future = SiweMessage { issued_at: NOW + CLOCK_SKEW_SECS + 1, ..ok.clone() };
        assert_eq!(future.check("127.0.0.1:8080", 31337, NOW), Err(AuthError::FromTheFuture));
        let skewed = SiweMessage { issued_at: NOW + CLOCK_SKEW_SECS, ..ok.clone() };
        assert!(skewed.check("127.0.0.1:8080", 31337, NOW).is_ok());
        let later = SiweMessage { not_before: Some(NOW + 600), ..ok };
        assert_eq!(later.check("127.0.0.1:8080", 31337, NOW), Err(AuthError::NotYet));
    }

    #[test]
    fn an_ecdsa_signature_recovers_to_its_signer_only() {
        let key = PrivateKeySigner::random();
        let text = message(key.address()).to_text();
        let sig = key.sign_message_sync(text.as_bytes()).unwrap().as_bytes();
        let hash = eip191_hash_message(&text);
        assert!(recovers_to(hash, key.address(), &sig));
        assert!(!recovers_to(hash, Address::repeat_byte(2), &sig));
        let other = eip191_hash_message(text.replace("31337", "31338"));
        assert!(!recovers_to(other, key.address(), &sig));
        assert!(!recovers_to(hash, key.address(), &sig[..64]));
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2026-02-28T23:59:59.123Z"), Some(1_772_323_199));
        assert_eq!(parse_rfc3339("2026-03-01T01:00:00+01:00"), Some(1_772_323_200));
        assert_eq!(format_rfc3339(1_772_323_200), "2026-03-01T00:00:00Z");
        for t in [0, 951_782_400, 1_772_323_199, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&format_rfc3339(t)), Some(t));
        }
        for bad in ["2026-13-01T00:00:00Z", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00", "x"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn nonces_and_tokens() {
        let n = new_nonce();
        assert_eq!(n.len(), 24);
        assert!(n.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(n, new_nonce());
        let (token, hash) = new_token();
        assert_eq!(token_hash(&token), hash);
        assert_ne!(token, hash);
    }
}
