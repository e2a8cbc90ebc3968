//! Nested plans: a step that is itself a plan.
//!
//! A plan file may give a step a `plan` instead of a capability: its own
//! sub-tasks (inline, or by name from the file's `plans`), an optional
//! review mode, and the step's `cost` as the child plan's budget share.
//! [`Plan::flatten`] turns such a file into the form the runner drives: the
//! leaves only, indexed `0..n`, each with its [`StepPath`] (`2.1.0`: step 2,
//! its child plan's step 1, that one's step 0), and one [`Group`] per nested
//! plan. Dependencies cross levels as data does:
//!
//! - a child plan's first steps (those with no dependency of their own)
//!   wait for what the nested step waits for, and receive its inputs;
//! - a step that depends on a nested step depends on the child plan's last
//!   steps (those no sibling depends on): the child's final output is the
//!   nested step's output.
//!
//! A nested step holds no escrow of its own: its money is its children's,
//! and its budget share caps what they may spend. Nesting is bounded (at most
//! [`DEFAULT_MAX_NESTING_DEPTH`] levels unless configured, never more than
//! [`MAX_NESTING_DEPTH`]), and plans that include each other by name are
//! refused as a cycle.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    fmt,
    str::FromStr,
};

use alloy::primitives::{B256, keccak256};
use serde::{Deserialize, Serialize};
use tessera_bindings::usdc::Usdc;

use super::{MAX_SPEC_BYTES, MAX_SUBTASKS, Plan, PlanError, ReviewMode, SubTask};

/// Levels a plan may nest when the orchestrator is not told otherwise: the
/// root plan is level 1.
pub const DEFAULT_MAX_NESTING_DEPTH: usize = 5;
/// The most levels any configuration allows.
pub const MAX_NESTING_DEPTH: usize = 8;

/// A step's place in its root plan: the index at each level, outermost
/// first; written `2.1.0`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StepPath(Vec<u32>);

impl StepPath {
    /// The path of the given indexes, outermost first.
    pub fn new(segments: Vec<u32>) -> Self {
        Self(segments)
    }

    /// The indexes, outermost first.
    pub fn segments(&self) -> &[u32] {
        &self.0
    }

    /// Levels: 1 for a step of the root plan.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the path has no segment (never true of a valid path).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// This path with `index` appended.
    pub fn child(&self, index: u32) -> Self {
        let mut segments = self.0.clone();
        segments.push(index);
        Self(segments)
    }

    /// Whether `self` lies strictly inside the nested step `group`.
    pub fn is_inside(&self, group: &Self) -> bool {
        self.0.len() > group.0.len() && self.0.starts_with(&group.0)
    }

    /// The paths of the nested steps enclosing this one, outermost first.
    pub fn enclosing(&self) -> impl Iterator<Item = StepPath> + '_ {
        (1..self.0.len()).map(|n| Self(self.0[..n].to_vec()))
    }
}

impl fmt::Display for StepPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl FromStr for StepPath {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || PlanError::InvalidPath(s.chars().take(40).collect());
        if s.is_empty() || s.len() > 64 {
            return Err(invalid());
        }
        let segments = s
            .split('.')
            .map(|p| {
                if p.is_empty() || (p.len() > 1 && p.starts_with('0')) {
                    return Err(invalid());
                }
                if !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid());
                }
                p.parse::<u32>().map_err(|_| invalid())
            })
            .collect::<Result<Vec<_>, _>>()?;
        if segments.len() > MAX_NESTING_DEPTH {
            return Err(invalid());
        }
        Ok(Self(segments))
    }
}

impl Serialize for StepPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StepPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// A child plan as a plan file writes it: its steps and review mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildPlan {
    /// The child plan's steps, indexed `0..n` among themselves.
    pub subtasks: Vec<SubTask>,
    /// How its completed steps are settled; the parent's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewMode>,
}

/// A step's child plan: inline, or the name of one of the file's `plans`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Nested {
    /// One of the plan file's named `plans`.
    Named(String),
    /// Written in place.
    Inline(Box<ChildPlan>),
}

