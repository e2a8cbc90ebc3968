//! Flattening a plan file's nested steps into the leaves the runner
//! drives (see [`super::nest`] for the rules): indexes in path order,
//! dependencies, conditions and checkpoints in the run's numbering.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tessera_bindings::usdc::Usdc;

use super::{
    Checkpoint, MAX_NESTING_DEPTH, MAX_SUBTASKS, Plan, PlanError, PlanId, RecoveryOverride,
    ReviewMode, StepPath, SubTask,
    nest::{ChildPlan, Group, Nested},
};
use crate::condition::Condition;

impl Plan {
    /// The plan as the runner drives it: every nested step replaced by its
    /// child plan's leaves (see the module documentation). A plan with no
    /// nested step comes back unchanged. Refused: a child plan more than
    /// `max_depth` levels down, named plans that include each other, an
    /// unknown name, a nested step with an executor, and the limits every
    /// plan has (at most [`MAX_SUBTASKS`] leaves).
    pub fn flatten(mut self, max_depth: usize) -> Result<Self, PlanError> {
        if !self.subtasks.iter().any(|t| t.plan.is_some()) {
            if !self.plans.is_empty() {
                return Err(PlanError::UnusedPlans(self.plans.keys().cloned().collect()));
            }
            return Ok(self);
        }
        if !self.groups.is_empty() || self.subtasks.iter().any(|t| t.path.is_some()) {
            return Err(PlanError::MixedNesting);
        }
        let max_depth = max_depth.clamp(1, MAX_NESTING_DEPTH);
        let plans = std::mem::take(&mut self.plans);
        let top = std::mem::take(&mut self.subtasks);
        let checkpoints = std::mem::take(&mut self.checkpoints);
        let mut out = Flattening {
            plans: &plans,
            used: BTreeSet::new(),
            max_depth,
            leaves: Vec::new(),
            groups: Vec::new(),
            readings: Vec::new(),
            checkpoints: Vec::new(),
        };
        let root = Level { prefix: StepPath::default(), inherited: &[], recovery: None, depth: 1 };
        out.level(&top, &checkpoints, &root, &mut Vec::new())?;
        let unused: Vec<String> =
            plans.keys().filter(|name| !out.used.contains(*name)).cloned().collect();
        if !unused.is_empty() {
            return Err(PlanError::UnusedPlans(unused));
        }
        // Index leaves in path order, so a plan reads top to bottom.
        let mut leaves = out.leaves;
        leaves.sort_by(|a, b| a.path.cmp(&b.path));
        let remap: HashMap<u32, u32> =
            leaves.iter().enumerate().map(|(new, t)| (t.index, new as u32)).collect();
        for (new, leaf) in leaves.iter_mut().enumerate() {
            leaf.index = new as u32;
            leaf.depends_on = leaf.depends_on.iter().map(|d| remap[d]).collect();
            leaf.depends_on.sort_unstable();
            leaf.depends_on.dedup();
        }
        // Conditions and checkpoints, in the author's numbering until now,
        // in the run's.
        for reading in out.readings {
            let text = reading.condition.relabelled(|n| remap[&reading.reads[&n]].to_string());
            if let Some(leaf) = leaves.iter_mut().find(|t| t.path.as_ref() == Some(&reading.at)) {
                leaf.when = Some(text.into());
            } else if let Some(g) = out.groups.iter_mut().find(|g| g.path == reading.at) {
                g.when = Some(text.into());
            }
        }
        for cp in &mut out.checkpoints {
            cp.after = cp.after.iter().map(|i| remap[i]).collect();
            cp.after.sort_unstable();
            cp.after.dedup();
        }
        out.groups.sort_by(|a, b| a.path.cmp(&b.path));
        self.subtasks = leaves;
        self.groups = out.groups;
        self.checkpoints = out.checkpoints;
        Ok(self)
    }
}

