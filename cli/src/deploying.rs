//! `tessera deploy`: the contracts on any chain, as a deployer whose key
//! comes from the environment or an encrypted keystore, never the command
//! line or the logs.

use std::path::PathBuf;

use alloy::{
    providers::Provider, signers::local::PrivateKeySigner, transports::http::reqwest::Url,
};
use clap::Args;
use eyre::{Context, Result, bail, eyre};
use tessera_anvil::{
    actors::Actors,
    chain::DEV_MNEMONIC,
    deploy::{self, DeployRoles},
};
use tessera_bindings::deployment::Deployment;

/// The deployer's key in hex.
pub(crate) const DEPLOYER_KEY_VAR: &str = "TESSERA_DEPLOYER_KEY";
/// The chain id of a local development chain (anvil's).
pub(crate) const LOCAL_CHAIN_ID: u64 = 31_337;

/// The keystore's password, when no --password-file is given.
pub(crate) const KEYSTORE_PASSWORD_VAR: &str = "TESSERA_KEYSTORE_PASSWORD";

/// `tessera deploy`: where, as whom, with which token and arbiters.
#[derive(Debug, Args)]
pub(crate) struct DeployCmd {
    /// JSON-RPC endpoint of the chain.
    #[arg(long, env = "TESSERA_RPC_URL", default_value = crate::cli::DEFAULT_RPC_URL)]
    pub(crate) rpc_url: Url,
    /// An encrypted JSON keystore (Web3 secret storage, as `cast wallet
    /// import` writes) holding the deployer's key.
    #[arg(long, value_name = "PATH", conflicts_with = "mnemonic")]
    pub(crate) keystore: Option<PathBuf>,
    /// A file whose first line is the keystore's password (else
    /// TESSERA_KEYSTORE_PASSWORD).
    #[arg(long, value_name = "PATH", requires = "keystore")]
    pub(crate) password_file: Option<PathBuf>,
    /// Mnemonic of the local role accounts (index 0 deployer, 1 arbiter,
    /// 2 appeal arbiter, 3 sponsor, 5.. demo agents); anvil's dev mnemonic
    /// by default. Used only when neither TESSERA_DEPLOYER_KEY nor --keystore
    /// gives the deployer.
    #[arg(long, env = "TESSERA_MNEMONIC", hide_env_values = true)]
    pub(crate) mnemonic: Option<String>,
    /// Settle in this existing ERC-20 (a real USDC: it must have code and 6
    /// decimals) instead of deploying MockUSDC; nothing is minted then.
    #[arg(long, value_name = "ADDRESS", conflicts_with = "mock_token")]
    pub(crate) token: Option<alloy::primitives::Address>,
    /// Deploy a MockUSDC (mintable by the deployer only) on a chain that is
    /// not local, a test net: without --token a non-local chain is refused
    /// unless this is given.
    #[arg(long)]
    pub(crate) mock_token: bool,
    /// Link agents to this existing ERC-8004 identity registry instead of
    /// deploying one (default: the one --reputation-registry is bound to).
    #[arg(long, value_name = "ADDRESS")]
    pub(crate) identity_registry: Option<alloy::primitives::Address>,
    /// Use this existing ERC-8004 reputation registry instead of deploying
    /// one; it must be bound to the identity registry.
    #[arg(long, value_name = "ADDRESS")]
    pub(crate) reputation_registry: Option<alloy::primitives::Address>,
    /// The arbiter written into the escrow (default: the mnemonic's arbiter
    /// account, or the deployer when the key comes from the environment or a
    /// keystore).
    #[arg(long, value_name = "ADDRESS")]
    pub(crate) arbiter: Option<alloy::primitives::Address>,
    /// The appeal arbiter written into the escrow (defaults as --arbiter).
    #[arg(long, value_name = "ADDRESS")]
    pub(crate) appeal_arbiter: Option<alloy::primitives::Address>,
    /// Where to write the deployment record.
    #[arg(long, default_value = "deployment.json")]
    pub(crate) deployment: PathBuf,
    /// Also register the demo agents (the mnemonic's accounts 5..9: a local
    /// chain only).
    #[arg(long)]
    pub(crate) demo_agents: bool,
    #[command(flatten)]
    pub(crate) config: crate::cli::DeployArgs,
}

