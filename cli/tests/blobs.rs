//! `tessera worker` as a party of its own: it serves its blobs, `/metrics`
//! and `/healthz` on `--listen`, reads a large envelope from the sponsor's
//! server through a `--blob-gateway`, and publishes its large result with
//! the hint of the address it bound.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::{process::Command, sync::Arc};

use axum::{Router, extract::Path, response::IntoResponse, routing::get};
use serde_json::Value;
use support::{ANY_PORT, listening};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{
    capability,
    envelope::{BlobRef, BlobSources, BlobStore, BlobUrl, Envelope, MemoryBlobStore, Parent},
    task::Status,
};
use tessera_e2e::TestEnv;

const ARTICLE: &str = "The harbour reopened on Tuesday after the storm closed it for two days. \
Ships queued outside the harbour while crews cleared debris. Traders said the closure cost them \
dearly and asked the port authority for compensation.";

/// A store served at `http://…/blobs/{hash}`; its base URL.
async fn serve(store: Arc<MemoryBlobStore>) -> BlobUrl {
    let shared: Arc<dyn BlobStore + Send + Sync> = store;
    let app = Router::new().route(
        "/blobs/{hash}",
        get(move |Path(hash): Path<String>| {
            let shared = Arc::clone(&shared);
            async move {
                tessera_http::blobs::answer(shared, &hash)
                    .await
                    .unwrap_or_else(IntoResponse::into_response)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = BlobUrl::parse(&format!("http://{}/blobs", listener.local_addr().unwrap())).unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test]
async fn a_worker_serves_its_blobs_and_reads_through_a_gateway() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    // The sponsor's store, served, named as a gateway: its URIs carry no hint.
    let sponsor = Arc::new(MemoryBlobStore::new());
    let gateway = serve(Arc::clone(&sponsor)).await;
    let mut envelope = Envelope::new(Parent::Task("1".into()), "Translate the article to French");
    envelope.capability = Some("translate".into());
    envelope.source = Some(std::iter::repeat_n(ARTICLE, 40).collect::<Vec<_>>().join(" "));
    let spec_uri = BlobSources::new(sponsor.clone()).encode(&envelope).unwrap();
    assert!(!spec_uri.contains('?'), "{spec_uri}");

    let key = format!("0x{}", alloy::hex::encode(env.actors.agents[2].to_bytes()));
    let (_worker, base) = listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["worker", "--poll-ms", "100", "--listen", ANY_PORT])
            .arg("--card")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../workers/cards/translator.yaml"))
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .arg("--blobs")
            .arg(dir.path().join("worker-blobs"))
            .env("TESSERA_BLOB_GATEWAYS", gateway.as_str())
            .env("TESSERA_WORKER_KEY", key)
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stderr(std::process::Stdio::inherit()),
    );
    let http = reqwest::Client::new();
    let get = |path: String| {
        let http = http.clone();
        async move {
            let resp = http.get(path).send().await.unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        }
    };
    assert_eq!(get(format!("{base}/healthz")).await, (200, r#"{"status":"ok"}"#.to_owned()));
    assert_eq!(get(format!("{base}/blobs/not-a-hash")).await.0, 400);
    assert_eq!(get(format!("{base}/blobs/{}", "ab".repeat(32))).await.0, 404);

    // Fund a task at the card's price: the one the deploy registered for
    // this demo agent (running its card reprices nothing).
    let me = env.actors.agent(2);
    let mut d = env.driver();
    d.scenario("worker between homes");
    let mut params = d.params(me, 800_000, spec_uri.clone()).await.unwrap();
    params.capability = capability::encode("translate").unwrap();
    let task = d.create_with_permit(params).await.unwrap();
    let end = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let rec = loop {
        let rec = d.escrow.fetch(task.id, env.deployment.deploy_block).await.unwrap();
        if rec.status() == Status::Completed {
            break rec;
        }
        assert!(tokio::time::Instant::now() < end, "never delivered: {}", rec.status());
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let result_uri = rec.result_uri.unwrap();
    assert!(result_uri.ends_with(&format!("?src={base}/blobs")), "{result_uri}");
    // Anyone reads it from the worker, hash checked; the worker also serves
    // the envelope it fetched through the gateway.
    // (on anvil: the worker's hint is on loopback)
    let bytes = BlobSources::new(Arc::new(MemoryBlobStore::new()))
        .on_chain(tessera_bindings::envelope::LOCAL_CHAIN_ID)
        .fetch(&result_uri)
        .await
        .unwrap();
    let result: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(result["target_language"], "fr", "{result}");
    let spec_hash = BlobRef::of_uri(&spec_uri).unwrap().unwrap().hash;
    let (status, body) = get(format!("{base}/blobs/{spec_hash}")).await;
    assert_eq!(status, 200);
    assert_eq!(Envelope::from_json(body.as_bytes()).unwrap(), envelope);
    let (status, scrape) = get(format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    assert!(
        scrape.contains(r#"tessera_blob_fetches_total{source="gateway",outcome="hit"} 1"#),
        "{scrape}"
    );
}
