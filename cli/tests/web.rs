//! The web plan card in headless Chromium against the real stack on anvil:
//! `tessera serve` (API, UI and embedded indexer) and `tessera arbiter run`
//! as child processes, a worker per demo agent, and the browser driven by
//! `playwright-core` over Debian's `/usr/bin/chromium` (`make browser`
//! installs it; no browser is ever downloaded). The scenarios live in
//! `tests/web/plan-card.test.mjs`; screenshots land in `target/web-artifacts/`.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::path::{Path, PathBuf};

use support::{Service, chain_with_workers_deployed, start, wait_up};
use tessera_anvil::deploy::DeployConfig;
use tessera_e2e::TEST_TOKEN;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_card_in_headless_chromium() {
    let root = root();
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
