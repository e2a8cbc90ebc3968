//! The gas bench: every lifecycle path on a fresh local chain, measured from
//! transaction receipts (`gasUsed`, which includes the 21,000 base fee, calldata
//! and refunds — what a sender pays for).

use alloy::{primitives::Address, providers::DynProvider};
use serde::Serialize;
use tessera_bindings::deployment::Deployment;

use crate::{
    Error,
    actors::Actors,
    lifecycle::{Driver, Step, spec_of_len},
};

/// Task amount used throughout (2.5 USDC).
const AMOUNT: u128 = 2_500_000;
/// The dispute scenario whose split ruling is final at once.
const DISPUTE_SPLIT: &str = "dispute, verdict split 60/40, final at once";
/// The same, on work delivered in one call.
const DISPUTE_SPLIT_DELIVER: &str = "dispute, verdict split 60/40, final at once, deliver";
/// Tasks in the batch scenarios.
pub const BATCH: usize = 10;
/// Goal for the happy lifecycle (permit, 60-byte spec, repeat run).
pub const GOAL_HAPPY: u64 = 200_000;
/// Goal for a dispute whose split ruling is final at once
/// (create + accept + complete + dispute + resolve).
pub const GOAL_DISPUTE_SPLIT: u64 = 250_000;
/// Goal per task in a batch of [`BATCH`] (create + accept + complete +
/// approve, creation and approvals batched).
pub const GOAL_BATCH_PER_TASK: u64 = 150_000;
/// Gas of one create→accept→complete→approve lifecycle on the contract this
/// design descends from (strings in storage), for the comparison line.
pub const REFERENCE_LIFECYCLE_GAS: u64 = 454_000;

/// One lifecycle's total and its parts.
#[derive(Debug, Clone, Serialize)]
pub struct Lifecycle {
    /// Scenario name.
    pub scenario: String,
    /// Spec URI length in bytes.
    pub spec_len: usize,
    /// create + accept + complete + approve.
    pub total: u64,
}

/// Everything the bench measured.
#[derive(Debug, Clone, Serialize)]
pub struct GasReport {
    /// Every mined step.
    pub steps: Vec<Step>,
    /// Lifecycle totals of the permit happy path.
    pub lifecycles: Vec<Lifecycle>,
    /// Extra create gas per spec-URI byte (repeat runs, 600 vs 60 bytes).
    pub spec_uri_gas_per_byte: f64,
    /// Repeat-run lifecycle total with a 60-byte spec URI.
    pub happy_path_repeat_total: u64,
    /// That total as a fraction of [`REFERENCE_LIFECYCLE_GAS`].
    pub ratio_to_reference: f64,
    /// The same lifecycle with `deliver` (accept and complete in one call).
    pub happy_path_deliver_total: u64,
    /// Create + accept + complete + dispute + resolve, the split ruling final at once.
    pub dispute_split_final_total: u64,
    /// The same on work delivered with `deliver`, as the workers deliver.
    pub dispute_split_deliver_total: u64,
    /// Per task in a batch of [`BATCH`]: one create, accept + complete each, one approval.
    pub batch_per_task: u64,
    /// Per task in a batch of [`BATCH`] delivered with `deliver`.
    pub batch_deliver_per_task: u64,
    /// An agent's ERC-8004 identity and one feedback, when the deployment
    /// has the registries.
    pub erc8004: Option<crate::gas_erc8004::Erc8004Gas>,
    /// The grant path, all in, when the deployment has the registries.
    pub grants: Option<crate::gas_grants::GrantGas>,
}

