//! The catalogue read from an index on SQLite and PostgreSQL: who is listed,
//! what their cards say (or not), their records, and the caches.

use alloy::{
    primitives::{Address, U256, aliases::U40, keccak256},
    rpc::types::Log,
    sol_types::SolEvent,
};
use serde_json::json;
use tessera_bindings::{
    AgentRegistry as R, TaskEscrow as E, capability,
    card::{AgentCard, CapabilityOffer, Price, Role},
    catalogue::CatalogueSource,
    describe::ResultSchema,
};

use super::super::{Batch, IndexStore};
use crate::testkit::log_at as at;

const POET: Address = Address::repeat_byte(0xb1);
const RATER: Address = Address::repeat_byte(0xb2);
const PAUSED: Address = Address::repeat_byte(0xb3);
const FUNDER: Address = Address::repeat_byte(0xf1);

/// The poet's card: `haiku-write` described, with a result schema.
fn poet_card() -> String {
    let mut offer = CapabilityOffer::new("haiku-write", Price::from_base_units(50_000));
    offer.description = Some("Writes a haiku about a theme.".into());
    offer.phrasings = vec!["write a haiku about".into()];
    offer.result = Some(
        ResultSchema::from_json(&json!({"type": "object", "properties": {
            "lines": {"type": "array", "items": {"type": "string"}}}}))
        .unwrap(),
    );
    AgentCard {
        id: "poet".into(),
        description: "Haiku on demand.".into(),
        role: Role::Executor,
        capabilities: vec![offer],
        model: "handler".into(),
        instructions: String::new(),
        publish_instructions: false,
        delegates: Vec::new(),
        max_delegated_outstanding: None,
        handler: None,
    }
    .to_uri()
}

fn registered(agent: Address, uri: &str, block: u64) -> Log {
    at(R::AgentRegistered { agent, metadataURI: uri.into() }.encode_log_data(), block, 0)
}

fn offer(agent: Address, name: &str, price: u128, block: u64, index: u64) -> Log {
    let ev = R::CapabilitySet { agent, capability: capability::encode(name).unwrap(), price };
    at(ev.encode_log_data(), block, index)
}

/// A task `id` the rater was paid 1 USDC for, from block `block`.
fn paid_task(id: u64, block: u64) -> Vec<Log> {
    let task_id = U256::from(id);
    let created = crate::testkit::task_created(
        id,
        keccak256("catalogue"),
        "haiku-write",
        FUNDER,
        RATER,
        1_000_000,
        "data:,x",
    );
    let accepted = E::TaskAccepted { taskId: task_id, executor: RATER, at: U40::from(1_100) };
    let completed = E::TaskCompleted {
        taskId: task_id,
        executor: RATER,
        resultURI: "data:,{}".into(),
        at: U40::from(1_200),
    };
    let settled = E::TaskSettled {
        taskId: task_id,
        status: 7,
        settlement: 1,
        executorAmount: 1_000_000,
        funderAmount: 0,
        rating: 0,
        at: U40::from(1_900),
    };
    vec![
        at(created.encode_log_data(), block, 0),
        at(accepted.encode_log_data(), block, 1),
        at(completed.encode_log_data(), block, 2),
        at(settled.encode_log_data(), block + 1, 0),
    ]
}

async fn apply(store: &IndexStore, from: u64, to: u64, logs: Vec<Log>) {
    store.apply(&Batch { from, to, logs, ..Batch::default() }).await.unwrap();
    store.derive(None, 16).await.unwrap();
}