/// The flattening in progress.
struct Flattening<'a> {
    plans: &'a BTreeMap<String, ChildPlan>,
    used: BTreeSet<String>,
    max_depth: usize,
    /// Leaves so far, indexed in the order they were reached.
    leaves: Vec<SubTask>,
    groups: Vec<Group>,
    /// Conditions to write in the run's numbering once leaves are indexed.
    readings: Vec<Reading>,
    /// Checkpoints of every level, `after` in the order leaves were reached.
    checkpoints: Vec<Checkpoint>,
}

/// A condition as its author wrote it, and the leaf each index it reads
/// stands for.
struct Reading {
    /// The step (a leaf, or a nested step) it belongs to.
    at: StepPath,
    condition: Condition,
    /// Author's index at the step's level → leaf, in the order reached.
    reads: HashMap<u32, u32>,
}

/// What a level inherits from the nested step it lays out.
struct Level<'a> {
    /// The nested step's path (empty for the root plan).
    prefix: StepPath,
    /// What its first steps wait for.
    inherited: &'a [u32],
    /// Its recovery, the default of its steps.
    recovery: Option<RecoveryOverride>,
    /// Its level: 1 for the root plan.
    depth: usize,
}

/// A step's own recovery over the one it inherits, field by field.
fn over(
    own: Option<RecoveryOverride>,
    outer: Option<RecoveryOverride>,
) -> Option<RecoveryOverride> {
    let Some(outer) = outer else { return own };
    let own = own.unwrap_or_default();
    Some(RecoveryOverride {
        on_decline: own.on_decline.or(outer.on_decline),
        on_expiry: own.on_expiry.or(outer.on_expiry),
        on_dispute_lost: own.on_dispute_lost.or(outer.on_dispute_lost),
    })
}

