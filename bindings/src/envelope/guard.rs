//! Which addresses a location hint may lead a reader to. A hint is written
//! by whoever created the task or delivered the result: a stranger. Left
//! unchecked, it would have the reader ask its own network for them —
//! loopback services, the private LAN, a cloud's metadata endpoint — and
//! tell what answered. So, unless the reader allows private hints (a local
//! chain, or its operator's explicit choice), a hint and every redirect
//! from it may only reach public addresses:
//!
//! - a literal IP in the URL (any spelling the URL parser accepts:
//!   `127.1`, `2130706433`, `[::ffff:127.0.0.1]`) is checked before a
//!   request is made, and at each redirect;
//! - a host name is resolved by [`PublicResolver`], which hands the HTTP
//!   client only the public addresses among its answers (the connection is
//!   made to exactly those: a name re-bound between check and connect
//!   cannot slip through), and refuses a name with none;
//! - `localhost` (and `*.localhost`) and the cloud metadata names are
//!   refused by name.
//!
//! Refused: unspecified, loopback, RFC 1918 private, CGNAT `100.64/10`,
//! link-local `169.254/16` and `fe80::/10` (the metadata endpoints
//! `169.254.169.254` and `fd00:ec2::254` among them), unique local
//! `fc00::/7`, multicast, broadcast, `0/8`, `192.0.0/24`, benchmarking
//! `198.18/15`, documentation and reserved `240/4`; an IPv6 address that
//! embeds an IPv4 one (mapped `::ffff:0:0/96`, compatible `::/96`, NAT64
//! `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the IPv4 one.
//!
//! Operators' own gateways are trusted and not filtered; an operator may
//! also name hosts it trusts in hints ([`super::BlobSources::trust_hint_hosts`]).

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
};

use reqwest::Url;

/// The chain id of a local development chain (anvil's, hardhat's): there,
/// hints naming loopback and private addresses are allowed by default.
pub const LOCAL_CHAIN_ID: u64 = 31337;

/// Whether `chain_id` is a local development chain ([`LOCAL_CHAIN_ID`]).
pub fn is_local_chain(chain_id: u64) -> bool {
    chain_id == LOCAL_CHAIN_ID
}

/// Host names refused whatever they resolve to.
const REFUSED_NAMES: &[&str] = &["localhost", "metadata.google.internal", "metadata"];

/// A hint, or a redirect from it, named an address this reader does not
/// reach (see the module docs). Carries the host only, never a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused address: {host} is not a public address")]
pub struct AddressRefused {
    /// The host as the URL or the resolver named it.
    pub host: String,
}

/// Whether `ip` is an address anyone on the internet could reach (see the
/// module docs for what is not).
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        // CGNAT, shared address space.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments.
        || (a == 192 && b == 0 && c == 0)
        // Benchmarking.
        || (a == 198 && (b == 18 || b == 19))
        // Reserved (and broadcast).
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Unique local, fc00::/7 (fd00:ec2::254, the EC2 metadata, among them).
        || (first & 0xfe00) == 0xfc00
        // Link-local, fe80::/10.
        || (first & 0xffc0) == 0xfe80
        // Site-local (deprecated), fec0::/10.
        || (first & 0xffc0) == 0xfec0
        // Documentation, 2001:db8::/32.
        || (first == 0x2001 && ip.segments()[1] == 0x0db8))
}

/// The IPv4 address an IPv6 one carries: mapped, compatible, NAT64, 6to4.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return Some(low);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
    }
    None
}

fn refused_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    REFUSED_NAMES.contains(&name.as_str()) || name.ends_with(".localhost")
}

/// Hosts an operator trusts in hints, private or not (`host` or
/// `host:port`, compared case-insensitively).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Trusted(Vec<String>);

impl Trusted {
    pub(super) fn new(hosts: Vec<String>) -> Self {
        Self(hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect())
    }

    fn host(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.0.iter().any(|t| *t == host || t.rsplit_once(':').is_some_and(|(h, _)| h == host))
    }

    fn authority(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.to_ascii_lowercase();
        self.0.iter().any(|t| *t == host || port.is_some_and(|p| *t == format!("{host}:{p}")))
    }
}

