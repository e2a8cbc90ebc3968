//! ERC-8004 identities on a real chain: a worker registers its card as the
//! agent's registration file, proves its wallet with an EIP-712 signature
//! when it is not already its wallet, links the identity to its offer, finds
//! it again on restart, and a deploy reuses registries it is given.

use std::sync::Arc;

use alloy::{
    network::EthereumWallet,
    primitives::{Address, U256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use tessera_anvil::deploy::{DeployConfig, DeployRoles, deploy_to};
use tessera_bindings::{
    AgentRegistry, IdentityRegistry, ReputationRegistry,
    client::connect,
    envelope::{BlobUrl, MemoryBlobStore},
    erc8004::{RegistrationFile, TRUST_REPUTATION, wallet_proof_hash},
};
use tessera_e2e::TestEnv;
use tessera_workers::{
    AgentCard,
    runtime::{
        RuntimeError, Worker,
        identity::{BLOBS_SERVICE, Identity, OFFERS_SERVICE, WALLET_SERVICE},
    },
};

const CARD: &str = "
id: identity-e2e
description: Extractive summaries, registered as an ERC-8004 agent.
role: executor
model: offline
capabilities:
  - name: summarize
    price: 300000
instructions: Summarize as bullets.
";

const BLOBS: &str = "https://agent.example/blobs";

/// A worker on a dev account no demo agent uses, and its key.
fn worker(env: &TestEnv) -> (Worker, PrivateKeySigner) {
    let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
    let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(signer.clone()));
    let card = AgentCard::from_yaml(CARD).unwrap();
    let worker = Worker::new(
        provider,
        signer.address(),
        card,
        env.deployment.clone(),
        Arc::new(MemoryBlobStore::new()),
    )
    .with_public_blobs(BLOBS.parse::<BlobUrl>().unwrap());
    (worker, signer)
}

#[tokio::test]
async fn worker_registers_its_identity_proves_its_wallet_and_links_it() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let identity_at = env.deployment.identity_registry.expect("the deploy deploys one");
    let identity = IdentityRegistry::new(identity_at, &env.provider);
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let (w, signer) = worker(&env);
    let me = signer.address();
    w.ensure_registered().await.unwrap();

    // First start: registered, its file set, linked; the wallet is the owner
    // from registration on, so no proof is needed yet.
    let first = w.ensure_identity(&signer).await.unwrap().expect("an identity registry");
    let Identity { agent_id, registered, changes } = first;
    assert!(registered);
    assert_eq!(changes, 3, "register, setAgentURI, linkIdentity");
    assert_eq!(identity.ownerOf(agent_id).call().await.unwrap(), me);
    assert_eq!(identity.getAgentWallet(agent_id).call().await.unwrap(), me);
    let linked = registry.identityOf(me).call().await.unwrap();
    assert!(linked.linked);
    assert_eq!(linked.agentId, agent_id);

    let file =
        RegistrationFile::from_uri(&identity.tokenURI(agent_id).call().await.unwrap()).unwrap();
    assert_eq!(file.name, "identity-e2e");
    assert_eq!(file.description, "Extractive summaries, registered as an ERC-8004 agent.");
    assert_eq!(file.supported_trust, vec![TRUST_REPUTATION.to_owned()]);
    assert_eq!(file.agent_id_in(31337, identity_at), Some(agent_id.to::<u64>()));
    let service = |name: &str| {
        file.services.iter().find(|s| s.name == name).map(|s| s.endpoint.clone()).unwrap()
    };
    assert_eq!(service(OFFERS_SERVICE), format!("eip155:31337:{}", env.deployment.agent_registry));
    assert_eq!(service(WALLET_SERVICE), format!("eip155:31337:{me}"));
    assert_eq!(service(BLOBS_SERVICE), BLOBS);
    assert_eq!(file, w.registration_file(agent_id, identity_at).unwrap());

    // Idempotent.
    let again = w.ensure_identity(&signer).await.unwrap().unwrap();
    assert_eq!(again, Identity { agent_id, registered: false, changes: 0 });

    // Wallet cleared (as a transfer would): the next start proves it with an
    // EIP-712 signature the contract checks.
    let owner = connect(env.chain.endpoint_url(), EthereumWallet::new(signer.clone()));
    let as_owner = IdentityRegistry::new(identity_at, &owner);
    as_owner.unsetAgentWallet(agent_id).send().await.unwrap().get_receipt().await.unwrap();
    assert_eq!(identity.getAgentWallet(agent_id).call().await.unwrap(), Address::ZERO);
    let (restarted, _) = worker(&env);
    let proven = restarted.ensure_identity(&signer).await.unwrap().unwrap();
    assert_eq!(proven, Identity { agent_id, registered: false, changes: 1 });
    assert_eq!(identity.getAgentWallet(agent_id).call().await.unwrap(), me);
    let head = env.provider.get_block_number().await.unwrap();
    let filter = Filter::new()
        .address(identity_at)
        .event_signature(IdentityRegistry::MetadataSet::SIGNATURE_HASH)
        .from_block(head)
        .to_block(head);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    let [log] = logs.as_slice() else { panic!("one MetadataSet in the proof's block: {logs:?}") };
    let ev = IdentityRegistry::MetadataSet::decode_log(&log.inner).unwrap().data;
    assert_eq!(
        (ev.metadataKey.as_str(), ev.metadataValue.as_ref()),
        ("agentWallet", me.as_slice())
    );

    // The proof's hash is the contract's, for the wallet's current nonce,
    // which the proof just used up.
    let deadline = U256::from(2_000_000_000u64);
    let nonce = identity.walletNonce(me).call().await.unwrap();
    assert_eq!(nonce, U256::from(1), "the proof used the first nonce");
    assert_eq!(
        identity.agentWalletDigest(agent_id, me, me, deadline).call().await.unwrap(),
        wallet_proof_hash(31337, identity_at, agent_id, me, me, nonce, deadline)
    );

    // Left and registered again: the link is gone, the identity is found by
    // its registration to this address, and linked again.
    let as_agent = AgentRegistry::new(env.deployment.agent_registry, &owner);
    as_agent.leave().send().await.unwrap().get_receipt().await.unwrap();
    assert!(!registry.identityOf(me).call().await.unwrap().linked);
    restarted.ensure_registered().await.unwrap();
    let relinked = restarted.ensure_identity(&signer).await.unwrap().unwrap();
    assert_eq!(relinked, Identity { agent_id, registered: false, changes: 1 });
    assert_eq!(registry.identityOf(me).call().await.unwrap().agentId, agent_id);
    assert_eq!(identity.balanceOf(me).call().await.unwrap(), U256::from(1), "one identity");

    // Another key cannot prove this worker's wallet.
    let stranger = PrivateKeySigner::random();
    let err = restarted.ensure_identity(&stranger).await.unwrap_err();
    assert!(matches!(err, RuntimeError::WalletKey { .. }), "{err}");

    // A deployment without the registries has no identity to keep.
    let mut bare = env.deployment.clone();
    bare.identity_registry = None;
    let card = AgentCard::from_yaml(CARD).unwrap();
    let plain = Worker::new(owner, me, card, bare, Arc::new(MemoryBlobStore::new()));
    assert_eq!(plain.ensure_identity(&signer).await.unwrap(), None);
}

