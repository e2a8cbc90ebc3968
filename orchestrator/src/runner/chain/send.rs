//! The transactions a step sends as the sponsor: through the [`Sender`],
//! which counts the sponsor's nonces (a transaction is not waited for
//! before the next goes out), then confirmed by the heads the runner
//! follows; a person's decision sent again when its block was replaced.

use alloy::{
    contract::{CallBuilder, CallDecoder},
    network::Ethereum,
    primitives::{Address, B256, U256},
    providers::{DynProvider, Provider},
    rpc::types::TransactionReceipt,
};
#[cfg(doc)]
use tessera_bindings::sender::Sender;
use tessera_bindings::{
    ITaskEscrow::CreateParams,
    MockUSDC, ReputationRegistry,
    client::{ClientError, map_call},
    task::{FULL_RATING, TaskRecord},
};

use super::{Chain, RunError, Sent};
use crate::runner::step::Call;

/// Most times a decision's transaction is sent again after reorganisations.
const MAX_RESENDS: u32 = 3;

impl Chain {
    /// Forgets the sponsor's nonce count: the next send reads the node's
    /// (another replica sent for this sponsor meanwhile).
    pub(crate) async fn forget_nonces(&self) {
        self.sender.forget(self.sponsor).await;
    }

    /// Sends (and replaces stuck transactions) only while `may_send` says
    /// so: a replica's lease (see [`tessera_bindings::sender::Sender::fence`]).
    pub(crate) fn fence_sends(&self, may_send: impl Fn() -> bool + Send + Sync + 'static) {
        self.sender.fence(may_send);
    }

    /// Lets the escrow pull the sponsor's tokens for creations from now on,
    /// when it may not already: one standing allowance instead of a permit
    /// per creation, so creations of many runs can go out in one block
    /// (permits of one signer are ordered by the token's nonce and would
    /// invalidate each other). The escrow only ever pulls from the caller of
    /// a creation, so the allowance serves the sponsor's own creations only.
    pub async fn ensure_allowance(&self) -> Result<(), RunError> {
        let token = MockUSDC::new(self.deployment.token, self.provider.clone());
        let escrow = self.deployment.task_escrow;
        let current = token.allowance(self.sponsor, escrow).call().await.map_err(map_call)?;
        if current >= U256::MAX >> 1 {
            return Ok(());
        }
        let approve = token.approve(escrow, U256::MAX);
        let sent = self.dispatch(approve).await?;
        self.confirm(sent).await?;
        tracing::info!(%escrow, "sponsor allowance set for creations");
        Ok(())
    }

    /// Sends `call` from the sponsor without waiting for it to be mined (the
    /// sender counts the nonce, so sends of many runs go out back to back).
    pub(super) async fn dispatch<D: CallDecoder + Clone + Unpin>(
        &self,
        call: CallBuilder<&DynProvider, D, Ethereum>,
    ) -> Result<Sent, ClientError> {
        let heads = self.heads.get().and_then(|w| w.as_ref());
        Ok(Sent(self.sender.send(call, self.sponsor, heads).await?))
    }

    /// Gives ERC-8004 feedback from the sponsor in the deployment's
    /// reputation registry (see [`tessera_bindings::feedback`]) and waits
    /// for it to be mined.
    pub(crate) async fn give_feedback(
        &self,
        registry: Address,
        agent_id: U256,
        value: i128,
        tag2: &str,
        uri: String,
        hash: B256,
    ) -> Result<TransactionReceipt, ClientError> {
        let reputation = ReputationRegistry::new(registry, self.provider.clone());
        let call = reputation.giveFeedback(
            agent_id,
            value,
            0,
            tessera_bindings::feedback::TAG.to_owned(),
            tag2.to_owned(),
            String::new(),
            uri,
            hash,
        );
        let sent = self.dispatch(call).await?;
        self.confirm(sent).await
    }

    /// Waits for `sent` to be mined, by the heads the runner follows; a
    /// mined revert is an error.
    pub(crate) async fn confirm(&self, sent: Sent) -> Result<TransactionReceipt, ClientError> {
        let heads = self.heads.get().and_then(|w| w.clone());
        // Replaced at a higher fee if stuck; forgets the nonce count if
        // never mined.
        let receipt = self.sender.mined(sent.0, heads).await?;
        self.absorb(&receipt).await;
        Ok(receipt)
    }

    /// Sends the approvals of every task of `recs` (one call for several,
    /// grouped by executor: the escrow pays each run of one executor in one
    /// transfer), each rated [`FULL_RATING`]: the runner approves what it
    /// pays in full; returns without waiting for them to be mined.
    pub(crate) async fn approve_all(&self, recs: &[&TaskRecord]) -> Result<Sent, ClientError> {
        let c = self.escrow.contract();
        match recs {
            [rec] => self.dispatch(c.approvePayment(rec.id, rec.task.clone(), FULL_RATING)).await,
            _ => {
                let mut recs = recs.to_vec();
                recs.sort_by_key(|r| r.task.executor);
                let ids = recs.iter().map(|r| r.id).collect();
                let tasks = recs.iter().map(|r| r.task.clone()).collect();
                let ratings = vec![FULL_RATING; recs.len()];
                self.dispatch(c.approvePayments(ids, tasks, ratings)).await
            }
        }
    }

