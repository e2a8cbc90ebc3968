//! Where [`Sender::mined`] looks for a waiting transaction: in the
//! receipts of each new block (read once for every transaction waiting),
//! by its hash, and in its account's mined nonce and the newest base fee
//! (read once per announced head).

use std::{collections::BTreeMap, collections::HashMap, sync::Arc};

use alloy::{
    eips::BlockId,
    primitives::{Address, TxHash},
    providers::Provider,
    rpc::types::TransactionReceipt,
};

use super::{Pending, Sender};
use crate::client::ClientError;

/// The most blocks whose receipts are kept for the transactions waiting.
const KEPT_BLOCKS: usize = 32;

/// The most blocks a waiting transaction reads block by block to catch up;
/// beyond that (it waited through many heads unannounced) its own receipt
/// is asked for.
const MAX_CATCH_UP: u64 = 16;

/// The receipts of the newest blocks read, shared by every transaction
/// waiting on them.
#[derive(Debug, Default)]
pub(super) struct Blocks {
    /// By block number.
    kept: BTreeMap<u64, Arc<Vec<TransactionReceipt>>>,
    /// The node refused `eth_getBlockReceipts`: receipts by hash only.
    unsupported: bool,
    /// The newest block's base fee, read at a head.
    base_fee: Option<(u64, u64)>,
    /// Each account's mined nonce (its transactions in blocks), read at a
    /// head.
    mined_nonces: HashMap<Address, (u64, u64)>,
}

/// Where a mined transaction was looked for.
pub(super) enum Found {
    /// In a block read: this receipt.
    Mined(Box<TransactionReceipt>),
    /// Not in any block up to this one.
    Upto(u64),
    /// The blocks could not be read: ask by hash.
    Unknown,
}

impl Sender {
    /// Whether the newest block's base fee is above what `pending` (its
    /// newest version) offers at most: no block will take it as it is. The
    /// base fee is read once per announced head `head` for every waiting
    /// transaction.
    pub(super) async fn priced_out(
        &self,
        pending: &Pending,
        head: Option<u64>,
    ) -> Result<bool, ClientError> {
        let Some(cap) = pending.request.max_fee_per_gas else { return Ok(false) };
        let mut blocks = self.blocks.lock().await;
        let base = match (blocks.base_fee, head) {
            (Some((at, fee)), Some(now)) if at == now => fee,
            _ => {
                let block = self
                    .provider
                    .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
                    .await?;
                let fee = block.and_then(|b| b.header.base_fee_per_gas).unwrap_or_default();
                blocks.base_fee = head.map(|h| (h, fee));
                fee
            }
        };
        Ok(u128::from(base) > cap)
    }

    /// How many transactions of `from` are mined (its nonce at `latest`):
    /// read once per announced head `head` for every waiting transaction
    /// of the account; without a head, afresh.
    pub(super) async fn mined_nonce(
        &self,
        from: Address,
        head: Option<u64>,
    ) -> Result<u64, ClientError> {
        let mut blocks = self.blocks.lock().await;
        if let Some(now) = head
            && let Some(&(at, nonce)) = blocks.mined_nonces.get(&from)
            && at == now
        {
            return Ok(nonce);
        }
        tracing::debug!(%from, ?head, "reading the mined nonce");
        let nonce = self.provider.get_transaction_count(from).latest().await?;
        if let Some(now) = head {
            blocks.mined_nonces.insert(from, (now, nonce));
        }
        Ok(nonce)
    }

    /// The receipt of the first of `hashes` found, asked by hash (the
    /// newest version first: after a replacement it is the likely one).
    pub(super) async fn by_hash(
        &self,
        hashes: &[TxHash],
    ) -> Result<Option<TransactionReceipt>, ClientError> {
        for hash in hashes.iter().rev() {
            if let Some(receipt) = self.provider.get_transaction_receipt(*hash).await? {
                return Ok(Some(receipt));
            }
        }
        Ok(None)
    }

    /// Looks for one of `hashes` in blocks `from + 1 ..= to`, each block's
    /// receipts read once for every transaction waiting. `Unknown` when the
    /// range is out of reach (too long, or the chain went back) or the node
    /// serves no block receipts.
    pub(super) async fn in_blocks(
        &self,
        hashes: &[TxHash],
        from: u64,
        to: u64,
    ) -> Result<Found, ClientError> {
        if to < from || to - from > MAX_CATCH_UP {
            return Ok(Found::Unknown);
        }
        // Blocks kept above the announced head: the chain went back, and
        // they may be gone.
        self.blocks.lock().await.kept.retain(|&n, _| n <= to);
        for number in from + 1..=to {
            let Some(receipts) = self.block_receipts(number).await? else {
                // Not served yet (announced a moment early), or not at all.
                return Ok(if self.blocks.lock().await.unsupported {
                    Found::Unknown
                } else {
                    Found::Upto(number - 1)
                });
            };
            if let Some(r) = receipts.iter().find(|r| hashes.contains(&r.transaction_hash)) {
                return Ok(Found::Mined(Box::new(r.clone())));
            }
        }
        Ok(Found::Upto(to))
    }

    /// Block `number`'s receipts: read once, then kept for the other
    /// transactions waiting. `None` when the node does not serve them (yet).
    async fn block_receipts(
        &self,
        number: u64,
    ) -> Result<Option<Arc<Vec<TransactionReceipt>>>, ClientError> {
        let mut blocks = self.blocks.lock().await;
        if blocks.unsupported {
            return Ok(None);
        }
        if let Some(r) = blocks.kept.get(&number) {
            return Ok(Some(Arc::clone(r)));
        }
        let receipts = match self.provider.get_block_receipts(BlockId::number(number)).await {
            Ok(Some(receipts)) => Arc::new(receipts),
            Ok(None) => return Ok(None),
            Err(e) if e.as_error_resp().is_some() => {
                tracing::info!(error = %e, "the node serves no block receipts; asking per transaction");
                blocks.unsupported = true;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        blocks.kept.insert(number, Arc::clone(&receipts));
        while blocks.kept.len() > KEPT_BLOCKS {
            blocks.kept.pop_first();
        }
        Ok(Some(receipts))
    }
}
