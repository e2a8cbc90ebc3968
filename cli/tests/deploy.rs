//! Beyond anvil's defaults: `tessera chain --block-time`, and `tessera
//! deploy` as a deployer whose key is in an encrypted keystore, onto an
//! existing token, with the refusals a user meets on a real chain.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{
    process::{Command, Output, Stdio},
    time::Duration,
};

use alloy::{
    primitives::{Address, U256},
    providers::{DynProvider, Provider},
    signers::local::PrivateKeySigner,
};
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, LocalChain},
};
use tessera_bindings::{MockUSDC, TaskEscrow, deployment::Deployment};

fn tessera() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.env_remove("TESSERA_DEPLOYER_KEY")
        .env_remove("TESSERA_KEYSTORE_PASSWORD")
        .env_remove("TESSERA_MNEMONIC")
        .env_remove("TESSERA_RPC_URL")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null());
    cmd
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts the command failed with its error, one line on stderr
/// (`error: …`) containing `needle` (no report below it).
fn refused(out: &Output, needle: &str) {
    let (stdout, stderr) = text(out);
    assert!(!out.status.success(), "succeeded: {stdout}\n{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with("error: ") && first.contains(needle), "not {needle:?}: {stderr}");
    assert!(!stderr.contains("Caused by") && !stderr.contains("Location:"), "a report: {stderr}");
}

/// A `tessera chain` process, stopped as Ctrl-C would (SIGTERM) when
/// dropped, so it stops its anvil too.
struct ChainProc(std::process::Child);

impl Drop for ChainProc {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = self.0.wait();
    }
}

/// Spawns `cmd` (a `tessera chain`) and reads its stdout until it names
/// its endpoint (`anvil on http://…`); the rest is drained meanwhile.
fn chain_up(cmd: &mut Command) -> (ChainProc, String) {
    use std::io::BufRead;
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let proc = ChainProc(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("anvil on ") {
                let _ = tx
                    .send((rest.split_whitespace().next().unwrap_or("").to_owned(), line.clone()));
            }
        }
    });
    let (url, line) = rx.recv_timeout(Duration::from_secs(120)).expect("the chain came up");
    assert!(line.contains("chain id 31337"), "{line}");
    (proc, url)
}

async fn block(provider: &DynProvider) -> u64 {
    provider.get_block_number().await.unwrap()
}

