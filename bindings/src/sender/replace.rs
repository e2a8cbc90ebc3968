//! A stuck transaction sent again with the same nonce at a higher fee.

use alloy::{network::TransactionBuilder, providers::Provider};

use super::{BUMP_PERCENT, Pending, Sender};

impl Sender {
    /// Sends `pending` again with the same nonce at a higher fee. A refused
    /// replacement is logged and the wait goes on: a version may have been
    /// mined meanwhile (the node then refuses the nonce as too low).
    pub(super) async fn replace(&self, pending: &mut Pending) {
        if !self.may_send() {
            tracing::warn!(tx = %pending.hash(), "stuck, and sending is fenced off: not replaced");
            return;
        }
        let fresh = match self.provider.estimate_eip1559_fees().await {
            Ok(fees) => fees,
            Err(e) => {
                tracing::warn!(tx = %pending.hash(), error = %e, "no fee estimate for a replacement");
                return;
            }
        };
        let bump = |old: Option<u128>, fresh: u128| {
            let old = old.unwrap_or_default();
            (old + old * BUMP_PERCENT / 100 + 1).max(fresh)
        };
        let mut request = pending.request.clone();
        // The original's gas limit: estimated again, the call would run
        // against the pending state, where the original has already done
        // what it does (and a call on a task's state then reverts).
        if request.gas.is_none() {
            match self.provider.get_transaction_by_hash(pending.hash()).await {
                Ok(Some(tx)) => {
                    request.set_gas_limit(alloy::consensus::Transaction::gas_limit(&tx))
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(tx = %pending.hash(), error = %e, "reading a stuck transaction");
                    return;
                }
            }
        }
        let max_fee = bump(request.max_fee_per_gas, fresh.max_fee_per_gas);
        let tip = bump(request.max_priority_fee_per_gas, fresh.max_priority_fee_per_gas);
        request.set_max_fee_per_gas(max_fee);
        request.set_max_priority_fee_per_gas(tip.min(max_fee));
        // The fence again: the fee estimate and the lookup took time.
        if !self.may_send() {
            tracing::warn!(tx = %pending.hash(), "stuck, and sending is fenced off: not replaced");
            return;
        }
        match self.provider.send_transaction(request.clone()).await {
            Ok(sent) => {
                tracing::info!(
                    stuck = %pending.hash(),
                    replacement = %sent.tx_hash(),
                    max_fee,
                    "transaction not mined; replaced at a higher fee"
                );
                pending.hashes.push(*sent.tx_hash());
                pending.request = request;
            }
            Err(e) => {
                tracing::warn!(tx = %pending.hash(), error = %e, "replacement refused; waiting on")
            }
        }
    }
}
