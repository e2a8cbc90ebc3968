//! The worker loop on a real chain: registration from its card, delivery of
//! assigned tasks, tasks it cannot do declined on chain (the funder
//! refunded at once, the reason in the log), and claiming an unreviewed
//! payment.

use std::sync::Arc;

use alloy::{
    network::EthereumWallet,
    primitives::{B256, U256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{
    AgentRegistry, TaskEscrow, capability,
    client::{EscrowClient, connect},
    envelope::{Envelope, EnvelopeCodec, MemoryBlobStore, Parent},
    offers,
    task::Status,
};
use tessera_e2e::TestEnv;
use tessera_workers::{
    AgentCard,
    runtime::{Handled, Registration, Worker, read_result},
};

const CARD: &str = "
id: summarizer-e2e
description: Extractive summaries for the end-to-end tests.
role: executor
model: offline
capabilities:
  - name: summarize
    price: 300000
instructions: Summarize as bullets.
";

const ARTICLE: &str = "The escrow locks funds before work starts. Agents accept tasks \
and deliver results on chain. Clients approve results or dispute them. Arbiters settle \
disputes in basis points. Every step emits an event for the indexer.";

/// A worker on a dev account no demo agent uses.
fn worker(env: &TestEnv, blobs: Arc<MemoryBlobStore>) -> Worker {
    worker_with(env, blobs, CARD)
}

/// A worker on that account running the card `yaml`.
fn worker_with(env: &TestEnv, blobs: Arc<MemoryBlobStore>, yaml: &str) -> Worker {
    let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
    let me = signer.address();
    let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(signer));
    let card = AgentCard::from_yaml(yaml).unwrap();
    Worker::new(provider, me, card, env.deployment.clone(), blobs)
}

/// The `TaskDeclined` log of task `id`: its executor and reason URI.
async fn declined_log(env: &TestEnv, id: U256) -> (alloy::primitives::Address, String) {
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(TaskEscrow::TaskDeclined::SIGNATURE_HASH)
        .topic1(B256::from(id))
        .from_block(env.deployment.deploy_block);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    let [log] = logs.as_slice() else { panic!("one TaskDeclined log of {id}: {logs:?}") };
    let ev = TaskEscrow::TaskDeclined::decode_log(&log.inner).unwrap().data;
    (ev.executor, ev.reasonURI)
}

fn spec_uri(spec: &str, capability: Option<&str>, blobs: &MemoryBlobStore) -> String {
    let mut envelope = Envelope::new(Parent::Task("1".into()), spec);
    envelope.capability = capability.map(str::to_owned);
    envelope.source = Some(ARTICLE.into());
    EnvelopeCodec::default().encode(&envelope, blobs).unwrap()
}

#[tokio::test]
async fn worker_registers_delivers_declines_on_chain_and_is_paid() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let blobs = Arc::new(MemoryBlobStore::new());
    let mut w = worker(&env, blobs.clone());
    assert_eq!(w.ensure_registered().await.unwrap(), Registration::Registered);
    assert_eq!(w.ensure_registered().await.unwrap(), Registration::Updated(0), "idempotent");

    // The new agent undercuts the demo summarizers.
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let read =
        offers::offers_for(&registry, capability::encode("summarize").unwrap(), 100).await.unwrap();
    assert_eq!(offers::cheapest_active(&read.offers, None), Some((w.address(), 300_000)));

    let mut d = env.driver();
    d.scenario("worker e2e");
    let me = w.address();
    let good = d
        .params(me, 300_000, spec_uri("Summarize in two bullets", Some("summarize"), &blobs))
        .await
        .unwrap();
    let good = d.create_with_permit(good).await.unwrap();
    // Below the worker's price: the escrow refuses to fund it at all.
    let cheap = d.params(me, 100, spec_uri("Summarize", Some("summarize"), &blobs)).await.unwrap();
    let refused = d.create_with_permit(cheap).await.unwrap_err();
    assert!(refused.to_string().contains("TaskEscrowExecutorNotOffering"), "{refused}");
    // Funded for `summarize`, which the worker offers, but the envelope asks
    // for a translation, which it does not: the worker declines on chain, as
    // it does a task whose envelope it cannot read.
    let other = d
        .params(me, 900_000, spec_uri("Translate to French", Some("translate"), &blobs))
        .await
        .unwrap();
    let other = d.create_with_permit(other).await.unwrap();
    let junk = d.params(me, 300_000, "data:application/json,{not json".into()).await.unwrap();
    let junk = d.create_with_permit(junk).await.unwrap();
    let funder = other.task.funder;
    let funds = env.balance(funder).await;

    let handled = w.poll_once().await.unwrap();
    assert_eq!(handled.len(), 3, "{handled:?}");
    let Handled::Delivered { task, result_uri } = &handled[0] else { panic!("{handled:?}") };
    assert_eq!(*task, good.id);
    let mut reasons = Vec::new();
    for (h, id) in handled[1..].iter().zip([other.id, junk.id]) {
        let Handled::DeclinedOnChain { task, reason, reason_uri } = h else { panic!("{h:?}") };
        assert_eq!(*task, id);
        // The reason is on chain, published as `{"reason": …}`.
        let (executor, uri) = declined_log(&env, id).await;
        assert_eq!((executor, &uri), (me, reason_uri));
        assert_eq!(read_result(&uri, blobs.as_ref()).unwrap()["reason"], reason.as_str());
        reasons.push(reason.clone());
    }
    assert_eq!(reasons[0], "capability \"translate\" is not offered");
    assert_eq!(reasons[1], "envelope unreadable: malformed", "a category, not the raw error");
    // Refunded at once, whole: nothing waits for the deadline.
    assert_eq!(env.balance(funder).await - funds, U256::from(900_000 + 300_000));
    assert!(w.poll_once().await.unwrap().is_empty(), "nothing new, nothing redone");

    let mut good = d.escrow.fetch(good.id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(good.status(), Status::Completed);
    assert_eq!(good.result_uri.as_deref(), Some(result_uri.as_str()));
    let result = read_result(result_uri, blobs.as_ref()).unwrap();
    assert_eq!(result["bullets"].as_array().unwrap().len(), 2, "{result}");
    for declined in [other.id, junk.id] {
        let rec = d.escrow.fetch(declined, env.deployment.deploy_block).await.unwrap();
        assert_eq!(rec.status(), Status::Declined, "terminal: a new task is the way on");
    }

    let before = env.balance(me).await;
    d.escrow.approve(env.actors.client.address(), &mut good).await.unwrap();
    assert_eq!(env.balance(me).await - before, U256::from(300_000));
}

/// A worker registered with two capabilities restarts with a card that
/// lists one: the other is withdrawn from the registry (no longer offered,
/// no longer listed for its capability), and the card published with it
/// has neither the dropped capability nor the instructions.
#[tokio::test]
async fn a_capability_dropped_from_the_card_is_withdrawn_on_restart() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let blobs = Arc::new(MemoryBlobStore::new());
    let two = CARD.replace(
        "    price: 300000\n",
        "    price: 300000\n  - name: extract-entities\n    price: 200000\n",
    );
    let first = worker_with(&env, blobs.clone(), &two);
    assert_eq!(first.ensure_registered().await.unwrap(), Registration::Registered);
    let me = first.address();
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let entities = capability::encode("extract-entities").unwrap();
    let offer = registry.priceOf(me, entities).call().await.unwrap();
    assert_eq!((offer.offered, offer.price), (true, 200_000));

    // Restarted with the one-capability card.
    let second = worker(&env, blobs.clone());
    assert_eq!(
        second.ensure_registered().await.unwrap(),
        Registration::Updated(2),
        "the capability withdrawn, the card URI updated"
    );
    let offer = registry.priceOf(me, entities).call().await.unwrap();
    assert_eq!((offer.offered, offer.price), (false, 0));
    let listed = offers::offers_for(&registry, entities, 100).await.unwrap();
    assert!(!offers::agents(&listed.offers).contains(&me), "{listed:?}");
    let agent = registry.getAgent(me).call().await.unwrap();
    assert_eq!(agent.capabilities, vec![capability::encode("summarize").unwrap()]);
    assert_eq!(agent.prices, vec![300_000]);
    let published = AgentCard::from_data_uri(&agent.metadataURI).unwrap();
    assert_eq!(published.capabilities.len(), 1);
    assert_eq!(published.instructions, "", "instructions stay off chain");
    assert_eq!(second.ensure_registered().await.unwrap(), Registration::Updated(0));

    // A card with none of the listed capabilities: the new one is added
    // before the old one goes (an agent never offers nothing).
    let third = worker_with(&env, blobs, &CARD.replace("name: summarize", "name: translate"));
    assert_eq!(third.ensure_registered().await.unwrap(), Registration::Updated(3));
    let agent = registry.getAgent(me).call().await.unwrap();
    assert_eq!(agent.capabilities, vec![capability::encode("translate").unwrap()]);
}

