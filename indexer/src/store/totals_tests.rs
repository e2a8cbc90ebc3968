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
    let settled = |status: u8, paid: u128, t: u64| {
        E::TaskSettled {
            taskId: task,
            status,
            settlement: 0,
            executorAmount: paid,
            funderAmount: amount - paid,
            rating: 100,
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
