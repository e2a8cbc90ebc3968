//! The grant path of the gas bench: a sponsor who only signs (an EIP-712
//! grant per plan; its allowance given once, by a permit the operator
//! submits), an operator who creates the plan's tasks with
//! `createWithGrants` (the first task referenced by the grant's digest, its
//! mark, as the orchestrator does), approves them as their client with a
//! rating and, in the ERC-8004 modes, gives the feedback. What a sponsor's
//! plan costs per settled sub-task, all in: the lifecycle plus the feedback
//! of each mode, the default (the rating in the approval) first.

use alloy::primitives::{Address, U256};
use serde::Serialize;
use tessera_bindings::{
    ITaskEscrow::{CreateParams, GrantedBatch},
    MockUSDC,
    grant::{self, GrantTerms},
    permit::sign_permit,
};

use crate::{
    Error,
    actors::Actors,
    gas::BATCH,
    gas_erc8004::settled_feedback,
    lifecycle::{Driver, spec_of_len},
};

/// Goal, all in, for a one-task plan on the grant path.
pub const GOAL_ONE_TASK_ALL_IN: u64 = 200_000;
/// Goal, all in, per task of a plan of [`BATCH`] tasks on the grant path.
pub const GOAL_BATCH_ALL_IN_PER_TASK: u64 = 110_000;
/// Task amount (2.5 USDC, as the rest of the bench).
const AMOUNT: u128 = 2_500_000;

/// How the orchestrator gives feedback (`tessera serve --feedback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feedback {
    /// The rating each approval carries, nothing more (counted in the
    /// lifecycle: the approval's `TaskSettled` carries it).
    Approval,
    /// And one ERC-8004 feedback per settled task.
    PerTask,
    /// And one ERC-8004 feedback per executor of a plan, once its run is over.
    PerPlan,
}

/// The default the rows are held against: the rating in the approval (the
/// default of `tessera serve --feedback`).
pub const DEFAULT_FEEDBACK: Feedback = Feedback::Approval;

/// One plan on the grant path, measured.
#[derive(Debug, Clone, Serialize)]
pub struct GrantPlanGas {
    /// Tasks in the plan.
    pub tasks: usize,
    /// createWithGrants + deliver per task + approvePayment(s), in all.
    pub lifecycle: u64,
    /// The feedback of each mode, in all.
    pub feedback_per_plan: u64,
    /// See above.
    pub feedback_per_task: u64,
}

impl GrantPlanGas {
    /// Lifecycle and feedback under `mode`, per task.
    pub fn all_in_per_task(&self, mode: Feedback) -> u64 {
        (self.lifecycle + self.feedback(mode)) / self.tasks as u64
    }

    /// The feedback transactions of `mode`, in all.
    pub fn feedback(&self, mode: Feedback) -> u64 {
        match mode {
            Feedback::Approval => 0,
            Feedback::PerPlan => self.feedback_per_plan,
            Feedback::PerTask => self.feedback_per_task,
        }
    }
}

/// What the grant scenarios measured.
#[derive(Debug, Clone, Serialize)]
pub struct GrantGas {
    /// The sponsor's permit, submitted to the token by the operator: once per
    /// allowance (many plans), not counted in the plans.
    pub permit_submit: u64,
    /// A one-task plan.
    pub one_task: GrantPlanGas,
    /// A plan of [`BATCH`] tasks of one executor.
    pub batch: GrantPlanGas,
    /// The feedback mode the goals are held against.
    pub default_feedback: Feedback,
    /// One-task plan, all in, default feedback.
    pub one_task_all_in: u64,
    /// Per task of the batch, all in, default feedback.
    pub batch_all_in_per_task: u64,
}

