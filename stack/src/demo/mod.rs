//! `make demo`: start anvil, deploy, register the demo agents and run one full
//! task lifecycle through the bindings, printing each step's transaction; then
//! start a worker per demo agent and the orchestrator, run a translate →
//! summarize chain and a three-step plan through the runner, a brief done by
//! an agent that hires a translator through a child task of its own, and
//! print each plan's lineage rebuilt from chain events.

use std::fmt::Write as _;

use alloy::primitives::U256;
use tessera_bindings::{AgentRegistry, capability, deployment::Deployment, offers, usdc::Usdc};

use tessera_anvil::{
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DeployConfig},
    lifecycle::Driver,
};

use crate::Error;

mod delegation;
mod dispute;
mod nested;

/// The material the demo's sub-task summarizes.
pub(crate) const ARTICLE: &str = "Tessera turns a brief into a plan of small tasks that agents can \
settle one by one. Each task locks the sponsor's USDC in an escrow contract before any \
work starts. The executor agent accepts the task, does the work and delivers a result \
on chain. The client then approves the result, and the escrow pays the executor. If the \
client stays silent, payment releases by itself once the review window has passed. A \
disputed result goes to an arbiter, whose ruling can split the payment in basis points. \
Because every step emits an event, the whole plan can be rebuilt from the chain alone.";

/// What the demo did, for printing and for tests.
#[derive(Debug, Clone)]
pub struct DemoOutcome {
    /// Where the contracts were deployed.
    pub deployment: Deployment,
    /// The printed transcript.
    pub transcript: String,
    /// Executor balance gained.
    pub executor_paid: U256,
    /// The port the demo's anvil listened on (chosen by the kernel unless
    /// the options named one).
    pub chain_port: u16,
}

/// Runs the demo on its own anvil (stopped when this returns, error or not).
pub async fn run(opts: &ChainOptions) -> Result<DemoOutcome, Error> {
    let chain = LocalChain::start(opts)?;
    let chain_port = chain.port();
    let actors = Actors::from_keys(&chain.keys())?;
    let provider = actors.provider(chain.endpoint_url());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "anvil listening on {} (chain id {})",
        chain.endpoint_url(),
        chain.chain_id()
    );

    let deployment = deploy::deploy(&provider, &actors, &DeployConfig::default()).await?;
    let _ = writeln!(
        out,
        "deployed at block {}: TaskEscrow {}, AgentRegistry {}, MockUSDC {}",
        deployment.deploy_block,
        deployment.task_escrow,
        deployment.agent_registry,
        deployment.token
    );
    deploy::register_demo_agents(&provider, &actors, deployment.agent_registry).await?;
    let registry = AgentRegistry::new(deployment.agent_registry, &provider);
    let (agent, price) = cheapest_active(&registry, "summarize").await?;
    let _ = writeln!(
        out,
        "registered {} demo agents; cheapest active `summarize`: {} at {} USDC",
        deploy::DEMO_AGENTS.len(),
        agent,
        Usdc::from_base_units(price)
    );

    let mut d = Driver::new(provider.clone(), &actors, &deployment);
    d.scenario("demo");
    let instruction = "Summarize the article in three bullets";
    let envelope = serde_json::json!({
        "parent": "plan:demo",
        "spec": instruction,
        "source": ARTICLE,
    });
    let spec_uri = format!("data:application/json,{envelope}");
    let params = d.params(agent, price, spec_uri).await?;
    let before = d.balance(agent).await?;
    let mut rec = d.create_with_permit(params).await?;

    // The executor does the work: the offline summarizer on the envelope's source.
    let input =
        tessera_workers::TaskInput { spec: instruction, source: Some(ARTICLE), inputs: &[] };
    let output = tessera_workers::run("summarize", &input)?;
    let result = output.to_json();
    d.deliver(&mut rec, &format!("data:application/json,{result}")).await?;
    let r = d.escrow.approve(actors.client.address(), &mut rec).await?;
    d.record("approvePayment", &r);
    let after = d.balance(agent).await?;

    let _ = writeln!(out, "\nsummary delivered by {agent}:");
    for bullet in result["bullets"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  - {}", bullet.as_str().unwrap_or_default());
    }
    let _ = writeln!(out, "\ntask {:#x}", rec.id);
    let _ = writeln!(out, "{:<22} {:<68} {:>8}", "step", "tx hash", "gas");
    for s in &d.steps {
        let _ = writeln!(out, "{:<22} {:<68} {:>8}", s.step, s.tx.to_string(), s.gas);
    }
    let total: u64 = d.steps.iter().map(|s| s.gas).sum();
    let _ = writeln!(out, "{:<22} {:<68} {:>8}", "lifecycle total", "", total);
    let _ = writeln!(
        out,
        "\nstatus {}; executor paid {} USDC; the escrow holds {} USDC of task funds",
        rec.status(),
        Usdc::from_u256(after - before)?,
        Usdc::from_u256(
            d.balance(deployment.task_escrow).await? - U256::from(deploy::ESCROW_SEED)
        )?
    );

    Box::pin(plans(&chain, &actors, &deployment, &mut out)).await?;
    drop(chain);
    let _ = writeln!(out, "anvil stopped");
    Ok(DemoOutcome { deployment, transcript: out, executor_paid: after - before, chain_port })
}

