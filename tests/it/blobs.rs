//! Blobs between homes: parties with stores of their own read each other's
//! large envelopes, results and rationales over HTTP, through the location
//! hint of their URIs (`sha256:<hex>?src=<base-url>`) or a gateway; a
//! source that fails for now is waited for, not taken as a refusal.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use alloy::{network::EthereumWallet, providers::Provider as _, signers::local::PrivateKeySigner};
use axum::{Router, extract::Path, http::StatusCode, response::IntoResponse, routing::get};
use serde_json::{Value, json};
use tessera_anvil::deploy::{DEMO_AGENTS, DeployConfig};
use tessera_arbiter::{Action, Arbiter, Judge, VerdictKind, store::ArbiterStore};
use tessera_bindings::{
    client::connect,
    envelope::{
        BlobRef, BlobSources, BlobStore, BlobUrl, DEFAULT_INLINE_LIMIT, Envelope, HARD_MAX_BYTES,
        MemoryBlobStore, Parent,
    },
    task::Status,
};
use tessera_e2e::{Stack, TestEnv};
use tessera_orchestrator::{plan::Plan, runner::RunnerConfig};
use tessera_stack::WorkerCard as _;
use tessera_workers::{
    AgentCard,
    runtime::{Handled, Worker},
};

const ARTICLE: &str = "The harbour reopened on Tuesday after the storm closed it for two days. \
Ships queued outside the harbour while crews cleared debris. Traders said the closure cost them \
dearly and asked the port authority for compensation. The port authority promised new breakwaters \
before winter. Fishermen welcomed the breakwaters but doubted the timetable.";

/// About 20 KB of article: over the inline limit, and so is its translation.
fn long_article() -> String {
    std::iter::repeat_n(ARTICLE, 60).collect::<Vec<_>>().join(" ")
}

/// One party's home: a blob store of its own, served at `<url>/<hex>`; the
/// server answers 503 while `down`.
struct Home {
    store: Arc<MemoryBlobStore>,
    url: BlobUrl,
    down: Arc<AtomicBool>,
    hits: Arc<AtomicUsize>,
}

