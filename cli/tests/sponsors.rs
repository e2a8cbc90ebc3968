//! Many sponsors through one `tessera serve` in operator mode: serve holds
//! only TESSERA_OPERATOR_KEY; two sponsors, each with its own key in its
//! own home, run `tessera plan … --yes`, which signs in (EIP-4361), signs
//! the plan's grant (and a permit) locally and approves with them. Both
//! plans settle, funded by their sponsors. Sponsor B's session cannot see
//! or decide sponsor A's run, and a sign-in with an expired, wrong-domain
//! or replayed message is refused.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{process::Stdio, time::Duration};

use alloy::{
    primitives::{Bytes, U256},
    signers::{SignerSync, local::PrivateKeySigner},
};
use serde_json::{Value, json};
use tessera_anvil::{chain::ChainOptions, deploy::DEMO_AGENTS, deploy::DeployConfig};
use tessera_bindings::MockUSDC;
use tessera_e2e::TestEnv;
use tessera_orchestrator::{auth::SiweMessage, plan::Plan};

mod support;

use support::listening;

fn hex_key(k: &PrivateKeySigner) -> String {
    format!("0x{}", alloy::hex::encode(k.to_bytes()))
}

fn plan_file(dir: &std::path::Path, label: &str, env: &TestEnv) -> (String, std::path::PathBuf) {
    let id = Plan::id_from_label(label);
    let plan = json!({
        "version": 1, "id": id, "review": "auto", "budget": 2_000_000u64,
        "source": "The port reopened after the storm. Ships queued for two days.",
        "subtasks": [
            {"index": 0, "capability": "translate", "spec": "Translate to French",
             "executor": env.actors.agent(2), "cost": 800_000, "deadline_offset_secs": 3600},
            {"index": 1, "capability": "summarize", "spec": "Summarize the translation",
             "executor": env.actors.agent(1), "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    });
    let file = dir.join(format!("{label}.json"));
    std::fs::write(&file, plan.to_string()).unwrap();
    (id.to_string(), file)
}

/// `tessera plan --file <file> --yes` as the sponsor with `key`, in `home`.
async fn plan_as(
    api: &str,
    home: &std::path::Path,
    key: &str,
    file: &std::path::Path,
) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args(["plan", "--yes", "--no-interactive", "--file"])
        .arg(file)
        .current_dir(home)
        .env("TESSERA_API_URL", api)
        .env("TESSERA_SPONSOR_KEY", key)
        .env_remove("TESSERA_API_TOKEN")
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("tessera plan finishes")
        .expect("tessera runs")
}

/// A session for `key`, signed in over HTTP; `edit` changes the message
/// before it is signed.
async fn login(
    http: &reqwest::Client,
    api: &str,
    key: &PrivateKeySigner,
    edit: impl FnOnce(&mut SiweMessage),
) -> (reqwest::StatusCode, Value, String) {
    let nonce: Value =
        http.get(format!("{api}/api/auth/nonce")).send().await.unwrap().json().await.unwrap();
    let nonce = nonce["nonce"].as_str().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut m = SiweMessage {
        domain: api.trim_start_matches("http://").to_owned(),
        address: key.address(),
        statement: None,
        uri: api.to_owned(),
        version: "1".into(),
        chain_id: 31337,
        nonce: nonce.to_owned(),
        issued_at: now,
        expiration_time: Some(now + 600),
        not_before: None,
        request_id: None,
        resources: vec![],
    };
    edit(&mut m);
    let text = m.to_text();
    let sig = Bytes::from(key.sign_message_sync(text.as_bytes()).unwrap().as_bytes().to_vec());
    let resp = http
        .post(format!("{api}/api/auth/login"))
        .json(&json!({"message": text, "signature": sig}))
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap_or(Value::Null), text)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_sponsors_fund_their_own_plans_through_one_operator() {
    let chain = ChainOptions { accounts: Some(16), ..ChainOptions::default() };
    let env = TestEnv::start_on(DeployConfig::default(), &chain).await;
    let keys: Vec<PrivateKeySigner> =
        env.chain.keys().into_iter().map(PrivateKeySigner::from).collect();
    let (sponsor_a, sponsor_b, operator) = (keys[10].clone(), keys[11].clone(), keys[12].clone());
    let dir = tempfile::tempdir().unwrap();
    let blobs = dir.path().join("blobs");
    let mut workers = Vec::new();
    for agent in DEMO_AGENTS {
        workers.push(tessera_e2e::spawn_worker(&env, agent, &blobs).await);
    }
    // Each sponsor holds 10 USDC and has given the escrow no allowance:
    // its first grant comes with a permit.
    let usdc = MockUSDC::new(env.deployment.token, env.provider.clone());
    for s in [&sponsor_a, &sponsor_b] {
        usdc.mint(s.address(), U256::from(10_000_000u64))
            .from(env.actors.deployer.address())
            .send()
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
    }
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let (_serve, api) = listening(
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args([
                "serve",
                "--listen",
                support::ANY_PORT,
                "--no-index",
                "--max-sponsor-spend",
                "5",
            ])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--database-url", &format!("sqlite://{}", dir.path().join("runs.db").display())])
            .arg("--blobs")
            .arg(&blobs)
            .env("TESSERA_OPERATOR_KEY", hex_key(&operator))
            .env_remove("TESSERA_SPONSOR_KEY")
            .env_remove("TESSERA_API_TOKEN")
            .env_remove("DATABASE_URL")
            .stderr(Stdio::inherit()),
    );
    let http = reqwest::Client::new();
    support::wait_up(&http, &api).await;
    let health: Value =
        http.get(format!("{api}/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["mode"], "operator");

    // Reads need a session now.
    let anon = http.get(format!("{api}/api/runs")).send().await.unwrap();
    assert_eq!(anon.status(), 401);

    // Sign-in refusals: expired, wrong domain, replayed nonce.
    let (status, body, _) = login(&http, &api, &sponsor_b, |m| {
        m.issued_at -= 7200;
        m.expiration_time = Some(m.issued_at + 60);
    })
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("expired"), "{body}");
    let (status, body, _) =
        login(&http, &api, &sponsor_b, |m| m.domain = "evil.example".into()).await;
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("domain"), "{body}");
    let (status, body, text) = login(&http, &api, &sponsor_b, |_| {}).await;
    assert_eq!(status, 200, "{body}");
    let sig =
        Bytes::from(sponsor_b.sign_message_sync(text.as_bytes()).unwrap().as_bytes().to_vec());
    let replay = http
        .post(format!("{api}/api/auth/login"))
        .json(&json!({"message": text, "signature": sig}))
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 401, "a nonce is used once");
    let session_b = body["token"].as_str().unwrap().to_owned();

    // Both sponsors plan, each from its own home with its own key.
    let (home_a, home_b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&home_a).unwrap();
    std::fs::create_dir_all(&home_b).unwrap();
    let (id_a, file_a) = plan_file(&home_a, "sponsor-a", &env);
    let (id_b, file_b) = plan_file(&home_b, "sponsor-b", &env);
    let before_a = usdc.balanceOf(sponsor_a.address()).call().await.unwrap();
    let (key_a, key_b) = (hex_key(&sponsor_a), hex_key(&sponsor_b));
    let (out_a, out_b) = tokio::join!(
        plan_as(&api, &home_a, &key_a, &file_a),
        plan_as(&api, &home_b, &key_b, &file_b),
    );
    for (who, out) in [("A", &out_a), ("B", &out_b)] {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "sponsor {who}:\n{text}");
        assert!(text.contains("signing a grant of 1.200000 USDC"), "sponsor {who}:\n{text}");
        assert!(text.contains("plan_completed"), "sponsor {who}:\n{text}");
    }
    // A's money paid for A's plan: the sponsor funded it, not the operator.
    let after_a = usdc.balanceOf(sponsor_a.address()).call().await.unwrap();
    assert_eq!(before_a - after_a, U256::from(1_200_000u64));
    assert_eq!(usdc.balanceOf(operator.address()).call().await.unwrap(), U256::ZERO);

    // B's session: A's run is nobody's business of B's.
    let auth = |r: reqwest::RequestBuilder| r.bearer_auth(&session_b);
    let list: Value =
        auth(http.get(format!("{api}/api/runs"))).send().await.unwrap().json().await.unwrap();
    let ids: Vec<&str> =
        list["runs"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id_b.as_str()], "B lists only its own run");
    for (method, path, body) in [
        ("GET", format!("/api/runs/{id_a}"), None),
        ("GET", format!("/api/runs/{id_a}/grant"), None),
        ("GET", format!("/api/runs/{id_a}/events"), None),
        ("POST", format!("/api/runs/{id_a}/approve"), Some(json!({}))),
        ("POST", format!("/api/runs/{id_a}/cancel"), None),
        (
            "POST",
            format!("/api/runs/{id_a}/subtasks/0/review"),
            Some(json!({"decision": "approve"})),
        ),
    ] {
        let req = http.request(method.parse().unwrap(), format!("{api}{path}"));
        let req = match body {
            Some(b) => req.json(&b),
            None => req,
        };
        let resp = auth(req).send().await.unwrap();
        assert_eq!(resp.status(), 404, "{method} {path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"], format!("no run for plan {id_a}"), "{method} {path}");
    }
    let own = auth(http.get(format!("{api}/api/runs/{id_b}"))).send().await.unwrap();
    assert_eq!(own.status(), 200);
    let logout = auth(http.post(format!("{api}/api/auth/logout"))).send().await.unwrap();
    assert_eq!(logout.status(), 204);
    let gone = auth(http.get(format!("{api}/api/runs"))).send().await.unwrap();
    assert_eq!(gone.status(), 401, "the session ended");
    for w in workers {
        w.abort();
    }
}
