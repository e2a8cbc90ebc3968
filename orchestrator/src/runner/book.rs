//! The escrow's logs of our funders' tasks as the runner holds them (see
//! [`super::Chain::read_to`]): what a read of a range of blocks returns is
//! the chain's word on them, so a log reorganised out is dropped.

use std::collections::HashSet;

use alloy::{
    primitives::{Address, B256, U256},
    rpc::types::Log,
};
use tessera_bindings::{TaskEscrow, logs::LogScan, task::decode_log};

/// The escrow's logs of the tasks our funders fund (the key, and the
/// sponsors of live runs funded by a grant), read once per block from a
/// cursor. A stranger's tasks are never kept.
///
/// A read of blocks `[from, to]` is the chain's word on them: a log held
/// for a block of that range (read before, or taken from a receipt) that
/// the read does not return was reorganised out, and is dropped. The cursor
/// trails the head by `confirmations + 1` blocks, so every read goes over
/// the newest blocks again: a reorganisation no deeper than that is seen.
#[derive(Debug, Default)]
pub(super) struct Book {
    /// The escrow's logs read range by range: its next block is the one
    /// after the last read for good (see [`Book::cursor`]).
    pub(super) scan: LogScan,
    /// Whether reading started.
    pub(super) reading: bool,
    /// The newest head read so far (its block is read once more with the next).
    pub(super) read_head: u64,
    /// The logs of each task one of our funders funded, in chain order.
    pub(super) logs: std::collections::HashMap<U256, Vec<Log>>,
    /// Blocks read again behind the newest (see [`super::RunnerConfig::confirmations`]).
    pub(super) confirmations: u64,
    /// Per task, how many times logs of it were found reorganised out.
    pub(super) reorgs: std::collections::HashMap<U256, u32>,
    /// Bumped on every change of the held logs: a log kept, or logs
    /// reorganised out.
    pub(super) stamp: u64,
    /// Per task, the stamp of its last change.
    pub(super) touched: std::collections::HashMap<U256, u64>,
}

/// Where a log is: its block's hash and its index in the block.
fn place(log: &Log) -> (Option<B256>, u64) {
    (log.block_hash, log.log_index.unwrap_or_default())
}

/// Where a log is in chain order.
fn order(log: &Log) -> (u64, u64) {
    (log.block_number.unwrap_or_default(), log.log_index.unwrap_or_default())
}

impl Book {
    /// The last block read for good; `None` until reading starts.
    pub(super) fn cursor(&self) -> Option<u64> {
        self.reading.then(|| self.scan.next_block().saturating_sub(1))
    }

    /// Reads on from the block after `cursor` (reading starts if it had not).
    pub(super) fn set_cursor(&mut self, cursor: u64) {
        self.scan.seek(cursor.saturating_add(1));
        self.reading = true;
    }

    /// Keeps `log` when it is about a task one of `funders` funds: its
    /// creation (funded by one of them) or anything after it (the task is
    /// known). A held log at the same place of another block (the block was
    /// replaced) is dropped for it.
    pub(super) fn absorb(&mut self, funders: &HashSet<Address>, log: &Log) {
        let Some(id) = log.topics().get(1).map(|t| U256::from_be_bytes(t.0)) else { return };
        if !self.logs.contains_key(&id) {
            match decode_log(log) {
                Some(TaskEscrow::TaskEscrowEvents::TaskCreated(ev))
                    if funders.contains(&ev.task.funder) => {}
                _ => return,
            }
        }
        let logs = self.logs.entry(id).or_default();
        if logs.iter().any(|l| place(l) == place(log)) {
            return;
        }
        let before = logs.len();
        logs.retain(|l| order(l) != order(log));
        if logs.len() != before {
            *self.reorgs.entry(id).or_default() += 1;
        }
        logs.push(log.clone());
        logs.sort_by_key(order);
        self.touch(id);
    }

    /// Records a change of task `id`'s logs.
    fn touch(&mut self, id: U256) {
        self.stamp += 1;
        self.touched.insert(id, self.stamp);
    }

    /// Whether any of `ids` changed after stamp `since`.
    pub(super) fn touched_since(&self, ids: &[U256], since: u64) -> bool {
        ids.iter().any(|id| self.touched.get(id).is_some_and(|&at| at > since))
    }

    /// Drops the held logs of blocks `range` that `read` (the chain's logs
    /// of those blocks) does not hold: they were reorganised out. A task
    /// whose creation went is forgotten whole. Returns whether any went.
    pub(super) fn reconcile(&mut self, range: std::ops::RangeInclusive<u64>, read: &[Log]) -> bool {
        let kept: HashSet<(Option<B256>, u64)> = read.iter().map(place).collect();
        self.drop_where(|l| {
            l.block_number.is_some_and(|b| range.contains(&b)) && !kept.contains(&place(l))
        })
    }