/// Runs every scenario on `deployment` (a fresh one: the first run is measured cold).
pub async fn run(
    provider: DynProvider,
    actors: &Actors,
    deployment: &Deployment,
) -> Result<GasReport, Error> {
    crate::deploy::register_demo_agents(&provider, actors, deployment.agent_registry).await?;
    let mut d = Driver::new(provider, actors, deployment);
    let exec = actors.agent(0);
    let other = actors.agent(1);
    let client = actors.client.address();
    let anyone = actors.agents[4].address();
    let mut lifecycles = Vec::new();

    // Permit happy path. "first": nothing warm (the first task on the chain, or
    // an executor never paid before); "repeat": the same executor again. The
    // deploy seeds the escrow with dust, so its balance slot is never zero.
    let runs: [(usize, &str, Address); 4] = [
        (60, "first run", exec),
        (60, "repeat run", exec),
        (600, "first run", other),
        (600, "repeat run", other),
    ];
    for (len, run, executor) in runs {
        let name = format!("happy path, permit, {len}-byte spec, {run}");
        d.scenario(&name);
        let start = d.steps.len();
        let params = d.params(executor, AMOUNT, spec_of_len(len)).await?;
        let mut rec = d.create_with_permit(params).await?;
        d.deliver(&mut rec, "data:text/plain,- point one\n- point two\n- point three").await?;
        let r = d.escrow.approve(client, &mut rec).await?;
        d.record("approvePayment", &r);
        let total = d.steps[start..].iter().map(|s| s.gas).sum();
        lifecycles.push(Lifecycle { scenario: name, spec_len: len, total });
    }

    // The executor fast path: accept and complete in one call.
    let name = "happy path, permit, 60-byte spec, deliver, repeat run";
    d.scenario(name);
    let start = d.steps.len();
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let mut rec = d.create_with_permit(params).await?;
    d.deliver_at_once(&mut rec, "data:text/plain,- point one\n- point two\n- point three").await?;
    let r = d.escrow.approve(client, &mut rec).await?;
    d.record("approvePayment", &r);
    let happy_path_deliver_total = d.steps[start..].iter().map(|s| s.gas).sum();
    lifecycles.push(Lifecycle {
        scenario: name.into(),
        spec_len: 60,
        total: happy_path_deliver_total,
    });

    // A wave of a plan: one creation and one approval for the whole batch.
    let batch = async |d: &mut Driver<'_>, name: &str, at_once: bool| -> Result<u64, Error> {
        d.scenario(name);
        let start = d.steps.len();
        let mut params = Vec::with_capacity(BATCH);
        for _ in 0..BATCH {
            params.push(d.params(exec, AMOUNT, spec_of_len(60)).await?);
        }
        let mut recs = d.create_many_with_permit(params).await?;
        for rec in &mut recs {
            if at_once {
                d.deliver_at_once(rec, "data:text/plain,done").await?;
            } else {
                d.deliver(rec, "data:text/plain,done").await?;
            }
        }
        d.approve_many(&mut recs).await?;
        let total: u64 = d.steps[start..].iter().map(|s| s.gas).sum();
        Ok(total / BATCH as u64)
    };
    let batch_per_task =
        batch(&mut d, "batch of 10, permit, accept + complete, approvals batched", false).await?;
    let batch_deliver_per_task =
        batch(&mut d, "batch of 10, permit, deliver, approvals batched", true).await?;

    // Prior-approval path.
    d.scenario("happy path, prior approval, 60-byte spec");
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let mut rec = d.create_with_approval(params).await?;
    d.deliver(&mut rec, "data:text/plain,done").await?;
    let r = d.escrow.approve(client, &mut rec).await?;
    d.record("approvePayment", &r);

    // Auto-release after the review window.
    d.scenario("auto-release after review window");
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let mut rec = d.create_with_permit(params).await?;
    d.deliver(&mut rec, "data:text/plain,done").await?;
    d.advance(3601).await?;
    let r = d.escrow.release(anyone, &mut rec).await?;
    d.record("releasePayment", &r);

    // Verdicts with an appeal window: ruling, then finalize after the window.
    let arbiter = actors.arbiter.address();
    for (kind, bps) in [("executor", 10_000u16), ("client", 0), ("split 60/40", 6_000)] {
        d.scenario(format!("dispute, verdict {kind}, finalized after appeal window"));
        let mut rec = d.disputed(exec, AMOUNT).await?;
        let r = d.escrow.resolve(arbiter, &mut rec, bps, "data:text/plain,rationale").await?;
        d.record("resolveDispute", &r);
        d.advance(u64::from(rec.task.appealWindow) + 1).await?;
        let r = d.escrow.finalize(anyone, &mut rec).await?;
        d.record("finalizeRuling", &r);
    }

    // Appeal that overturns the ruling.
    d.scenario("dispute, ruling for client, appealed, appeal for executor");
    let mut rec = d.disputed(exec, AMOUNT).await?;
    let r = d.escrow.resolve(arbiter, &mut rec, 0, "data:text/plain,refund").await?;
    d.record("resolveDispute", &r);
    let r = d.escrow.appeal(exec, &mut rec, "data:text/plain,the summary was on topic").await?;
    d.record("appealRuling", &r);
    let r = d
        .escrow
        .resolve_appeal(actors.appeal_arbiter.address(), &mut rec, 10_000, "data:text/plain,pay")
        .await?;
    d.record("resolveAppeal", &r);

    // Dispute the arbiter never rules on.
    d.scenario("dispute left unruled, default refund");
    let mut rec = d.disputed(exec, AMOUNT).await?;
    d.advance(u64::from(rec.task.disputeWindow) + 1).await?;
    let r = d.escrow.claim_default(anyone, &mut rec).await?;
    d.record("claimDisputeDefault", &r);

    // Verdicts final at once (appeal window zero).
    let escrow = d.escrow.contract().clone();
    let dispute_window =
        escrow.disputeWindow().call().await.map_err(crate::contract_err("reading windows"))?;
    let appeal_ruling_window =
        escrow.appealRulingWindow().call().await.map_err(crate::contract_err("reading windows"))?;
    crate::deploy::confirm(
        escrow
            .setWindows(dispute_window, 0, appeal_ruling_window)
            .from(actors.deployer.address())
            .send()
            .await,
        "setting the appeal window to zero",
    )
    .await?;
    for (kind, bps) in [("executor", 10_000u16), ("client", 0), ("split 60/40", 6_000)] {
        d.scenario(format!("dispute, verdict {kind}, final at once"));
        let mut rec = d.disputed(exec, AMOUNT).await?;
        let r = d.escrow.resolve(arbiter, &mut rec, bps, "data:text/plain,rationale").await?;
        d.record("resolveDispute", &r);
    }
    // The same split on work delivered in one call, as the workers deliver.
    d.scenario(DISPUTE_SPLIT_DELIVER);
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let mut rec = d.create_with_permit(params).await?;
    d.deliver_at_once(&mut rec, "data:text/plain,an unhelpful answer").await?;
    let r = d.escrow.dispute(client, &mut rec, "data:text/plain,off topic").await?;
    d.record("disputeTask", &r);
    let r = d.escrow.resolve(arbiter, &mut rec, 6_000, "data:text/plain,rationale").await?;
    d.record("resolveDispute", &r);

    // Expiry refund, cancel, reassign, decline.
    d.scenario("expiry refund");
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let mut rec = d.create_with_permit(params).await?;
    d.advance(24 * 3600 + 1).await?;
    let r = d.escrow.refund_expired(anyone, &mut rec).await?;
    d.record("refundExpired", &r);

    d.scenario("cancel before acceptance");
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let mut rec = d.create_with_permit(params).await?;
    let r = d.escrow.cancel(client, &mut rec).await?;
    d.record("cancelTask", &r);

    d.scenario("reassign a never-accepted task");
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let mut rec = d.create_with_permit(params).await?;
    let deadline = d.now().await? + 2 * 24 * 3600;
    let cap = d.capability;
    let r = d.escrow.reassign(client, &mut rec, other, deadline, cap).await?;
    d.record("reassignTask", &r);

    d.scenario("decline before acceptance");
    let params = d.params(exec, AMOUNT, spec_of_len(60)).await?;
    let rec = d.create_with_permit(params).await?;
    let pending =
        d.escrow.send_decline(exec, &rec, "data:application/json,{\"reason\":\"busy\"}").await?;
    let r = d.escrow.mined(pending).await?;
    d.record("declineTask", &r);

    let erc8004 = crate::gas_erc8004::run(&mut d, actors).await?;
    let grants = match &erc8004 {
        Some(e) => Some(crate::gas_grants::run(&mut d, actors, exec, e.agent_id).await?),
        None => None,
    };

    let create_gas = |scenario: &str| {
        d.steps
            .iter()
            .find(|s| s.scenario == scenario && s.step == "createTaskWithPermit")
            .map(|s| s.gas)
    };
    let short = create_gas("happy path, permit, 60-byte spec, repeat run").unwrap_or_default();
    let long = create_gas("happy path, permit, 600-byte spec, repeat run").unwrap_or_default();
    let spec_uri_gas_per_byte = (long as f64 - short as f64) / 540.0;
    let happy_path_repeat_total = lifecycles[1].total;
    let scenario_total =
        |name: &str| d.steps.iter().filter(|s| s.scenario == name).map(|s| s.gas).sum::<u64>();
    let dispute_split_final_total = scenario_total(DISPUTE_SPLIT);
    let dispute_split_deliver_total = scenario_total(DISPUTE_SPLIT_DELIVER);
    Ok(GasReport {
        happy_path_deliver_total,
        dispute_split_final_total,
        dispute_split_deliver_total,
        batch_per_task,
        batch_deliver_per_task,
        erc8004,
        grants,
        steps: d.steps,
        lifecycles,
        spec_uri_gas_per_byte,
        happy_path_repeat_total,
        ratio_to_reference: happy_path_repeat_total as f64 / REFERENCE_LIFECYCLE_GAS as f64,
    })
}

