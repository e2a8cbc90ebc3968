//! The agent registry as the orchestrator will query it, on a real chain.

use tessera_anvil::deploy::{DEMO_AGENTS, DeployConfig};
use tessera_bindings::{
    AgentRegistry, AgentRegistry::AgentRegistryErrors, capability, card::AgentCard,
    client::map_call, offers, revert::ContractRevert,
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
    let read = || async {
        offers::offers_for(&registry, summarize, offers::DEFAULT_MAX_OFFERS).await.unwrap()
    };
    let mut listed = offers::agents(&read().await.offers);
    listed.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(listed, expected);

    let best = offers::cheapest_active(&read().await.offers, None);
    assert_eq!(best, Some((b, 400_000)));
    assert_eq!(offers::cheapest_active(&read().await.offers, Some(399_999)), None, "over budget");

    // b pauses: a is the cheapest active one, and b is listed as inactive.
    registry.pause().from(b).send().await.unwrap().get_receipt().await.unwrap();
    let now = read().await;
    assert_eq!(offers::cheapest_active(&now.offers, None), Some((a, 500_000)));
    assert!(now.offers.iter().any(|o| o.agent == b && !o.active && o.price == 400_000));
    let (active, price) = {
        let o = registry.offerOf(b, summarize).call().await.unwrap();
        (o.active, o.price)
    };
    assert_eq!((active, price), (false, 400_000));

    // a matches b's price after b resumes: the earlier listed wins the tie.
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
    let now = read().await;
    assert_eq!(offers::cheapest_active(&now.offers, None), Some((now.offers[0].agent, 400_000)));

    // The agent card is readable back.
    let card = registry.getAgent(a).call().await.unwrap();
    let read = AgentCard::from_uri(&card.metadataURI).unwrap();
    assert_eq!(read.id, "summarizer-a", "{}", card.metadataURI);
    assert_eq!(read, DEMO_AGENTS[0].card().published(), "published: instructions left out");
    let names: Vec<_> = card.capabilities.iter().map(|c| capability::decode(*c).unwrap()).collect();
    assert_eq!(names, ["summarize", "extract-entities"]);

    // Nobody offers this capability.
    let none = offers::offers_for(&registry, capability::encode("compose-music").unwrap(), 10)
        .await
        .unwrap();
    assert_eq!((none.offers.len(), none.total), (0, 0));
    assert_eq!(offers::cheapest_active(&none.offers, None), None);
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