#[tokio::test]
async fn restarted_worker_finishes_an_accepted_task_and_claims_payment() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let blobs = Arc::new(MemoryBlobStore::new());
    let w = worker(&env, blobs.clone());
    w.ensure_registered().await.unwrap();
    let mut d = env.driver();
    d.scenario("worker release");
    let params = d.params(w.address(), 300_000, spec_uri("Summarize", None, &blobs)).await.unwrap();
    let rec = d.create_with_permit(params).await.unwrap();

    // A worker that died between accept and complete: its successor (a fresh
    // Worker, scanning from the deploy block) finishes the task.
    let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
    let own = EscrowClient::new(
        connect(env.chain.endpoint_url(), EthereumWallet::new(signer)),
        env.deployment.task_escrow,
    );
    own.accept(w.address(), &mut rec.clone()).await.unwrap();
    let mut w = worker(&env, blobs.clone());
    let handled = w.poll_once().await.unwrap();
    assert!(
        matches!(handled.as_slice(), [Handled::Delivered { task, .. }] if *task == rec.id),
        "{handled:?}"
    );
    assert!(w.poll_once().await.unwrap().is_empty(), "review window still open");

    let before = env.balance(w.address()).await;
    d.advance(3601).await.unwrap();
    let handled = w.poll_once().await.unwrap();
    assert_eq!(handled, [Handled::Released { task: rec.id }]);
    assert_eq!(env.balance(w.address()).await - before, U256::from(300_000));
    let rec = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(rec.status(), Status::Paid);
}

