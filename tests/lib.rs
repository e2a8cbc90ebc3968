//! Shared fixture for Tessera's end-to-end tests: a real anvil chain with the
//! contracts deployed from Rust, one account per role, and the escrow client.
//! The tests themselves live in `it/`.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

pub mod mock_openai;
/// The stand-in hosted provider, kept with the chain tooling so the
/// benches use it too.
pub use tessera_anvil::standin as provider;

use std::{sync::Arc, time::Duration};

use alloy::{
    primitives::{Address, B256, U256},
    providers::{DynProvider, Provider},
};
use serde_json::Value;
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DEMO_AGENTS, DemoAgent, DeployConfig},
    lifecycle::Driver,
};
use tessera_bindings::{MockUSDC, deployment::Deployment, envelope::FsBlobStore};
use tessera_orchestrator::{
    runner::{Chain, Orchestrator, RunnerConfig},
    service::{Service, ServiceConfig},
    store::Store,
};
use tessera_stack::{self as stack, Blobs, WorkerCard as _};

/// Most anvil chains the test process runs at once: on a small machine
/// (2 cores) more chains only make every test slower and flakier. Set
/// `TESSERA_TEST_ANVILS` to change it.
fn anvil_slots() -> &'static tokio::sync::Semaphore {
    static SLOTS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let slots = std::env::var("TESSERA_TEST_ANVILS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cores.clamp(2, 3));
        tokio::sync::Semaphore::new(slots)
    })
}

/// A slot for one more anvil chain, held for as long as the chain runs. A
/// test that waits too long (one that holds two chains at once while the
/// others hold the rest) goes ahead without one rather than deadlock.
pub async fn anvil_slot() -> Option<tokio::sync::SemaphorePermit<'static>> {
    let wait = tokio::time::timeout(Duration::from_secs(90), anvil_slots().acquire()).await;
    match wait {
        Ok(permit) => permit.ok(),
        Err(_) => {
            eprintln!("no free anvil slot after 90 s; starting one more chain anyway");
            None
        }
    }
}

/// A fresh chain with everything deployed; anvil stops when this drops.
#[derive(Debug)]
pub struct TestEnv {
    /// The running chain.
    pub chain: LocalChain,
    /// Role accounts.
    pub actors: Actors,
    /// Provider signing for every role.
    pub provider: DynProvider,
    /// Where the contracts are.
    pub deployment: Deployment,
    _slot: Option<tokio::sync::SemaphorePermit<'static>>,
}

impl TestEnv {
    /// Starts anvil, deploys with `cfg` and registers the demo agents.
    pub async fn start(cfg: DeployConfig) -> Self {
        Self::start_on(cfg, &ChainOptions::default()).await
    }

    /// [`TestEnv::start`] on an anvil started with `chain`.
    pub async fn start_on(cfg: DeployConfig, chain: &ChainOptions) -> Self {
        let slot = anvil_slot().await;
        let chain = LocalChain::start(chain).expect("anvil starts");
        let actors = Actors::from_keys(&chain.keys()).expect("dev keys");
        let provider = actors.provider(chain.endpoint_url());
        let deployment = deploy::deploy(&provider, &actors, &cfg).await.expect("deploys");
        deploy::register_demo_agents(&provider, &actors, deployment.agent_registry)
            .await
            .expect("registers demo agents");
        Self { chain, actors, provider, deployment, _slot: slot }
    }

    /// A lifecycle driver over this deployment.
    pub fn driver(&self) -> Driver<'_> {
        Driver::new(self.provider.clone(), &self.actors, &self.deployment)
    }

    /// Token balance of `who`.
    pub async fn balance(&self, who: Address) -> U256 {
        MockUSDC::new(self.deployment.token, &self.provider)
            .balanceOf(who)
            .call()
            .await
            .expect("balanceOf")
    }

    /// Agent `agent` (a registered demo agent) now asks `price` base units for
    /// `capability`, which it already offers: tests of the escrow's
    /// arithmetic use amounts below the demo prices, and the escrow refuses
    /// a task that pays less than its executor asks.
    pub async fn set_price(&self, agent: Address, capability: &str, price: u128) {
        let word = tessera_bindings::capability::encode(capability).expect("a valid name");
        let receipt =
            tessera_bindings::AgentRegistry::new(self.deployment.agent_registry, &self.provider)
                .updatePrice(word, price)
                .from(agent)
                .send()
                .await
                .expect("updatePrice sent")
                .get_receipt()
                .await
                .expect("updatePrice mined");
        assert!(receipt.status(), "updatePrice succeeded");
    }
}

