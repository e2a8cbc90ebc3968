//! The escrow's logs the runner reads into its [`Book`]: from a cursor,
//! one request per new block for every run at once, the newest blocks
//! read again for a reorganisation, and the logs of the sponsor's mined
//! transactions kept before the cursor gets there.

use alloy::{
    primitives::{B256, U256},
    rpc::types::{Filter, TransactionReceipt},
};
use tessera_bindings::logs::Chunk;

use super::{Chain, RunError};
#[cfg(doc)]
use crate::runner::book::Book;

impl Chain {
    /// Starts (or re-starts) reading the escrow's logs at `block`: a run
    /// approved there, or resumed from there, has all its tasks' logs read.
    pub(crate) async fn read_from(&self, block: u64) {
        let mut book = self.book.lock().await;
        let floor = block.max(self.deployment.deploy_block).saturating_sub(1);
        if book.cursor().is_none_or(|c| c > floor) {
            book.set_cursor(floor);
        }
    }

    /// Reads the escrow's logs from the cursor to `head`, in ranges the
    /// provider accepts ([`tessera_bindings::logs::LogScan`]), keeping
    /// those of the sponsor's tasks: one request per new block for every
    /// run at once. The newest `confirmations + 1` blocks are read again
    /// next time (a node may announce a block a moment before serving its
    /// logs, and a chain may replace its newest blocks); a log read twice
    /// is kept once. What a read of blocks below the head does not return
    /// was reorganised out and is dropped (see [`Book`]); the sponsor's
    /// nonce count goes with it. A head lower than the last (the chain went
    /// back, or a late announcement) has its newest blocks read again.
    pub(crate) async fn read_to(&self, head: u64) -> Result<(), RunError> {
        let mut book = self.book.lock().await;
        let Some(_) = book.cursor() else { return Ok(()) };
        if head < book.read_head {
            tracing::debug!(head, read = book.read_head, "a head below the last read");
            book.rewind(head);
        }
        let cursor = book.cursor().unwrap_or_default();
        let trail = book.confirmations + 1;
        if head <= book.read_head && head <= cursor + trail {
            return Ok(());
        }
        let mut reorganised = false;
        let funders = self.funders();
        let filter = Filter::new().address(self.deployment.task_escrow);
        while let Some(Chunk { from, to, logs }) =
            book.scan.next(&self.provider, &filter, head).await?
        {
            // The head's own block may not be served whole yet: it is
            // read again, and only then taken as the chain's word.
            let sure = if to == head { to.saturating_sub(1) } else { to };
            if from <= sure {
                reorganised |= book.reconcile(from..=sure, &logs);
            }
            for log in logs {
                book.absorb(&funders, &log);
            }
        }
        // The newest blocks are read again next time.
        book.set_cursor(head.saturating_sub(trail).max(cursor));
        book.read_head = book.read_head.max(head);
        drop(book);
        if reorganised {
            // Sends of the lost blocks are gone: count from the node again.
            self.forget_nonces().await;
        }
        Ok(())
    }

    /// Reads task `id`'s logs again from block `from` to `to` (one filter
    /// on its id): for a task of the sponsor's the escrow holds while its
    /// logs were dropped as reorganised out.
    pub(crate) async fn reread(&self, id: U256, from: u64, to: u64) -> Result<(), RunError> {
        let mut book = self.book.lock().await;
        let filter =
            Filter::new().address(self.deployment.task_escrow).topic1(B256::from(id.to_be_bytes()));
        let mut from = from.max(self.deployment.deploy_block);
        let funders = self.funders();
        while from <= to {
            let chunk = book.scan.read(&self.provider, &filter, from, to).await?;
            for log in chunk.logs {
                book.absorb(&funders, &log);
            }
            from = chunk.to + 1;
        }
        Ok(())
    }

    /// How many times logs of task `id` were found reorganised out.
    pub(crate) async fn reorgs(&self, id: U256) -> u32 {
        self.book.lock().await.reorgs.get(&id).copied().unwrap_or_default()
    }

    /// Whether task `id`'s settlement is held and has the configured
    /// confirmations on top of it (any held settlement when none are asked).
    pub(crate) async fn settled_deep(&self, id: U256) -> bool {
        let book = self.book.lock().await;
        let Some(block) = book.settled_at(id) else { return false };
        book.confirmations == 0 || block + book.confirmations <= book.read_head
    }

    /// Sets the confirmations a step that moved money waits for (see
    /// [`crate::runner::RunnerConfig::confirmations`]).
    pub(crate) fn set_confirmations(&mut self, confirmations: u64) {
        self.book.get_mut().confirmations = confirmations;
    }

    /// Keeps the logs of a mined transaction of the sponsor's, so what it
    /// did is known before the cursor reaches its block.
    pub(crate) async fn absorb(&self, receipt: &TransactionReceipt) {
        let funders = self.funders();
        let mut book = self.book.lock().await;
        for log in receipt.inner.logs() {
            if log.address() == self.deployment.task_escrow {
                book.absorb(&funders, log);
            }
        }
    }

    /// The held logs' change count: what [`Chain::touched_since`] counts
    /// from.
    pub(crate) async fn stamp(&self) -> u64 {
        self.book.lock().await.stamp
    }

    /// Whether the held logs of any of `ids` changed after `stamp` (a log
    /// read, or reorganised out).
    pub(crate) async fn touched_since(&self, ids: &[U256], stamp: u64) -> bool {
        self.book.lock().await.touched_since(ids, stamp)
    }

    /// Forgets the logs of tasks `ids` (their run is over).
    pub(crate) async fn forget(&self, ids: &[U256]) {
        let mut book = self.book.lock().await;
        for id in ids {
            book.logs.remove(id);
            book.touched.remove(id);
        }
    }
}
