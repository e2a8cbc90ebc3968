//! Reading a task back from the chain: the block it was created in
//! (remembered, or found scanning back from where it was last seen), its
//! logs since, folded and checked against the hash the contract stores.

use std::collections::HashMap;

use alloy::{
    primitives::{B256, U256},
    providers::Provider,
    rpc::types::{Filter, Log},
    sol_types::SolEvent,
};

use super::{ClientError, EscrowClient, map_call};
use crate::{
    TaskEscrow,
    task::{FoldError, TaskRecord, hash_task},
};

/// How many times [`EscrowClient::fetch`] re-reads a task whose logs and
/// stored hash disagree.
pub const FETCH_RETRIES: u32 = 5;

/// The most tasks whose creation block a client keeps; past it the oldest
/// half is forgotten (a forgotten one is found again by scanning back).
const KEPT_BIRTHS: usize = 100_000;

/// What a client knows of where each task lives on chain.
#[derive(Debug, Clone, Default)]
pub(super) struct Births(std::sync::Arc<std::sync::Mutex<HashMap<U256, Known>>>);

/// Where a task is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    /// Created in this block.
    Born(u64),
    /// Alive at this block (one of its logs is there): created at or before it.
    Seen(u64),
}

impl Births {
    fn get(&self, id: U256) -> Option<Known> {
        self.0.lock().ok()?.get(&id).copied()
    }

    fn put(&self, id: U256, known: Known) {
        let Ok(mut map) = self.0.lock() else { return };
        if map.len() >= KEPT_BIRTHS {
            let mut blocks: Vec<u64> = map
                .values()
                .map(|k| match k {
                    Known::Born(b) | Known::Seen(b) => *b,
                })
                .collect();
            blocks.sort_unstable();
            let median = blocks[blocks.len() / 2];
            map.retain(|_, k| matches!(k, Known::Born(b) | Known::Seen(b) if *b >= median));
        }
        match (map.get(&id), known) {
            // A creation block is not replaced by a sighting.
            (Some(Known::Born(_)), Known::Seen(_)) => {}
            _ => {
                map.insert(id, known);
            }
        }
    }

    fn forget(&self, id: U256) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(&id);
        }
    }
}

impl EscrowClient {
    /// Notes that task `id` was created in `block` (a `TaskCreated` log
    /// read there), so reading it starts there.
    pub fn note_birth(&self, id: U256, block: u64) {
        self.births.put(id, Known::Born(block));
    }

    /// Notes that task `id` had a log in `block`: looking for its creation
    /// starts there instead of at the head.
    pub fn note_seen(&self, id: U256, block: u64) {
        self.births.put(id, Known::Seen(block));
    }

    /// The block task `id` was created in: remembered, or found scanning the
    /// escrow's `TaskCreated` logs back from where it was last seen (the
    /// head, when nowhere) to `floor`. `None` when it was not created.
    pub async fn birth(&self, id: U256, floor: u64, head: u64) -> Result<Option<u64>, ClientError> {
        let top = match self.births.get(id) {
            Some(Known::Born(block)) => return Ok(Some(block)),
            Some(Known::Seen(block)) => block.min(head),
            None => head,
        };
        let filter = Filter::new()
            .address(self.address())
            .event_signature(TaskEscrow::TaskCreated::SIGNATURE_HASH)
            .topic1(B256::from(id));
        let found = self
            .range
            .find_back(&self.provider, &filter, floor, top, |log| log.block_number)
            .await?;
        if let Some(block) = found {
            self.births.put(id, Known::Born(block));
        }
        Ok(found)
    }

    /// The logs of `filter` about task `id` (its block bounds ignored, its
    /// first topic set to the id), from the task's creation (see
    /// [`EscrowClient::birth`]; never below `floor`) to the head.
    pub async fn task_logs(
        &self,
        filter: &Filter,
        id: U256,
        floor: u64,
    ) -> Result<Vec<Log>, ClientError> {
        let head = self.provider.get_block_number().await?;
        let Some(birth) = self.birth(id, floor, head).await? else { return Ok(Vec::new()) };
        let filter = filter.clone().topic1(B256::from(id));
        Ok(self.range.read_all(&self.provider, &filter, birth.max(floor), head).await?)
    }

    /// The logs of `filter` (its block bounds ignored) from `from_block` to
    /// the head, in ranges the provider accepts.
    pub async fn logs(&self, filter: &Filter, from_block: u64) -> Result<Vec<Log>, ClientError> {
        let head = self.provider.get_block_number().await?;
        Ok(self.range.read_all(&self.provider, filter, from_block, head).await?)
    }

    /// Rebuilds a task from its logs since its creation (found scanning
    /// back, see [`EscrowClient::birth`]; never below `floor`, the deploy
    /// block) and checks the result against the hash the contract stores.
    ///
    /// Logs and hash are read at the same block. A node may announce a block
    /// a moment before its logs are queryable (anvil does, under load), and a
    /// remembered creation block may have been reorganised away, so a
    /// mismatch is retried a few times (the creation looked for again)
    /// before it is reported.
    pub async fn fetch(&self, id: U256, floor: u64) -> Result<TaskRecord, ClientError> {
        let mut attempt = 0;
        loop {
            match self.fetch_once(id, floor).await {
                Err(ClientError::Fold(FoldError::HashMismatch(_) | FoldError::NotCreated(_)))
                    if attempt < FETCH_RETRIES && self.births.get(id).is_some() =>
                {
                    attempt += 1;
                    self.births.forget(id);
                    tokio::time::sleep(std::time::Duration::from_millis(10 * u64::from(attempt)))
                        .await;
                }
                Err(ClientError::Fold(FoldError::HashMismatch(_))) if attempt < FETCH_RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(10 * u64::from(attempt)))
                        .await;
                }
                other => return other,
            }
        }
    }

    async fn fetch_once(&self, id: U256, floor: u64) -> Result<TaskRecord, ClientError> {
        let head = self.provider.get_block_number().await?;
        let Some(birth) = self.birth(id, floor, head).await? else {
            return Err(FoldError::NotCreated(id).into());
        };
        // Every block since its creation, in ranges the provider accepts.
        let filter = Filter::new().address(self.address()).topic1(B256::from(id));
        let logs = self.range.read_all(&self.provider, &filter, birth.max(floor), head).await?;
        let record = TaskRecord::from_logs(id, &logs)?;
        let stored = self
            .escrow
            .taskHash(id)
            .block(alloy::eips::BlockId::number(head))
            .call()
            .await
            .map_err(map_call)?;
        if stored != hash_task(&record.task) {
            return Err(FoldError::HashMismatch(id).into());
        }
        Ok(record)
    }
}