/// Whether `url` may be asked: its host, when a literal IP, is public, and
/// its name is not one refused by name (a name's addresses are checked
/// when it is resolved, by [`PublicResolver`]).
pub(super) fn check_url(url: &Url, trusted: &Trusted) -> Result<(), AddressRefused> {
    let refused = |host: String| Err(AddressRefused { host });
    let port = url.port_or_known_default();
    match url.host() {
        None => refused(String::new()),
        Some(url::Host::Domain(name)) => {
            if trusted.authority(name, port) || !refused_name(name) {
                Ok(())
            } else {
                refused(name.to_owned())
            }
        }
        Some(url::Host::Ipv4(ip)) => {
            let host = ip.to_string();
            if is_public_v4(ip) || trusted.authority(&host, port) { Ok(()) } else { refused(host) }
        }
        Some(url::Host::Ipv6(ip)) => {
            let host = format!("[{ip}]");
            if is_public_v6(ip) || trusted.authority(&host, port) { Ok(()) } else { refused(host) }
        }
    }
}

/// The redirect policy of the guarded client: at most `max` redirects,
/// each to a URL [`check_url`] accepts.
pub(super) fn redirect_policy(max: usize, trusted: Trusted) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max {
            return attempt.error(TooManyRedirects);
        }
        match check_url(attempt.url(), &trusted) {
            Ok(()) => attempt.follow(),
            Err(refused) => attempt.error(refused),
        }
    })
}

/// More redirects than the limit.
#[derive(Debug, thiserror::Error)]
#[error("too many redirects")]
pub(super) struct TooManyRedirects;

/// Resolves host names through the system resolver and hands on only their
/// public addresses; a name with none (or refused by name) is an
/// [`AddressRefused`].
#[derive(Debug, Clone)]
pub(super) struct PublicResolver {
    pub(super) trusted: Trusted,
}

impl reqwest::dns::Resolve for PublicResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let trusted = self.trusted.host(&host);
        Box::pin(async move {
            if refused_name(&host) && !trusted {
                return Err(Box::new(AddressRefused { host }) as _);
            }
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> =
                all.into_iter().filter(|a| trusted || is_public_ip(a.ip())).collect();
            if public.is_empty() {
                return Err(Box::new(AddressRefused { host }) as _);
            }
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The refusal behind a request's error, if the guard refused it.
pub(super) fn refusal(e: &reqwest::Error) -> Option<AddressRefused> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<AddressRefused>() {
            return Some(r.clone());
        }
        source = s.source();
    }
    None
}

/// The guarded client's resolver, shared.
pub(super) fn resolver(trusted: Trusted) -> Arc<PublicResolver> {
    Arc::new(PublicResolver { trusted })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for bad in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.7",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "100.64.0.1",
            "100.127.255.254",
            "192.0.0.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
        ] {
            let ip: IpAddr = bad.parse().unwrap();
            assert!(!is_public_ip(ip), "{bad} must not be public");
        }
        for good in
            ["1.1.1.1", "8.8.8.8", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]
        {
            let ip: IpAddr = good.parse().unwrap();
            assert!(is_public_ip(ip), "{good} is public");
        }
    }

    #[test]
    fn literal_hosts_in_any_spelling_are_checked() {
        let none = Trusted::default();
        for bad in [
            "http://127.0.0.1:9/blobs",
            "http://127.1/blobs",
            "http://2130706433/blobs",
            "http://0x7f.0.0.1/blobs",
            "http://[::1]/blobs",
            "http://[::ffff:127.0.0.1]/blobs",
            "http://[::ffff:7f00:1]/blobs",
            "http://169.254.169.254/latest/meta-data",
            "http://[fd00:ec2::254]/",
            "http://localhost:8080/blobs",
            "http://api.LOCALHOST/blobs",
            "http://metadata.google.internal/computeMetadata/v1",
            "http://10.0.0.7:8080/blobs",
        ] {
            let url = Url::parse(bad).unwrap();
            assert!(check_url(&url, &none).is_err(), "{bad} must be refused");
        }
        for good in
            ["http://8.8.8.8/b", "https://blobs.example.org/b", "http://[2606:4700::1111]/b"]
        {
            assert!(check_url(&Url::parse(good).unwrap(), &none).is_ok(), "{good}");
        }
        // Trusted by the operator: that host and port only.
        let trusted = Trusted::new(vec!["127.0.0.1:7000".into(), "Blobs.LAN".into()]);
        assert!(check_url(&Url::parse("http://127.0.0.1:7000/b").unwrap(), &trusted).is_ok());
        assert!(check_url(&Url::parse("http://127.0.0.1:7001/b").unwrap(), &trusted).is_err());
        assert!(check_url(&Url::parse("http://blobs.lan:81/b").unwrap(), &trusted).is_ok());
    }

    #[test]
    fn only_a_local_chain_is_local() {
        assert!(is_local_chain(31337));
        assert!(!is_local_chain(1));
        assert!(!is_local_chain(84532));
    }
}