/// A nested plan of a flattened plan: the step it replaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// The nested step's path; its leaves' paths start with it.
    pub path: StepPath,
    /// The nested step's instruction, shown as the child plan's label.
    pub spec: String,
    /// The child plan's budget share: what its leaves may spend in all.
    #[serde(with = "tessera_bindings::usdc::as_integer")]
    pub budget: Usdc,
    /// The child plan's own review mode, if it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewMode>,
}

impl Group {
    /// The child plan's id: keccak256 of the root plan's id and the path,
    /// so the same nested step of the same plan always has the same id.
    pub fn plan_id(&self, root: B256) -> B256 {
        keccak256([root.as_slice(), b":", self.path.to_string().as_bytes()].concat())
    }

    /// Levels: 2 for a plan nested in the root plan.
    pub fn depth(&self) -> usize {
        self.path.len() + 1
    }
}

impl Plan {
    /// Whether the plan holds nested plans (as written, or flattened).
    pub fn is_nested(&self) -> bool {
        !self.groups.is_empty() || self.subtasks.iter().any(|t| t.plan.is_some())
    }

    /// The path of sub-task `index`: its stored path, or the index itself
    /// for a flat plan's sub-task.
    pub fn path_of(&self, index: u32) -> StepPath {
        self.subtask(index)
            .and_then(|t| t.path.clone())
            .unwrap_or_else(|| StepPath::new(vec![index]))
    }

    /// Levels of nesting: 1 for a flat plan.
    pub fn depth(&self) -> usize {
        self.groups.iter().map(Group::depth).max().unwrap_or(1)
    }

    /// The nested plans enclosing sub-task `index`, outermost first.
    pub fn groups_of(&self, index: u32) -> Vec<&Group> {
        let path = self.path_of(index);
        let mut found: Vec<&Group> =
            self.groups.iter().filter(|g| path.is_inside(&g.path)).collect();
        found.sort_by_key(|g| g.path.len());
        found
    }

    /// The leaves inside nested plan `group`.
    pub fn members(&self, group: &StepPath) -> Vec<u32> {
        self.subtasks
            .iter()
            .filter(|t| t.path.as_ref().is_some_and(|p| p.is_inside(group)))
            .map(|t| t.index)
            .collect()
    }

