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
//! References keep the author's numbering. Each level (the root plan, and
//! each child plan) numbers its own steps `0..n`, and a step's
//! `depends_on`, its condition's `out[n]` and the level's checkpoints'
//! `after` name steps of that level. Flattening is the one place they are
//! turned into the run's indexes: `out[n]` of a nested step reads the one
//! step its child plan ends in (refused when it ends in several), and a
//! checkpoint after a nested step follows the steps its child plan ends in.
//!
//! A nested step's `when` and `recovery` hold for its whole child plan: a
//! false condition skips every leaf, unfunded (kept on the [`Group`], read
//! by the runner before each leaf's own); its recovery is each leaf's
//! default, a leaf's own policy winning.
//!
//! A nested step holds no escrow of its own: its money is its children's,
//! and its budget share caps what they may spend. Nesting is bounded (at most
//! [`DEFAULT_MAX_NESTING_DEPTH`] levels unless configured, never more than
//! [`MAX_NESTING_DEPTH`]), and plans that include each other by name are
//! refused as a cycle.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    str::FromStr,
};

use alloy::primitives::keccak256;
use serde::{Deserialize, Serialize};
use tessera_bindings::usdc::Usdc;

use super::{
    Checkpoint, MAX_SPEC_BYTES, MAX_SUBTASKS, Plan, PlanError, PlanId, ReviewMode, SubTask,
};
use crate::condition::{Condition, When};

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
    /// Gates after its steps, `after` in its own numbering; they join the
    /// root plan's (names are unique across the plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Checkpoint>,
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
    /// The nested step's condition, over the run's indexes: false skips
    /// every leaf of the child plan, unfunded. It reads only what the child
    /// plan's first leaves depend on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

impl Group {
    /// The child plan's id: keccak256 of the root plan's id and the path,
    /// so the same nested step of the same plan always has the same id.
    pub fn plan_id(&self, root: PlanId) -> PlanId {
        PlanId::new(keccak256([root.as_slice(), b":", self.path.to_string().as_bytes()].concat()))
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

    /// The conditions sub-task `index` runs under, outermost first: each
    /// enclosing nested step's, then its own; each with the path of the
    /// step whose condition it is. Any false skips the sub-task.
    pub fn conditions_of(&self, index: u32) -> Vec<(StepPath, &When)> {
        let mut out: Vec<(StepPath, &When)> = self
            .groups_of(index)
            .into_iter()
            .filter_map(|g| g.when.as_ref().map(|w| (g.path.clone(), w)))
            .collect();
        if let Some(when) = self.subtask(index).and_then(|t| t.when.as_ref()) {
            out.push((self.path_of(index), when));
        }
        out
    }

    /// A condition of this plan as a card shows it: for a nested plan, each
    /// `out[n]` written with the step path of sub-task `n` (`out[1.0]`);
    /// otherwise, or when it does not parse, as written.
    pub fn condition_by_path(&self, when: &str) -> String {
        match Condition::parse(when) {
            Ok(c) if !self.groups.is_empty() => c.relabelled(|n| self.path_of(n).to_string()),
            _ => when.to_owned(),
        }
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
            let members = self.members(&g.path);
            if members.is_empty() {
                return Err(PlanError::InvalidNesting(format!(
                    "nested plan `{}` has no sub-task",
                    g.path
                )));
            }
            if let Some(when) = &g.when {
                let condition = Condition::parse(when).map_err(|e| {
                    PlanError::InvalidNesting(format!("nested plan `{}`: {e}", g.path))
                })?;
                // What the nested step waits for is what its first leaves do.
                let firsts = members
                    .iter()
                    .filter_map(|&i| self.subtask(i))
                    .filter(|t| !t.depends_on.iter().any(|d| members.contains(d)));
                for t in firsts {
                    if let Some(r) =
                        condition.references().into_iter().find(|r| !t.depends_on.contains(r))
                    {
                        return Err(PlanError::InvalidNesting(format!(
                            "nested plan `{}`: its condition reads out[{r}], which it does not \
                             wait for",
                            g.path
                        )));
                    }
                }
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

#[cfg(test)]
#[path = "nest_tests.rs"]
mod tests;
