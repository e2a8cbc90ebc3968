//! The store's own tests: codecs, and a database of the first layout.

use alloy::primitives::{Address, Bytes};

use alloy::primitives::U256;
use tessera_bindings::usdc::Usdc;

use super::{
    codecs::{
        amount_from_column, amount_to_column, bytes_hex, decode_raw, encode_raw, history_column,
        history_entries, id_bytes, id_decimal,
    },
    *,
};
use crate::derive;

fn log(topics: usize, data: &[u8]) -> Log {
    let topics = (0..topics).map(|i| B256::repeat_byte(i as u8 + 1)).collect();
    Log {
        inner: alloy::primitives::Log::new_unchecked(
            Address::repeat_byte(0xaa),
            topics,
            Bytes::copy_from_slice(data),
        ),
        ..Log::default()
    }
}

#[test]
fn raw_logs_round_trip() {
    for (topics, data) in [(0, &[][..]), (1, &[7u8; 3][..]), (4, &[0u8; 600][..])] {
        let l = log(topics, data);
        let raw = encode_raw(&l);
        assert_eq!(raw.len(), 21 + 32 * topics + data.len());
        assert_eq!(decode_raw(&raw).as_ref(), Some(&l.inner));
    }
}

#[test]
fn malformed_raw_logs_are_refused() {
    let raw = encode_raw(&log(2, b"xyz"));
    assert_eq!(decode_raw(&raw[..20]), None, "no topic count");
    assert_eq!(decode_raw(&raw[..21 + 32 + 5]), None, "topics cut short");
    let mut five = raw;
    five[20] = 5;
    five.extend_from_slice(&[0; 96]);
    assert_eq!(decode_raw(&five), None, "more topics than a log can have");
}

#[test]
fn histories_read_back_as_the_api_shows_them() {
    let t = |valid: bool, problem: Option<&str>| derive::TransitionRow {
        block: 9,
        log_index: 2,
        kind: "TaskSettled".into(),
        from_status: "Created".into(),
        to_status: if valid { "Paid" } else { "Created" }.into(),
        valid,
        problem: problem.map(str::to_owned),
    };
    let stored = history_column(&[t(true, None), t(false, Some("not accepted"))]);
    let history = history_entries(&stored).unwrap();
    assert_eq!(
        serde_json::to_value(&history[0]).unwrap(),
        serde_json::json!({"block": 9, "log_index": 2, "event": "TaskSettled",
               "from": "Created", "to": "Paid", "valid": true, "problem": null})
    );
    assert!(!history[1].valid);
    assert_eq!(history[1].problem.as_deref(), Some("not accepted"));
    assert!(history_entries("[[1,2]]").is_err(), "a malformed column is reported");
}

#[tokio::test]
async fn an_index_of_the_first_layout_is_emptied_and_indexed_again() {
    // A database as the first layout (migration 1) left it, with rows.
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("migrations");
    std::fs::create_dir(&first).unwrap();
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(manifest.join("migrations/0001_index.sql"), first.join("0001_index.sql"))
        .unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let migrator = sqlx::migrate::Migrator::new(first.as_path()).await.unwrap();
    let (pool, _) = open_pool_with(&url, &Schema::new("indexer", &migrator), &[]).await.unwrap();
    for sql in [
        "INSERT INTO ix_events VALUES (5, 0, '0xaa', '0xbb', 'escrow', 'TaskCreated', '7', NULL, '0x01::0x')",
        "INSERT INTO ix_transitions VALUES ('7', 5, 0, 'TaskCreated', 'None', 'Created', 1, NULL)",
        "INSERT INTO ix_cursor VALUES ('ingest', 6), ('derive', 6)",
        "INSERT INTO ix_reorgs VALUES (1, 9, 8, 2, 3, '[]', 0)",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;

    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.cursor().await.unwrap(), None, "indexed again from the deploy block");
    assert_eq!(store.derived().await.unwrap(), None);
    assert_eq!(store.event_count().await.unwrap(), 0);
    assert_eq!(store.reorgs().await.unwrap().len(), 1, "the journal is kept");
    // The new layout takes rows.
    let log = log(2, b"data");
    let batch = Batch {
        from: 1,
        to: 1,
        logs: vec![Log { block_number: Some(1), log_index: Some(0), ..log }],
        ..Batch::default()
    };
    assert_eq!(store.apply(&batch).await.unwrap().events, 1);
    assert_eq!(store.cursor().await.unwrap(), Some(2));
}