impl Home {
    async fn open() -> Self {
        let store = Arc::new(MemoryBlobStore::new());
        let down = Arc::new(AtomicBool::new(false));
        let hits = Arc::new(AtomicUsize::new(0));
        let served: Arc<dyn BlobStore + Send + Sync> = store.clone();
        let (d, h) = (Arc::clone(&down), Arc::clone(&hits));
        let app = Router::new().route(
            "/blobs/{hash}",
            get(move |Path(hash): Path<String>| {
                let (served, d, h) = (Arc::clone(&served), Arc::clone(&d), Arc::clone(&h));
                async move {
                    h.fetch_add(1, Ordering::SeqCst);
                    if d.load(Ordering::SeqCst) {
                        return StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                    tessera_http::blobs::answer(served, &hash)
                        .await
                        .unwrap_or_else(IntoResponse::into_response)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url =
            BlobUrl::parse(&format!("http://{}/blobs", listener.local_addr().unwrap())).unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { store, url, down, hits }
    }

    /// Reads through hints and `gateways`, publishes with this home's URL.
    fn sources(&self, gateways: Vec<BlobUrl>) -> BlobSources {
        BlobSources::new(self.store.clone())
            .on_chain(tessera_bindings::envelope::LOCAL_CHAIN_ID)
            .with_gateways(gateways)
            .with_public_url(Some(self.url.clone()))
    }

    fn has(&self, uri: &str) -> bool {
        let blob = BlobRef::of_uri(uri).unwrap().expect("content-addressed");
        self.store.get(&blob.hash, HARD_MAX_BYTES).unwrap().is_some()
    }
}

const TRANSLATOR: &str = "
id: translator-home
description: Glossary translations, in a home of its own.
role: executor
model: offline
capabilities:
  - name: translate
    price: 300000
instructions: Translate word by word.
";

#[tokio::test]
async fn a_worker_reads_a_remote_envelope_waits_out_an_outage_and_serves_its_result() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let (sponsor, home) = (Home::open().await, Home::open().await);
    let mut envelope = Envelope::new(Parent::Task("1".into()), "Translate the article to French");
    envelope.capability = Some("translate".into());
    envelope.source = Some(long_article());
    let spec_uri = sponsor.sources(Vec::new()).encode(&envelope).unwrap();
    assert!(spec_uri.ends_with(&format!("?src={}", sponsor.url)), "{spec_uri}");

    let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
    let me = signer.address();
    let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(signer));
    let card = AgentCard::from_yaml(TRANSLATOR).unwrap();
    let mut worker = Worker::new(provider, me, card, env.deployment.clone(), home.store.clone())
        .with_public_blobs(home.url.clone());
    worker.ensure_registered().await.unwrap();
    let mut d = env.driver();
    d.scenario("blobs between homes");
    let mut params = d.params(me, 300_000, spec_uri.clone()).await.unwrap();
    params.capability = tessera_bindings::capability::encode("translate").unwrap();
    let task = d.create_with_permit(params).await.unwrap();

    // The sponsor's server is down: fetched off the pass, retried, then
    // tried again later, not declined.
    sponsor.down.store(true, Ordering::SeqCst);
    let handled = worker.poll_once().await.unwrap();
    assert!(
        matches!(handled.as_slice(), [Handled::Fetching { task: t }] if *t == task.id),
        "nothing declined while the envelope is out of reach: {handled:?}"
    );
    let waited = std::time::Instant::now();
    while sponsor.hits.load(Ordering::SeqCst) < 3 {
        assert!(waited.elapsed() < std::time::Duration::from_secs(30), "three attempts");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let handled = worker.poll_once().await.unwrap();
    assert!(handled.is_empty(), "nothing declined while the envelope is out of reach: {handled:?}");
    assert_eq!(sponsor.hits.load(Ordering::SeqCst), 3, "three attempts");
    let rec = d.escrow.fetch(task.id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(rec.status(), Status::Created);

    sponsor.down.store(false, Ordering::SeqCst);
    let handled = loop {
        let handled = worker.poll_once().await.unwrap();
        if !handled.is_empty() {
            break handled;
        }
        assert!(waited.elapsed() < std::time::Duration::from_secs(60), "never fetched again");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let [Handled::Delivered { task: id, result_uri }] = handled.as_slice() else {
        panic!("{handled:?}")
    };
    assert_eq!(*id, task.id);
    assert!(home.has(&spec_uri), "the envelope is kept, and served on");
    assert!(result_uri.ends_with(&format!("?src={}", home.url)), "{result_uri}");

    // A third party with nothing of its own reads the result from the
    // worker's home, and the hash holds.
    let reader = Home::open().await;
    let bytes = reader.sources(Vec::new()).fetch(result_uri).await.unwrap();
    assert!(bytes.len() > DEFAULT_INLINE_LIMIT);
    let result: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(result["target_language"], "fr", "{result}");
    assert!(home.hits.load(Ordering::SeqCst) >= 1);
    assert!(reader.has(result_uri));
}

/// A summarize task whose delivered result is content-addressed in
/// `parties` and hinted there, disputed by the client.
async fn disputed_remotely(env: &TestEnv, parties: &Home, text: &str) -> alloy::primitives::U256 {
    let sources = parties.sources(Vec::new());
    let mut envelope = Envelope::new(Parent::Task("1".into()), "Summarize the article");
    envelope.capability = Some("summarize".into());
    envelope.source = Some(ARTICLE.into());
    let spec = sources.encode(&envelope).unwrap();
    // Notes the judge does not read make the result too large to inline.
    let result = json!({"capability": "summarize", "text": text, "notes": "n".repeat(5_000)});
    let result_uri = sources.publish(result.to_string().as_bytes()).unwrap();
    assert!(result_uri.contains("?src="), "{result_uri}");
    let reason = sources.publish(br#"{"reason":"this is not what I asked for"}"#).unwrap();
    let mut d = env.driver();
    d.scenario("remote dispute");
    let params = d.params(env.actors.agent(0), 333_333, spec).await.unwrap();
    let mut rec = d.create_with_permit(params).await.unwrap();
    d.deliver(&mut rec, &result_uri).await.unwrap();
    d.escrow.dispute(env.actors.client.address(), &mut rec, &reason).await.unwrap();
    rec.id
}

#[tokio::test]
async fn the_arbiter_waits_for_remote_evidence_and_hints_its_rationale() {
    let env = TestEnv::start(DeployConfig { appeal_window: 0, ..DeployConfig::default() }).await;
    env.set_price(env.actors.agent(0), "summarize", 333_333).await;
    let (parties, court) = (Home::open().await, Home::open().await);
    let good = "The harbour reopened after the storm; traders want compensation from the port \
authority, which promised breakwaters before winter.";
    let id = disputed_remotely(&env, &parties, good).await;

    let key = env.actors.arbiter.clone();
    let me = key.address();
    let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(key));
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("arbiter.db").display());
    let store = ArbiterStore::connect(&db).await.unwrap();
    let mut arbiter = Arbiter::new(
        provider,
        me,
        env.deployment.clone(),
        store,
        Judge::Offline,
        court.store.clone(),
    )
    .await
    .unwrap()
    .with_public_blobs(court.url.clone());

    // The parties' server is down: the case waits, unjudged.
    parties.down.store(true, Ordering::SeqCst);
    assert_eq!(arbiter.poll_once().await.unwrap(), Vec::new());
    let rec = env.driver().escrow.fetch(id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(rec.status(), Status::Disputed);

    // Back: the evidence is read, the good summary wins.
    parties.down.store(false, Ordering::SeqCst);
    let actions = arbiter.poll_once().await.unwrap();
    let [Action::Ruled { verdict, .. }] = actions.as_slice() else { panic!("{actions:?}") };
    assert_eq!(*verdict, VerdictKind::Worker);
    let d = arbiter.store().decision(&id.to_string(), tessera_arbiter::store::Level::Dispute).await;
    let rationale = d.unwrap().unwrap().rationale_uri;
    // (A rationale this short is inline; a long one carries the court's
    // hint, see the arbiter's unit tests.)
    let body: Value = serde_json::from_slice(
        &Home::open().await.sources(Vec::new()).fetch(&rationale).await.unwrap(),
    )
    .unwrap();
    assert_eq!(body["judge"], "offline-rubric");
}

/// A translate → summarize plan with a 20 KB source, each party in a home
/// of its own: the orchestrator's store (served at `/api/blobs`, the
/// workers' gateway) and one per worker (served, and hinted in their
/// results).
#[tokio::test]
async fn a_plan_settles_with_every_party_in_its_own_home() {
    let stack = Stack::start_custom(RunnerConfig::default(), None, &[]).await;
    let gateway = BlobUrl::parse(&format!("{}/api/blobs", stack.api)).unwrap();
    let mut homes = Vec::new();
    for agent in [&DEMO_AGENTS[2], &DEMO_AGENTS[1]] {
        let home = Home::open().await;
        let signer = stack.env.actors.agents[agent.account].clone();
        let me = signer.address();
        let provider = connect(stack.env.chain.endpoint_url(), EthereumWallet::new(signer));
        let mut worker = Worker::new(
            provider,
            me,
            agent.worker_card(),
            stack.env.deployment.clone(),
            home.store.clone(),
        )
        .with_blob_sources(home.sources(vec![gateway.clone()]));
        worker.ensure_registered().await.unwrap();
        let ws = stack.env.chain.ws_endpoint();
        tokio::spawn(async move {
            worker.run(Some(&ws), Duration::from_millis(200), |_| {}, std::future::pending()).await;
        });
        homes.push(home);
    }
    let (translator, summarizer) = (stack.env.actors.agent(2), stack.env.actors.agent(1));
    let plan = json!({
        "version": 1,
        "id": Plan::id_from_label("homes"),
        "review": "auto",
        "budget": 10_000_000u64,
        "source": long_article(),
        "review_window_secs": 600,
        "subtasks": [
            {"index": 0, "capability": "translate", "spec": "Translate the article to French",
             "executor": translator, "cost": 1_000_000, "deadline_offset_secs": 3600, "depends_on": []},
            {"index": 1, "capability": "summarize", "spec": "Summarize the translation",
             "executor": summarizer, "cost": 1_000_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    });
    let id = stack.run_plan(&plan).await;
    let view = stack.wait_state(&id, "completed", 90).await;
    let translation = view["subtasks"][0]["result_uri"].as_str().unwrap().to_owned();
    assert!(translation.ends_with(&format!("?src={}", homes[0].url)), "{translation}");
    // The orchestrator read the translation from the translator's home and
    // keeps it; the summarizer read its envelope (the translation inline)
    // through the gateway.
    let hash = BlobRef::of_uri(&translation).unwrap().unwrap().hash;
    assert!(stack.orch.blobs().get(&hash, HARD_MAX_BYTES).unwrap().is_some());
    let (status, _) = stack.get(&format!("/api/blobs/{hash}")).await;
    assert_eq!(status, 200);
    assert!(homes[0].hits.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn the_indexer_fetches_a_remote_envelope_and_folds_its_task_again() {
    use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
    let env = TestEnv::start(DeployConfig::default()).await;
    let (sponsor, index_home) = (Home::open().await, Home::open().await);
    let mut envelope = Envelope::new(Parent::Task("1".into()), "Summarize the article");
    envelope.capability = Some("summarize".into());
    envelope.source = Some(long_article());
    let spec_uri = sponsor.sources(Vec::new()).encode(&envelope).unwrap();
    let mut d = env.driver();
    d.scenario("indexed between homes");
    let params = d.params(env.actors.agent(1), 400_000, spec_uri.clone()).await.unwrap();
    let task = d.create_with_permit(params).await.unwrap();

    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    let mut indexer = Indexer::new(
        env.provider.clone(),
        env.deployment.clone(),
        store,
        Some(index_home.store.clone()),
        IndexerConfig::default(),
    );
    indexer.sync_once().await.unwrap();
    // The spec is fetched off the ingest path; once it is in, the task is
    // folded again with it.
    indexer.settle_specs().await.unwrap();
    let row = indexer.store().task(&task.id.to_string()).await.unwrap().unwrap().task;
    assert_eq!(row.envelope_error, None);
    assert_eq!(row.spec.as_deref(), Some("Summarize the article"));
    assert!(index_home.has(&spec_uri), "kept, so the indexer can serve it on");
}

/// A spec URI naming `bytes` by hash, hinted at `home`.
fn hinted(bytes: &[u8], home: &BlobUrl) -> String {
    format!("sha256:{}?src={home}", tessera_bindings::envelope::BlobHash::of(bytes))
}

/// A tarpit hint on one task's spec delays neither the ingest of the other
/// tasks' events nor another spec's fetch: a pass ends while the tarpit's
/// fetch still runs, an honest task shows settled, and an honest remote
/// spec arrives meanwhile.
#[tokio::test]
async fn a_tarpit_spec_does_not_hold_up_the_index() {
    use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
    let env = TestEnv::start(DeployConfig::default()).await;
    let (sponsor, index_home) = (Home::open().await, Home::open().await);
    let (trap, _) = tessera_e2e::tarpit().await;
    let mut d = env.driver();
    d.scenario("tarpit beside honest tasks");
    let executor = env.actors.agent(1);
    let trapped = Envelope::new(Parent::Task("1".into()), "never served").to_json().unwrap();
    let params = d.params(executor, 400_000, hinted(&trapped, &trap)).await.unwrap();
    let trapped = d.create_with_permit(params).await.unwrap();
    let params = d.params(executor, 400_000, tessera_anvil::lifecycle::spec_of_len(80)).await;
    let mut honest = d.create_with_permit(params.unwrap()).await.unwrap();
    d.deliver_at_once(&mut honest, "data:text/plain,done").await.unwrap();
    d.approve_many(std::slice::from_mut(&mut honest)).await.unwrap();
    let mut envelope = Envelope::new(Parent::Task("1".into()), "Summarize the article");
    envelope.source = Some(long_article());
    let remote = sponsor.sources(Vec::new()).encode(&envelope).unwrap();
    let params = d.params(executor, 400_000, remote.clone()).await.unwrap();
    let fetched = d.create_with_permit(params).await.unwrap();

    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    let mut indexer = Indexer::new(
        env.provider.clone(),
        env.deployment.clone(),
        store,
        Some(index_home.store.clone()),
        IndexerConfig::default(),
    );
    // The tarpit holds a fetch for its whole budget (15 s by default); a
    // pass that waited on it would take that long.
    tokio::time::timeout(Duration::from_secs(8), indexer.sync_once())
        .await
        .expect("a pass does not wait on a spec")
        .unwrap();
    let index = indexer.store().clone();
    let task = |id: alloy::primitives::U256| {
        let store = index.clone();
        async move { store.task(&id.to_string()).await.unwrap().unwrap().task }
    };
    assert_eq!(task(honest.id).await.status, "Paid");
    let head = env.provider.get_block_number().await.unwrap();
    assert_eq!(
        *indexer.progress().borrow(),
        tessera_indexer::ingest::Progress { head, indexed: head }
    );
    assert!(task(trapped.id).await.envelope_error.is_some(), "its spec is out of reach for now");
    // The honest remote spec arrives while the tarpit's fetch still runs.
    let arrived = tokio::time::timeout(Duration::from_secs(8), async {
        loop {
            indexer.sync_once().await.unwrap();
            if task(fetched.id).await.spec.is_some() {
                break;
            }
            indexer.spec_queue().unwrap().arrival().await;
        }
    })
    .await;
    assert!(arrived.is_ok(), "the honest spec arrives beside the tarpit");
    assert_eq!(task(fetched.id).await.envelope_error, None);
    assert_eq!(indexer.spec_queue().unwrap().pending().1, 1, "the tarpit's fetch still runs");
}

/// Bytes behind a hint that hash right but are no envelope are refused, not
/// kept (the indexer serves its store on), and the task says its spec is
/// unreadable.
#[tokio::test]
async fn the_indexer_keeps_only_envelopes() {
    use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
    let env = TestEnv::start(DeployConfig::default()).await;
    let (sponsor, index_home) = (Home::open().await, Home::open().await);
    let junk = b"{\"anything\": \"that hashes right\"}".to_vec();
    sponsor.store.put(&junk).unwrap();
    let uri = hinted(&junk, &sponsor.url);
    let mut d = env.driver();
    d.scenario("junk spec");
    let params = d.params(env.actors.agent(1), 400_000, uri.clone()).await.unwrap();
    let task = d.create_with_permit(params).await.unwrap();
    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    let mut indexer = Indexer::new(
        env.provider.clone(),
        env.deployment.clone(),
        store,
        Some(index_home.store.clone()),
        IndexerConfig::default(),
    );
    indexer.sync_once().await.unwrap();
    indexer.settle_specs().await.unwrap();
    assert!(sponsor.hits.load(Ordering::SeqCst) >= 1, "the hint was asked");
    assert!(!index_home.has(&uri), "no blob but an envelope is kept");
    let row = indexer.store().task(&task.id.to_string()).await.unwrap().unwrap().task;
    assert_eq!(row.spec, None);
    assert!(row.envelope_error.is_some());
}
