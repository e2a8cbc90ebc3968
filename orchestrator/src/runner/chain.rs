//! The chain side of the runner: the sponsor's account and contracts, the
//! reads every step starts from, and the transactions a step sends through
//! the sponsor's [`Sender`], which counts its nonces: a transaction is not
//! waited for before the next is sent, so several — of one run or of many
//! — go out back to back and land in the same block.

use std::collections::HashSet;

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, B256, U256, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::Log,
    signers::local::PrivateKeySigner,
    sol_types::SolValue,
};
use tessera_bindings::{
    AgentRegistry, MockUSDC, TaskEscrow, capability,
    client::{ClientError, EscrowClient, map_call},
    deployment::Deployment,
    envelope::is_local_chain,
    heads::{Head, HeadWatch},
    offers,
    sender::{Pending, Sender},
    task::{TaskRecord, decode_log},
    usdc::Usdc,
};
use tokio::sync::Mutex;

use super::{RunError, book::Book};
use crate::plan::{ExecutorStatus, InMemoryContext, Plan, PlanId};

mod grants;
mod logs;
mod send;

pub use grants::{Funding, GrantPermit, PermitShape};

/// The chain side of the orchestrator: the key's account and contracts.
///
/// The key is the sponsor in single-key mode (it funds every task and is
/// its client), or an operator in operator mode (see [`Chain::operator`]):
/// it pays gas and is every task's client, while a run funded by a
/// sponsor's grant has that sponsor as its tasks' funder (see
/// [`Chain::fund`]).
pub struct Chain {
    provider: DynProvider,
    sponsor: Address,
    /// The key is an operator: it funds nothing itself.
    operator: bool,
    /// The grants of the live runs funded by a sponsor's grant, by plan.
    grants: std::sync::RwLock<std::collections::HashMap<PlanId, std::sync::Arc<Funding>>>,
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
    /// Token allowances to the escrow.
    allowances: std::collections::HashMap<Address, U256>,
    /// The ERC-8004 identities agents linked in the registry.
    identities: std::collections::HashMap<Address, Option<U256>>,
}