/// A deploy given existing registries uses them; one given a reputation
/// registry bound to another identity registry refuses.
#[tokio::test]
async fn deploy_reuses_the_registries_it_is_given() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let identity = env.deployment.identity_registry.unwrap();
    let reputation = env.deployment.reputation_registry.unwrap();
    let roles = |identity_registry, reputation_registry| DeployRoles {
        owner: env.actors.deployer.address(),
        arbiter: env.actors.arbiter.address(),
        appeal_arbiter: env.actors.appeal_arbiter.address(),
        token: Some(env.deployment.token),
        identity_registry,
        reputation_registry,
        fund: None,
    };
    let cfg = DeployConfig::default();

    let both =
        deploy_to(&env.provider, &roles(Some(identity), Some(reputation)), &cfg).await.unwrap();
    assert_eq!(
        (both.identity_registry, both.reputation_registry),
        (Some(identity), Some(reputation))
    );
    let linked = AgentRegistry::new(both.agent_registry, &env.provider);
    assert_eq!(linked.identityRegistry().call().await.unwrap(), identity);

    // Given only the reputation registry, its identity registry is taken.
    let taken = deploy_to(&env.provider, &roles(None, Some(reputation)), &cfg).await.unwrap();
    assert_eq!(taken.identity_registry, Some(identity));

    // Given only the identity registry, a reputation registry is deployed for it.
    let fresh = deploy_to(&env.provider, &roles(Some(identity), None), &cfg).await.unwrap();
    let new_reputation = fresh.reputation_registry.unwrap();
    assert_ne!(new_reputation, reputation);
    let bound = ReputationRegistry::new(new_reputation, &env.provider);
    assert_eq!(bound.getIdentityRegistry().call().await.unwrap(), identity);

    // A reputation registry bound elsewhere, or an address with no code, is refused.
    let other = fresh.agent_registry;
    let err =
        deploy_to(&env.provider, &roles(Some(other), Some(reputation)), &cfg).await.unwrap_err();
    assert!(err.to_string().contains("is bound to identity registry"), "{err}");
    let nothing = Address::repeat_byte(0x42);
    let err = deploy_to(&env.provider, &roles(Some(nothing), None), &cfg).await.unwrap_err();
    assert!(err.to_string().contains("has no code"), "{err}");
}
