//! The store's own tests: codecs, a database of an earlier layout, and a
//! nested plan's tree on SQLite and PostgreSQL.

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
use crate::{derive, testkit::task_created};

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
    use alloy::{primitives::keccak256, sol_types::SolEvent};
    use tessera_bindings::TaskEscrow as E;
    let created = |amount: u128, id: u64| {
        let (two, three) = (Address::repeat_byte(2), Address::repeat_byte(3));
        let mut ev =
            task_created(id, keccak256("plan"), "summarize", two, three, amount, "data:,x");
        ev.r#ref = keccak256("ref");
        ev
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

/// One task of the nested plan below: id, on-chain parent, amount, step
/// path, group labels, the upstream tasks its envelope names as inputs.
type Nested = (u64, u64, u128, Option<&'static str>, &'static [&'static str], &'static [u64]);

/// A plan whose step 1 is a plan whose step 1 is a plan again (paths 0,
/// 1.0, 1.1.0, 1.1.1, 2), with a delegated part under 1.1.0 that has no
/// path. Parent links follow the first input, as the orchestrator sets them.
const NESTED: &[Nested] = &[
    (10, 0, 100_000, Some("0"), &[], &[]),
    (11, 0, 200_000, Some("1.0"), &["research the market"], &[]),
    (12, 11, 300_000, Some("1.1.0"), &["research the market", "dig deeper"], &[11]),
    (13, 12, 400_000, Some("1.1.1"), &["research the market", "dig deeper"], &[12, 10]),
    (14, 13, 500_000, Some("2"), &[], &[13, 11]),
    (15, 12, 50_000, None, &[], &[]),
];

/// The creation logs of [`NESTED`], one block each.
fn nested_plan_logs() -> Vec<Log> {
    use alloy::{primitives::keccak256, sol_types::SolEvent};
    use tessera_bindings::envelope::{Envelope, EnvelopeCodec, Input, MemoryBlobStore, Parent};
    NESTED
        .iter()
        .enumerate()
        .map(|(i, &(id, parent, amount, path, groups, inputs))| {
            let mut env = Envelope::new(
                if parent == 0 {
                    Parent::Plan(keccak256("nested"))
                } else {
                    Parent::Task(parent.to_string())
                },
                format!("step {id}"),
            );
            env.path = path.map(str::to_owned);
            env.groups = groups.iter().map(|g| (*g).to_owned()).collect();
            env.inputs =
                inputs.iter().map(|t| Input::carried(0, Some(t.to_string()), "out")).collect();
            let uri = EnvelopeCodec::default().encode(&env, &MemoryBlobStore::new()).unwrap();
            assert!(uri.starts_with("data:"), "inline, no blob store needed");
            let mut ev = task_created(
                id,
                keccak256("nested"),
                "summarize",
                Address::repeat_byte(2),
                Address::repeat_byte(3),
                amount,
                &uri,
            );
            ev.parentId = U256::from(parent);
            Log {
                inner: alloy::primitives::Log {
                    address: Address::repeat_byte(1),
                    data: ev.encode_log_data(),
                },
                block_number: Some(i as u64 + 1),
                log_index: Some(0),
                ..Log::default()
            }
        })
        .collect()
}

/// The nesting travels from the envelopes to the plan's tree (and every
/// task view), and the tree's parent links, subtree costs and merges are
/// those of the plan without it.
async fn a_nested_plan_comes_back_with_its_paths_and_groups(store: IndexStore) {
    let logs = nested_plan_logs();
    let to = logs.len() as u64;
    store.apply(&Batch { from: 1, to, logs, ..Batch::default() }).await.unwrap();
    store.derive(None, 2).await.unwrap();
    let plan = alloy::primitives::keccak256("nested").to_string();
    let tree = store.plan_tree(&plan).await.unwrap();
    assert!(!tree.truncated);
    assert_eq!(tree.tasks.len(), NESTED.len());
    let node =
        |id: u64| tree.tasks.iter().find(|n| n.task.task_id == id.to_string()).expect("listed");
    for &(id, _, _, path, groups, _) in NESTED {
        let n = node(id);
        assert_eq!(n.task.path.as_deref(), path, "task {id}");
        assert_eq!(n.task.groups, groups, "task {id}");
        assert_eq!(n.task.envelope_error, None, "task {id}");
    }
    // Subtree costs along the parent links, nesting or not.
    let cost = |id: u64| node(id).subtree_cost.base_units();
    assert_eq!(
        [10, 11, 12, 13, 14, 15].map(cost),
        [100_000, 1_450_000, 1_250_000, 900_000, 500_000, 50_000]
    );
    let depth = |id: u64| node(id).depth;
    assert_eq!([10, 11, 12, 13, 14, 15].map(depth), [0, 0, 1, 2, 3, 2].map(Some));
    // Merges: 1.1.1 (under 1.1.0, also from 0) and 2 (under 1.1.1, also from 1.0).
    let merges: Vec<&str> =
        tree.tasks.iter().filter(|n| n.merge).map(|n| n.task.task_id.as_str()).collect();
    assert_eq!(merges, ["13", "14"]);
    assert_eq!(node(13).inputs, ["12", "10"]);
    assert_eq!(node(14).inputs, ["13", "11"]);

    // The API's JSON names them on every node.
    let json = serde_json::to_value(&tree).unwrap();
    let deepest = json["tasks"].as_array().unwrap().iter().find(|t| t["task_id"] == "13").unwrap();
    assert_eq!(deepest["path"], "1.1.1");
    assert_eq!(deepest["groups"], serde_json::json!(["research the market", "dig deeper"]));
    let delegated =
        json["tasks"].as_array().unwrap().iter().find(|t| t["task_id"] == "15").unwrap();
    assert_eq!(delegated["path"], serde_json::Value::Null);
    assert_eq!(delegated["groups"], serde_json::json!([]));

    // A task page and one task read them back too.
    let filter = TaskQuery { plan: Some(plan), limit: 50, ..TaskQuery::default() };
    let (page, _) = store.task_page(&filter).await.unwrap();
    let paths: Vec<Option<&str>> = page.iter().map(|t| t.path.as_deref()).collect();
    assert_eq!(paths, [Some("0"), Some("1.0"), Some("1.1.0"), Some("1.1.1"), Some("2"), None]);
    let one = store.task("12").await.unwrap().unwrap();
    assert_eq!(one.task.groups, ["research the market", "dig deeper"]);
}

#[tokio::test]
async fn a_nested_plan_comes_back_with_its_paths_and_groups_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    a_nested_plan_comes_back_with_its_paths_and_groups(IndexStore::connect(&url).await.unwrap())
        .await;
}

#[tokio::test]
async fn a_nested_plan_comes_back_with_its_paths_and_groups_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_nesting").await else {
        return;
    };
    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.backend(), tessera_db::Backend::Postgres);
    a_nested_plan_comes_back_with_its_paths_and_groups(store).await;
}

