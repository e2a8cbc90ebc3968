//! Strangers' location hints at a real worker on anvil: a spec hint that
//! redirects into the worker's own network is refused and the task
//! declined with a category-only reason; a funder whose hints are tarpits
//! (they accept and never answer) holds up its own tasks only.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use alloy::{
    network::EthereumWallet,
    primitives::{Address, B256, U256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use axum::{
    Router,
    extract::{Path, State},
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use tessera_anvil::{deploy::DeployConfig, lifecycle::Driver};
use tessera_bindings::{
    MockUSDC, TaskEscrow,
    client::connect,
    envelope::{BlobRef, BlobSources, BlobStore, BlobUrl, Envelope, MemoryBlobStore, Parent},
    task::Status,
};
use tessera_e2e::TestEnv;
use tessera_workers::{
    AgentCard,
    runtime::{Handled, Worker, read_result},
};

const CARD: &str = "
id: summarizer-hints
description: Extractive summaries for the hint tests.
role: executor
model: offline
capabilities:
  - name: summarize
    price: 300000
instructions: Summarize as bullets.
";

/// A worker on a dev account no demo agent uses.
fn worker(env: &TestEnv) -> Worker {
    let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
    let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(signer.clone()));
    let card = AgentCard::from_yaml(CARD).unwrap();
    let blobs = Arc::new(MemoryBlobStore::new());
    Worker::new(provider, signer.address(), card, env.deployment.clone(), blobs)
}

/// A spec envelope too large to inline, put in `store`: its hash.
fn big_spec(store: &MemoryBlobStore, n: usize) -> tessera_bindings::envelope::BlobHash {
    let mut envelope = Envelope::new(Parent::Task(n.to_string()), "Summarize in two bullets");
    envelope.capability = Some("summarize".into());
    envelope.source = Some(format!(
        "Part {n}. The escrow locks funds before work starts. Agents deliver results on chain. {}",
        "Clients approve results or dispute them. ".repeat(200)
    ));
    store.put(&envelope.to_json().unwrap()).unwrap()
}

fn hinted(hash: tessera_bindings::envelope::BlobHash, base: &str) -> String {
    BlobRef { hash, hint: Some(BlobUrl::parse(base).unwrap()) }.to_string()
}

/// Serves `store` at `http://127.0.0.1:<port>/blobs`; the base URL.
async fn serve_blobs(store: Arc<MemoryBlobStore>, hits: Arc<Mutex<usize>>) -> String {
    async fn one(
        State((store, hits)): State<(Arc<MemoryBlobStore>, Arc<Mutex<usize>>)>,
        Path(hex): Path<String>,
    ) -> axum::response::Response {
        *hits.lock().unwrap() += 1;
        match hex.parse().ok().and_then(|h| store.get(&h, usize::MAX).ok().flatten()) {
            Some(bytes) => (StatusCode::OK, bytes).into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        }
    }
    let app = Router::new().route("/blobs/{hex}", get(one)).with_state((store, hits));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/blobs", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// The reason published with task `id`'s `TaskDeclined` log.
async fn declined_reason(env: &TestEnv, id: U256) -> String {
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(TaskEscrow::TaskDeclined::SIGNATURE_HASH)
        .topic1(B256::from(id))
        .from_block(env.deployment.deploy_block);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    let [log] = logs.as_slice() else { panic!("one TaskDeclined log of {id}: {logs:?}") };
    let uri = TaskEscrow::TaskDeclined::decode_log(&log.inner).unwrap().data.reasonURI;
    read_result(&uri, &MemoryBlobStore::new()).unwrap()["reason"].as_str().unwrap().to_owned()
}

/// The worker is told to refuse private hints (the chain is anvil, where
/// they are allowed by default) and trusts the hint's own host: the hint
/// answers a redirect to another loopback server, an internal service
/// that would serve the blob. The redirect is not followed, the internal
/// server is never asked, and the task is declined on chain with a reason
/// that names the category only.
#[tokio::test]
async fn a_spec_hint_redirecting_to_loopback_is_declined_with_a_category_only_reason() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let internal_store = Arc::new(MemoryBlobStore::new());
    let hash = big_spec(&internal_store, 1);
    let internal_hits = Arc::new(Mutex::new(0));
    let internal = serve_blobs(internal_store, Arc::clone(&internal_hits)).await;
    // The stranger's hint: redirects every blob to the internal server.
    let redirects = Arc::new(Mutex::new(0));
    let app =
        Router::new()
            .route(
                "/blobs/{hex}",
                get(
                    |State((to, n)): State<(String, Arc<Mutex<usize>>)>,
                     Path(hex): Path<String>| async move {
                        *n.lock().unwrap() += 1;
                        (StatusCode::FOUND, [(header::LOCATION, format!("{to}/{hex}"))])
                    },
                ),
            )
            .with_state((internal.clone(), Arc::clone(&redirects)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hint_at = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let w = worker(&env);
    let sources = BlobSources::new(Arc::new(MemoryBlobStore::new()))
        .allow_private_hints(false)
        .trust_hint_hosts(vec![hint_at.to_string()]);
    let mut w = w.with_blob_sources(sources);
    w.ensure_registered().await.unwrap();
    assert!(!w.blob_sources().allows_private_hints(), "the operator's word beats the chain's");
    let mut d = env.driver();
    d.scenario("hint redirect");
    let params = d
        .params(w.address(), 300_000, hinted(hash, &format!("http://{hint_at}/blobs")))
        .await
        .unwrap();
    let rec = d.create_with_permit(params).await.unwrap();

    let mut seen = Vec::new();
    for _ in 0..20 {
        seen.extend(w.poll_once().await.unwrap());
        if seen.iter().any(|h| matches!(h, Handled::DeclinedOnChain { .. })) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let Some(Handled::DeclinedOnChain { task, reason, .. }) =
        seen.iter().find(|h| matches!(h, Handled::DeclinedOnChain { .. }))
    else {
        panic!("not declined: {seen:?}")
    };
    assert_eq!(*task, rec.id);
    assert_eq!(reason, "envelope unreadable: refused address");
    let published = declined_reason(&env, rec.id).await;
    assert_eq!(&published, reason);
    for leak in ["http", "127.0.0.1", "sha256", &hint_at.port().to_string(), "302", "404"] {
        assert!(!published.contains(leak), "{leak:?} in the published reason {published:?}");
    }
    assert_eq!(*redirects.lock().unwrap(), 1, "the hint asked once, not retried");
    assert_eq!(*internal_hits.lock().unwrap(), 0, "the internal server is never asked");
    let rec = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(rec.status(), Status::Declined);
}

/// How long the worker takes to deliver `id`, from now.
async fn delivered_in(seen: &Mutex<Vec<Handled>>, id: U256) -> Duration {
    let started = Instant::now();
    loop {
        let done = seen
            .lock()
            .unwrap()
            .iter()
            .any(|h| matches!(h, Handled::Delivered { task, .. } if *task == id));
        if done {
            return started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(120), "task {id} never delivered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A second funder, with tokens, creating tasks through its own driver.
async fn other_funder(env: &TestEnv) -> (tessera_anvil::actors::Actors, PrivateKeySigner) {
    let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[11].clone());
    let usdc = MockUSDC::new(env.deployment.token, &env.provider);
    usdc.mint(signer.address(), U256::from(100_000_000u64))
        .from(env.actors.deployer.address())
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    let mut actors = env.actors.clone();
    actors.sponsor = signer.clone();
    (actors, signer)
}

/// An honest funder's task is delivered in a time (its spec fetched from
/// its hint) measured first alone, then again while another funder's four
/// tasks hang on tarpit hints: within twice the baseline (the baseline
/// counted as at least a second, for the noise of a shared machine).
/// Before fetching moved off the pass, each tarpit held the pass for its
/// whole fetch budget, 15 s a source.
#[tokio::test]
async fn a_funders_tarpit_hints_do_not_delay_another_funders_task() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let honest_store = Arc::new(MemoryBlobStore::new());
    let honest = serve_blobs(Arc::clone(&honest_store), Arc::new(Mutex::new(0))).await;
    let (trap, trapped) = tessera_e2e::tarpit().await;

    let mut w = worker(&env);
    w.ensure_registered().await.unwrap();
    let me: Address = w.address();
    let seen = Arc::new(Mutex::new(Vec::<Handled>::new()));
    let ws = env.chain.ws_endpoint();
    let keep = Arc::clone(&seen);
    let running = tokio::spawn(async move {
        let keep = |h: &Handled| keep.lock().unwrap().push(h.clone());
        w.run(Some(&ws), Duration::from_millis(200), keep, std::future::pending()).await;
    });

    let mut d = env.driver();
    d.scenario("honest funder");
    // Baseline: the honest task alone.
    let params = d.params(me, 300_000, hinted(big_spec(&honest_store, 1), &honest)).await.unwrap();
    let first = d.create_with_permit(params).await.unwrap();
    let baseline = delivered_in(&seen, first.id).await;

    // The other funder's tarpits, picked up by the worker.
    let (actors, signer) = other_funder(&env).await;
    let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(signer));
    let mut trapper = Driver::new(provider, &actors, &env.deployment);
    trapper.scenario("tarpit funder");
    let mut traps = Vec::new();
    for n in 0..4 {
        let spec = hinted(big_spec(&MemoryBlobStore::new(), 100 + n), trap.as_str());
        let params = trapper.params(me, 300_000, spec).await.unwrap();
        traps.push(trapper.create_with_permit(params).await.unwrap().id);
    }
    // Picked up: the worker is asking the tarpit.
    let started = Instant::now();
    while trapped.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "tarpit tasks not picked up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The honest funder's next task, beside them.
    let params = d.params(me, 300_000, hinted(big_spec(&honest_store, 2), &honest)).await.unwrap();
    let second = d.create_with_permit(params).await.unwrap();
    let beside = delivered_in(&seen, second.id).await;
    running.abort();
    eprintln!("honest delivery: alone {baseline:?}, beside four tarpits {beside:?}");
    assert!(
        beside <= 2 * baseline.max(Duration::from_secs(1)),
        "alone {baseline:?}, beside tarpits {beside:?}"
    );
    for trap in traps {
        let rec = d.escrow.fetch(trap, env.deployment.deploy_block).await.unwrap();
        assert_eq!(rec.status(), Status::Created, "a tarpit task waits, nothing sent");
    }
}
