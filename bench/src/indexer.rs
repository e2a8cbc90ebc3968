//! `make bench-indexer`: puts N task lifecycles on anvil, then measures the
//! real `tessera indexer run` binary: backfill throughput (events/s) into
//! SQLite and PostgreSQL, live lag (block mined → task visible through the
//! API) p50/p99, webhook delivery lag p50/p99, GraphQL query latency p50/p99
//! on the big index (see [`crate::index_reads`]), and the indexer process's
//! peak RSS.
//!
//! Webhook delivery lag: a receiver in this process is registered for the
//! `TaskCreated` events of the live phase's tasks; after the live lag's
//! tasks, as many tasks again are created one by one, and for each the lag
//! is the moment its delivery arrived minus the moment the task first
//! answered through the REST API (`GET /api/tasks/{id}`, polled every
//! 0.5 ms from before its transaction is sent: its id is known up front).
//! A delivery can arrive before the task answers (the event is stored, and
//! its delivery written, before the task is folded): the lag is then
//! negative, and counted as such.

use std::{
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use alloy::{
    primitives::{U256, aliases::U40, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::Filter,
};
use eyre::{Result, bail};

use crate::{
    index_reads::{QUERY_GOAL_P99_MS, QueryRow, Receiver, query_rows, register},
    percentile,
    process::{Running, peak_rss_mib, spawn_listening, tessera},
};
use serde::Serialize;
use serde_json::Value;
use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DeployConfig},
};
use tessera_bindings::{
    ITaskEscrow::CreateParams, MockUSDC, TaskEscrow, deployment::Deployment, task::TaskRecord,
};

/// Results.
#[derive(Debug, Clone, Serialize)]
pub struct IndexerBench {
    lifecycles: usize,
    events: usize,
    blocks: u64,
    generate_secs: f64,
    sqlite_backfill_secs: f64,
    sqlite_events_per_sec: f64,
    sqlite_peak_rss_mib: f64,
    rss_before_queries_mib: f64,
    postgres_backfill_secs: Option<f64>,
    postgres_events_per_sec: Option<f64>,
    live_lag_p50_ms: f64,
    live_lag_p99_ms: f64,
    live_samples: usize,
    webhook_lag_p50_ms: f64,
    webhook_lag_p99_ms: f64,
    webhook_after_sent_p99_ms: f64,
    webhook_samples: usize,
    sqlite_queries: Vec<QueryRow>,
    postgres_queries: Option<Vec<QueryRow>>,
}

/// Backfill goal into SQLite, events/s.
const SQLITE_GOAL: f64 = 60_000.0;

/// Backfill goal into PostgreSQL, events/s.
const POSTGRES_GOAL: f64 = 40_000.0;