/// The plans part of the demo: workers, orchestrator, two plans, lineage.
async fn plans(
    chain: &LocalChain,
    actors: &Actors,
    deployment: &Deployment,
    out: &mut String,
) -> Result<(), Error> {
    use tessera_orchestrator::{
        plan::{Plan, ReviewMode, SubTask},
        runner::RunnerConfig,
        store::Store,
    };

    use crate::{demo_homes::Homes, indexed_tree, spawn_worker_at, start_orchestrator};
    let root = std::env::temp_dir().join(format!("tessera-demo-{}", std::process::id()));
    let homes = Homes::open(root).await?;
    homes.describe(out);
    let mut tasks = Vec::new();
    for (agent, home) in deploy::DEMO_AGENTS.iter().zip(&homes.agents) {
        tasks.push(spawn_worker_at(&chain.endpoints(), actors, deployment, agent, home).await?);
    }
    let store =
        Store::connect(&format!("sqlite://{}", homes.sponsor.dir.join("runs.db").display()))
            .await?;
    let (orch, heads) = start_orchestrator(
        &chain.endpoints(),
        actors,
        deployment,
        store,
        homes.sponsor.sources.clone(),
        RunnerConfig::default(),
    )
    .await?;
    tasks.push(heads);
    let _ = writeln!(
        out,
        "
{} workers following new blocks; orchestrator running",
        deploy::DEMO_AGENTS.len()
    );

    // Executors: the cheapest active agent per capability, from the registry.
    let provider = actors.provider(chain.endpoint_url());
    let registry = AgentRegistry::new(deployment.agent_registry, &provider);
    let mut cheapest = std::collections::HashMap::new();
    for cap in ["translate", "summarize", "extract-entities", "sentiment-classify"] {
        let (agent, price) = cheapest_active(&registry, cap).await?;
        cheapest.insert(cap, (agent, Usdc::from_base_units(price)));
    }
    let step = |index: u32, cap: &'static str, spec: &str, deps: &[u32]| SubTask {
        index,
        capability: cap.into(),
        spec: spec.into(),
        executor: Some(cheapest[cap].0),
        cost: cheapest[cap].1,
        deadline_offset_secs: 3600,
        depends_on: deps.to_vec(),
        ..Default::default()
    };
    let mut chain_plan = Plan::new(
        Plan::id_from_label("demo: translate then summarize"),
        Usdc::from_whole(5),
        ReviewMode::Auto,
    );
    chain_plan.source = Some(ARTICLE.into());
    chain_plan.subtasks = vec![
        step(0, "translate", "Translate the article to French", &[]),
        step(1, "summarize", "Summarize the translation in three bullets", &[0]),
    ];
    let mut fan_in = Plan::new(
        Plan::id_from_label("demo: three-step brief"),
        Usdc::from_whole(5),
        ReviewMode::Auto,
    );
    fan_in.source = Some(ARTICLE.into());
    fan_in.subtasks = vec![
        step(0, "extract-entities", "List the entities the article names", &[]),
        step(1, "sentiment-classify", "Classify the article's tone", &[]),
        step(2, "summarize", "Summarize the findings for the sponsor", &[0, 1]),
    ];

    let mut scene =
        Scene { chain, actors, deployment, orch: &orch, homes: &homes, tasks: &mut tasks, out };
    for (label, plan) in [("translate → summarize", chain_plan), ("three-step plan", fan_in)] {
        let _ = writeln!(scene.out, "\nplan {label} ({}): approved", plan.id);
        let (_, view) = drive(&mut scene, &plan, label).await?;
        if let Some(last) = view.subtasks.last().and_then(|s| s.output.clone()) {
            let _ = writeln!(
                scene.out,
                "  final output: {}",
                last.chars().take(160).collect::<String>()
            );
        }
        let tree = indexed_tree(chain, deployment, plan.id, homes.indexer.sources.clone()).await?;
        let _ = write!(
            scene.out,
            "  tree rebuilt by the indexer from chain events:\n{}",
            indent(&tree)
        );
    }
    nested::nested_plan(&mut scene).await?;
    delegation::delegation(&mut scene).await?;
    dispute::dispute(&mut scene).await?;
    Box::pin(crate::demo_homes::between_homes(&mut scene)).await?;
    for t in tasks {
        t.abort();
    }
    Ok(())
}