#[tokio::test]
async fn an_index_before_nesting_folds_its_tasks_again_with_their_paths() {
    // A database as migrations 1 to 4 left it: events stored, tasks folded
    // without paths, both marks at the head.
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("migrations");
    std::fs::create_dir(&old).unwrap();
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["0001_index", "0002_compact", "0003_contracts_v2", "0004_input_edges"] {
        let file = format!("{name}.sql");
        std::fs::copy(manifest.join("migrations").join(&file), old.join(&file)).unwrap();
    }
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let migrator = sqlx::migrate::Migrator::new(old.as_path()).await.unwrap();
    let (pool, _) = open_pool_with(&url, &Schema::new("indexer", &migrator), &[]).await.unwrap();
    let logs = nested_plan_logs();
    for log in &logs {
        let (contract, kind, task, _) = super::codecs::classify(log);
        sqlx::query("INSERT INTO ix_events VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8)")
            .bind(log.block_number.unwrap() as i64)
            .bind(0i64)
            .bind(vec![0u8; 32])
            .bind(vec![0u8; 32])
            .bind(contract)
            .bind(kind)
            .bind(task.map(id_bytes))
            .bind(encode_raw(log))
            .execute(&pool)
            .await
            .unwrap();
    }
    let head = logs.len() as i64 + 1;
    sqlx::query("INSERT INTO ix_cursor VALUES ('ingest', $1), ('derive', $1)")
        .bind(head)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.cursor().await.unwrap(), Some(head as u64), "ingestion goes on");
    assert_eq!(store.derived().await.unwrap(), None, "every task is folded again");
    let derived = store.derive(None, 10).await.unwrap();
    assert_eq!(derived.tasks.len(), NESTED.len());
    let plan = alloy::primitives::keccak256("nested").to_string();
    let tree = store.plan_tree(&plan).await.unwrap();
    let deepest = tree.tasks.iter().find(|n| n.task.task_id == "13").unwrap();
    assert_eq!(deepest.task.path.as_deref(), Some("1.1.1"));
    assert_eq!(deepest.task.groups, ["research the market", "dig deeper"]);
}

