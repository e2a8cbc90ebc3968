//! Sends an account's transactions back to back: while a block subscription
//! is live, nonces are assigned here (read from the node once, then counted)
//! and fees are estimated once per announced head, so a transaction costs a
//! gas estimate and a send, and several go out before the first is mined.
//! A failed send, a transaction not mined in time and a head lower than the
//! last (a reorganization) forget the count, so the next send reads the
//! node's again; so does a restart. Without a subscription the node's count
//! is read for every transaction.
//!
//! [`Sender::mined`] waits for a sent transaction. While heads are
//! announced it reads each new block's receipts once (`eth_getBlockReceipts`)
//! for every transaction waiting, so the requests per block do not grow with
//! the transactions in flight; without a subscription (or from a node that
//! does not serve block receipts) it asks for each transaction's receipt.
//! It replaces a transaction when it is stuck: priced out (the newest
//! block's base fee above its fee cap) after [`STUCK_HEADS`] announced
//! heads without it, or still out after [`STUCK_AFTER`] — a transaction
//! merely waiting its turn behind other senders' is left alone. It is sent
//! again with the same nonce and gas limit at a fee at least
//! [`BUMP_PERCENT`] above the last one and no lower than a fresh estimate,
//! at most [`MAX_REPLACEMENTS`] times; whichever of the versions is mined
//! is the one waited for. A fence ([`Sender::fence`]: a replica's lease)
//! is checked before every send and every replacement.
//!
//! No wait is without an end. A transaction whose nonce another one took
//! (a second sender for the key, a replacement that lost, a node that
//! forgot its pool) can never be mined: once the account's mined nonce
//! (`eth_getTransactionCount` at `latest`, read once per announced head
//! for every waiting transaction of the account, or every
//! [`NONCE_CHECK`] without heads) has passed the transaction's and none of
//! its versions has a receipt, at two looks in a row, the wait ends with
//! [`ClientError::Dropped`] and the count is forgotten. Past
//! [`RECEIPT_TIMEOUT`] any wait ends with [`ClientError::NotMined`].

use std::{collections::HashMap, sync::Arc, time::Duration};

use alloy::{
    contract::{CallBuilder, CallDecoder},
    network::Ethereum,
    primitives::{Address, TxHash},
    providers::{DynProvider, Provider, utils::Eip1559Estimation},
    rpc::types::{TransactionReceipt, TransactionRequest},
};
use tokio::{sync::Mutex, time::Instant};

use crate::{
    client::{ClientError, RECEIPT_POLL, RECEIPT_TIMEOUT, map_call},
    heads::HeadWatch,
};

mod lookup;
mod replace;

use lookup::{Blocks, Found};

/// Announced heads without its inclusion after which a transaction is
/// replaced at a higher fee.
pub const STUCK_HEADS: u32 = 3;

/// Without a subscription, how long a transaction waits before it is
/// replaced at a higher fee.
pub const STUCK_AFTER: Duration = Duration::from_secs(30);

/// How much a replacement raises both fee caps, at least (nodes refuse a
/// replacement under 10 %).
pub const BUMP_PERCENT: u128 = 25;

/// The most times one transaction is replaced.
pub const MAX_REPLACEMENTS: usize = 4;

/// Without heads, how often a waiting transaction's account nonce is read
/// to tell whether another transaction took its nonce.
pub const NONCE_CHECK: Duration = Duration::from_secs(1);

/// How long after a head is announced its receipts are asked for (a node
/// may announce a block a moment before it serves the block's receipts).
const ANNOUNCED_SETTLE: Duration = Duration::from_millis(30);

#[derive(Debug, Default)]
struct State {
    /// The next nonce of each account, once known.
    nonces: HashMap<Address, u64>,
    /// The fees estimated at a head.
    fees: Option<(u64, Eip1559Estimation)>,
    /// The newest head seen.
    head: u64,
}

/// A mined transaction's receipt, or its revert as an error.
fn settled(receipt: TransactionReceipt) -> Result<TransactionReceipt, ClientError> {
    if receipt.status() {
        Ok(receipt)
    } else {
        Err(ClientError::Reverted(receipt.transaction_hash))
    }
}

/// The error of a transaction whose nonce another one took.
fn dropped(pending: &Pending) -> ClientError {
    ClientError::Dropped { nonce: pending.nonce, hashes: pending.hashes.clone() }
}

/// When a waiting transaction's account nonce is read, and whether what
/// was read says the transaction was dropped.
#[derive(Debug)]
struct DropCheck {
    /// The head of the last read (at first: of the send).
    head: Option<u64>,
    /// The time of the last read (at first: of the send).
    at: Instant,
    /// Whether the last read found the nonce passed and no version mined.
    gone: bool,
}