/// The whole stack on one chain: the orchestrator with its API on a local
/// port, a SQLite run store, and one offline worker per demo agent, each
/// following new blocks over anvil's websocket.
#[derive(Debug)]
pub struct Stack {
    /// Chain, roles and contracts.
    pub env: TestEnv,
    /// The orchestrator.
    pub orch: Arc<Orchestrator>,
    /// The service around it (API, head follower, drivers).
    pub service: Service,
    /// API base URL, e.g. `http://127.0.0.1:40123`.
    pub api: String,
    /// Bearer token of the API.
    pub token: String,
    /// HTTP client.
    pub http: reqwest::Client,
    /// Blob directory shared by the orchestrator and the workers.
    pub blobs: std::path::PathBuf,
    /// The stand-in provider every service talks to, when started through one.
    pub stand_in: Option<provider::StandIn>,
    _dir: tempfile::TempDir,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// What [`Stack::restart`] starts the service again with.
    again: Box<Again>,
}

/// The parts of a stack's service that a restart keeps.
#[derive(Debug)]
struct Again {
    config: RunnerConfig,
    db_url: String,
    /// Whether the service holds the operator key (restarts are not
    /// offered then).
    operator: bool,
    /// Whether it reaches the chain through a stand-in (idem).
    through: bool,
}

impl Drop for Stack {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Stack {
    /// Stops the service the way `tessera serve` does on SIGTERM: no more
    /// requests, every driver finishes its current step.
    pub async fn shutdown(&mut self) {
        self.service.shutdown().await.expect("service stops cleanly");
    }

    /// After [`Stack::shutdown`], starts the service again on the same run
    /// store, chain and blobs, as a restarted `tessera serve` would, handing
    /// it `records` and `catalogue` (see [`ServiceConfig::records`]); the
    /// live runs resume. For a stack started with the sponsor's key and
    /// straight to the chain.
    pub async fn restart(
        &mut self,
        records: Option<Arc<dyn tessera_orchestrator::choose::AgentRecords>>,
        catalogue: Option<Arc<dyn tessera_bindings::catalogue::CatalogueSource>>,
    ) {
        assert!(!self.again.operator && !self.again.through, "restarted: a plain stack only");
        let env = &self.env;
        let signer = env.actors.sponsor.clone();
        let wallet = alloy::network::EthereumWallet::new(signer.clone());
        let provider = tessera_bindings::client::connect(env.chain.endpoint_url(), wallet);
        let chain = Chain::new(provider, signer, env.deployment.clone()).await.expect("chain");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let store = Store::connect(&self.again.db_url).await.expect("store");
        let (runner, ws) = (self.again.config.clone(), Some(env.chain.ws_endpoint()));
        let config = service_config(store, chain, &self.blobs, runner, ws, listener);
        let service = Service::start(ServiceConfig { records, catalogue, ..config })
            .await
            .expect("orchestrator starts again");
        self.api = format!("http://{}", service.addr());
        self.orch = Arc::clone(service.orchestrator());
        self.service = service;
    }
}

/// A test stack's service: the sponsor's key, blobs in `blobs`, the test
/// token, the offline classifier, default limits, no records or catalogue.
fn service_config(
    store: Store,
    chain: Chain,
    blobs: &std::path::Path,
    runner: RunnerConfig,
    ws_url: Option<String>,
    listener: tokio::net::TcpListener,
) -> ServiceConfig {
    ServiceConfig {
        store,
        chain,
        blobs: Arc::new(FsBlobStore::new(blobs)),
        blob_sources: None,
        runner,
        ws_url,
        listener,
        token: TEST_TOKEN.into(),
        operator: None,
        classifier: tessera_classifier::Classifier::offline(),
        gate: tessera_http::limits::StreamGate::new(&Default::default()),
        nested: Vec::new(),
        records: None,
        catalogue: None,
    }
}

/// Which services of a [`Stack`] reach the chain through a stand-in
/// provider.
#[derive(Debug)]
enum Through {
    /// None: every service talks to the chain directly.
    Nothing,
    /// Every service, over HTTP only (they poll), under these limits.
    Everyone(provider::Limits),
    /// The orchestrator alone, without limits, following heads over the
    /// websocket: its requests counted apart from the workers'.
    Orchestrator,
}

/// Token the test stacks use.
pub const TEST_TOKEN: &str = "test-token-0123456789";

impl Stack {
    /// Starts everything in operator mode: the orchestrator holds the
    /// client's key as its operator key (it pays gas and is every task's
    /// client, and funds nothing itself) and no sponsor's; runs are funded
    /// by their sponsors' grants. Workers for the demo agents at `workers`.
    pub async fn start_operator(config: RunnerConfig, workers: &[usize]) -> Self {
        let deploy = DeployConfig::default();
        Self::start_full(config, None, workers, deploy, None, Through::Nothing, true).await
    }