/// `tessera chain` on its own block time: blocks come every interval with
/// nothing sent; without the flag none come until a transaction does.
/// `tessera chain advance 1d` moves a local chain's clock a day on and
/// mines a block, so a one-day window passes at once; a bad duration is
/// refused by name.
#[tokio::test]
async fn chain_advance_moves_the_clock() {
    let chain = LocalChain::start(&ChainOptions::default()).unwrap();
    let provider = alloy::providers::ProviderBuilder::new().connect_http(chain.endpoint_url());
    let before = provider.get_block_by_number(Default::default()).await.unwrap().unwrap();
    let out = tessera()
        .args(["chain", "advance", "1d", "--rpc-url", chain.endpoint_url().as_str()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let after = provider.get_block_by_number(Default::default()).await.unwrap().unwrap();
    assert_eq!(after.header.number, before.header.number + 1, "one block mined");
    assert!(after.header.timestamp >= before.header.timestamp + 86_400, "a day passed");
    assert!(stdout.contains(&format!("block {}", after.header.number)), "{stdout}");
    let out = tessera()
        .args(["chain", "advance", "1w", "--rpc-url", chain.endpoint_url().as_str()])
        .output()
        .unwrap();
    refused(&out, "not a unit");
}

#[tokio::test]
async fn chain_mines_on_its_block_time_and_automines_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let start = |block_time: Option<&str>, name: &str| {
        let mut cmd = tessera();
        cmd.args(["chain", "--port", "0"]).arg("--deployment").arg(dir.path().join(name));
        if let Some(secs) = block_time {
            cmd.args(["--block-time", secs]);
        }
        chain_up(&mut cmd)
    };

    let (timed, url) = start(Some("1"), "timed.json");
    let provider = tessera_bindings::client::connect(url.parse().unwrap(), Default::default());
    let before = block(&provider).await;
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let mined = block(&provider).await - before;
    assert!((2..=5).contains(&mined), "{mined} blocks in 3.5 s on 1-second blocks");
    let record = Deployment::load(dir.path().join("timed.json")).unwrap();
    assert_eq!(record.chain_id, 31337);
    drop(timed);

    let (auto, url) = start(None, "auto.json");
    let provider = tessera_bindings::client::connect(url.parse().unwrap(), Default::default());
    let before = block(&provider).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(block(&provider).await, before, "automine mined with nothing sent");
    // The record says where the chain listens, and a service told nothing
    // else connects there.
    let record = Deployment::load(dir.path().join("auto.json")).unwrap();
    assert_eq!(record.rpc_url.as_deref(), Some(url.as_str()));
    assert!(record.ws_url.as_deref().is_some_and(|w| w.starts_with("ws://")), "{record:?}");
    let mut indexer = tessera()
        .args(["indexer", "run", "--listen", "127.0.0.1:0"])
        .arg("--deployment")
        .arg(dir.path().join("auto.json"))
        .args(["--database-url", &format!("sqlite://{}", dir.path().join("ix.db").display())])
        .arg("--blobs")
        .arg(dir.path().join("blobs"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = indexer.stdout.take().unwrap();
    let indexer = ChainProc(indexer);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
            if line.starts_with("indexer API on http://") {
                let _ = tx.send(line);
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the indexer reached the recorded chain");
    drop(indexer);
    drop(auto);

    let out = tessera().args(["chain", "--block-time", "0"]).output().unwrap();
    assert!(!out.status.success(), "a zero block time was taken");
}

/// A chain, its dev accounts, and a MockUSDC deployed on it by someone else.
async fn chain_with_token() -> (LocalChain, Actors, DynProvider, Address) {
    let chain = LocalChain::start(&ChainOptions::default()).unwrap();
    let actors = Actors::from_keys(&chain.keys()).unwrap();
    let provider = actors.provider(chain.endpoint_url());
    let issuer = actors.client.address();
    let token = MockUSDC::deploy_builder(&provider, issuer)
        .from(issuer)
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap()
        .contract_address
        .unwrap();
    (chain, actors, provider, token)
}

/// Encrypts `signer`'s key into `dir/name` under `password`.
fn keystore(
    dir: &std::path::Path,
    signer: &PrivateKeySigner,
    password: &str,
) -> std::path::PathBuf {
    PrivateKeySigner::encrypt_keystore(
        dir,
        &mut rand::thread_rng(),
        signer.to_bytes(),
        password,
        Some("deployer.json"),
    )
    .unwrap();
    dir.join("deployer.json")
}

#[tokio::test]
async fn deploys_from_a_keystore_onto_an_existing_token() {
    let (chain, actors, provider, token) = chain_with_token().await;
    let dir = tempfile::tempdir().unwrap();
    let deployer = actors.agents[2].clone();
    let password = "correct horse battery staple";
    let ks = keystore(dir.path(), &deployer, password);
    std::fs::write(dir.path().join("password"), format!("{password}\n")).unwrap();
    let arbiter = actors.arbiter.address();
    let before = block(&provider).await;
    let record_path = dir.path().join("deployment.json");

    let out = tessera()
        .args(["deploy", "--rpc-url", chain.endpoint_url().as_str()])
        .arg("--keystore")
        .arg(&ks)
        .arg("--password-file")
        .arg(dir.path().join("password"))
        .args(["--token", &token.to_string(), "--arbiter", &arbiter.to_string()])
        .arg("--deployment")
        .arg(&record_path)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let secret = alloy::hex::encode(deployer.to_bytes());
    for said in [&stdout, &stderr] {
        assert!(
            !said.contains(password) && !said.contains(&secret),
            "a secret was printed: {said}"
        );
    }

    let record = Deployment::load(&record_path).unwrap();
    assert_eq!(record.chain_id, 31337);
    assert_eq!(record.token, token);
    assert_eq!(record.owner, deployer.address());
    assert_eq!((record.arbiter, record.appeal_arbiter), (arbiter, deployer.address()));
    assert!(record.deploy_block > before && record.deploy_block <= block(&provider).await);
    // Four contracts deployed (the ERC-8004 identity and reputation
    // registries, the agent registry, the escrow), no token, nothing minted.
    assert_eq!(provider.get_transaction_count(deployer.address()).await.unwrap(), 4);
    assert!(record.identity_registry.is_some() && record.reputation_registry.is_some());
    let usdc = MockUSDC::new(token, &provider);
    assert_eq!(usdc.totalSupply().call().await.unwrap(), U256::ZERO);
    let escrow = TaskEscrow::new(record.task_escrow, &provider);
    assert_eq!(escrow.token().call().await.unwrap(), token);
    assert!(!provider.get_code_at(record.agent_registry).await.unwrap().is_empty());
    let first =
        provider.get_transaction_count(deployer.address()).block_id(record.deploy_block.into());
    assert_eq!(first.await.unwrap(), 1, "the start block holds the first deploy transaction");
}

#[tokio::test]
async fn deploy_refuses_a_wrong_password_and_tokens_it_cannot_settle_in() {
    let (chain, actors, _provider, token) = chain_with_token().await;
    let dir = tempfile::tempdir().unwrap();
    let rpc = chain.endpoint_url().to_string();
    let deploy = || {
        let mut cmd = tessera();
        cmd.args(["deploy", "--rpc-url", &rpc])
            .arg("--deployment")
            .arg(dir.path().join("deployment.json"));
        cmd
    };

    let ks = keystore(dir.path(), &actors.agents[3], "right");
    let out = deploy()
        .arg("--keystore")
        .arg(&ks)
        .env("TESSERA_KEYSTORE_PASSWORD", "wrong")
        .args(["--token", &token.to_string()])
        .output()
        .unwrap();
    refused(&out, "wrong password");

    let key = format!("0x{}", alloy::hex::encode(actors.agents[4].to_bytes()));
    let nowhere = Address::repeat_byte(0xde).to_string();
    let out =
        deploy().env("TESSERA_DEPLOYER_KEY", &key).args(["--token", &nowhere]).output().unwrap();
    refused(&out, &format!("token {nowhere} has no code on chain 31337"));

    // A contract, but not a token: the escrow's own registry.
    let out = deploy().env("TESSERA_DEPLOYER_KEY", &key).output().unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let registry = Deployment::load(dir.path().join("deployment.json")).unwrap().agent_registry;
    let out = deploy()
        .env("TESSERA_DEPLOYER_KEY", &key)
        .args(["--token", &registry.to_string()])
        .output()
        .unwrap();
    refused(&out, "does not answer decimals()");
    assert!(!dir.path().join("deployment.json.tmp").exists());
}

/// A service pointed at a chain other than its deployment record's stops
/// at start with one line naming both chain ids.
#[tokio::test]
async fn services_refuse_a_chain_other_than_the_records() {
    let (chain, actors, provider, token) = chain_with_token().await;
    let dir = tempfile::tempdir().unwrap();
    let roles = tessera_anvil::deploy::DeployRoles {
        owner: actors.deployer.address(),
        arbiter: actors.arbiter.address(),
        appeal_arbiter: actors.appeal_arbiter.address(),
        token: Some(token),
        identity_registry: None,
        reputation_registry: None,
        fund: None,
    };
    let mut record =
        tessera_anvil::deploy::deploy_to(&provider, &roles, &Default::default()).await.unwrap();
    record.chain_id = 84532;
    let path = dir.path().join("deployment.json");
    record.save(&path).unwrap();

    let out = tessera()
        .args([
            "indexer",
            "run",
            "--rpc-url",
            chain.endpoint_url().as_str(),
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--deployment")
        .arg(&path)
        .arg("--database-url")
        .arg(format!("sqlite://{}", dir.path().join("index.db").display()))
        .output()
        .unwrap();
    refused(&out, "is for chain id 84532 but the RPC endpoint serves chain id 31337");

    let card =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../workers/cards/summarizer.yaml");
    let key = format!("0x{}", alloy::hex::encode(actors.agents[0].to_bytes()));
    let out = tessera()
        .args(["worker", "--rpc-url", chain.endpoint_url().as_str()])
        .arg("--card")
        .arg(&card)
        .arg("--deployment")
        .arg(&path)
        .arg("--blobs")
        .arg(dir.path().join("blobs"))
        .env("TESSERA_WORKER_KEY", key)
        .output()
        .unwrap();
    refused(&out, "is for chain id 84532 but the RPC endpoint serves chain id 31337");
}

#[tokio::test]
async fn the_dev_mnemonic_deploys_to_a_local_chain_only() {
    let chain =
        LocalChain::start(&ChainOptions { chain_id: Some(84532), ..Default::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = tessera()
        .args(["deploy", "--rpc-url", chain.endpoint_url().as_str()])
        .arg("--deployment")
        .arg(dir.path().join("deployment.json"))
        .output()
        .unwrap();
    refused(&out, "chain id 84532 is not a local chain");
    assert!(!dir.path().join("deployment.json").exists());
    // On a local chain it deploys, and records where.
    let local = LocalChain::start(&ChainOptions::default()).unwrap();
    let out = tessera()
        .args(["deploy", "--rpc-url", local.endpoint_url().as_str()])
        .arg("--deployment")
        .arg(dir.path().join("deployment.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let record = Deployment::load(dir.path().join("deployment.json")).unwrap();
    assert_eq!(record.rpc_url.as_deref(), Some(local.endpoint_url().as_str()));
}

/// A chain that is not local with no --token: refused before anything is
/// sent, saying how a sponsor gets the token there; with --mock-token, a
/// test net deployment settling in a MockUSDC.
#[tokio::test]
async fn deploy_refuses_a_chain_that_is_not_local_without_a_token() {
    let chain =
        LocalChain::start(&ChainOptions { chain_id: Some(84532), ..Default::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("deployment.json");
    // A key of its own (one anvil funded: the chain is a stand-in for a test net).
    let actors = Actors::from_mnemonic(tessera_anvil::chain::DEV_MNEMONIC).unwrap();
    let key = alloy::hex::encode(actors.deployer.to_bytes());
    let deploy = |extra: &[&str]| {
        tessera()
            .args(["deploy", "--rpc-url", chain.endpoint_url().as_str()])
            .args(extra)
            .arg("--deployment")
            .arg(&record)
            .env("TESSERA_DEPLOYER_KEY", &key)
            .output()
            .unwrap()
    };
    let out = deploy(&[]);
    refused(&out, "chain id 84532 is not a local chain and no --token was given");
    let (_, stderr) = text(&out);
    assert!(stderr.contains("--token 0x036CbD53842c5426634e7929541eC2318f3dCF7e"), "{stderr}");
    assert!(stderr.contains("--mock-token"), "{stderr}");
    assert!(!record.exists());
    let out = deploy(&["--mock-token"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let deployed = Deployment::load(&record).unwrap();
    assert_eq!(deployed.chain_id, 84532);
    // The token is the MockUSDC just deployed: the deployer mints it.
    let provider = actors.provider(chain.endpoint_url());
    let mock = MockUSDC::new(deployed.token, &provider);
    assert_eq!(mock.decimals().call().await.unwrap(), 6);
}
