//! The plan runner: turns an approved plan into escrowed sub-tasks, in
//! dependency order, and settles each through the review gate.
//!
//! Each run is driven by its own task that wakes on a new block, on a user
//! decision, or once a second. Every wake-up re-reads the chain: a sub-task's
//! on-chain id is `keccak(sponsor, ref)` with `ref = keccak(plan, index,
//! attempt)`, so the runner always knows where to look, and a restarted
//! runner finds the tasks it created before it died instead of funding them
//! twice (the escrow refuses a second task with the same reference anyway).
//! Events come from the escrow's own logs, stored once per log.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex as StdMutex},
    time::Duration,
};

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, B256, U256, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolValue,
};
use serde::Serialize;
use serde_json::{Value, json};
use tessera_bindings::{
    AgentRegistry,
    ITaskEscrow::CreateParams,
    MockUSDC, capability,
    client::{ClientError, EscrowClient, map_call},
    deployment::Deployment,
    envelope::{BlobStore, Envelope, EnvelopeCodec, Input, Parent},
    heads::Heads,
    injection,
    permit::TokenDomain,
    task::{Status, TaskRecord},
};
use tokio::sync::{Mutex, Notify, broadcast, watch};
use tracing::Instrument;

use crate::{
    events::{self, subtask_fields},
    plan::{ExecutorStatus, InMemoryContext, Plan, PlanError, ReviewMode},
    store::{DecisionRow, EventRow, RunRow, Store, StoreError, SubtaskRow, now_ms},
};

/// How the runner behaves.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Block polling interval when no websocket is available.
    pub poll_interval: Duration,
    /// A run paused for a recovery decision is cancelled after this long.
    pub decision_timeout: Duration,
    /// Longest wait between two looks at a run's state.
    pub idle_tick: Duration,
    /// Most one plan may spend, USDC base units (the third line of defence:
    /// money only goes to registered, active agents, within this cap).
    pub max_plan_spend: u128,
    /// Key of the confirmation tokens that bind a high-stakes approval to the
    /// plan's exact amounts and recipients. Services set it from their own
    /// secret; the default is derived per process.
    pub confirm_secret: B256,
}

/// Default per-plan spend cap: 50 USDC.
pub const DEFAULT_MAX_PLAN_SPEND: u128 = 50_000_000;

impl Default for RunnerConfig {
    fn default() -> Self {
        let seed = format!(
            "{}:{:?}:{:p}",
            std::process::id(),
            std::time::SystemTime::now(),
            &DEFAULT_MAX_PLAN_SPEND
        );
        Self {
            poll_interval: Duration::from_millis(200),
            decision_timeout: Duration::from_secs(120),
            idle_tick: Duration::from_secs(1),
            max_plan_spend: DEFAULT_MAX_PLAN_SPEND,
            confirm_secret: keccak256(seed.as_bytes()),
        }
    }
}

/// Why an orchestrator operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The plan or the edit is invalid.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such run.
    #[error("no run for plan {0}")]
    NotFound(String),
    /// The run is not in a state that allows this.
    #[error("run {id} is {state}: {action} is not possible now")]
    WrongState {
        /// The run.
        id: String,
        /// Its state.
        state: String,
        /// What was asked.
        action: &'static str,
    },
    /// A request argument is invalid.
    #[error("{0}")]
    Invalid(String),
    /// A chain call failed.
    #[error("chain: {0}")]
    Chain(String),
    /// A high-stakes approval without a matching confirmation.
    #[error("{0}")]
    Confirmation(String),
}

impl From<ClientError> for RunError {
    fn from(e: ClientError) -> Self {
        Self::Chain(e.to_string())
    }
}

impl From<alloy::transports::TransportError> for RunError {
    fn from(e: alloy::transports::TransportError) -> Self {
        Self::Chain(e.to_string())
    }
}

/// A user decision about a running plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve and pay a delivered sub-task.
    Approve(u32),
    /// Dispute a delivered sub-task, with a reason.
    Dispute(u32, String),
    /// Run a sub-task again with its executor and a fresh deadline.
    Retry(u32),
    /// Give a sub-task to another executor.
    ChangeExecutor(u32, Address),
    /// Appeal a ruling on a sub-task, with a reason.
    Appeal(u32, String),
    /// Stop the plan: settled stays settled, sub-tasks not yet accepted are
    /// cancelled and refunded.
    Cancel,
}

impl Decision {
    fn parts(&self) -> (Option<u32>, &'static str, Option<String>) {
        match self {
            Self::Approve(i) => (Some(*i), "approve", None),
            Self::Dispute(i, reason) => (Some(*i), "dispute", Some(reason.clone())),
            Self::Retry(i) => (Some(*i), "retry", None),
            Self::ChangeExecutor(i, a) => (Some(*i), "executor", Some(a.to_string())),
            Self::Appeal(i, reason) => (Some(*i), "appeal", Some(reason.clone())),
            Self::Cancel => (None, "cancel", None),
        }
    }
}

/// An edit of a proposed plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Edit {
    /// New order of the current indexes.
    Reorder {
        /// The current indexes in their new order.
        order: Vec<u32>,
    },
    /// Another executor for one sub-task.
    Reassign {
        /// The sub-task.
        index: u32,
        /// The new executor.
        executor: Address,
    },
    /// Remove a sub-task nothing depends on.
    Drop {
        /// The sub-task.
        index: u32,
    },
    /// Switch between automatic payment and manual review.
    Review {
        /// The new mode.
        review: ReviewMode,
    },
}

