//! Bring your own agent: operators' own programs, with capabilities Tessera
//! does not know, hired through the catalogue the chain publishes.
//!
//! Each party runs at a home of its own (a directory, and a network
//! namespace where the machine allows it): the sponsor's `tessera serve`
//! with its embedded index, the demo translator and summarizer, and each
//! operator's `tessera worker` beside the program it runs — the Python
//! example agent over HTTP (`examples/agents/python-haiku`), the Node
//! example agent as a command (`examples/agents/node-readability`), and
//! three handlers that fail (one never answers, one answers off its
//! schema, one declines).
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use alloy::{
    primitives::{Address, U256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use serde_json::{Value, json};
use tessera_anvil::{
    chain::ChainOptions,
    deploy::{DEMO_AGENTS, DeployConfig},
};
use tessera_bindings::{MockUSDC, TaskEscrow};
use tessera_e2e::{TEST_TOKEN, TestEnv};

mod support;

use support::{Service, hosts::Hosts, listening, view};

const SPONSOR: &str = "sponsor";
const TRANSLATOR: &str = "translator";
const SUMMARIZER: &str = "summarizer-b";
const HAIKU: &str = "haiku-poet";
const READER: &str = "readability-judge";
const SLOW: &str = "slow-judge";
const SLOPPY: &str = "sloppy-judge";
const PICKY: &str = "picky-judge";
const PARTIES: &[&str] = &[SPONSOR, TRANSLATOR, SUMMARIZER, HAIKU, READER, SLOW, SLOPPY, PICKY];

/// The example agents' directory.
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/agents")
}

/// A party's home: its own directory and processes.
struct Home {
    dir: PathBuf,
    services: Vec<Service>,
}

fn home(root: &Path, party: &str) -> Home {
    let dir = root.join(party);
    std::fs::create_dir_all(&dir).unwrap();
    Home { dir, services: Vec::new() }
}

/// The parties and the chain they share.
struct Market {
    hosts: Hosts,
    env: TestEnv,
    rpc: String,
    homes: std::collections::BTreeMap<&'static str, Home>,
    /// Dev keys beyond the demo actors, one per operator.
    spare: Vec<PrivateKeySigner>,
    _root: tempfile::TempDir,
}

impl Market {
    async fn open() -> Self {
        let hosts = Hosts::new(PARTIES);
        match hosts.isolated() {
            Ok(()) => println!("each party on a network namespace of its own"),
            Err(why) => {
                println!("parties share the loopback ({why}); each keeps its own directory")
            }
        }
        let host = hosts.isolated().is_ok().then(|| "0.0.0.0".to_owned());
        let chain = ChainOptions { host, accounts: Some(16), ..ChainOptions::default() };
        let env = TestEnv::start_on(DeployConfig::default(), &chain).await;
        let rpc = format!("http://{}:{}", hosts.hub(), env.chain.port());
        let spare = env.chain.keys()[10..].iter().cloned().map(PrivateKeySigner::from).collect();
        let root = tempfile::tempdir().unwrap();
        let homes = PARTIES.iter().map(|p| (*p, home(root.path(), p))).collect();
        Self { hosts, env, rpc, homes, spare, _root: root }
    }

    /// `tessera worker` for `party` with the card `yaml`, signing with `key`.
    fn worker(&mut self, party: &'static str, yaml: &str, key: &PrivateKeySigner) {
        let home = self.homes.get_mut(party).unwrap();
        let card = home.dir.join("card.yaml");
        std::fs::write(&card, yaml).unwrap();
        let deployment = home.dir.join("deployment.json");
        self.env.deployment.save(&deployment).unwrap();
        let (service, _) = listening(
            self.hosts
                .command(party, env!("CARGO_BIN_EXE_tessera"))
                .args(["worker", "--poll-ms", "200"])
                .arg("--card")
                .arg(&card)
                .arg("--deployment")
                .arg(&deployment)
                .args(["--rpc-url", &self.rpc])
                .arg("--blobs")
                .arg(home.dir.join("blobs"))
                .args(["--listen", &format!("{}:0", self.hosts.addr(party))])
                .env("TESSERA_WORKER_KEY", format!("0x{}", alloy::hex::encode(key.to_bytes())))
                .env_remove("TESSERA_LLM_API_KEY")
                .env_remove("OPENAI_API_KEY")
                .stderr(Stdio::inherit()),
        );
        home.services.push(service);
    }

    /// A demo agent's worker, with its built-in card.
    fn demo(&mut self, party: &'static str) {
        let agent = DEMO_AGENTS.iter().find(|a| a.id == party).unwrap();
        let yaml = serde_json::to_string(&agent.card()).unwrap();
        let key = self.env.actors.agents[agent.account].clone();
        self.worker(party, &yaml, &key);
    }

    /// The sponsor's `tessera serve`, with its embedded index; its URL.
    async fn sponsor(&mut self) -> String {
        let home = self.homes.get_mut(SPONSOR).unwrap();
        let deployment = home.dir.join("deployment.json");
        self.env.deployment.save(&deployment).unwrap();
        let key = format!("0x{}", alloy::hex::encode(self.env.actors.sponsor.to_bytes()));
        let (service, api) = listening(
            self.hosts
                .command(SPONSOR, env!("CARGO_BIN_EXE_tessera"))
                .args(["serve", "--listen", &format!("{}:0", self.hosts.addr(SPONSOR))])
                .arg("--deployment")
                .arg(&deployment)
                .args(["--rpc-url", &self.rpc])
                .args([
                    "--database-url",
                    &format!("sqlite://{}", home.dir.join("runs.db").display()),
                ])
                .args([
                    "--index-database-url",
                    &format!("sqlite://{}", home.dir.join("index.db").display()),
                ])
                .arg("--blobs")
                .arg(home.dir.join("blobs"))
                .env("TESSERA_SPONSOR_KEY", key)
                .env("TESSERA_API_TOKEN", TEST_TOKEN)
                .env_remove("DATABASE_URL")
                .env_remove("TESSERA_LLM_API_KEY")
                .env_remove("OPENAI_API_KEY")
                .stderr(Stdio::inherit()),
        );
        home.services.push(service);
        support::wait_up(&reqwest::Client::new(), &api).await;
        api
    }

    async fn balance(&self, who: Address) -> U256 {
        self.env.balance(who).await
    }
}

/// The example card at `examples/agents/<dir>/card.yaml`, with `from`
/// replaced by `to` (where this test runs the program).
fn example_card(dir: &str, from: &str, to: &str) -> String {
    let yaml = std::fs::read_to_string(examples().join(dir).join("card.yaml")).unwrap();
    assert!(yaml.contains(from), "the example card names {from:?}");
    yaml.replace(from, to)
}

/// Waits (60 s at most) until the catalogue the sponsor serves offers
/// `capability`; returns its entry.
async fn offered(http: &reqwest::Client, api: &str, capability: &str) -> Value {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let cat: Value = http
            .get(format!("{api}/api/capabilities"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or_default();
        if let Some(e) = cat["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["name"] == capability && e["offered_by"].as_u64() > Some(0))
        {
            return e.clone();
        }
        assert!(tokio::time::Instant::now() < end, "{capability} never in the catalogue: {cat:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Posts a brief; the run it proposed.
async fn brief(http: &reqwest::Client, api: &str, text: &str, payload: Option<&str>) -> Value {
    let resp = http
        .post(format!("{api}/api/classify"))
        .bearer_auth(TEST_TOKEN)
        .json(&json!({"brief": text, "payload": payload}))
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let body: Value = resp.json().await.unwrap();
    assert!(status.is_success(), "{status}: {body:#}");
    body
}

/// Approves run `id` and waits (120 s at most) for it to complete.
async fn approve_and_settle(http: &reqwest::Client, api: &str, id: &str) -> Value {
    let resp = http.post(format!("{api}/api/runs/{id}/approve")).bearer_auth(TEST_TOKEN).send();
    let resp = resp.await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
    settle(http, api, id).await
}

/// Waits (120 s at most) for run `id` to complete.
async fn settle(http: &reqwest::Client, api: &str, id: &str) -> Value {
    let end = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let v = view(http, api, id).await;
        if v["state"] == "completed" {
            return v;
        }
        assert!(v["state"] != "failed" && v["state"] != "cancelled", "{v:#}");
        assert!(tokio::time::Instant::now() < end, "never completed: {v:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A fresh tag for a plan id.
fn rand_tag() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    (nanos.as_nanos() as u64) ^ NEXT.fetch_add(1, Ordering::Relaxed)
}

fn same(got: &Value, want: Address) {
    let got = got.as_str().unwrap_or_default();
    assert!(got.eq_ignore_ascii_case(&want.to_string()), "{got} is not {want}");
}

/// The JSON result a run's sub-task delivered, as the sponsor reads it.
async fn result_of(http: &reqwest::Client, api: &str, v: &Value, i: usize) -> Value {
    let uri = v["subtasks"][i]["result_uri"].as_str().unwrap();
    match uri.strip_prefix("sha256:") {
        Some(rest) => {
            let hash = rest.split('?').next().unwrap();
            http.get(format!("{api}/api/blobs/{hash}")).send().await.unwrap().json().await.unwrap()
        }
        None => {
            let bytes =
                tessera_bindings::envelope::EnvelopeCodec::default().fetch_inline(uri).unwrap();
            serde_json::from_slice(&bytes).unwrap()
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_agent_with_a_capability_tessera_does_not_know_is_planned_hires_and_is_paid() {
    let mut m = Market::open().await;
    let api = m.sponsor().await;
    m.demo(TRANSLATOR);
    m.demo(SUMMARIZER);
    // The operator's program, at its home, then its worker beside it.
    let haiku_home = m.homes[HAIKU].dir.clone();
    let (program, handler) = listening(
        m.hosts
            .command(HAIKU, "python3")
            .arg(examples().join("python-haiku/agent.py"))
            .args(["--host", &m.hosts.addr(HAIKU).to_string(), "--port", "0"])
            .current_dir(&haiku_home)
            .stderr(Stdio::inherit()),
    );
    m.homes.get_mut(HAIKU).unwrap().services.push(program);
    let card = example_card(
        "python-haiku",
        "http: http://127.0.0.1:8707/task",
        &format!("http: {handler}/task"),
    );
    let poet = m.spare[0].clone();
    // It pays its translator from its own wallet.
    MockUSDC::new(m.env.deployment.token, &m.env.provider)
        .mint(poet.address(), U256::from(5_000_000u64))
        .from(m.env.actors.deployer.address())
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    m.worker(HAIKU, &card, &poet);

    let http = reqwest::Client::new();
    let entry = offered(&http, &api, "haiku-write").await;
    assert_eq!(entry["builtin"], false);
    assert!(entry["describe"]["description"].as_str().unwrap().contains("haiku"), "{entry:#}");
    same(&entry["offerers"][0]["agent"], poet.address());
    let printed =
        support::cli(&api, None, ["agents", "capabilities", "--api-url", api.as_str()], None).await;
    assert_eq!(printed.code, Some(0), "{}", printed.text());
    assert!(printed.stdout.contains("haiku-write"), "{}", printed.stdout);
    println!("tessera agents capabilities:\n{}", printed.stdout);

    // A condition over a field the capability does not publish is refused
    // at propose, naming the field and those it has.
    let plan = |when: &str| {
        json!({"version": 1, "id": alloy::primitives::B256::from(U256::from(std::process::id()) << 64 | U256::from(rand_tag())), "review": "auto",
               "budget": 5_000_000u64, "subtasks": [
            {"index": 0, "capability": "haiku-write", "spec": "Write a haiku about rain",
             "executor": poet.address(), "cost": 1_200_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "summarize", "spec": "Summarize the haiku",
             "executor": m.env.actors.agent(1), "cost": 400_000, "deadline_offset_secs": 3600,
             "depends_on": [0], "when": when},
        ]})
    };
    let resp = http
        .post(format!("{api}/api/plans"))
        .bearer_auth(TEST_TOKEN)
        .json(&plan("out[0].rhyme == \"rain\""))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("rhyme") && text.contains("haiku"), "{text}");

    // A free-text brief asks for it, beside a built-in step.
    let out = brief(
        &http,
        &api,
        "Write a haiku about autumn leaves in French, then summarize it in one bullet",
        None,
    )
    .await;
    let run = &out["run"];
    let id = run["id"].as_str().unwrap_or_else(|| panic!("no run proposed: {out:#}")).to_owned();
    let steps = run["plan"]["subtasks"].as_array().unwrap();
    let caps: Vec<&str> = steps.iter().map(|s| s["capability"].as_str().unwrap()).collect();
    assert_eq!(caps, ["haiku-write", "summarize"], "{out:#}");
    same(&steps[0]["executor"], poet.address());
    let chosen: Vec<String> = steps[0]["chosen_by"]
        .as_array()
        .unwrap_or_else(|| panic!("the plan says which words chose it: {out:#}"))
        .iter()
        .map(|w| w.as_str().unwrap().to_lowercase())
        .collect();
    assert!(chosen.iter().any(|w| w == "haiku"), "{chosen:?}");
    let card = support::cli(&api, None, ["runs", "show", id.as_str()], None).await;
    println!("the plan card:\n{}", card.text());

    let poet_before = m.balance(poet.address()).await;
    let translator = m.env.actors.agent(2);
    let translator_before = m.balance(translator).await;
    let v = approve_and_settle(&http, &api, &id).await;

    // The poet hired the translator for its French: a child task it paid
    // from its own wallet, whose result it handed back in its haiku.
    let result = result_of(&http, &api, &v, 0).await;
    assert_eq!(result["language"], "French", "{result:#}");
    assert!(!result["translation"].as_str().unwrap_or_default().is_empty(), "{result:#}");
    assert_eq!(result["lines"].as_array().map(Vec::len), Some(3), "{result:#}");
    let filter = Filter::new()
        .address(m.env.deployment.task_escrow)
        .event_signature(TaskEscrow::TaskCreated::SIGNATURE_HASH)
        .from_block(m.env.deployment.deploy_block);
    let created = m.env.provider.get_logs(&filter).await.unwrap();
    let translate = tessera_bindings::capability::encode("translate").unwrap();
    let children: Vec<_> = created
        .iter()
        .map(|l| TaskEscrow::TaskCreated::decode_log_data(l.data()).unwrap())
        .filter(|e| e.capability == translate)
        .collect();
    assert_eq!(children.len(), 1, "one translation: the poet's child task");
    assert_ne!(children[0].parentId, U256::ZERO, "it hangs under the haiku task");
    let translator_paid = m.balance(translator).await - translator_before;
    assert!(translator_paid > U256::ZERO, "the translator was paid by the poet");
    // The poet is paid for its haiku, less what its translator cost.
    let haiku_price = U256::from(1_200_000u64);
    assert_eq!(m.balance(poet.address()).await, poet_before + haiku_price - translator_paid);
    assert_eq!(v["spend"]["paid"], json!("1600000"), "{v:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_command_agent_is_paid_and_handlers_that_fail_are_declined_on_chain() {
    let mut m = Market::open().await;
    let api = m.sponsor().await;
    m.demo(TRANSLATOR);
    let reader = m.spare[1].clone();
    let agent_js = examples().join("node-readability/agent.js");
    let card = example_card(
        "node-readability",
        "command: [node, agent.js]",
        &format!("command: [node, {:?}]", agent_js.display().to_string()),
    );
    m.worker(READER, &card, &reader);

    let http = reqwest::Client::new();
    let entry = offered(&http, &api, "readability-score").await;
    same(&entry["offerers"][0]["agent"], reader.address());

    // A free-text brief, planned from the catalogue: the translation, then
    // its readability, by the Node agent.
    let article = "The council met on Monday. It voted to open the new library in May. \
                   Residents said the plan was good and the cost was fair.";
    let out = brief(
        &http,
        &api,
        "Translate the article to French, then score its readability",
        Some(article),
    )
    .await;
    let run = &out["run"];
    let id = run["id"].as_str().unwrap_or_else(|| panic!("no run proposed: {out:#}")).to_owned();
    let steps = run["plan"]["subtasks"].as_array().unwrap();
    let caps: Vec<&str> = steps.iter().map(|s| s["capability"].as_str().unwrap()).collect();
    assert_eq!(caps, ["translate", "readability-score"], "{out:#}");
    same(&steps[1]["executor"], reader.address());
    let before = m.balance(reader.address()).await;
    let v = approve_and_settle(&http, &api, &id).await;
    let scored = result_of(&http, &api, &v, 1).await;
    assert!(scored["score"].is_number(), "{scored:#}");
    assert!(["easy", "standard", "difficult"].contains(&scored["verdict"].as_str().unwrap()));
    assert_eq!(m.balance(reader.address()).await, before + U256::from(150_000u64));

    // Three operators undercut it with handlers that fail: one never
    // answers, one answers off its schema, one declines.
    let python = |code: &str| format!("command: [python3, \"-c\", {code:?}]");
    let failing = [
        (SLOW, "0.01", python("import time; time.sleep(60)"), "timed out"),
        (SLOPPY, "0.02", python("print('{\"result\": {\"score\": \"high\"}}')"), "off-schema"),
        (
            PICKY,
            "0.03",
            python("print('{\"decline\": {\"reason\": \"I only read poetry\"}}')"),
            "I only read poetry",
        ),
    ];
    for (i, (party, price, handler, _)) in failing.iter().enumerate() {
        let card = example_card("node-readability", "command: [node, agent.js]", handler)
            .replace("id: readability-judge", &format!("id: {party}"))
            .replace("timeout_secs: 10", "timeout_secs: 2")
            .replace("price: \"0.15\"", &format!("price: \"{price}\""));
        let key = m.spare[2 + i].clone();
        m.worker(party, &card, &key);
    }
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    while offered(&http, &api, "readability-score").await["offered_by"] != 4 {
        assert!(tokio::time::Instant::now() < end, "the undercutters never registered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A day later the reader, too, has shown no sign of life lately (the
    // choice ranks agents seen working in the last day first): all four
    // rank by price alone.
    m.env.driver().advance(24 * 3600 + 1).await.unwrap();
    // A plan that hands a declined step to the next agent: the cheapest
    // first, each failure declined on chain, the run recovering each time.
    let plan_id = alloy::primitives::B256::from(
        U256::from(std::process::id()) << 64 | U256::from(rand_tag()),
    );
    let plan = json!({"version": 1, "id": plan_id, "review": "auto", "budget": 2_000_000u64,
        "source": article, "selection": "cheapest", "recovery": {"on_decline": "reassign"},
        "subtasks": [{"index": 0, "capability": "readability-score", "spec": "Score the article",
            "executor": m.spare[2].address(), "cost": 150_000, "deadline_offset_secs": 3600}]});
    let id = support::propose_and_approve(&http, &api, &plan).await;
    let v = settle(&http, &api, &id).await;
    same(&v["subtasks"][0]["executor"], reader.address());
    let declines = v["declines"].as_array().cloned().unwrap_or_default();
    assert_eq!(declines.len(), 3, "{v:#}");
    for (d, (_, _, _, why)) in declines.iter().zip(&failing) {
        let reason = d["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{reason:?} should say {why:?}");
    }
    let filter = Filter::new()
        .address(m.env.deployment.task_escrow)
        .event_signature(TaskEscrow::TaskDeclined::SIGNATURE_HASH)
        .from_block(m.env.deployment.deploy_block);
    assert_eq!(m.env.provider.get_logs(&filter).await.unwrap().len(), 3, "declined on chain");
    assert_eq!(v["spend"]["paid"], json!("150000"), "{v:#}");
}
