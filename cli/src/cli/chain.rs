//! `tessera chain` and the chain and deployment options the commands
//! share: where and how anvil starts, the escrow's windows.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
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

/// What `tessera chain` does to a chain already running.
#[derive(Debug, Subcommand)]
pub(crate) enum ChainAction {
    /// Move a local chain's clock forward and mine a block, so review,
    /// dispute and appeal windows and deadlines pass at once (anvil only:
    /// `evm_increaseTime` + `evm_mine`).
    ///
    /// Example: `tessera chain advance 1d` ends a one-day appeal window.
    Advance {
        /// How far: seconds, or a number with s, m, h or d (90s, 30m, 2h, 1d).
        #[arg(value_parser = parse_duration)]
        by: u64,
        /// The local chain's JSON-RPC endpoint.
        #[arg(
            long = "rpc-url",
            value_name = "URL",
            env = "TESSERA_RPC_URL",
            default_value = super::connection::DEFAULT_RPC_URL
        )]
        rpc_url: alloy::transports::http::reqwest::Url,
    },
}

/// Parses `90`, `90s`, `30m`, `2h` or `1d` into seconds.
pub(crate) fn parse_duration(s: &str) -> std::result::Result<u64, String> {
    let s = s.trim();
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a duration: a whole number with s, m, h or d"))?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        other => return Err(format!("{other:?} is not a unit: s, m, h or d")),
    };
    n.checked_mul(unit).ok_or_else(|| format!("{s:?} is too long"))
}

/// Runs `action` against a chain already running.
pub(super) async fn act(action: ChainAction) -> Result<()> {
    match action {
        ChainAction::Advance { by, rpc_url } => {
            use alloy::providers::{Provider, ProviderBuilder};
            let provider = ProviderBuilder::new().connect_http(rpc_url.clone());
            provider
                .raw_request::<_, serde_json::Value>("evm_increaseTime".into(), (by,))
                .await
                .wrap_err_with(|| {
                    format!("moving the clock of {rpc_url} (only a local anvil chain can)")
                })?;
            provider
                .raw_request::<_, serde_json::Value>("evm_mine".into(), ())
                .await
                .wrap_err_with(|| format!("mining a block on {rpc_url}"))?;
            let head = provider
                .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
                .await
                .wrap_err("reading the new head")?
                .ok_or_else(|| eyre::eyre!("{rpc_url} has no latest block"))?;
            println!(
                "advanced {by} s: block {} at {} (unix)",
                head.header.number, head.header.timestamp
            );
            Ok(())
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

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_read_with_their_units() {
        assert_eq!(parse_duration("90"), Ok(90));
        assert_eq!(parse_duration("90s"), Ok(90));
        assert_eq!(parse_duration("30m"), Ok(1_800));
        assert_eq!(parse_duration("2h"), Ok(7_200));
        assert_eq!(parse_duration("1d"), Ok(86_400));
        assert!(parse_duration("1w").unwrap_err().contains("not a unit"));
        assert!(parse_duration("h").unwrap_err().contains("not a duration"));
        assert!(parse_duration("99999999999999999999d").is_err());
    }
}
