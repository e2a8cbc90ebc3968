//! Helpers several end-to-end files share: the arbiters as services, and
//! an agent's ERC-8004 identity.

use std::{sync::Arc, time::Duration};

use alloy::{
    network::EthereumWallet,
    primitives::{Address, U256},
};
use tessera_arbiter::{Arbiter, Judge, store::ArbiterStore};
use tessera_bindings::{AgentRegistry, IdentityRegistry, client::connect, envelope::FsBlobStore};
use tessera_e2e::{Stack, TestEnv};

/// The arbiter ruling at `level` (the appeal arbiter when `appeal`),
/// following new blocks in the background. Both share one decision store
/// (`db`), as `tessera arbiter run` and `tessera arbiter appeals run` do by
/// default.
pub(crate) async fn spawn_arbiter(
    stack: &Stack,
    appeal: bool,
    judge: Judge,
    db: &str,
) -> tokio::task::JoinHandle<()> {
    let key = if appeal {
        stack.env.actors.appeal_arbiter.clone()
    } else {
        stack.env.actors.arbiter.clone()
    };
    let provider = connect(stack.env.chain.endpoint_url(), EthereumWallet::new(key.clone()));
    let store = ArbiterStore::connect(db).await.unwrap();
    let blobs = Arc::new(FsBlobStore::new(&stack.blobs));
    let deployment = stack.env.deployment.clone();
    let mut arbiter = if appeal {
        Arbiter::appeal_arbiter(provider, key.address(), deployment, store, judge, blobs).await
    } else {
        Arbiter::new(provider, key.address(), deployment, store, judge, blobs).await
    }
    .unwrap();
    let ws = stack.env.chain.ws_endpoint();
    tokio::spawn(async move {
        arbiter.run(Some(&ws), Duration::from_millis(200), |_| {}, std::future::pending()).await;
    })
}

/// Registers an ERC-8004 identity for `agent` and links it in the registry;
/// its agent id.
pub(crate) async fn link_identity(env: &TestEnv, agent: Address) -> U256 {
    let identity_registry = env.deployment.identity_registry.expect("an identity registry");
    let identity = IdentityRegistry::new(identity_registry, &env.provider);
    let receipt =
        identity.register_0().from(agent).send().await.unwrap().get_receipt().await.unwrap();
    assert!(receipt.status());
    let id = receipt
        .inner
        .logs()
        .iter()
        .find_map(|l| l.log_decode::<IdentityRegistry::Registered>().ok())
        .map(|l| l.inner.data.agentId)
        .expect("a Registered event");
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let r = registry.linkIdentity(id).from(agent).send().await.unwrap().get_receipt().await;
    assert!(r.unwrap().status(), "linked");
    id
}