impl Flattening<'_> {
    /// Lays out one level's `steps` and `checkpoints` as `at` says (where,
    /// what its first steps wait for, its recovery); returns the leaves
    /// holding the level's final output. `stack` holds the named plans
    /// being laid out, to refuse a cycle.
    fn level(
        &mut self,
        steps: &[SubTask],
        checkpoints: &[Checkpoint],
        at: &Level<'_>,
        stack: &mut Vec<String>,
    ) -> Result<Vec<u32>, PlanError> {
        let (prefix, inherited, depth) = (&at.prefix, at.inherited, at.depth);
        let in_level = |e: PlanError| {
            if prefix.is_empty() {
                e
            } else {
                PlanError::Nested { path: prefix.to_string(), source: Box::new(e) }
            }
        };
        // The level's own checks: indexes 0..n, dependencies that resolve,
        // no cycle.
        let mut level = Plan::new(PlanId::ZERO, Usdc::ZERO, ReviewMode::Auto);
        level.subtasks = steps.iter().map(|t| SubTask { plan: None, ..t.clone() }).collect();
        let order = level.topological_order().map_err(in_level)?;
        let depended: BTreeSet<u32> =
            steps.iter().flat_map(|t| t.depends_on.iter().copied()).collect();
        let mut finals: HashMap<u32, Vec<u32>> = HashMap::new();
        for index in order {
            let step =
                steps.iter().find(|t| t.index == index).ok_or(PlanError::UnknownIndex(index))?;
            let path = prefix.child(index);
            let waits: Vec<u32> = if step.depends_on.is_empty() {
                inherited.to_vec()
            } else {
                step.depends_on.iter().flat_map(|d| finals[d].iter().copied()).collect()
            };
            if let Some(when) = &step.when {
                let reading =
                    Self::reading(step, when, &path, &finals, prefix).map_err(in_level)?;
                self.readings.push(reading);
            }
            let recovery = over(step.recovery, at.recovery);
            let Some(nested) = &step.plan else {
                if self.leaves.len() >= MAX_SUBTASKS {
                    return Err(PlanError::TooManySubtasks {
                        count: MAX_SUBTASKS + 1,
                        max: MAX_SUBTASKS,
                    });
                }
                let flat = self.leaves.len() as u32;
                self.leaves.push(SubTask {
                    index: flat,
                    depends_on: waits,
                    path: Some(path),
                    plan: None,
                    when: None,
                    recovery,
                    ..step.clone()
                });
                finals.insert(index, vec![flat]);
                continue;
            };
            if step.executor.is_some() {
                return Err(PlanError::InvalidNesting(format!(
                    "step `{path}` is a nested plan and cannot have an executor"
                )));
            }
            if depth + 1 > self.max_depth {
                return Err(PlanError::NestingTooDeep {
                    path: path.to_string(),
                    depth: depth + 1,
                    max: self.max_depth,
                });
            }
            let child = match nested {
                Nested::Inline(child) => child.as_ref(),
                Nested::Named(name) => {
                    if let Some(at) = stack.iter().position(|n| n == name) {
                        let mut cycle = stack[at..].to_vec();
                        cycle.push(name.clone());
                        return Err(PlanError::NestingCycle(cycle));
                    }
                    self.used.insert(name.clone());
                    self.plans.get(name).ok_or_else(|| PlanError::UnknownPlan {
                        path: path.to_string(),
                        name: name.clone(),
                    })?
                }
            };
            if self.groups.len() >= MAX_SUBTASKS {
                return Err(PlanError::TooManySubtasks {
                    count: MAX_SUBTASKS + 1,
                    max: MAX_SUBTASKS,
                });
            }
            self.groups.push(Group {
                path: path.clone(),
                spec: step.spec.clone(),
                budget: step.cost,
                review: child.review,
                when: None,
            });
            let named = matches!(nested, Nested::Named(_));
            if let Nested::Named(name) = nested {
                stack.push(name.clone());
            }
            let inner = Level { prefix: path, inherited: &waits, recovery, depth: depth + 1 };
            let out = self.level(&child.subtasks, &child.checkpoints, &inner, stack);
            if named {
                stack.pop();
            }
            finals.insert(index, out?);
        }
        // The level's checkpoints: after a nested step is after the steps
        // its child plan ends in.
        for cp in checkpoints {
            let mut after = Vec::with_capacity(cp.after.len());
            for i in &cp.after {
                let leaves = finals.get(i).ok_or_else(|| {
                    in_level(PlanError::InvalidCheckpoint {
                        name: cp.name.chars().take(64).collect(),
                        problem: format!("there is no sub-task {i}"),
                    })
                })?;
                after.extend(leaves.iter().copied());
            }
            self.checkpoints.push(Checkpoint { after, ..cp.clone() });
        }
        // The level's output: the steps no sibling waits for.
        let mut out: Vec<u32> = steps
            .iter()
            .filter(|t| !depended.contains(&t.index))
            .flat_map(|t| finals[&t.index].iter().copied())
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// The condition `when` of `step` (at `path`) in its level's numbering:
    /// each `out[n]` must name a step it depends on, and one of a nested
    /// step reads the one leaf its child plan ends in.
    fn reading(
        step: &SubTask,
        when: &str,
        path: &StepPath,
        finals: &HashMap<u32, Vec<u32>>,
        prefix: &StepPath,
    ) -> Result<Reading, PlanError> {
        let condition = Condition::parse(when)
            .map_err(|source| PlanError::InvalidCondition { index: step.index, source })?;
        let mut reads = HashMap::new();
        for n in condition.references() {
            if !step.depends_on.contains(&n) {
                return Err(PlanError::ConditionReference { index: step.index, read: n });
            }
            match finals[&n].as_slice() {
                [leaf] => {
                    reads.insert(n, *leaf);
                }
                ends => {
                    return Err(PlanError::ConditionReadsNested {
                        path: path.to_string(),
                        read: prefix.child(n).to_string(),
                        ends: ends.len(),
                    });
                }
            }
        }
        Ok(Reading { at: path.clone(), condition, reads })
    }
}