#[test]
fn group_labels_round_trip_through_their_column() {
    use super::codecs::{groups_column, groups_from_column};
    assert_eq!(groups_column(&[]), None, "no labels, no JSON");
    let labels = vec!["a \"quoted\" label".to_owned(), "dig déeper".to_owned()];
    let stored = groups_column(&labels).unwrap();
    assert_eq!(groups_from_column(Some(stored)).unwrap(), labels);
    assert!(groups_from_column(None).unwrap().is_empty());
    let err = groups_from_column(Some("{\"a\":1}".into())).unwrap_err();
    assert!(matches!(err, DbError::Corrupt { table: "ix_tasks", .. }), "{err}");
}

/// Three tasks of one executor, each declined and settled in one block:
/// with an inline reason, a reason in the blob store, and a reason whose
/// blob nobody has. Then a fourth, accepted and declined with no reason.
fn declined_logs(blobs: &tessera_bindings::envelope::MemoryBlobStore) -> Vec<Log> {
    use alloy::{
        primitives::{aliases::U40, keccak256},
        sol_types::SolEvent,
    };
    use tessera_bindings::{TaskEscrow as E, envelope::EnvelopeCodec};
    let at = |ev: &dyn Fn() -> alloy::primitives::LogData, block: u64, index: u64| Log {
        inner: alloy::primitives::Log { address: Address::repeat_byte(1), data: ev() },
        block_number: Some(block),
        log_index: Some(index),
        ..Log::default()
    };
    let codec = EnvelopeCodec::default();
    let inline = codec.publish(br#"{"reason":"cannot read the envelope"}"#, blobs).unwrap();
    let big = serde_json::json!({ "reason": "too long: ".to_owned() + &"y".repeat(5_000) });
    let stored = codec.publish(big.to_string().as_bytes(), blobs).unwrap();
    assert!(inline.starts_with("data:") && stored.starts_with("sha256:"));
    let missing = format!("sha256:{}", "ab".repeat(32));
    let executor = Address::repeat_byte(3);
    let mut logs = Vec::new();
    for (i, reason) in [inline, stored, missing, String::new()].into_iter().enumerate() {
        let id = U256::from(20 + i);
        let created = task_created(
            20 + i as u64,
            keccak256("declines"),
            "translate",
            Address::repeat_byte(2),
            executor,
            1_000,
            "data:,x",
        );
        let block = 1 + 2 * i as u64;
        logs.push(at(&|| created.encode_log_data(), block, 0));
        if i == 3 {
            let accepted = E::TaskAccepted { taskId: id, executor, at: U40::from(1_050) };
            logs.push(at(&|| accepted.encode_log_data(), block, 1));
        }
        let declined =
            E::TaskDeclined { taskId: id, executor, reasonURI: reason, at: U40::from(1_100) };
        let settled = E::TaskSettled {
            taskId: id,
            status: 12,
            settlement: 8,
            executorAmount: 0,
            funderAmount: 1_000,
            rating: 0,
            at: U40::from(1_100),
        };
        logs.push(at(&|| declined.encode_log_data(), block + 1, 0));
        logs.push(at(&|| settled.encode_log_data(), block + 1, 1));
    }
    logs
}

/// A decline folds into its task: Declined, the reason URI, the reason read
/// through the envelope codec (cut to its bound), an unreadable one said so
/// with its URI kept; the API's JSON names them; a reorganisation that takes
/// the decline away takes them away too.
async fn a_declined_task_keeps_its_reason(store: IndexStore) {
    let blobs = std::sync::Arc::new(tessera_bindings::envelope::MemoryBlobStore::new());
    let logs = declined_logs(&blobs);
    store.apply(&Batch { from: 1, to: 8, logs, ..Batch::default() }).await.unwrap();
    store.derive(Some(blobs), 10).await.unwrap();

    let inline = store.task("20").await.unwrap().unwrap();
    assert_eq!(inline.task.status, "Declined");
    assert_eq!(inline.task.decline_reason.as_deref(), Some("cannot read the envelope"));
    assert!(inline.task.decline_reason_uri.as_deref().unwrap().starts_with("data:"));
    assert_eq!((inline.task.decline_error, inline.task.flagged), (None, None));
    assert!(inline.task.settled_at.is_some());
    let events: Vec<&str> = inline.history.iter().map(|h| h.event.as_str()).collect();
    assert_eq!(events, ["TaskCreated", "TaskDeclined", "TaskSettled"]);
    assert!(inline.history.iter().all(|h| h.valid), "{:?}", inline.history);
    assert_eq!(inline.history[2].to, "Declined");

    let stored = store.task("21").await.unwrap().unwrap().task;
    let reason = stored.decline_reason.unwrap();
    assert!(reason.starts_with("too long: yyy") && reason.ends_with('…'), "{reason}");
    assert_eq!(reason.chars().count(), derive::MAX_REASON_CHARS + 1);
    assert!(stored.decline_reason_uri.unwrap().starts_with("sha256:"));

    let missing = store.task("22").await.unwrap().unwrap().task;
    assert_eq!(missing.status, "Declined", "an unreadable reason still declines");
    assert_eq!(missing.decline_reason, None);
    assert_eq!(missing.decline_reason_uri, Some(format!("sha256:{}", "ab".repeat(32))));
    assert!(missing.decline_error.unwrap().contains("no blob"), "the error says why");

    let silent = store.task("23").await.unwrap().unwrap().task;
    assert_eq!(silent.status, "Declined");
    assert!(silent.accepted_at.is_some(), "accepted, then declined");
    assert_eq!(
        (silent.decline_reason_uri.as_deref(), silent.decline_reason, silent.decline_error),
        (Some(""), None, None)
    );

    // The API's JSON (a task page) names them.
    let filter = TaskQuery { status: vec!["Declined".into()], limit: 50, ..TaskQuery::default() };
    let (page, _) = store.task_page(&filter).await.unwrap();
    assert_eq!(page.len(), 4);
    let json = serde_json::to_value(&page[0]).unwrap();
    assert_eq!(json["decline_reason"], "cannot read the envelope");
    assert!(json["decline_reason_uri"].as_str().unwrap().starts_with("data:"));
    assert_eq!(json["decline_error"], serde_json::Value::Null);

    // A reorganisation from block 8 takes the last decline away: the task
    // is Accepted again, with no reason; the others keep theirs.
    let reorg = store.rollback(8, 9, None).await.unwrap();
    assert_eq!(reorg.affected_tasks, ["23"]);
    let back = store.task("23").await.unwrap().unwrap().task;
    assert_eq!(back.status, "Accepted");
    assert_eq!((back.decline_reason_uri, back.settled_at), (None, None));
    let kept = store.task("20").await.unwrap().unwrap().task;
    assert_eq!(kept.decline_reason.as_deref(), Some("cannot read the envelope"));
}

#[tokio::test]
async fn a_declined_task_keeps_its_reason_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    a_declined_task_keeps_its_reason(IndexStore::connect(&url).await.unwrap()).await;
}

