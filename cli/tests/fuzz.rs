//! Both HTTP APIs against their OpenAPI documents: schemathesis with
//! `--checks all` against real servers on a fresh chain, `tessera serve`
//! (its bearer token given as a header, so the guarded routes are exercised
//! past authentication) and the standalone `tessera indexer run`. The index
//! API `tessera serve` embeds under `/index/api` is the same router as the
//! standalone one and is covered by that run.
//!
//! Schemathesis comes from `make fuzz-tools` (a pinned venv under
//! `.tools/fuzz`); `TESSERA_SCHEMATHESIS` names another binary, and
//! `TESSERA_FUZZ_EXAMPLES` the test cases per operation (10 by default,
//! which keeps both runs within about two minutes). Its settings, with the
//! reason for each, are in `tools/schemathesis.toml`.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use tessera_anvil::deploy::DeployConfig;
use tessera_e2e::{TEST_TOKEN, TestEnv};

mod support;

use support::wait_up;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// The schemathesis binary, or a failure that says how to get it.
fn schemathesis() -> PathBuf {
    let path = std::env::var_os("TESSERA_SCHEMATHESIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".tools/fuzz/bin/schemathesis"));
    assert!(
        path.is_file(),
        "schemathesis is not installed at {}: run `make fuzz-tools` (or set TESSERA_SCHEMATHESIS)",
        path.display()
    );
    path
}

/// Runs schemathesis against the document at `schema`, requests going to
/// `base`; returns its summary lines and whether it passed.
fn fuzz(name: &str, schema: &str, base: &str, headers: &[String], work: &Path) -> (bool, String) {
    let examples = std::env::var("TESSERA_FUZZ_EXAMPLES").unwrap_or_else(|_| "10".into());
    let mut cmd = Command::new(schemathesis());
    cmd.arg("--config-file")
        .arg(repo_root().join("tools/schemathesis.toml"))
        .args(["--no-color", "run", schema, "--url", base, "--checks", "all"])
        .args(["--max-examples", &examples, "--seed", "1", "--workers", "1"])
        .args(["--generation-database", "none", "--request-timeout", "20"])
        .args(["--warnings", "off"]);
    for h in headers {
        cmd.args(["--header", h]);
    }
    let started = std::time::Instant::now();
    let out = cmd
        .current_dir(work)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let passed = out.status.success();
    println!(
        "== {name}: schemathesis exit {:?} in {:.0?}\n{}",
        out.status.code(),
        started.elapsed(),
        if passed { summary(&stdout) } else { shortened(&stdout) }
    );
    if !passed {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    (passed, summary(&stdout))
}

/// Schemathesis' report with each line cut to a readable length (a failing
/// case can carry a body of half a megabyte).
fn shortened(stdout: &str) -> String {
    stdout
        .lines()
        .map(|l| {
            if l.len() > 400 {
                format!("{}…", &l[..l.floor_char_boundary(400)])
            } else {
                l.into()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The run's closing summary (operations, test cases, failures).
fn summary(stdout: &str) -> String {
    let start = stdout.rfind("SUMMARY").unwrap_or(0);
    stdout[start..].trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn both_apis_keep_their_openapi_contracts_under_schemathesis() {
    schemathesis(); // fail first, and clearly, when it is missing
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");

    let deployment = dir.path().join("deployment.json");
    env.deployment.save(&deployment).expect("deployment.json");
    let sponsor_key = format!("0x{}", alloy::hex::encode(env.actors.sponsor.to_bytes()));
    // Warnings only: thousands of requests would otherwise log a line each.
    let serve_log = dir.path().join("serve.log");
    let (_serve, api) = support::listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["serve", "--listen", support::ANY_PORT, "--deployment"])
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--database-url", &format!("sqlite://{}", dir.path().join("runs.db").display())])
            .args(["--index-database-url", &format!("sqlite://{}", dir.path().join("index.db").display())])
            .arg("--blobs")
            .arg(dir.path().join("blobs"))
            .env("TESSERA_SPONSOR_KEY", sponsor_key)
            .env("TESSERA_API_TOKEN", TEST_TOKEN)
            .env("RUST_LOG", "warn")
            .env_remove("DATABASE_URL")
            .env_remove("TESSERA_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            // The classifier traces every brief; its log is shown on failure.
            .stderr(std::fs::File::create(&serve_log).expect("serve.log")),
    );

    let (_indexer, ix) = support::listening(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["indexer", "run", "--listen", support::ANY_PORT])
            .args(["--poll-ms", "200", "--deployment"])
            .arg(&deployment)
            .args(["--rpc-url", env.chain.endpoint_url().as_str()])
            .args(["--database-url", &format!("sqlite://{}", dir.path().join("ix.db").display())])
            .arg("--blobs")
            .arg(dir.path().join("blobs"))
            .env("RUST_LOG", "warn")
            // Its webhook routes on, behind the same token as serve's.
            .env("TESSERA_INDEXER_TOKEN", TEST_TOKEN)
            .env_remove("DATABASE_URL")
            .stderr(Stdio::inherit()),
    );

    let http = reqwest::Client::new();
    wait_up(&http, &api).await;
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    while http.get(format!("{ix}/api/status")).send().await.is_err() {
        assert!(tokio::time::Instant::now() < end, "the indexer never answered at {ix}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let work = dir.path().to_path_buf();
    let auth = vec![format!("Authorization: Bearer {TEST_TOKEN}")];
    let (orch, ix_run) = tokio::task::spawn_blocking(move || {
        let orch = fuzz("orchestrator", &format!("{api}/api/openapi.json"), &api, &auth, &work);
        let ix_run = fuzz("indexer", &format!("{ix}/api/openapi.json"), &ix, &auth, &work);
        (orch, ix_run)
    })
    .await
    .expect("the fuzz runs finish");
    if !orch.0 {
        let log = std::fs::read_to_string(&serve_log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().filter(|l| !l.contains("tessera::classify")).collect();
        eprintln!(
            "tessera serve log (last lines):\n{}",
            lines[lines.len().saturating_sub(40)..].join("\n")
        );
    }
    assert!(orch.0, "the orchestrator API broke its contract (output above)\n{}", orch.1);
    assert!(ix_run.0, "the indexer API broke its contract (output above)\n{}", ix_run.1);
}
