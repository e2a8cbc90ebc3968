//! A typed escrow client: sends each lifecycle call from the right account,
//! waits for the receipt, decodes reverts, and folds the emitted events into the
//! caller's [`TaskRecord`] so the next call carries the exact state the
//! contract hashed.

use alloy::{
    contract::{CallBuilder, CallDecoder},
    network::{Ethereum, EthereumWallet},
    primitives::{Address, B256, TxHash, U256},
    providers::{DynProvider, Provider, ProviderBuilder},
    rpc::types::{Filter, Log, TransactionReceipt},
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use std::collections::HashMap;

use crate::{
    ITaskEscrow::{CreateParams, Task},
    MockUSDC,
    TaskEscrow::{self, TaskEscrowInstance},
    heads::HeadWatch,
    permit::{PermitSignature, TokenDomain, sign_permit},
    revert::{self, ContractRevert},
    sender::{Pending, Sender},
    task::{FoldError, TaskRecord, all_created_in, created_in, hash_task},
};

/// How many times [`EscrowClient::fetch`] re-reads a task whose logs and
/// stored hash disagree.
pub const FETCH_RETRIES: u32 = 5;

/// How long to wait for a sent transaction's receipt before giving up.
pub const RECEIPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Why an escrow call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The contract reverted with one of its declared errors (boxed: some
    /// carry several words, and every `Result` of a call carries this type).
    #[error("{0}")]
    Revert(Box<ContractRevert>),
    /// The call failed for another reason (transport, gas estimation, unknown revert).
    #[error("contract call failed: {0}")]
    Call(#[from] alloy::contract::Error),
    /// The transaction was sent but failed to confirm.
    #[error("transaction did not confirm: {0}")]
    Pending(#[from] alloy::providers::PendingTransactionError),
    /// The transaction was sent but not mined in time.
    #[error("transaction {0} not mined within {1:?}")]
    NotMined(TxHash, std::time::Duration),
    /// The transaction was mined but reverted.
    #[error("transaction {0} reverted")]
    Reverted(TxHash),
    /// The transaction was dropped: the account's mined nonce passed its
    /// nonce and none of its versions (the first and each replacement) was
    /// mined: another transaction took the nonce, and this one never will
    /// be. Nothing it would have done happened; whoever sent it reads the
    /// chain again and sends what is still to do.
    #[error(
        "transaction dropped: nonce {nonce} was taken by another transaction, and none of its versions ({}) was mined",
        hashes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    Dropped {
        /// The nonce it was sent with.
        nonce: u64,
        /// Every version sent, the first first.
        hashes: Vec<TxHash>,
    },
    /// An RPC request failed.
    #[error("rpc: {0}")]
    Rpc(#[from] alloy::transports::TransportError),
    /// The events did not fold into a valid task.
    #[error(transparent)]
    Fold(#[from] FoldError),
    /// A create transaction emitted no `TaskCreated`.
    #[error("transaction {0} created no task")]
    NoTaskCreated(TxHash),
    /// Signing a permit failed.
    #[error("signing permit: {0}")]
    Sign(#[from] alloy::signers::Error),
    /// Nothing sent: the sender's fence (a replica's lease) says this
    /// process may not send now.
    #[error("not sent: this process may not send for the account now (its lease is not held)")]
    Fenced,
    /// One transaction carried the calls of several callers and failed for
    /// all of them: each holds the same failure.
    #[error("{0}")]
    Shared(std::sync::Arc<ClientError>),
}

impl ClientError {
    /// The decoded contract error, if the failure was one.
    pub fn revert(&self) -> Option<&ContractRevert> {
        match self {
            Self::Revert(r) => Some(r),
            Self::Shared(e) => e.revert(),
            _ => None,
        }
    }

    /// Whether the transaction was dropped ([`ClientError::Dropped`]),
    /// for this caller or the transaction it shared.
    pub fn is_dropped(&self) -> bool {
        match self {
            Self::Dropped { .. } => true,
            Self::Shared(e) => e.is_dropped(),
            _ => false,
        }
    }

    /// This failure for one more caller of the transaction it happened to:
    /// the same error where it can be copied, else [`ClientError::Shared`].
    pub fn share(self: &std::sync::Arc<Self>) -> Self {
        match self.as_ref() {
            Self::Revert(r) => Self::Revert(r.clone()),
            Self::Reverted(h) => Self::Reverted(*h),
            Self::Dropped { nonce, hashes } => {
                Self::Dropped { nonce: *nonce, hashes: hashes.clone() }
            }
            Self::NotMined(h, d) => Self::NotMined(*h, *d),
            Self::NoTaskCreated(h) => Self::NoTaskCreated(*h),
            Self::Shared(e) => e.share(),
            _ => Self::Shared(std::sync::Arc::clone(self)),
        }
    }
}

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

/// The most tasks whose creation block a client keeps; past it the oldest
/// half is forgotten (a forgotten one is found again by scanning back).
const KEPT_BIRTHS: usize = 100_000;

/// What a client knows of where each task lives on chain.
#[derive(Debug, Clone, Default)]
struct Births(std::sync::Arc<std::sync::Mutex<HashMap<U256, Known>>>);

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

    /// The client approves and pays several delivered tasks in one transaction.
    pub async fn approve_many(
        &self,
        from: Address,
        recs: &mut [TaskRecord],
    ) -> Result<TransactionReceipt, ClientError> {
        let ids = recs.iter().map(|r| r.id).collect::<Vec<_>>();
        let tasks = recs.iter().map(|r| r.task.clone()).collect::<Vec<_>>();
        let receipt = self.submit(self.escrow.approvePayments(ids, tasks), from).await?;
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

    /// The client approves and pays.
    pub async fn approve(
        &self,
        from: Address,
        rec: &mut TaskRecord,
    ) -> Result<TransactionReceipt, ClientError> {
        self.step(from, rec, |e, id, task| e.approvePayment(id, task)).await
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

/// An HTTP provider that signs with `wallet`: its JSON-RPC calls retried on
/// transient failures ([`crate::retry`]) and every attempt counted by method
/// ([`crate::rpc_metrics`]), over [`crate::transport::HintedHttp`] (a 429
/// waits as long as its `Retry-After` asks). A call that gets no answer in
/// [`RPC_TIMEOUT`] (or no connection in [`CONNECT_TIMEOUT`]) fails, so a
/// hung provider is a transient failure like any other.
///
/// Nonces are read from the node's pending state for every transaction: a
/// cached nonce would be consumed by a call that fails gas estimation (a
/// revert), leaving a gap that stalls every later transaction of the account.
pub fn connect(url: alloy::transports::http::reqwest::Url, wallet: EthereumWallet) -> DynProvider {
    let client = alloy::rpc::client::ClientBuilder::default()
        .layer(crate::retry::RetryLayer::default())
        .layer(crate::rpc_metrics::RpcMetricsLayer)
        .transport(
            crate::transport::HintedHttp::new(http_client(), url.clone()),
            alloy::transports::utils::guess_local_url(&url),
        );
    ProviderBuilder::new()
        .disable_recommended_fillers()
        .with_gas_estimation()
        .with_simple_nonce_management()
        .fetch_chain_id()
        .wallet(wallet)
        .connect_client(client)
        .erased()
}

/// How long a JSON-RPC call may wait for its answer.
pub const RPC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a connection to the provider may take to open.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

fn http_client() -> alloy::transports::http::reqwest::Client {
    alloy::transports::http::reqwest::Client::builder()
        .timeout(RPC_TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        // Only a TLS backend that fails to initialise stops the builder;
        // the default client fails the same way.
        .unwrap_or_default()
}

/// Turns a contract error into a typed revert when it is one of ours.
pub fn map_call(err: alloy::contract::Error) -> ClientError {
    match revert::decode(&err) {
        Some(r) => ClientError::Revert(Box::new(r)),
        None => ClientError::Call(err),
    }
}

/// A readiness check for `/readyz`: the node answers `eth_blockNumber`
/// (the error as text otherwise). Every service's chain check is this one.
pub fn chain_ready(
    provider: DynProvider,
) -> impl Fn() -> futures_util::future::BoxFuture<'static, Result<(), String>> + Send + Sync + 'static
{
    move || {
        let provider = provider.clone();
        Box::pin(
            async move { provider.get_block_number().await.map(drop).map_err(|e| e.to_string()) },
        )
    }
}
