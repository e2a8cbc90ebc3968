//! The whole system in one process, for the demo, the benchmarks and the
//! end-to-end tests: offline workers for the demo agents (following new
//! blocks over anvil's websocket, or polling over HTTP alone as through a
//! hosted provider) and the orchestrator with its runner.

use std::{path::PathBuf, sync::Arc, time::Duration};

use alloy::{network::EthereumWallet, providers::Provider};
use tessera_anvil::{actors::Actors, chain::Endpoints, deploy::DemoAgent};
use tessera_bindings::{
    client::connect,
    deployment::Deployment,
    envelope::{BlobSources, BlobStore, BlobUrl, FsBlobStore},
};
use tessera_orchestrator::{
    plan::PlanId,
    runner::{Chain, Orchestrator, RunnerConfig},
    store::Store,
};
use tessera_workers::{AgentCard, runtime::Worker};

use crate::Error;

/// Shared blob storage of one in-process stack.
pub type Blobs = Arc<dyn BlobStore + Send + Sync>;

/// One party's home: a data directory of its own, its blob store in it,
/// served over HTTP at an address of its own (`GET <url>/<hash>`), and the
/// other parties' blobs read through the location hints of their URIs. Two
/// homes share nothing but the chain and HTTP. The gateway stops when the
/// home drops.
#[derive(Debug)]
pub struct Home {
    /// The party's directory.
    pub dir: PathBuf,
    /// Where it keeps, reads and publishes blobs.
    pub sources: BlobSources,
    /// Its blob gateway's base URL, as its URIs' hints name it.
    pub url: BlobUrl,
    server: tokio::task::JoinHandle<()>,
}

