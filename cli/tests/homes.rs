//! One home per party: the sponsor's `tessera serve`, each agent's
//! `tessera worker`, the arbiter and an indexer each run as a process of
//! its own, with a data directory of its own, on a host of its own (a
//! network namespace, where the machine allows it). Nothing is shared but
//! the chain and HTTP, so every envelope, result and rationale over the
//! inline limit has to travel between homes by its hash.
//!
//! The plan: a 20 KB English article translated to French (a result over
//! the limit, served by the translator), summarized by an agent that cannot
//! fetch blobs (it declines on chain; the run reassigns the step the next
//! block), and its entities extracted, disputed by the sponsor and ruled by
//! the arbiter's council with a rationale over the limit (served by the
//! arbiter). The sponsor, the arbiter and the indexer each read what the
//! others wrote, hash-verified.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use alloy::{
    primitives::{Address, B256},
    providers::Provider,
    rpc::types::Filter,
    sol_types::SolEvent,
};
use serde_json::{Value, json};
use tessera_anvil::{
    chain::ChainOptions,
    deploy::{DEMO_AGENTS, DeployConfig},
};
use tessera_bindings::{
    TaskEscrow,
    envelope::{BlobHash, DEFAULT_INLINE_LIMIT},
};
use tessera_e2e::{
    TEST_TOKEN, TestEnv,
    mock_openai::{MockOpenAi, Reply},
};

mod support;

use support::{Service, hosts::Hosts, listening, view};

/// The parties, each on a host of its own.
const SPONSOR: &str = "sponsor";
const TRANSLATOR: &str = "translator";
const BLIND: &str = "summarizer-b";
const SUMMARIZER: &str = "summarizer-a";
const EXTRACTOR: &str = "extractor";
const ARBITER: &str = "arbiter";
const INDEXER: &str = "indexer";
const PARTIES: &[&str] = &[SPONSOR, TRANSLATOR, BLIND, SUMMARIZER, EXTRACTOR, ARBITER, INDEXER];

/// A party's home: its own directory, host and processes.
struct Home {
    dir: PathBuf,
    services: Vec<Service>,
}

fn demo_agent(id: &str) -> &'static tessera_anvil::deploy::DemoAgent {
    DEMO_AGENTS.iter().find(|a| a.id == id).unwrap_or_else(|| panic!("no demo agent {id}"))
}

/// `tessera worker` for demo agent `id` at home, on its host; its blob
/// gateway address, as it announced it.
fn worker(
    hosts: &Hosts,
    env: &TestEnv,
    home: &mut Home,
    rpc: &str,
    id: &str,
    extra: &[&str],
) -> String {
    let agent = demo_agent(id);
    let card = home.dir.join("card.yaml");
    // A JSON card is a YAML card.
    std::fs::write(&card, serde_json::to_string(&agent.card()).unwrap()).unwrap();
    let key = format!("0x{}", alloy::hex::encode(env.actors.agents[agent.account].to_bytes()));
    let deployment = home.dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let at = hosts.addr(id);
    let (service, base) = listening(
        hosts
            .command(id, env!("CARGO_BIN_EXE_tessera"))
            .args(["worker", "--poll-ms", "200"])
            .arg("--card")
            .arg(&card)
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", rpc])
            .arg("--blobs")
            .arg(home.dir.join("blobs"))
            .args(["--listen", &format!("{at}:0")])
            .args(extra)
            .env("TESSERA_WORKER_KEY", key)
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stderr(Stdio::inherit()),
    );
    home.services.push(service);
    base
}

fn home(root: &Path, party: &str) -> Home {
    let dir = root.join(party);
    std::fs::create_dir_all(&dir).unwrap();
    Home { dir, services: Vec::new() }
}