    /// Starts everything with default settings and SQLite.
    pub async fn start() -> Self {
        Self::start_with(RunnerConfig::default(), None).await
    }

    /// Starts everything; `db_url` overrides the SQLite file.
    pub async fn start_with(config: RunnerConfig, db_url: Option<String>) -> Self {
        Self::start_custom(config, db_url, &[0, 1, 2, 3, 4]).await
    }

    /// Starts everything, with workers for the demo agents at `workers`
    /// (indexes into `DEMO_AGENTS`) only: the others are registered but
    /// never accept anything.
    pub async fn start_custom(
        config: RunnerConfig,
        db_url: Option<String>,
        workers: &[usize],
    ) -> Self {
        Self::start_custom_deploy(config, db_url, workers, DeployConfig::default()).await
    }

    /// [`Stack::start_custom`] with the escrow deployed with `deploy`.
    pub async fn start_custom_deploy(
        config: RunnerConfig,
        db_url: Option<String>,
        workers: &[usize],
        deploy: DeployConfig,
    ) -> Self {
        Self::start_full(config, db_url, workers, deploy, None, Through::Nothing, false).await
    }

    /// Everything with default settings, every service (orchestrator and
    /// workers) reaching the chain only through a stand-in hosted provider
    /// imposing `limits`, over HTTP (no websocket: they poll).
    pub async fn start_through(limits: provider::Limits) -> Self {
        let all = [0, 1, 2, 3, 4];
        let (cfg, deploy) = (RunnerConfig::default(), DeployConfig::default());
        Self::start_full(cfg, None, &all, deploy, None, Through::Everyone(limits), false).await
    }

    /// Everything with `config`, the orchestrator alone reaching the chain
    /// over HTTP through a stand-in provider without limits (heads still
    /// over the websocket), so its requests are counted apart from the
    /// workers' ([`Stack::stand_in`]'s counts).
    pub async fn start_counted(config: RunnerConfig) -> Self {
        let (all, deploy) = ([0, 1, 2, 3, 4], DeployConfig::default());
        Self::start_full(config, None, &all, deploy, None, Through::Orchestrator, false).await
    }

    /// Everything on a chain that mines a block every `secs` seconds, the
    /// escrow deployed with `deploy`, every service (orchestrator and the
    /// five demo workers) reaching the chain only through a stand-in hosted
    /// provider imposing `limits`, polling over HTTP every half block.
    pub async fn start_hosted(secs: u64, limits: provider::Limits, deploy: DeployConfig) -> Self {
        let all = [0, 1, 2, 3, 4];
        let cfg = RunnerConfig { poll_interval: hosted_poll(secs), ..RunnerConfig::default() };
        let through = Through::Everyone(limits);
        Self::start_full(cfg, None, &all, deploy, Some(secs), through, false).await
    }

