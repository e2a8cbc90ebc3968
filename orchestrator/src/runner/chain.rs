//! The chain side of the runner: the sponsor's account and contracts, the
//! reads every step starts from, and the transactions a step sends, one at
//! a time through the sponsor's send lane.

use std::collections::HashSet;

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, B256, U256, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::{Filter, Log},
    signers::local::PrivateKeySigner,
    sol_types::SolValue,
};
use tessera_bindings::{
    AgentRegistry,
    ITaskEscrow::CreateParams,
    MockUSDC, TaskEscrow, capability,
    client::{ClientError, EscrowClient, map_call},
    deployment::Deployment,
    offers,
    permit::TokenDomain,
    task::{TaskRecord, decode_log},
    usdc::Usdc,
};
use tokio::sync::Mutex;

use super::{RunError, step::Call};
use crate::plan::{ExecutorStatus, InMemoryContext, Plan};

/// The chain side of the orchestrator: the sponsor's account and contracts.
pub struct Chain {
    provider: DynProvider,
    sponsor: Address,
    signer: PrivateKeySigner,
    deployment: Deployment,
    escrow: EscrowClient,
    domain: TokenDomain,
    /// Serializes the sponsor's transactions so concurrent runs never race
    /// for a nonce.
    lane: Mutex<()>,
}

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
    /// over `provider`, whose wallet must hold the same key.
    pub async fn new(
        provider: DynProvider,
        signer: PrivateKeySigner,
        deployment: Deployment,
    ) -> Result<Self, RunError> {
        let token = MockUSDC::new(deployment.token, &provider);
        let domain = token.eip712Domain().call().await.map_err(map_call)?;
        let domain = TokenDomain {
            name: domain.name,
            version: domain.version,
            chain_id: deployment.chain_id,
            token: deployment.token,
        };
        Ok(Self {
            escrow: EscrowClient::new(provider.clone(), deployment.task_escrow),
            sponsor: signer.address(),
            provider,
            signer,
            deployment,
            domain,
            lane: Mutex::new(()),
        })
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

    /// The latest block's timestamp.
    pub(crate) async fn now(&self) -> Result<u64, RunError> {
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Latest).await?;
        Ok(block.map(|b| b.header.timestamp).unwrap_or_default())
    }

    /// The task and its logs, or `None` when it was never created.
    pub(crate) async fn task(&self, id: U256) -> Result<Option<(TaskRecord, Vec<Log>)>, RunError> {
        let filter = Filter::new()
            .address(self.deployment.task_escrow)
            .topic1(B256::from(id))
            .from_block(self.deployment.deploy_block);
        let logs = self.provider.get_logs(&filter).await?;
        if logs.is_empty() {
            return Ok(None);
        }
        let record = TaskRecord::from_logs(id, &logs)?;
        Ok(Some((record, logs)))
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

    /// The sponsor's token balance.
    pub(crate) async fn balance(&self) -> Result<U256, RunError> {
        let token = MockUSDC::new(self.deployment.token, &self.provider);
        Ok(token.balanceOf(self.sponsor).call().await.map_err(map_call)?)
    }

    /// What `executor` asks for `capability`, when it offers it.
    pub(crate) async fn price_of(
        &self,
        executor: Address,
        capability: &str,
    ) -> Result<Option<Usdc>, RunError> {
        let word = capability::encode(capability).map_err(|e| RunError::Invalid(e.to_string()))?;
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let offer = registry.priceOf(executor, word).call().await.map_err(map_call)?;
        Ok(offer.offered.then_some(Usdc::from_base_units(offer.price)))
    }

    /// Registry facts for the plan's capabilities and executors.
    pub async fn context(&self, plan: &Plan) -> Result<InMemoryContext, RunError> {
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let mut ctx = InMemoryContext::new();
        let mut seen_caps = HashSet::new();
        let mut seen_execs = HashSet::new();
        for task in &plan.subtasks {
            let Ok(word) = capability::encode(&task.capability) else { continue };
            if seen_caps.insert(task.capability.clone()) {
                let listed = offers::offers_for(&registry, word, 1).await?;
                if listed.total > 0 {
                    ctx = ctx.with_capability(task.capability.clone());
                }
            }
            let Some(executor) = task.executor else { continue };
            if seen_execs.insert(executor) {
                let agent = registry.getAgent(executor).call().await.map_err(map_call)?;
                let status = match agent.status {
                    0 => ExecutorStatus::Unknown,
                    1 => ExecutorStatus::Active,
                    _ => ExecutorStatus::Paused,
                };
                ctx = ctx.with_executor(executor, status);
                for (word, price) in agent.capabilities.iter().zip(&agent.prices) {
                    if let Some(name) = capability::decode(*word) {
                        ctx = ctx.with_offer(executor, &name, Usdc::from_base_units(*price));
                    }
                }
            }
        }
        Ok(ctx)
    }

    /// Sends `call` on the task `rec` as the sponsor, holding the send lane.
    /// `uri` is the published reason of a dispute or an appeal. A revert
    /// comes back as [`ClientError::Revert`] with the decoded error.
    pub(crate) async fn send(
        &self,
        rec: &TaskRecord,
        call: &Call,
        uri: Option<String>,
    ) -> Result<(), ClientError> {
        let _lane = self.lane.lock().await;
        let (c, s) = (&self.escrow, self.sponsor);
        let mut rec = rec.clone();
        let rec = &mut rec;
        let uri = uri.unwrap_or_default();
        match call {
            Call::Approve => c.approve(s, rec).await.map(drop),
            Call::Release => c.release(s, rec).await.map(drop),
            Call::Cancel => c.cancel(s, rec).await.map(drop),
            Call::RefundExpired => c.refund_expired(s, rec).await.map(drop),
            Call::ClaimDefault => c.claim_default(s, rec).await.map(drop),
            Call::Dispute(_) => c.dispute(s, rec, &uri).await.map(drop),
            Call::Appeal(_) => c.appeal(s, rec, &uri).await.map(drop),
            Call::Reassign { executor, deadline } => {
                let capability = rec.capability;
                c.reassign(s, rec, *executor, *deadline, capability).await.map(drop)
            }
        }
    }

    /// Creates task `id` with `params` unless it exists already; returns it
    /// with its logs. The lane is held from the look to the creation, so
    /// two wake-ups never both create.
    pub(crate) async fn create(
        &self,
        index: u32,
        id: U256,
        params: CreateParams,
        permit_deadline: u64,
    ) -> Result<Option<(TaskRecord, Vec<Log>)>, RunError> {
        {
            let _lane = self.lane.lock().await;
            // Another wake-up (or a previous life of this process) may have
            // created it meanwhile: the chain decides.
            if let Some(found) = self.task(id).await? {
                return Ok(Some(found));
            }
            self.escrow
                .create_with_permit(&self.signer, &self.domain, params, U256::from(permit_deadline))
                .await
                .map_err(|source| RunError::Create { index, source })?;
        }
        self.task(id).await
    }
}