/// A worker follows the escrow's logs pushed over the websocket: a creation
/// is taken from the feed as its event says. A feed that falls behind ends
/// (here after one waiting log), and the worker reads ranges again from the
/// block of the last log it took, so no task of the batch is lost.
#[tokio::test]
async fn a_worker_whose_log_feed_ends_reads_ranges_again_and_loses_no_task() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let blobs = Arc::new(MemoryBlobStore::new());
    let mut w = worker(&env, blobs.clone());
    w.ensure_registered().await.unwrap();
    w.subscribe_logs(&env.chain.ws_endpoint(), 1).await;
    assert!(w.following_logs(), "subscribed");
    // Catch up to the head of the moment of subscribing, in ranges.
    assert!(w.poll_once().await.unwrap().is_empty());

    let mut d = env.driver();
    d.scenario("worker feed");
    let mut params = Vec::new();
    for spec in ["Summarize", "Summarize again", "Summarize once more"] {
        params.push(d.params(w.address(), 300_000, spec_uri(spec, None, &blobs)).await.unwrap());
    }
    let recs = d.create_many_with_permit(params).await.unwrap();
    // Three creations pushed at a feed that holds one: it ends after the first.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let first = w.poll_once().await.unwrap();
    assert!(
        matches!(first.as_slice(), [Handled::Delivered { task, .. }] if *task == recs[0].id),
        "the one log the feed held: {first:?}"
    );
    let rest = w.poll_once().await.unwrap();
    assert!(!w.following_logs(), "the feed ended");
    let mut delivered: Vec<U256> = rest
        .iter()
        .map(|h| match h {
            Handled::Delivered { task, .. } => *task,
            other => panic!("only deliveries: {rest:?} ({other:?})"),
        })
        .collect();
    delivered.sort();
    let mut expected = vec![recs[1].id, recs[2].id];
    expected.sort();
    assert_eq!(delivered, expected, "read again from the ranges, once each");
    for rec in &recs {
        let rec = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
        assert_eq!(rec.status(), Status::Completed);
    }
    assert!(w.poll_once().await.unwrap().is_empty(), "nothing twice");
}

