//! How a run funds its sub-tasks: one at a time as their dependencies
//! deliver ([`Funding::Stepwise`], the default), or every one at approval
//! in one `createTasks` batch ([`Funding::Upfront`]), a dependent envelope
//! naming its upstream sub-tasks instead of carrying their outputs.
//!
//! Upfront funding commits the whole cost at approval, so only a plan
//! whose every step is paid without a person may use it: every step in
//! `auto` review, no condition (a skipped step would have been funded for
//! nothing) and no checkpoint (nothing downstream of one may be funded
//! before an approver passes it). [`Plan::validate_funding`] refuses the
//! rest with the reason.

use serde::{Deserialize, Serialize};

use super::{Plan, PlanError, ReviewMode};

/// When a run's sub-tasks are funded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Funding {
    /// Each sub-task created once its dependencies delivered (or were
    /// paid), its envelope carrying their outputs.
    #[default]
    Stepwise,
    /// Every sub-task created at approval in one batch; a dependent one's
    /// envelope names its upstream tasks, and its executor reads their
    /// deliveries from the escrow's logs.
    Upfront,
}

impl Funding {
    /// Whether this is [`Funding::Stepwise`] (the default, left out of
    /// the plan's JSON).
    pub fn is_stepwise(&self) -> bool {
        *self == Self::Stepwise
    }
}

impl Plan {
    /// Whether every sub-task is funded at approval.
    pub fn is_upfront(&self) -> bool {
        self.funding == Funding::Upfront
    }

    /// Refuses upfront funding for a plan a person or a condition could
    /// stop part way: a step not in `auto` review, a condition, a
    /// checkpoint.
    pub fn validate_funding(&self) -> Result<(), PlanError> {
        if !self.is_upfront() {
            return Ok(());
        }
        let refuse = |reason: String| Err(PlanError::Funding(reason));
        if let Some(task) =
            self.subtasks.iter().find(|t| self.review_of(t.index) != ReviewMode::Auto)
        {
            return refuse(format!(
                "step {} is in manual review: upfront funding commits every step's cost at \
                 approval, so every step must be in auto review",
                self.path_of(task.index)
            ));
        }
        if let Some(task) = self.subtasks.iter().find(|t| !self.conditions_of(t.index).is_empty()) {
            return refuse(format!(
                "step {} has a condition: a step a condition skips would be funded for nothing; \
                 use stepwise funding",
                self.path_of(task.index)
            ));
        }
        if let Some(cp) = self.checkpoints.first() {
            return refuse(format!(
                "checkpoint `{}`: nothing after a checkpoint may be funded before an approver \
                 passes it; use stepwise funding",
                cp.name
            ));
        }
        Ok(())
    }

    /// Seconds from approval a sub-task of an upfront run gets: its own
    /// offset plus the longest chain of upstream offsets before it, so a
    /// dependant's deadline covers its wait for its upstream deliveries.
    /// A stepwise run's sub-task gets its own offset (from its creation).
    pub fn deadline_offset_of(&self, index: u32) -> u64 {
        let own = self.subtask(index).map_or(0, |t| t.deadline_offset_secs);
        if !self.is_upfront() {
            return own;
        }
        let mut memo = std::collections::HashMap::new();
        self.chain_offset(index, &mut memo).unwrap_or(own)
    }

    fn chain_offset(
        &self,
        index: u32,
        memo: &mut std::collections::HashMap<u32, u64>,
    ) -> Option<u64> {
        if let Some(&secs) = memo.get(&index) {
            return Some(secs);
        }
        let task = self.subtask(index)?;
        let mut wait = 0;
        for &dep in &task.depends_on {
            // The graph is acyclic once validated; a cycle ends in `None`.
            memo.insert(index, u64::MAX);
            let before = self.chain_offset(dep, memo)?;
            if before == u64::MAX {
                return None;
            }
            wait = wait.max(before);
        }
        let secs = wait.saturating_add(task.deadline_offset_secs);
        memo.insert(index, secs);
        Some(secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(funding: &str, extra: &str) -> Result<Plan, PlanError> {
        let a = "0x00000000000000000000000000000000000000aa";
        let json = format!(
            r#"{{"version": 1, "id": "0x{id}", "budget": 3000, "funding": "{funding}" {extra},
            "subtasks": [
              {{"index": 0, "capability": "translate", "spec": "t", "executor": "{a}",
                "cost": 1000, "deadline_offset_secs": 600}},
              {{"index": 1, "capability": "summarize", "spec": "s", "executor": "{a}",
                "cost": 1000, "deadline_offset_secs": 300, "depends_on": [0]}},
              {{"index": 2, "capability": "summarize", "spec": "s", "executor": "{a}",
                "cost": 1000, "deadline_offset_secs": 120, "depends_on": [0, 1]}}]}}"#,
            id = "11".repeat(32)
        );
        let plan = Plan::from_json(&json)?;
        plan.validate_shape()?;
        Ok(plan)
    }

    #[test]
    fn stepwise_is_the_default_and_left_out() {
        let p = plan("stepwise", "").unwrap();
        assert!(!p.is_upfront());
        assert!(!serde_json::to_string(&p).unwrap().contains("funding"));
        assert_eq!(p.deadline_offset_of(2), 120);
    }

    #[test]
    fn upfront_deadlines_add_the_longest_upstream_chain() {
        let p = plan("upfront", "").unwrap();
        assert!(p.is_upfront());
        assert_eq!(p.deadline_offset_of(0), 600);
        assert_eq!(p.deadline_offset_of(1), 900);
        assert_eq!(p.deadline_offset_of(2), 1020);
        let back = Plan::from_json(&serde_json::to_string(&p).unwrap()).unwrap();
        assert!(back.is_upfront());
    }

    #[test]
    fn upfront_refuses_manual_review_and_checkpoints_with_the_reason() {
        let e = plan("upfront", r#", "review": "manual""#).unwrap_err();
        assert!(e.to_string().contains("step 0 is in manual review"), "{e}");
        let cp = r#", "checkpoints": [{"name": "look", "after": [0]}]"#;
        let e = plan("upfront", cp).unwrap_err();
        assert!(e.to_string().contains("checkpoint `look`"), "{e}");
        plan("stepwise", cp).unwrap();
    }

    #[test]
    fn upfront_refuses_a_condition_with_the_step() {
        let mut p = plan("stepwise", "").unwrap();
        p.subtasks[1].when = Some("out[0].score > 0".into());
        p.validate_shape().unwrap();
        p.funding = Funding::Upfront;
        let e = p.validate_shape().unwrap_err();
        assert!(e.to_string().contains("step 1 has a condition"), "{e}");
    }
}
