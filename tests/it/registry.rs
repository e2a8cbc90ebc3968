//! The agent registry as the orchestrator will query it, on a real chain.

use alloy::primitives::Address;
use tessera_anvil::deploy::{DEMO_AGENTS, DeployConfig};
use tessera_bindings::{
    AgentRegistry, AgentRegistry::AgentRegistryErrors, capability, card::AgentCard,
    client::map_call, revert::ContractRevert,
};
use tessera_e2e::TestEnv;

#[tokio::test]
async fn cheapest_active_follows_prices_and_pauses() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let summarize = capability::encode("summarize").unwrap();
    let a = env.actors.agent(0); // summarizer-a, 0.50
    let b = env.actors.agent(1); // summarizer-b, 0.40

    assert_eq!(
        registry.agentCount().call().await.unwrap(),
        alloy::primitives::U256::from(DEMO_AGENTS.len())
    );
    let mut listed = registry.agentsFor(summarize).call().await.unwrap();
    listed.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(listed, expected);

    let best = registry.cheapestActive(summarize).call().await.unwrap();
    assert_eq!((best.agent, best.price), (b, 400_000));

    // b pauses: a is the cheapest active one.
    registry.pause().from(b).send().await.unwrap().get_receipt().await.unwrap();
    let best = registry.cheapestActive(summarize).call().await.unwrap();
    assert_eq!((best.agent, best.price), (a, 500_000));

    // a undercuts nobody but matches b's price after b resumes: the lower address wins the tie.
    registry.resume().from(b).send().await.unwrap().get_receipt().await.unwrap();
    registry
        .updatePrice(summarize, 400_000)
        .from(a)
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    let best = registry.cheapestActive(summarize).call().await.unwrap();
    assert_eq!(best.agent, a.min(b));

    // The agent card is readable back.
    let card = registry.getAgent(a).call().await.unwrap();
    let read = AgentCard::from_uri(&card.metadataURI).unwrap();
    assert_eq!(read.id, "summarizer-a", "{}", card.metadataURI);
    assert_eq!(read, DEMO_AGENTS[0].card());
    let names: Vec<_> = card.capabilities.iter().map(|c| capability::decode(*c).unwrap()).collect();
    assert_eq!(names, ["summarize", "extract-entities"]);

    // Nobody offers this capability.
    let none =
        registry.cheapestActive(capability::encode("compose-music").unwrap()).call().await.unwrap();
    assert_eq!(none.agent, Address::ZERO);
}

#[tokio::test]
async fn registry_reverts_decode_to_typed_errors() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let stranger = env.actors.client.address();
    let err = registry.pause().from(stranger).send().await.unwrap_err();
    match map_call(err).revert() {
        Some(ContractRevert::Registry(AgentRegistryErrors::AgentRegistryNotRegistered(e))) => {
            assert_eq!(e.agent, stranger)
        }
        other => panic!("expected AgentRegistryNotRegistered, got {other:?}"),
    }
}
