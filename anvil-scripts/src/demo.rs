//! `make demo`: start anvil, deploy, register the demo agents and run one full
//! task lifecycle through the bindings, printing each step's transaction.

use std::fmt::Write as _;

use alloy::primitives::U256;
use tessera_bindings::{AgentRegistry, capability, deployment::Deployment};

use crate::{
    Error,
    actors::Actors,
    chain::{ChainOptions, LocalChain},
    deploy::{self, DeployConfig},
    lifecycle::Driver,
};

/// The material the demo's sub-task summarizes.
const ARTICLE: &str = "Tessera turns a brief into a plan of small tasks that agents can \
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
}

/// Runs the demo on its own anvil (stopped when this returns, error or not).
pub async fn run(opts: &ChainOptions) -> Result<DemoOutcome, Error> {
    let chain = LocalChain::start(opts)?;
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
    let summarize = capability::encode("summarize").expect("valid name");
    let cheapest = registry
        .cheapestActive(summarize)
        .call()
        .await
        .map_err(crate::contract_err("querying the registry"))?;
    let _ = writeln!(
        out,
        "registered {} demo agents; cheapest active `summarize`: {} at {} USDC",
        deploy::DEMO_AGENTS.len(),
        cheapest.agent,
        format_usdc(U256::from(cheapest.price))
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
    let params = d.params(cheapest.agent, cheapest.price, spec_uri).await?;
    let before = d.balance(cheapest.agent).await?;
    let mut rec = d.create_with_permit(params).await?;

    // The executor does the work: the offline summarizer on the envelope's source.
    let input =
        tessera_workers::TaskInput { spec: instruction, source: Some(ARTICLE), inputs: &[] };
    let output = tessera_workers::run("summarize", &input)?;
    let result = output.to_json();
    d.deliver(&mut rec, &format!("data:application/json,{result}")).await?;
    let r = d.escrow.approve(actors.client.address(), &mut rec).await?;
    d.record("approvePayment", &r);
    let after = d.balance(cheapest.agent).await?;

    let _ = writeln!(out, "\nsummary delivered by {}:", cheapest.agent);
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
        format_usdc(after - before),
        format_usdc(d.balance(deployment.task_escrow).await? - U256::from(deploy::ESCROW_SEED))
    );
    drop(chain);
    let _ = writeln!(out, "anvil stopped");
    Ok(DemoOutcome { deployment, transcript: out, executor_paid: after - before })
}

/// Formats 6-decimal base units as USDC (`2500000` → `2.500000`).
pub fn format_usdc(units: U256) -> String {
    let million = U256::from(1_000_000u64);
    format!("{}.{:06}", units / million, (units % million).to::<u64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_usdc() {
        assert_eq!(format_usdc(U256::from(2_500_000u64)), "2.500000");
        assert_eq!(format_usdc(U256::from(7u64)), "0.000007");
        assert_eq!(format_usdc(U256::ZERO), "0.000000");
    }
}