#[tokio::test]
async fn a_declined_task_keeps_its_reason_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_declines").await else {
        return;
    };
    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.backend(), tessera_db::Backend::Postgres);
    a_declined_task_keeps_its_reason(store).await;
}

/// Four tasks of one executor (1 USDC each, deadline 10,000, created and,
/// for two, accepted at 1,000), declined at the given times: in time after
/// acceptance (2,000), late after acceptance (9,000: past 80% of the time
/// to the deadline), in time with nobody's acceptance (9,500), and past the
/// deadline (10,500, as an escrow before the contract refused it took it).
fn late_decline_logs(executor: Address) -> Vec<Log> {
    use alloy::{
        primitives::{aliases::U40, keccak256},
        sol_types::SolEvent,
    };
    use tessera_bindings::TaskEscrow as E;
    let at = |data: alloy::primitives::LogData, block: u64, index: u64| Log {
        inner: alloy::primitives::Log { address: Address::repeat_byte(1), data },
        block_number: Some(block),
        log_index: Some(index),
        ..Log::default()
    };
    let mut logs = Vec::new();
    for (i, (accepted, declined)) in
        [(true, 2_000u64), (true, 9_000), (false, 9_500), (false, 10_500)].into_iter().enumerate()
    {
        let id = U256::from(30 + i);
        let created = task_created(
            30 + i as u64,
            keccak256("late"),
            "translate",
            Address::repeat_byte(2),
            executor,
            1_000_000,
            "data:,x",
        );
        let block = 1 + 2 * i as u64;
        logs.push(at(created.encode_log_data(), block, 0));
        if accepted {
            let ev = E::TaskAccepted { taskId: id, executor, at: U40::from(1_000) };
            logs.push(at(ev.encode_log_data(), block, 1));
        }
        let at_ = U40::from(declined);
        let ev = E::TaskDeclined { taskId: id, executor, reasonURI: String::new(), at: at_ };
        logs.push(at(ev.encode_log_data(), block + 1, 0));
        let settled = E::TaskSettled {
            taskId: id,
            status: 12,
            settlement: 8,
            executorAmount: 0,
            funderAmount: 1_000_000,
            rating: 0,
            at: at_,
        };
        logs.push(at(settled.encode_log_data(), block + 1, 1));
    }
    let registered = tessera_bindings::AgentRegistry::AgentRegistered {
        agent: executor,
        metadataURI: String::new(),
    };
    logs.push(at(registered.encode_log_data(), 1, 5));
    logs
}

