//! `tessera serve --replica`: two replicas with one sponsor key on one
//! PostgreSQL database, the lane holder killed with SIGKILL mid-plan, the
//! standby taking the lane over; two replicas with a key each driving their
//! lanes at once; and SQLite's one process per file.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::{
    collections::{BTreeMap, BTreeSet},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, B256, U256, keccak256},
    providers::Provider,
    rpc::types::Filter,
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use serde_json::Value;
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{MockUSDC, TaskEscrow};
use tessera_e2e::{TEST_TOKEN, TestEnv};
use tessera_orchestrator::{
    plan::{Plan, PlanId},
    store::Store,
};

mod support;

use support::{ANY_PORT, Service, chain_plan, chain_with_workers, listening, view, wait_up};

/// The lease's TTL and heartbeat the replicas run with, ms.
const TTL_MS: u64 = 3_000;
const HEARTBEAT_MS: u64 = 500;

/// `tessera serve` with the test chain's deployment and sponsor key, the
/// blobs the workers write in `dir`, the run store `database_url`, and
/// `extra` arguments; not started.
fn serve_command(
    env: &TestEnv,
    dir: &std::path::Path,
    database_url: &str,
    extra: &[&str],
) -> Command {
    serve_command_as(env, &env.actors.sponsor, dir, database_url, extra)
}