/// A run as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The run row (state, reason, timestamps).
    #[serde(flatten)]
    pub run: RunRow,
    /// The plan.
    pub plan: Plan,
    /// Sub-task progress (empty before approval).
    pub subtasks: Vec<SubtaskRow>,
    /// Sum of sub-task costs.
    pub total_cost: String,
    /// Longest deadline chain, seconds.
    pub estimated_duration_secs: u64,
    /// What the user must type to confirm a high-stakes plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<ConfirmationTerms>,
}

/// The exact amounts and recipients a high-stakes confirmation binds to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfirmationTerms {
    /// Total, as `x.xxxxxx` USDC.
    pub amount: String,
    /// Every executor that would be paid, sorted.
    pub recipients: Vec<Address>,
}

/// USDC base units as `x.xxxxxx`.
pub fn format_usdc(units: u128) -> String {
    format!("{}.{:06}", units / 1_000_000, units % 1_000_000)
}

/// Parses `1.2`, `1.200000`, `1.2 USDC` into base units.
pub fn parse_usdc(text: &str) -> Option<u128> {
    let t = text.trim();
    let t = t.strip_suffix("USDC").or_else(|| t.strip_suffix("usdc")).unwrap_or(t).trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty()
        || frac.len() > 6
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let whole: u128 = whole.parse().ok()?;
    let frac: u128 = format!("{frac:0<6}").parse().ok()?;
    whole.checked_mul(1_000_000)?.checked_add(frac)
}

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

    async fn now(&self) -> Result<u64, RunError> {
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Latest).await?;
        Ok(block.map(|b| b.header.timestamp).unwrap_or_default())
    }

    /// The task and its logs, or `None` when it was never created.
    async fn task(
        &self,
        id: U256,
    ) -> Result<Option<(TaskRecord, Vec<alloy::rpc::types::Log>)>, RunError> {
        let filter = Filter::new()
            .address(self.deployment.task_escrow)
            .topic1(B256::from(id))
            .from_block(self.deployment.deploy_block);
        let logs = self.provider.get_logs(&filter).await?;
        if logs.is_empty() {
            return Ok(None);
        }
        let record =
            TaskRecord::from_logs(id, &logs).map_err(|e| RunError::Chain(e.to_string()))?;
        Ok(Some((record, logs)))
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
                let agents = registry.agentsFor(word).call().await.map_err(map_call)?;
                if !agents.is_empty() {
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
                        ctx = ctx.with_offer(executor, &name, *price);
                    }
                }
            }
        }
        Ok(ctx)
    }
}

/// The orchestrator: the store, the chain, and one driver task per live run.
pub struct Orchestrator {
    store: Store,
    chain: Chain,
    blobs: Arc<dyn BlobStore + Send + Sync>,
    codec: EnvelopeCodec,
    config: RunnerConfig,
    events: broadcast::Sender<EventRow>,
    head: watch::Sender<u64>,
    wakers: StdMutex<HashMap<String, Arc<Notify>>>,
    driving: StdMutex<HashSet<String>>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator").field("chain", &self.chain).finish_non_exhaustive()
    }
}

/// Run states in which a driver task works on the run.
pub const LIVE_STATES: [&str; 3] = ["running", "paused", "cancelling"];

/// Sub-task phases that hold escrowed money.
const IN_FLIGHT: [&str; 6] = ["created", "accepted", "completed", "disputed", "ruled", "appealed"];

fn phase_of(status: Status) -> String {
    status.as_str().to_lowercase()
}

