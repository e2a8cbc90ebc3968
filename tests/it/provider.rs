//! The stand-in hosted provider ([`tessera_e2e::provider`]) in front of a
//! real anvil: each limit it imposes, its seeded faults, the shared log
//! range reading through its caps, and a plan settled through it.

use alloy::{primitives::Address, providers::ProviderBuilder, rpc::types::Filter};
use serde_json::{Value, json};
use tessera_anvil::{
    chain::{ChainOptions, LocalChain},
    deploy::DeployConfig,
};
use tessera_e2e::{
    Stack, TestEnv, anvil_slot,
    provider::{Limits, StandIn},
};
use tessera_orchestrator::plan::Plan;

async fn rpc(
    url: &reqwest::Url,
    body: &Value,
    client: Option<&str>,
) -> (u16, Option<String>, Value) {
    let mut req = reqwest::Client::new().post(url.clone()).json(body);
    if let Some(c) = client {
        req = req.header("x-client", c);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry, resp.json().await.unwrap_or(Value::Null))
}

fn call(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn logs_call(from: u64, to: &str) -> Value {
    call(7, "eth_getLogs", json!([{"fromBlock": format!("{from:#x}"), "toBlock": to}]))
}

#[tokio::test]
async fn stand_in_refuses_what_hosted_providers_refuse_and_forwards_the_rest() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let limits = Limits {
        max_log_range: Some(5),
        max_log_results: Some(3),
        max_batch: 3,
        ..Limits::strict(5)
    };
    let s = StandIn::start(env.chain.endpoint_url().as_str(), limits).await;
    for method in [
        "anvil_mine",
        "evm_mine",
        "debug_traceTransaction",
        "txpool_status",
        "eth_getBlockReceipts",
    ] {
        let (status, _, body) = rpc(&s.url, &call(1, method, json!([])), None).await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (200, Some(-32601)),
            "{method}: {body}"
        );
    }
    let (status, _, body) = rpc(&s.url, &call(2, "eth_blockNumber", json!([])), None).await;
    assert_eq!(status, 200);
    let head =
        u64::from_str_radix(body["result"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert!(head >= 10, "deployment and registrations mined blocks: {head}");
    // No websocket on the URL.
    let ws = reqwest::Client::new()
        .get(s.url.clone())
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .send()
        .await
        .unwrap();
    assert_ne!(ws.status().as_u16(), 101);
    assert!(ws.status().is_client_error(), "{}", ws.status());
    // eth_getLogs over 5 blocks, with a tag for its end, is refused.
    let (status, _, body) = rpc(&s.url, &logs_call(0, "latest"), None).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("block range too large"));
    // Five blocks pass; so many logs (the registrations) do not.
    let mut answers = Vec::new();
    for from in (0..=head).step_by(5) {
        let to = format!("{:#x}", (from + 4).min(head));
        answers.push(rpc(&s.url, &logs_call(from, &to), None).await.2);
    }
    assert!(answers.iter().any(|b| b["result"].is_array()), "some 5-block windows pass");
    assert!(
        answers.iter().any(|b| b["error"]["code"] == -32005
            && b["error"]["message"].as_str().unwrap().contains("more than 3 results")),
        "a window with more than 3 logs is refused"
    );
    // Batches: each element answered on its own, in order; over 3 refused.
    let batch = json!([
        call(10, "eth_chainId", json!([])),
        call(11, "anvil_mine", json!([])),
        call(12, "eth_blockNumber", json!([]))
    ]);
    let (status, _, body) = rpc(&s.url, &batch, None).await;
    assert_eq!(status, 200);
    let ids: Vec<_> = body.as_array().unwrap().iter().map(|a| a["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [10, 11, 12]);
    assert!(body[0]["result"].is_string() && body[2]["result"].is_string());
    assert_eq!(body[1]["error"]["code"], -32601);
    let big = Value::Array((0..4).map(|i| call(i, "eth_chainId", json!([]))).collect());
    let (status, _, body) = rpc(&s.url, &big, None).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (200, Some(-32600)), "{body}");
    let counts = s.counts();
    assert_eq!(counts.not_found, 6);
    assert_eq!(counts.logs_range_refused, 1);
    assert!(counts.logs_results_refused >= 1);
    assert_eq!(counts.batches_refused, 1);
    assert_eq!(counts.per_method["eth_chainId"], 1, "a refused batch's calls are not seen");
    assert_eq!(counts.rate_limited + counts.failed, 0);
}

#[tokio::test]
async fn shared_log_range_reads_everything_through_the_caps() {
    use alloy::providers::Provider;
    use tessera_bindings::logs::{LogRange, is_range_error, read_all};
    let env = TestEnv::start(DeployConfig::default()).await;
    let direct = ProviderBuilder::new().connect_http(env.chain.endpoint_url());
    let head = direct.get_block_number().await.unwrap();
    let filter = Filter::new();
    let want = direct.get_logs(&filter.clone().from_block(0).to_block(head)).await.unwrap();
    // The most logs one block holds: a cap at that lets every block be
    // read, one at a time if need be.
    let per_block = |n: u64| want.iter().filter(|l| l.block_number == Some(n)).count();
    let (crowded, most) = (0..=head).map(|n| (n, per_block(n))).max_by_key(|x| x.1).unwrap();
    assert!(want.len() > most, "the deployment left logs over several blocks");
    let limits = Limits { max_log_results: Some(most), ..Limits::strict(5) };
    let s = StandIn::start(env.chain.endpoint_url().as_str(), limits).await;
    let through = ProviderBuilder::new().connect_http(s.url.clone());
    let mut range = LogRange::default();
    let got = read_all(&through, &filter, 0, head, &mut range).await.unwrap();
    assert_eq!(got, want, "the same logs, in order, read in accepted ranges");
    assert!(range.size() <= 5, "shrunk under the cap: {}", range.size());
    let counts = s.counts();
    assert!(counts.logs_range_refused > 0, "{counts:?}");
    // A block with more logs than the cap cannot be read at all: the
    // refusal stands at one block rather than looping.
    let limits = Limits { max_log_results: Some(most - 1), ..Limits::strict(5) };
    let tight = StandIn::start(env.chain.endpoint_url().as_str(), limits).await;
    let through = ProviderBuilder::new().connect_http(tight.url.clone());
    let err = read_all(&through, &filter, crowded, crowded, &mut range).await.unwrap_err();
    assert!(is_range_error(&err), "{err}");
    assert_eq!(tight.counts().logs_results_refused, 1);
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after_per_client() {
    let _slot = anvil_slot().await;
    let chain = LocalChain::start(&ChainOptions::default()).expect("anvil starts");
    let limits = Limits {
        rate_per_sec: Some(1),
        burst: Some(4),
        client_header: Some("x-client".into()),
        ..Limits::default()
    };
    let s = StandIn::start(chain.endpoint_url().as_str(), limits).await;
    // A batch of three takes three tokens: one left for "a".
    let batch = Value::Array((0..3).map(|i| call(i, "eth_chainId", json!([]))).collect());
    assert_eq!(rpc(&s.url, &batch, Some("a")).await.0, 200);
    assert_eq!(rpc(&s.url, &call(1, "eth_chainId", json!([])), Some("a")).await.0, 200);
    let (status, retry, body) = rpc(&s.url, &call(2, "eth_chainId", json!([])), Some("a")).await;
    assert_eq!(status, 429, "{body}");
    assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    // Another client has a bucket of its own.
    assert_eq!(rpc(&s.url, &call(3, "eth_chainId", json!([])), Some("b")).await.0, 200);
    // Tokens come back with time.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(rpc(&s.url, &call(4, "eth_chainId", json!([])), Some("a")).await.0, 200);
    let counts = s.counts();
    assert_eq!((counts.rate_limited, counts.forwarded), (1, 6), "{counts:?}");
}

#[tokio::test]
async fn seeded_503s_fall_on_the_same_requests_for_the_same_seed() {
    let _slot = anvil_slot().await;
    let chain = LocalChain::start(&ChainOptions::default()).expect("anvil starts");
    let url = chain.endpoint_url();
    let pattern = |seed: u64| {
        let url = url.clone();
        async move {
            let limits = Limits { fail_rate: 0.25, seed, ..Limits::default() };
            let s = StandIn::start(url.as_str(), limits).await;
            let mut out = Vec::new();
            for i in 0..80 {
                out.push(rpc(&s.url, &call(i, "eth_chainId", json!([])), None).await.0);
            }
            assert_eq!(s.counts().failed, out.iter().filter(|c| **c == 503).count() as u64);
            out
        }
    };
    let first = pattern(7).await;
    assert_eq!(first, pattern(7).await, "the same seed fails the same requests");
    assert_ne!(first, pattern(8).await, "another seed fails others");
    let failed = first.iter().filter(|c| **c == 503).count();
    assert!((5..=40).contains(&failed), "about a quarter failed: {failed}");
    assert!(first.iter().all(|c| *c == 200 || *c == 503));
}

#[tokio::test]
async fn a_plan_settles_through_a_provider_capping_logs_at_five_blocks() {
    let stack = Stack::start_through(Limits::strict(5)).await;
    let translator = stack.env.actors.agent(2);
    let summarizer = stack.env.actors.agent(1);
    let step =
        |index: u32, capability: &str, spec: &str, executor: Address, cost: u64, deps: &[u32]| {
            json!({"index": index, "capability": capability, "spec": spec, "executor": executor,
            "cost": cost, "deadline_offset_secs": 3600, "depends_on": deps})
        };
    let plan = json!({
        "version": 1,
        "id": Plan::id_from_label("through-a-provider"),
        "subtasks": [
            step(0, "translate", "Translate the article to French", translator, 800_000, &[]),
            step(1, "summarize", "Summarize the translation", summarizer, 400_000, &[0]),
            step(2, "summarize", "Summarize the article", summarizer, 400_000, &[]),
        ],
        "review": "auto",
        "budget": 10_000_000u64,
        "source": "The council approved a budget on Monday. It funds transport and schools.",
        "review_window_secs": 600,
    });
    let id = stack.run_plan(&plan).await;
    let view = stack.wait_state(&id, "completed", 120).await;
    assert_eq!(
        view["spend"],
        json!({"committed": "1600000", "paid": "1600000", "refunded": "0"}),
        "{view}"
    );
    let events = stack.events(&id).await;
    for kind in ["subtask_created", "subtask_paid"] {
        let n = events.iter().filter(|e| e["kind"] == kind).count();
        assert_eq!(n, 3, "{kind} once per sub-task");
    }
    let counts = stack.stand_in.as_ref().unwrap().counts();
    // The services met the cap: refusals were answered by smaller ranges,
    // and nothing asked for a method a hosted provider does not serve but
    // a probe (it falls back).
    assert!(counts.logs_range_refused > 0, "the workers started with a larger range: {counts:?}");
    assert!(counts.per_method.get("eth_getLogs").copied().unwrap_or(0) > counts.logs_range_refused);
    let refused: Vec<_> = counts
        .per_method
        .keys()
        .filter(|m| {
            ["anvil_", "evm_", "debug_", "txpool_", "eth_getBlockReceipts"]
                .iter()
                .any(|p| m.starts_with(p))
        })
        .collect();
    // Probes asked once and then done without: anvil's automine, and block
    // receipts (a sender then asks each receipt once a head).
    let probes = ["anvil_getAutomine", "eth_getBlockReceipts"];
    assert!(refused.iter().all(|m| probes.contains(&m.as_str())), "{refused:?}");
    // At most once by each service following heads: the runner and five workers.
    assert!(counts.per_method.get("eth_getBlockReceipts").is_none_or(|n| *n <= 6), "{counts:?}");
}

#[tokio::test]
async fn the_indexer_backfills_through_a_provider_capping_logs_at_five_blocks() {
    use alloy::providers::Provider;
    use tessera_indexer::{IndexStore, Indexer, IndexerConfig};
    let env = TestEnv::start(DeployConfig::default()).await;
    for i in 0..4 {
        tessera_e2e::one_more_task(&env, &format!("indexed-{i}")).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let index = |name: &str, provider: alloy::providers::DynProvider| {
        let url = format!("sqlite://{}", dir.path().join(name).display());
        let deployment = env.deployment.clone();
        async move {
            let store = IndexStore::connect(&url).await.unwrap();
            let mut ix = Indexer::new(provider, deployment, store, None, IndexerConfig::default());
            ix.sync_once().await.unwrap();
            ix
        }
    };
    let s = StandIn::start(env.chain.endpoint_url().as_str(), Limits::strict(5)).await;
    let through =
        index("through.db", ProviderBuilder::new().connect_http(s.url.clone()).erased()).await;
    let direct = index("direct.db", env.provider.clone()).await;
    let f = tessera_indexer::store::TaskQuery { limit: 500, ..Default::default() };
    let tasks = through.store().task_page(&f).await.unwrap();
    assert_eq!(tasks.0.len(), 4);
    assert_eq!(tasks, direct.store().task_page(&f).await.unwrap());
    assert_eq!(
        through.store().event_count().await.unwrap(),
        direct.store().event_count().await.unwrap()
    );
    let counts = s.counts();
    let reads = counts.per_method["eth_getLogs"];
    assert!(counts.logs_range_refused > 0, "the first range (8 blocks) was refused: {counts:?}");
    assert!(
        counts.logs_range_refused * 3 < reads,
        "the cap learnt, not hit every other read: {counts:?}"
    );
}

#[tokio::test]
async fn a_task_is_read_from_its_creation_not_from_the_deployment() {
    use alloy::{providers::Provider, sol_types::SolEvent};
    use tessera_bindings::{client::EscrowClient, task::Status};
    let env = TestEnv::start(DeployConfig::default()).await;
    // A deployment 5 000 blocks old, then one task and a few blocks more.
    for _ in 0..5 {
        env.provider
            .raw_request::<_, Value>("anvil_mine".into(), (1_000u64,))
            .await
            .expect("anvil_mine");
    }
    let id = tessera_e2e::one_more_task(&env, "old-deployment").await;
    env.provider.raw_request::<_, Value>("anvil_mine".into(), (3u64,)).await.expect("mine");
    // A provider that serves at most 50 blocks a log query: from the
    // deployment that is 100 queries a read.
    let s = StandIn::start(env.chain.endpoint_url().as_str(), Limits::strict(50)).await;
    let provider = ProviderBuilder::new().connect_http(s.url.clone()).erased();
    let head = provider.get_block_number().await.unwrap();
    let escrow = EscrowClient::new(provider, env.deployment.task_escrow);
    let rec = escrow.fetch(id, env.deployment.deploy_block).await.expect("fetched");
    assert_eq!(rec.status(), Status::Created);
    let first = s.counts().per_method["eth_getLogs"];
    assert!(first <= 8, "scanned back from the head to its creation: {first} queries");
    // Read again: its creation block is remembered, one range to the head.
    escrow.fetch(id, env.deployment.deploy_block).await.expect("fetched again");
    let again = s.counts().per_method["eth_getLogs"] - first;
    assert!(again <= 2, "{again} queries for a task whose creation is known");
    // Its logs alone, for a caller that filters them.
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(tessera_bindings::TaskEscrow::TaskCreated::SIGNATURE_HASH);
    let logs = escrow.task_logs(&filter, id, env.deployment.deploy_block).await.unwrap();
    assert_eq!(logs.len(), 1);
    assert!(head > env.deployment.deploy_block + 5_000);
    // A task never created is not found, and costs the scan to the floor
    // (here a recent one) only.
    let missing = alloy::primitives::U256::from(12_345u64);
    let before = s.counts().per_method["eth_getLogs"];
    let err = escrow.fetch(missing, head - 150).await.expect_err("no such task");
    assert!(err.to_string().contains("no TaskCreated"), "{err}");
    assert!(s.counts().per_method["eth_getLogs"] - before <= 6);
}

/// A gateway forwards a send and loses its answer (HTTP 502): the retry
/// finds the transaction on the node by its hash and answers with it; no
/// copy and no second transaction goes out, even with the nonce counted
/// (heads live), where a refused resend used to make the sender sign the
/// call again at the node's next nonce.
#[tokio::test]
async fn a_send_whose_answer_a_gateway_lost_goes_out_once() {
    use alloy::{network::EthereumWallet, primitives::U256, providers::Provider as _};
    use tessera_bindings::{MockUSDC, client::connect, heads::Heads, sender::Sender};
    let env = TestEnv::start(DeployConfig::default()).await;
    let send = "eth_sendRawTransaction".to_owned();
    let limits = Limits { lose_answers: Some((send.clone(), vec![2])), ..Limits::default() };
    let s = StandIn::start(env.chain.endpoint_url().as_str(), limits).await;
    let sponsor = env.actors.sponsor.clone();
    let from = sponsor.address();
    let p = connect(s.url.clone(), EthereumWallet::new(sponsor));
    let heads =
        Heads::connect(Some(&env.chain.ws_endpoint()), std::time::Duration::from_secs(1)).await;
    let watch = heads.watch().expect("subscribed");
    let sender = Sender::new(p.clone());
    let token = MockUSDC::new(env.deployment.token, p.clone());
    let spender = env.actors.agent(0);
    let before = env.provider.get_transaction_count(from).await.unwrap();
    // The first send counts the nonce; the second one's answer is lost.
    for amount in [5u64, 7] {
        let pending = sender
            .send(token.approve(spender, U256::from(amount)), from, Some(&watch))
            .await
            .expect("sent");
        sender.mined(pending, heads.watch()).await.expect("mined");
    }
    assert_eq!(s.counts().answers_lost, 1);
    assert_eq!(
        env.provider.get_transaction_count(from).await.unwrap() - before,
        2,
        "two sends, two transactions"
    );
    assert_eq!(s.counts().per_method[&send], 2, "the lost one was not sent again");
    let allowance = token.allowance(from, spender).call().await.unwrap();
    assert_eq!(allowance, U256::from(7));
}

/// The runner asks a chain whether it mines on every transaction (anvil's
/// `anvil_getAutomine`) only when the deployment is on a local chain: a
/// hosted provider answers the unknown method with an error it may count,
/// log or bill. Two anvils behind the stand-in, one with the local chain
/// id and one with another: the probe reaches the first only.
#[tokio::test]
async fn the_automine_probe_goes_to_a_local_chain_only() {
    use tessera_bindings::envelope::LOCAL_CHAIN_ID;
    for (chain_id, probes) in [(LOCAL_CHAIN_ID, 1), (84_532, 0)] {
        let options = ChainOptions { chain_id: Some(chain_id), ..ChainOptions::default() };
        let env = TestEnv::start_on(DeployConfig::default(), &options).await;
        assert_eq!(env.deployment.chain_id, chain_id);
        let s = StandIn::start(env.chain.endpoint_url().as_str(), Limits::default()).await;
        let signer = env.actors.sponsor.clone();
        let provider = tessera_bindings::client::connect(
            s.url.clone(),
            alloy::network::EthereumWallet::new(signer.clone()),
        );
        tessera_orchestrator::runner::Chain::new(provider, signer, env.deployment.clone())
            .await
            .expect("the runner's chain handle");
        let asked = s.counts().per_method.get("anvil_getAutomine").copied().unwrap_or(0);
        assert_eq!(asked, probes, "chain {chain_id}: {:?}", s.counts());
    }
}

#[tokio::test]
async fn an_idle_worker_through_a_hosted_provider_asks_once_a_block_and_reads_no_empty_logs() {
    // One-second blocks, nothing for the escrow in them: a worker polling
    // through the stand-in learns the block time, then asks for the head
    // about once a block, and reads no logs for blocks whose bloom rules
    // its filter out.
    let chain = ChainOptions { block_time: Some(1), ..ChainOptions::default() };
    let env = TestEnv::start_on(DeployConfig::default(), &chain).await;
    let stand_in = StandIn::start(env.chain.endpoint_url().as_str(), Limits::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let poll = tessera_e2e::hosted_poll(1);
    let worker = tessera_e2e::spawn_polling_worker(
        &env,
        &tessera_anvil::deploy::DEMO_AGENTS[0],
        &dir.path().join("blobs"),
        &stand_in.url,
        poll,
    )
    .await;
    let direct = ProviderBuilder::new().connect_http(env.chain.endpoint_url());
    let at = |n: u64| {
        let direct = direct.clone();
        async move {
            while alloy::providers::Provider::get_block_number(&direct).await.unwrap() < n {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    let start = alloy::providers::Provider::get_block_number(&direct).await.unwrap();
    // Caught up, and the block time learnt.
    at(start + 8).await;
    let before = stand_in.counts();
    let blocks = 12;
    at(start + 8 + blocks).await;
    let after = stand_in.counts();
    worker.abort();
    let of = |c: &tessera_e2e::provider::Counts, m: &str| c.per_method.get(m).copied().unwrap_or(0);
    let heads = of(&after, "eth_getBlockByNumber") - of(&before, "eth_getBlockByNumber");
    let logs = of(&after, "eth_getLogs") - of(&before, "eth_getLogs");
    assert_eq!(logs, 0, "no log read for blocks without the escrow's logs: {after:?}");
    // Once a block, and a few looks more when a block is late.
    assert!(heads <= blocks + 3, "{heads} head polls over {blocks} blocks: {after:?}");
    assert!(heads >= blocks - 1, "every block seen: {heads} polls over {blocks} blocks");
    assert_eq!(after.forwarded - before.forwarded, heads, "nothing else asked: {after:?}");
}
