//! The webhooks' outbox on SQLite and PostgreSQL: deliveries written with
//! their events as the filters say, keyed once, a retraction written with
//! the rollback and due only once its event's delivery is done, the bound
//! per subscriber, and pruning.

use alloy::{
    primitives::{Address, U256, aliases::U40, keccak256},
    sol_types::SolEvent,
};
use serde_json::Value;
use sqlx::Row;
use tessera_bindings::TaskEscrow as E;

use super::*;
use crate::webhooks::WebhookFilter;

const CHAIN: u64 = 31_337;

pub(crate) fn created(id: u64, funder: u8) -> E::TaskCreated {
    let funder = Address::repeat_byte(funder);
    let executor = Address::repeat_byte(3);
    crate::testkit::task_created(
        id,
        keccak256("plan"),
        "summarize",
        funder,
        executor,
        1_000,
        "data:,x",
    )
}

fn accepted(id: u64) -> E::TaskAccepted {
    E::TaskAccepted { taskId: U256::from(id), executor: Address::repeat_byte(3), at: U40::from(5) }
}

pub(crate) fn at<T: SolEvent>(ev: &T, block: u64, index: u64) -> Log {
    Log {
        inner: alloy::primitives::Log {
            address: Address::repeat_byte(1),
            data: ev.encode_log_data(),
        },
        block_number: Some(block),
        block_hash: Some(B256::repeat_byte(block as u8)),
        log_index: Some(index),
        ..Log::default()
    }
}

pub(crate) fn batch(block: u64, logs: Vec<Log>) -> Batch {
    Batch { from: block, to: block, logs, ..Batch::default() }
}

fn key(block: u64, index: u64) -> String {
    outbox::event_key(CHAIN, &B256::repeat_byte(block as u8).to_string(), index)
}

async fn keys(store: &IndexStore, webhook: &str) -> Vec<String> {
    store.due_deliveries(webhook, i64::MAX, 100).await.unwrap().into_iter().map(|d| d.key).collect()
}