/// A busy block pushes more logs than the websocket client buffers by
/// default (16): forty creations in one transaction all reach the worker
/// through its feed, none skipped, and the feed lives on.
#[tokio::test]
async fn a_busy_block_reaches_the_worker_whole_through_its_feed() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let blobs = Arc::new(MemoryBlobStore::new());
    let mut w = worker(&env, blobs.clone());
    w.ensure_registered().await.unwrap();
    w.subscribe_logs(&env.chain.ws_endpoint(), tessera_bindings::feed::FEED_CAPACITY).await;
    assert!(w.following_logs(), "subscribed");
    assert!(w.poll_once().await.unwrap().is_empty());

    let mut d = env.driver();
    d.scenario("busy block");
    let mut params = Vec::new();
    for i in 0..40 {
        let spec = spec_uri(&format!("Summarize part {i}"), None, &blobs);
        params.push(d.params(w.address(), 300_000, spec).await.unwrap());
    }
    let recs = d.create_many_with_permit(params).await.unwrap();
    let mut delivered = std::collections::BTreeSet::new();
    for _ in 0..200 {
        for h in w.poll_once().await.unwrap() {
            if let Handled::Delivered { task, .. } = h {
                delivered.insert(task);
            }
        }
        if delivered.len() == recs.len() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(delivered.len(), 40, "every creation of the block was taken");
    assert!(w.following_logs(), "from the feed, which did not end");
}

mod llm {
    use std::time::Duration;

    use alloy::{network::EthereumWallet, signers::local::PrivateKeySigner};
    use tessera_anvil::deploy::DeployConfig;
    use tessera_bindings::{client::connect, envelope::MemoryBlobStore};
    use tessera_e2e::{
        TestEnv,
        mock_openai::{MockOpenAi, Reply},
    };
    use tessera_workers::{
        AgentCard,
        llm::LlmConfig,
        runtime::{Handled, Worker, read_result},
    };

    const LLM_CARD: &str = "
id: llm-e2e
description: Summaries by a language model.
role: executor
model: gpt-test
capabilities:
  - name: summarize
    price: 300000
instructions: Summarize faithfully.
";

    const LLM_SENTIMENT_CARD: &str = "
id: llm-sentiment-e2e
description: Sentiment by a language model.
role: executor
model: gpt-test
capabilities:
  - name: sentiment-classify
    price: 300000
instructions: Classify the sentiment.
";

    async fn setup(mock: &MockOpenAi) -> (TestEnv, std::sync::Arc<MemoryBlobStore>, Worker) {
        setup_card(mock, LLM_CARD).await
    }

    async fn setup_card(
        mock: &MockOpenAi,
        card: &str,
    ) -> (TestEnv, std::sync::Arc<MemoryBlobStore>, Worker) {
        let env = TestEnv::start(DeployConfig::default()).await;
        let blobs = std::sync::Arc::new(MemoryBlobStore::new());
        let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
        let me = signer.address();
        let provider = connect(env.chain.endpoint_url(), EthereumWallet::new(signer));
        let mut cfg = LlmConfig::new(&mock.base_url, "test-key");
        cfg.timeout = Duration::from_millis(500);
        let w = Worker::new(
            provider,
            me,
            AgentCard::from_yaml(card).unwrap(),
            env.deployment.clone(),
            blobs.clone(),
        )
        .with_llm(&cfg);
        w.ensure_registered().await.unwrap();
        (env, blobs, w)
    }

