//! Every service knows when part of it died, against the real binary on
//! anvil: each critical task of `tessera serve`, `tessera worker`,
//! `tessera arbiter run` and `tessera indexer run` is made to panic or to
//! end in turn (`TESSERA_TEST_FAULT`, honoured by debug builds only), and
//! the process exits non-zero within the shutdown grace, naming the task on
//! stderr; a running service answers `/readyz` with its tasks `ok`, and
//! SIGTERM stops it with exit 0.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;
use tessera_anvil::deploy::DeployConfig;
use tessera_e2e::{TEST_TOKEN, TestEnv};
use tessera_http::tasks::SHUTDOWN_GRACE;

use support::{ANY_PORT, Service, collect, listening};

/// The services, by what they are called in the messages.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Serve,
    Worker,
    Arbiter,
    Indexer,
}

impl Kind {
    /// The critical tasks each one starts.
    fn critical(self) -> &'static [&'static str] {
        match self {
            Self::Serve => &["api", "heads", "feedback", "proposals", "indexer", "webhooks"],
            Self::Worker => &["ops", "worker"],
            Self::Arbiter => &["ops", "arbiter"],
            Self::Indexer => &["api", "indexer", "webhooks"],
        }
    }
}

/// `tessera <service>` on anvil, its files under `dir` (`tag` keeps runs
/// apart), listening on a port of its own choosing; `serve` as a replica
/// on the PostgreSQL database `replica` when given.
fn command(env: &TestEnv, dir: &Path, kind: Kind, tag: &str, replica: Option<&str>) -> Command {
    let deployment = dir.join("deployment.json");
    if !deployment.exists() {
        env.deployment.save(&deployment).unwrap();
    }
    let db = |name: &str| format!("sqlite://{}", dir.join(format!("{tag}-{name}.db")).display());
    let key = |k: &alloy::signers::local::PrivateKeySigner| {
        format!("0x{}", alloy::hex::encode(k.to_bytes()))
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    match kind {
        Kind::Serve => {
            cmd.args(["serve", "--listen", ANY_PORT]);
            match replica {
                Some(url) => cmd.args(["--no-index", "--replica", "--database-url", url]),
                None => cmd
                    .args(["--database-url", &db("runs")])
                    .args(["--index-database-url", &db("index")]),
            };
            cmd.env("TESSERA_SPONSOR_KEY", key(&env.actors.sponsor))
                .env("TESSERA_API_TOKEN", TEST_TOKEN);
        }
        Kind::Worker => {
            cmd.args(["worker", "--poll-ms", "100", "--listen", ANY_PORT])
                .arg("--card")
                .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../workers/cards/translator.yaml"))
                .env("TESSERA_WORKER_KEY", key(&env.actors.agents[2]));
        }
        Kind::Arbiter => {
            cmd.args(["arbiter", "run", "--poll-ms", "100", "--metrics-addr", ANY_PORT])
                .args(["--database-url", &db("arbiter")])
                .env("TESSERA_ARBITER_KEY", key(&env.actors.arbiter));
        }
        Kind::Indexer => {
            cmd.args(["indexer", "run", "--poll-ms", "100", "--listen", ANY_PORT])
                .args(["--database-url", &db("index")]);
        }
    }
    cmd.arg("--deployment")
        .arg(&deployment)
        .args(["--rpc-url", env.chain.endpoint_url().as_str()])
        .arg("--blobs")
        .arg(dir.join("blobs"))
        .env_remove("TESSERA_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("DATABASE_URL")
        .env_remove("RUST_LOG")
        // The one-line failure, not the report with its backtrace.
        .env_remove("RUST_BACKTRACE")
        .env_remove("TESSERA_TEST_FAULT");
    cmd
}

/// Waits up to `limit` for `service` to exit: its code and when it exited.
fn wait_exit(service: &mut Service, limit: Duration) -> Option<(Option<i32>, Instant)> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Some(status) = service.0.try_wait().unwrap() {
            return Some((status.code(), Instant::now()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Starts the service `cmd` runs with `task` made to fail as `fault`
/// (`panic` or `end`), and checks it exits non-zero within the grace of the
/// failure, naming the task. How long it took from the failure's log line
/// to the exit.
fn fails_on(mut cmd: Command, task: &str, fault: &str) -> Duration {
    let what = format!("{:?} with {task}:{fault}", cmd.get_args().next().unwrap_or_default());
    let child = cmd
        .env("TESSERA_TEST_FAULT", format!("{task}:{fault}@1500"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the service starts");
    let mut service = Service(child);
    let lines = collect(service.0.stderr.take().unwrap());
    let Some((code, exited)) = wait_exit(&mut service, Duration::from_secs(90)) else {
        panic!("{what}: still running after 90 s");
    };
    // The pipe's last lines arrive after the exit at worst.
    std::thread::sleep(Duration::from_millis(200));
    let lines = lines.lock().unwrap().clone();
    let text = lines.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>().join("\n");
    assert!(code.is_some_and(|c| c != 0), "{what}: exit {code:?}\n{text}");
    let how = match fault {
        "panic" => format!("critical task {task} panicked"),
        _ => format!("critical task {task} ended"),
    };
    let Some((logged, _)) = lines.iter().find(|(_, l)| l.contains(&how)) else {
        panic!("{what}: no line says {how:?}:\n{text}");
    };
    assert!(
        lines.iter().any(|(_, l)| l.starts_with(&format!("error: {how}"))),
        "{what}: the exit does not name the task:\n{text}"
    );
    let took = exited.saturating_duration_since(*logged);
    assert!(took < SHUTDOWN_GRACE + Duration::from_secs(2), "{what}: exited {took:?} after");
    took
}

/// Starts `kind`, waits until `/readyz` says ready with its tasks `ok`,
/// sends SIGTERM and checks it exits 0 within the grace. How long it took.
async fn stops_on_sigterm(env: &TestEnv, dir: &Path, kind: Kind) -> Duration {
    let mut cmd = command(env, dir, kind, &format!("{kind:?}-term"), None);
    let (mut service, base) = listening(cmd.stderr(Stdio::inherit()));
    let http = reqwest::Client::new();
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = http.get(format!("{base}/readyz")).send().await;
        if let Ok(resp) = answer
            && resp.status() == 200
        {
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body["checks"]["tasks"], "ok", "{kind:?}: {body}");
            break;
        }
        assert!(Instant::now() < end, "{kind:?} never ready at {base}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sent = Instant::now();
    let pid = service.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let Some((code, exited)) = wait_exit(&mut service, SHUTDOWN_GRACE + Duration::from_secs(5))
    else {
        panic!("{kind:?}: still running after SIGTERM");
    };
    assert_eq!(code, Some(0), "{kind:?}: SIGTERM is a clean stop");
    exited - sent
}

#[tokio::test(flavor = "multi_thread")]
async fn each_critical_task_that_dies_stops_its_service_and_sigterm_is_clean() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut taken = Vec::new();
    for kind in [Kind::Serve, Kind::Worker, Kind::Arbiter, Kind::Indexer] {
        taken.push((format!("{kind:?} SIGTERM"), stops_on_sigterm(&env, dir.path(), kind).await));
        // Each task in turn, panicking or ending by turns.
        for (i, task) in kind.critical().iter().enumerate() {
            let fault = if i % 2 == 0 { "panic" } else { "end" };
            let cmd = command(&env, dir.path(), kind, &format!("{kind:?}-{task}-{fault}"), None);
            let took = tokio::task::block_in_place(|| fails_on(cmd, task, fault));
            taken.push((format!("{kind:?} {task}:{fault}"), took));
        }
    }
    for (what, took) in &taken {
        eprintln!("{what}: exited {} ms after", took.as_millis());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_stops_when_its_lease_keeper_or_listener_dies() {
    let Some(pg) = tessera_db::test_utils::scratch_postgres("critical_replica").await else {
        return;
    };
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    for (task, fault) in [("lease", "panic"), ("notifications", "end")] {
        let cmd = command(&env, dir.path(), Kind::Serve, task, Some(&pg.url));
        let took = tokio::task::block_in_place(|| fails_on(cmd, task, fault));
        eprintln!("replica {task}:{fault}: exited {} ms after", took.as_millis());
    }
}