    /// How sub-task `index` is settled: by hand wherever the plan is
    /// reviewed by hand (high stakes cascade down); otherwise as its
    /// innermost nested plan says, else automatically.
    pub fn review_of(&self, index: u32) -> ReviewMode {
        if self.review == ReviewMode::Manual {
            return ReviewMode::Manual;
        }
        self.groups_of(index).iter().rev().find_map(|g| g.review).unwrap_or(self.review)
    }

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
        let mut out = Flattening {
            plans: &plans,
            used: BTreeSet::new(),
            max_depth,
            leaves: Vec::new(),
            groups: Vec::new(),
        };
        out.level(&top, &StepPath::default(), &[], 1, &mut Vec::new())?;
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
        out.groups.sort_by(|a, b| a.path.cmp(&b.path));
        self.subtasks = leaves;
        self.groups = out.groups;
        Ok(self)
    }

    /// Checks the nesting of a flattened plan: every leaf has a path when
    /// any has, paths are unique, every enclosing path is a nested plan,
    /// groups are unique and hold at least one leaf, labels fit.
    pub(super) fn validate_nesting(&self) -> Result<(), PlanError> {
        if self.groups.is_empty() && self.subtasks.iter().all(|t| t.path.is_none()) {
            return Ok(());
        }
        if self.subtasks.iter().any(|t| t.plan.is_some()) || !self.plans.is_empty() {
            return Err(PlanError::MixedNesting);
        }
        if self.groups.len() > MAX_SUBTASKS {
            return Err(PlanError::TooManySubtasks { count: self.groups.len(), max: MAX_SUBTASKS });
        }
        let groups: BTreeMap<&StepPath, &Group> =
            self.groups.iter().map(|g| (&g.path, g)).collect();
        if groups.len() != self.groups.len() {
            return Err(PlanError::InvalidNesting("two nested plans share a path".into()));
        }
        let mut seen = BTreeSet::new();
        for task in &self.subtasks {
            let Some(path) = &task.path else {
                return Err(PlanError::InvalidNesting(format!(
                    "sub-task {} has no path while the plan nests",
                    task.index
                )));
            };
            if path.is_empty() || !seen.insert(path) || groups.contains_key(path) {
                return Err(PlanError::InvalidNesting(format!(
                    "sub-task {}: path `{path}` is empty or used twice",
                    task.index
                )));
            }
            if let Some(missing) = path.enclosing().find(|p| !groups.contains_key(p)) {
                return Err(PlanError::InvalidNesting(format!(
                    "sub-task {} at `{path}` lies in `{missing}`, which is no nested plan",
                    task.index
                )));
            }
        }
        for g in &self.groups {
            if g.spec.len() > MAX_SPEC_BYTES {
                return Err(PlanError::InvalidNesting(format!(
                    "nested plan `{}`: its label is over {MAX_SPEC_BYTES} bytes",
                    g.path
                )));
            }
            if g.depth() > MAX_NESTING_DEPTH {
                return Err(PlanError::NestingTooDeep {
                    path: g.path.to_string(),
                    depth: g.depth(),
                    max: MAX_NESTING_DEPTH,
                });
            }
            if let Some(missing) = g.path.enclosing().find(|p| !groups.contains_key(p)) {
                return Err(PlanError::InvalidNesting(format!(
                    "nested plan `{}` lies in `{missing}`, which is no nested plan",
                    g.path
                )));
            }
            if self.members(&g.path).is_empty() {
                return Err(PlanError::InvalidNesting(format!(
                    "nested plan `{}` has no sub-task",
                    g.path
                )));
            }
        }
        Ok(())
    }

    /// Checks each nested plan's leaves against its budget share.
    pub(super) fn validate_group_budgets(&self) -> Result<(), PlanError> {
        for g in &self.groups {
            let members = self.members(&g.path);
            let total = Usdc::sum(members.iter().filter_map(|&i| self.subtask(i)).map(|t| t.cost))
                .ok_or(PlanError::CostOverflow)?;
            if total > g.budget {
                return Err(PlanError::GroupOverBudget {
                    path: g.path.to_string(),
                    total,
                    budget: g.budget,
                    excess: total.checked_sub(g.budget).unwrap_or_default(),
                });
            }
        }
        Ok(())
    }

    /// Drops nested plans no leaf is left in (after an edit removed them).
    pub(super) fn prune_groups(&mut self) {
        let paths: Vec<StepPath> = self.subtasks.iter().filter_map(|t| t.path.clone()).collect();
        self.groups.retain(|g| paths.iter().any(|p| p.is_inside(&g.path)));
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
}

impl Flattening<'_> {
    /// Lays out one level's `steps` at `prefix` (the nested step's path),
    /// whose first steps wait for `inherited`; returns the leaves holding
    /// the level's final output. `stack` holds the named plans being laid
    /// out, to refuse a cycle.
    fn level(
        &mut self,
        steps: &[SubTask],
        prefix: &StepPath,
        inherited: &[u32],
        depth: usize,
        stack: &mut Vec<String>,
    ) -> Result<Vec<u32>, PlanError> {
        let in_level = |e: PlanError| {
            if prefix.is_empty() {
                e
            } else {
                PlanError::Nested { path: prefix.to_string(), source: Box::new(e) }
            }
        };
        // The level's own checks: indexes 0..n, dependencies that resolve,
        // no cycle.
        let mut level = Plan::new(B256::ZERO, Usdc::ZERO, ReviewMode::Auto);
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
            });
            let named = matches!(nested, Nested::Named(_));
            if let Nested::Named(name) = nested {
                stack.push(name.clone());
            }
            let out = self.level(&child.subtasks, &path, &waits, depth + 1, stack);
            if named {
                stack.pop();
            }
            finals.insert(index, out?);
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
}

#[cfg(test)]
mod tests {
    use alloy::primitives::Address;
    use serde_json::json;

    use super::*;

    fn leaf(index: u32, capability: &str, deps: &[u32]) -> serde_json::Value {
        json!({"index": index, "capability": capability, "spec": format!("{capability} {index}"),
               "executor": Address::repeat_byte(0xaa), "cost": 100,
               "deadline_offset_secs": 3600, "depends_on": deps})
    }