impl IndexerBench {
    /// The report as a table of goals, each met or not.
    pub fn table(&self) -> String {
        let goal = |ok: bool| if ok { "met" } else { "NOT met" };
        let mut out = format!(
            "{} lifecycles, {} events in {} blocks (generated in {:.1} s)\n",
            self.lifecycles, self.events, self.blocks, self.generate_secs
        );
        out += &format!(
            "backfill into SQLite:     {:>10.0} events/s ({:.2} s)   goal >= 60,000: {}\n",
            self.sqlite_events_per_sec,
            self.sqlite_backfill_secs,
            goal(self.sqlite_events_per_sec >= SQLITE_GOAL)
        );
        match (self.postgres_events_per_sec, self.postgres_backfill_secs) {
            (Some(p), Some(secs)) => {
                out += &format!(
                    "backfill into PostgreSQL: {p:>10.0} events/s ({secs:.2} s)   goal >= 40,000: {}\n",
                    goal(p >= POSTGRES_GOAL)
                );
            }
            _ => out += "backfill into PostgreSQL: skipped (no server answered)\n",
        }
        out += &format!(
            "live lag (mined -> API):  p50 {:.1} ms, p99 {:.1} ms over {} tasks   goal p99 <= 100 ms: {}\n",
            self.live_lag_p50_ms,
            self.live_lag_p99_ms,
            self.live_samples,
            goal(self.live_lag_p99_ms <= 100.0)
        );
        out += &format!(
            "webhook lag (API -> hook): p50 {:.1} ms, p99 {:.1} ms over {} deliveries (tx sent -> hook p99 {:.1} ms)   goal p99 <= 100 ms: {}\n",
            self.webhook_lag_p50_ms,
            self.webhook_lag_p99_ms,
            self.webhook_samples,
            self.webhook_after_sent_p99_ms,
            goal(self.webhook_lag_p99_ms <= 100.0)
        );
        let queries = [
            ("SQLite", Some(&self.sqlite_queries)),
            ("PostgreSQL", self.postgres_queries.as_ref()),
        ];
        for (db, rows) in queries {
            for q in rows.into_iter().flatten() {
                out += &format!(
                    "GraphQL on {db}, {}: p50 {:.1} ms, p99 {:.1} ms over {}   goal p99 <= 20 ms: {}\n",
                    q.query,
                    q.p50_ms,
                    q.p99_ms,
                    q.samples,
                    goal(q.p99_ms <= QUERY_GOAL_P99_MS)
                );
            }
        }
        out += &format!(
            "indexer peak RSS:         {:.1} MiB ({:.1} MiB before the GraphQL queries)   goal < 100 MiB: {}\n",
            self.sqlite_peak_rss_mib,
            self.rss_before_queries_mib,
            goal(self.sqlite_peak_rss_mib < 100.0)
        );
        out
    }
}