    /// The stand-in's URL, for more services to reach the chain through it
    /// (panics on a stack started without one).
    pub fn hosted_url(&self) -> reqwest::Url {
        self.stand_in.as_ref().expect("a stack started through a stand-in").url.clone()
    }

    /// Everything with default settings, on a chain that mines a block
    /// every `secs` seconds from before the orchestrator starts (deployed
    /// on automine first).
    pub async fn start_on_timed_blocks(secs: u64) -> Self {
        Self::start_on_timed_blocks_with(RunnerConfig::default(), secs).await
    }

    /// [`Stack::start_on_timed_blocks`] with the runner configured by `config`.
    pub async fn start_on_timed_blocks_with(config: RunnerConfig, secs: u64) -> Self {
        Self::start_custom_on_timed_blocks(config, &[0, 1, 2, 3, 4], secs).await
    }

    /// [`Stack::start_on_timed_blocks_with`], with workers for the demo
    /// agents at `workers` only (see [`Stack::start_custom`]).
    pub async fn start_custom_on_timed_blocks(
        config: RunnerConfig,
        workers: &[usize],
        secs: u64,
    ) -> Self {
        let deploy = DeployConfig::default();
        Self::start_full(config, None, workers, deploy, Some(secs), Through::Nothing, false).await
    }

    async fn start_full(
        config: RunnerConfig,
        db_url: Option<String>,
        workers: &[usize],
        deploy: DeployConfig,
        block_time: Option<u64>,
        through: Through,
        operator: bool,
    ) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let env = TestEnv::start(deploy).await;
        if let Some(secs) = block_time {
            let p = &env.provider;
            p.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await.expect("automine");
            p.raw_request::<_, Value>("evm_setIntervalMining".into(), (secs,))
                .await
                .expect("interval mining");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let blobs = dir.path().join("blobs");
        let db_url =
            db_url.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("runs.db").display()));
        let store = Store::connect(&db_url).await.expect("store");
        let mut tasks = Vec::new();
        let stand_in = match &through {
            Through::Nothing => None,
            Through::Everyone(limits) => Some(limits.clone()),
            Through::Orchestrator => Some(provider::Limits::default()),
        };
        let stand_in = match stand_in {
            Some(limits) => {
                Some(provider::StandIn::start(env.chain.endpoint_url().as_str(), limits).await)
            }
            None => None,
        };
        let everyone = matches!(through, Through::Everyone(_));
        let (http, ws_url) = match &stand_in {
            Some(s) if everyone => (s.url.clone(), None),
            Some(s) => (s.url.clone(), Some(env.chain.ws_endpoint())),
            None => (env.chain.endpoint_url(), Some(env.chain.ws_endpoint())),
        };
        let poll = block_time.map_or(Duration::from_millis(200), hosted_poll);
        for &i in workers {
            tasks.push(match &stand_in {
                Some(s) if everyone => {
                    spawn_polling_worker(&env, &DEMO_AGENTS[i], &blobs, &s.url, poll).await
                }
                _ => spawn_worker(&env, &DEMO_AGENTS[i], &blobs).await,
            });
        }
        // Operator mode: the client's key, which funds nothing; else the sponsor's.
        let signer = if operator { env.actors.client.clone() } else { env.actors.sponsor.clone() };
        let provider = tessera_bindings::client::connect(
            http,
            alloy::network::EthereumWallet::new(signer.clone()),
        );
        let chain = if operator {
            Chain::operator(provider, signer, env.deployment.clone()).await.expect("operator chain")
        } else {
            Chain::new(provider, signer, env.deployment.clone()).await.expect("sponsor chain")
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let again = Box::new(Again {
            config: config.clone(),
            db_url: db_url.clone(),
            operator,
            through: stand_in.is_some(),
        });
        let service =
            Service::start(service_config(store, chain, &blobs, config, ws_url, listener))
                .await
                .expect("orchestrator starts");
        let api = format!("http://{}", service.addr());
        let orch = Arc::clone(service.orchestrator());
        Self {
            env,
            orch,
            service,
            api,
            token: TEST_TOKEN.into(),
            http: reqwest::Client::new(),
            blobs,
            stand_in,
            _dir: dir,
            tasks,
            again,
        }
    }