/// A transaction sent and not yet confirmed; [`Chain::confirm`] waits for it.
#[must_use = "a sent transaction is not done until it is confirmed"]
pub(crate) struct Sent(pub(super) Pending);

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("sponsor", &self.sponsor)
            .field("operator", &self.operator)
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
        let chain = Self::connect(provider, signer, deployment, false).await?;
        chain.ensure_allowance().await?;
        Ok(chain)
    }

    /// The chain handle for an operator `signer` over `provider`, whose
    /// wallet must hold the same key: it pays gas and is the client of
    /// every task it creates, and funds none itself. A run is funded by its
    /// sponsor's grant (see [`Chain::fund`]); a run without one is funded by
    /// the key as in single-key mode, which then needs its own allowance
    /// to the escrow ([`Chain::ensure_allowance`], not set here).
    pub async fn operator(
        provider: DynProvider,
        signer: PrivateKeySigner,
        deployment: Deployment,
    ) -> Result<Self, RunError> {
        Self::connect(provider, signer, deployment, true).await
    }

    async fn connect(
        provider: DynProvider,
        signer: PrivateKeySigner,
        deployment: Deployment,
        operator: bool,
    ) -> Result<Self, RunError> {
        // Only development nodes answer, so only a local chain is asked (a
        // hosted provider would count, log or bill an unknown method); any
        // other chain has block time.
        let automine = is_local_chain(deployment.chain_id)
            && provider
                .raw_request::<_, bool>("anvil_getAutomine".into(), ())
                .await
                .unwrap_or(false);
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
            operator,
            grants: std::sync::RwLock::default(),
            provider,
            deployment,
            lane: Mutex::new(()),
            waves: std::sync::Mutex::default(),
            heads: std::sync::OnceLock::new(),
            book: Mutex::new(Book::default()),
            reads: std::sync::Mutex::default(),
        };
        Ok(chain)
    }

    /// The key's address: the sponsor in single-key mode, the operator in
    /// operator mode (the client of every task either way).
    pub fn sponsor(&self) -> Address {
        self.sponsor
    }

    /// The key's address (the same as [`Chain::sponsor`]).
    pub fn address(&self) -> Address {
        self.sponsor
    }

    /// Whether the key is an operator (see [`Chain::operator`]).
    pub fn is_operator(&self) -> bool {
        self.operator
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
    pub fn reference(plan: PlanId, index: u32, attempt: u32) -> B256 {
        keccak256((plan.into_inner(), index, attempt).abi_encode())
    }

    /// The escrow task id `funder`'s reference maps to (the funder of a
    /// plan's tasks: [`Chain::funder_of`]).
    pub fn task_id(&self, funder: Address, reference: B256) -> U256 {
        U256::from_be_bytes(keccak256((funder, reference).abi_encode()).0)
    }

    /// The newest block: announced by the subscription the runner follows,
    /// or asked of the node when none is live.
    pub(crate) async fn head(&self) -> Result<Head, RunError> {
        if let Some(h) = self.heads.get().and_then(|w| w.as_ref()).and_then(|w| *w.borrow()) {
            return Ok(h);
        }
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Latest).await?;
        Ok(block.map(|b| Head::of(&b.header)).unwrap_or(Head {
            number: 0,
            timestamp: 0,
            logs_bloom: None,
        }))
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

    /// The blocks task `id` was last offered to its executor in (created or
    /// reassigned) and last changed in, from its logs; zeros when none
    /// were read.
    pub(crate) async fn offered_and_last(&self, id: U256) -> (u64, u64) {
        let book = self.book.lock().await;
        let Some(logs) = book.logs.get(&id) else { return (0, 0) };
        let block = |log: &Log| log.block_number.unwrap_or_default();
        let offered = logs
            .iter()
            .filter(|log| {
                matches!(
                    decode_log(log),
                    Some(
                        TaskEscrow::TaskEscrowEvents::TaskCreated(_)
                            | TaskEscrow::TaskEscrowEvents::TaskReassigned(_)
                    )
                )
            })
            .map(block)
            .max()
            .unwrap_or_default();
        (offered, logs.iter().map(block).max().unwrap_or_default())
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

    /// The ERC-8004 agent id `agent` linked in the registry, when it did
    /// (read once per head).
    pub(crate) async fn identity_of(&self, agent: Address) -> Result<Option<U256>, ClientError> {
        if let Some(known) = self.read(|r| r.identities.get(&agent).copied()) {
            return Ok(known);
        }
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let linked = registry.identityOf(agent).call().await.map_err(map_call)?;
        let id = linked.linked.then_some(linked.agentId);
        self.read(|r| r.identities.insert(agent, id));
        Ok(id)
    }

    /// Whether `who` owns ERC-8004 identity `agent_id` or is its wallet:
    /// the registry's self-feedback refusal is then the rule, not a game.
    pub(crate) async fn controls_identity(
        &self,
        agent_id: U256,
        who: Address,
    ) -> Result<bool, ClientError> {
        let Some(registry) = self.deployment.identity_registry else { return Ok(false) };
        let identity = tessera_bindings::IdentityRegistry::new(registry, &self.provider);
        let owner = identity.ownerOf(agent_id).call().await.map_err(map_call)?;
        let wallet = identity.getAgentWallet(agent_id).call().await.map_err(map_call)?;
        Ok(owner == who || wallet == who)
    }

    /// Whether every transaction of `txs` is mined with `confirmations`
    /// blocks on top of it (always, for 0); one not found (not mined yet,
    /// or reorganised away) is not.
    pub(crate) async fn deep(&self, txs: &[B256], confirmations: u64) -> Result<bool, ClientError> {
        if confirmations == 0 {
            return Ok(true);
        }
        let head = self.provider.get_block_number().await?;
        for tx in txs {
            let Some(receipt) = self.provider.get_transaction_receipt(*tx).await? else {
                return Ok(false);
            };
            match receipt.block_number {
                Some(block) if block + confirmations <= head => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Confirms transactions by the heads announced on `heads` from now on.
    pub(crate) fn follow(&self, heads: Option<HeadWatch>) {
        // Only the first follower counts; one runner follows one stream.
        let _ = self.heads.set(heads);
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
}
