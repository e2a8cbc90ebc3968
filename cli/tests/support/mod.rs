//! What the binary-level tests share: a chain with a worker per demo agent,
//! and `tessera` services as child processes that bind port 0 and say which
//! port they got (no port is picked, released and hoped for).

#![allow(dead_code, unreachable_pub)]

pub(crate) mod hosts;

use std::{
    process::{Child, Command, Stdio},
    time::Duration,
};

use alloy::{
    primitives::{Address, B256},
    providers::Provider,
    rpc::types::Filter,
};
use serde_json::{Value, json};
use tessera_anvil::deploy::{DEMO_AGENTS, DeployConfig};
use tessera_e2e::{TEST_TOKEN, TestEnv, spawn_worker};
use tessera_orchestrator::plan::PlanId;

/// Lines read so far from a child's pipe, each with when it was read.
pub(crate) type Lines = std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, String)>>>;

/// Reads `pipe` line by line in the background (so the child never blocks
/// on a full pipe), keeping every line with when it was read.
pub(crate) fn collect(pipe: impl std::io::Read + Send + 'static) -> Lines {
    use std::io::BufRead;
    let lines = Lines::default();
    let kept = std::sync::Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            kept.lock().unwrap().push((std::time::Instant::now(), line));
        }
    });
    lines
}

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
        // A service still starting answers 503 on its address.
        let answer = http.get(format!("{api}/api/health")).send().await;
        if answer.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("orchestrator never answered at {api}");
}

pub(crate) async fn view(http: &reqwest::Client, api: &str, id: &str) -> Value {
    http.get(format!("{api}/api/runs/{id}")).send().await.unwrap().json().await.unwrap()
}

/// A chain plan in auto review: step `i` depends on step `i - 1`; each step
/// is `(capability, executor, cost)`.
pub(crate) fn chain_plan(id: PlanId, source: &str, steps: &[(&str, Address, u64)]) -> Value {
    let subtasks: Vec<Value> = steps
        .iter()
        .zip(0u32..)
        .map(|(&(cap, exec, cost), i)| {
            json!({"index": i, "capability": cap, "spec": format!("Step {i}: {cap} the material"),
                   "executor": exec, "cost": cost, "deadline_offset_secs": 3600,
                   "depends_on": if i == 0 { vec![] } else { vec![i - 1] }})
        })
        .collect();
    json!({ "version": 1, "id": id, "review": "auto", "budget": 10_000_000u64,
            "source": source, "subtasks": subtasks })
}

/// Proposes `plan` and approves it; returns the run id.
pub(crate) async fn propose_and_approve(http: &reqwest::Client, api: &str, plan: &Value) -> String {
    let id = plan["id"].as_str().unwrap().to_owned();
    let resp = http.post(format!("{api}/api/plans")).bearer_auth(TEST_TOKEN).json(plan).send();
    assert_eq!(resp.await.unwrap().status().as_u16(), 201);
    let resp = http.post(format!("{api}/api/runs/{id}/approve")).bearer_auth(TEST_TOKEN).send();
    assert_eq!(resp.await.unwrap().status().as_u16(), 200);
    id
}

/// Waits until sub-task `index` of run `id` has left `waiting` (or the run
/// completed).
pub(crate) async fn wait_started(http: &reqwest::Client, api: &str, id: &str, index: usize) {
    loop {
        let v = view(http, api, id).await;
        if v["subtasks"][index]["phase"] != "waiting" || v["state"] == "completed" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits (60 s at most) for run `id` to complete; returns its view.
pub(crate) async fn wait_completed(http: &reqwest::Client, api: &str, id: &str) -> Value {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let v = view(http, api, id).await;
        if v["state"] == "completed" {
            return v;
        }
        assert!(tokio::time::Instant::now() < end, "never completed: {v:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many escrow logs with event signature `sig` the chain holds, of
/// plan `plan` (topic 2) when given.
pub(crate) async fn escrow_logs(env: &TestEnv, sig: B256, plan: Option<PlanId>) -> usize {
    let mut filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(sig)
        .from_block(env.deployment.deploy_block);
    if let Some(plan) = plan {
        filter = filter.topic2(plan.into_inner());
    }
    env.provider.get_logs(&filter).await.unwrap().len()
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

/// `tessera arbiter appeals run` (offline rubric) as a child process, with
/// its decisions in `dir/appeals.db` and the blobs the workers write there.
pub(crate) fn appeal_arbiter(
    env: &TestEnv,
    dir: &std::path::Path,
    deployment: &std::path::Path,
) -> Child {
    let key = format!("0x{}", alloy::hex::encode(env.actors.appeal_arbiter.to_bytes()));
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["arbiter", "appeals", "run", "--poll-ms", "100"])
        .arg("--deployment")
        .arg(deployment)
        .args(["--rpc-url", env.chain.endpoint_url().as_str()])
        .args(["--database-url", &format!("sqlite://{}", dir.join("appeals.db").display())])
        .arg("--blobs")
        .arg(dir.join("blobs"))
        .env("TESSERA_APPEAL_ARBITER_KEY", key)
        .env_remove("TESSERA_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("tessera arbiter appeals starts")
}

/// What a `tessera` command did: its exit code and its output.
#[derive(Debug)]
pub(crate) struct Ran {
    /// The exit code (none when killed by a signal).
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Ran {
    /// Standard output and error, one after the other.
    pub(crate) fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `tessera <args>` against the API at `api`, with `token` as
/// TESSERA_API_TOKEN (unset when none) and `stdin` on its standard input
/// (closed when none); 60 s at most. Waits without blocking the test's
/// runtime, where the workers run.
pub(crate) async fn cli<I, S>(api: &str, token: Option<&str>, args: I, stdin: Option<&str>) -> Ran
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args(args).env("TESSERA_API_URL", api).env_remove("TESSERA_API_TOKEN");
    if let Some(t) = token {
        cmd.env("TESSERA_API_TOKEN", t);
    }
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("tessera runs");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("piped stdin");
        pipe.write_all(input.as_bytes()).await.expect("stdin written");
        // Dropped: the input ends there.
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("tessera finishes within 60 s")
        .expect("tessera's output");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The words of `s`, as command-line arguments.
pub(crate) fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

/// Waits (60 s at most) until run `id`'s view satisfies `done`; returns it.
pub(crate) async fn wait_view(
    http: &reqwest::Client,
    api: &str,
    id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let v = view(http, api, id).await;
        if done(&v) {
            return v;
        }
        assert!(tokio::time::Instant::now() < end, "never {what}: {v:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A chain with the contracts (deployed with `cfg`) and a worker for each
/// demo agent in `agents` only: the others' tasks are never accepted.
pub(crate) async fn chain_with_workers_for(
    cfg: DeployConfig,
    agents: &[usize],
) -> (TestEnv, tempfile::TempDir, Vec<tokio::task::JoinHandle<()>>) {
    let env = TestEnv::start(cfg).await;
    let dir = tempfile::tempdir().unwrap();
    let blobs = dir.path().join("blobs");
    let mut workers = Vec::new();
    for &i in agents {
        workers.push(spawn_worker(&env, &DEMO_AGENTS[i], &blobs).await);
    }
    (env, dir, workers)
}

/// Waits (60 s at most) until sub-task `index` of run `id` is in phase
/// `want`, or the run in state `want`; returns the run's view.
pub(crate) async fn wait_phase(
    http: &reqwest::Client,
    api: &str,
    id: &str,
    index: usize,
    want: &str,
) -> Value {
    wait_view(http, api, id, want, |v| v["subtasks"][index]["phase"] == want || v["state"] == want)
        .await
}
