//! A typed escrow client: sends each lifecycle call from the right account,
//! waits for the receipt, decodes reverts, and folds the emitted events into the
//! caller's [`TaskRecord`] so the next call carries the exact state the
//! contract hashed.

use alloy::{
    contract::{CallBuilder, CallDecoder},
    network::Ethereum,
    primitives::{Address, B256, U256},
    providers::DynProvider,
    rpc::types::TransactionReceipt,
    signers::local::PrivateKeySigner,
};

use crate::{
    ITaskEscrow::{CreateParams, Task},
    MockUSDC,
    TaskEscrow::{self, TaskEscrowInstance},
    heads::HeadWatch,
    permit::{PermitSignature, TokenDomain, sign_permit},
    sender::{Pending, Sender},
    task::{FULL_RATING, TaskRecord, all_created_in, created_in},
};

mod connect;
mod error;
mod read;

pub use connect::{CONNECT_TIMEOUT, RPC_TIMEOUT, chain_ready, connect};
pub use error::{ClientError, map_call};
use read::Births;
pub use read::FETCH_RETRIES;

/// How long to wait for a sent transaction's receipt before giving up.
pub const RECEIPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// How often a transaction's receipt is asked for when no block
/// subscription announces new heads.
pub const RECEIPT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Sends escrow calls through a provider whose wallet holds the callers' keys.
#[derive(Debug, Clone)]
pub struct EscrowClient {
    provider: DynProvider,
    escrow: TaskEscrowInstance<DynProvider>,
    heads: Option<HeadWatch>,
    sender: Sender,
    /// Blocks per `eth_getLogs`, learnt from the provider's refusals.
    range: crate::logs::SharedRange,
    /// Where tasks were created (or last seen), so a task's logs are read
    /// from its creation, not from the deployment.
    births: Births,
}

impl EscrowClient {
    /// A client for the escrow at `escrow`.
    pub fn new(provider: DynProvider, escrow: Address) -> Self {
        Self {
            escrow: TaskEscrow::new(escrow, provider.clone()),
            sender: Sender::new(provider.clone()),
            provider,
            heads: None,
            range: crate::logs::SharedRange::default(),
            births: Births::default(),
        }
    }

    /// Confirms transactions by the heads announced on `heads` (see
    /// [`Sender::mined`]) instead of polling for receipts.
    pub fn follow(&mut self, heads: Option<HeadWatch>) {
        self.heads = heads;
    }

    /// The escrow's address.
    pub fn address(&self) -> Address {
        *self.escrow.address()
    }

    /// The contract instance, for calls this client does not wrap.
    pub fn contract(&self) -> &TaskEscrowInstance<DynProvider> {
        &self.escrow
    }

    /// Creates a task funded from `from`'s prior token approval.
    pub async fn create(
        &self,
        from: Address,
        params: CreateParams,
    ) -> Result<(TaskRecord, TransactionReceipt), ClientError> {
        let receipt = self.submit(self.escrow.createTask(params), from).await?;
        let record = created_in(self.address(), &receipt)
            .ok_or(ClientError::NoTaskCreated(receipt.transaction_hash))?;
        Ok((record, receipt))
    }

    /// Creates a task in one transaction with a permit signed by `signer`.
    pub async fn create_with_permit(
        &self,
        signer: &PrivateKeySigner,
        domain: &TokenDomain,
        params: CreateParams,
        permit_deadline: U256,
    ) -> Result<(TaskRecord, TransactionReceipt), ClientError> {
        let token = MockUSDC::new(domain.token, &self.provider);
        let nonce = token.nonces(signer.address()).call().await.map_err(self::map_call)?;
        let PermitSignature { deadline, v, r, s } = sign_permit(
            signer,
            domain,
            self.address(),
            U256::from(params.amount),
            nonce,
            permit_deadline,
        )?;
        let call = self.escrow.createTaskWithPermit(params, deadline, v, r, s);
        let receipt = self.submit(call, signer.address()).await?;
        let record = created_in(self.address(), &receipt)
            .ok_or(ClientError::NoTaskCreated(receipt.transaction_hash))?;
        Ok((record, receipt))
    }