impl DropCheck {
    fn new(head: Option<u64>, sent: Instant) -> Self {
        Self { head, at: sent, gone: false }
    }

    /// Whether the nonce is read now: once per head announced after the
    /// last read, or, without heads (`head` is `None`), once per
    /// [`NONCE_CHECK`]. A read due is counted as done.
    fn due(&mut self, head: Option<u64>, now: Instant) -> bool {
        let due = match head {
            Some(h) => self.head.is_none_or(|last| h > last),
            None => now.saturating_duration_since(self.at) >= NONCE_CHECK,
        };
        if due {
            (self.head, self.at) = (head.or(self.head), now);
        }
        due
    }

    /// After a read that found the transaction `gone` (the nonce passed
    /// and no version mined) or not: dropped when two reads in a row found
    /// it gone (a node may count a block's nonces a moment before it
    /// serves the block's receipts).
    fn dropped(&mut self, gone: bool) -> bool {
        let dropped = gone && self.gone;
        self.gone = gone;
        dropped
    }
}

/// A transaction the node took and that is not known to be mined yet:
/// [`Sender::mined`] waits for it (and replaces it if it is stuck).
#[must_use = "a sent transaction is not done until it is mined"]
#[derive(Debug, Clone)]
pub struct Pending {
    from: Address,
    /// The nonce every version carries.
    nonce: u64,
    /// Every version sent, the newest last.
    hashes: Vec<TxHash>,
    /// The newest version, for a replacement.
    request: TransactionRequest,
    /// The head announced when it was first sent: it is mined in a later
    /// block.
    head: Option<u64>,
}

impl Pending {
    /// The hash of the newest version sent.
    pub fn hash(&self) -> TxHash {
        *self.hashes.last().expect("a pending transaction has a version")
    }

    /// The account that sent it.
    pub fn from(&self) -> Address {
        self.from
    }

    /// The nonce it was sent with (every replacement keeps it).
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    /// Every version sent, the first first.
    pub fn hashes(&self) -> &[TxHash] {
        &self.hashes
    }
}

/// Whether the process may send now (see [`Sender::fence`]).
type MaySend = Arc<dyn Fn() -> bool + Send + Sync>;

