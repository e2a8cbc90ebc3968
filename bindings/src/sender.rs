//! Sends an account's transactions back to back: while a block subscription
//! is live, nonces are assigned here (read from the node once, then counted)
//! and fees are estimated once per announced head, so a transaction costs a
//! gas estimate and a send, and several go out before the first is mined.
//! A failed send, a transaction not mined in time and a head lower than the
//! last (a reorganization) forget the count, so the next send reads the
//! node's again; so does a restart. Without a subscription the node's count
//! is read for every transaction.

use std::collections::HashMap;

use alloy::{
    contract::{CallBuilder, CallDecoder},
    network::Ethereum,
    primitives::{Address, TxHash},
    providers::{DynProvider, Provider, utils::Eip1559Estimation},
};
use tokio::sync::Mutex;

use crate::{
    client::{ClientError, map_call},
    heads::HeadWatch,
};

#[derive(Debug, Default)]
struct State {
    /// The next nonce of each account, once known.
    nonces: HashMap<Address, u64>,
    /// The fees estimated at a head.
    fees: Option<(u64, Eip1559Estimation)>,
    /// The newest head seen.
    head: u64,
}

/// Sends transactions for the accounts of one provider's wallet; clones
/// share the counts.
#[derive(Debug, Clone)]
pub struct Sender {
    provider: DynProvider,
    state: std::sync::Arc<Mutex<State>>,
}

impl Sender {
    /// A sender over `provider`, whose wallet signs.
    pub fn new(provider: DynProvider) -> Self {
        Self { provider, state: std::sync::Arc::default() }
    }

    /// Sends `call` from `from` and returns its hash once the node took it,
    /// without waiting for it to be mined. Sends are serialized (the nonce
    /// is counted here); `heads`, when live, lets the fee estimate serve
    /// every transaction of a block. A revert foreseen by the gas estimate
    /// comes back decoded, and nothing is sent.
    pub async fn send<D: CallDecoder + Clone + Unpin>(
        &self,
        call: CallBuilder<&DynProvider, D, Ethereum>,
        from: Address,
        heads: Option<&HeadWatch>,
    ) -> Result<TxHash, ClientError> {
        let mut st = self.state.lock().await;
        let head = heads.and_then(|w| *w.borrow()).map(|h| h.number);
        let fees = match (st.fees, head) {
            (Some((at, fees)), Some(now)) if at == now => fees,
            _ => {
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
            None => self.provider.get_transaction_count(from).pending().await?,
        };
        let sent = match call.clone().nonce(nonce).send().await.map_err(map_call) {
            // The count went stale (the account also sent elsewhere): once
            // more with the node's.
            Err(ClientError::Call(_)) if counted.is_some() => {
                let nonce = self.provider.get_transaction_count(from).pending().await?;
                call.nonce(nonce).send().await.map_err(map_call).map(|p| (p, nonce))
            }
            other => other.map(|p| (p, nonce)),
        };
        match sent {
            Ok((pending, nonce)) => {
                st.nonces.insert(from, nonce + 1);
                Ok(*pending.tx_hash())
            }
            // A foreseen revert sent nothing: the count stands.
            Err(e @ ClientError::Revert(_)) => Err(e),
            Err(e) => {
                st.nonces.remove(&from);
                Err(e)
            }
        }
    }

    /// Forgets `from`'s count (a transaction of its was dropped, or sent
    /// from elsewhere): the next send reads the node's.
    pub async fn forget(&self, from: Address) {
        self.state.lock().await.nonces.remove(&from);
    }
}