    /// Creates a batch of tasks funded from `from`'s prior token approval:
    /// one transaction and one token transfer for their sum. The records come
    /// back in the order of `params`.
    pub async fn create_many(
        &self,
        from: Address,
        params: Vec<CreateParams>,
    ) -> Result<(Vec<TaskRecord>, TransactionReceipt), ClientError> {
        let n = params.len();
        let receipt = self.submit(self.escrow.createTasks(params), from).await?;
        let records = all_created_in(self.address(), &receipt);
        if records.len() != n {
            return Err(ClientError::NoTaskCreated(receipt.transaction_hash));
        }
        Ok((records, receipt))
    }

    /// Creates a batch of tasks in one transaction with one permit, signed by
    /// `signer`, for the batch's sum.
    pub async fn create_many_with_permit(
        &self,
        signer: &PrivateKeySigner,
        domain: &TokenDomain,
        params: Vec<CreateParams>,
        permit_deadline: U256,
    ) -> Result<(Vec<TaskRecord>, TransactionReceipt), ClientError> {
        let n = params.len();
        let sum: U256 = params.iter().map(|p| U256::from(p.amount)).sum();
        let token = MockUSDC::new(domain.token, &self.provider);
        let nonce = token.nonces(signer.address()).call().await.map_err(self::map_call)?;
        let PermitSignature { deadline, v, r, s } =
            sign_permit(signer, domain, self.address(), sum, nonce, permit_deadline)?;
        let call = self.escrow.createTasksWithPermit(params, deadline, v, r, s);
        let receipt = self.submit(call, signer.address()).await?;
        let records = all_created_in(self.address(), &receipt);
        if records.len() != n {
            return Err(ClientError::NoTaskCreated(receipt.transaction_hash));
        }
        Ok((records, receipt))
    }

