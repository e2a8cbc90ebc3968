//! The kept totals against a count of the stored tasks, after every kind
//! of write: backfills folded in chunks of every size, live batches,
//! reorganisations that take events (and whole tasks) away and bring
//! other ones, and an index whose totals were never kept.

use alloy::{
    primitives::{Address, U256, aliases::U40, keccak256},
    rpc::types::Log,
    sol_types::SolEvent,
};
use tessera_bindings::TaskEscrow as E;

use super::{Batch, IndexStore};
use crate::testkit::{log_at, task_created};

/// A small deterministic generator (xorshift), so a failing seed replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One task's events from `block` on, one event a block: a lifecycle
/// chosen by `rng` among those the escrow settles (paid, split after a
/// dispute, refunded, expired, cancelled, declined in time or late),
/// between three executors, funders and clients, at amounts below the
/// evidence floor, between it and the cap, and above the cap.
fn lifecycle(rng: &mut Rng, id: u64, block: u64) -> Vec<Log> {
    let party = |rng: &mut Rng, base: u8| Address::repeat_byte(base + rng.below(3) as u8);
    let executor = party(rng, 0x10);
    let amount = [5_000u128, 400_000, 3_000_000][rng.below(3) as usize];
    let mut created =
        task_created(id, keccak256("totals"), "translate", party(rng, 0x20), executor, amount, "");
    created.task.client = party(rng, 0x30);
    let task = U256::from(id);
    let at = |t: u64| U40::from(1_000 + t);
    // An approval rates the work: in full, or less (by id, so the
    // generator's sequence is the same whatever the ratings).
    let rating = [100, 40, 0, 73][(id % 4) as usize];
    let settled = |status: u8, paid: u128, t: u64| {
        E::TaskSettled {
            taskId: task,
            status,
            settlement: 0,
            executorAmount: paid,
            funderAmount: amount - paid,
            rating: if status == 7 { rating } else { 100 },
            at: at(t),
        }
        .encode_log_data()
    };
    let accepted = E::TaskAccepted { taskId: task, executor, at: at(10) }.encode_log_data();
    let completed =
        E::TaskCompleted { taskId: task, executor, resultURI: "data:,r".into(), at: at(20) }
            .encode_log_data();
    let disputed = E::TaskDisputed {
        taskId: task,
        client: created.task.client,
        reasonURI: String::new(),
        at: at(30),
    }
    .encode_log_data();
    let mut events = vec![created.encode_log_data()];
    match rng.below(8) {
        0 => events.extend([accepted, completed, settled(7, amount, 40)]),
        1 => events.extend([accepted, completed, disputed, settled(9, amount / 2, 40)]),
        2 => events.extend([accepted, completed, disputed, settled(8, 0, 40)]),
        3 => events.extend([accepted, settled(11, 0, 9_500)]),
        4 => events.push(settled(10, 0, 5)),
        5 => {
            let declined =
                E::TaskDeclined { taskId: task, executor, reasonURI: String::new(), at: at(5) };
            events.extend([declined.encode_log_data(), settled(12, 0, 5)]);
        }
        6 => {
            let late =
                E::TaskDeclined { taskId: task, executor, reasonURI: String::new(), at: at(8_900) };
            events.extend([accepted, late.encode_log_data(), settled(12, 0, 8_900)]);
        }
        _ => events.push(accepted),
    }
    events.into_iter().enumerate().map(|(i, data)| log_at(data, block + i as u64, id)).collect()
}

/// Logs of `tasks` tasks from `first` on, sorted in chain order, each
/// starting in a block chosen between `from` and `from + spread`.
fn chain(rng: &mut Rng, first: u64, tasks: u64, from: u64, spread: u64) -> Vec<Log> {
    let mut logs: Vec<Log> = (first..first + tasks)
        .flat_map(|id| {
            let start = from + rng.below(spread);
            lifecycle(rng, id, start)
        })
        .collect();
    logs.sort_by_key(|l| (l.block_number, l.log_index));
    logs
}

/// Applies `logs` in batches ending at the given blocks, deriving in
/// chunks of `chunk` after each.
async fn ingest(store: &IndexStore, logs: &[Log], ends: &[u64], chunk: usize) {
    let mut from = store.cursor().await.unwrap().unwrap_or(1);
    for &to in ends {
        let batch: Vec<Log> = logs
            .iter()
            .filter(|l| (from..=to).contains(&l.block_number.unwrap()))
            .cloned()
            .collect();
        store.apply(&Batch { from, to, logs: batch, ..Batch::default() }).await.unwrap();
        store.derive(None, chunk).await.unwrap();
        assert!(store.totals_agree().await.unwrap(), "after the batch to block {to}");
        from = to + 1;
    }
}