/// Deploys, registers the demo agents when asked, writes the record and
/// prints it.
pub(crate) async fn run(cmd: DeployCmd) -> Result<()> {
    let cfg = cmd.config.config();
    let deployer = deployer_key(&cmd)?;
    let dev_keys = deployer.is_none() && cmd.mnemonic.as_deref().is_none_or(|m| m == DEV_MNEMONIC);
    let (provider, roles, actors) = match deployer {
        Some(signer) => {
            if cmd.demo_agents {
                bail!("--demo-agents needs the mnemonic's agent accounts: a local chain only");
            }
            let owner = signer.address();
            let provider = tessera_bindings::client::connect(
                cmd.rpc_url.clone(),
                alloy::network::EthereumWallet::new(signer),
            );
            let roles = DeployRoles {
                owner,
                arbiter: cmd.arbiter.unwrap_or(owner),
                appeal_arbiter: cmd.appeal_arbiter.unwrap_or(owner),
                token: cmd.token,
                identity_registry: cmd.identity_registry,
                reputation_registry: cmd.reputation_registry,
                fund: None,
            };
            (provider, roles, None)
        }
        None => {
            let actors = Actors::from_mnemonic(cmd.mnemonic.as_deref().unwrap_or(DEV_MNEMONIC))?;
            let provider = actors.provider(cmd.rpc_url.clone());
            let roles = DeployRoles {
                owner: actors.deployer.address(),
                arbiter: cmd.arbiter.unwrap_or(actors.arbiter.address()),
                appeal_arbiter: cmd.appeal_arbiter.unwrap_or(actors.appeal_arbiter.address()),
                token: cmd.token,
                identity_registry: cmd.identity_registry,
                reputation_registry: cmd.reputation_registry,
                fund: cmd.token.is_none().then(|| actors.sponsor.address()),
            };
            (provider, roles, Some(actors))
        }
    };
    let chain_id = provider
        .get_chain_id()
        .await
        .wrap_err_with(|| format!("reaching the chain at {}", cmd.rpc_url))?;
    // Anvil's dev mnemonic is public: its keys hold nothing but on a local chain.
    if dev_keys && chain_id != LOCAL_CHAIN_ID {
        bail!(
            "chain id {chain_id} is not a local chain: the dev mnemonic's keys are public there; give the deployer with {DEPLOYER_KEY_VAR} or --keystore"
        );
    }
    token_choice(chain_id, cmd.token, cmd.mock_token)?;
    println!("deploying to chain id {chain_id} at {} as {}", cmd.rpc_url, roles.owner);
    let record = deploy::deploy_to(&provider, &roles, &cfg)
        .await
        .wrap_err_with(|| format!("deploying to {}", cmd.rpc_url))?;
    if let (true, Some(actors)) = (cmd.demo_agents, &actors) {
        deploy::register_demo_agents(&provider, actors, record.agent_registry).await?;
    }
    // Services on this machine given no --rpc-url connect where it was deployed.
    let record = Deployment { rpc_url: Some(cmd.rpc_url.to_string()), ..record };
    record.save(&cmd.deployment)?;
    println!("{}", serde_json::to_string_pretty(&record)?);
    println!("deployment written to {}", cmd.deployment.display());
    Ok(())
}

/// Chain ids of local development chains (anvil's, and hardhat's or
/// ganache's older default).
const LOCAL_CHAIN_IDS: [u64; 2] = [LOCAL_CHAIN_ID, 1337];

/// Circle's USDC on the networks a sponsor is likeliest to use, by chain id.
const USDC: [(u64, &str, &str); 8] = [
    (1, "Ethereum", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"),
    (8453, "Base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
    (10, "OP Mainnet", "0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85"),
    (42161, "Arbitrum One", "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"),
    (137, "Polygon PoS", "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"),
    (11155111, "Sepolia", "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238"),
    (84532, "Base Sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
    (421614, "Arbitrum Sepolia", "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d"),
];

/// Why a deployment was refused before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenRefused {
    /// A chain that is not local, with no token to settle in and no
    /// MockUSDC asked for.
    #[error(
        "chain id {chain_id} is not a local chain and no --token was given: deploying would settle in a MockUSDC only the deployer can mint. {hint}"
    )]
    NoToken {
        /// The chain's id.
        chain_id: u64,
        /// How a sponsor gets the token there.
        hint: String,
    },
}

/// Which token a deployment to `chain_id` settles in: `Some` the existing
/// ERC-20 given with --token, `None` a MockUSDC deployed with the
/// contracts, which a chain that is not local takes only with --mock-token
/// (a test net).
pub(crate) fn token_choice(
    chain_id: u64,
    token: Option<alloy::primitives::Address>,
    mock_token: bool,
) -> Result<Option<alloy::primitives::Address>, TokenRefused> {
    if token.is_some() || mock_token || LOCAL_CHAIN_IDS.contains(&chain_id) {
        return Ok(token);
    }
    let hint = match USDC.iter().find(|(id, ..)| *id == chain_id) {
        Some((_, name, usdc)) => format!(
            "On {name}, settle in Circle's USDC: --token {usdc}; sponsors buy or bridge USDC there (a test net's from Circle's faucet). For a throwaway test net deployment, --mock-token."
        ),
        None => "Give the address of the chain's USDC (Circle lists it per network) with --token; sponsors hold and approve that token. For a throwaway test net deployment, --mock-token.".to_owned(),
    };
    Err(TokenRefused::NoToken { chain_id, hint })
}