/// Runs the grant scenarios; `agent_id` is `executor`'s ERC-8004 identity
/// (the feedback's subject). The operator is the client account.
pub async fn run(
    d: &mut Driver<'_>,
    actors: &Actors,
    executor: Address,
    agent_id: U256,
) -> Result<GrantGas, Error> {
    let sponsor = &actors.sponsor;
    let operator = actors.client.address();
    let escrow = d.deployment.task_escrow;
    let chain_id = d.deployment.chain_id;

    // The sponsor's allowance, once: a permit it signs, the operator submits.
    d.scenario("grant path: the sponsor's permit, submitted by the operator (once)");
    let usdc = MockUSDC::new(d.deployment.token, d.provider.clone());
    let nonce =
        usdc.nonces(sponsor.address()).call().await.map_err(crate::contract_err("nonces"))?;
    let value = U256::from(1_000u128 * 1_000_000);
    let deadline = U256::from(d.now().await? + 3600);
    let p = sign_permit(sponsor, &d.domain, escrow, value, nonce, deadline)
        .map_err(|e| Error::Key(format!("signing the permit: {e}")))?;
    let r = d
        .escrow
        .transact(
            usdc.permit(sponsor.address(), escrow, value, p.deadline, p.v, p.r, p.s),
            operator,
        )
        .await?;
    let permit_submit = d.record("token.permit", &r).gas;

    let mut nonce = 0u64;
    let mut plan =
        async |d: &mut Driver<'_>, name: &str, n: usize| -> Result<GrantPlanGas, Error> {
            d.scenario(name);
            let start = d.steps.len();
            let mut params: Vec<CreateParams> = Vec::with_capacity(n);
            for _ in 0..n {
                params.push(d.params(executor, AMOUNT, spec_of_len(60)).await?);
            }
            nonce += 1;
            let terms = GrantTerms {
                sponsor: sponsor.address(),
                plan_id: params[0].planId,
                operator,
                budget: AMOUNT * n as u128,
                valid_until: d.now().await? + 7 * 24 * 3600,
                nonce: U256::from(nonce),
            };
            // The first task is the grant's mark: a first use spending the
            // whole budget then writes no slot for the grant.
            params[0].r#ref = grant::digest(chain_id, escrow, &terms);
            let signature = grant::sign(sponsor, chain_id, escrow, &terms)
                .map_err(|e| Error::Key(format!("signing the grant: {e}")))?;
            let batch = GrantedBatch { grant: terms.to_sol(), signature, params };
            let mut recs = d.create_with_grants(operator, vec![batch]).await?;
            for rec in &mut recs {
                d.deliver_at_once(rec, "data:text/plain,- point one\n- point two\n- point three")
                    .await?;
            }
            if n == 1 {
                let r = d.escrow.approve(operator, &mut recs[0]).await?;
                d.record("approvePayment", &r);
            } else {
                d.approve_many(&mut recs).await?;
            }
            let lifecycle: u64 = d.steps[start..].iter().map(|s| s.gas).sum();
            // One executor: per plan, one feedback on all n; per task, n of one.
            let (r, _) = settled_feedback(d, operator, agent_id, n, true).await?;
            let feedback_per_plan = d.record("giveFeedback per plan", &r).gas;
            let mut feedback_per_task = 0;
            for _ in 0..n {
                let (r, _) = settled_feedback(d, operator, agent_id, 1, false).await?;
                feedback_per_task += d.record("giveFeedback per task", &r).gas;
            }
            Ok(GrantPlanGas { tasks: n, lifecycle, feedback_per_plan, feedback_per_task })
        };
    let one_task =
        plan(d, "grant path: one-task plan (createWithGrants, deliver, approve)", 1).await?;
    let batch = plan(
        d,
        "grant path: plan of 10 (one createWithGrants, deliver each, one approvePayments)",
        BATCH,
    )
    .await?;
    Ok(GrantGas {
        permit_submit,
        one_task_all_in: one_task.all_in_per_task(DEFAULT_FEEDBACK),
        batch_all_in_per_task: batch.all_in_per_task(DEFAULT_FEEDBACK),
        one_task,
        batch,
        default_feedback: DEFAULT_FEEDBACK,
    })
}

impl GrantGas {
    /// The grant path's rows of the bench table.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "\ngrant path, ALL IN (lifecycle + the feedback the orchestrator gives):\n",
        );
        let mut row = |what: &str, plan: &GrantPlanGas, mode: Feedback, goal: u64| {
            let gas = plan.all_in_per_task(mode);
            let verdict = if gas <= goal { "meets" } else { "MISSES" };
            let default = if mode == self.default_feedback { " (default)" } else { "" };
            let feedback = plan.feedback(mode) / plan.tasks as u64;
            out += &format!(
                "  {what:<36} {:<9}{default:<10} {:>7} + {:>7} = {gas:>7}  goal <= {goal:>7}  {:.2} x  {verdict}\n",
                match mode {
                    Feedback::Approval => "approval",
                    Feedback::PerPlan => "per-plan",
                    Feedback::PerTask => "per-task",
                },
                plan.lifecycle / plan.tasks as u64,
                feedback,
                gas as f64 / goal as f64
            );
        };
        const MODES: [Feedback; 3] = [Feedback::Approval, Feedback::PerPlan, Feedback::PerTask];
        for mode in MODES {
            row("one-task plan", &self.one_task, mode, GOAL_ONE_TASK_ALL_IN);
        }
        for mode in MODES {
            row(
                "per task, plan of 10, one executor",
                &self.batch,
                mode,
                GOAL_BATCH_ALL_IN_PER_TASK,
            );
        }
        out += &format!(
            "  (lifecycle + feedback per task; the sponsor's permit, once per allowance: {} gas)\n",
            self.permit_submit
        );
        out
    }
}