    /// POSTs JSON with the bearer token; returns status and JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let resp = self
            .http
            .post(format!("{}{path}", self.api))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// GETs JSON.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let resp = self.http.get(format!("{}{path}", self.api)).send().await.expect("request");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Proposes `plan` and approves it; returns the run id.
    pub async fn run_plan(&self, plan: &Value) -> String {
        let (status, body) = self.post("/api/plans", plan).await;
        assert_eq!(status, 201, "propose: {body}");
        let id = body["id"].as_str().expect("run id").to_owned();
        let (status, body) = self.post(&format!("/api/runs/{id}/approve"), &Value::Null).await;
        assert_eq!(status, 200, "approve: {body}");
        id
    }

    /// Polls the run until its state is `state` (panics after `secs`).
    pub async fn wait_state(&self, id: &str, state: &str, secs: u64) -> Value {
        let end = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let (_, view) = self.get(&format!("/api/runs/{id}")).await;
            if view["state"] == state {
                return view;
            }
            assert!(tokio::time::Instant::now() < end, "run never became {state}: {view:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Polls until sub-task `index` is in `phase`.
    pub async fn wait_phase(&self, id: &str, index: usize, phase: &str, secs: u64) -> Value {
        let end = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let (_, view) = self.get(&format!("/api/runs/{id}")).await;
            if view["subtasks"][index]["phase"] == phase {
                return view;
            }
            assert!(tokio::time::Instant::now() < end, "sub-task {index} never {phase}: {view:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts the worker of demo agent `i` now.
    pub async fn add_worker(&mut self, i: usize) {
        let handle = spawn_worker(&self.env, &DEMO_AGENTS[i], &self.blobs).await;
        self.tasks.push(handle);
    }

    /// Moves chain time forward by `secs` and mines a block.
    pub async fn advance(&self, secs: u64) {
        self.env.driver().advance(secs).await.expect("advance time");
    }

    /// Reads the run's SSE stream from the start until it ends (the stream
    /// closes after the final event); returns the events' JSON bodies.
    pub async fn events(&self, id: &str) -> Vec<Value> {
        read_sse(&self.http, &format!("{}/api/runs/{id}/events", self.api)).await
    }

    /// The run's events stored so far, live run or not (`?follow=false`).
    pub async fn events_so_far(&self, id: &str) -> Vec<Value> {
        read_sse(&self.http, &format!("{}/api/runs/{id}/events?follow=false", self.api)).await
    }
}

/// Reads an SSE stream to its end and returns the `data` of each event.
pub async fn read_sse(http: &reqwest::Client, url: &str) -> Vec<Value> {
    read_sse_until(http, url, "plan_completed|plan_failed").await
}

/// Reads an SSE stream until it ends or an event whose kind is one of
/// `stop` (`|`-separated) arrives.
pub async fn read_sse_until(http: &reqwest::Client, url: &str, stop: &str) -> Vec<Value> {
    use futures_util::StreamExt;
    let resp = http.get(url).send().await.expect("sse request");
    assert_eq!(resp.status().as_u16(), 200);
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    let read = async {
        while let Some(chunk) = stream.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk.expect("sse chunk")));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                for line in frame.lines() {
                    if let Some(data) = line.strip_prefix("data: ") {
                        let ev: Value = serde_json::from_str(data).expect("event JSON");
                        let kind = ev["kind"].as_str().unwrap_or_default().to_owned();
                        out.push(ev);
                        if stop.split('|').any(|s| s == kind) {
                            return;
                        }
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read).await.expect("stream ends");
    out
}

/// Runs one demo agent's worker in the background.
pub async fn spawn_worker(
    env: &TestEnv,
    agent: &DemoAgent,
    blobs: &std::path::Path,
) -> tokio::task::JoinHandle<()> {
    let store: Blobs = Arc::new(FsBlobStore::new(blobs));
    stack::spawn_worker(&env.chain.endpoints(), &env.actors, &env.deployment, agent, store)
        .await
        .expect("worker starts")
}

/// How often services poll a chain mining a block every `secs` seconds
/// when they have no websocket: twice a block.
pub fn hosted_poll(secs: u64) -> Duration {
    Duration::from_millis(secs.max(1) * 500)
}

/// Runs one demo agent's worker in the background, reaching the chain at
/// `http` only (no websocket: it polls every `poll`).
pub async fn spawn_polling_worker(
    env: &TestEnv,
    agent: &DemoAgent,
    blobs: &std::path::Path,
    http: &reqwest::Url,
    poll: Duration,
) -> tokio::task::JoinHandle<()> {
    let signer = env.actors.agents[agent.account].clone();
    spawn_card_worker(env, signer, agent.worker_card(), blobs, http, poll).await
}

/// Runs a worker for `card`, signing as `signer`, in the background,
/// reaching the chain at `http` only and polling every `poll`; it registers
/// the card first.
pub async fn spawn_card_worker(
    env: &TestEnv,
    signer: alloy::signers::local::PrivateKeySigner,
    card: tessera_workers::AgentCard,
    blobs: &std::path::Path,
    http: &reqwest::Url,
    poll: Duration,
) -> tokio::task::JoinHandle<()> {
    let me = signer.address();
    let provider = tessera_bindings::client::connect(
        http.clone(),
        alloy::network::EthereumWallet::new(signer),
    );
    let store: Blobs = Arc::new(FsBlobStore::new(blobs));
    let mut worker =
        tessera_workers::runtime::Worker::new(provider, me, card, env.deployment.clone(), store);
    worker.ensure_registered().await.expect("worker registers");
    tokio::spawn(async move {
        worker.run(None, poll, |_| {}, std::future::pending()).await;
    })
}

/// Sends a contract call and waits for it to be mined; panics unless it
/// succeeded.
pub async fn mined<P, D>(
    call: alloy::contract::CallBuilder<P, D>,
) -> alloy::rpc::types::TransactionReceipt
where
    P: alloy::providers::Provider,
    D: alloy::contract::CallDecoder,
{
    let receipt = call.send().await.expect("sent").get_receipt().await.expect("mined");
    assert!(receipt.status(), "the call succeeded");
    receipt
}

/// The task id the escrow gives `funder`'s task with reference `r`.
pub fn task_id_for(funder: Address, r: B256) -> U256 {
    use alloy::sol_types::SolValue;
    U256::from_be_bytes(alloy::primitives::keccak256((funder, r).abi_encode()).0)
}

/// Hostile lineage on chain, all in one plan: a task that is its own parent,
/// two tasks that are each other's parent, a task hanging under that cycle,
/// and a chain `depth` tasks deep. Returns the plan and the ids
/// `(self, a, b, under, chain)`.
pub async fn hostile_lineage(env: &TestEnv, depth: usize) -> (B256, [U256; 4], Vec<U256>) {
    let sponsor = env.actors.sponsor.address();
    let escrow = tessera_bindings::TaskEscrow::new(env.deployment.task_escrow, &env.provider);
    allow_escrow(env).await;
    let plan = alloy::primitives::keccak256("hostile-lineage");
    let now = env.driver().now().await.unwrap();
    let id = |r: &str| task_id_for(sponsor, alloy::primitives::keccak256(r));
    let create = |r: String, parent: U256| {
        escrow
            .createTask(sponsor_task(env, plan, &r, parent, now, "data:,x"))
            .from(sponsor)
            .gas(400_000)
            .into_transaction_request()
    };
    let mut txs = vec![
        create("self".into(), id("self")),
        create("a".into(), id("b")),
        create("b".into(), id("a")),
        create("under".into(), id("a")),
    ];
    let mut chain = Vec::with_capacity(depth);
    for i in 0..depth {
        let parent = if i == 0 { U256::ZERO } else { id(&format!("chain-{}", i - 1)) };
        txs.push(create(format!("chain-{i}"), parent));
        chain.push(id(&format!("chain-{i}")));
    }
    // Sent back to back, then every receipt checked: each task exists.
    let mut sent = Vec::with_capacity(txs.len());
    for tx in txs {
        sent.push(env.provider.send_transaction(tx).await.unwrap());
    }
    for (i, pending) in sent.into_iter().enumerate() {
        let receipt = pending.get_receipt().await.unwrap();
        assert!(receipt.status(), "creation {i} succeeded");
    }
    (plan, [id("self"), id("a"), id("b"), id("under")], chain)
}

/// One more plain task from the sponsor (scenario `label`); its id.
pub async fn one_more_task(env: &TestEnv, label: &str) -> U256 {
    let mut d = env.driver();
    d.scenario(label);
    let params =
        d.params(env.actors.agent(0), TASK_AMOUNT, "data:,x".into()).await.expect("params");
    d.create_with_permit(params).await.expect("created").id
}

/// An indexer on a fresh SQLite file, synced once to `env`'s chain: its
/// store, and the directory that holds the file (keep it alive).
pub async fn synced_index(env: &TestEnv) -> (tessera_indexer::IndexStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    let store = tessera_indexer::IndexStore::connect(&url).await.expect("an index store");
    let mut ix = tessera_indexer::Indexer::new(
        env.provider.clone(),
        env.deployment.clone(),
        store,
        None,
        tessera_indexer::IndexerConfig::default(),
    );
    ix.sync_once().await.expect("the index synced");
    (ix.store().clone(), dir)
}

/// The amount of the plain tasks the tests create for agent 0: its
/// `summarize` price (the escrow refuses less than the executor asks).
pub const TASK_AMOUNT: u128 = 500_000;

/// The sponsor lets the escrow take any amount, in a block of its own, so
/// later creations need no permit.
pub async fn allow_escrow(env: &TestEnv) {
    MockUSDC::new(env.deployment.token, &env.provider)
        .approve(env.deployment.task_escrow, U256::MAX)
        .from(env.actors.sponsor.address())
        .send()
        .await
        .expect("approve sent")
        .get_receipt()
        .await
        .expect("approve mined");
}

/// A sponsor's task of [`TASK_AMOUNT`] for agent 0 (a demo agent offering
/// `summarize`, which the escrow checks) under `plan`, with reference `r`,
/// `parent` and spec URI `spec`, due a day after `now`.
pub fn sponsor_task(
    env: &TestEnv,
    plan: B256,
    r: &str,
    parent: U256,
    now: u64,
    spec: &str,
) -> tessera_bindings::ITaskEscrow::CreateParams {
    tessera_bindings::ITaskEscrow::CreateParams {
        r#ref: alloy::primitives::keccak256(r),
        planId: plan,
        parentId: parent,
        capability: tessera_bindings::capability::encode("summarize").expect("a valid name"),
        client: env.actors.sponsor.address(),
        executor: env.actors.agent(0),
        amount: TASK_AMOUNT,
        deadline: alloy::primitives::aliases::U40::from(now + 86_400),
        reviewWindow: 3600,
        specURI: spec.into(),
    }
}

/// Demo agent 0's card without `extract-entities`, which the registry
/// still lists for it at 0.30 USDC while the worker has not registered
/// this card (registering withdraws it): its worker declines such a task
/// on chain.
pub const NARROW_CARD: &str = "
id: summarizer-a
description: Extractive summaries only, whatever the registry still lists.
role: executor
model: offline
capabilities:
  - name: summarize
    price: 500000
instructions: Summarize.
";

/// A loopback server that accepts every connection and never answers (a
/// tarpit), as a blob base URL, with the count of connections it took.
pub async fn tarpit() -> (tessera_bindings::envelope::BlobUrl, Arc<std::sync::atomic::AtomicUsize>)
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a tarpit");
    let base = format!("http://{}/blobs", listener.local_addr().expect("its address"));
    let url = tessera_bindings::envelope::BlobUrl::parse(&base).expect("a blob base URL");
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(socket);
        }
    });
    (url, accepted)
}