/// Active agents in registration order, an invalid card still listed by
/// its offers, a paused agent left out, records filled in (the prior for
/// an agent with no settled task), and the catalogue built again only once
/// something new is indexed.
async fn the_catalogue_lists_active_offers_with_cards_and_records(store: IndexStore) {
    let mut logs = vec![
        registered(POET, &poet_card(), 1),
        offer(POET, "haiku-write", 50_000, 1, 1),
        offer(POET, "summarize", 300_000, 1, 2),
        registered(RATER, "data:,not a card", 2),
        offer(RATER, "haiku-write", 70_000, 2, 1),
        registered(PAUSED, "data:,x", 3),
        offer(PAUSED, "rate", 10, 3, 1),
        at(R::AgentPaused { agent: PAUSED }.encode_log_data(), 3, 2),
    ];
    logs.extend(paid_task(40, 4));
    logs.extend(paid_task(41, 6));
    apply(&store, 1, 7, logs).await;

    let c = store.catalogue().await.unwrap();
    assert!(c.get("rate").is_none(), "a paused agent offers nothing");
    let haiku = c.get("haiku-write").expect("offered");
    assert!(!haiku.builtin);
    assert_eq!(haiku.describe.description.as_deref(), Some("Writes a haiku about a theme."));
    assert_eq!(haiku.describe.phrasings, ["write a haiku about"]);
    assert!(haiku.schema_for(None).is_some());
    assert_eq!(haiku.offered_by, 2);
    let poet = &haiku.offerers[0];
    assert_eq!((poet.agent.as_str(), poet.price.as_str()), (POET.to_string().as_str(), "50000"));
    assert_eq!(poet.card.as_deref(), Some("poet"));
    let fresh = poet.record.as_ref().expect("a record, the prior's");
    assert_eq!((fresh.settled, fresh.completed), (0, 0));
    assert!((fresh.reliability - 2.0 / 3.0).abs() < 1e-9, "{fresh:?}");
    let rater = &haiku.offerers[1];
    assert_eq!(rater.card, None, "an invalid card is no card; its offer is still listed");
    let record = rater.record.as_ref().unwrap();
    assert_eq!((record.settled, record.completed), (2, 2));
    assert!(record.reliability > fresh.reliability, "{record:?}");
    // The same record the store gives the executor choice, for no sponsor.
    let view = store.agent(&RATER.to_string()).await.unwrap().unwrap();
    let chosen = super::super::records::record_of(&view.stats);
    assert_eq!(record.reliability, chosen.reliability());
    let summarize = c.get("summarize").unwrap();
    assert!(summarize.builtin && summarize.offered_by == 1);
    assert_eq!(c.get("translate").unwrap().offered_by, 0, "built-ins are always listed");

    // Nothing new indexed: the same catalogue, from the cache.
    assert_eq!(store.catalogue().await.unwrap(), c);
    // The poet leaves: built again.
    let left = at(R::AgentLeft { agent: POET }.encode_log_data(), 8, 0);
    apply(&store, 8, 8, vec![left]).await;
    let after = store.catalogue().await.unwrap();
    assert_eq!(after.get("haiku-write").unwrap().offered_by, 1);
    assert_eq!(after.get("summarize").unwrap().offered_by, 0);
    assert_eq!(store.catalogue.lock().await.cards.len(), 1, "only listed agents' cards kept");
    // And as the orchestrator reads it.
    let source: &dyn CatalogueSource = &store;
    assert_eq!(source.catalogue().await.unwrap(), after);
}

#[tokio::test]
async fn the_catalogue_lists_active_offers_with_cards_and_records_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    the_catalogue_lists_active_offers_with_cards_and_records(
        IndexStore::connect(&url).await.unwrap(),
    )
    .await;
}

#[tokio::test]
async fn the_catalogue_lists_active_offers_with_cards_and_records_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_catalogue").await else {
        return;
    };
    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.backend(), tessera_db::Backend::Postgres);
    the_catalogue_lists_active_offers_with_cards_and_records(store).await;
}

#[tokio::test]
async fn an_empty_index_lists_the_built_ins_and_a_corrupt_offer_is_an_error() {
    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    let c = store.catalogue().await.unwrap();
    assert_eq!(c.entries.len(), tessera_bindings::describe::BUILTIN.len());
    assert_eq!(c.offered().count(), 0);
    let e = super::offers_of("0xb1", r#"{"haiku-write": "cheap"}"#).unwrap_err();
    assert!(e.to_string().contains("offer haiku-write of 0xb1"), "{e}");
    assert!(super::offers_of("0xb1", "[").is_err());
}
