//! The chain side of the runner: the sponsor's account and contracts, the
//! reads every step starts from, and the transactions a step sends through
//! the sponsor's [`Sender`], which counts its nonces: a transaction is not
//! waited for before the next is sent, so several — of one run or of many
//! — go out back to back and land in the same block.

use std::collections::HashSet;

use alloy::{
    contract::{CallBuilder, CallDecoder},
    eips::BlockNumberOrTag,
    network::Ethereum,
    primitives::{Address, B256, U256, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::{Filter, Log, TransactionReceipt},
    signers::local::PrivateKeySigner,
    sol_types::SolValue,
};
use tessera_bindings::{
    AgentRegistry,
    ITaskEscrow::CreateParams,
    MockUSDC, ReputationRegistry, TaskEscrow, capability,
    client::{ClientError, EscrowClient, map_call},
    deployment::Deployment,
    heads::{Head, HeadWatch},
    offers,
    sender::{Pending, Sender},
    task::{TaskRecord, decode_log},
    usdc::Usdc,
};
use tokio::sync::Mutex;

use super::{RunError, book::Book, step::Call};
use crate::plan::{ExecutorStatus, InMemoryContext, Plan};

/// The chain side of the orchestrator: the sponsor's account and contracts.
pub struct Chain {
    provider: DynProvider,
    sponsor: Address,
    deployment: Deployment,
    escrow: EscrowClient,
    /// Held from the look for a wave's tasks to the send of their creation,
    /// so two waves never both create.
    pub(super) lane: Mutex<()>,
    /// The runs' parts of the next wave (see [`super::wave`]).
    pub(super) waves: std::sync::Mutex<super::wave::Waves>,
    /// The heads the runner follows, once it does.
    heads: std::sync::OnceLock<Option<HeadWatch>>,
    /// The escrow's logs of the sponsor's tasks.
    book: Mutex<Book>,
    /// Counts the sponsor's nonces and shares a block's fee estimate.
    sender: Sender,
    /// Registry and balance reads at the newest head, shared by every
    /// proposal and approval at that head.
    reads: std::sync::Mutex<Reads>,
    /// The node mines each transaction at once (a development chain's
    /// automine), as it says when asked at start.
    pub(super) automine: bool,
    /// The escrow's largest batch (`MAX_BATCH`), read at start.
    pub(super) max_batch: usize,
}

/// What was read at one head (the chain's state does not change within it).
#[derive(Debug, Default)]
struct Reads {
    head: Option<u64>,
    /// Whether any agent offers a capability.
    listed: std::collections::HashMap<B256, bool>,
    /// An agent's status and offers.
    agents: std::collections::HashMap<Address, (ExecutorStatus, Vec<(String, Usdc)>)>,
    /// Token balances.
    balances: std::collections::HashMap<Address, U256>,
}

/// Most times a decision's transaction is sent again after reorganisations.
const MAX_RESENDS: u32 = 3;

/// A transaction sent and not yet confirmed; [`Chain::confirm`] waits for it.
#[must_use = "a sent transaction is not done until it is confirmed"]
pub(crate) struct Sent(pub(super) Pending);

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("sponsor", &self.sponsor)
            .field("escrow", &self.deployment.task_escrow)
            .finish_non_exhaustive()
    }
}

/// What a settled task paid out, read from its `TaskSettled` log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settlement {
    /// To the executor.
    pub paid: Usdc,
    /// Back to the funder.
    pub refunded: Usdc,
}

impl Chain {
    /// The chain handle for `signer` (the sponsor, who is also the client)
    /// over `provider`, whose wallet must hold the same key. Sets the
    /// sponsor's standing allowance for creations (see
    /// [`Chain::ensure_allowance`]) when it is not set yet.
    pub async fn new(
        provider: DynProvider,
        signer: PrivateKeySigner,
        deployment: Deployment,
    ) -> Result<Self, RunError> {
        // Only development nodes answer; any other chain has block time.
        let automine =
            provider.raw_request::<_, bool>("anvil_getAutomine".into(), ()).await.unwrap_or(false);
        tracing::debug!(automine, "chain mining mode");
        let escrow = EscrowClient::new(provider.clone(), deployment.task_escrow);
        let max_batch = escrow.contract().MAX_BATCH().call().await.map_err(map_call)?;
        let max_batch = usize::try_from(max_batch).unwrap_or(usize::MAX).clamp(1, 1_024);
        let chain = Self {
            automine,
            max_batch,
            escrow,
            sender: Sender::new(provider.clone()),
            sponsor: signer.address(),
            provider,
            deployment,
            lane: Mutex::new(()),
            waves: std::sync::Mutex::default(),
            heads: std::sync::OnceLock::new(),
            book: Mutex::new(Book::default()),
            reads: std::sync::Mutex::default(),
        };
        chain.ensure_allowance().await?;
        Ok(chain)
    }

