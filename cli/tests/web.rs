//! The web plan card in headless Chromium against the real stack on anvil:
//! `tessera serve` (API, UI and embedded indexer) and `tessera arbiter run`
//! as child processes, a worker per demo agent, and the browser driven by
//! `playwright-core` over Debian's `/usr/bin/chromium` (`make browser`
//! installs it; no browser is ever downloaded). The scenarios live in
//! `tests/web/plan-card.test.mjs` (single-key mode) and
//! `tests/web/wallet.test.mjs` (operator mode: a sponsor's wallet, backed
//! by anvil's unlocked dev accounts, signs in and signs the grant);
//! screenshots land in `target/web-artifacts/`.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::{
    path::{Path, PathBuf},
    process::Stdio,
};

use alloy::{
    primitives::{B256, U256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use support::{Service, chain_with_workers_deployed, start, wait_up};
use tessera_anvil::{
    chain::ChainOptions,
    deploy::{DEMO_AGENTS, DeployConfig},
};
use tessera_bindings::{MockUSDC, TaskEscrow};
use tessera_e2e::{TEST_TOKEN, TestEnv};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Debian's Chromium and the toolchain's playwright-core, or a clear failure.
fn browser(root: &Path) -> (String, PathBuf) {
    let chromium =
        std::env::var("TESSERA_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).exists(),
        "headless Chromium is needed at {chromium}: run `make browser` (installs Debian's chromium)"
    );
    let tools = root.join(".tools");
    assert!(
        tools.join("node_modules/playwright-core").is_dir(),
        "playwright-core is missing from .tools: run `make toolchain`"
    );
    (chromium, tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_card_in_headless_chromium() {
    let root = root();
    let (chromium, tools) = browser(&root);

    // Rulings are final at once, so a verdict settles while the page watches.
    let (env, dir, _workers) =
        chain_with_workers_deployed(DeployConfig { appeal_window: 0, ..DeployConfig::default() })
            .await;
    let (_orch, url) = start(&env, dir.path());
    let _arbiter = Service(support::arbiter(&env, dir.path(), &dir.path().join("deployment.json")));
    wait_up(&reqwest::Client::new(), &url).await;

    let artifacts = root.join("target/web-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts directory");
    let script = root.join("tests/web/plan-card.test.mjs");
    let status = tokio::process::Command::new("node")
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg(&script)
        .env("TESSERA_UI_URL", &url)
        .env("TESSERA_API_TOKEN", TEST_TOKEN)
        .env("TESSERA_CHROMIUM", &chromium)
        .env("TESSERA_TOOLS", &tools)
        .env("TESSERA_WEB_ARTIFACTS", &artifacts)
        .env("TESSERA_SPONSOR", env.actors.sponsor.address().to_string())
        .env("TESSERA_RPC_URL", env.chain.endpoint_url().as_str())
        .status()
        .await
        .expect("node runs");
    assert!(status.success(), "browser scenarios failed (screenshots in {})", artifacts.display());
}

/// Operator mode in the browser: `tessera serve` holds only the operator's
/// key; the sponsor is a funded anvil account whose wallet (an injected
/// EIP-1193 provider forwarding to anvil, which signs for its unlocked dev
/// accounts) connects, signs in, plans from the brief form, reads the
/// grant, refuses once, is stopped on the wrong chain, then signs the grant
/// and the permit. The plan settles from the sponsor's USDC, and the
/// sponsor revokes the grant from the wallet; a second wallet's session
/// cannot see the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sponsors_wallet_signs_in_and_funds_a_plan_in_headless_chromium() {
    let root = root();
    let (chromium, tools) = browser(&root);
    let chain = ChainOptions { accounts: Some(16), ..ChainOptions::default() };
    let env = TestEnv::start_on(DeployConfig::default(), &chain).await;
    let keys: Vec<PrivateKeySigner> =
        env.chain.keys().into_iter().map(PrivateKeySigner::from).collect();
    let (sponsor, other, operator) = (&keys[10], &keys[11], &keys[12]);
    let dir = tempfile::tempdir().unwrap();
    let blobs = dir.path().join("blobs");
    let mut workers = Vec::new();
    for agent in DEMO_AGENTS {
        workers.push(tessera_e2e::spawn_worker(&env, agent, &blobs).await);
    }
    // The sponsor holds 10 USDC and has given the escrow no allowance, so
    // its grant comes with a permit to sign.
    let usdc = MockUSDC::new(env.deployment.token, env.provider.clone());
    usdc.mint(sponsor.address(), U256::from(10_000_000u64))
        .from(env.actors.deployer.address())
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let operator_key = format!("0x{}", alloy::hex::encode(operator.to_bytes()));
    let (_serve, url) = support::listening(
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["serve", "--listen", support::ANY_PORT])
            .arg("--deployment")
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--database-url", &format!("sqlite://{}", dir.path().join("runs.db").display())])
            .args([
                "--index-database-url",
                &format!("sqlite://{}", dir.path().join("index.db").display()),
            ])
            .arg("--blobs")
            .arg(&blobs)
            .env("TESSERA_OPERATOR_KEY", operator_key)
            .env_remove("TESSERA_SPONSOR_KEY")
            .env_remove("TESSERA_API_TOKEN")
            .env_remove("DATABASE_URL")
            .stderr(Stdio::inherit()),
    );
    wait_up(&reqwest::Client::new(), &url).await;

    let artifacts = root.join("target/web-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts directory");
    let run_file = dir.path().join("wallet-run.txt");
    let status = tokio::process::Command::new("node")
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg(root.join("tests/web/wallet.test.mjs"))
        .env("TESSERA_UI_URL", &url)
        .env("TESSERA_CHROMIUM", &chromium)
        .env("TESSERA_TOOLS", &tools)
        .env("TESSERA_WEB_ARTIFACTS", &artifacts)
        .env("TESSERA_RPC_URL", env.chain.endpoint_url().as_str())
        .env("TESSERA_SPONSOR", sponsor.address().to_checksum(None))
        .env("TESSERA_OTHER_WALLET", other.address().to_checksum(None))
        .env("TESSERA_OPERATOR", operator.address().to_checksum(None))
        .env("TESSERA_USDC", env.deployment.token.to_checksum(None))
        .env("TESSERA_RUN_FILE", &run_file)
        .status()
        .await
        .expect("node runs");
    assert!(status.success(), "wallet scenarios failed (screenshots in {})", artifacts.display());

    // On chain: every task of the plan the page approved is the sponsor's,
    // funded under its grant; the operator holds no USDC and funded nothing.
    let id: B256 = std::fs::read_to_string(&run_file)
        .expect("the scenario names its run")
        .trim()
        .parse()
        .unwrap();
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(TaskEscrow::TaskCreated::SIGNATURE_HASH)
        .from_block(env.deployment.deploy_block)
        .topic2(id);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    assert_eq!(logs.len(), 2, "one task per sub-task of the plan");
    let mut funded = 0u128;
    for log in &logs {
        let created = TaskEscrow::TaskCreated::decode_log(&log.inner).unwrap();
        assert_eq!(created.task.funder, sponsor.address(), "the sponsor funds the task");
        assert_eq!(created.task.client, operator.address(), "the operator is the task's client");
        funded += created.task.amount;
    }
    assert_eq!(funded, 1_200_000, "the plan's cost, from the sponsor");
    assert_eq!(usdc.balanceOf(operator.address()).call().await.unwrap(), U256::ZERO);
    // The page's Revoke sent the sponsor's own revokeGrant for this plan.
    let revoked = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(TaskEscrow::GrantRevoked::SIGNATURE_HASH)
        .from_block(env.deployment.deploy_block)
        .topic3(id);
    let revoked = env.provider.get_logs(&revoked).await.unwrap();
    assert_eq!(revoked.len(), 1, "one GrantRevoked for the plan");
    let revoked = TaskEscrow::GrantRevoked::decode_log(&revoked[0].inner).unwrap();
    assert_eq!(revoked.sponsor, sponsor.address());
    assert_eq!(
        usdc.balanceOf(sponsor.address()).call().await.unwrap(),
        U256::from(10_000_000u64 - 1_200_000),
        "the sponsor's USDC paid the plan and nothing else"
    );
    for w in workers {
        w.abort();
    }
}