/// What the demo's later scenes share: the chain with its actors and
/// contracts, the orchestrator and blob store, the background tasks to stop
/// at the end, and the transcript.
pub(crate) struct Scene<'a> {
    pub(crate) chain: &'a LocalChain,
    pub(crate) actors: &'a Actors,
    pub(crate) deployment: &'a Deployment,
    pub(crate) orch: &'a std::sync::Arc<tessera_orchestrator::runner::Orchestrator>,
    pub(crate) homes: &'a crate::demo_homes::Homes,
    pub(crate) tasks: &'a mut Vec<tokio::task::JoinHandle<()>>,
    pub(crate) out: &'a mut String,
}

/// Proposes and approves `plan`, prints each sub-task event as it comes
/// (with its block and transaction; a decline with its reason) until the
/// run ends (60 s at most), then how it ended; returns that and the run's view.
pub(crate) async fn drive(
    scene: &mut Scene<'_>,
    plan: &tessera_orchestrator::plan::Plan,
    label: &str,
) -> Result<(String, tessera_orchestrator::runner::RunView), Error> {
    let id = plan.id.to_string();
    let mut events = scene.orch.subscribe();
    scene.orch.propose(plan.clone()).await?;
    scene.orch.approve(&id, None).await?;
    let started = std::time::Instant::now();
    let out = &mut *scene.out;
    let wait = async {
        while let Ok(ev) = events.recv().await {
            if ev.run_id != id {
                continue;
            }
            let body: serde_json::Value = serde_json::from_str(&ev.body).unwrap_or_default();
            if ev.kind.starts_with("subtask_") {
                let _ = writeln!(
                    out,
                    "  #{} {:<18} block {:>3}  tx {}",
                    body["index"],
                    ev.kind,
                    body["block"],
                    body["tx_hash"].as_str().unwrap_or("")
                );
            }
            if ev.kind == "subtask_declined" {
                let _ = writeln!(
                    out,
                    "     declined on chain by {}: {}",
                    body["executor"].as_str().unwrap_or("?"),
                    body["reason"].as_str().unwrap_or("?")
                );
            }
            if ev.kind == "nested_completed" {
                let _ = writeln!(
                    out,
                    "  nested plan {} settled: paid {} of its {} share",
                    body["path"].as_str().unwrap_or("?"),
                    usdc_text(&body["paid"]),
                    usdc_text(&body["budget"])
                );
            }
            if ev.kind == "recovery_applied" {
                let _ = writeln!(out, "     recovery: {}", body["reason"].as_str().unwrap_or("?"));
            }
            if tessera_orchestrator::events::is_final(&ev.kind) {
                return ev.kind;
            }
        }
        "stream closed".to_owned()
    };
    let outcome =
        tokio::time::timeout(std::time::Duration::from_secs(60), wait).await.map_err(|_| {
            Error::Unfinished { plan: format!("plan {label}"), end: "finish", secs: 60 }
        })?;
    let view = scene.orch.view(&id).await?;
    let _ = writeln!(
        scene.out,
        "  {outcome} in {} ms; paid {} USDC",
        started.elapsed().as_millis(),
        view.spend.paid
    );
    Ok((outcome, view))
}

/// An amount field of an event (a string of base units) in USDC.
pub(crate) fn usdc_text(v: &serde_json::Value) -> String {
    v.as_str()
        .and_then(|s| s.parse::<u128>().ok())
        .map_or_else(|| "?".into(), |u| format!("{} USDC", Usdc::from_base_units(u)))
}

/// `text` indented four spaces, line by line.
pub(crate) fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// The registry's cheapest active offer of `cap`, read in bounded pages.
pub(crate) async fn cheapest_active<P: alloy::providers::Provider>(
    registry: &AgentRegistry::AgentRegistryInstance<P>,
    cap: &str,
) -> Result<(alloy::primitives::Address, u128), Error> {
    let word = capability::encode(cap).expect("demo capability names are valid");
    let read =
        offers::offers_for(registry, word, offers::DEFAULT_MAX_OFFERS).await.map_err(|e| {
            tessera_anvil::Error::Contract {
                context: "querying the registry".into(),
                source: Box::new(e),
            }
        })?;
    offers::cheapest_active(&read.offers, None).ok_or_else(|| Error::NoOffer(cap.to_owned()))
}
