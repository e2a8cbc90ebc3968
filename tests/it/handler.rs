//! Bring your own brain, on a real chain: a worker whose card names an
//! HTTP handler (a small service in the test) is posted each task and
//! delivers what it answers, and is paid; a handler that times out, answers
//! off-schema or declines gets its task declined on chain with the reason,
//! its funder refunded at once; a handler that hires `translate` is handed
//! the child's result on its second call, its task delivered and the child
//! paid from the worker's wallet.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use alloy::{
    network::EthereumWallet,
    primitives::{Address, B256, U256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use axum::{Json, Router, routing::post};
use serde_json::{Value, json};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{
    MockUSDC, TaskEscrow, capability,
    client::{EscrowClient, connect},
    envelope::{Envelope, EnvelopeCodec, MemoryBlobStore, Parent},
    task::{Status, TaskRecord},
};
use tessera_e2e::{TestEnv, mined};
use tessera_workers::{
    AgentCard,
    runtime::{Handled, Worker, child_of, read_result},
};

/// Every request the handler was sent.
type Calls = Arc<Mutex<Vec<Value>>>;

/// The handler service: what it answers depends on the spec — `slow`
/// sleeps past the card's timeout, `shapeless` answers without the
/// `haiku` its schema requires, `refuse` declines, `in French` hires a
/// translation first; anything else gets a haiku.
async fn handler(calls: Calls) -> String {
    let app = Router::new().route(
        "/task",
        post(move |Json(req): Json<Value>| {
            let calls = Arc::clone(&calls);
            async move {
                calls.lock().unwrap().push(req.clone());
                let spec = req["spec"].as_str().unwrap_or_default().to_owned();
                if spec.contains("slow") {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                }
                if spec.contains("shapeless") {
                    return Json(json!({"result": {"lines": 3}}));
                }
                if spec.contains("refuse") {
                    return Json(json!({"decline": {"reason": "I only write about autumn"}}));
                }
                if spec.contains("with its mood") {
                    let Some(hired) = req["hired"].as_array() else {
                        return Json(json!({"hire": [
                            {"capability": "translate", "spec": "Translate to French: the leaves fall"},
                            {"capability": "sentiment-classify", "spec": "Classify: the leaves fall, a great and lovely sight"}
                        ]}));
                    };
                    let by = |c: &str| hired.iter().find(|h| h["capability"] == c).cloned();
                    let (Some(french), Some(mood)) = (by("translate"), by("sentiment-classify"))
                    else {
                        return Json(json!({"decline": {"reason": "a hired part is missing"}}));
                    };
                    return Json(json!({"result": {
                        "haiku": format!("{} / {}", french["result"]["text"].as_str().unwrap_or_default(), mood["result"]["label"].as_str().unwrap_or_default()),
                    }}));
                }
                if spec.contains("in French") {
                    let Some(hired) = req["hired"].as_array() else {
                        return Json(json!({"hire": [{
                            "capability": "translate",
                            "spec": "Translate to French: the leaves fall",
                            "source": null
                        }]}));
                    };
                    let french = hired[0]["result"]["text"].as_str().unwrap_or_default();
                    return Json(json!({"result": {
                        "haiku": format!("{french} / softly / autumn"),
                        "translated_by": hired[0]["executor"],
                    }}));
                }
                Json(json!({"result": {"haiku": "leaves let go / the branch remembers / nothing"}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/task")
}

/// A card offering `haiku-write` (a capability Tessera does not know),
/// its work done by the handler at `url`.
fn card(url: &str, delegates: &str) -> String {
    format!(
        "
id: haiku-e2e
description: Haiku, written by the operator's own service.
role: executor
capabilities:
  - name: haiku-write
    price: 300000
    description: A haiku on the subject the spec names.
    result:
      type: object
      properties:
        haiku: {{type: string}}
      required: [haiku]
handler:
  http: {url}
  timeout_secs: 2
{delegates}"
    )
}

struct Scene {
    env: TestEnv,
    blobs: Arc<MemoryBlobStore>,
    calls: Calls,
    worker: Worker,
}

impl Scene {
    async fn start(delegates: &str) -> Self {
        let env = TestEnv::start(DeployConfig::default()).await;
        let calls = Calls::default();
        let url = handler(Arc::clone(&calls)).await;
        let blobs = Arc::new(MemoryBlobStore::new());
        let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
        let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(signer.clone()));
        let card = AgentCard::from_yaml(&card(&url, delegates)).unwrap();
        let worker =
            Worker::new(provider, signer.address(), card, env.deployment.clone(), blobs.clone());
        assert_eq!(worker.brain().describe(), format!("the HTTP handler at {url}"));
        worker.ensure_registered().await.unwrap();
        Self { env, blobs, calls, worker }
    }

    /// A `haiku-write` task for the worker with `spec`, funded by the sponsor.
    async fn task(&self, spec: &str) -> TaskRecord {
        let mut d = self.env.driver();
        d.scenario("handler e2e");
        d.capability = capability::encode("haiku-write").unwrap();
        let mut envelope = Envelope::new(Parent::Task("1".into()), spec);
        envelope.capability = Some("haiku-write".into());
        let uri = EnvelopeCodec::default().encode(&envelope, self.blobs.as_ref()).unwrap();
        let mut params = d.params(self.worker.address(), 300_000, uri).await.unwrap();
        params.r#ref = alloy::primitives::keccak256(spec);
        d.create_with_permit(params).await.unwrap()
    }

    async fn fetch(&self, id: U256) -> TaskRecord {
        let escrow = EscrowClient::new(self.env.provider.clone(), self.env.deployment.task_escrow);
        escrow.fetch(id, self.env.deployment.deploy_block).await.unwrap()
    }

    /// Polls until `done` matches something handled, at most a minute.
    async fn until(&mut self, done: impl Fn(&Handled) -> bool) -> Vec<Handled> {
        let mut handled = Vec::new();
        let waited = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                handled.extend(self.worker.poll_once().await.unwrap());
                if handled.iter().any(&done) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        assert!(waited.is_ok(), "within a minute: {handled:?}");
        handled
    }
}

/// The `TaskDeclined` log of task `id`: its reason URI.
async fn declined_reason(env: &TestEnv, id: U256, blobs: &MemoryBlobStore) -> String {
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(TaskEscrow::TaskDeclined::SIGNATURE_HASH)
        .topic1(B256::from(id))
        .from_block(env.deployment.deploy_block);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    let [log] = logs.as_slice() else { panic!("one TaskDeclined log of {id}: {logs:?}") };
    let uri = TaskEscrow::TaskDeclined::decode_log(&log.inner).unwrap().data.reasonURI;
    read_result(&uri, blobs).unwrap()["reason"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_http_handler_is_posted_the_task_delivers_its_answer_and_is_paid() {
    let mut s = Scene::start("").await;
    let rec = s.task("Write a haiku about autumn leaves").await;
    let handled = s.until(|h| matches!(h, Handled::Delivered { .. })).await;
    let Some(Handled::Delivered { task, result_uri }) =
        handled.iter().find(|h| matches!(h, Handled::Delivered { .. }))
    else {
        unreachable!()
    };
    assert_eq!(*task, rec.id);
    let result = read_result(result_uri, s.blobs.as_ref()).unwrap();
    assert_eq!(result, json!({"haiku": "leaves let go / the branch remembers / nothing"}));

    // What the handler was sent: the task and its decoded envelope.
    let req = s.calls.lock().unwrap()[0].clone();
    assert_eq!(req["tessera"], 1);
    assert_eq!(req["task"]["id"], rec.id.to_string());
    assert_eq!(req["task"]["capability"], "haiku-write");
    assert_eq!(req["task"]["amount"], "300000");
    assert_eq!(req["task"]["funder"], rec.task.funder.to_string());
    assert_eq!(req["task"]["deadline"], rec.task.deadline.to::<u64>());
    assert_eq!(req["spec"], "Write a haiku about autumn leaves");
    assert_eq!(req["result_schema"]["required"], json!(["haiku"]));
    assert_eq!(req["limits"]["timeout_ms"], 2000, "the card's timeout");
    assert!(req.get("hired").is_none());

    // The client approves: the agent is paid.
    let mut rec = s.fetch(rec.id).await;
    assert_eq!(rec.status(), Status::Completed);
    let before = s.env.balance(s.worker.address()).await;
    let d = s.env.driver();
    d.escrow.approve(s.env.actors.client.address(), &mut rec).await.unwrap();
    assert_eq!(s.env.balance(s.worker.address()).await - before, U256::from(300_000));
}

#[tokio::test]
async fn a_handler_that_times_out_answers_off_schema_or_declines_is_declined_on_chain() {
    let mut s = Scene::start("").await;
    let slow = s.task("Write a slow haiku").await;
    let shapeless = s.task("Write a shapeless haiku").await;
    let refused = s.task("Write a haiku, or refuse").await;
    let funder = slow.task.funder;
    let funds = s.env.balance(funder).await;
    let started = std::time::Instant::now();
    let ids = [slow.id, shapeless.id, refused.id];
    let mut handled = Vec::new();
    while !ids.iter().all(|id| {
        handled.iter().any(|h| matches!(h, Handled::DeclinedOnChain { task, .. } if task == id))
    }) {
        let last = handled.len();
        handled.extend(s.until(|_| true).await);
        assert!(handled.len() > last);
        assert!(started.elapsed() < Duration::from_secs(60), "{handled:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(30), "never a hang: {:?}", started.elapsed());
    for (rec, reason) in [
        (&slow, "handler timed out after 2 s"),
        (
            &shapeless,
            "handler answered off-schema: the result field .haiku: is required and missing",
        ),
        (&refused, "handler declined: I only write about autumn"),
    ] {
        let said = handled.iter().find_map(|h| match h {
            Handled::DeclinedOnChain { task, reason, .. } if *task == rec.id => {
                Some(reason.clone())
            }
            _ => None,
        });
        assert_eq!(said.as_deref(), Some(reason), "{handled:?}");
        assert_eq!(declined_reason(&s.env, rec.id, s.blobs.as_ref()).await, reason, "on chain");
        assert_eq!(s.fetch(rec.id).await.status(), Status::Declined);
    }
    // Each funder refunded at once, whole.
    assert_eq!(s.env.balance(funder).await - funds, U256::from(3 * 300_000));
    assert!(
        handled.iter().any(|h| matches!(h, Handled::Asking { task } if *task == slow.id)),
        "asked off the pass: {handled:?}"
    );
}

/// The demo agent `id`.
fn demo(id: &str) -> &'static tessera_anvil::deploy::DemoAgent {
    tessera_anvil::deploy::DEMO_AGENTS.iter().find(|a| a.id == id).unwrap()
}

/// The demo translator: the cheapest `translate` (0.8 USDC).
fn demo_translator() -> &'static tessera_anvil::deploy::DemoAgent {
    tessera_anvil::deploy::DEMO_AGENTS.iter().find(|a| a.id == "translator").unwrap()
}

#[tokio::test]
async fn a_handler_that_hires_gets_the_childs_result_and_both_are_paid() {
    let delegates = "delegates:\n  - capability: translate\n    max_price: 1000000\n";
    let mut s = Scene::start(delegates).await;
    let me = s.worker.address();
    let usdc = MockUSDC::new(s.env.deployment.token, &s.env.provider);
    mined(usdc.mint(me, U256::from(5_000_000u64)).from(s.env.actors.deployer.address())).await;
    let translator: Address = s.env.actors.agent(demo_translator().account);
    let shared: tessera_stack::Blobs = s.blobs.clone();
    let _translating = tessera_stack::spawn_worker(
        &s.env.chain.endpoints(),
        &s.env.actors,
        &s.env.deployment,
        demo_translator(),
        shared,
    )
    .await
    .unwrap();
    let (me0, translator0) = (s.env.balance(me).await, s.env.balance(translator).await);

    let rec = s.task("Write a haiku in French").await;
    let handled = s.until(|h| matches!(h, Handled::Delivered { .. })).await;
    let child = child_of(me, rec.id, "translate").0;
    assert!(
        handled.iter().any(|h| matches!(h, Handled::Delegated { task, child: c, executor, price }
            if *task == rec.id && *c == child && *executor == translator && *price == 800_000)),
        "{handled:?}"
    );
    let child_rec = s.fetch(child).await;
    assert_eq!(child_rec.status(), Status::Paid, "the child paid");
    assert_eq!((child_rec.parent_id, child_rec.task.funder), (rec.id, me));
    let own = s.fetch(rec.id).await;
    assert_eq!(own.status(), Status::Completed, "the parent delivered");

    // Called twice: first to hire, then with the child's result.
    let calls = s.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].get("hired").is_none());
    assert_eq!(
        calls[0]["limits"]["may_hire"],
        json!([{"capability": "translate", "max_price": "1000000"}])
    );
    let hired = &calls[1]["hired"][0];
    assert_eq!(hired["capability"], "translate");
    assert_eq!(hired["task"], child.to_string());
    assert_eq!(hired["executor"], translator.to_string());
    assert_eq!(hired["paid"], "800000");
    assert_eq!(hired["spec"], "Translate to French: the leaves fall");
    assert_eq!(hired["result"]["target_language"], "fr");
    let french = hired["result"]["text"].as_str().unwrap();
    let result = read_result(own.result_uri.as_deref().unwrap(), s.blobs.as_ref()).unwrap();
    assert_eq!(result["haiku"], format!("{french} / softly / autumn"));
    assert_eq!(result["translated_by"], translator.to_string());

    // The translator is paid by the worker; the worker once the client approves.
    assert_eq!(s.env.balance(translator).await - translator0, U256::from(800_000));
    assert_eq!(me0 - s.env.balance(me).await, U256::from(800_000));
    let mut own = own;
    let d = s.env.driver();
    d.escrow.approve(s.env.actors.client.address(), &mut own).await.unwrap();
    assert_eq!(me0 - s.env.balance(me).await, U256::from(500_000), "0.8 paid out, 0.3 earned");
}

/// One answer hires two agents at once: both children are funded in the
/// same pass, each paid once it delivers, and the handler is asked again
/// with both results only when both are in.
#[tokio::test]
async fn a_handler_may_hire_several_agents_at_once() {
    let delegates = "delegates:\n  - capability: translate\n    max_price: 1000000\n  \
                     - capability: sentiment-classify\n    max_price: 500000\n";
    let mut s = Scene::start(delegates).await;
    let me = s.worker.address();
    let usdc = MockUSDC::new(s.env.deployment.token, &s.env.provider);
    mined(usdc.mint(me, U256::from(5_000_000u64)).from(s.env.actors.deployer.address())).await;
    let mut hands = Vec::new();
    for id in ["translator", "sentiment"] {
        let shared: tessera_stack::Blobs = s.blobs.clone();
        let endpoints = s.env.chain.endpoints();
        let spawned = tessera_stack::spawn_worker(
            &endpoints,
            &s.env.actors,
            &s.env.deployment,
            demo(id),
            shared,
        );
        hands.push(spawned.await.unwrap());
    }
    let me0 = s.env.balance(me).await;

    let rec = s.task("Write a haiku in French with its mood").await;
    let handled = s.until(|h| matches!(h, Handled::Delivered { .. })).await;
    let children: Vec<U256> = handled
        .iter()
        .filter_map(|h| match h {
            Handled::Delegated { task, child, .. } if *task == rec.id => Some(*child),
            _ => None,
        })
        .collect();
    let expected =
        [child_of(me, rec.id, "translate").0, child_of(me, rec.id, "sentiment-classify").0];
    assert_eq!(children, expected, "both funded, in the order hired: {handled:?}");
    for child in expected {
        assert_eq!(s.fetch(child).await.status(), Status::Paid);
    }
    let calls = s.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2, "asked again once, with both results: {calls:?}");
    let hired = calls[1]["hired"].as_array().unwrap();
    assert_eq!(hired.len(), 2);
    assert_eq!(hired[1]["result"]["label"], "positive");
    let own = s.fetch(rec.id).await;
    assert_eq!(own.status(), Status::Completed);
    let result = read_result(own.result_uri.as_deref().unwrap(), s.blobs.as_ref()).unwrap();
    assert!(result["haiku"].as_str().unwrap().ends_with(" / positive"), "{result}");
    assert_eq!(me0 - s.env.balance(me).await, U256::from(800_000 + 200_000), "each paid once");
}