    fn nested(index: u32, deps: &[u32], child: serde_json::Value, cost: u64) -> serde_json::Value {
        json!({"index": index, "spec": format!("group {index}"), "cost": cost,
               "deadline_offset_secs": 3600, "depends_on": deps, "plan": child})
    }

    fn file(subtasks: Vec<serde_json::Value>, plans: serde_json::Value) -> String {
        json!({"version": 1, "id": B256::repeat_byte(1), "budget": 10_000, "review": "auto",
               "subtasks": subtasks, "plans": plans})
        .to_string()
    }

    fn paths(p: &Plan) -> Vec<String> {
        p.subtasks.iter().map(|t| p.path_of(t.index).to_string()).collect()
    }

    #[test]
    fn paths_read_and_write_as_dotted_indexes() {
        let p: StepPath = "2.1.0".parse().unwrap();
        assert_eq!(p.segments(), [2, 1, 0]);
        assert_eq!(p.to_string(), "2.1.0");
        assert!(p.is_inside(&"2".parse().unwrap()));
        assert!(p.is_inside(&"2.1".parse().unwrap()));
        assert!(!p.is_inside(&p));
        assert!(!p.is_inside(&"1".parse().unwrap()));
        assert_eq!(p.enclosing().map(|e| e.to_string()).collect::<Vec<_>>(), ["2", "2.1"]);
        for bad in ["", "1.", ".1", "01", "1..2", "a", "-1", "1.2.3.4.5.6.7.8.9", "99999999999"] {
            assert!(bad.parse::<StepPath>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_nested_step_becomes_its_leaves_with_edges_across_levels() {
        // 0 → [1: 0 → 1] → 2, and 3 independent.
        let child = json!({"subtasks": [leaf(0, "translate", &[]), leaf(1, "summarize", &[0])]});
        let text = file(
            vec![
                leaf(0, "extract", &[]),
                nested(1, &[0], child, 500),
                leaf(2, "sentiment", &[1]),
                leaf(3, "summarize", &[]),
            ],
            json!({}),
        );
        let p = Plan::from_json(&text).unwrap();
        assert_eq!(paths(&p), ["0", "1.0", "1.1", "2", "3"]);
        let deps: Vec<Vec<u32>> = p.subtasks.iter().map(|t| t.depends_on.clone()).collect();
        // The child's first step waits for what the nested step waited for;
        // the dependant of the nested step waits for the child's last step.
        assert_eq!(deps, [vec![], vec![0], vec![1], vec![2], vec![]]);
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0].path.to_string(), "1");
        assert_eq!(p.groups[0].budget, Usdc::from_base_units(500));
        assert_eq!(p.depth(), 2);
        assert_eq!(p.members(&p.groups[0].path), [1, 2]);
        // The flattened form is itself a plan file, read back unchanged.
        let again = Plan::from_json(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(again, p);
        again.validate_shape().unwrap();
    }

    #[test]
    fn a_child_plan_with_parallel_last_steps_hands_both_on() {
        let child = json!({"subtasks": [leaf(0, "translate", &[]), leaf(1, "sentiment", &[])]});
        let text = file(vec![nested(0, &[], child, 300), leaf(1, "summarize", &[0])], json!({}));
        let p = Plan::from_json(&text).unwrap();
        assert_eq!(paths(&p), ["0.0", "0.1", "1"]);
        assert_eq!(p.subtask(2).unwrap().depends_on, [0, 1]);
    }

    #[test]
    fn named_plans_are_reused_and_cycles_refused() {
        let inner = json!({"subtasks": [leaf(0, "translate", &[])], "review": "manual"});
        let text = file(
            vec![nested(0, &[], json!("inner"), 200), nested(1, &[0], json!("inner"), 200)],
            json!({"inner": inner}),
        );
        let p = Plan::from_json(&text).unwrap();
        assert_eq!(paths(&p), ["0.0", "1.0"]);
        assert_eq!(p.subtask(1).unwrap().depends_on, [0]);
        assert_eq!(p.review_of(0), ReviewMode::Manual);
        assert_ne!(p.groups[0].plan_id(p.id), p.groups[1].plan_id(p.id));

        let a = json!({"subtasks": [nested(0, &[], json!("b"), 100)]});
        let b = json!({"subtasks": [nested(0, &[], json!("a"), 100)]});
        let text = file(vec![nested(0, &[], json!("a"), 100)], json!({"a": a, "b": b}));
        let err = Plan::from_json(&text).unwrap_err();
        assert_eq!(err, PlanError::NestingCycle(vec!["a".into(), "b".into(), "a".into()]));
        assert!(err.to_string().contains("a → b → a"), "{err}");

        let text = file(vec![nested(0, &[], json!("missing"), 100)], json!({}));
        assert!(matches!(Plan::from_json(&text), Err(PlanError::UnknownPlan { .. })));
        let text = file(vec![leaf(0, "translate", &[])], json!({"spare": inner}));
        assert_eq!(Plan::from_json(&text), Err(PlanError::UnusedPlans(vec!["spare".into()])));
    }

    /// A chain of plans `levels` deep, one leaf at the bottom.
    fn deep(levels: usize) -> String {
        let mut child = json!({"subtasks": [leaf(0, "translate", &[])]});
        for _ in 2..levels {
            child = json!({"subtasks": [nested(0, &[], child, 100)]});
        }
        file(vec![nested(0, &[], child, 100)], json!({}))
    }

    #[test]
    fn nesting_is_bounded_by_the_configured_depth() {
        let five = Plan::from_json(&deep(5)).unwrap();
        assert_eq!(five.depth(), 5);
        assert_eq!(paths(&five), ["0.0.0.0.0"]);
        let err = Plan::from_json(&deep(6)).unwrap_err();
        assert_eq!(err, PlanError::NestingTooDeep { path: "0.0.0.0.0".into(), depth: 6, max: 5 });
        assert!(err.to_string().contains("at most 5 levels"), "{err}");
        Plan::from_json_nested(&deep(6), 6).unwrap();
        // No configuration lifts the hard limit.
        let err = Plan::from_json_nested(&deep(9), 100).unwrap_err();
        assert!(matches!(err, PlanError::NestingTooDeep { max: MAX_NESTING_DEPTH, .. }), "{err}");
    }

    #[test]
    fn a_level_is_checked_like_a_plan_and_errors_say_where() {
        let child = json!({"subtasks": [leaf(0, "translate", &[1]), leaf(1, "summarize", &[0])]});
        let err = Plan::from_json(&file(vec![nested(0, &[], child, 100)], json!({}))).unwrap_err();
        assert!(err.to_string().starts_with("in nested plan `0`: dependency cycle"), "{err}");
        let mut with_executor =
            nested(0, &[], json!({"subtasks": [leaf(0, "translate", &[])]}), 100);
        with_executor["executor"] = json!(Address::repeat_byte(1));
        let err = Plan::from_json(&file(vec![with_executor], json!({}))).unwrap_err();
        assert!(err.to_string().contains("cannot have an executor"), "{err}");
    }

    #[test]
    fn budget_shares_cap_their_leaves() {
        let child = json!({"subtasks": [leaf(0, "translate", &[]), leaf(1, "summarize", &[0])]});
        let p = Plan::from_json(&file(vec![nested(0, &[], child, 150)], json!({}))).unwrap();
        let err = p.validate_group_budgets().unwrap_err();
        assert!(matches!(err, PlanError::GroupOverBudget { ref path, .. } if path == "0"), "{err}");
        assert!(err.to_string().contains("by 0.000050 USDC"), "{err}");
    }

    #[test]
    fn hand_written_flat_forms_are_checked() {
        let child = json!({"subtasks": [leaf(0, "translate", &[])]});
        let p = Plan::from_json(&file(vec![nested(0, &[], child, 100)], json!({}))).unwrap();
        let mut orphan = p.clone();
        orphan.groups.clear();
        assert!(matches!(orphan.validate_shape(), Err(PlanError::InvalidNesting(_))));
        let mut pathless = p.clone();
        pathless.subtasks[0].path = None;
        assert!(matches!(pathless.validate_shape(), Err(PlanError::InvalidNesting(_))));
        let mut empty = p.clone();
        empty.groups.push(Group { path: "7".parse().unwrap(), ..p.groups[0].clone() });
        assert!(matches!(empty.validate_shape(), Err(PlanError::InvalidNesting(_))));
        p.validate_shape().unwrap();
    }
}