    #[tokio::test]
    async fn llm_worker_delivers_through_the_provider_after_one_retry() {
        let mock = MockOpenAi::start().await;
        let (env, blobs, mut w) = setup(&mock).await;
        mock.script([Reply::ServerError]);
        let mut d = env.driver();
        let spec = super::spec_uri("Summarize the article", Some("summarize"), &blobs);
        let params = d.params(w.address(), 300_000, spec).await.unwrap();
        d.create_with_permit(params).await.unwrap();
        let handled = w.poll_once().await.unwrap();
        let [Handled::Delivered { result_uri, .. }] = handled.as_slice() else {
            panic!("{handled:?}")
        };
        let result = read_result(result_uri, blobs.as_ref()).unwrap();
        assert_eq!(result["engine"], "llm");
        assert_eq!(result["model"], "gpt-test");
        assert!(result["text"].as_str().unwrap().starts_with("mock model read"), "{result}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "the 500 was retried once");
        let user = requests[1]["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("<task-data>") && user.contains("Summarize the article"));
        assert!(user.contains("The escrow locks funds"), "source passed as data: {user}");
        assert_eq!(requests[1]["tools"][0]["function"]["name"], "deliver_result");
        assert!(mock.auth_headers().iter().all(|h| h == "Bearer test-key"));
    }

    #[tokio::test]
    async fn two_bad_answers_decline_the_task_on_chain() {
        let mock = MockOpenAi::start().await;
        let (env, blobs, mut w) = setup(&mock).await;
        mock.script([Reply::Malformed, Reply::Slow(Duration::from_secs(2))]);
        let mut d = env.driver();
        let spec = super::spec_uri("Summarize the article", Some("summarize"), &blobs);
        let params = d.params(w.address(), 300_000, spec).await.unwrap();
        let rec = d.create_with_permit(params).await.unwrap();
        let handled = w.poll_once().await.unwrap();
        let [Handled::DeclinedOnChain { reason, .. }] = handled.as_slice() else {
            panic!("{handled:?}")
        };
        assert!(reason.starts_with("LLM: no answer within"), "{reason}");
        let fresh = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
        assert_eq!(fresh.status(), tessera_bindings::task::Status::Declined);
        let (_, uri) = super::declined_log(&env, rec.id).await;
        assert_eq!(read_result(&uri, blobs.as_ref()).unwrap()["reason"], reason.as_str());
    }

    /// An LLM sentiment result carries the `label` and `score` its
    /// capability promises, as the offline one does, so a plan's condition
    /// reads it; an answer without `score`, twice, is declined on chain.
    #[tokio::test]
    async fn llm_results_carry_the_promised_fields_and_answers_without_them_are_declined() {
        let mock = MockOpenAi::start().await;
        let (env, blobs, mut w) = setup_card(&mock, LLM_SENTIMENT_CARD).await;
        let answer = serde_json::json!({"text": "Upbeat about the budget.", "label": "positive", "score": 0.6});
        mock.script([Reply::Arguments(answer)]);
        let mut d = env.driver();
        let spec = super::spec_uri("Classify the sentiment", Some("sentiment-classify"), &blobs);
        let mut params = d.params(w.address(), 300_000, spec).await.unwrap();
        params.capability = tessera_bindings::capability::encode("sentiment-classify").unwrap();
        d.create_with_permit(params).await.unwrap();
        let handled = w.poll_once().await.unwrap();
        let [Handled::Delivered { result_uri, .. }] = handled.as_slice() else {
            panic!("{handled:?}")
        };
        let result = read_result(result_uri, blobs.as_ref()).unwrap();
        assert_eq!(
            (&result["capability"], &result["engine"], &result["label"], &result["score"]),
            (
                &serde_json::json!("sentiment-classify"),
                &serde_json::json!("llm"),
                &serde_json::json!("positive"),
                &serde_json::json!(0.6)
            ),
            "{result}"
        );
        let condition = tessera_orchestrator::condition::Condition::parse(
            "out[0].label == \"positive\" and out[0].score > 0.2",
        )
        .unwrap();
        assert!(condition.eval(&[(0, result)].into_iter().collect()), "a condition reads it");
        let required = &mock.requests()[0]["tools"][0]["function"]["parameters"]["required"];
        assert_eq!(*required, serde_json::json!(["text", "label", "score"]));

        // Two answers without the promised `score`: declined on chain.
        let no_score = serde_json::json!({"text": "Upbeat.", "label": "positive"});
        mock.script([Reply::Arguments(no_score.clone()), Reply::Arguments(no_score)]);
        let spec = super::spec_uri("Classify the sentiment", Some("sentiment-classify"), &blobs);
        let mut params = d.params(w.address(), 300_000, spec).await.unwrap();
        params.capability = tessera_bindings::capability::encode("sentiment-classify").unwrap();
        let rec = d.create_with_permit(params).await.unwrap();
        let handled = w.poll_once().await.unwrap();
        let [Handled::DeclinedOnChain { task, reason, .. }] = handled.as_slice() else {
            panic!("{handled:?}")
        };
        assert_eq!(*task, rec.id);
        assert!(reason.starts_with("LLM: ") && reason.contains("`score` is missing"), "{reason}");
        assert_eq!(mock.requests().len(), 3, "asked again once");
        let fresh = d.escrow.fetch(rec.id, env.deployment.deploy_block).await.unwrap();
        assert_eq!(fresh.status(), tessera_bindings::task::Status::Declined);
    }
}
