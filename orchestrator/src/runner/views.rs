//! A run as the API shows it: the run row, the plan, sub-task progress,
//! the decisions with what came of them, and a high-stakes plan's terms.

use alloy::primitives::Address;
use serde::{Deserialize, Serialize};
use tessera_bindings::usdc::Usdc;

use super::{Orchestrator, RunError};
use crate::{
    plan::{Plan, PlanError, PlanId, StepPath},
    state::{EventKind, Gates, Phase, Progress, RunId, RunState, Spend, Stakes},
    store::{DecisionRecord, RunRow, SubtaskRow},
};

/// A run as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunView {
    /// The run row (state, reason, timestamps).
    #[serde(flatten)]
    pub run: RunRow,
    /// The plan.
    pub plan: Plan,
    /// Sub-task progress (empty before approval).
    pub subtasks: Vec<SubtaskRow>,
    /// Every decision, oldest first, with what came of it (`ok` false and
    /// the `error`, and the decoded `revert` when the chain refused).
    pub decisions: Vec<DecisionRecord>,
    /// Sum of sub-task costs (a string of base units).
    pub total_cost: Usdc,
    /// Longest deadline chain, seconds.
    pub estimated_duration_secs: u64,
    /// What the run has spent against the plan's budget, as the chain says
    /// (zero before approval).
    pub spend: Spend,
    /// What the user must type to confirm a high-stakes plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<ConfirmationTerms>,
    /// The nested plans, outermost first, each with where it stands (empty
    /// for a flat plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<NestedView>,
    /// A nested plan's conditions as the card shows them: by the path of
    /// the step each belongs to (a sub-task's, or a nested step's that
    /// holds for its whole child plan), with each `out[n]` written as the
    /// path of the step it reads (`{"3": "out[2].score >= -1"}`). Empty for
    /// a flat plan, whose conditions read as written.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub conditions: std::collections::BTreeMap<String, String>,
    /// The plan's checkpoints reached so far, by name: `reached` or
    /// `escalated` (waiting for an approver), `approved` or `rejected`
    /// (with `by`: `approver` or `timeout`), each with when (ms).
    #[serde(default, skip_serializing_if = "Gates::is_empty")]
    pub gates: Gates,
    /// Every sub-task attempt its executor declined on chain, oldest
    /// first: the run's `subtask_declined` events (index, attempt, task id,
    /// executor, reason, reason URI, transaction). Absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declines: Vec<serde_json::Value>,
}

/// A nested plan of a run: the step it replaces, its place in the tree,
/// and where its leaves stand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NestedView {
    /// The nested step's path (`1`, `2.1`).
    pub path: StepPath,
    /// The nested plan's own id.
    pub plan_id: PlanId,
    /// The plan it is nested in: the root plan, or an enclosing nested plan.
    pub parent_plan_id: PlanId,
    /// The run that drives it (the root run: one driver, one budget and one
    /// event stream for every level).
    pub run_id: String,
    /// Its level: 2 for a plan nested in the root plan.
    pub depth: usize,
    /// The nested step's instruction.
    pub spec: String,
    /// Its budget share.
    pub budget: Usdc,
    /// What its leaves cost as planned.
    pub cost: Usdc,
    /// Its leaves' indexes in the run.
    pub subtasks: Vec<u32>,
    /// Where it stands, from its leaves' phases.
    pub state: NestedState,
}

/// Where a nested plan stands, from its leaves' phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NestedState {
    /// No leaf created yet.
    Waiting,
    /// Some leaf created, not every leaf paid.
    Running,
    /// Every leaf paid: the nested step is settled.
    Completed,
    /// Over without every leaf paid (skipped, refunded, or the run
    /// cancelled or failed).
    Closed,
}