async fn outbox_round(url: &str) {
    let store = IndexStore::connect(url).await.unwrap();
    store.set_chain_id(CHAIN);
    let plan = WebhookFilter { plan: Some(keccak256("plan").to_string()), ..Default::default() };
    let kinds = WebhookFilter { kinds: vec!["TaskAccepted".into()], ..Default::default() };
    let funder = WebhookFilter {
        funder: Some(Address::repeat_byte(9).to_string().to_lowercase()),
        ..Default::default()
    };
    let agent = WebhookFilter {
        agent: Some(Address::repeat_byte(3).to_string().to_lowercase()),
        kinds: vec!["TaskCreated".into()],
        ..Default::default()
    };
    for (id, f) in [("a", &plan), ("b", &kinds), ("c", &funder), ("d", &agent)] {
        store.add_webhook(id, "http://127.0.0.1:9/", "secret-secret-secret", f).await.unwrap();
    }
    // Nothing is written before a batch: no deliveries yet.
    let applied = store.apply(&batch(1, vec![at(&created(7, 2), 1, 0)])).await.unwrap();
    assert_eq!(applied.deliveries, 2, "the plan's and the executor's subscribers");
    // The acceptance's task was created in an earlier batch: its plan is
    // read from the stored creation.
    let applied = store.apply(&batch(2, vec![at(&accepted(7), 2, 4)])).await.unwrap();
    assert_eq!(applied.deliveries, 2, "the plan's and the kind's subscribers");
    assert_eq!(keys(&store, "a").await, [key(1, 0), key(2, 4)]);
    assert_eq!(keys(&store, "b").await, [key(2, 4)]);
    assert!(keys(&store, "c").await.is_empty(), "another funder");
    assert_eq!(keys(&store, "d").await, [key(1, 0)]);

    let due = store.due_deliveries("a", i64::MAX, 10).await.unwrap();
    let body: Value = serde_json::from_str(&due[0].payload).unwrap();
    assert_eq!(body["kind"], "event");
    assert_eq!(body["key"], key(1, 0).as_str());
    assert_eq!(body["event"]["name"], "TaskCreated");
    assert_eq!(body["event"]["task_id"], "7");
    assert_eq!(body["event"]["plan"], keccak256("plan").to_string());
    assert_eq!(body["event"]["funder"], Address::repeat_byte(2).to_string().to_lowercase());
    assert_eq!(body["event"]["block"], 1);
    assert_eq!(body["event"]["chain_id"], CHAIN);
    assert_eq!(due[0].attempts, 0);

    // Done, failed, and what falls due when.
    store.delivery_done("a", &key(1, 0), 1_000).await.unwrap();
    store.delivery_failed("b", &key(2, 4), 5_000, "answered HTTP 500").await.unwrap();
    assert!(store.due_deliveries("b", 4_999, 10).await.unwrap().is_empty(), "not due yet");
    let retry = store.due_deliveries("b", 5_000, 10).await.unwrap();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].attempts, 1);
    assert_eq!(keys(&store, "a").await, [key(2, 4)]);

    // Block 2 goes: each of its deliveries is retracted, delivered or not;
    // block 1's stays. A retraction waits for its event's delivery.
    store.rollback(2, 2, None).await.unwrap();
    assert_eq!(keys(&store, "a").await, [key(2, 4)], "the retraction waits for the event");
    store.delivery_done("a", &key(2, 4), 2_000).await.unwrap();
    let retracted = format!("{}:retracted", key(2, 4));
    assert_eq!(keys(&store, "a").await, std::slice::from_ref(&retracted));
    let due = store.due_deliveries("a", i64::MAX, 10).await.unwrap();
    let body: Value = serde_json::from_str(&due[0].payload).unwrap();
    assert_eq!(body["kind"], "retracted");
    assert_eq!(body["key"], retracted.as_str());
    assert_eq!(body["retracts"], key(2, 4).as_str());
    assert_eq!(body["event"]["name"], "TaskAccepted");
    store.delivery_done("b", &key(2, 4), 6_000).await.unwrap();
    assert_eq!(keys(&store, "b").await, std::slice::from_ref(&retracted));
    assert!(keys(&store, "d").await == [key(1, 0)], "nothing of d's was rolled back");
    // A second rollback over the same blocks retracts nothing twice.
    store.rollback(2, 2, None).await.unwrap();
    assert_eq!(keys(&store, "a").await, std::slice::from_ref(&retracted));

    // The bound: past it the oldest pending go, and are counted.
    store.set_max_pending(2);
    let logs = (0..3).map(|i| at(&accepted(7), 3, i)).collect();
    store.apply(&batch(3, logs)).await.unwrap();
    let b: Vec<String> = keys(&store, "b").await;
    assert_eq!(b, [key(3, 1), key(3, 2)], "the retraction and the first of block 3 dropped");
    let hooks = store.webhooks().await.unwrap();
    let hb = hooks.iter().find(|h| h.id == "b").unwrap();
    assert_eq!((hb.pending, hb.dropped), (2, 2));
    assert_eq!(hb.filter, kinds);

    // Deliveries done of blocks past the reorg depth are forgotten.
    let count = |store: IndexStore| async move {
        sqlx::query("SELECT COUNT(*) AS n FROM ix_deliveries")
            .fetch_one(&store.pool)
            .await
            .unwrap()
            .try_get::<i64, _>("n")
            .unwrap()
    };
    let before = count(store.clone()).await;
    store.prune_blocks(3).await.unwrap();
    let after = count(store.clone()).await;
    // a: block 1 and block 2 done; b: block 2 done; d: nothing done.
    assert_eq!(before - after, 3, "{before} → {after}");

    assert!(store.remove_webhook("b").await.unwrap());
    assert!(!store.remove_webhook("b").await.unwrap());
    assert!(keys(&store, "b").await.is_empty());
}

#[tokio::test]
async fn the_outbox_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    outbox_round(&format!("sqlite://{}", dir.path().join("index.db").display())).await;
}

#[tokio::test]
async fn the_outbox_on_postgres() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_outbox").await else {
        return;
    };
    outbox_round(&url).await;
}