#[test]
fn task_ids_keep_their_value_as_bytes() {
    let id = U256::from_str_radix("123456789012345678901234567890", 10).unwrap();
    let bytes = id_bytes(id);
    assert_eq!(bytes.len(), 32);
    assert_eq!(id_decimal(&bytes), id.to_string());
    assert_eq!(bytes_hex(&[]), "");
    assert_eq!(bytes_hex(&[0xab, 0x01]), "0xab01");
}

#[test]
fn amounts_past_a_column_are_errors_not_clamped() {
    let max = Usdc::from_base_units(i64::MAX as u128);
    assert_eq!(amount_to_column(max, "ix_tasks", "amount_units").unwrap(), i64::MAX);
    let over = Usdc::from_base_units(i64::MAX as u128 + 1);
    let err = amount_to_column(over, "ix_tasks", "amount_units").unwrap_err();
    assert!(
        matches!(err, DbError::OutOfRange { table: "ix_tasks", column: "amount_units", .. }),
        "{err}"
    );
    assert_eq!(amount_from_column(400_000, "ix_tasks").unwrap(), Usdc::from_base_units(400_000));
    assert!(matches!(amount_from_column(-1, "ix_tasks"), Err(DbError::Corrupt { .. })));
}

#[tokio::test]
async fn a_task_whose_amount_does_not_fit_its_column_is_an_error() {
    use alloy::{
        primitives::{aliases::U40, keccak256},
        sol_types::SolEvent,
    };
    use tessera_bindings::{ITaskEscrow::Task, TaskEscrow as E};
    let created = |amount: u128, id: u64| E::TaskCreated {
        taskId: U256::from(id),
        planId: keccak256("plan"),
        parentId: U256::ZERO,
        r#ref: keccak256("ref"),
        capability: tessera_bindings::capability::encode("summarize").unwrap(),
        task: Task {
            funder: Address::repeat_byte(2),
            client: Address::repeat_byte(2),
            executor: Address::repeat_byte(3),
            amount,
            deadline: U40::from(10_000),
            updatedAt: U40::from(1_000),
            reviewWindow: 600,
            disputeWindow: 600,
            appealWindow: 0,
            appealRulingWindow: 600,
            executorShareBps: 0,
            status: 1,
            specHash: keccak256("data:,x"),
            resultHash: B256::ZERO,
        },
        specURI: "data:,x".into(),
    };
    let at = |ev: E::TaskCreated, block: u64| Log {
        inner: alloy::primitives::Log {
            address: Address::repeat_byte(1),
            data: ev.encode_log_data(),
        },
        block_number: Some(block),
        log_index: Some(0),
        ..Log::default()
    };
    for (amount, fits) in [(i64::MAX as u128, true), (i64::MAX as u128 + 1, false)] {
        let store = IndexStore::connect("sqlite::memory:").await.unwrap();
        let batch =
            Batch { from: 1, to: 1, logs: vec![at(created(amount, 7), 1)], ..Batch::default() };
        store.apply(&batch).await.unwrap();
        let derived = store.derive(None, 10).await;
        if fits {
            derived.unwrap();
            let task = store.task("7").await.unwrap().unwrap();
            assert_eq!(task.task.amount, Usdc::from_base_units(amount));
        } else {
            let err = derived.unwrap_err();
            assert!(
                matches!(
                    err,
                    DbError::OutOfRange { table: "ix_tasks", column: "amount_units", .. }
                ),
                "{err}"
            );
            assert!(store.task("7").await.unwrap().is_none(), "nothing clamped was written");
        }
    }
}

#[tokio::test]
async fn a_corrupt_reorg_entry_is_reported_not_defaulted() {
    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    sqlx::query("INSERT INTO ix_reorgs VALUES (1, 9, 8, 2, 3, 'not a list', 0)")
        .execute(&store.pool)
        .await
        .unwrap();
    let err = store.reorgs().await.unwrap_err();
    assert!(matches!(err, DbError::Corrupt { table: "ix_reorgs", .. }), "{err}");
}