impl GasReport {
    /// The report as a plain-text table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let width = self.steps.iter().map(|s| s.scenario.len()).max().unwrap_or(10);
        out += &format!("{:width$}  {:<22} {:>9}\n", "scenario", "step", "gasUsed");
        out += &format!("{}\n", "-".repeat(width + 34));
        let mut last = "";
        for s in &self.steps {
            let name = if s.scenario == last { "" } else { s.scenario.as_str() };
            out += &format!("{name:width$}  {:<22} {:>9}\n", s.step, s.gas);
            last = &s.scenario;
        }
        out += "\nlifecycle totals (create + accept + complete + approve):\n";
        for l in &self.lifecycles {
            out += &format!("  {:<50} {:>9}\n", l.scenario, l.total);
        }
        out += &format!(
            "\nhappy path, repeat run: {} gas = {:.2} x the {} of the reference design\n",
            self.happy_path_repeat_total, self.ratio_to_reference, REFERENCE_LIFECYCLE_GAS
        );
        out += "\nagainst the goals:\n";
        let mut goal = |what: &str, gas: u64, goal: u64| {
            let verdict = if gas <= goal { "meets" } else { "MISSES" };
            out += &format!(
                "  {what:<62} {gas:>9}  goal <= {goal:>7}  {:.2} x  {verdict}\n",
                gas as f64 / goal as f64
            );
        };
        goal(
            "happy lifecycle, accept + complete (permit, 60-byte spec, repeat)",
            self.happy_path_repeat_total,
            GOAL_HAPPY,
        );
        goal("happy lifecycle with deliver", self.happy_path_deliver_total, GOAL_HAPPY);
        goal(
            "dispute, split ruling final at once",
            self.dispute_split_final_total,
            GOAL_DISPUTE_SPLIT,
        );
        goal(
            "dispute, split ruling final at once, deliver",
            self.dispute_split_deliver_total,
            GOAL_DISPUTE_SPLIT,
        );
        goal(
            "per task, batch of 10 (accept + complete, approvals batched)",
            self.batch_per_task,
            GOAL_BATCH_PER_TASK,
        );
        goal(
            "per task, batch of 10 with deliver",
            self.batch_deliver_per_task,
            GOAL_BATCH_PER_TASK,
        );
        out += &format!(
            "spec-URI slope: {:.1} gas per byte (target <= 30; reference ~723)\n",
            self.spec_uri_gas_per_byte
        );
        if let Some(e) = &self.erc8004 {
            out += &format!(
                "\nERC-8004, once per agent: register {} + setAgentURI {} ({}-byte file URI) + \
                 setAgentWallet {} + linkIdentity {} = {} gas\nERC-8004 giveFeedback: {} gas\n\
                 settlement-backed feedback: per task {} gas ({}-byte proof URI); \
                 per plan, 5 tasks of one executor {} gas ({} bytes; {} a task)\n",
                e.register,
                e.set_agent_uri,
                e.registration_uri_len,
                e.set_agent_wallet,
                e.link_identity,
                e.identity_total,
                e.give_feedback,
                e.feedback_per_task,
                e.per_task_uri_len,
                e.feedback_per_plan_5,
                e.per_plan_uri_len,
                e.feedback_per_plan_5 / 5
            );
        }
        if let Some(g) = &self.grants {
            out += &g.table();
        }
        out
    }
}
