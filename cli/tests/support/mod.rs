//! What the binary-level tests share: a chain with a worker per demo agent,
//! and `tessera` services as child processes that bind port 0 and say which
//! port they got (no port is picked, released and hoped for).

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

/// The `--listen` value for a service: any free port, chosen by the kernel.
pub(crate) const ANY_PORT: &str = "127.0.0.1:0";

/// Spawns `cmd` (a service told to listen on [`ANY_PORT`]) and reads its
/// standard output until it says where it listens (`… on http://ADDR …`);
/// returns the service and its base URL. The rest of its output is drained
/// in the background so the child never blocks on a full pipe.
pub(crate) fn listening(cmd: &mut Command) -> (Service, String) {
    use std::io::BufRead;
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("the service starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let service = Service(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent && let Some(at) = line.find("http://") {
                let addr: String = line[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                    .collect();
                let _ = tx.send(format!("http://{}", addr.trim_end_matches('.')));
                sent = true;
            }
        }
    });
    let base = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the service said where it listens within 60 s");
    (service, base)
}

/// `tessera serve` on a port of its own choosing, with its embedded index;
/// returns it and its base URL.
pub(crate) fn start(env: &TestEnv, dir: &std::path::Path) -> (Service, String) {
    start_with(env, dir, &[], &[])
}

/// [`start`] with `extra` arguments for `tessera serve` and `env_extra`
/// variables in its environment.
pub(crate) fn start_with(
    env: &TestEnv,
    dir: &std::path::Path,
    extra: &[&str],
    env_extra: &[(&str, &str)],
) -> (Service, String) {
    let deployment = dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let sponsor_key = format!("0x{}", alloy::hex::encode(env.actors.sponsor.to_bytes()));
    listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["serve", "--listen", ANY_PORT])
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
            .stderr(Stdio::inherit()),
    )
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
