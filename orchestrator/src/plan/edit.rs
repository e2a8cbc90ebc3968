//! Edits to a plan: reorder, reassign, drop; each re-indexes to keep
//! indexes `0..n` and returns a shape-checked copy.

use std::collections::HashMap;

use alloy::primitives::Address;

use super::{Plan, PlanError, graph::to_index};

impl Plan {
    /// Re-indexes the plan: `order` lists the current indexes in their new
    /// order, and the sub-task at position `k` gets index `k`. Dependencies
    /// are rewritten to the new indexes. Execution still follows
    /// dependencies; the new indexes only break ties between sub-tasks that
    /// are ready together (see [`Plan::topological_order`]).
    pub fn reorder(&self, order: &[u32]) -> Result<Self, PlanError> {
        self.graph()?;
        let n = self.subtasks.len();
        let mut remap: HashMap<u32, u32> = HashMap::with_capacity(n);
        for (new, &old) in order.iter().enumerate() {
            if old as usize >= n || remap.insert(old, to_index(new)).is_some() {
                return Err(PlanError::InvalidOrder { expected: n });
            }
        }
        if remap.len() != n {
            return Err(PlanError::InvalidOrder { expected: n });
        }
        self.remapped(|old| remap.get(&old).copied())
    }

    /// Sets the executor of sub-task `index`; indexes are unchanged.
    pub fn reassign(&self, index: u32, executor: Address) -> Result<Self, PlanError> {
        let mut plan = self.clone();
        let task = plan
            .subtasks
            .iter_mut()
            .find(|s| s.index == index)
            .ok_or(PlanError::UnknownIndex(index))?;
        task.executor = Some(executor);
        // Why another executor was chosen no longer says anything.
        plan.choices.retain(|c| c.index != index || c.executor == executor);
        plan.validate_shape()?;
        Ok(plan)
    }

    /// Removes sub-task `index`; sub-tasks after it move down by one index
    /// (dependencies follow). Refused while other sub-tasks depend on it, and
    /// for the last remaining sub-task (a plan cannot be empty).
    pub fn drop_subtask(&self, index: u32) -> Result<Self, PlanError> {
        let graph = self.graph()?;
        let position = index as usize;
        if position >= self.subtasks.len() {
            return Err(PlanError::UnknownIndex(index));
        }
        if !graph.dependents[position].is_empty() {
            return Err(PlanError::HasDependents {
                index,
                dependents: graph.dependents[position].iter().copied().map(to_index).collect(),
            });
        }
        self.remapped(|old| match old.cmp(&index) {
            std::cmp::Ordering::Less => Some(old),
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some(old - 1),
        })
    }

    /// A copy with each sub-task re-indexed by `map` (`None` drops it),
    /// sorted by new index and shape-checked.
    fn remapped(&self, map: impl Fn(u32) -> Option<u32>) -> Result<Self, PlanError> {
        // Conditions name sub-tasks by index in their text: an edit that
        // would renumber one they read is refused rather than rewritten.
        for task in &self.subtasks {
            for (_, when) in self.conditions_of(task.index) {
                let condition = when
                    .condition()
                    .map_err(|source| PlanError::InvalidCondition { index: task.index, source })?;
                if condition.references().into_iter().any(|r| map(r) != Some(r)) {
                    return Err(PlanError::ConditionRenumbered(task.index));
                }
            }
        }
        let mut plan = self.clone();
        for cp in &mut plan.checkpoints {
            cp.after = cp.after.iter().filter_map(|&i| map(i)).collect();
        }
        plan.checkpoints.retain(|cp| !cp.after.is_empty());
        plan.choices = self
            .choices
            .iter()
            .filter_map(|c| map(c.index).map(|index| super::Choice { index, ..c.clone() }))
            .collect();
        plan.subtasks = self
            .subtasks
            .iter()
            .filter_map(|task| {
                let index = map(task.index)?;
                let mut task = task.clone();
                task.index = index;
                // Dependencies are known to resolve and none points at a dropped task.
                task.depends_on = task.depends_on.iter().filter_map(|&d| map(d)).collect();
                Some(task)
            })
            .collect();
        plan.subtasks.sort_by_key(|s| s.index);
        if plan.subtasks.is_empty() {
            return Err(PlanError::Empty);
        }
        plan.prune_groups();
        plan.validate_shape()?;
        Ok(plan)
    }
}