/// A late decline is marked on its task and weighs in the executor's
/// record as an expiry (failed, with its units); a decline in time weighs
/// nothing, as before.
async fn late_declines_weigh_as_expiries(store: IndexStore) {
    let executor = Address::repeat_byte(3);
    let logs = late_decline_logs(executor);
    store.apply(&Batch { from: 1, to: 8, logs, ..Batch::default() }).await.unwrap();
    store.derive(None, 10).await.unwrap();
    let mut late = Vec::new();
    for id in 30..34 {
        let task = store.task(&id.to_string()).await.unwrap().unwrap().task;
        assert_eq!(task.status, "Declined");
        late.push(task.late_decline);
    }
    assert_eq!(late, [false, true, false, true]);
    let funders = store.funders(&executor.to_string()).await.unwrap();
    let [row] = funders.as_slice() else { panic!("one funder: {funders:?}") };
    assert_eq!((row.completed, row.failed), (0, 2), "the two late declines failed");
    assert_eq!(row.failed_units, 2_000_000);
    let view = store.agent(&executor.to_string()).await.unwrap().expect("registered");
    assert_eq!((view.stats.expired, view.stats.declined), (2, 2), "late ones as expired");
    let record = super::records::record_of(&view.stats);
    assert_eq!((record.expired, record.settled()), (2, 2));
    let evidence = store.evidence(&executor.to_string(), None).await.unwrap();
    assert!(evidence.failed > 0.0 && evidence.completed == 0.0, "{evidence:?}");
    let filter = TaskQuery { status: vec!["Declined".into()], limit: 50, ..TaskQuery::default() };
    let (page, _) = store.task_page(&filter).await.unwrap();
    let json = serde_json::to_value(&page[1]).unwrap();
    assert_eq!(
        (json["task_id"].as_str(), json["late_decline"].as_bool()),
        (Some("31"), Some(true))
    );
}

#[tokio::test]
async fn late_declines_weigh_as_expiries_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    late_declines_weigh_as_expiries(IndexStore::connect(&url).await.unwrap()).await;
}

#[tokio::test]
async fn late_declines_weigh_as_expiries_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_late_declines").await
    else {
        return;
    };
    let store = IndexStore::connect(&url).await.unwrap();
    late_declines_weigh_as_expiries(store).await;
}

