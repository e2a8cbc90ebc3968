//! A decline on chain, from the `tessera` binaries: `tessera worker` with a
//! card that no longer offers a capability withdraws it from the registry
//! at start; listed again behind its back, the capability is declined on
//! chain with its reason, `tessera serve` reassigns the sub-task at once by
//! its `on_decline` policy, and `tessera runs show` prints who declined and
//! why.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::process::{Command, Stdio};

use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{AgentRegistry, capability};
use tessera_e2e::{NARROW_CARD, TEST_TOKEN};
use tessera_orchestrator::plan::Plan;

mod support;

use support::{Service, chain_plan, propose_and_approve, start, wait_completed, wait_up, words};

#[tokio::test]
async fn a_decline_on_chain_is_reassigned_at_once_and_runs_show_prints_its_reason() {
    // Summarizer-a (demo agent 0) runs only as the narrow `tessera worker` below.
    let (env, dir, workers) =
        support::chain_with_workers_for(DeployConfig::default(), &[1, 2, 3, 4]).await;
    let (_orch, api) = start(&env, dir.path());
    let card = dir.path().join("narrow.yaml");
    std::fs::write(&card, NARROW_CARD).unwrap();
    let key = format!("0x{}", alloy::hex::encode(env.actors.agents[0].to_bytes()));
    let _narrow = Service(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .arg("worker")
            .arg("--card")
            .arg(&card)
            .arg("--deployment")
            .arg(dir.path().join("deployment.json"))
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--ws-url", &env.chain.ws_endpoint()])
            .arg("--blobs")
            .arg(dir.path().join("blobs"))
            .args(["--poll-ms", "200"])
            .env("TESSERA_WORKER_KEY", key)
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("tessera worker starts"),
    );
    let http = reqwest::Client::new();
    wait_up(&http, &api).await;
    let (a0, a1) = (env.actors.agent(0), env.actors.agent(1));
    // The worker withdraws what its card dropped when it registers...
    let registry = AgentRegistry::new(env.deployment.agent_registry, &env.provider);
    let entities = capability::encode("extract-entities").unwrap();
    let end = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while registry.priceOf(a0, entities).call().await.unwrap().offered {
        assert!(tokio::time::Instant::now() < end, "extract-entities never withdrawn");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let offers = registry.getAgent(a0).call().await.unwrap().capabilities;
    assert_eq!(offers, [capability::encode("summarize").unwrap()]);
    // The worker's last start-up transaction links its ERC-8004 identity:
    // past it, the key is the test's to use without racing its nonces.
    while !registry.identityOf(a0).call().await.unwrap().linked {
        assert!(tokio::time::Instant::now() < end, "the worker never linked its identity");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // ...and someone else holding its key lists it again behind its back.
    let sent = registry.addCapability(entities, 300_000).from(a0).send().await.unwrap();
    assert!(sent.get_receipt().await.unwrap().status());
    let mut plan = chain_plan(
        Plan::id_from_label("cli-decline"),
        "Ada Lovelace met Charles Babbage in London in 1833.",
        &[("extract-entities", a0, 300_000), ("summarize", a1, 400_000)],
    );
    plan["recovery"] = serde_json::json!({"on_decline": "reassign"});
    let started = env.driver().now().await.unwrap();
    let id = propose_and_approve(&http, &api, &plan).await;
    let view = wait_completed(&http, &api, &id).await;
    let elapsed = env.driver().now().await.unwrap() - started;
    assert!(elapsed < 60, "{elapsed} chain seconds, the deadline is an hour: {view:#}");
    assert_eq!(view["subtasks"][0]["attempt"], 1, "{view:#}");

    let shown = support::cli(&api, Some(TEST_TOKEN), words(&format!("runs show {id}")), None).await;
    assert_eq!(shown.code, Some(0), "{shown:?}");
    let line = shown
        .stdout
        .lines()
        .find(|l| l.contains("declined by"))
        .unwrap_or_else(|| panic!("no decline in: {}", shown.stdout));
    // The API spells addresses in lower case.
    let by = a0.to_string().to_lowercase();
    assert!(line.starts_with(&format!("  step 0 declined by {by} (attempt 0, task ")), "{line}");
    assert!(line.ends_with("): capability \"extract-entities\" is not offered"), "{line}");
    for w in workers {
        w.abort();
    }
}