/// Sends transactions for the accounts of one provider's wallet; clones
/// share the counts.
#[derive(Clone)]
pub struct Sender {
    provider: DynProvider,
    state: Arc<Mutex<State>>,
    blocks: Arc<Mutex<Blocks>>,
    fence: Arc<std::sync::OnceLock<MaySend>>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("fenced", &self.fence.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Sender {
    /// A sender over `provider`, whose wallet signs.
    pub fn new(provider: DynProvider) -> Self {
        Self { provider, state: Arc::default(), blocks: Arc::default(), fence: Arc::default() }
    }

    /// Sends only while `may_send` says so (a replica holding its lane's
    /// lease): a send is refused with [`ClientError::Fenced`], and a stuck
    /// transaction is not replaced, once it says no — the wait for what
    /// was sent goes on (it may still be mined), and whoever sends next for
    /// the account reads its nonce from the node. Once only, for every
    /// clone.
    pub fn fence(&self, may_send: impl Fn() -> bool + Send + Sync + 'static) {
        let _ = self.fence.set(Arc::new(may_send));
    }

    /// Whether the fence (if any) lets this process send now.
    fn may_send(&self) -> bool {
        self.fence.get().is_none_or(|may| may())
    }

    /// Sends `call` from `from` and returns once the node took it, without
    /// waiting for it to be mined. Sends are serialized (the nonce is
    /// counted here); `heads`, when live, lets the fee estimate serve every
    /// transaction of a block. A revert foreseen by the gas estimate comes
    /// back decoded, and nothing is sent.
    pub async fn send<D: CallDecoder + Clone + Unpin>(
        &self,
        call: CallBuilder<&DynProvider, D, Ethereum>,
        from: Address,
        heads: Option<&HeadWatch>,
    ) -> Result<Pending, ClientError> {
        let mut st = self.state.lock().await;
        if !self.may_send() {
            return Err(ClientError::Fenced);
        }
        let head = heads.and_then(|w| *w.borrow()).map(|h| h.number);
        let fees = match (st.fees, head) {
            (Some((at, fees)), Some(now)) if at == now => fees,
            _ => {
                tracing::debug!(?head, at = ?st.fees.map(|f| f.0), "estimating fees");
                let fees = self.provider.estimate_eip1559_fees().await?;
                st.fees = head.map(|h| (h, fees));
                fees
            }
        };
        let call = call
            .from(from)
            .max_fee_per_gas(fees.max_fee_per_gas)
            .max_priority_fee_per_gas(fees.max_priority_fee_per_gas);
        match head {
            // Counting needs the heads: without them a reorg or a drop goes
            // unseen, so the node's count is read every time.
            None => st.nonces.clear(),
            // A head below the last one seen: the chain reorganized and
            // may have dropped sent transactions.
            Some(h) if h < st.head => {
                st.nonces.clear();
                st.head = h;
            }
            Some(h) => st.head = h,
        }
        let counted = st.nonces.get(&from).copied();
        let nonce = match counted {
            Some(n) => n,
            None => {
                tracing::debug!(%from, ?head, "reading the nonce");
                self.provider.get_transaction_count(from).pending().await?
            }
        };
        let send = |nonce: u64| {
            let call = call.clone().nonce(nonce);
            async move {
                let pending = call.send().await.map_err(map_call)?;
                Ok::<_, ClientError>((*pending.tx_hash(), call.into_transaction_request()))
            }
        };
        let sent = match send(nonce).await {
            // The count went stale (the account also sent elsewhere): once
            // more with the node's.
            Err(ClientError::Call(e)) if counted.is_some() => {
                tracing::debug!(%from, error = %e, "send refused; reading the nonce again");
                let nonce = self.provider.get_transaction_count(from).pending().await?;
                send(nonce).await.map(|s| (s, nonce))
            }
            other => other.map(|s| (s, nonce)),
        };
        match sent {
            Ok(((hash, request), nonce)) => {
                st.nonces.insert(from, nonce + 1);
                Ok(Pending { from, nonce, hashes: vec![hash], request, head })
            }
            // A foreseen revert sent nothing: the count stands.
            Err(e @ ClientError::Revert(_)) => Err(e),
            Err(e) => {
                st.nonces.remove(&from);
                Err(e)
            }
        }
    }

    /// Waits for `pending` to be mined and returns its receipt (a mined
    /// revert is an error). While `heads` announces blocks, looks for it in
    /// the receipts of each block after the one it was sent at, read once
    /// for every waiting transaction, a moment after the announcement;
    /// otherwise asks for its receipt at once (an automining node has mined
    /// it already) and then at growing intervals up to [`RECEIPT_POLL`].
    /// A stuck transaction (see the module) is replaced at a higher fee.
    /// A transaction whose nonce another one took ends the wait with
    /// [`ClientError::Dropped`] within two heads (or two
    /// [`NONCE_CHECK`]s) of that one being mined; any other gives up after
    /// [`RECEIPT_TIMEOUT`]. Either way the sender's count is forgotten.
    pub async fn mined(
        &self,
        pending: Pending,
        heads: Option<HeadWatch>,
    ) -> Result<TransactionReceipt, ClientError> {
        let from = pending.from;
        let mined = self.wait(pending, heads).await;
        if let Err(ClientError::NotMined(..) | ClientError::Dropped { .. }) = &mined {
            // Dropped or stuck: count from the node's nonce again.
            self.forget(from).await;
        }
        mined
    }

    async fn wait(
        &self,
        mut pending: Pending,
        mut heads: Option<HeadWatch>,
    ) -> Result<TransactionReceipt, ClientError> {
        let started = Instant::now();
        // Only heads announced from now on count.
        if let Some(watch) = heads.as_mut() {
            watch.borrow_and_update();
        }
        let mut poll = Duration::from_millis(10);
        let (mut since_send, mut sent_at) = (0u32, Instant::now());
        // The last block known not to hold it.
        let mut checked = pending.head;
        let mut drop_check = DropCheck::new(pending.head, Instant::now());
        loop {
            let now = heads.as_ref().and_then(|w| *w.borrow()).map(|h| h.number);
            let found = match (checked, now) {
                (Some(from), Some(to)) => self.in_blocks(&pending.hashes, from, to).await?,
                _ => Found::Unknown,
            };
            let receipt = match found {
                Found::Mined(receipt) => Some(*receipt),
                Found::Upto(n) => {
                    checked = Some(n);
                    None
                }
                Found::Unknown => {
                    tracing::debug!(?checked, ?now, tx = %pending.hash(), "receipt by hash");
                    checked = now;
                    self.by_hash(&pending.hashes).await?
                }
            };
            if let Some(receipt) = receipt {
                return settled(receipt);
            }
            // Once per head (or per `NONCE_CHECK` without heads): has the
            // account's nonce passed this one's?
            if drop_check.due(now, Instant::now()) {
                let mined = self.mined_nonce(pending.from, now).await?;
                // Read after the nonce: a version mined before the nonce
                // was read has its receipt by now.
                let gone = mined > pending.nonce
                    && match self.by_hash(&pending.hashes).await? {
                        Some(receipt) => return settled(receipt),
                        None => true,
                    };
                if drop_check.dropped(gone) {
                    tracing::warn!(
                        from = %pending.from,
                        nonce = pending.nonce,
                        mined,
                        tx = %pending.hash(),
                        "another transaction took this one's nonce: dropped"
                    );
                    return Err(dropped(&pending));
                }
            }
            if started.elapsed() > RECEIPT_TIMEOUT {
                return Err(ClientError::NotMined(pending.hash(), RECEIPT_TIMEOUT));
            }
            // Heads without it: priced out (the base fee rose over its fee
            // cap), or only waiting its turn behind other senders' (a node
            // that mines one transaction per block); only the first is
            // stuck. Any transaction still out after `STUCK_AFTER` is.
            let stuck = match &heads {
                Some(_) if since_send >= STUCK_HEADS => {
                    sent_at.elapsed() >= STUCK_AFTER || self.priced_out(&pending, now).await?
                }
                Some(_) => false,
                None => sent_at.elapsed() >= STUCK_AFTER,
            };
            if !stuck && since_send >= STUCK_HEADS {
                since_send = 0;
            }
            if stuck && pending.hashes.len() <= MAX_REPLACEMENTS {
                // Asked once by hash before anything is replaced: it may
                // have been mined since the blocks were read.
                if let Some(receipt) = self.by_hash(&pending.hashes).await? {
                    return settled(receipt);
                }
                self.replace(&mut pending).await;
                (since_send, sent_at) = (0, Instant::now());
            }
            match heads.as_mut() {
                Some(watch) => tokio::select! {
                    changed = watch.changed() => match changed {
                        Ok(()) => {
                            since_send += 1;
                            tokio::time::sleep(ANNOUNCED_SETTLE).await;
                        }
                        Err(_) => heads = None,
                    },
                    () = tokio::time::sleep(crate::heads::SUBSCRIBED_FALLBACK) => {}
                },
                None => {
                    tokio::time::sleep(poll).await;
                    poll = (poll * 2).min(RECEIPT_POLL);
                }
            }
        }
    }

    /// Forgets `from`'s count (a transaction of its was dropped, or sent
    /// from elsewhere): the next send reads the node's.
    pub async fn forget(&self, from: Address) {
        self.state.lock().await.nonces.remove(&from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nonce_is_read_once_per_head_after_the_send() {
        let t0 = Instant::now();
        let mut check = DropCheck::new(Some(10), t0);
        assert!(!check.due(Some(10), t0), "not at the head it was sent at");
        assert!(check.due(Some(11), t0), "at the next head");
        assert!(!check.due(Some(11), t0 + Duration::from_secs(60)), "once per head");
        assert!(check.due(Some(13), t0), "a head skipped is no matter");
        assert!(!check.due(Some(12), t0), "nor a lower head");
    }

    #[test]
    fn without_heads_the_nonce_is_read_once_per_interval() {
        let t0 = Instant::now();
        let mut check = DropCheck::new(None, t0);
        assert!(!check.due(None, t0 + NONCE_CHECK / 2));
        assert!(check.due(None, t0 + NONCE_CHECK));
        assert!(!check.due(None, t0 + NONCE_CHECK + NONCE_CHECK / 2));
        assert!(check.due(None, t0 + NONCE_CHECK * 2));
        // Heads announced later count from there on.
        assert!(check.due(Some(5), t0 + NONCE_CHECK * 2));
        assert!(!check.due(Some(5), t0 + NONCE_CHECK * 9));
    }

    #[test]
    fn dropped_only_when_two_reads_in_a_row_find_it_gone() {
        let mut check = DropCheck::new(Some(1), Instant::now());
        assert!(!check.dropped(false));
        assert!(!check.dropped(true), "once is not enough");
        assert!(check.dropped(true), "twice in a row is");
        let mut check = DropCheck::new(Some(1), Instant::now());
        assert!(!check.dropped(true));
        assert!(!check.dropped(false), "the chain went back: start over");
        assert!(!check.dropped(true));
        assert!(check.dropped(true));
    }

    #[test]
    fn a_dropped_transaction_names_its_nonce_and_every_version() {
        let e = ClientError::Dropped {
            nonce: 35,
            hashes: vec![TxHash::repeat_byte(1), TxHash::repeat_byte(2)],
        };
        let text = e.to_string();
        assert!(text.contains("nonce 35"), "{text}");
        assert!(text.contains(&TxHash::repeat_byte(2).to_string()), "{text}");
        assert!(e.is_dropped());
        let shared = std::sync::Arc::new(e);
        assert!(shared.share().is_dropped(), "copied for every caller of a shared transaction");
        assert!(ClientError::Shared(shared).is_dropped());
        assert!(!ClientError::Fenced.is_dropped());
    }
}