/// A task created, delivered, disputed, ruled 40% and settled at once
/// (an appeal window of zero), one block each.
fn ruled_logs() -> Vec<Log> {
    use alloy::{
        primitives::{aliases::U40, keccak256},
        sol_types::SolEvent,
    };
    use tessera_bindings::TaskEscrow as E;
    let id = U256::from(40);
    let mut created = task_created(
        40,
        keccak256("ruled"),
        "translate",
        Address::repeat_byte(2),
        Address::repeat_byte(3),
        1_000,
        "data:,x",
    );
    created.r#ref = keccak256("ruled");
    let events: Vec<alloy::primitives::LogData> = vec![
        created.encode_log_data(),
        E::TaskCompleted {
            taskId: id,
            executor: Address::repeat_byte(3),
            resultURI: "data:,done".into(),
            at: U40::from(1_100),
        }
        .encode_log_data(),
        E::TaskDisputed {
            taskId: id,
            client: Address::repeat_byte(2),
            reasonURI: "data:,wrong".into(),
            at: U40::from(1_200),
        }
        .encode_log_data(),
        E::DisputeRuled {
            taskId: id,
            arbiter: Address::repeat_byte(9),
            executorShareBps: 4_000,
            rationaleURI: "data:application/json,{\"rationale\":\"half done\"}".into(),
            at: U40::from(1_300),
        }
        .encode_log_data(),
        E::TaskSettled {
            taskId: id,
            status: 9,
            settlement: 2,
            executorAmount: 400,
            funderAmount: 600,
            rating: 0,
            at: U40::from(1_300),
        }
        .encode_log_data(),
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(i, data)| Log {
            inner: alloy::primitives::Log { address: Address::repeat_byte(1), data },
            block_number: Some(i as u64 + 1),
            log_index: Some(0),
            ..Log::default()
        })
        .collect()
}

#[tokio::test]
async fn an_index_before_disputes_were_kept_folds_its_tasks_again_with_them() {
    // A database as migrations 1 to 8 left it: events stored, the task
    // folded without its dispute, both marks at the head.
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("migrations");
    std::fs::create_dir(&old).unwrap();
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(manifest.join("migrations")).unwrap() {
        let name = entry.unwrap().file_name();
        if name.to_string_lossy().as_ref() < "0009" {
            std::fs::copy(manifest.join("migrations").join(&name), old.join(&name)).unwrap();
        }
    }
    assert_eq!(std::fs::read_dir(&old).unwrap().count(), 8);
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let migrator = sqlx::migrate::Migrator::new(old.as_path()).await.unwrap();
    let (pool, _) = open_pool_with(&url, &Schema::new("indexer", &migrator), &[]).await.unwrap();
    let logs = ruled_logs();
    for log in &logs {
        let (contract, kind, task, _) = super::codecs::classify(log);
        sqlx::query(
            "INSERT INTO ix_events (block, log_index, block_hash, tx_hash, contract, kind, \
             task_id, agent, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8)",
        )
        .bind(log.block_number.unwrap() as i64)
        .bind(0i64)
        .bind(vec![0u8; 32])
        .bind(vec![0u8; 32])
        .bind(contract)
        .bind(kind)
        .bind(task.map(id_bytes))
        .bind(encode_raw(log))
        .execute(&pool)
        .await
        .unwrap();
    }
    let head = logs.len() as i64 + 1;
    sqlx::query("INSERT INTO ix_cursor VALUES ('ingest', $1), ('derive', $1)")
        .bind(head)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.cursor().await.unwrap(), Some(head as u64), "ingestion goes on");
    assert_eq!(store.derived().await.unwrap(), None, "every task is folded again");
    store.derive(None, 10).await.unwrap();
    let task = store.task("40").await.unwrap().unwrap().task;
    assert_eq!((task.status.as_str(), task.settlement.as_deref()), ("Split", Some("ruling")));
    let dispute = task.dispute.expect("the dispute is kept");
    assert_eq!((dispute.state.as_str(), dispute.disputed_at), ("settled", 1_200));
    assert_eq!(dispute.reason.unwrap().value, Some(serde_json::json!("wrong")));
    let ruling = dispute.ruling.expect("the ruling is kept");
    assert_eq!((ruling.verdict.as_str(), ruling.executor_share_bps), ("split", 4_000));
    assert_eq!(ruling.arbiter, Address::repeat_byte(9).to_string());
    let rationale = ruling.rationale.unwrap().value.unwrap();
    assert_eq!(rationale["rationale"], "half done");
    assert_eq!(dispute.appeal, None);
    assert_eq!(task.result.unwrap().value, Some(serde_json::json!("done")));
}