/// Files under `dir` named by a blob hash (what a home's blob store holds).
fn blobs_in(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(shards) = std::fs::read_dir(dir.join("blobs").join("sha256")) else { return out };
    for shard in shards.flatten() {
        for f in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            out.push(f.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

/// `got` (an address as the API shows it) is `want`.
fn same(got: &Value, want: Address) {
    let got = got.as_str().unwrap_or_default();
    assert!(got.eq_ignore_ascii_case(&want.to_string()), "{got} is not {want}");
}

/// The JSON document a home keeps under `hash`.
fn read_json(dir: &Path, hash: &str) -> Value {
    let path = dir.join("blobs").join("sha256").join(&hash[..2]).join(hash);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every escrow log of event `E` since the deployment.
async fn escrow_events<E: SolEvent>(env: &TestEnv) -> Vec<E> {
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(E::SIGNATURE_HASH)
        .from_block(env.deployment.deploy_block);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    logs.iter().map(|l| E::decode_log_data(l.data()).unwrap()).collect()
}

/// The hash a `sha256:` URI names (its location hint left aside).
fn hash_of(uri: &str) -> String {
    let hex = uri.strip_prefix("sha256:").unwrap_or_else(|| panic!("{uri} is not sha256:"));
    let hex = hex.split('?').next().unwrap();
    hex.parse::<BlobHash>().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_party_at_home_settles_a_plan_over_the_inline_limit() {
    let hosts = Hosts::new(PARTIES);
    match hosts.isolated() {
        Ok(()) => println!("each party on a network namespace of its own"),
        Err(why) => println!("parties share the loopback ({why}); each keeps its own directory"),
    }
    let hub = hosts.hub();
    // The chain is reached on the hub from every party's host: anvil takes
    // one address with a port of its choosing, so it listens on all of the
    // test host's (only while the test runs: a dev chain with dev keys).
    let host = hosts.isolated().is_ok().then(|| "0.0.0.0".to_owned());
    let chain = ChainOptions { host, ..ChainOptions::default() };
    // Rulings are final at once: the dispute settles without an appeal window.
    let env =
        TestEnv::start_on(DeployConfig { appeal_window: 0, ..DeployConfig::default() }, &chain)
            .await;
    let rpc = format!("http://{hub}:{}", env.chain.port());
    let root = tempfile::tempdir().unwrap();
    let mut homes: std::collections::BTreeMap<&str, Home> =
        PARTIES.iter().map(|p| (*p, home(root.path(), p))).collect();

    // The agents, each serving its own blobs.
    let translator =
        worker(&hosts, &env, homes.get_mut(TRANSLATOR).unwrap(), &rpc, TRANSLATOR, &[]);
    // It reads no location hint and has no gateway: a blob it was not
    // given is beyond it.
    worker(&hosts, &env, homes.get_mut(BLIND).unwrap(), &rpc, BLIND, &["--ignore-blob-hints"]);
    worker(&hosts, &env, homes.get_mut(SUMMARIZER).unwrap(), &rpc, SUMMARIZER, &[]);
    worker(&hosts, &env, homes.get_mut(EXTRACTOR).unwrap(), &rpc, EXTRACTOR, &[]);
    println!("translator serves its blobs at {translator}");

    // The arbiter's council is a (simulated) LLM provider, on the hub.
    let council = MockOpenAi::start_at(&format!("{hub}:0")).await;
    let rationale = format!(
        "The sponsor disputes the entity list. Read against the article: {}",
        "the list names the towns and the company the article speaks of, no more. ".repeat(80)
    );
    assert!(rationale.len() > DEFAULT_INLINE_LIMIT);
    council.script([Reply::Arguments(
        json!({"verdict": "worker", "executor_share_bps": 10_000, "rationale": rationale}),
    )]);
    let arbiter_home = homes.get_mut(ARBITER).unwrap();
    let deployment = arbiter_home.dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let arbiter_key = format!("0x{}", alloy::hex::encode(env.actors.arbiter.to_bytes()));
    let (arbiter, arbiter_url) = listening(
        hosts
            .command(ARBITER, env!("CARGO_BIN_EXE_tessera"))
            .args(["arbiter", "run", "--poll-ms", "200"])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", &rpc])
            .args([
                "--database-url",
                &format!("sqlite://{}", arbiter_home.dir.join("arbiter.db").display()),
            ])
            .arg("--blobs")
            .arg(arbiter_home.dir.join("blobs"))
            .args(["--metrics-addr", &format!("{}:0", hosts.addr(ARBITER))])
            .env("TESSERA_ARBITER_KEY", arbiter_key)
            .env("TESSERA_LLM_API_KEY", "sk-test")
            .env("TESSERA_LLM_BASE_URL", &council.base_url)
            .stderr(Stdio::inherit()),
    );
    arbiter_home.services.push(arbiter);
    println!("arbiter serves its blobs at {arbiter_url}");

    // The sponsor.
    let sponsor_home = homes.get_mut(SPONSOR).unwrap();
    let deployment = sponsor_home.dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let sponsor_key = format!("0x{}", alloy::hex::encode(env.actors.sponsor.to_bytes()));
    let (sponsor, api) = listening(
        hosts
            .command(SPONSOR, env!("CARGO_BIN_EXE_tessera"))
            .args(["serve", "--listen", &format!("{}:0", hosts.addr(SPONSOR))])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", &rpc])
            .args([
                "--database-url",
                &format!("sqlite://{}", sponsor_home.dir.join("runs.db").display()),
            ])
            .args(["--no-index"])
            .arg("--blobs")
            .arg(sponsor_home.dir.join("blobs"))
            .env("TESSERA_SPONSOR_KEY", sponsor_key)
            .env("TESSERA_API_TOKEN", TEST_TOKEN)
            .env_remove("DATABASE_URL")
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stderr(Stdio::inherit()),
    );
    sponsor_home.services.push(sponsor);

    // An indexer of its own, on its own host.
    let indexer_home = homes.get_mut(INDEXER).unwrap();
    let deployment = indexer_home.dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let (indexer, index_api) = listening(
        hosts
            .command(INDEXER, env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "run", "--poll-ms", "200"])
            .args(["--listen", &format!("{}:0", hosts.addr(INDEXER))])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", &rpc])
            .args([
                "--database-url",
                &format!("sqlite://{}", indexer_home.dir.join("index.db").display()),
            ])
            .arg("--blobs")
            .arg(indexer_home.dir.join("blobs"))
            .stderr(Stdio::inherit()),
    );
    indexer_home.services.push(indexer);

    let http = reqwest::Client::new();
    support::wait_up(&http, &api).await;
    let source = tessera_stack::demo_homes::long_article();
    let executor = |id: &str| env.actors.agent(demo_agent(id).account);
    let plan_id = B256::repeat_byte(0x29);
    let plan = json!({
        "version": 1, "id": plan_id, "review": "manual", "budget": 5_000_000u64, "source": source,
        "recovery": {"on_decline": "reassign"},
        "subtasks": [
            {"index": 0, "capability": "translate", "spec": "Translate the article to French",
             "executor": executor(TRANSLATOR), "cost": 800_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "summarize", "spec": "Summarize the translation",
             "executor": executor(BLIND), "cost": 500_000, "deadline_offset_secs": 3600,
             "depends_on": [0]},
            {"index": 2, "capability": "extract-entities", "spec": "List the places and companies",
             "executor": executor(EXTRACTOR), "cost": 300_000, "deadline_offset_secs": 3600,
             "depends_on": [0]},
        ],
    });
    let id = support::propose_and_approve(&http, &api, &plan).await;

    // The sponsor approves the translation and the summary, and disputes
    // the extraction with a reason over the inline limit.
    let reason = format!("The list misses places: {}", "the article names more. ".repeat(250));
    assert!(reason.len() > DEFAULT_INLINE_LIMIT);
    let mut reviewed = [false; 3];
    let end = tokio::time::Instant::now() + Duration::from_secs(180);
    let v = loop {
        let v = view(&http, &api, &id).await;
        if v["state"] == "completed" || v["state"] == "failed" {
            break v;
        }
        for (i, done) in reviewed.iter_mut().enumerate() {
            if *done || v["subtasks"][i]["phase"] != "completed" {
                continue;
            }
            let body = if i == 2 {
                json!({"decision": "dispute", "reason": reason})
            } else {
                json!({"decision": "approve"})
            };
            let resp = http
                .post(format!("{api}/api/runs/{id}/subtasks/{i}/review"))
                .bearer_auth(TEST_TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
            *done = true;
        }
        assert!(tokio::time::Instant::now() < end, "the plan never settled: {v:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(v["state"], "completed", "{v:#}");

    // The blind summarizer declined on chain, and the step went to the other.
    let declines = v["declines"].as_array().cloned().unwrap_or_default();
    assert_eq!(declines.len(), 1, "{v:#}");
    same(&declines[0]["executor"], executor(BLIND));
    let why = declines[0]["reason"].as_str().unwrap();
    // A category, never the URL or hash of what was asked.
    assert_eq!(why, "envelope unreadable: not found");
    same(&v["subtasks"][1]["executor"], executor(SUMMARIZER));

    // Each large blob lives with its writer, hinted with the writer's
    // gateway, and readers keep a verified copy.
    let result_uri = |i: usize| v["subtasks"][i]["result_uri"].as_str().unwrap().to_owned();
    let translated = result_uri(0);
    assert!(translated.ends_with(&format!("?src={translator}/blobs")), "{translated}");
    let translation = hash_of(&translated);
    assert!(blobs_in(&homes[TRANSLATOR].dir).contains(&translation));
    assert!(blobs_in(&homes[SPONSOR].dir).contains(&translation), "the sponsor fetched it");
    assert!(!blobs_in(&homes[BLIND].dir).contains(&translation));

    // The council judged the whole translation, fetched from the sponsor's
    // envelope: a sentence from its end is in the evidence it was sent.
    let text = read_json(&homes[TRANSLATOR].dir, &translation)["text"].as_str().unwrap().to_owned();
    assert!(text.len() > DEFAULT_INLINE_LIMIT, "the translation is over the inline limit");
    let late: String =
        text[text.len() - 200..].split(". ").nth(1).unwrap().chars().take(40).collect();
    let asked = serde_json::to_string(&council.requests()).unwrap();
    assert!(asked.contains(&late), "the evidence holds {late:?}");

    // The dispute's reason is a blob at the sponsor's, fetched by the arbiter.
    let disputed = escrow_events::<TaskEscrow::TaskDisputed>(&env).await;
    assert_eq!(disputed.len(), 1);
    let reason_uri = &disputed[0].reasonURI;
    assert!(reason_uri.ends_with(&format!("?src={api}/api/blobs")), "{reason_uri}");
    assert!(blobs_in(&homes[ARBITER].dir).contains(&hash_of(reason_uri)), "the arbiter fetched it");

    // The ruling's rationale is a blob at the arbiter's, copied by the sponsor.
    let ruled = escrow_events::<TaskEscrow::DisputeRuled>(&env).await;
    assert_eq!(ruled.len(), 1);
    let rationale_uri = &ruled[0].rationaleURI;
    assert!(rationale_uri.ends_with(&format!("?src={arbiter_url}/blobs")), "{rationale_uri}");
    let hash = hash_of(rationale_uri);
    assert!(blobs_in(&homes[ARBITER].dir).contains(&hash));
    let served: Value =
        http.get(format!("{api}/api/blobs/{hash}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(served["rationale"], json!(rationale.trim()), "the sponsor serves the rationale");

    // The indexer, on its own host, rebuilt the lineage from the chain and
    // the envelopes it fetched: every spec and the decline's reason.
    let tree = loop {
        let tree: Value = http
            .get(format!("{index_api}/api/plans/{plan_id}/tree"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or_default();
        let text = tree.to_string();
        if text.contains("envelope unreadable") && text.contains("List the places") {
            break text;
        }
        assert!(tokio::time::Instant::now() < end, "the indexer never caught up: {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(tree.contains("Summarize the translation"), "{tree}");
    assert!(tree.contains("Translate the article to French"), "{tree}");

    // Paid: translation, summary and extraction (ruled for the worker);
    // the declined attempt's 0.5 USDC came back to the sponsor.
    assert_eq!(v["spend"]["paid"], json!("1600000"), "{v:#}");
    assert_eq!(v["spend"]["refunded"], json!("500000"), "{v:#}");
    drop(homes);
}
