//! Shared fixture for Tessera's end-to-end tests: a real anvil chain with the
//! contracts deployed from Rust, one account per role, and the escrow client.
//! The tests themselves live in `it/`.

use alloy::{
    primitives::{Address, U256},
    providers::DynProvider,
};
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DeployConfig},
    lifecycle::Driver,
};
use tessera_bindings::{MockUSDC, deployment::Deployment};

/// A fresh chain with everything deployed; anvil stops when this drops.
#[derive(Debug)]
pub struct TestEnv {
    /// The running chain.
    pub chain: LocalChain,
    /// Role accounts.
    pub actors: Actors,
    /// Provider signing for every role.
    pub provider: DynProvider,
    /// Where the contracts are.
    pub deployment: Deployment,
}

impl TestEnv {
    /// Starts anvil, deploys with `cfg` and registers the demo agents.
    pub async fn start(cfg: DeployConfig) -> Self {
        let chain = LocalChain::start(&ChainOptions::default()).expect("anvil starts");
        let actors = Actors::from_keys(&chain.keys()).expect("dev keys");
        let provider = actors.provider(chain.endpoint_url());
        let deployment = deploy::deploy(&provider, &actors, &cfg).await.expect("deploys");
        deploy::register_demo_agents(&provider, &actors, deployment.agent_registry)
            .await
            .expect("registers demo agents");
        Self { chain, actors, provider, deployment }
    }

    /// A lifecycle driver over this deployment.
    pub fn driver(&self) -> Driver<'_> {
        Driver::new(self.provider.clone(), &self.actors, &self.deployment)
    }

    /// Token balance of `who`.
    pub async fn balance(&self, who: Address) -> U256 {
        MockUSDC::new(self.deployment.token, &self.provider)
            .balanceOf(who)
            .call()
            .await
            .expect("balanceOf")
    }
}