impl NestedView {
    /// The nested plans of `plan` with their state from `rows`, in a run
    /// that is `closed` (cancelled or failed) or not.
    pub fn of(
        plan: &Plan,
        run_id: &RunId,
        rows: &[SubtaskRow],
        closed: bool,
    ) -> Result<Vec<Self>, RunError> {
        let mut phases: std::collections::HashMap<u32, Phase> = std::collections::HashMap::new();
        for row in rows {
            phases.insert(row.idx, Progress::from_row(row)?.phase);
        }
        let mut out = Vec::with_capacity(plan.groups.len());
        for g in &plan.groups {
            let members = plan.members(&g.path);
            let leaves: Vec<Phase> =
                members.iter().map(|i| phases.get(i).copied().unwrap_or(Phase::Waiting)).collect();
            let state = if leaves.iter().all(|p| p.is_paid()) {
                NestedState::Completed
            } else if closed || leaves.iter().all(|p| p.is_settled()) {
                NestedState::Closed
            } else if leaves.iter().all(|p| *p == Phase::Waiting) {
                NestedState::Waiting
            } else {
                NestedState::Running
            };
            let parent = g.path.enclosing().last();
            let parent_plan_id = plan
                .groups
                .iter()
                .find(|p| Some(&p.path) == parent.as_ref())
                .map_or(plan.id, |p| p.plan_id(plan.id));
            let cost = Usdc::sum(members.iter().filter_map(|&i| plan.subtask(i)).map(|t| t.cost))
                .ok_or(PlanError::CostOverflow)?;
            out.push(Self {
                path: g.path.clone(),
                plan_id: g.plan_id(plan.id),
                parent_plan_id,
                run_id: run_id.to_string(),
                depth: g.depth(),
                spec: g.spec.clone(),
                budget: g.budget,
                cost,
                subtasks: members,
                state,
            });
        }
        Ok(out)
    }
}

/// The exact amounts and recipients a high-stakes confirmation binds to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmationTerms {
    /// Total, as `x.xxxxxx` USDC: what the user types.
    pub amount: String,
    /// Every executor that would be paid, sorted.
    pub recipients: Vec<Address>,
    /// The plan's budget, as `x.xxxxxx` USDC: the most a person's later
    /// raise (itself confirmed by typing its amount) may take the plan to.
    pub budget: String,
    /// Each nested plan's budget share, as `x.xxxxxx` USDC, by path.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub shares: std::collections::BTreeMap<String, String>,
}

impl Orchestrator {
    /// The amounts and recipients a confirmation of `plan` binds to.
    pub fn confirmation_terms(plan: &Plan) -> Result<ConfirmationTerms, RunError> {
        let mut recipients: Vec<Address> =
            plan.subtasks.iter().filter_map(|t| t.executor).collect();
        recipients.sort();
        recipients.dedup();
        Ok(ConfirmationTerms {
            amount: plan.total_cost()?.to_string(),
            recipients,
            budget: plan.budget.to_string(),
            shares: plan
                .groups
                .iter()
                .map(|g| (g.path.to_string(), g.budget.to_string()))
                .collect(),
        })
    }

    /// The run with its plan, sub-task progress and decisions.
    pub async fn view(&self, id: impl Into<RunId>) -> Result<RunView, RunError> {
        let id = &id.into();
        let row = self.store.run(id).await?.ok_or_else(|| RunError::NotFound(id.into()))?;
        let plan = Plan::from_json(&row.plan_json)?;
        let stakes = Stakes::parse(&row.stakes).map_err(crate::state::RowError::from)?;
        let confirmation =
            if stakes == Stakes::High { Some(Self::confirmation_terms(&plan)?) } else { None };
        let subtasks = self.store.subtasks(id).await?;
        let state = RunState::parse(&row.state).map_err(crate::state::RowError::from)?;
        let closed = matches!(state, RunState::Cancelled | RunState::Failed);
        let declines = self
            .store
            .events_of_kind(id, EventKind::SubtaskDeclined)
            .await?
            .iter()
            .filter_map(|body| serde_json::from_str(body).ok())
            .collect();
        Ok(RunView {
            declines,
            conditions: conditions_by_path(&plan),
            gates: self.store.gates(id).await?,
            confirmation,
            nested: NestedView::of(&plan, id, &subtasks, closed)?,
            subtasks,
            decisions: self.store.decisions(id).await?,
            total_cost: plan.total_cost()?,
            spend: self.store.spend(id).await?.unwrap_or_default(),
            estimated_duration_secs: plan.estimated_duration()?.as_secs(),
            run: row,
            plan,
        })
    }
}

/// The conditions of a nested `plan` by step path, written by path (see
/// [`RunView::conditions`]); empty for a flat plan.
pub fn conditions_by_path(plan: &Plan) -> std::collections::BTreeMap<String, String> {
    if plan.groups.is_empty() {
        return std::collections::BTreeMap::new();
    }
    let groups = plan.groups.iter().filter_map(|g| g.when.as_deref().map(|w| (g.path.clone(), w)));
    let leaves =
        plan.subtasks.iter().filter_map(|t| t.when.as_deref().map(|w| (plan.path_of(t.index), w)));
    groups
        .chain(leaves)
        .map(|(path, when)| (path.to_string(), plan.condition_by_path(when)))
        .collect()
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