    /// Goes back to `head`, lower than the last head read: its newest
    /// blocks are read again next time. Nothing held is dropped yet (a
    /// head may be announced late, after a newer block was read): the
    /// reads of the blocks the chain builds again tell what went.
    pub(super) fn rewind(&mut self, head: u64) {
        let back = head.saturating_sub(1 + self.confirmations);
        if let Some(cursor) = self.cursor() {
            self.set_cursor(cursor.min(back));
        }
        self.read_head = head;
    }

    /// Drops every held log `gone` says was reorganised out, counting a
    /// reorganisation of each task that lost any.
    fn drop_where(&mut self, gone: impl Fn(&Log) -> bool) -> bool {
        let mut any = false;
        let mut changed = Vec::new();
        self.logs.retain(|id, logs| {
            let before = logs.len();
            logs.retain(|l| !gone(l));
            if logs.len() == before {
                return true;
            }
            any = true;
            changed.push(*id);
            *self.reorgs.entry(*id).or_default() += 1;
            tracing::warn!(task = %id, logs = before - logs.len(), "escrow logs reorganised out");
            logs.first().is_some_and(|l| {
                matches!(decode_log(l), Some(TaskEscrow::TaskEscrowEvents::TaskCreated(_)))
            })
        });
        for id in changed {
            self.touch(id);
        }
        any
    }

