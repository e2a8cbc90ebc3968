//! One host per party: each party's processes run in a network namespace of
//! its own, joined to the others by a bridge, so a party reaches another
//! only at the address it was given (its own loopback is its own). The
//! chain and the test itself stay in the root namespace, on the bridge's
//! address. Where namespaces cannot be made (not root, no `ip`), every party
//! runs on 127.0.0.1 instead, and [`Hosts::isolated`] says so with the reason
//! (`TESSERA_NETNS=off` asks for that).
//!
//! Traffic never leaves the machine: the bridge has no uplink and the
//! addresses are private (`10.<a>.<b>.0/24`, picked from the process id so
//! two runs on one machine do not collide).

use std::{
    net::Ipv4Addr,
    process::{Command, Stdio},
};

/// The parties' hosts; the namespaces and the bridge go when this drops.
#[derive(Debug)]
pub(crate) struct Hosts {
    /// Prefix of every name made (bridge, namespaces, links).
    tag: String,
    /// The subnet's first three octets.
    net: [u8; 3],
    /// Party names, in order: party `i` is `10.a.b.(10 + i)`.
    parties: Vec<String>,
    /// Why the parties share the loopback instead, when they do.
    shared: Option<String>,
}

impl Hosts {
    /// A host for each of `parties`: a namespace each where the machine
    /// allows it, else one loopback for all (see [`Hosts::isolated`]).
    pub(crate) fn new(parties: &[&str]) -> Self {
        assert!(parties.len() < 200, "at most 199 parties");
        // Several tests of one binary each build their own hosts.
        static BUILT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 10;
        let pid = std::process::id();
        let tag = format!("ts{}{n}", pid % 100_000);
        let net = [10, 200 + (pid % 50) as u8, ((pid / 50 + n * 25) % 250) as u8];
        let mut hosts = Self {
            tag,
            net,
            parties: parties.iter().map(|p| (*p).to_owned()).collect(),
            shared: None,
        };
        if let Err(why) = hosts.build() {
            hosts.teardown();
            hosts.shared = Some(why);
        }
        hosts
    }

    /// `Ok` when every party has a namespace of its own; otherwise why
    /// they share the loopback.
    pub(crate) fn isolated(&self) -> Result<(), &str> {
        self.shared.as_deref().map_or(Ok(()), Err)
    }

    /// Where the root namespace (the chain, the test) is reached from a
    /// party.
    pub(crate) fn hub(&self) -> Ipv4Addr {
        match self.shared {
            Some(_) => Ipv4Addr::LOCALHOST,
            None => self.ip(1),
        }
    }

    /// The address of `party`: where it listens and where others reach it.
    pub(crate) fn addr(&self, party: &str) -> Ipv4Addr {
        match self.shared {
            Some(_) => Ipv4Addr::LOCALHOST,
            None => self.ip(10 + self.index(party) as u8),
        }
    }

    /// A command running `program` on `party`'s host.
    pub(crate) fn command(&self, party: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        match self.shared {
            Some(_) => Command::new(program),
            None => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &self.netns(self.index(party))]).arg(program);
                cmd
            }
        }
    }

    fn index(&self, party: &str) -> usize {
        self.parties.iter().position(|p| p == party).unwrap_or_else(|| panic!("no party {party}"))
    }

    fn ip(&self, host: u8) -> Ipv4Addr {
        Ipv4Addr::new(self.net[0], self.net[1], self.net[2], host)
    }

    fn netns(&self, i: usize) -> String {
        format!("{}n{i}", self.tag)
    }

    fn bridge(&self) -> String {
        format!("{}br", self.tag)
    }

    fn build(&self) -> Result<(), String> {
        if std::env::var("TESSERA_NETNS").is_ok_and(|v| v == "off") {
            return Err("TESSERA_NETNS=off".into());
        }
        if !is_root() {
            return Err("not root: network namespaces need CAP_SYS_ADMIN".into());
        }
        let bridge = self.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{}/24", self.ip(1)), "dev", &bridge])?;
        ip(&["link", "set", &bridge, "up"])?;
        for i in 0..self.parties.len() {
            let ns = self.netns(i);
            let outside = format!("{}v{i}", self.tag);
            ip(&["netns", "add", &ns])?;
            ip(&["link", "add", &outside, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
            ip(&["link", "set", &outside, "master", &bridge, "up"])?;
            let addr = format!("{}/24", self.ip(10 + i as u8));
            ip(&["netns", "exec", &ns, "ip", "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", "eth0", "up"])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn teardown(&self) {
        for i in 0..self.parties.len() {
            // Deleting a namespace deletes its end of the veth, and with it
            // the bridge's end.
            let _ = ip(&["netns", "delete", &self.netns(i)]);
        }
        let _ = ip(&["link", "delete", &self.bridge()]);
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        if self.shared.is_none() {
            self.teardown();
        }
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `ip args…`; its error output on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`ip` could not run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`ip {}`: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}
