//! The role accounts of a local chain.
//!
//! Local chains use anvil's dev mnemonic; each role gets its own account so the
//! contracts' role checks are exercised for real:
//!
//! | index | role |
//! |---|---|
//! | 0 | deployer and escrow owner |
//! | 1 | arbiter |
//! | 2 | appeal arbiter |
//! | 3 | sponsor (funds tasks; refunds return here) |
//! | 4 | client (approves or disputes results) |
//! | 5.. | demo executor agents |

use alloy::{
    network::EthereumWallet,
    primitives::Address,
    providers::DynProvider,
    signers::{
        k256::ecdsa::SigningKey,
        local::{MnemonicBuilder, PrivateKeySigner, coins_bip39::English},
    },
    transports::http::reqwest::Url,
};

use crate::Error;

/// Number of demo agent accounts.
pub const AGENT_ACCOUNTS: usize = 5;

/// One signer per role.
#[derive(Debug, Clone)]
pub struct Actors {
    /// Deploys and owns the contracts.
    pub deployer: PrivateKeySigner,
    /// Executes council verdicts.
    pub arbiter: PrivateKeySigner,
    /// Rules on appeals.
    pub appeal_arbiter: PrivateKeySigner,
    /// Funds tasks.
    pub sponsor: PrivateKeySigner,
    /// Approves or disputes results.
    pub client: PrivateKeySigner,
    /// Demo executor agents.
    pub agents: Vec<PrivateKeySigner>,
}

impl Actors {
    /// Roles from a running chain's dev keys.
    pub fn from_keys(keys: &[SigningKey]) -> Result<Self, Error> {
        if keys.len() < 5 + AGENT_ACCOUNTS {
            return Err(Error::Key(format!(
                "need {} dev accounts, the chain has {}",
                5 + AGENT_ACCOUNTS,
                keys.len()
            )));
        }
        let s = |i: usize| PrivateKeySigner::from_signing_key(keys[i].clone());
        Ok(Self {
            deployer: s(0),
            arbiter: s(1),
            appeal_arbiter: s(2),
            sponsor: s(3),
            client: s(4),
            agents: (5..5 + AGENT_ACCOUNTS).map(s).collect(),
        })
    }

    /// Roles derived from a mnemonic (anvil's dev mnemonic for local chains).
    pub fn from_mnemonic(phrase: &str) -> Result<Self, Error> {
        let keys = (0..(5 + AGENT_ACCOUNTS) as u32)
            .map(|i| {
                MnemonicBuilder::<English>::default()
                    .phrase(phrase)
                    .index(i)
                    .and_then(|b| b.build())
                    .map(|s| s.credential().clone())
                    .map_err(|e| Error::Key(format!("deriving account {i}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_keys(&keys)
    }

    /// Every signer, deployer first.
    pub fn all(&self) -> impl Iterator<Item = &PrivateKeySigner> {
        [&self.deployer, &self.arbiter, &self.appeal_arbiter, &self.sponsor, &self.client]
            .into_iter()
            .chain(self.agents.iter())
    }

    /// A wallet holding every role's key; calls pick the signer with `.from(..)`,
    /// and the deployer signs when none is given.
    pub fn wallet(&self) -> EthereumWallet {
        let mut wallet = EthereumWallet::new(self.deployer.clone());
        for signer in self.all().skip(1) {
            wallet.register_signer(signer.clone());
        }
        wallet
    }

    /// An HTTP provider that signs for every role.
    pub fn provider(&self, url: Url) -> DynProvider {
        tessera_bindings::client::connect(url, self.wallet())
    }

    /// The address of demo agent `i`.
    pub fn agent(&self, i: usize) -> Address {
        self.agents[i].address()
    }
}