async fn totals_follow_every_write(store: IndexStore, seed: u64) {
    let mut rng = Rng(seed);
    // A backfill: 120 tasks over 60 blocks, in one batch, folded 7 a chunk.
    let logs = chain(&mut rng, 1, 120, 1, 50);
    ingest(&store, &logs, &[70], 7).await;
    let executor = Address::repeat_byte(0x10).to_string();
    let all = store.totals(&executor).await.unwrap();
    assert!(!all.is_empty(), "the first executor has totals");
    // Live: 40 more tasks, a batch every few blocks, one task a chunk.
    let live = chain(&mut rng, 200, 40, 71, 20);
    let ends: Vec<u64> = (74..=100).step_by(3).collect();
    ingest(&store, &live, &ends, 1).await;
    // Reorganisations: from a random block, the events after it go, and
    // other tasks (some of the same ids, with other parties) come instead.
    for round in 0..4u64 {
        let head = store.cursor().await.unwrap().unwrap() - 1;
        let fork = head - rng.below(30);
        store.rollback(fork, head, None).await.unwrap();
        assert!(store.totals_agree().await.unwrap(), "after rolling back to {fork}");
        let first = 190 + rng.below(60);
        let again = chain(&mut rng, first, 10, fork, 8);
        ingest(&store, &again, &[fork + 10, fork + 30 + round], 3).await;
    }
    // An index whose totals were never kept counts them on opening.
    sqlx::query("DELETE FROM ix_agent_totals").execute(&store.pool).await.unwrap();
    store.count_totals().await.unwrap();
    assert!(store.totals_agree().await.unwrap(), "counted on opening");
    assert_eq!(store.totals(&executor).await.unwrap().len(), 9, "3 funders x 3 clients");
}

#[tokio::test]
async fn totals_follow_every_write_on_sqlite() {
    for seed in [1, 7, 2024] {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("index.db").display());
        totals_follow_every_write(IndexStore::connect(&url).await.unwrap(), seed).await;
    }
}

#[tokio::test]
async fn totals_follow_every_write_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_totals").await else {
        return;
    };
    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.backend(), tessera_db::Backend::Postgres);
    totals_follow_every_write(store, 99).await;
}

const RATED_FUNDER: Address = Address::repeat_byte(0x2a);
const RATED_EXECUTOR: Address = Address::repeat_byte(0x1a);

/// Task `id` for `amount`, created, accepted and delivered in blocks 1 to
/// 3 (log index `id`), then settled in `block` as `settlement` (`0`
/// approved, `1` auto-released) rated `rating`.
fn delivered(id: u64, amount: u128) -> Vec<Log> {
    let created =
        task_created(id, keccak256("rated"), "translate", RATED_FUNDER, RATED_EXECUTOR, amount, "");
    let task = U256::from(id);
    let executor = RATED_EXECUTOR;
    vec![
        log_at(created.encode_log_data(), 1, id),
        log_at(
            E::TaskAccepted { taskId: task, executor, at: U40::from(1_010) }.encode_log_data(),
            2,
            id,
        ),
        log_at(
            E::TaskCompleted {
                taskId: task,
                executor,
                resultURI: "data:,r".into(),
                at: U40::from(1_020),
            }
            .encode_log_data(),
            3,
            id,
        ),
    ]
}

fn paid(id: u64, amount: u128, settlement: u8, rating: u8, block: u64) -> Log {
    let settled = E::TaskSettled {
        taskId: U256::from(id),
        status: 7,
        settlement,
        executorAmount: amount,
        funderAmount: 0,
        rating,
        at: U40::from(1_030),
    };
    log_at(settled.encode_log_data(), block, id)
}

/// The funder's completed and failed units with the executor (none once
/// nothing it funded is settled).
async fn units(store: &IndexStore) -> (i64, i64) {
    let rows = store.funders(&RATED_EXECUTOR.to_string()).await.unwrap();
    assert!(rows.len() <= 1, "{rows:?}");
    rows.first().map_or((0, 0), |r| {
        assert_eq!(r.funder, RATED_FUNDER.to_string());
        (r.completed_units, r.failed_units)
    })
}