    /// The executor accepts and delivers in one call (work done before it was accepted).
    pub async fn deliver(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        result_uri: &str,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.deliver(id, task, result_uri.to_owned())).await
    }

    /// Sends the executor's delivery of `rec` (from Created: [`Self::deliver`];
    /// from Accepted: [`Self::complete`]) without waiting for it to be
    /// mined, so several deliveries go out in one block; [`Self::mined`]
    /// waits for it and [`TaskRecord::apply_receipt`] folds it in.
    pub async fn send_delivery(
        &self,
        from: Address,
        rec: &TaskRecord,
        result_uri: &str,
    ) -> Result<Pending, ClientError> {
        let (id, task, uri) = (rec.id, rec.task.clone(), result_uri.to_owned());
        if rec.status() == crate::task::Status::Accepted {
            self.sender
                .send(self.escrow.completeTask(id, task, uri), from, self.heads.as_ref())
                .await
        } else {
            self.sender.send(self.escrow.deliver(id, task, uri), from, self.heads.as_ref()).await
        }
    }

    /// Waits for a sent transaction to be mined, replacing it at a higher
    /// fee if it is stuck (see [`Sender::mined`]).
    pub async fn mined(&self, pending: Pending) -> Result<TransactionReceipt, ClientError> {
        self.sender.mined(pending, self.heads.clone()).await
    }

    /// The client approves and pays several delivered tasks in one
    /// transaction, rating each [`FULL_RATING`].
    pub async fn approve_many(
        &self,
        from: Address,
        recs: &mut [TaskRecord],
    ) -> Result<TransactionReceipt, ClientError> {
        let ids = recs.iter().map(|r| r.id).collect::<Vec<_>>();
        let tasks = recs.iter().map(|r| r.task.clone()).collect::<Vec<_>>();
        let ratings = vec![FULL_RATING; recs.len()];
        let receipt = self.submit(self.escrow.approvePayments(ids, tasks, ratings), from).await?;
        for rec in recs.iter_mut() {
            rec.apply_receipt(self.address(), &receipt)?;
        }
        Ok(receipt)
    }

    /// The executor accepts.
    pub async fn accept(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.acceptTask(id, task)).await
    }

    /// The executor delivers `result_uri`.
    pub async fn complete(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        result_uri: &str,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.completeTask(id, task, result_uri.to_owned())).await
    }

    /// The client approves and pays, rating the work [`FULL_RATING`].
    pub async fn approve(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.approve_rated(from, rec, FULL_RATING).await
    }

    /// The client approves and pays, rating the work `rating` percent (at
    /// most [`MAX_RATING`](crate::task::MAX_RATING): the escrow refuses more).
    pub async fn approve_rated(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        rating: u8,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.approvePayment(id, task, rating)).await
    }

    /// Anyone releases payment after the review window.
    pub async fn release(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.releasePayment(id, task)).await
    }

    /// The client disputes with a reason URI.
    pub async fn dispute(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        reason_uri: &str,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.disputeTask(id, task, reason_uri.to_owned())).await
    }

    /// The arbiter rules: `executor_share_bps` of the amount to the executor.
    pub async fn resolve(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        executor_share_bps: u16,
        rationale_uri: &str,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| {
            e.resolveDispute(id, task, executor_share_bps, rationale_uri.to_owned())
        })
        .await
    }

    /// The client or the executor appeals a ruling.
    pub async fn appeal(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        reason_uri: &str,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.appealRuling(id, task, reason_uri.to_owned())).await
    }

    /// The appeal arbiter rules, finally.
    pub async fn resolve_appeal(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        executor_share_bps: u16,
        rationale_uri: &str,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| {
            e.resolveAppeal(id, task, executor_share_bps, rationale_uri.to_owned())
        })
        .await
    }

    /// Anyone settles a ruling that stands.
    pub async fn finalize(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.finalizeRuling(id, task)).await
    }

    /// Anyone refunds a dispute left unruled past its window.
    pub async fn claim_default(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.claimDisputeDefault(id, task)).await
    }

    /// Anyone refunds a task past its deadline.
    pub async fn refund_expired(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.refundExpired(id, task)).await
    }

    /// The client cancels before acceptance.
    pub async fn cancel(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.cancelTask(id, task)).await
    }

    /// The executor says no: the task (Created, or Accepted before its
    /// deadline) ends Declined and its funder is refunded in the same call.
    /// `reason_uri` says why (a `data:` or `sha256:` URI of
    /// `{"reason": "..."}`); only the event carries it. The receipt's
    /// `TaskDeclined` and `TaskSettled` are folded into `rec`.
    pub async fn decline(
        &self,
        me: Address,
        rec: &mut TaskRecord,
        reason_uri: &str,
    ) -> Result<(), ClientError> {
        self.step(me, rec, |e, id, task| e.declineTask(id, task, reason_uri.to_owned())).await?;
        Ok(())
    }

    /// Sends the executor's decline of `rec` without waiting for it to be
    /// mined; [`Self::mined`] waits for it and [`TaskRecord::apply_receipt`]
    /// folds it in.
    pub async fn send_decline(
        &self,
        me: Address,
        rec: &TaskRecord,
        reason_uri: &str,
    ) -> Result<Pending, ClientError> {
        let call = self.escrow.declineTask(rec.id, rec.task.clone(), reason_uri.to_owned());
        self.sender.send(call, me, self.heads.as_ref()).await
    }

    /// The client re-routes the task to another executor.
    pub async fn reassign(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        new_executor: Address,
        new_deadline: u64,
        capability: B256,
    ) -> Result<TransactionReceipt, ClientError> {
        let deadline = alloy::primitives::aliases::U40::from(new_deadline);
        self.step(from, rec, |e, id, task| {
            e.reassignTask(id, task, new_executor, deadline, capability)
        })
        .await
    }

    /// Builds a call from the task's id and current state, sends it from `from`,
    /// and folds the receipt's events into `rec`.
    async fn step<D, F>(
        &self,
        from: Address,
        rec: &mut TaskRecord,
        build: F,
    ) -> Result<TransactionReceipt, ClientError>
    where
        D: CallDecoder + Clone + Unpin,
        F: for<'a> FnOnce(
            &'a TaskEscrowInstance<DynProvider>,
            U256,
            Task,
        ) -> CallBuilder<&'a DynProvider, D, Ethereum>,
    {
        let call = build(&self.escrow, rec.id, rec.task.clone());
        let receipt = self.submit(call, from).await?;
        rec.apply_receipt(self.address(), &receipt)?;
        Ok(receipt)
    }

    /// Sends any call (a token approval, say) from `from` through this
    /// client's sender, so it takes its place in the nonces the sender
    /// counts, and waits for it to be mined.
    pub async fn transact<D: CallDecoder + Clone + Unpin>(
        &self,
        call: CallBuilder<&DynProvider, D, Ethereum>,
        from: Address,
    ) -> Result<TransactionReceipt, ClientError> {
        self.submit(call, from).await
    }

    async fn submit<D: CallDecoder + Clone + Unpin>(
        &self,
        call: CallBuilder<&DynProvider, D, Ethereum>,
        from: Address,
    ) -> Result<TransactionReceipt, ClientError> {
        let pending = self.sender.send(call, from, self.heads.as_ref()).await?;
        self.mined(pending).await
    }
}