/// The deployer from TESSERA_DEPLOYER_KEY or the keystore; `None` when
/// neither is given (the mnemonic's accounts deploy then).
fn deployer_key(cmd: &DeployCmd) -> Result<Option<PrivateKeySigner>> {
    let from_env = std::env::var(DEPLOYER_KEY_VAR).ok().filter(|k| !k.trim().is_empty());
    match (&cmd.keystore, from_env) {
        (Some(_), Some(_)) => {
            bail!("give the deployer either {DEPLOYER_KEY_VAR} or --keystore, not both")
        }
        (Some(path), None) => {
            let password = keystore_password(cmd.password_file.as_ref())?;
            let signer = PrivateKeySigner::decrypt_keystore(path, password.as_bytes())
                .map_err(|e| keystore_error(path, &e))?;
            Ok(Some(signer))
        }
        (None, Some(key)) => {
            if cmd.mnemonic.is_some() {
                bail!("give the deployer either {DEPLOYER_KEY_VAR} or --mnemonic, not both");
            }
            let signer = key
                .trim()
                .parse::<PrivateKeySigner>()
                .map_err(|_| eyre!("{DEPLOYER_KEY_VAR} is not a hex private key"))?;
            Ok(Some(signer))
        }
        (None, None) => Ok(None),
    }
}

/// The keystore password: the first line of --password-file, else the
/// environment.
pub(crate) fn keystore_password(file: Option<&PathBuf>) -> Result<String> {
    match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .wrap_err_with(|| format!("reading the password file {}", path.display()))?;
            Ok(text.lines().next().unwrap_or_default().to_owned())
        }
        None => std::env::var(KEYSTORE_PASSWORD_VAR).map_err(|_| {
            eyre!("set {KEYSTORE_PASSWORD_VAR} or give --password-file to open the keystore")
        }),
    }
}

/// One line saying why a keystore did not open, without its contents.
pub(crate) fn keystore_error(
    path: &std::path::Path,
    err: &alloy::signers::local::LocalSignerError,
) -> eyre::Report {
    // eth-keystore's MAC check is how a wrong password shows.
    if err.to_string().contains("Mac Mismatch") {
        eyre!("keystore {}: wrong password", path.display())
    } else {
        eyre!("keystore {} does not open: {err}", path.display())
    }
}

#[cfg(test)]
mod tests {

    /// Every USDC address listed is EIP-55 checksummed (a mistyped letter's
    /// case shows as a failed checksum), and each chain is listed once.
    #[test]
    fn the_listed_usdc_addresses_are_checksummed() {
        for (chain, name, address) in USDC {
            let parsed = alloy::primitives::Address::parse_checksummed(address, None);
            assert!(parsed.is_ok(), "{name} ({chain}): {address} is not EIP-55");
        }
        let mut ids: Vec<u64> = USDC.iter().map(|u| u.0).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), USDC.len());
    }
    use super::*;

    #[test]
    fn a_chain_that_is_not_local_needs_a_token_or_mock_token() {
        let usdc: alloy::primitives::Address =
            "0x036CbD53842c5426634e7929541eC2318f3dCF7e".parse().unwrap();
        // Local chains deploy a MockUSDC unasked.
        assert_eq!(token_choice(31337, None, false), Ok(None));
        assert_eq!(token_choice(1337, None, false), Ok(None));
        // Elsewhere: the token given, or a MockUSDC asked for.
        assert_eq!(token_choice(84532, Some(usdc), false), Ok(Some(usdc)));
        assert_eq!(token_choice(84532, None, true), Ok(None));
        let refused = token_choice(84532, None, false).unwrap_err().to_string();
        assert!(refused.starts_with("chain id 84532 is not a local chain"), "{refused}");
        assert!(refused.contains("--token 0x036CbD53842c5426634e7929541eC2318f3dCF7e"));
        assert!(refused.contains("Base Sepolia") && refused.contains("--mock-token"));
        let unknown = token_choice(999_999, None, false).unwrap_err().to_string();
        assert!(unknown.contains("--token") && unknown.contains("--mock-token"), "{unknown}");
    }
}