/// A task approved at 40 counts 40% of its units completed and 60% failed
/// on its funder's record; at 100 (or auto-released) all of them, as
/// before ratings; below the floor nothing. A reorganisation that takes
/// the approval away takes its rating's part away with it, and a
/// settlement that replaces it counts as its own says.
async fn ratings_move_the_units_and_rollbacks_undo_them(store: IndexStore) {
    const USDC: i64 = 1_000_000;
    let mut logs: Vec<Log> = [(1, 500_000), (2, 2_000_000), (3, 5_000), (4, 300_000)]
        .into_iter()
        .flat_map(|(id, amount)| delivered(id, amount))
        .collect();
    // Block 4: task 2 approved in full (above the cap: one USDC counts),
    // task 3 rated 0 below the floor, task 4 auto-released (unrated).
    // Block 5: task 1 approved at 40.
    logs.extend([
        paid(2, 2_000_000, 0, 100, 4),
        paid(3, 5_000, 0, 0, 4),
        paid(4, 300_000, 1, 0, 4),
        paid(1, 500_000, 0, 40, 5),
    ]);
    logs.sort_by_key(|l| (l.block_number, l.log_index));
    store.apply(&Batch { from: 1, to: 5, logs, ..Batch::default() }).await.unwrap();
    store.derive(None, 2).await.unwrap();
    assert!(store.totals_agree().await.unwrap());
    let rating = |id: &'static str| {
        let store = store.clone();
        async move { store.task(id).await.unwrap().unwrap().task.rating }
    };
    assert_eq!(
        (rating("1").await, rating("2").await, rating("3").await, rating("4").await),
        (Some(40), Some(100), Some(0), None),
        "a rating is the approval's; auto-released is unrated"
    );
    // 1 (full rating) + 0.3 (unrated) + 0.2 (40% of 0.5) completed, and
    // 0.3 (60% of 0.5) failed; task 3 weighs nothing.
    assert_eq!(units(&store).await, (USDC + 300_000 + 200_000, 300_000));
    let rows = store.funders(&RATED_EXECUTOR.to_string()).await.unwrap();
    assert_eq!((rows[0].completed, rows[0].failed, rows[0].below_floor), (4, 0, 1));

    // The approval is reorganised away: task 1 is delivered again, unsettled.
    store.rollback(5, 5, None).await.unwrap();
    assert!(store.totals_agree().await.unwrap(), "after the rollback");
    assert_eq!(rating("1").await, None);
    assert_eq!(units(&store).await, (USDC + 300_000, 0), "the rating's part went with it");

    // It comes back approved in full: as if ratings did not exist.
    store
        .apply(&Batch {
            from: 5,
            to: 6,
            logs: vec![paid(1, 500_000, 0, 100, 6)],
            ..Batch::default()
        })
        .await
        .unwrap();
    store.derive(None, 2).await.unwrap();
    assert!(store.totals_agree().await.unwrap());
    assert_eq!(rating("1").await, Some(100));
    assert_eq!(units(&store).await, (USDC + 300_000 + 500_000, 0));

    // And once more, at 40, through a deeper reorganisation.
    store.rollback(4, 6, None).await.unwrap();
    assert!(store.totals_agree().await.unwrap());
    assert_eq!(units(&store).await, (0, 0), "nothing settled is left");
    let again = vec![paid(1, 500_000, 0, 40, 4), paid(2, 2_000_000, 0, 100, 4)];
    store.apply(&Batch { from: 4, to: 4, logs: again, ..Batch::default() }).await.unwrap();
    store.derive(None, 2).await.unwrap();
    assert!(store.totals_agree().await.unwrap());
    assert_eq!(units(&store).await, (USDC + 200_000, 300_000));
}

#[tokio::test]
async fn ratings_move_the_units_and_rollbacks_undo_them_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    ratings_move_the_units_and_rollbacks_undo_them(IndexStore::connect(&url).await.unwrap()).await;
}

#[tokio::test]
async fn ratings_move_the_units_and_rollbacks_undo_them_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_ratings").await else {
        return;
    };
    ratings_move_the_units_and_rollbacks_undo_them(IndexStore::connect(&url).await.unwrap()).await;
}

/// An index as migrations 1 to 12 left it (events stored, both marks at
/// the head) folds every task again on opening, so the ratings of the
/// approvals it holds are stored and weighed.
#[tokio::test]
async fn an_index_before_ratings_folds_its_tasks_again_with_them() {
    use tessera_db::{Schema, open_pool_with};
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("migrations");
    std::fs::create_dir(&old).unwrap();
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(manifest.join("migrations")).unwrap() {
        let name = entry.unwrap().file_name();
        if name.to_string_lossy().as_ref() < "0013" {
            std::fs::copy(manifest.join("migrations").join(&name), old.join(&name)).unwrap();
        }
    }
    assert_eq!(std::fs::read_dir(&old).unwrap().count(), 12);
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let migrator = sqlx::migrate::Migrator::new(old.as_path()).await.unwrap();
    let (pool, _) = open_pool_with(&url, &Schema::new("indexer", &migrator), &[]).await.unwrap();
    let mut logs = delivered(1, 500_000);
    logs.push(paid(1, 500_000, 0, 40, 4));
    for log in &logs {
        let (contract, kind, task, _) = super::codecs::classify(log);
        sqlx::query(
            "INSERT INTO ix_events (block, log_index, block_hash, tx_hash, contract, kind, \
             task_id, agent, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8)",
        )
        .bind(log.block_number.unwrap() as i64)
        .bind(log.log_index.unwrap() as i64)
        .bind(vec![0u8; 32])
        .bind(vec![0u8; 32])
        .bind(contract)
        .bind(kind)
        .bind(task.map(super::codecs::id_bytes))
        .bind(super::codecs::encode_raw(log))
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::query("INSERT INTO ix_cursor VALUES ('ingest', 5), ('derive', 5)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.cursor().await.unwrap(), Some(5), "ingestion goes on");
    assert_eq!(store.derived().await.unwrap(), None, "every task is folded again");
    store.derive(None, 10).await.unwrap();
    assert_eq!(store.task("1").await.unwrap().unwrap().task.rating, Some(40));
    assert_eq!(units(&store).await, (200_000, 300_000));
    assert!(store.totals_agree().await.unwrap());
}
