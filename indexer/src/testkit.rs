//! Events as the contracts emit them, for the crate's own tests: a task's
//! creation with the windows the tests share, and a log placed in a block.
//! One place, so a change to an event's shape is made once.

use alloy::{
    primitives::{Address, B256, LogData, U256, aliases::U40, keccak256},
    rpc::types::Log,
};
use tessera_bindings::{ITaskEscrow::Task, TaskEscrow as E, capability};

/// `TaskCreated` of task `id` in `plan` for `capability`, funded by
/// `funder` (also its client) for `executor` at `amount`, with `spec_uri`
/// (its hash as the escrow stores it): a root task (no parent), deadline
/// 10,000, created at 1,000, review, dispute and appeal-ruling windows of
/// 600 and no appeal window. Tests set what they need otherwise on the
/// value returned.
pub(crate) fn task_created(
    id: u64,
    plan: B256,
    capability: &str,
    funder: Address,
    executor: Address,
    amount: u128,
    spec_uri: &str,
) -> E::TaskCreated {
    E::TaskCreated {
        taskId: U256::from(id),
        planId: plan,
        parentId: U256::ZERO,
        r#ref: keccak256(id.to_be_bytes()),
        capability: capability::encode(capability).expect("a valid capability name"),
        task: Task {
            funder,
            client: funder,
            executor,
            amount,
            deadline: U40::from(10_000),
            updatedAt: U40::from(1_000),
            reviewWindow: 600,
            disputeWindow: 600,
            appealWindow: 0,
            appealRulingWindow: 600,
            executorShareBps: 0,
            status: 1,
            specHash: keccak256(spec_uri),
            resultHash: B256::ZERO,
        },
        specURI: spec_uri.into(),
    }
}

/// A log of `data` from the test contract (`0x0101…`) at `block`, position
/// `index`.
pub(crate) fn log_at(data: LogData, block: u64, index: u64) -> Log {
    Log {
        inner: alloy::primitives::Log { address: Address::repeat_byte(1), data },
        block_number: Some(block),
        log_index: Some(index),
        ..Log::default()
    }
}