impl Home {
    /// A home in `dir` (created), its gateway on a free local port.
    pub async fn open(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        let dir = dir.into();
        let home = |source| Error::Home { dir: dir.display().to_string(), source };
        std::fs::create_dir_all(&dir).map_err(home)?;
        let store: Blobs = Arc::new(FsBlobStore::new(dir.join("blobs")));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(home)?;
        let at = listener.local_addr().map_err(home)?;
        let url = BlobUrl::parse(&format!("http://{at}/blobs"))?;
        let app = tessera_http::blobs::router(Arc::clone(&store));
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "a home's blob gateway stopped");
            }
        });
        // A home lives beside a local chain: hints on loopback are its own.
        let sources = BlobSources::new(store)
            .on_chain(tessera_bindings::envelope::LOCAL_CHAIN_ID)
            .with_public_url(Some(url.clone()));
        Ok(Self { dir, sources, url, server })
    }

    /// This home no longer reads location hints: a blob it was not given
    /// (and no gateway holds) is beyond it, as for a party whose network
    /// cannot reach the writer's.
    #[must_use]
    pub fn cut_off(mut self) -> Self {
        self.sources = self.sources.clone().follow_hints(false);
        self
    }

    /// Whether the blob named by `uri` (`sha256:…`) is kept here.
    pub fn holds(&self, uri: &str) -> bool {
        matches!(
            tessera_bindings::envelope::BlobRef::of_uri(uri),
            Ok(Some(blob)) if self.sources.local().get(&blob.hash, tessera_bindings::envelope::HARD_MAX_BYTES).is_ok_and(|b| b.is_some())
        )
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A demo agent's card as its worker runs it.
pub trait WorkerCard {
    /// The agent's card as its worker loads it (offline model).
    fn worker_card(&self) -> AgentCard;
}

impl WorkerCard for DemoAgent {
    fn worker_card(&self) -> AgentCard {
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
    let follow = (Some(chain.ws.clone()), Duration::from_millis(200));
    spawn_following(&chain.http, follow, actors, deployment, agent, blobs).await
}

/// [`spawn_worker`] reaching the chain at `http` only, with no websocket
/// (as through a hosted provider): it polls for new blocks every `poll`.
pub async fn spawn_polling_worker(
    http: &alloy::transports::http::reqwest::Url,
    poll: Duration,
    actors: &Actors,
    deployment: &Deployment,
    agent: &DemoAgent,
    blobs: Blobs,
) -> Result<tokio::task::JoinHandle<()>, Error> {
    spawn_following(http, (None, poll), actors, deployment, agent, blobs).await
}

/// Registers the agent's card at `http` and runs its worker, reading and
/// publishing blobs through `sources`, following new blocks over the
/// websocket when one is given, else every `poll`.
async fn spawn_following(
    http: &alloy::transports::http::reqwest::Url,
    (ws, poll): (Option<String>, Duration),
    actors: &Actors,
    deployment: &Deployment,
    agent: &DemoAgent,
    sources: impl Into<BlobSources>,
) -> Result<tokio::task::JoinHandle<()>, Error> {
    let sources = sources.into();
    let signer = actors.agents[agent.account].clone();
    let me = signer.address();
    let provider = connect(http.clone(), EthereumWallet::new(signer));
    let local = Arc::clone(sources.local());
    let mut worker = Worker::new(provider, me, agent.worker_card(), deployment.clone(), local)
        .with_blob_sources(sources);
    worker.ensure_registered().await.map_err(|source| Error::Register { agent: me, source })?;
    Ok(tokio::spawn(async move {
        worker.run(ws.as_deref(), poll, |_| {}, std::future::pending()).await;
    }))
}

/// [`spawn_worker`] for an agent at `home`: its own store, read from and
/// published with as the home says.
pub async fn spawn_worker_at(
    chain: &Endpoints,
    actors: &Actors,
    deployment: &Deployment,
    agent: &DemoAgent,
    home: &Home,
) -> Result<tokio::task::JoinHandle<()>, Error> {
    let follow = (Some(chain.ws.clone()), Duration::from_millis(200));
    spawn_following(&chain.http, follow, actors, deployment, agent, home.sources.clone()).await
}

/// An orchestrator funding from the sponsor account, resumed and following
/// new blocks over the chain's websocket.
pub async fn start_orchestrator(
    chain: &Endpoints,
    actors: &Actors,
    deployment: &Deployment,
    store: Store,
    blobs: impl Into<BlobSources>,
    config: RunnerConfig,
) -> Result<(Arc<Orchestrator>, tokio::task::JoinHandle<()>), Error> {
    let ws = Some(chain.ws.clone());
    orchestrator(&chain.http, ws, actors, deployment, store, blobs.into(), config).await
}

/// [`start_orchestrator`] reaching the chain at `http` only, with no
/// websocket (as through a hosted provider): it polls for new blocks every
/// `config.poll_interval`.
pub async fn start_polling_orchestrator(
    http: &alloy::transports::http::reqwest::Url,
    actors: &Actors,
    deployment: &Deployment,
    store: Store,
    blobs: impl Into<BlobSources>,
    config: RunnerConfig,
) -> Result<(Arc<Orchestrator>, tokio::task::JoinHandle<()>), Error> {
    orchestrator(http, None, actors, deployment, store, blobs.into(), config).await
}

async fn orchestrator(
    http: &alloy::transports::http::reqwest::Url,
    ws: Option<String>,
    actors: &Actors,
    deployment: &Deployment,
    store: Store,
    blobs: BlobSources,
    config: RunnerConfig,
) -> Result<(Arc<Orchestrator>, tokio::task::JoinHandle<()>), Error> {
    let signer = actors.sponsor.clone();
    let provider = connect(http.clone(), EthereumWallet::new(signer.clone()));
    let sponsor = Chain::new(provider, signer, deployment.clone()).await?;
    let orch = Orchestrator::with_sources(store, sponsor, blobs, config);
    orch.resume_all().await?;
    let heads = tokio::spawn(Arc::clone(&orch).follow_heads(ws));
    Ok((orch, heads))
}

/// A plan's tree as the indexer rebuilds it from the chain alone: one pass
/// of an indexer (in memory) over every block since the deployment, then
/// its plan-tree query, drawn as `tessera tasks tree` draws it.
pub async fn indexed_tree(
    chain: &tessera_anvil::chain::LocalChain,
    deployment: &Deployment,
    plan: PlanId,
    blobs: impl Into<BlobSources>,
) -> Result<String, Error> {
    let sources: BlobSources = blobs.into();
    use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
    let index_err = |e| Error::Index(Box::new(e));
    let store = IndexStore::connect("sqlite::memory:").await.map_err(index_err)?;
    let provider =
        alloy::providers::ProviderBuilder::new().connect_http(chain.endpoint_url()).erased();
    let mut indexer =
        Indexer::new(provider, deployment.clone(), store, None, IndexerConfig::default())
            .with_blob_sources(sources);
    indexer.sync_once().await.map_err(|e| Error::Index(Box::new(e)))?;
    // Specs are fetched off the ingest path: a one-shot tree waits for them.
    indexer.settle_specs().await.map_err(|e| Error::Index(Box::new(e)))?;
    let tree = indexer.store().plan_tree(&plan.to_string()).await.map_err(index_err)?;
    let mut body = serde_json::to_value(&tree).map_err(|e| Error::Index(Box::new(e)))?;
    body["block"] = indexer.provider().get_block_number().await?.into();
    Ok(tessera_indexer::render::plan_tree(&body))
}

#[cfg(test)]
mod tests {
    use tessera_anvil::deploy::DEMO_AGENTS;
    use tessera_bindings::card::AgentCard;

    #[test]
    fn demo_cards_are_valid_and_read_back_from_their_uri() {
        for agent in DEMO_AGENTS {
            let card = AgentCard::from_uri(&agent.card_uri()).unwrap();
            assert_eq!(card, agent.card().published());
            assert_eq!(card.capabilities.len(), agent.offers.len());
            for (offer, &(name, price)) in card.capabilities.iter().zip(agent.offers) {
                assert_eq!((offer.name.as_str(), offer.price.base_units()), (name, price));
            }
            tessera_workers::AgentCard::new(agent.card()).unwrap();
        }
    }

    /// Each demo agent's YAML card in `workers/cards/` publishes what the
    /// deploy registers for it — the same capabilities at the same prices,
    /// the same published card — so `tessera worker --card` on a demo key
    /// reprices nothing; every other card there is named as not deployed.
    #[test]
    fn the_demo_cards_agree_with_what_the_deploy_registers() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../workers/cards");
        // Cards no deploy registers: the demo's brief agent (registered by
        // its own worker) and the LLM example.
        let not_deployed = ["brief-1", "llm-sentiment"];
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let card = tessera_workers::AgentCard::load(&path).unwrap();
            let file = path.display();
            if not_deployed.contains(&card.id.as_str()) {
                continue;
            }
            let Some(agent) = DEMO_AGENTS.iter().find(|a| a.id == card.id) else {
                panic!("{file}: {:?} is no demo agent's id", card.id)
            };
            let offers: Vec<(&str, u128)> =
                card.capabilities.iter().map(|c| (c.name.as_str(), c.price.base_units())).collect();
            assert_eq!(offers, agent.offers, "{file}: the deploy registers other prices");
            assert_eq!(card.published(), agent.card().published(), "{file}");
            assert_eq!(card.to_data_uri(), agent.card_uri(), "{file}: the metadata URI differs");
            // The comment names the dev account whose key runs it: the
            // agents' accounts follow the five role accounts.
            let text = std::fs::read_to_string(&path).unwrap();
            let comment: String = text
                .lines()
                .take_while(|l| l.starts_with('#'))
                .map(|l| l.trim_start_matches('#').trim())
                .collect::<Vec<_>>()
                .join(" ");
            let named = format!("dev account {}'s key", 5 + agent.account);
            assert!(comment.contains(&named), "{file}: its comment should name {named}: {comment}");
            seen.push(agent.id);
        }
        seen.sort_unstable();
        let mut all: Vec<&str> = DEMO_AGENTS.iter().map(|a| a.id).collect();
        all.sort_unstable();
        assert_eq!(seen, all, "one card per demo agent");
    }
}
