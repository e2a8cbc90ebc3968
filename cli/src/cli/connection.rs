//! Where a service finds the chain and the blobs it shares with the
//! others, and the limits its HTTP API keeps.

use std::path::PathBuf;

use alloy::transports::http::reqwest::Url;
use clap::Args;
use eyre::{Context, Result, bail};

/// Where every service looks for the chain when told nothing else.
pub(crate) const DEFAULT_RPC_URL: &str = "http://127.0.0.1:8545";

/// Where a service finds the chain and the blobs it shares with the others.
#[derive(Debug, Args)]
pub(crate) struct Connection {
    /// The deployment record to work against.
    #[arg(long, default_value = "deployment.json")]
    pub(crate) deployment: PathBuf,
    /// JSON-RPC endpoint of the chain [default: the one the deployment file
    /// records, else http://127.0.0.1:8545]
    #[arg(long = "rpc-url", value_name = "URL", env = "TESSERA_RPC_URL")]
    pub(crate) rpc_url_arg: Option<Url>,
    /// Websocket endpoint for new blocks (default: the RPC URL with ws://);
    /// without one the service polls.
    #[arg(long, env = "TESSERA_WS_URL")]
    pub(crate) ws_url: Option<String>,
    /// Directory of content-addressed envelopes, results and rationales.
    #[arg(long, default_value = ".tessera/blobs")]
    pub(crate) blobs: PathBuf,
    /// Base URL serving blobs as GET <URL>/<sha256 hex>, asked after the local store and a URI's hint (repeatable, in order; the env variable takes them comma-separated).
    #[arg(
        long = "blob-gateway",
        value_name = "URL",
        env = "TESSERA_BLOB_GATEWAYS",
        value_delimiter = ',',
        value_parser = crate::serving::parse_blob_url
    )]
    pub(crate) blob_gateways: Vec<tessera_bindings::envelope::BlobUrl>,
    /// Never follow the ?src= location hint of a blob URI: read only the local store and the gateways.
    #[arg(long)]
    pub(crate) ignore_blob_hints: bool,
    /// Let ?src= location hints, and redirects from them, reach loopback, private, link-local and metadata addresses (refused by default, except on a local chain, id 31337). A hint is written by a stranger: this lets strangers make this service ask its own network.
    #[arg(long, env = "TESSERA_ALLOW_PRIVATE_HINTS")]
    pub(crate) allow_private_hints: bool,
    /// A host (or host:port) trusted in location hints whatever its address, such as a partner's blob server on a private network (repeatable; the env variable takes them comma-separated).
    #[arg(
        long = "trust-hint-host",
        value_name = "HOST",
        env = "TESSERA_TRUST_HINT_HOSTS",
        value_delimiter = ','
    )]
    pub(crate) trust_hint_hosts: Vec<String>,
}

/// What an HTTP API keeps, whatever its clients do.
#[derive(Debug, Args)]
pub(crate) struct Limits {
    /// Milliseconds a request may take before it is answered 503 with Retry-After.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) request_timeout_ms: u64,
    /// Open event streams at most; beyond it a new one is answered 503 with Retry-After.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) max_streams: u64,
    /// Seconds between keep-alives on an idle event stream; a client that left
    /// is noticed at the next one.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub(crate) keep_alive_secs: u64,
}

impl Limits {
    /// The gate the routers share, made from these limits.
    pub(crate) fn gate(&self) -> tessera_http::limits::StreamGate {
        tessera_http::limits::StreamGate::new(&tessera_http::limits::HttpLimits {
            request_timeout: std::time::Duration::from_millis(self.request_timeout_ms),
            max_streams: usize::try_from(self.max_streams).unwrap_or(usize::MAX),
            keep_alive: std::time::Duration::from_secs(self.keep_alive_secs),
        })
    }
}

impl Connection {
    /// The deployment record.
    pub(crate) fn deployment(&self) -> Result<tessera_bindings::deployment::Deployment> {
        use tessera_bindings::deployment::{Deployment, DeploymentError};
        match Deployment::load(&self.deployment) {
            Err(DeploymentError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                bail!(
                    "no deployment file at {}: start a local chain with `tessera chain` (it writes one), deploy with `tessera deploy`, or name one with --deployment",
                    self.deployment.display()
                )
            }
            other => Ok(other?),
        }
    }

    /// The chain's JSON-RPC endpoint: `--rpc-url` (or TESSERA_RPC_URL),
    /// else the one the deployment file records, else the local default.
    pub(crate) fn rpc_url(&self) -> Url {
        self.rpc_url_arg
            .clone()
            .or_else(|| self.deployment().ok()?.rpc_url?.parse().ok())
            .unwrap_or_else(|| DEFAULT_RPC_URL.parse().expect("the default RPC URL parses"))
    }

    /// Refuses to go on when the chain behind `provider` is not the one the
    /// deployment record names (one clear line). A chain that does not
    /// answer yet is waited for, with backoff.
    pub(crate) async fn check_chain(
        &self,
        provider: &alloy::providers::DynProvider,
        deployment: &tessera_bindings::deployment::Deployment,
    ) -> Result<()> {
        use alloy::providers::Provider;
        // A service waits for its chain to answer (as for everything else
        // at start) rather than run unchecked.
        let what = format!("reading the chain id through {}", self.rpc_url());
        let actual = crate::starting::until_reachable(&what, || provider.get_chain_id())
            .await
            .wrap_err(what)?;
        deployment.check_chain(actual).map_err(|err| {
            eyre::eyre!("{} against {}: {err}", self.deployment.display(), self.rpc_url())
        })
    }

    /// The local blob store under `--blobs`, read first, then URI hints
    /// (unless `--ignore-blob-hints`; to public addresses only unless
    /// `--allow-private-hints` or the deployment's chain is a local one)
    /// and the gateways.
    pub(crate) fn blob_sources(&self) -> tessera_bindings::envelope::BlobSources {
        let local = std::sync::Arc::new(tessera_bindings::envelope::FsBlobStore::new(&self.blobs));
        let sources = tessera_bindings::envelope::BlobSources::new(local)
            .with_gateways(self.blob_gateways.clone())
            .follow_hints(!self.ignore_blob_hints)
            .trust_hint_hosts(self.trust_hint_hosts.clone());
        let sources = match self.deployment() {
            Ok(d) => sources.on_chain(d.chain_id),
            Err(_) => sources,
        };
        if self.allow_private_hints { sources.allow_private_hints(true) } else { sources }
    }

    /// The websocket endpoint: given, or the RPC URL's ws:// twin.
    pub(crate) fn ws(&self) -> Option<String> {
        let recorded = || match self.rpc_url_arg {
            // The recorded websocket belongs to the recorded RPC endpoint.
            None => self.deployment().ok()?.ws_url,
            Some(_) => None,
        };
        self.ws_url.clone().or_else(recorded).or_else(|| ws_of(&self.rpc_url()))
    }
}

/// The websocket URL anvil (and most nodes) serve beside an HTTP one.
pub(crate) fn ws_of(http: &Url) -> Option<String> {
    let s = http.as_str();
    s.strip_prefix("http://")
        .map(|rest| format!("ws://{rest}"))
        .or_else(|| s.strip_prefix("https://").map(|rest| format!("wss://{rest}")))
}
