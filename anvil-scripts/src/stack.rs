//! The whole system in one process, for the demo, the benchmarks and the
//! end-to-end tests: offline workers for the demo agents (following new
//! blocks over anvil's websocket) and the orchestrator with its runner.

use std::{sync::Arc, time::Duration};

use alloy::{network::EthereumWallet, primitives::B256, providers::Provider};
use tessera_bindings::{client::connect, deployment::Deployment, envelope::BlobStore};
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

/// A plan's tree as the indexer rebuilds it from the chain alone: one pass
/// of an indexer (in memory) over every block since the deployment, then
/// its plan-tree query, drawn as `tessera tasks tree` draws it.
pub async fn indexed_tree(
    chain: &crate::chain::LocalChain,
    deployment: &Deployment,
    plan: B256,
    blobs: Blobs,
) -> Result<String, Error> {
    use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
    let index_err = |e: &dyn std::fmt::Display| Error::Orchestrator(format!("indexer: {e}"));
    let store = IndexStore::connect("sqlite::memory:").await.map_err(|e| index_err(&e))?;
    let provider =
        alloy::providers::ProviderBuilder::new().connect_http(chain.endpoint_url()).erased();
    let mut indexer =
        Indexer::new(provider, deployment.clone(), store, Some(blobs), IndexerConfig::default());
    indexer.sync_once().await.map_err(|e| index_err(&e))?;
    let tree = indexer.store().plan_tree(&plan.to_string()).await.map_err(|e| index_err(&e))?;
    let mut body = serde_json::to_value(&tree).map_err(|e| index_err(&e))?;
    body["block"] = indexer.provider().get_block_number().await?.into();
    Ok(tessera_indexer::render::plan_tree(&body))
}