    /// The block of task `id`'s settlement, when it is held.
    pub(super) fn settled_at(&self, id: U256) -> Option<u64> {
        self.logs.get(&id)?.iter().find_map(|l| match decode_log(l)? {
            TaskEscrow::TaskEscrowEvents::TaskSettled(_) => l.block_number,
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use alloy::{
        primitives::{LogData, aliases::U40},
        sol_types::SolEvent,
    };
    use tessera_bindings::{ITaskEscrow::Task, task::Status};

    use alloy::primitives::keccak256;

    use super::*;

    const SPONSOR: Address = Address::repeat_byte(0x5);

    fn ours() -> HashSet<Address> {
        HashSet::from([SPONSOR])
    }

    /// `data` as the escrow's log at `block` (its hash told by `fork`),
    /// index `index`.
    fn log(data: LogData, block: u64, fork: u8, index: u64) -> Log {
        Log {
            inner: alloy::primitives::Log { address: Address::ZERO, data },
            block_number: Some(block),
            block_hash: Some(keccak256([fork, u8::try_from(block).unwrap_or(u8::MAX)])),
            log_index: Some(index),
            ..Log::default()
        }
    }

    fn created(id: u64, block: u64, fork: u8) -> Log {
        let task = Task { funder: SPONSOR, ..Task::default() };
        let ev = TaskEscrow::TaskCreated {
            taskId: U256::from(id),
            planId: B256::ZERO,
            parentId: U256::ZERO,
            r#ref: B256::ZERO,
            capability: B256::ZERO,
            task,
            specURI: String::new(),
        };
        log(ev.encode_log_data(), block, fork, 0)
    }

    fn settled(id: u64, block: u64, fork: u8) -> Log {
        let ev = TaskEscrow::TaskSettled {
            taskId: U256::from(id),
            status: Status::Paid as u8,
            settlement: 0,
            executorAmount: 1,
            funderAmount: 0,
            rating: 100,
            at: U40::from(1),
        };
        log(ev.encode_log_data(), block, fork, 1)
    }

    fn held(book: &Book, id: u64) -> usize {
        book.logs.get(&U256::from(id)).map_or(0, Vec::len)
    }

    #[test]
    fn a_read_drops_the_held_logs_it_does_not_return_and_counts_the_reorganisation() {
        let mut book = Book::default();
        // Task 1 created at block 10 and settled at 12 (taken from receipts).
        book.absorb(&ours(), &created(1, 10, 0xa));
        book.absorb(&ours(), &settled(1, 12, 0xa));
        assert_eq!(held(&book, 1), 2);
        // Blocks 10..=11 as the chain has them: the creation is there.
        assert!(!book.reconcile(10..=11, &[created(1, 10, 0xa)]));
        assert_eq!((held(&book, 1), book.settled_at(U256::from(1))), (2, Some(12)));
        // Block 12 was replaced without the settlement.
        assert!(book.reconcile(12..=12, &[]));
        assert_eq!((held(&book, 1), book.settled_at(U256::from(1))), (1, None));
        assert_eq!(book.reorgs[&U256::from(1)], 1);
        // Settled again in block 13: a log read twice is kept once.
        book.absorb(&ours(), &settled(1, 13, 0xb));
        book.absorb(&ours(), &settled(1, 13, 0xb));
        assert_eq!((held(&book, 1), book.settled_at(U256::from(1))), (2, Some(13)));
    }

    #[test]
    fn a_task_whose_creation_went_is_forgotten_whole_and_may_be_created_again() {
        let mut book = Book::default();
        book.absorb(&ours(), &created(2, 20, 0xa));
        book.absorb(&ours(), &settled(2, 21, 0xa));
        // Blocks 20..=21 replaced: neither log is on the chain.
        assert!(book.reconcile(20..=21, &[]));
        assert!(!book.logs.contains_key(&U256::from(2)));
        // Created again under the same reference, at the same place of the
        // new block 20: kept (another block's hash).
        book.absorb(&ours(), &created(2, 20, 0xb));
        assert_eq!(held(&book, 2), 1);
        // Only the blocks read are judged: block 22's logs stay.
        book.absorb(&ours(), &settled(2, 22, 0xb));
        assert!(!book.reconcile(20..=21, &[created(2, 20, 0xb)]));
        assert_eq!(held(&book, 2), 2);
        assert_eq!(book.reorgs[&U256::from(2)], 1);
    }

    #[test]
    fn a_log_at_the_place_of_a_replaced_block_replaces_the_old_one() {
        let mut book = Book::default();
        book.absorb(&ours(), &created(3, 30, 0xa));
        book.absorb(&ours(), &settled(3, 31, 0xa));
        // Block 31 replaced by one with the settlement at the same index.
        book.absorb(&ours(), &settled(3, 31, 0xb));
        assert_eq!(held(&book, 3), 2);
        assert_eq!(book.logs[&U256::from(3)][1].block_hash, settled(3, 31, 0xb).block_hash);
        assert_eq!(book.reorgs[&U256::from(3)], 1);
        // Another funder's task is not the sponsor's.
        let mut other = created(4, 30, 0xa);
        other.inner.data.topics_mut()[1] = B256::with_last_byte(4);
        book.absorb(&HashSet::from([Address::repeat_byte(0x6)]), &other);
        assert!(!book.logs.contains_key(&U256::from(4)));
    }

    #[test]
    fn a_task_is_kept_when_one_of_our_funders_funds_it_or_it_is_known() {
        let sponsor = Address::repeat_byte(0x7);
        let stranger = Address::repeat_byte(0x8);
        let funded_by = |id: u64, funder: Address| {
            let mut log = created(id, 40, 0xa);
            let task = Task { funder, ..Task::default() };
            let ev = TaskEscrow::TaskCreated {
                taskId: U256::from(id),
                planId: B256::ZERO,
                parentId: U256::ZERO,
                r#ref: B256::ZERO,
                capability: B256::ZERO,
                task,
                specURI: String::new(),
            };
            log.inner.data = ev.encode_log_data();
            log
        };
        // The key and a live run's sponsor are ours; a stranger is not.
        let funders = HashSet::from([SPONSOR, sponsor]);
        let mut book = Book::default();
        book.absorb(&funders, &funded_by(6, sponsor));
        book.absorb(&funders, &funded_by(7, SPONSOR));
        book.absorb(&funders, &funded_by(8, stranger));
        assert_eq!((held(&book, 6), held(&book, 7), held(&book, 8)), (1, 1, 0));
        // Once known, a task's later logs are kept even when its sponsor's
        // run is over (the sponsor left the funders).
        book.absorb(&ours(), &settled(6, 41, 0xa));
        assert_eq!(held(&book, 6), 2);
        // A stranger's settlement of a task we never kept is not kept.
        book.absorb(&funders, &settled(8, 41, 0xa));
        assert_eq!(held(&book, 8), 0);
    }

    #[test]
    fn a_lower_head_rewinds_the_cursor_over_its_newest_blocks() {
        let mut book = Book { read_head: 100, confirmations: 2, ..Book::default() };
        book.set_cursor(97);
        book.absorb(&ours(), &created(5, 99, 0xa));
        book.rewind(98);
        // Blocks 96..=98 are read again; nothing is dropped before they are.
        assert_eq!((book.cursor(), book.read_head, held(&book, 5)), (Some(95), 98, 1));
        book.rewind(200);
        assert_eq!(book.cursor(), Some(95), "never forward");
    }

    #[test]
    fn a_task_is_touched_by_each_new_log_and_each_reorganisation_only() {
        let mut book = Book::default();
        let (one, two) = ([U256::from(1)], [U256::from(2)]);
        book.absorb(&ours(), &created(1, 10, 0xa));
        book.absorb(&ours(), &created(2, 10, 0xa));
        let seen = book.stamp;
        assert!(!book.touched_since(&one, seen) && !book.touched_since(&two, seen));
        // A log read twice changes nothing.
        book.absorb(&ours(), &created(1, 10, 0xa));
        assert!(!book.touched_since(&one, seen));
        // Task 1 settled: task 1 changed, task 2 did not.
        book.absorb(&ours(), &settled(1, 12, 0xa));
        assert!(book.touched_since(&one, seen) && !book.touched_since(&two, seen));
        let seen = book.stamp;
        // Block 12 replaced without the settlement: task 1 changed again.
        assert!(book.reconcile(12..=12, &[]));
        assert!(book.touched_since(&one, seen) && !book.touched_since(&two, seen));
        assert!(!book.touched_since(&[U256::from(3)], 0), "an unknown task never changed");
    }
}
