//! A run as the API shows it: the run row, the plan, sub-task progress,
//! the decisions with what came of them, and a high-stakes plan's terms.

use alloy::primitives::Address;
use serde::Serialize;
use tessera_bindings::usdc::Usdc;

use super::{Orchestrator, RunError};
use crate::{
    plan::Plan,
    state::{Spend, Stakes},
    store::{DecisionRecord, RunRow, SubtaskRow},
};

/// A run as the API shows it.
#[derive(Debug, Clone, Serialize)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<ConfirmationTerms>,
}

/// The exact amounts and recipients a high-stakes confirmation binds to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfirmationTerms {
    /// Total, as `x.xxxxxx` USDC.
    pub amount: String,
    /// Every executor that would be paid, sorted.
    pub recipients: Vec<Address>,
}

impl Orchestrator {
    /// The amounts and recipients a confirmation of `plan` binds to.
    pub fn confirmation_terms(plan: &Plan) -> Result<ConfirmationTerms, RunError> {
        let mut recipients: Vec<Address> =
            plan.subtasks.iter().filter_map(|t| t.executor).collect();
        recipients.sort();
        recipients.dedup();
        Ok(ConfirmationTerms { amount: plan.total_cost()?.to_string(), recipients })
    }

    /// The run with its plan, sub-task progress and decisions.
    pub async fn view(&self, id: &str) -> Result<RunView, RunError> {
        let row = self.store.run(id).await?.ok_or_else(|| RunError::NotFound(id.into()))?;
        let plan = Plan::from_json(&row.plan_json)?;
        let stakes = Stakes::parse(&row.stakes).map_err(crate::state::RowError::from)?;
        let confirmation =
            if stakes == Stakes::High { Some(Self::confirmation_terms(&plan)?) } else { None };
        Ok(RunView {
            confirmation,
            subtasks: self.store.subtasks(id).await?,
            decisions: self.store.decisions(id).await?,
            total_cost: plan.total_cost()?,
            spend: self.store.spend(id).await?.unwrap_or_default(),
            estimated_duration_secs: plan.estimated_duration()?.as_secs(),
            run: row,
            plan,
        })
    }
}
