//! Starting a local anvil chain.

use std::path::PathBuf;

use alloy::{
    node_bindings::{Anvil, AnvilInstance},
    signers::k256::ecdsa::SigningKey,
};

/// The mnemonic anvil uses by default; its accounts are well known and hold
/// test ether only.
pub const DEV_MNEMONIC: &str = "test test test test test test test test test test test junk";

/// Why anvil could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// No anvil binary was found.
    #[error(
        "anvil not found (looked at $TESSERA_ANVIL, the project's .tools/ and $PATH): run `make toolchain` or set TESSERA_ANVIL"
    )]
    NotFound,
    /// anvil started but did not come up.
    #[error("anvil at {path} failed to start: {message}")]
    Spawn {
        /// The binary.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// How to start anvil.
#[derive(Debug, Clone, Default)]
pub struct ChainOptions {
    /// Port to listen on; a free one when `None`.
    pub port: Option<u16>,
    /// Load state from and save it to this file (saved every second and on exit).
    pub state_file: Option<PathBuf>,
    /// Load state from this file once (written by `anvil_dumpState`), and
    /// never write it.
    pub load_state: Option<PathBuf>,
    /// Seconds between blocks; every transaction mines its own block when `None`.
    pub block_time: Option<u64>,
    /// The anvil binary; found automatically when `None`.
    pub anvil: Option<PathBuf>,
    /// Number of dev accounts (at least 10).
    pub accounts: Option<u32>,
    /// A fixed base fee per gas (wei); zero keeps it at zero however full
    /// the blocks are (bulk generators fill blocks back to back).
    pub base_fee: Option<u64>,
    /// The address to listen on (anvil's `--host`; one, so the port
    /// anvil picks is the one the endpoints name); anvil's own default
    /// (127.0.0.1) when `None`. The endpoints given out stay on localhost.
    pub host: Option<String>,
    /// The chain id to answer with; anvil's 31337 when `None` (another one
    /// plays a public chain in tests).
    pub chain_id: Option<u64>,
}

/// Where a service reaches the chain: requests over HTTP (possibly through a
/// proxy that counts them), new blocks over the websocket.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// JSON-RPC over HTTP.
    pub http: alloy::transports::http::reqwest::Url,
    /// The websocket for block subscriptions.
    pub ws: String,
}

/// A running anvil; killed when dropped.
#[derive(Debug)]
pub struct LocalChain {
    instance: AnvilInstance,
}

impl LocalChain {
    /// Starts anvil with the dev mnemonic.
    pub fn start(opts: &ChainOptions) -> Result<Self, ChainError> {
        let path = find_anvil(opts.anvil.as_ref()).ok_or(ChainError::NotFound)?;
        let mut anvil = Anvil::at(&path).mnemonic(DEV_MNEMONIC);
        if let Some(port) = opts.port {
            anvil = anvil.port(port);
        }
        if let Some(state) = &opts.state_file {
            anvil = anvil.arg("--state").arg(state).args(["--state-interval", "1"]);
        }
        if let Some(state) = &opts.load_state {
            // A large state takes a while to read before the node listens.
            anvil = anvil.arg("--load-state").arg(state).timeout(300_000);
        }
        if let Some(secs) = opts.block_time {
            anvil = anvil.block_time(secs);
        }
        if let Some(fee) = opts.base_fee {
            anvil = anvil.arg("--block-base-fee-per-gas").arg(fee.to_string());
        }
        if let Some(host) = &opts.host {
            anvil = anvil.arg("--host").arg(host);
        }
        if let Some(id) = opts.chain_id {
            anvil = anvil.chain_id(id);
        }
        anvil = anvil.arg("--accounts").arg(opts.accounts.unwrap_or(12).max(10).to_string());
        let instance = anvil.try_spawn().map_err(|e| ChainError::Spawn {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        tracing::debug!(endpoint = %instance.endpoint(), "anvil started");
        Ok(Self { instance })
    }

    /// HTTP endpoint.
    pub fn endpoint_url(&self) -> alloy::transports::http::reqwest::Url {
        self.instance.endpoint_url()
    }

    /// Both endpoints, for a service that sends over HTTP and follows
    /// blocks over the websocket.
    pub fn endpoints(&self) -> Endpoints {
        Endpoints { http: self.endpoint_url(), ws: self.ws_endpoint() }
    }

    /// WebSocket endpoint.
    pub fn ws_endpoint(&self) -> String {
        self.instance.ws_endpoint()
    }

    /// The port anvil listens on.
    pub fn port(&self) -> u16 {
        self.instance.port()
    }

    /// Chain id.
    pub fn chain_id(&self) -> u64 {
        self.instance.chain_id()
    }

    /// The dev accounts' keys, in mnemonic order.
    pub fn keys(&self) -> Vec<SigningKey> {
        self.instance.keys().iter().map(SigningKey::from).collect()
    }
}

/// The anvil binary: `explicit`, else `$TESSERA_ANVIL`, else the project's
/// `.tools/`, else `anvil` on `$PATH`.
pub fn find_anvil(explicit: Option<&PathBuf>) -> Option<PathBuf> {
    let from_env = std::env::var_os("TESSERA_ANVIL").map(PathBuf::from);
    let project = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../.tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
    let candidates = explicit.cloned().into_iter().chain(from_env).chain(Some(project));
    for c in candidates {
        if c.is_file() {
            return Some(c);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("anvil")).find(|p| p.is_file())
}