/// A scratch PostgreSQL database for the backfill into PostgreSQL, on the
/// server at `TESSERA_TEST_PG` (or the local default); `None`, with the
/// reason printed, when none can be made.
async fn postgres_scratch() -> Option<String> {
    let admin = std::env::var("TESSERA_TEST_PG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| tessera_db::DEFAULT_ADMIN_URL.to_owned());
    match tessera_db::create_scratch_database(&admin, "bench_indexer").await {
        Ok(url) => Some(url),
        Err(e) => {
            eprintln!("skipping the PostgreSQL backfill: no scratch database at {admin}: {e}");
            None
        }
    }
}

/// Starts `tessera indexer run` on a port it binds itself (`:0`), its
/// webhook routes behind `token`, and returns it with its API's base URL.
fn spawn_indexer(
    deployment: &Path,
    rpc: &str,
    db: &str,
    log: Option<&Path>,
    token: &str,
) -> Result<(Running, String)> {
    // With a log file, each batch's read / insert / fold timings land there.
    let stderr = match log {
        Some(path) => Stdio::from(std::fs::File::create(path)?),
        None => Stdio::null(),
    };
    let mut cmd = tessera()?;
    cmd.args(["indexer", "run", "--listen", "127.0.0.1:0", "--poll-ms", "200"])
        .arg("--deployment")
        .arg(deployment)
        .args(["--rpc-url", rpc, "--database-url", db])
        .env("RUST_LOG", if log.is_some() { "tessera_indexer=debug" } else { "warn" })
        .env("TESSERA_INDEXER_TOKEN", token)
        .stderr(stderr);
    spawn_listening(cmd, "indexer")
}

async fn wait_indexed(http: &reqwest::Client, api: &str, head: u64, limit: Duration) -> Result<()> {
    let end = Instant::now() + limit;
    loop {
        if let Ok(r) = http.get(format!("{api}/api/status")).send().await
            && let Ok(s) = r.json::<Value>().await
            && s["indexed_block"].as_u64() >= Some(head)
        {
            return Ok(());
        }
        if Instant::now() > end {
            bail!("the indexer did not reach block {head} in {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Mines the pending transactions into one block.
async fn mine(provider: &DynProvider) -> Result<()> {
    provider.raw_request::<_, Value>("evm_mine".into(), ()).await?;
    Ok(())
}

/// Puts `n` create → accept → complete → approve lifecycles on chain, phase
/// by phase, mining every `chunk` transactions.
async fn generate(provider: &DynProvider, actors: &Actors, d: &Deployment, n: usize) -> Result<()> {
    let escrow = TaskEscrow::new(d.task_escrow, provider.clone());
    let sponsor = actors.sponsor.address();
    let executor = actors.agent(0);
    MockUSDC::new(d.token, provider.clone())
        .approve(d.task_escrow, U256::MAX)
        .from(sponsor)
        .send()
        .await?
        .with_timeout(Some(tessera_bindings::client::RECEIPT_TIMEOUT))
        .get_receipt()
        .await?;
    provider.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await?;
    let chunk = 400;
    // The chain runs with a zero base fee (see `run`), so one price paid
    // from start to end always suffices. (Re-reading the node's suggestion
    // after each block would chase its own tips upwards.)
    let gas_price = provider.get_gas_price().await?;
    let now = provider
        .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
        .await?
        .map(|b| b.header.timestamp)
        .unwrap_or_default();
    let spec = "data:application/json,{\"parent\":\"task:1\",\"spec\":\"Summarize\",\"capability\":\"summarize\"}";
    let mut nonce = provider.get_transaction_count(sponsor).await?;
    let first = provider.get_block_number().await? + 1;
    for i in 0..n {
        let params = CreateParams {
            r#ref: keccak256(format!("bench-{i}")),
            planId: keccak256(format!("bench-plan-{}", i / 10)),
            parentId: U256::ZERO,
            capability: tessera_bindings::capability::encode("summarize").expect("a valid name"),
            client: sponsor,
            executor,
            amount: 500_000,
            deadline: U40::from(now + 30 * 86_400),
            reviewWindow: 3600,
            specURI: spec.into(),
        };
        // Mined in bulk below: nothing to wait for per transaction.
        let _pending = escrow
            .createTask(params)
            .from(sponsor)
            .nonce(nonce)
            .gas(300_000)
            .gas_price(gas_price)
            .send()
            .await?;
        nonce += 1;
        if (i + 1) % chunk == 0 {
            mine(provider).await?;
        }
    }
    mine(provider).await?;
    let records = fold_all(provider, d, first).await?;
    // accept, complete (executor), approve (client = sponsor), each phase
    // on the state the previous one left.
    for phase in 0..3 {
        let records =
            if phase == 0 { records.clone() } else { fold_all(provider, d, first).await? };
        let (from, mut nonce) = match phase {
            2 => (sponsor, provider.get_transaction_count(sponsor).await?),
            _ => (executor, provider.get_transaction_count(executor).await?),
        };
        for (i, rec) in records.iter().enumerate() {
            let call = match phase {
                0 => escrow
                    .acceptTask(rec.id, rec.task.clone())
                    .from(from)
                    .into_transaction_request(),
                1 => escrow
                    .completeTask(
                        rec.id,
                        rec.task.clone(),
                        "data:application/json,{\"text\":\"done\"}".into(),
                    )
                    .from(from)
                    .into_transaction_request(),
                _ => escrow
                    .approvePayment(rec.id, rec.task.clone(), tessera_bindings::task::FULL_RATING)
                    .from(from)
                    .into_transaction_request(),
            };
            let tx = call.nonce(nonce).gas_limit(200_000).gas_price(gas_price);
            if let Err(e) = provider.send_transaction(tx).await {
                let balance = provider.get_balance(from).await.unwrap_or_default();
                bail!(
                    "phase {phase}, lifecycle {i}: {e} (gas price {gas_price}, balance of {from}: {balance})"
                );
            }
            nonce += 1;
            if (i + 1) % chunk == 0 {
                mine(provider).await?;
            }
        }
        mine(provider).await?;
    }
    provider.raw_request::<_, Value>("evm_setAutomine".into(), (true,)).await?;
    Ok(())
}

async fn fold_all(provider: &DynProvider, d: &Deployment, from: u64) -> Result<Vec<TaskRecord>> {
    let logs = provider.get_logs(&Filter::new().address(d.task_escrow).from_block(from)).await?;
    let mut by_id: std::collections::BTreeMap<U256, Vec<alloy::rpc::types::Log>> =
        Default::default();
    for l in logs {
        if let Some(ev) = tessera_bindings::task::decode_log(&l)
            && let Some(id) = TaskRecord::event_task_id(&ev)
        {
            by_id.entry(id).or_default().push(l);
        }
    }
    let mut out = Vec::new();
    for (id, logs) in by_id {
        out.push(TaskRecord::from_logs(id, &logs)?);
    }
    Ok(out)
}

/// What a held chain's folder records beside its state.
#[derive(Debug, Serialize, serde::Deserialize)]
struct HeldChain {
    lifecycles: usize,
    head: u64,
    events: usize,
    generate_secs: f64,
}

/// Runs the bench. With `hold`, the generated chain is kept in that folder
/// (`state.json` as anvil dumps it, `deployment.json`, `chain.json`) and a
/// later run with the same number of lifecycles loads it instead of
/// generating it again.
pub async fn run(
    opts: &ChainOptions,
    lifecycles: usize,
    live: usize,
    log: Option<&Path>,
    hold: Option<&Path>,
) -> Result<IndexerBench> {
    let held = match hold {
        Some(h) => held_chain(h, lifecycles)?,
        None => None,
    };
    // Blocks are filled back to back: a zero base fee stays zero, so the
    // generator's fixed gas price never falls behind it.
    let chain = LocalChain::start(&ChainOptions {
        base_fee: Some(0),
        load_state: held.as_ref().map(|(_, _, state)| state.clone()),
        ..opts.clone()
    })?;
    let actors = Actors::from_keys(&chain.keys())?;
    let provider = actors.provider(chain.endpoint_url());
    let dir = std::env::temp_dir().join(format!("tessera-bench-indexer-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let deployment_file = dir.join("deployment.json");
    let (deployment, meta) = match held {
        Some((deployment, meta, _)) => {
            let head = provider.get_block_number().await?;
            let events = count_events(&provider, &deployment).await?;
            if head != meta.head || events != meta.events {
                bail!(
                    "the kept chain did not load as kept (head {head}, {events} events; kept: head {}, {} events)",
                    meta.head,
                    meta.events
                );
            }
            (deployment, meta)
        }
        None => {
            let deployment = deploy::deploy(&provider, &actors, &DeployConfig::default()).await?;
            deploy::register_demo_agents(&provider, &actors, deployment.agent_registry).await?;
            let t = Instant::now();
            generate(&provider, &actors, &deployment, lifecycles).await?;
            let generate_secs = t.elapsed().as_secs_f64();
            let head = provider.get_block_number().await?;
            let events = count_events(&provider, &deployment).await?;
            let meta = HeldChain { lifecycles, head, events, generate_secs };
            if let Some(h) = hold {
                save_held(chain.endpoint_url().as_str(), h, &deployment, &meta).await?;
            }
            (deployment, meta)
        }
    };
    deployment.save(&deployment_file)?;
    let HeldChain { head, events, generate_secs, .. } = meta;
    let http = reqwest::Client::new();
    let rpc = chain.endpoint_url().to_string();

    // Backfill into SQLite, then follow live.
    let token = format!("bench-{}-{}", std::process::id(), tessera_db::now_ms());
    let db = format!("sqlite://{}", dir.join("index.db").display());
    let t = Instant::now();
    let (sqlite, api) = spawn_indexer(&deployment_file, &rpc, &db, log, &token)?;
    wait_indexed(&http, &api, head, Duration::from_secs(1800)).await?;
    let sqlite_backfill_secs = t.elapsed().as_secs_f64();

    // The live phase's tasks name their own executor; the webhook wants
    // their creations.
    let live_executor = actors.agent(1);
    let (hooks, hook_url) = Receiver::start().await?;
    register(&http, &api, &token, &hook_url, live_executor).await?;
    let mut lags = Vec::new();
    let mut d = tessera_anvil::lifecycle::Driver::new(provider.clone(), &actors, &deployment);
    d.scenario("live");
    for _ in 0..live {
        let params = d.params(live_executor, 400_000, "data:,live".into()).await?;
        let rec = d.create_with_permit(params).await?;
        let mined = Instant::now();
        let url = format!("{api}/api/tasks/{}", rec.id);
        loop {
            if http.get(&url).send().await.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            if mined.elapsed() > Duration::from_secs(30) {
                bail!("task {} never became visible", rec.id);
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        lags.push(mined.elapsed().as_secs_f64() * 1e3);
    }
    // Webhook lag, on as many tasks again: the task's id is known before
    // its transaction (the funder's and the reference's hash), so the API
    // is polled from before it is sent, and the moment it first answers is
    // not held back by the wait for the receipt.
    let mut hook_lags = Vec::new();
    let mut hook_after_sent = Vec::new();
    for _ in 0..live {
        let params = d.params(live_executor, 400_000, "data:,hooked".into()).await?;
        let id = task_id_of(actors.sponsor.address(), params.r#ref);
        let poll = tokio::spawn(first_answer(http.clone(), format!("{api}/api/tasks/{id}")));
        let sent = Instant::now();
        let rec = d.create_with_permit(params).await?;
        if rec.id != id {
            bail!("task {} was created where {id} was expected", rec.id);
        }
        let visible = poll.await??;
        let arrived = hooks.arrival(&id.to_string(), Duration::from_secs(30)).await?;
        hook_lags.push(signed_ms(arrived, visible));
        hook_after_sent.push(signed_ms(arrived, sent));
    }
    let rss_before_queries_mib = peak_rss_mib(sqlite.0.id());
    let plans = lifecycles / 10;
    let sqlite_queries = if plans > 0 { query_rows(&http, &api, plans).await? } else { Vec::new() };
    let sqlite_peak_rss_mib = peak_rss_mib(sqlite.0.id());
    drop(sqlite);
    for v in [&mut lags, &mut hook_lags, &mut hook_after_sent] {
        v.sort_by(f64::total_cmp);
    }

    // Backfill into PostgreSQL, when a server answers.
    let head_now = provider.get_block_number().await?;
    let events_now = count_events(&provider, &deployment).await?;
    let (postgres_backfill_secs, postgres_queries) = match postgres_scratch().await {
        Some(url) => {
            let t = Instant::now();
            let pg_log = log.map(|l| l.with_extension("postgres.log"));
            let (_pg, api) =
                spawn_indexer(&deployment_file, &rpc, &url, pg_log.as_deref(), &token)?;
            wait_indexed(&http, &api, head_now, Duration::from_secs(1800)).await?;
            let secs = t.elapsed().as_secs_f64();
            let rows = if plans > 0 { query_rows(&http, &api, plans).await? } else { Vec::new() };
            (Some(secs), Some(rows))
        }
        None => (None, None),
    };
    let _ = std::fs::remove_dir_all(&dir);
    Ok(IndexerBench {
        lifecycles,
        events,
        blocks: head - deployment.deploy_block,
        generate_secs,
        sqlite_backfill_secs,
        sqlite_events_per_sec: events as f64 / sqlite_backfill_secs,
        sqlite_peak_rss_mib,
        rss_before_queries_mib,
        postgres_backfill_secs,
        postgres_events_per_sec: postgres_backfill_secs.map(|s| events_now as f64 / s),
        live_lag_p50_ms: percentile(&lags, 0.5),
        live_lag_p99_ms: percentile(&lags, 0.99),
        live_samples: lags.len(),
        webhook_lag_p50_ms: percentile(&hook_lags, 0.5),
        webhook_lag_p99_ms: percentile(&hook_lags, 0.99),
        webhook_after_sent_p99_ms: percentile(&hook_after_sent, 0.99),
        webhook_samples: hook_lags.len(),
        sqlite_queries,
        postgres_queries,
    })
}

/// The id the escrow gives the task `funder` creates under `reference`:
/// the hash of both, ABI-encoded.
fn task_id_of(funder: alloy::primitives::Address, reference: alloy::primitives::B256) -> U256 {
    let mut words = [0u8; 64];
    words[12..32].copy_from_slice(funder.as_slice());
    words[32..].copy_from_slice(reference.as_slice());
    U256::from_be_bytes(keccak256(words).0)
}

/// The moment `url` first answers 2xx, polled every 0.5 ms for 30 s at
/// most.
async fn first_answer(http: reqwest::Client, url: String) -> Result<Instant> {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if http.get(&url).send().await.is_ok_and(|r| r.status().is_success()) {
            return Ok(Instant::now());
        }
        if Instant::now() > end {
            bail!("{url} never answered");
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

/// `later - earlier` in ms, negative when `later` came first.
fn signed_ms(later: Instant, earlier: Instant) -> f64 {
    match later.checked_duration_since(earlier) {
        Some(d) => d.as_secs_f64() * 1e3,
        None => -(earlier - later).as_secs_f64() * 1e3,
    }
}

async fn count_events(provider: &DynProvider, d: &Deployment) -> Result<usize> {
    Ok(provider
        .get_logs(
            &Filter::new()
                .address(vec![d.task_escrow, d.agent_registry])
                .from_block(d.deploy_block),
        )
        .await?
        .len())
}

/// Writes the chain's state, deployment and figures into `dir`.
async fn save_held(endpoint: &str, dir: &Path, d: &Deployment, meta: &HeldChain) -> Result<()> {
    use std::io::Read;
    std::fs::create_dir_all(dir)?;
    // anvil dumps gzip-compressed JSON and loads plain JSON. A big chain's
    // dump takes longer than the provider's per-request timeout on a busy
    // machine, so it is asked for directly, with minutes to answer.
    let answer: Value = reqwest::Client::new()
        .post(endpoint)
        .timeout(Duration::from_secs(600))
        .json(&serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "anvil_dumpState", "params": [] }))
        .send()
        .await?
        .json()
        .await?;
    let state: alloy::primitives::Bytes = match answer.get("result") {
        Some(r) => serde_json::from_value(r.clone())?,
        None => bail!("anvil_dumpState answered {answer}"),
    };
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&state[..]).read_to_end(&mut json)?;
    std::fs::write(dir.join("state.json"), json)?;
    d.save(dir.join("deployment.json"))?;
    std::fs::write(dir.join("chain.json"), serde_json::to_vec_pretty(meta)?)?;
    eprintln!("chain of {} lifecycles kept in {}", meta.lifecycles, dir.display());
    Ok(())
}

/// The chain kept in `dir`, when it holds `lifecycles` lifecycles: its
/// deployment, figures and state file.
fn held_chain(
    dir: &Path,
    lifecycles: usize,
) -> Result<Option<(Deployment, HeldChain, std::path::PathBuf)>> {
    let Ok(text) = std::fs::read(dir.join("chain.json")) else { return Ok(None) };
    let meta: HeldChain = serde_json::from_slice(&text)?;
    if meta.lifecycles != lifecycles {
        eprintln!(
            "{} holds {} lifecycles, not {lifecycles}: generating a new chain",
            dir.display(),
            meta.lifecycles
        );
        return Ok(None);
    }
    let state = dir.join("state.json");
    if !state.is_file() {
        eprintln!("{} has no state.json: generating a new chain", dir.display());
        return Ok(None);
    }
    eprintln!("loading the chain of {lifecycles} lifecycles kept in {}", dir.display());
    Ok(Some((Deployment::load(dir.join("deployment.json"))?, meta, state)))
}
