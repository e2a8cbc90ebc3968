//! `tessera chain` and the chain and deployment options the commands
//! share: where and how anvil starts, the escrow's windows.

use std::path::{Path, PathBuf};

use clap::Args;
use eyre::{Context, Result};
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DeployConfig},
};

/// The port `tessera chain` listens on unless told otherwise: the default
/// RPC URL's.
const DEFAULT_CHAIN_PORT: u16 = 8545;

/// Where and how to start anvil.
#[derive(Debug, Args)]
pub(super) struct ChainArgs {
    /// Port for anvil: 0 for a free one [default: 8545 for `tessera chain`,
    /// where every service looks by default; a free one otherwise]
    #[arg(long)]
    port: Option<u16>,
    /// Load chain state from this file and keep saving it there.
    #[arg(long)]
    state: Option<PathBuf>,
    /// The anvil binary (default: $TESSERA_ANVIL, the project's .tools/, then $PATH).
    #[arg(long, env = "TESSERA_ANVIL")]
    anvil: Option<PathBuf>,
}

impl ChainArgs {
    pub(super) fn options(&self) -> ChainOptions {
        ChainOptions {
            port: self.port.filter(|p| *p != 0),
            state_file: self.state.clone(),
            anvil: self.anvil.clone(),
            ..ChainOptions::default()
        }
    }
}

/// Escrow settings for a deployment.
#[derive(Debug, Args)]
pub(crate) struct DeployArgs {
    /// Seconds the arbiter has to rule on a dispute.
    #[arg(
        long = "dispute-window-secs",
        alias = "dispute-window",
        value_name = "SECS",
        default_value_t = 86_400
    )]
    dispute_window: u32,
    /// Seconds to appeal a ruling (0 makes rulings final at once).
    #[arg(
        long = "appeal-window-secs",
        alias = "appeal-window",
        value_name = "SECS",
        default_value_t = 86_400
    )]
    appeal_window: u32,
    /// Seconds the appeal arbiter has to rule on an appeal before the first
    /// ruling stands.
    #[arg(
        long = "appeal-ruling-window-secs",
        alias = "appeal-ruling-window",
        value_name = "SECS",
        default_value_t = 86_400
    )]
    appeal_ruling_window: u32,
}

impl DeployArgs {
    pub(crate) fn config(&self) -> DeployConfig {
        DeployConfig {
            dispute_window: self.dispute_window,
            appeal_window: self.appeal_window,
            appeal_ruling_window: self.appeal_ruling_window,
            ..DeployConfig::default()
        }
    }
}

/// `tessera chain`: a local chain with the contracts deployed and the demo
/// agents registered, the deployment written to `deployment`, until Ctrl-C.
pub(super) async fn run(
    chain: &ChainArgs,
    block_time: Option<u64>,
    deployment: &Path,
) -> Result<()> {
    let port = chain.port.unwrap_or(DEFAULT_CHAIN_PORT);
    let options = ChainOptions { block_time, ..chain.options() };
    let running = LocalChain::start(&ChainOptions { port: (port != 0).then_some(port), ..options })
        .wrap_err_with(|| format!("starting anvil on port {port} (--port 0 takes a free one)"))?;
    let actors = Actors::from_keys(&running.keys())?;
    let provider = actors.provider(running.endpoint_url());
    let record = deploy::deploy(&provider, &actors, &DeployConfig::default()).await?;
    deploy::register_demo_agents(&provider, &actors, record.agent_registry).await?;
    // Every service reading this file connects here unless told otherwise.
    let record = tessera_bindings::deployment::Deployment {
        rpc_url: Some(running.endpoint_url().to_string()),
        ws_url: Some(running.ws_endpoint()),
        ..record
    };
    record.save(deployment)?;
    let mining = block_time.map_or("automine".to_owned(), |s| format!("a block every {s} s"));
    // The accounts past the roles' are nobody's yet: one for an agent of your own.
    let keys = running.keys();
    let spare: Vec<_> = keys
        .iter()
        .skip(5 + tessera_anvil::actors::AGENT_ACCOUNTS)
        .take(2)
        .map(|k| alloy::signers::local::PrivateKeySigner::from_signing_key(k.clone()))
        .collect();
    let funds = tessera_bindings::usdc::Usdc::from_base_units(
        DeployConfig::default().sponsor_funds.to::<u128>(),
    );
    print!("{}", crate::local::roles(&actors, &spare, funds));
    println!(
        "anvil on {} (ws {}), chain id {}, {mining}; deployment written to {}. Ctrl-C to stop.",
        running.endpoint_url(),
        running.ws_endpoint(),
        running.chain_id(),
        deployment.display()
    );
    super::shutdown_signal().await;
    drop(running);
    println!("anvil stopped");
    Ok(())
}