impl Orchestrator {
    /// An orchestrator over `store` and `chain`, storing envelopes in `blobs`.
    pub fn new(
        store: Store,
        chain: Chain,
        blobs: Arc<dyn BlobStore + Send + Sync>,
        config: RunnerConfig,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            chain,
            blobs,
            codec: EnvelopeCodec::default(),
            config,
            events: broadcast::channel(1024).0,
            head: watch::channel(0).0,
            wakers: StdMutex::new(HashMap::new()),
            driving: StdMutex::new(HashSet::new()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The chain handle.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The blob store behind content-addressed envelopes and results.
    pub fn blobs(&self) -> &(dyn BlobStore + Send + Sync) {
        self.blobs.as_ref()
    }

    /// Live events of every run, as they are stored.
    pub fn subscribe(&self) -> broadcast::Receiver<EventRow> {
        self.events.subscribe()
    }

    /// Validates `plan` against the registry and stores it as a proposed run.
    pub async fn propose(&self, plan: Plan) -> Result<RunView, RunError> {
        self.propose_with(plan, false, None).await
    }

    /// [`Orchestrator::propose`] with the stakes and the classification the
    /// plan came from. Executors may still be unassigned (approval checks);
    /// high-stakes plans are always reviewed by hand.
    pub async fn propose_with(
        &self,
        mut plan: Plan,
        high_stakes: bool,
        classification: Option<&Value>,
    ) -> Result<RunView, RunError> {
        if high_stakes {
            plan.review = ReviewMode::Manual;
        }
        plan.validate_draft(&self.chain.context(&plan).await?)?;
        self.check_spend_cap(&plan)?;
        let id = plan.id.to_string();
        let json = serde_json::to_string(&plan).expect("plans serialize");
        let classification = classification.map(Value::to_string);
        let stakes = if high_stakes { "high" } else { "low" };
        self.store
            .insert_run_with(&id, &json, "proposed", stakes, classification.as_deref())
            .await?;
        self.emit(
            &id,
            "plan_proposed",
            "plan_proposed",
            json!({ "plan_id": plan.id, "stakes": stakes }),
        )
        .await?;
        self.view(&id).await
    }

    fn check_spend_cap(&self, plan: &Plan) -> Result<(), RunError> {
        let total = plan.total_cost()?;
        if total > self.config.max_plan_spend {
            return Err(RunError::Invalid(format!(
                "the plan spends {} USDC, over the per-plan spend cap of {} USDC",
                format_usdc(total),
                format_usdc(self.config.max_plan_spend)
            )));
        }
        Ok(())
    }

    /// The amounts and recipients a confirmation of `plan` binds to.
    pub fn confirmation_terms(plan: &Plan) -> Result<ConfirmationTerms, RunError> {
        let mut recipients: Vec<Address> =
            plan.subtasks.iter().filter_map(|t| t.executor).collect();
        recipients.sort();
        recipients.dedup();
        Ok(ConfirmationTerms { amount: format_usdc(plan.total_cost()?), recipients })
    }

    /// The token that confirms exactly this plan: keyed by the service's
    /// secret over the plan id and every (index, executor, cost).
    pub fn confirmation_token(&self, plan: &Plan) -> String {
        let mut bytes = Vec::with_capacity(64 + plan.subtasks.len() * 56);
        bytes.extend_from_slice(self.config.confirm_secret.as_slice());
        bytes.extend_from_slice(plan.id.as_slice());
        for t in &plan.subtasks {
            bytes.extend_from_slice(&t.index.to_be_bytes());
            bytes.extend_from_slice(t.executor.unwrap_or_default().as_slice());
            bytes.extend_from_slice(&t.cost.to_be_bytes());
        }
        keccak256(&bytes).to_string()
    }

    /// Checks what the user typed against a high-stakes plan's terms and
    /// returns the confirmation token for approval.
    pub async fn confirm(
        &self,
        id: &str,
        amount: &str,
        recipients: &[Address],
    ) -> Result<String, RunError> {
        let (run, plan) = self.load(id).await?;
        if run.state != "proposed" {
            return Err(RunError::WrongState {
                id: id.into(),
                state: run.state,
                action: "confirm",
            });
        }
        if run.stakes != "high" {
            return Err(RunError::Invalid("only high-stakes plans need a confirmation".into()));
        }
        if let Some(t) = plan.subtasks.iter().find(|t| t.executor.is_none()) {
            return Err(PlanError::ExecutorUnassigned(t.index).into());
        }
        let terms = Self::confirmation_terms(&plan)?;
        let typed = parse_usdc(amount)
            .ok_or_else(|| RunError::Invalid(format!("{amount:?} is not an amount in USDC")))?;
        if format_usdc(typed) != terms.amount {
            return Err(RunError::Invalid(format!(
                "typed amount {} USDC does not match the plan's total",
                format_usdc(typed)
            )));
        }
        let mut typed_recipients = recipients.to_vec();
        typed_recipients.sort();
        typed_recipients.dedup();
        if typed_recipients != terms.recipients {
            return Err(RunError::Invalid(
                "typed recipients do not match the agents this plan pays".into(),
            ));
        }
        Ok(self.confirmation_token(&plan))
    }

    /// Applies an edit to a proposed plan; the result is validated again.
    pub async fn edit(&self, id: &str, edit: Edit) -> Result<RunView, RunError> {
        let (run, plan) = self.load(id).await?;
        if run.state != "proposed" {
            return Err(RunError::WrongState { id: id.into(), state: run.state, action: "edit" });
        }
        let edited = match &edit {
            Edit::Reorder { order } => plan.reorder(order)?,
            Edit::Reassign { index, executor } => {
                let mut edited = plan.reassign(*index, *executor)?;
                // The cost follows the registry: the new executor's price.
                if let Some(t) = edited.subtasks.iter_mut().find(|t| t.index == *index) {
                    let word = tessera_bindings::capability::encode(&t.capability)
                        .map_err(|e| RunError::Invalid(e.to_string()))?;
                    let registry = AgentRegistry::new(
                        self.chain.deployment.agent_registry,
                        &self.chain.provider,
                    );
                    let offer = registry.priceOf(*executor, word).call().await.map_err(map_call)?;
                    if offer.offered {
                        t.cost = offer.price;
                    }
                }
                edited
            }
            Edit::Drop { index } => plan.drop_subtask(*index)?,
            Edit::Review { review } => {
                if run.stakes == "high" && *review != ReviewMode::Manual {
                    return Err(RunError::Invalid("a high-stakes plan keeps manual review".into()));
                }
                Plan { review: *review, ..plan.clone() }
            }
        };
        edited.validate_draft(&self.chain.context(&edited).await?)?;
        self.check_spend_cap(&edited)?;
        let json = serde_json::to_string(&edited).expect("plans serialize");
        if !self.store.update_plan(id, &json, "proposed").await? {
            return Err(RunError::WrongState {
                id: id.into(),
                state: "changed".into(),
                action: "edit",
            });
        }
        let dedup = format!("edit:{}", now_ms());
        self.emit(
            id,
            "plan_edited",
            &dedup,
            json!({ "plan_id": plan.id, "edit": format!("{edit:?}") }),
        )
        .await?;
        self.view(id).await
    }

    /// Approves a proposed plan: checks it once more against the registry,
    /// the spend cap and the sponsor's balance — and, for a high-stakes plan,
    /// the confirmation token — then starts running it.
    pub async fn approve(
        self: &Arc<Self>,
        id: &str,
        confirmation: Option<&str>,
    ) -> Result<RunView, RunError> {
        let (run, plan) = self.load(id).await?;
        if run.state != "proposed" {
            return Err(RunError::WrongState {
                id: id.into(),
                state: run.state,
                action: "approve",
            });
        }
        plan.validate(&self.chain.context(&plan).await?)?;
        self.check_spend_cap(&plan)?;
        if run.stakes == "high" {
            match confirmation {
                None => {
                    return Err(RunError::Confirmation(format!(
                        "plan {id} is high-stakes: confirm its amount and recipients first \
                         (POST /api/runs/{id}/confirm), then approve with the token"
                    )));
                }
                Some(token) if token != self.confirmation_token(&plan) => {
                    return Err(RunError::Confirmation(
                        "the confirmation does not match this plan's exact amounts and recipients"
                            .into(),
                    ));
                }
                Some(_) => {}
            }
        }
        let token = MockUSDC::new(self.chain.deployment.token, &self.chain.provider);
        let balance = token.balanceOf(self.chain.sponsor).call().await.map_err(map_call)?;
        let total = plan.total_cost()?;
        if balance < U256::from(total) {
            return Err(RunError::Invalid(format!(
                "the sponsor holds {balance} but the plan costs {total} (USDC base units)"
            )));
        }
        for task in &plan.subtasks {
            let executor = task.executor.ok_or(PlanError::ExecutorUnassigned(task.index))?;
            let row = SubtaskRow {
                idx: task.index,
                attempt: 0,
                executor: executor.to_string(),
                phase: "waiting".into(),
                task_id: None,
                result_uri: None,
                output: None,
            };
            self.store.put_subtask(id, &row).await?;
        }
        if !self.store.transition(id, &["proposed"], "running", None).await? {
            return Err(RunError::WrongState {
                id: id.into(),
                state: "changed".into(),
                action: "approve",
            });
        }
        self.emit(
            id,
            "plan_approved",
            "plan_approved",
            json!({ "plan_id": plan.id, "total_cost": total.to_string() }),
        )
        .await?;
        self.spawn(id);
        self.view(id).await
    }

    /// Cancels a proposed plan at once, or asks a running one to stop.
    pub async fn cancel(&self, id: &str) -> Result<RunView, RunError> {
        let (run, plan) = self.load(id).await?;
        match run.state.as_str() {
            "proposed" => {
                self.store.transition(id, &["proposed"], "cancelled", Some("cancelled")).await?;
                self.emit(
                    id,
                    "plan_failed",
                    "plan_failed",
                    json!({ "plan_id": plan.id, "reason": "cancelled" }),
                )
                .await?;
            }
            s if LIVE_STATES.contains(&s) => {
                self.store.push_decision(id, None, "cancel", None).await?;
                self.wake(id);
            }
            _ => {
                return Err(RunError::WrongState {
                    id: id.into(),
                    state: run.state,
                    action: "cancel",
                });
            }
        }
        self.view(id).await
    }

    /// Queues a decision about a running plan.
    pub async fn decide(&self, id: &str, decision: Decision) -> Result<i64, RunError> {
        let (run, plan) = self.load(id).await?;
        if decision == Decision::Cancel {
            self.cancel(id).await?;
            return Ok(0);
        }
        if !LIVE_STATES.contains(&run.state.as_str()) {
            return Err(RunError::WrongState { id: id.into(), state: run.state, action: "decide" });
        }
        let (idx, kind, arg) = decision.parts();
        if let Some(i) = idx
            && plan.subtask(i).is_none()
        {
            return Err(PlanError::UnknownIndex(i).into());
        }
        if let Decision::Dispute(_, reason) | Decision::Appeal(_, reason) = &decision
            && reason.trim().is_empty()
        {
            return Err(RunError::Invalid("a dispute or an appeal needs a reason".into()));
        }
        if let Decision::ChangeExecutor(i, executor) = decision {
            let edited = plan.reassign(i, executor)?;
            let ctx = self.chain.context(&edited).await?;
            edited.validate(&ctx)?;
        }
        let seq = self.store.push_decision(id, idx, kind, arg.as_deref()).await?;
        self.wake(id);
        Ok(seq)
    }

    /// The run with its plan and sub-task progress.
    pub async fn view(&self, id: &str) -> Result<RunView, RunError> {
        let (run, plan) = self.load(id).await?;
        let subtasks = self.store.subtasks(id).await?;
        let confirmation =
            if run.stakes == "high" { Some(Self::confirmation_terms(&plan)?) } else { None };
        Ok(RunView {
            confirmation,
            total_cost: plan.total_cost()?.to_string(),
            estimated_duration_secs: plan.estimated_duration()?.as_secs(),
            run,
            plan,
            subtasks,
        })
    }

    /// Starts driver tasks for every live run (after a restart).
    pub async fn resume_all(self: &Arc<Self>) -> Result<usize, RunError> {
        let live = self.store.runs_in(&LIVE_STATES).await?;
        for run in &live {
            tracing::info!(plan = %run.id, state = %run.state, "resuming run");
            self.spawn(&run.id);
        }
        Ok(live.len())
    }

    /// Follows the chain head: over a websocket subscription when `ws_url`
    /// is given and answers, else by polling. Every new block wakes the runs.
    pub async fn follow_heads(self: Arc<Self>, ws_url: Option<String>) {
        let mut heads = Heads::connect(ws_url.as_deref(), self.config.poll_interval).await;
        loop {
            match self.chain.provider.get_block_number().await {
                Ok(n) => {
                    self.head.send_if_modified(|h| std::mem::replace(h, n) != n);
                }
                Err(e) => tracing::warn!(error = %e, "reading the block number"),
            }
            heads.wait().await;
        }
    }

    fn spawn(self: &Arc<Self>, id: &str) {
        if !self.driving.lock().expect("lock").insert(id.to_owned()) {
            return;
        }
        let this = Arc::clone(self);
        let id = id.to_owned();
        let span = tracing::info_span!("run", plan = %id);
        tokio::spawn(
            async move {
                this.drive(&id).await;
                this.driving.lock().expect("lock").remove(&id);
            }
            .instrument(span),
        );
    }

    fn waker(&self, id: &str) -> Arc<Notify> {
        Arc::clone(self.wakers.lock().expect("lock").entry(id.to_owned()).or_default())
    }

    fn wake(&self, id: &str) {
        self.waker(id).notify_one();
    }

    async fn drive(&self, id: &str) {
        let waker = self.waker(id);
        let mut heads = self.head.subscribe();
        let mut failures = 0u32;
        loop {
            match self.tick(id).await {
                Ok(true) => return,
                Ok(false) => failures = 0,
                Err(e) => {
                    failures += 1;
                    tracing::warn!(error = %e, failures, "run step failed; will retry");
                    let backoff = Duration::from_millis(200 * u64::from(failures.min(10)));
                    tokio::time::sleep(backoff).await;
                }
            }
            tokio::select! {
                () = waker.notified() => {}
                _ = heads.changed() => {}
                () = tokio::time::sleep(self.config.idle_tick) => {}
            }
        }
    }

    async fn load(&self, id: &str) -> Result<(RunRow, Plan), RunError> {
        let run = self.store.run(id).await?.ok_or_else(|| RunError::NotFound(id.into()))?;
        let plan = Plan::from_json(&run.plan_json)?;
        Ok((run, plan))
    }

    async fn emit(&self, id: &str, kind: &str, dedup: &str, body: Value) -> Result<(), RunError> {
        if let Some(ev) = self.store.append_event(id, kind, dedup, &body).await? {
            tracing::info!(event = kind, seq = ev.seq, "run event");
            let _ = self.events.send(ev);
        }
        Ok(())
    }

    /// One look at a run: sync every sub-task from the chain, apply
    /// decisions, then take every step that is due. True when the run is over.
    async fn tick(&self, id: &str) -> Result<bool, RunError> {
        let (run, plan) = self.load(id).await?;
        if !LIVE_STATES.contains(&run.state.as_str()) {
            return Ok(true);
        }
        let mut rows: HashMap<u32, SubtaskRow> =
            self.store.subtasks(id).await?.into_iter().map(|r| (r.idx, r)).collect();
        let mut records: HashMap<u32, TaskRecord> = HashMap::new();
        for task in &plan.subtasks {
            let row = rows.get_mut(&task.index).ok_or_else(|| {
                RunError::Chain(format!("sub-task {} has no progress row", task.index))
            })?;
            if let Some(rec) = self.sync(&plan, row).await? {
                records.insert(task.index, rec);
            }
        }
        let now = self.chain.now().await?;

        for decision in self.store.pending_decisions(id).await? {
            let outcome = self.apply(&run, &plan, &mut rows, &mut records, &decision, now).await;
            let text = match &outcome {
                Ok(text) => text.clone(),
                Err(e) => format!("failed: {e}"),
            };
            self.store.finish_decision(id, decision.seq, &text).await?;
            self.emit(
                id,
                "decision_applied",
                &format!("decision:{}", decision.seq),
                json!({ "plan_id": plan.id, "index": decision.idx, "decision": decision.kind, "outcome": text }),
            )
            .await?;
        }
        // Decisions may have moved the run.
        let (run, _) = self.load(id).await?;
        let closing = run.state == "cancelling";

        let order = plan.topological_order()?;
        for index in order {
            let task = plan.subtask(index).expect("index from the plan");
            let row = rows.get(&index).cloned().expect("row per sub-task");
            match row.phase.as_str() {
                "waiting" if closing => {
                    let row = SubtaskRow { phase: "skipped".into(), ..row };
                    self.store.put_subtask(id, &row).await?;
                    rows.insert(index, row);
                }
                "waiting" if run.state == "running" => {
                    let deps_paid = task.depends_on.iter().all(|d| {
                        rows.get(d).is_some_and(|r| matches!(r.phase.as_str(), "paid" | "split"))
                    });
                    if deps_paid {
                        let inputs = task
                            .depends_on
                            .iter()
                            .map(|d| {
                                let r = &rows[d];
                                Input {
                                    from: *d,
                                    task_id: r.task_id.clone(),
                                    output: r.output.clone().unwrap_or_default(),
                                }
                            })
                            .collect();
                        let rec = self.create(&plan, &row, inputs, now).await?;
                        self.sync_record(&plan, rows.get_mut(&index).expect("row"), rec).await?;
                    }
                }
                "created" if closing => {
                    let mut rec = records[&index].clone();
                    self.send(|c, s| async move { c.cancel(s, &mut rec).await.map(|_| ()) })
                        .await?;
                }
                "created" | "accepted" => {
                    let rec = &records[&index];
                    if now > rec.task.deadline.to::<u64>() {
                        let mut rec = rec.clone();
                        self.send(
                            |c, s| async move { c.refund_expired(s, &mut rec).await.map(|_| ()) },
                        )
                        .await?;
                    }
                }
                "completed" => {
                    let rec = records[&index].clone();
                    let review_end =
                        rec.task.updatedAt.to::<u64>() + u64::from(rec.task.reviewWindow);
                    if plan.review == ReviewMode::Auto {
                        let mut rec = rec;
                        self.send(|c, s| async move { c.approve(s, &mut rec).await.map(|_| ()) })
                            .await?;
                    } else if now > review_end {
                        let mut rec = rec;
                        self.send(|c, s| async move { c.release(s, &mut rec).await.map(|_| ()) })
                            .await?;
                    }
                }
                "disputed" => {
                    // Nobody ruled in time: anyone may claim the default refund.
                    let rec = &records[&index];
                    let end = rec.task.updatedAt.to::<u64>() + u64::from(rec.task.disputeWindow);
                    if now > end {
                        let mut rec = rec.clone();
                        self.send(
                            |c, s| async move { c.claim_default(s, &mut rec).await.map(|_| ()) },
                        )
                        .await?;
                    }
                }
                "expired" | "cancelled" if !closing && run.state == "running" => {
                    let reason =
                        format!("sub-task {index} {}: retry, change executor or cancel", row.phase);
                    if self.store.transition(id, &["running"], "paused", Some(&reason)).await? {
                        self.emit(
                            id,
                            "plan_paused",
                            &format!("paused:{index}:{}", row.attempt),
                            json!({
                                "plan_id": plan.id, "index": index, "reason": reason,
                            }),
                        )
                        .await?;
                    }
                }
                "refunded" if !closing => {
                    self.close(id, &plan, "dispute_refunded").await?;
                }
                _ => {}
            }
        }

        // Re-read after the steps: sync picks up what they did next wake-up,
        // but completion is decided on stored phases only.
        let rows = self.store.subtasks(id).await?;
        let (run, _) = self.load(id).await?;
        if rows.iter().all(|r| matches!(r.phase.as_str(), "paid" | "split")) {
            let paid: u128 = plan.subtasks.iter().map(|t| t.cost).sum();
            self.store.transition(id, &LIVE_STATES, "completed", None).await?;
            self.emit(
                id,
                "plan_completed",
                "plan_completed",
                json!({
                    "plan_id": plan.id,
                    "subtasks": rows.len(),
                    "total_cost": paid.to_string(),
                }),
            )
            .await?;
            return Ok(true);
        }
        if run.state == "cancelling" && !rows.iter().any(|r| IN_FLIGHT.contains(&r.phase.as_str()))
        {
            let reason = run.reason.clone().unwrap_or_else(|| "cancelled".into());
            let state = if reason == "cancelled" { "cancelled" } else { "failed" };
            for row in rows.iter().filter(|r| r.phase == "waiting") {
                let row = SubtaskRow { phase: "skipped".into(), ..row.clone() };
                self.store.put_subtask(id, &row).await?;
            }
            self.store.transition(id, &["cancelling"], state, Some(&reason)).await?;
            self.emit(
                id,
                "plan_failed",
                "plan_failed",
                json!({ "plan_id": plan.id, "reason": reason }),
            )
            .await?;
            return Ok(true);
        }
        if run.state == "paused"
            && let Some(at) = run.paused_at
            && now_ms() - at
                > i64::try_from(self.config.decision_timeout.as_millis()).unwrap_or(i64::MAX)
        {
            tracing::info!("no decision in time; cancelling");
            self.close(id, &plan, "cancelled").await?;
            self.wake(id);
        }
        Ok(false)
    }

    /// Starts closing a run: no new sub-tasks; what is not accepted yet is
    /// cancelled; what is in flight settles.
    async fn close(&self, id: &str, plan: &Plan, reason: &str) -> Result<(), RunError> {
        if self.store.transition(id, &["running", "paused"], "cancelling", Some(reason)).await? {
            self.emit(
                id,
                "plan_cancelling",
                "plan_cancelling",
                json!({ "plan_id": plan.id, "reason": reason }),
            )
            .await?;
        }
        Ok(())
    }

    /// Applies one decision; returns what came of it.
    async fn apply(
        &self,
        run: &RunRow,
        plan: &Plan,
        rows: &mut HashMap<u32, SubtaskRow>,
        records: &mut HashMap<u32, TaskRecord>,
        decision: &DecisionRow,
        now: u64,
    ) -> Result<String, RunError> {
        let id = run.id.as_str();
        if decision.kind == "cancel" {
            self.close(id, plan, "cancelled").await?;
            return Ok("cancelling".into());
        }
        let index =
            decision.idx.ok_or_else(|| RunError::Invalid("decision without a sub-task".into()))?;
        let task = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
        let row = rows.get_mut(&index).ok_or(PlanError::UnknownIndex(index))?;
        let fresh_deadline = now + task.deadline_offset_secs;
        match (decision.kind.as_str(), row.phase.as_str()) {
            ("approve", "completed") => {
                let mut rec = records[&index].clone();
                self.send(|c, s| async move { c.approve(s, &mut rec).await.map(|_| ()) }).await?;
                Ok("approved".into())
            }
            ("appeal", "ruled") => {
                let uri = self.publish_reason(decision.arg.as_deref())?;
                let mut rec = records[&index].clone();
                self.send(|c, s| async move { c.appeal(s, &mut rec, &uri).await.map(|_| ()) })
                    .await?;
                Ok("appealed".into())
            }
            ("dispute", "completed") => {
                let uri = self.publish_reason(decision.arg.as_deref())?;
                let mut rec = records[&index].clone();
                self.send(|c, s| async move { c.dispute(s, &mut rec, &uri).await.map(|_| ()) })
                    .await?;
                Ok("disputed".into())
            }
            ("retry" | "executor", "created" | "accepted") => {
                let executor = match decision.kind.as_str() {
                    "executor" => parse_address(decision.arg.as_deref())?,
                    _ => records[&index].task.executor,
                };
                let mut rec = records[&index].clone();
                self.send(|c, s| async move {
                    c.reassign(s, &mut rec, executor, fresh_deadline).await.map(|_| ())
                })
                .await?;
                row.executor = executor.to_string();
                self.store.put_subtask(id, row).await?;
                Ok(format!("reassigned to {executor} until {fresh_deadline}"))
            }
            ("retry" | "executor", "expired" | "cancelled") => {
                if decision.kind == "executor" {
                    row.executor = parse_address(decision.arg.as_deref())?.to_string();
                }
                row.attempt += 1;
                row.phase = "waiting".into();
                row.task_id = None;
                row.result_uri = None;
                self.store.put_subtask(id, row).await?;
                records.remove(&index);
                let stuck =
                    rows.values().any(|r| matches!(r.phase.as_str(), "expired" | "cancelled"));
                if !stuck && self.store.transition(id, &["paused"], "running", None).await? {
                    self.emit(
                        id,
                        "plan_resumed",
                        &format!("resumed:{}", decision.seq),
                        json!({ "plan_id": plan.id }),
                    )
                    .await?;
                }
                Ok(format!("attempt {} queued", row_attempt(rows, index)))
            }
            (kind, phase) => {
                Ok(format!("ignored: {kind} does not apply to a sub-task that is {phase}"))
            }
        }
    }

    /// Publishes a dispute or appeal reason as `{"reason": …}`; returns its URI.
    fn publish_reason(&self, reason: Option<&str>) -> Result<String, RunError> {
        let body = json!({ "reason": reason.unwrap_or_default() });
        self.codec
            .publish(body.to_string().as_bytes(), self.blobs.as_ref())
            .map_err(|e| RunError::Invalid(e.to_string()))
    }

    /// Runs `f` with the escrow client and the sponsor's address, holding the
    /// sponsor's send lane. A revert is logged and left for the next sync to
    /// explain (usually someone else moved the task first).
    async fn send<F, Fut>(&self, f: F) -> Result<(), RunError>
    where
        F: FnOnce(EscrowClient, Address) -> Fut,
        Fut: std::future::Future<Output = Result<(), ClientError>>,
    {
        let _lane = self.chain.lane.lock().await;
        match f(self.chain.escrow.clone(), self.chain.sponsor).await {
            Ok(()) => Ok(()),
            Err(ClientError::Revert(r)) => {
                tracing::warn!(revert = %r, "transaction refused; re-reading the chain");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Creates the escrowed task for a sub-task's current attempt, unless it
    /// exists already.
    async fn create(
        &self,
        plan: &Plan,
        row: &SubtaskRow,
        inputs: Vec<Input>,
        now: u64,
    ) -> Result<Option<(TaskRecord, Vec<alloy::rpc::types::Log>)>, RunError> {
        let task = plan.subtask(row.idx).expect("row of the plan");
        let reference = Chain::reference(plan.id, row.idx, row.attempt);
        let id = self.chain.task_id(reference);
        let parent_id = inputs
            .first()
            .and_then(|i: &Input| i.task_id.as_deref())
            .and_then(|t| t.parse::<U256>().ok())
            .unwrap_or_default();
        let envelope = Envelope {
            parent: if parent_id.is_zero() {
                Parent::Plan(plan.id)
            } else {
                Parent::Task(parent_id.to_string())
            },
            spec: task.spec.clone(),
            capability: Some(task.capability.clone()),
            source: if task.depends_on.is_empty() { plan.source.clone() } else { None },
            inputs,
        };
        let spec_uri = self
            .codec
            .encode(&envelope, self.blobs.as_ref())
            .map_err(|e| RunError::Invalid(format!("sub-task {}: envelope: {e}", row.idx)))?;
        let executor = parse_address(Some(&row.executor))?;
        let deadline = now + task.deadline_offset_secs;
        let params = CreateParams {
            r#ref: reference,
            planId: plan.id,
            parentId: parent_id,
            client: self.chain.sponsor,
            executor,
            amount: task.cost,
            deadline: alloy::primitives::aliases::U40::from(deadline),
            reviewWindow: plan.review_window_secs,
            specURI: spec_uri,
        };
        let _lane = self.chain.lane.lock().await;
        // Another wake-up (or a previous life of this process) may have
        // created it meanwhile: the chain decides.
        if let Some(found) = self.chain.task(id).await? {
            return Ok(Some(found));
        }
        let created = self
            .chain
            .escrow
            .create_with_permit(
                &self.chain.signer,
                &self.chain.domain,
                params,
                U256::from(deadline),
            )
            .await;
        match created {
            Ok(_) => {}
            Err(ClientError::Revert(r)) => {
                return Err(RunError::Chain(format!("creating sub-task {}: {r}", row.idx)));
            }
            Err(e) => return Err(e.into()),
        }
        drop(_lane);
        self.chain.task(id).await
    }

    /// Reads the current attempt's task from the chain and records what changed.
    async fn sync(
        &self,
        plan: &Plan,
        row: &mut SubtaskRow,
    ) -> Result<Option<TaskRecord>, RunError> {
        if matches!(row.phase.as_str(), "paid" | "split" | "refunded" | "skipped")
            && row.task_id.is_some()
        {
            return Ok(None);
        }
        let id = self.chain.task_id(Chain::reference(plan.id, row.idx, row.attempt));
        let found = self.chain.task(id).await?;
        self.sync_record(plan, row, found).await
    }

    async fn sync_record(
        &self,
        plan: &Plan,
        row: &mut SubtaskRow,
        found: Option<(TaskRecord, Vec<alloy::rpc::types::Log>)>,
    ) -> Result<Option<TaskRecord>, RunError> {
        let Some((rec, logs)) = found else { return Ok(None) };
        let run_id = plan.id.to_string();
        let task_id = rec.id.to_string();
        for log in &logs {
            let Some(ev) = events::from_log(log) else { continue };
            let mut body = subtask_fields(plan.id, row.idx, row.attempt, &task_id);
            events::merge(&mut body, ev.body.clone());
            self.emit(&run_id, ev.kind, &ev.dedup, body.clone()).await?;
            if ev.kind == "subtask_completed" && plan.review == ReviewMode::Manual {
                let review_end = rec.task.reviewWindow;
                events::merge(&mut body, json!({ "review_window_secs": review_end }));
                self.emit(&run_id, "review_required", &format!("review:{}", ev.dedup), body)
                    .await?;
            } else if ev.kind == "subtask_disputed" {
                self.emit(&run_id, "dispute_opened", &format!("opened:{}", ev.dedup), body).await?;
            } else if let Some(resolved) = events::dispute_resolution(&ev.body) {
                events::merge(&mut body, resolved);
                self.emit(&run_id, "dispute_resolved", &format!("resolved:{}", ev.dedup), body)
                    .await?;
            }
        }
        let phase = phase_of(rec.status());
        let mut changed = row.phase != phase || row.task_id.as_deref() != Some(task_id.as_str());
        row.phase = phase;
        row.task_id = Some(task_id);
        row.executor = rec.task.executor.to_string();
        if row.result_uri != rec.result_uri {
            if let Some(uri) = rec.result_uri.as_deref() {
                self.flag_output(plan, row, uri).await?;
            }
            row.result_uri.clone_from(&rec.result_uri);
            changed = true;
        }
        if matches!(rec.status(), Status::Paid | Status::Split) && row.output.is_none() {
            row.output = Some(self.output_of(rec.result_uri.as_deref()));
            changed = true;
        }
        if changed {
            self.store.put_subtask(&run_id, row).await?;
        }
        Ok(Some(rec))
    }

    /// Emits `output_flagged` when the result at `uri` carries text aimed at
    /// a later agent or the judge (the shared detector over every string of
    /// it). Read once, when the result first appears; the flag informs and
    /// does not stop the plan. An unreadable result is left to [`Self::output_of`].
    async fn flag_output(&self, plan: &Plan, row: &SubtaskRow, uri: &str) -> Result<(), RunError> {
        let Ok(bytes) = self.codec.fetch(uri, self.blobs.as_ref()) else { return Ok(()) };
        let result = serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        let Some(flag) = events::output_flag(row.idx, &injection::scan_json(&result)) else {
            return Ok(());
        };
        let task_id = row.task_id.as_deref().unwrap_or_default();
        let mut body = subtask_fields(plan.id, row.idx, row.attempt, task_id);
        events::merge(&mut body, json!({ "result_uri": uri }));
        events::merge(&mut body, flag);
        let dedup = format!("flagged:{task_id}");
        self.emit(&plan.id.to_string(), events::OUTPUT_FLAGGED, &dedup, body).await
    }

    /// The text a delivered result hands to dependants (see [`readable`]); a
    /// marker when it cannot be read.
    fn output_of(&self, uri: Option<&str>) -> String {
        let Some(uri) = uri else { return String::new() };
        match self.codec.fetch(uri, self.blobs.as_ref()) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) => readable(&v),
                Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
            },
            Err(e) => {
                tracing::warn!(%uri, error = %e, "unreadable result");
                format!("[unreadable result: {e}]")
            }
        }
    }
}

/// A result as text for the next sub-task: its `text` when it has one, else
/// one `field: value` line per non-empty field (lists joined by commas).
pub fn readable(v: &Value) -> String {
    if let Some(text) = v.get("text").and_then(Value::as_str) {
        return text.to_owned();
    }
    let Some(obj) = v.as_object() else { return v.to_string() };
    let mut lines = Vec::new();
    for (key, value) in obj {
        if key == "capability" {
            continue;
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Array(items) if items.is_empty() => continue,
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", "),
            Value::Null => continue,
            other => other.to_string(),
        };
        lines.push(format!("{}: {text}", key.replace('_', " ")));
    }
    lines.join("\n")
}

fn row_attempt(rows: &HashMap<u32, SubtaskRow>, index: u32) -> u32 {
    rows.get(&index).map_or(0, |r| r.attempt)
}

fn parse_address(s: Option<&str>) -> Result<Address, RunError> {
    s.and_then(|s| s.parse().ok())
        .ok_or_else(|| RunError::Invalid(format!("not an address: {}", s.unwrap_or("(none)"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_readable_text() {
        assert_eq!(readable(&json!({"capability": "summarize", "text": "short"})), "short");
        let sentiment = json!({"capability": "sentiment-classify", "label": "negative", "score": -0.5, "terms": []});
        assert_eq!(readable(&sentiment), "label: negative\nscore: -0.5");
        let entities = json!({"names": ["Ada", "Linus"], "emails": [], "eth_addresses": ["0x1"]});
        assert_eq!(readable(&entities), "eth addresses: 0x1\nnames: Ada, Linus");
        assert_eq!(readable(&json!("plain")), "\"plain\"");
    }

    #[test]
    fn references_differ_per_index_and_attempt() {
        let plan = B256::repeat_byte(1);
        let r = Chain::reference(plan, 0, 0);
        assert_ne!(r, Chain::reference(plan, 1, 0));
        assert_ne!(r, Chain::reference(plan, 0, 1));
        assert_ne!(r, Chain::reference(B256::repeat_byte(2), 0, 0));
        assert_eq!(r, Chain::reference(plan, 0, 0));
    }
}