    /// The sponsor's address.
    pub fn sponsor(&self) -> Address {
        self.sponsor
    }

    /// The deployment.
    pub fn deployment(&self) -> &Deployment {
        &self.deployment
    }

    /// The provider.
    pub fn provider(&self) -> &DynProvider {
        &self.provider
    }

    /// The reference of sub-task `index`, attempt `attempt`, of `plan`.
    pub fn reference(plan: B256, index: u32, attempt: u32) -> B256 {
        keccak256((plan, index, attempt).abi_encode())
    }

    /// The escrow task id the sponsor's reference maps to.
    pub fn task_id(&self, reference: B256) -> U256 {
        U256::from_be_bytes(keccak256((self.sponsor, reference).abi_encode()).0)
    }

    /// The newest block: announced by the subscription the runner follows,
    /// or asked of the node when none is live.
    pub(crate) async fn head(&self) -> Result<Head, RunError> {
        if let Some(h) = self.heads.get().and_then(|w| w.as_ref()).and_then(|w| *w.borrow()) {
            return Ok(h);
        }
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Latest).await?;
        Ok(block
            .map(|b| Head { number: b.header.number, timestamp: b.header.timestamp })
            .unwrap_or(Head { number: 0, timestamp: 0 }))
    }

    /// Starts (or re-starts) reading the escrow's logs at `block`: a run
    /// approved there, or resumed from there, has all its tasks' logs read.
    pub(crate) async fn read_from(&self, block: u64) {
        let mut book = self.book.lock().await;
        let floor = block.max(self.deployment.deploy_block).saturating_sub(1);
        if book.cursor.is_none_or(|c| c > floor) {
            book.cursor = Some(floor);
        }
    }

    /// Reads the escrow's logs from the cursor to `head`, in ranges the
    /// provider accepts ([`tessera_bindings::logs::LogRange`]), keeping those of the sponsor's tasks:
    /// one request per new block for every run at once. The newest
    /// `confirmations + 1` blocks are read again next time (a node may
    /// announce a block a moment before serving its logs, and a chain may
    /// replace its newest blocks); a log read twice is kept once. What a
    /// read of blocks below the head does not return was reorganised out
    /// and is dropped (see [`Book`]); the sponsor's nonce count goes with it. A head lower
    /// than the last (the chain went back, or a late announcement) has its
    /// newest blocks read again.
    pub(crate) async fn read_to(&self, head: u64) -> Result<(), RunError> {
        let mut book = self.book.lock().await;
        let Some(_) = book.cursor else { return Ok(()) };
        if head < book.read_head {
            tracing::debug!(head, read = book.read_head, "a head below the last read");
            book.rewind(head);
        }
        let cursor = book.cursor.unwrap_or_default();
        let trail = book.confirmations + 1;
        if head <= book.read_head && head <= cursor + trail {
            return Ok(());
        }
        let mut reorganised = false;
        let mut from = cursor + 1;
        let filter = Filter::new().address(self.deployment.task_escrow);
        while from <= head {
            let (to, logs) = tessera_bindings::logs::read_chunk(
                &self.provider,
                &filter,
                from,
                head,
                &mut book.range,
            )
            .await?;
            // The head's own block may not be served whole yet: it is
            // read again, and only then taken as the chain's word.
            let sure = if to == head { to.saturating_sub(1) } else { to };
            if from <= sure {
                reorganised |= book.reconcile(from..=sure, &logs);
            }
            for log in logs {
                book.absorb(self.sponsor, &log);
            }
            book.cursor = Some(if to == head { to.saturating_sub(trail).max(cursor) } else { to });
            from = to + 1;
        }
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
        while from <= to {
            let (end, logs) = tessera_bindings::logs::read_chunk(
                &self.provider,
                &filter,
                from,
                to,
                &mut book.range,
            )
            .await?;
            for log in logs {
                book.absorb(self.sponsor, &log);
            }
            from = end + 1;
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
    /// [`super::RunnerConfig::confirmations`]).
    pub(crate) fn set_confirmations(&mut self, confirmations: u64) {
        self.book.get_mut().confirmations = confirmations;
    }

    /// Keeps the logs of a mined transaction of the sponsor's, so what it
    /// did is known before the cursor reaches its block.
    pub(crate) async fn absorb(&self, receipt: &TransactionReceipt) {
        let mut book = self.book.lock().await;
        for log in receipt.inner.logs() {
            if log.address() == self.deployment.task_escrow {
                book.absorb(self.sponsor, log);
            }
        }
    }

    /// Forgets the logs of tasks `ids` (their run is over).
    pub(crate) async fn forget(&self, ids: &[U256]) {
        let mut book = self.book.lock().await;
        for id in ids {
            book.logs.remove(id);
        }
    }

    /// The task and its logs, or `None` when it was never created (as far
    /// as the logs read so far tell; see [`Chain::read_to`]).
    pub(crate) async fn task(&self, id: U256) -> Result<Option<(TaskRecord, Vec<Log>)>, RunError> {
        let book = self.book.lock().await;
        let Some(logs) = book.logs.get(&id) else { return Ok(None) };
        let record = TaskRecord::from_logs(id, logs)?;
        Ok(Some((record, logs.clone())))
    }

    /// Whether the escrow holds task `id` (created and mined), as its
    /// storage says: for a task whose logs were not read.
    pub(crate) async fn exists(&self, id: U256) -> Result<bool, RunError> {
        let hash = self.escrow.contract().taskHash(id).call().await.map_err(map_call)?;
        Ok(!hash.is_zero())
    }

    /// The node's newest block (not the announced head: it may be ahead).
    pub(crate) async fn newest_block(&self) -> Result<u64, RunError> {
        Ok(self.provider.get_block_number().await?)
    }

    /// Whether task `id`'s executor ever accepted it (from its logs).
    pub(crate) async fn accepted(&self, id: U256) -> Result<bool, RunError> {
        let Some((_, logs)) = self.task(id).await? else { return Ok(false) };
        Ok(logs.iter().any(|log| {
            matches!(decode_log(log), Some(TaskEscrow::TaskEscrowEvents::TaskAccepted(_)))
        }))
    }

    /// What task `id` paid out, once settled (`None` before, or never created).
    pub(crate) async fn settlement(&self, id: U256) -> Result<Option<Settlement>, RunError> {
        let Some((_, logs)) = self.task(id).await? else { return Ok(None) };
        Ok(logs.iter().find_map(|log| match decode_log(log)? {
            TaskEscrow::TaskEscrowEvents::TaskSettled(e) => Some(Settlement {
                paid: Usdc::from_base_units(e.executorAmount),
                refunded: Usdc::from_base_units(e.funderAmount),
            }),
            _ => None,
        }))
    }

    /// `account`'s token balance (read once per head).
    pub(crate) async fn balance_of(&self, account: Address) -> Result<U256, RunError> {
        if let Some(b) = self.read(|r| r.balances.get(&account).copied()) {
            return Ok(b);
        }
        let token = MockUSDC::new(self.deployment.token, &self.provider);
        let balance = token.balanceOf(account).call().await.map_err(map_call)?;
        self.read(|r| r.balances.insert(account, balance));
        Ok(balance)
    }

    /// Works on the reads kept for the newest announced head, forgotten
    /// when the head moves. Nothing is kept without a subscription, nor on
    /// a chain that mines each transaction at once (a head there lasts no
    /// time, and the node is often a block ahead of the announcement).
    fn read<T>(&self, f: impl FnOnce(&mut Reads) -> T) -> T {
        let head = self.heads.get().and_then(|w| w.as_ref()).and_then(|w| *w.borrow());
        let head = head.map(|h| h.number).filter(|_| !self.automine);
        let mut reads = self.reads.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if reads.head != head || head.is_none() {
            *reads = Reads { head, ..Reads::default() };
        }
        f(&mut reads)
    }

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

    /// What `executor` asks for `capability`, when it offers it.
    pub(crate) async fn price_of(
        &self,
        executor: Address,
        capability: &str,
    ) -> Result<Option<Usdc>, RunError> {
        let word = capability::encode(capability)?;
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let offer = registry.priceOf(executor, word).call().await.map_err(map_call)?;
        Ok(offer.offered.then_some(Usdc::from_base_units(offer.price)))
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
    async fn dispatch<D: CallDecoder + Clone + Unpin>(
        &self,
        call: CallBuilder<&DynProvider, D, Ethereum>,
    ) -> Result<Sent, ClientError> {
        let heads = self.heads.get().and_then(|w| w.as_ref());
        Ok(Sent(self.sender.send(call, self.sponsor, heads).await?))
    }

    /// The ERC-8004 agent id `agent` linked in the registry, when it did.
    pub(crate) async fn identity_of(&self, agent: Address) -> Result<Option<U256>, ClientError> {
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let linked = registry.identityOf(agent).call().await.map_err(map_call)?;
        Ok(linked.linked.then_some(linked.agentId))
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

    /// Confirms transactions by the heads announced on `heads` from now on.
    pub(crate) fn follow(&self, heads: Option<HeadWatch>) {
        // Only the first follower counts; one runner follows one stream.
        let _ = self.heads.set(heads);
    }

    /// Sends the approvals of every task of `recs` (one call for several);
    /// returns without waiting for them to be mined.
    pub(crate) async fn approve_all(&self, recs: &[&TaskRecord]) -> Result<Sent, ClientError> {
        let c = self.escrow.contract();
        match recs {
            [rec] => self.dispatch(c.approvePayment(rec.id, rec.task.clone())).await,
            _ => {
                let ids = recs.iter().map(|r| r.id).collect();
                let tasks = recs.iter().map(|r| r.task.clone()).collect();
                self.dispatch(c.approvePayments(ids, tasks)).await
            }
        }
    }

    /// Sends the creation of every task of `params` in one call, without
    /// waiting for it to be mined (see [`super::wave`], which looks for the
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

    /// Registry facts for the plan's capabilities and executors.
    pub async fn context(&self, plan: &Plan) -> Result<InMemoryContext, RunError> {
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let mut ctx = InMemoryContext::new();
        let mut seen_caps = HashSet::new();
        let mut seen_execs = HashSet::new();
        // Read once per head: many plans proposed or approved at one head
        // share the reads.
        for task in &plan.subtasks {
            let Ok(word) = capability::encode(&task.capability) else { continue };
            if seen_caps.insert(task.capability.clone()) {
                let listed = match self.read(|r| r.listed.get(&word).copied()) {
                    Some(listed) => listed,
                    None => {
                        let listed = offers::offers_for(&registry, word, 1).await?.total > 0;
                        self.read(|r| r.listed.insert(word, listed));
                        listed
                    }
                };
                if listed {
                    ctx = ctx.with_capability(task.capability.clone());
                }
            }
            let Some(executor) = task.executor else { continue };
            if seen_execs.insert(executor) {
                let (status, offered) = match self.read(|r| r.agents.get(&executor).cloned()) {
                    Some(known) => known,
                    None => {
                        let agent = registry.getAgent(executor).call().await.map_err(map_call)?;
                        let status = match agent.status {
                            0 => ExecutorStatus::Unknown,
                            1 => ExecutorStatus::Active,
                            _ => ExecutorStatus::Paused,
                        };
                        let offered: Vec<(String, Usdc)> = agent
                            .capabilities
                            .iter()
                            .zip(&agent.prices)
                            .filter_map(|(word, price)| {
                                Some((capability::decode(*word)?, Usdc::from_base_units(*price)))
                            })
                            .collect();
                        self.read(|r| r.agents.insert(executor, (status, offered.clone())));
                        (status, offered)
                    }
                };
                ctx = ctx.with_executor(executor, status);
                for (name, price) in &offered {
                    ctx = ctx.with_offer(executor, name, *price);
                }
            }
        }
        Ok(ctx)
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
            Call::Approve => self.dispatch(c.approvePayment(id, task)).await,
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
