//! The whole system in one process, for the demo, the benchmarks and the
//! end-to-end tests: offline workers for the demo agents (following new
//! blocks over anvil's websocket) and the orchestrator with its runner.

use std::{sync::Arc, time::Duration};

use alloy::{network::EthereumWallet, primitives::B256, providers::Provider, rpc::types::Filter};
use tessera_bindings::{
    TaskEscrow,
    client::connect,
    deployment::Deployment,
    envelope::{BlobStore, EnvelopeCodec},
    task::{TaskRecord, decode_log},
    usdc::Usdc,
};
use tessera_orchestrator::{
    runner::{Chain, Orchestrator, RunnerConfig},
    store::Store,
};
use tessera_workers::{AgentCard, runtime::Worker};

use crate::{Error, actors::Actors, chain::Endpoints, deploy::DemoAgent};

/// Shared blob storage of one in-process stack.
pub type Blobs = Arc<dyn BlobStore + Send + Sync>;

impl DemoAgent {
    /// The agent's card as its worker loads it (offline model).
    pub fn worker_card(&self) -> AgentCard {
        AgentCard::new(self.card()).expect("demo agent cards are valid")
    }
}

/// Registers (or updates) a demo agent's card and runs its worker in the
/// background until the handle is aborted.
pub async fn spawn_worker(
    chain: &Endpoints,
    actors: &Actors,
    deployment: &Deployment,
    agent: &DemoAgent,
    blobs: Blobs,
) -> Result<tokio::task::JoinHandle<()>, Error> {
    let signer = actors.agents[agent.account].clone();
    let me = signer.address();
    let provider = connect(chain.http.clone(), EthereumWallet::new(signer));
    let mut worker = Worker::new(provider, me, agent.worker_card(), deployment.clone(), blobs);
    worker.ensure_registered().await.map_err(|e| Error::Key(format!("registering {me}: {e}")))?;
    let ws = chain.ws.clone();
    Ok(tokio::spawn(async move {
        worker.run(Some(&ws), Duration::from_millis(200), |_| {}, std::future::pending()).await;
    }))
}

/// An orchestrator funding from the sponsor account, resumed and following
/// new blocks over the chain's websocket.
pub async fn start_orchestrator(
    chain: &Endpoints,
    actors: &Actors,
    deployment: &Deployment,
    store: Store,
    blobs: Blobs,
    config: RunnerConfig,
) -> Result<(Arc<Orchestrator>, tokio::task::JoinHandle<()>), Error> {
    let signer = actors.sponsor.clone();
    let provider = connect(chain.http.clone(), EthereumWallet::new(signer.clone()));
    let sponsor = Chain::new(provider, signer, deployment.clone())
        .await
        .map_err(|e| Error::Key(format!("orchestrator chain: {e}")))?;
    let orch = Orchestrator::new(store, sponsor, blobs, config);
    orch.resume_all().await.map_err(|e| Error::Key(format!("resuming runs: {e}")))?;
    let heads = tokio::spawn(Arc::clone(&orch).follow_heads(Some(chain.ws.clone())));
    Ok((orch, heads))
}

/// The lineage of a plan rebuilt from chain events alone: every task created
/// under `plan`, nested under its parent task, with capability (from the
/// envelope), status, executor and amount. One line per task.
pub async fn lineage(
    provider: &impl Provider,
    deployment: &Deployment,
    plan: B256,
    blobs: &dyn BlobStore,
) -> Result<String, Error> {
    let created = provider
        .get_logs(
            &Filter::new()
                .address(deployment.task_escrow)
                .event_signature(
                    <TaskEscrow::TaskCreated as alloy::sol_types::SolEvent>::SIGNATURE_HASH,
                )
                .topic2(plan)
                .from_block(deployment.deploy_block),
        )
        .await?;
    let mut tasks: Vec<TaskRecord> = Vec::new();
    for log in &created {
        let Some(TaskEscrow::TaskEscrowEvents::TaskCreated(ev)) = decode_log(log) else { continue };
        let all = provider
            .get_logs(
                &Filter::new()
                    .address(deployment.task_escrow)
                    .topic1(B256::from(ev.taskId))
                    .from_block(deployment.deploy_block),
            )
            .await?;
        if let Ok(rec) = TaskRecord::from_logs(ev.taskId, &all) {
            tasks.push(rec);
        }
    }
    let mut out = format!("plan {plan}\n");
    let codec = EnvelopeCodec::default();
    fn walk(
        out: &mut String,
        tasks: &[TaskRecord],
        parent: alloy::primitives::U256,
        prefix: &str,
        codec: &EnvelopeCodec,
        blobs: &dyn BlobStore,
    ) {
        let children: Vec<&TaskRecord> = tasks.iter().filter(|t| t.parent_id == parent).collect();
        for (i, t) in children.iter().enumerate() {
            let last = i + 1 == children.len();
            let capability = codec
                .decode(&t.spec_uri, blobs)
                .ok()
                .and_then(|e| e.capability)
                .unwrap_or_else(|| "?".into());
            let id = format!("{:#x}", t.id);
            out.push_str(&format!(
                "{prefix}{} task {}…{}  {:<18} {:<9} {}  {} USDC\n",
                if last { "└─" } else { "├─" },
                &id[..8],
                &id[id.len() - 4..],
                capability,
                t.status().as_str(),
                t.task.executor,
                Usdc::from_base_units(t.task.amount),
            ));
            let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
            walk(out, tasks, t.id, &deeper, codec, blobs);
        }
    }
    walk(&mut out, &tasks, alloy::primitives::U256::ZERO, "", &codec, blobs);
    Ok(out)
}
