//! What the binary-level tests share: a chain with a worker per demo agent,
//! and `tessera serve` as a child process on a free port.

#![allow(dead_code, unreachable_pub)]

use std::{
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;
use tessera_anvil::deploy::{DEMO_AGENTS, DeployConfig};
use tessera_e2e::{TEST_TOKEN, TestEnv, spawn_worker};

/// A `tessera` service child process (serve, arbiter), killed on drop.
pub(crate) struct Service(pub(crate) Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub(crate) fn start(env: &TestEnv, dir: &std::path::Path, port: u16) -> Service {
    start_with(env, dir, port, &[], &[])
}

/// [`start`] with `extra` arguments for `tessera serve` and `env_extra`
/// variables in its environment.
pub(crate) fn start_with(
    env: &TestEnv,
    dir: &std::path::Path,
    port: u16,
    extra: &[&str],
    env_extra: &[(&str, &str)],
) -> Service {
    let deployment = dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let sponsor_key = format!("0x{}", alloy::hex::encode(env.actors.sponsor.to_bytes()));
    let child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--deployment")
        .arg(&deployment)
        .args(["--rpc-url", env.chain.endpoint_url().as_str()])
        .args(["--database-url", &format!("sqlite://{}", dir.join("runs.db").display())])
        .args(["--index-database-url", &format!("sqlite://{}", dir.join("index.db").display())])
        .arg("--blobs")
        .arg(dir.join("blobs"))
        .args(extra)
        .envs(env_extra.iter().copied())
        .env("TESSERA_SPONSOR_KEY", sponsor_key)
        .env("TESSERA_API_TOKEN", TEST_TOKEN)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("tessera serve starts");
    Service(child)
}

pub(crate) async fn wait_up(http: &reqwest::Client, api: &str) {
    for _ in 0..200 {
        if http.get(format!("{api}/api/health")).send().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("orchestrator never answered at {api}");
}

pub(crate) async fn view(http: &reqwest::Client, api: &str, id: &str) -> Value {
    http.get(format!("{api}/api/runs/{id}")).send().await.unwrap().json().await.unwrap()
}

/// A chain with the contracts, and a worker per demo agent whose blobs live
/// under the returned directory (where the orchestrator will look too).
pub(crate) async fn chain_with_workers()
-> (TestEnv, tempfile::TempDir, Vec<tokio::task::JoinHandle<()>>) {
    chain_with_workers_deployed(DeployConfig::default()).await
}

/// [`chain_with_workers`] with the escrow deployed with `cfg`.
pub(crate) async fn chain_with_workers_deployed(
    cfg: DeployConfig,
) -> (TestEnv, tempfile::TempDir, Vec<tokio::task::JoinHandle<()>>) {
    let env = TestEnv::start(cfg).await;
    let dir = tempfile::tempdir().unwrap();
    let blobs = dir.path().join("blobs");
    let mut workers = Vec::new();
    for agent in DEMO_AGENTS {
        workers.push(spawn_worker(&env, agent, &blobs).await);
    }
    (env, dir, workers)
}

/// `tessera arbiter run` (offline rubric) as a child process, with its
/// decisions in `dir` and the blobs the workers write there.
pub(crate) fn arbiter(env: &TestEnv, dir: &std::path::Path, deployment: &std::path::Path) -> Child {
    let arbiter_key = format!("0x{}", alloy::hex::encode(env.actors.arbiter.to_bytes()));
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["arbiter", "run", "--poll-ms", "100"])
        .arg("--deployment")
        .arg(deployment)
        .args(["--rpc-url", env.chain.endpoint_url().as_str()])
        .args(["--database-url", &format!("sqlite://{}", dir.join("arbiter.db").display())])
        .arg("--blobs")
        .arg(dir.join("blobs"))
        .env("TESSERA_ARBITER_KEY", arbiter_key)
        .env_remove("TESSERA_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("tessera arbiter starts")
}