    /// Sends the creation of every task of `params` in one call, without
    /// waiting for it to be mined (see [`crate::runner::wave`], which looks for the
    /// tasks first, under the lane's lock).
    pub(crate) async fn create_all(
        &self,
        mut params: Vec<CreateParams>,
    ) -> Result<Sent, ClientError> {
        let c = self.escrow.contract();
        if params.len() == 1 {
            let one = params.pop().expect("one item");
            self.dispatch(c.createTask(one)).await
        } else {
            self.dispatch(c.createTasks(params)).await
        }
    }

    /// Runs the creation of `params` against the newest block without
    /// sending it: `Ok` when the escrow would take it now, else its revert
    /// (decoded when it is one of ours).
    pub(crate) async fn simulate_create(&self, params: CreateParams) -> Result<(), ClientError> {
        let c = self.escrow.contract();
        c.createTask(params).from(self.sponsor).call().await.map(drop).map_err(map_call)
    }

    /// Sends `call` on the task `rec` as the sponsor and waits for it to be
    /// mined. `uri` is the published reason of a dispute or an appeal. A
    /// revert comes back as [`ClientError::Revert`] with the decoded error.
    pub(crate) async fn send(
        &self,
        rec: &TaskRecord,
        call: &Call,
        uri: Option<String>,
    ) -> Result<(), ClientError> {
        self.send_once(rec, call, uri).await.map(drop)
    }

    /// [`Chain::send`], for a person's decision: on a chain that
    /// reorganises (confirmations asked), returns only once the
    /// transaction has that many blocks on top, sending it again when its
    /// block was replaced without it meanwhile (the task is then where it
    /// was before, so the same call applies); how many times it was sent
    /// again. A decision's effect is not
    /// told by a settlement the runner re-reads (a reassignment, a dispute,
    /// an appeal), so its sender sees it through.
    pub(crate) async fn send_deep(
        &self,
        rec: &TaskRecord,
        call: &Call,
        uri: Option<String>,
    ) -> Result<u32, ClientError> {
        let confirmations = self.book.lock().await.confirmations;
        let mut receipt = self.send_once(rec, call, uri.clone()).await?;
        if confirmations == 0 {
            return Ok(0);
        }
        for resent in 0..MAX_RESENDS {
            let block = receipt.block_number.unwrap_or_default();
            self.wait_for(block + confirmations).await?;
            let hash = receipt.transaction_hash;
            if self.provider.get_transaction_receipt(hash).await?.is_some() {
                return Ok(resent);
            }
            tracing::warn!(tx = %hash, block, ?call, "a decision's transaction was reorganised out; sending it again");
            self.forget_nonces().await;
            receipt = self.send_once(rec, call, uri.clone()).await?;
        }
        Ok(MAX_RESENDS)
    }

    /// Waits until the newest head is at least `block`.
    async fn wait_for(&self, block: u64) -> Result<(), ClientError> {
        loop {
            let newest = match self.head().await {
                Ok(head) => head.number,
                Err(_) => self.provider.get_block_number().await?,
            };
            if newest >= block {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }

    /// Sends `call` on `rec` and waits for it to be mined; its receipt.
    async fn send_once(
        &self,
        rec: &TaskRecord,
        call: &Call,
        uri: Option<String>,
    ) -> Result<TransactionReceipt, ClientError> {
        let c = self.escrow.contract();
        let (id, task) = (rec.id, rec.task.clone());
        let uri = uri.unwrap_or_default();
        let sent = match call {
            Call::Approve => self.dispatch(c.approvePayment(id, task, FULL_RATING)).await,
            Call::Release => self.dispatch(c.releasePayment(id, task)).await,
            Call::Cancel => self.dispatch(c.cancelTask(id, task)).await,
            Call::RefundExpired => self.dispatch(c.refundExpired(id, task)).await,
            Call::ClaimDefault => self.dispatch(c.claimDisputeDefault(id, task)).await,
            Call::Dispute(_) => self.dispatch(c.disputeTask(id, task, uri)).await,
            Call::Appeal(_) => self.dispatch(c.appealRuling(id, task, uri)).await,
            Call::Reassign { executor, deadline } => {
                let deadline = alloy::primitives::aliases::U40::from(*deadline);
                let call = c.reassignTask(id, task, *executor, deadline, rec.capability);
                self.dispatch(call).await
            }
        }?;
        self.confirm(sent).await
    }
}