/// [`serve_command`] with `sponsor`'s key.
fn serve_command_as(
    env: &TestEnv,
    sponsor: &PrivateKeySigner,
    dir: &std::path::Path,
    database_url: &str,
    extra: &[&str],
) -> Command {
    let deployment = dir.join("deployment.json");
    env.deployment.save(&deployment).unwrap();
    let sponsor_key = format!("0x{}", alloy::hex::encode(sponsor.to_bytes()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args(["serve", "--listen", ANY_PORT, "--no-index"])
        .arg("--deployment")
        .arg(&deployment)
        .args(["--rpc-url", env.chain.endpoint_url().as_str()])
        .args(["--database-url", database_url])
        .arg("--blobs")
        .arg(dir.join("blobs"))
        .args(extra)
        .env("TESSERA_SPONSOR_KEY", sponsor_key)
        .env("TESSERA_API_TOKEN", TEST_TOKEN)
        .env_remove("DATABASE_URL")
        .env_remove("TESSERA_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stderr(Stdio::inherit());
    cmd
}

/// A replica on `database_url`; returns it and its base URL.
fn replica(env: &TestEnv, dir: &std::path::Path, database_url: &str) -> (Service, String) {
    replica_as(env, &env.actors.sponsor, dir, database_url)
}

/// A replica with `sponsor`'s key (its lane) on `database_url`.
fn replica_as(
    env: &TestEnv,
    sponsor: &PrivateKeySigner,
    dir: &std::path::Path,
    database_url: &str,
) -> (Service, String) {
    let (ttl, beat) = (TTL_MS.to_string(), HEARTBEAT_MS.to_string());
    let extra = ["--replica", "--lease-ttl-ms", &ttl, "--lease-heartbeat-ms", &beat];
    listening(&mut serve_command_as(env, sponsor, dir, database_url, &extra))
}

/// A scratch PostgreSQL database (see
/// [`tessera_db::test_utils::scratch_postgres`]): its server's admin URL
/// and its own; `None`, with the reason printed, when `TESSERA_TEST_PG` is
/// unset and no server answers at the default. When the variable is set
/// and the server does not answer, the test fails.
async fn scratch_database(test: &str) -> Option<(String, String)> {
    let scratch = tessera_db::test_utils::scratch_postgres(test).await?;
    Some((scratch.admin, scratch.url))
}

/// The owner and epoch of `lane`'s lease.
async fn lease(db: &Store, lane: &str) -> Option<(Option<String>, i64)> {
    db.lease(lane).await.unwrap().map(|l| (l.owner, l.epoch))
}

async fn health(http: &reqwest::Client, api: &str) -> Value {
    http.get(format!("{api}/api/health")).send().await.unwrap().json().await.unwrap()
}

/// Reads run `id`'s event stream on `api` in the background, sending each
/// event on as it arrives, until `plan_completed` or `plan_failed`.
fn follow_events(
    http: &reqwest::Client,
    api: &str,
    id: &str,
) -> tokio::sync::mpsc::UnboundedReceiver<Value> {
    use futures_util::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let request = http.get(format!("{api}/api/runs/{id}/events")).send();
    tokio::spawn(async move {
        let resp = request.await.expect("sse request");
        assert_eq!(resp.status().as_u16(), 200);
        let mut stream = resp.bytes_stream();
        let mut buf = String::new();
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { return };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                for data in frame.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    let ev: Value = serde_json::from_str(data).expect("event JSON");
                    let last =
                        matches!(ev["kind"].as_str(), Some("plan_completed" | "plan_failed"));
                    if tx.send(ev).is_err() || last {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// The escrow's logs with signature `sig` since the deployment, counted by
/// task id (topic 1).
async fn per_task(env: &TestEnv, sig: B256) -> BTreeMap<U256, usize> {
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(sig)
        .from_block(env.deployment.deploy_block);
    let mut out = BTreeMap::new();
    for log in env.provider.get_logs(&filter).await.unwrap() {
        let id = U256::from_be_bytes(log.topics()[1].0);
        *out.entry(id).or_default() += 1;
    }
    out
}

#[tokio::test]
async fn the_standby_takes_the_lane_over_when_the_holder_is_killed_and_every_plan_settles_once() {
    let test = "the_standby_takes_the_lane_over_when_the_holder_is_killed";
    let Some((admin, db_url)) = scratch_database(test).await else { return };
    // Migrated here, before the replicas start (they would do it too).
    let db = Store::connect(&db_url).await.unwrap();
    let (env, dir, workers) = chain_with_workers().await;
    let sponsor = env.actors.sponsor.address();
    let lane = sponsor.to_string().to_lowercase();
    let (a0, a1, a3) = (env.actors.agent(0), env.actors.agent(1), env.actors.agent(3));
    let executors = [a0, a1, a3];
    let mut before = BTreeMap::<Address, U256>::new();
    for who in [sponsor, a0, a1, a3] {
        before.insert(who, env.balance(who).await);
    }
    let http = reqwest::Client::new();

    // Replica A starts first and takes the lane; B stands by.
    let (mut a, api_a) = replica(&env, dir.path(), &db_url);
    wait_up(&http, &api_a).await;
    let owner_a = health(&http, &api_a).await["lane"]["replica"].as_str().unwrap().to_owned();
    assert_eq!(lease(&db, &lane).await, Some((Some(owner_a.clone()), 1)), "A holds the lane");
    let (mut b, api_b) = replica(&env, dir.path(), &db_url);
    wait_up(&http, &api_b).await;
    let hb = health(&http, &api_b).await;
    assert_eq!(
        (hb["lane"]["lane"].as_str(), hb["lane"]["holds"].as_bool()),
        (Some(&*lane), Some(false))
    );
    let owner_b = hb["lane"]["replica"].as_str().unwrap().to_owned();
    assert_ne!(owner_a, owner_b);

    // Three plans, proposed and approved through the standby; A drives
    // them. Plan 0's stream is opened on B before its approval: every
    // event A stores reaches it live.
    let steps = [
        ("summarize", a1, 400_000),
        ("extract-entities", a0, 300_000),
        ("sentiment-classify", a3, 200_000),
        ("summarize", a1, 400_000),
        ("sentiment-classify", a3, 200_000),
    ];
    let per_plan = U256::from(1_500_000u64);
    let plans: Vec<Value> = (0..3)
        .map(|k| {
            chain_plan(
                Plan::id_from_label(&format!("replicas-{k}")),
                "Tessera settles each sub-task through an escrow. Workers accept and deliver. \
                 The orchestrator approves and pays. Results flow to the next step.",
                &steps,
            )
        })
        .collect();
    let mut ids = Vec::new();
    let mut stream = None;
    for plan in &plans {
        let id = plan["id"].as_str().unwrap().to_owned();
        let resp = http.post(format!("{api_b}/api/plans")).bearer_auth(TEST_TOKEN).json(plan);
        assert_eq!(resp.send().await.unwrap().status().as_u16(), 201);
        if stream.is_none() {
            stream = Some(follow_events(&http, &api_b, &id));
            // The stream has replayed the proposal: it is live from here.
            let first = stream.as_mut().unwrap().recv().await.unwrap();
            assert_eq!(first["kind"], "plan_proposed");
        }
        let resp = http.post(format!("{api_b}/api/runs/{id}/approve")).bearer_auth(TEST_TOKEN);
        assert_eq!(resp.send().await.unwrap().status().as_u16(), 200);
        ids.push(id);
    }
    let mut stream = stream.unwrap();
    assert_eq!(health(&http, &api_b).await["run_drivers"], 0, "the standby drives nothing");

    // A is driving: once B's stream shows sub-task 1 of plan 0 funded (an
    // event A stored, relayed to B live), A is killed mid-plan.
    let mut seen = Vec::new();
    let relayed = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(ev) = stream.recv().await {
            let funded = ev["kind"] == "subtask_created" && ev["index"] == 1;
            seen.push(ev);
            if funded {
                return;
            }
        }
        panic!("the stream ended early: {seen:#?}");
    })
    .await;
    assert!(relayed.is_ok(), "B's stream never showed A's progress: {seen:#?}");
    assert!(health(&http, &api_a).await["run_drivers"].as_u64().unwrap() >= 1);
    a.0.kill().unwrap(); // SIGKILL
    let killed = Instant::now();
    a.0.wait().unwrap();
    drop(a);
    let mut open = 0;
    for id in &ids {
        if view(&http, &api_b, id).await["state"] != "completed" {
            open += 1;
        }
    }
    assert!(open > 0, "every plan had completed before the kill: nothing left to take over");

    // B takes the lane over once A's lease lapses.
    let took_over = loop {
        if let Some((Some(owner), epoch)) = lease(&db, &lane).await
            && owner == owner_b
        {
            assert_eq!(epoch, 2, "one change of holder");
            break killed.elapsed();
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "B never took the lane over");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "takeover {} ms after the kill (lease TTL {TTL_MS} ms, heartbeat {HEARTBEAT_MS} ms)",
        took_over.as_millis()
    );
    assert!(
        took_over <= Duration::from_millis(TTL_MS + HEARTBEAT_MS + 500),
        "takeover took {took_over:?}"
    );
    let hb = health(&http, &api_b).await;
    assert_eq!(hb["lane"]["holds"], true, "{hb}");
    assert_eq!(hb["lane"]["epoch"], 2, "{hb}");

    // Every plan completes, each sub-task paid on its first attempt.
    for id in &ids {
        let v = support::wait_completed(&http, &api_b, id).await;
        for s in v["subtasks"].as_array().unwrap() {
            assert_eq!(
                (s["attempt"].as_u64(), s["phase"].as_str()),
                (Some(0), Some("paid")),
                "{s}"
            );
        }
    }
    // The stream opened on the standby saw the plan through, every event once.
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(ev) = stream.recv().await {
            seen.push(ev);
        }
    })
    .await;
    assert!(rest.is_ok(), "B's stream never ended");
    assert_eq!(seen.last().unwrap()["kind"], "plan_completed", "{seen:#?}");
    let seqs: Vec<u64> = seen.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order, none twice: {seqs:?}");
    let paid = seen.iter().filter(|e| e["kind"] == "subtask_paid").count();
    assert_eq!(paid, steps.len(), "{seen:#?}");

    // Exactly one task per sub-task, each settled once.
    let created = per_task(&env, TaskEscrow::TaskCreated::SIGNATURE_HASH).await;
    let settled = per_task(&env, TaskEscrow::TaskSettled::SIGNATURE_HASH).await;
    assert_eq!(created.len(), ids.len() * steps.len(), "one task per sub-task");
    assert!(created.values().all(|&n| n == 1), "each funded once: {created:?}");
    assert!(settled.values().all(|&n| n == 1), "each settled once: {settled:?}");
    assert_eq!(
        created.keys().collect::<BTreeSet<_>>(),
        settled.keys().collect::<BTreeSet<_>>(),
        "every task settled"
    );
    for plan in &plans {
        let plan_id: PlanId = plan["id"].as_str().unwrap().parse().unwrap();
        let of_plan =
            support::escrow_logs(&env, TaskEscrow::TaskCreated::SIGNATURE_HASH, Some(plan_id));
        assert_eq!(of_plan.await, steps.len());
    }

    // Balances conserved to the unit: the sponsor's debit is the executors' credit.
    let debit = before[&sponsor] - env.balance(sponsor).await;
    let mut credit = U256::ZERO;
    for who in executors {
        credit += env.balance(who).await - before[&who];
    }
    assert_eq!(debit, per_plan * U256::from(ids.len()));
    assert_eq!(credit, debit, "sponsor debit = sum of executors' credits");
    assert_eq!(env.balance(a1).await - before[&a1], U256::from(2_400_000u64));

    // SIGTERM: B drains and releases the lease (no one waits for it to lapse).
    let term = Command::new("kill").args(["-TERM", &b.0.id().to_string()]).status().unwrap();
    assert!(term.success());
    let end = Instant::now() + Duration::from_secs(30);
    while b.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "B did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(lease(&db, &lane).await, Some((None, 2)), "released on a graceful stop");
    drop(b);
    drop(db);
    for w in workers {
        w.abort();
    }
    tessera_db::drop_scratch_database(&admin, &db_url).await.unwrap();
}

/// Two replicas with a sponsor key each, on one PostgreSQL run store: each
/// holds its own lane and drives its own sponsor's plans while the other
/// drives the other's, in the same blocks. Every sub-task is funded and
/// settled once, by its own sponsor; each sponsor pays exactly its plans,
/// and the executors receive exactly what both paid.
#[tokio::test]
async fn two_replicas_with_a_key_each_drive_their_lanes_at_once_and_balances_are_exact() {
    let test = "two_replicas_with_a_key_each_drive_their_lanes_at_once";
    let Some((admin, db_url)) = scratch_database(test).await else { return };
    let db = Store::connect(&db_url).await.unwrap();
    let (env, dir, workers) = chain_with_workers().await;
    // The second sponsor: ether for gas, tokens to fund its plans.
    let second = PrivateKeySigner::from_bytes(&keccak256("replicas: the second sponsor")).unwrap();
    env.provider
        .raw_request::<_, Value>(
            "anvil_setBalance".into(),
            (second.address(), U256::from(10u128.pow(20))),
        )
        .await
        .unwrap();
    let usdc = MockUSDC::new(env.deployment.token, env.provider.clone());
    let minted = usdc
        .mint(second.address(), U256::from(100_000_000u64))
        .from(env.actors.deployer.address())
        .send()
        .await
        .unwrap();
    assert!(minted.get_receipt().await.unwrap().status());
    let sponsors = [env.actors.sponsor.clone(), second];
    let (a0, a1, a3) = (env.actors.agent(0), env.actors.agent(1), env.actors.agent(3));
    let executors = [a0, a1, a3];
    let mut before = BTreeMap::<Address, U256>::new();
    for who in sponsors.iter().map(PrivateKeySigner::address).chain(executors) {
        before.insert(who, env.balance(who).await);
    }
    let http = reqwest::Client::new();

    // One replica per key: each holds its own lane's lease.
    let mut replicas = Vec::new();
    for sponsor in &sponsors {
        let (service, api) = replica_as(&env, sponsor, dir.path(), &db_url);
        wait_up(&http, &api).await;
        replicas.push((service, api));
    }
    for (sponsor, (_, api)) in sponsors.iter().zip(&replicas) {
        let lane = sponsor.address().to_string().to_lowercase();
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let h = health(&http, api).await;
            if h["lane"]["holds"] == true {
                assert_eq!(h["lane"]["lane"], lane.as_str(), "{h}");
                break;
            }
            assert!(Instant::now() < end, "{api} never held its lane: {h}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(lease(&db, &lane).await.map(|l| l.1), Some(1), "one holder, never changed");
    }

    // Two plans through each replica, all approved before any settles.
    let steps = [
        ("summarize", a1, 400_000),
        ("extract-entities", a0, 300_000),
        ("sentiment-classify", a3, 200_000),
    ];
    let per_plan = U256::from(900_000u64);
    let mut plans: Vec<(usize, PlanId, String)> = Vec::new();
    for k in 0..4 {
        let r = k % 2;
        let plan_id = Plan::id_from_label(&format!("two lanes {k}"));
        let plan = chain_plan(
            plan_id,
            "Tessera settles each sub-task through an escrow. Workers accept and deliver.",
            &steps,
        );
        let api = &replicas[r].1;
        let resp = http.post(format!("{api}/api/plans")).bearer_auth(TEST_TOKEN).json(&plan);
        assert_eq!(resp.send().await.unwrap().status().as_u16(), 201);
        plans.push((r, plan_id, plan["id"].as_str().unwrap().to_owned()));
    }
    for (r, _, id) in &plans {
        let api = &replicas[*r].1;
        let resp = http.post(format!("{api}/api/runs/{id}/approve")).bearer_auth(TEST_TOKEN);
        assert_eq!(resp.send().await.unwrap().status().as_u16(), 200);
    }
    // Every plan completes, each sub-task paid on its first attempt; read
    // through the other replica (the run store is shared).
    for (r, _, id) in &plans {
        let v = support::wait_completed(&http, &replicas[1 - r].1, id).await;
        for s in v["subtasks"].as_array().unwrap() {
            assert_eq!(
                (s["attempt"].as_u64(), s["phase"].as_str()),
                (Some(0), Some("paid")),
                "{s}"
            );
        }
    }

    // Each plan's tasks were funded by its replica's key, each once, and
    // the two lanes' creations interleave: they ran at once.
    let mut spans = [(u64::MAX, 0u64); 2];
    let filter = Filter::new()
        .address(env.deployment.task_escrow)
        .event_signature(TaskEscrow::TaskCreated::SIGNATURE_HASH)
        .from_block(env.deployment.deploy_block);
    let logs = env.provider.get_logs(&filter).await.unwrap();
    assert_eq!(logs.len(), plans.len() * steps.len(), "one task per sub-task");
    for log in &logs {
        let ev = TaskEscrow::TaskCreated::decode_log(&log.inner).unwrap();
        let (r, _, _) = plans.iter().find(|(_, p, _)| p.into_inner() == ev.planId).unwrap();
        assert_eq!(ev.task.funder, sponsors[*r].address(), "funded by its lane's sponsor");
        let block = log.block_number.unwrap();
        spans[*r] = (spans[*r].0.min(block), spans[*r].1.max(block));
    }
    assert!(
        spans[0].0 <= spans[1].1 && spans[1].0 <= spans[0].1,
        "the lanes' creations overlap in blocks: {spans:?}"
    );
    let created = per_task(&env, TaskEscrow::TaskCreated::SIGNATURE_HASH).await;
    let settled = per_task(&env, TaskEscrow::TaskSettled::SIGNATURE_HASH).await;
    assert!(created.values().all(|&n| n == 1), "each funded once: {created:?}");
    assert!(settled.values().all(|&n| n == 1), "each settled once: {settled:?}");
    assert_eq!(
        created.keys().collect::<BTreeSet<_>>(),
        settled.keys().collect::<BTreeSet<_>>(),
        "every task settled"
    );

    // Balances to the unit: each sponsor paid its two plans, the executors
    // received what both paid.
    let mut debit = U256::ZERO;
    for sponsor in &sponsors {
        let paid = before[&sponsor.address()] - env.balance(sponsor.address()).await;
        assert_eq!(paid, per_plan * U256::from(2u64), "{}", sponsor.address());
        debit += paid;
    }
    let mut credit = U256::ZERO;
    for who in executors {
        credit += env.balance(who).await - before[&who];
    }
    assert_eq!(credit, debit, "the sponsors' debit = the executors' credit");
    // Nobody took a lane from anybody.
    for sponsor in &sponsors {
        let lane = sponsor.address().to_string().to_lowercase();
        assert_eq!(lease(&db, &lane).await.map(|l| l.1), Some(1), "{lane}");
    }

    for (mut service, _) in replicas {
        service.0.kill().unwrap();
        service.0.wait().unwrap();
    }
    drop(db);
    for w in workers {
        w.abort();
    }
    tessera_db::drop_scratch_database(&admin, &db_url).await.unwrap();
}

#[tokio::test]
async fn a_second_serve_on_one_sqlite_file_is_refused_and_replicas_need_postgres() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("runs.db").display());
    let run = |extra: &[&str]| {
        let out = serve_command(&env, dir.path(), &url, extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("tessera serve runs");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };

    // --replica on SQLite: refused before anything starts.
    let (code, err) = run(&["--replica"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("--replica needs a postgres:// database URL"), "{err}");

    // One serve holds the file; a second on it stops with the reason.
    let (_first, api) = listening(&mut serve_command(&env, dir.path(), &url, &[]));
    wait_up(&reqwest::Client::new(), &api).await;
    let (code, err) = run(&[]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("another process uses this SQLite database"), "{err}");
    assert!(err.contains("runs.db.lock"), "{err}");
}

/// The failover trial of `make soak-replicas` at a small size: three
/// replicas with one key, plans arriving in waves, three kills at random
/// moments (most of the lane holder), each killed replica started again.
#[tokio::test]
async fn three_replicas_survive_random_kills_with_every_plan_settled_exactly_once() {
    let test = "three_replicas_survive_random_kills";
    // The trial makes databases of its own on the server; the probe's goes.
    let Some((admin, probe)) = scratch_database(test).await else { return };
    tessera_db::drop_scratch_database(&admin, &probe).await.unwrap();
    let cfg = tessera_bench::failover::FailoverConfig {
        replicas: 3,
        kills: 3,
        plans_per_wave: 3,
        postgres: admin,
        block_time: None,
        lease_ttl_ms: TTL_MS,
        heartbeat_ms: HEARTBEAT_MS,
        seed: 7,
        exe: Some(env!("CARGO_BIN_EXE_tessera").into()),
    };
    let opts = tessera_anvil::chain::ChainOptions::default();
    let report = tessera_bench::failover::run(&opts, &cfg).await.expect("the trial runs");
    println!("{}", report.table());
    assert_eq!(report.kills.len(), 3);
    assert_eq!((report.plans, report.completed), (12, 12), "{report:#?}");
    assert_eq!((report.tasks_created, report.not_exactly_once), (36, 0), "{report:#?}");
    // The kills land under load: runs were live at the holder's kills.
    assert!(report.kills.iter().any(|k| k.held_lane && k.live_runs > 0), "{report:#?}");
    assert_eq!(report.sponsor_debit, report.plans_cost, "{report:#?}");
    assert_eq!(report.executors_credit, report.sponsor_debit, "{report:#?}");
    assert_eq!(report.escrow_change, "0", "{report:#?}");
    // Seed 7 kills the holder at least once; each holder's kill is taken
    // over within the TTL plus a heartbeat (and a little scheduling).
    assert!(report.kills.iter().any(|k| k.held_lane), "{report:#?}");
    for k in report.kills.iter().filter(|k| k.held_lane) {
        let ms = k.takeover_ms.expect("taken over");
        assert!(ms <= (TTL_MS + HEARTBEAT_MS + 1_000) as f64, "takeover {ms} ms: {report:#?}");
    }
    assert!(report.passed(), "{}", report.table());
}
