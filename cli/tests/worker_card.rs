//! `tessera worker` and its card, from the binary: a card that needs a
//! model (not `offline`) and finds no LLM key is refused at start with one
//! line naming the fix, before anything is sent to the chain.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::process::Command;

use alloy::signers::local::PrivateKeySigner;
use tessera_anvil::deploy::{DEMO_AGENTS, DeployConfig};
use tessera_bindings::AgentRegistry;
use tessera_e2e::TestEnv;

#[tokio::test]
async fn a_model_card_without_a_key_is_refused_before_anything_is_registered() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    // An account no demo agent uses.
    let signer = PrivateKeySigner::from_signing_key(env.chain.keys()[10].clone());
    let me = signer.address();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("worker")
        .arg("--card")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../workers/cards/llm-sentiment.yaml"))
        .arg("--deployment")
        .arg(&deployment)
        .args(["--rpc-url", env.chain.endpoint_url().as_str()])
        .arg("--blobs")
        .arg(dir.path().join("blobs"))
        .env("TESSERA_WORKER_KEY", format!("0x{}", alloy::hex::encode(signer.to_bytes())))
        .env("TESSERA_LLM_BASE_URL", "http://127.0.0.1:9/v1")
        .env_remove("TESSERA_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{:?}: {stderr}", out.status);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [concat!(
            "error: the card's model is \"gpt-4o-mini\" but no LLM key is set: set ",
            "TESSERA_LLM_API_KEY (or OPENAI_API_KEY), and TESSERA_LLM_BASE_URL (or ",
            "OPENAI_BASE_URL) for a server other than OpenAI's, or write `model: offline` in ",
            "the card"
        )],
        "one line naming the fix"
    );
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));

    // Nothing reached the chain.
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    assert_eq!(registry.getAgent(me).call().await.unwrap().status, 0, "not registered");
    assert_eq!(
        registry.agentCount().call().await.unwrap(),
        alloy::primitives::U256::from(DEMO_AGENTS.len())
    );
    assert_eq!(
        alloy::providers::Provider::get_transaction_count(&env.provider, me).await.unwrap(),
        0,
        "not one transaction sent"
    );
}
