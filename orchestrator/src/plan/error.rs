//! Why a plan, or an edit to it, is refused.

use std::fmt::Write as _;

use alloy::primitives::Address;
use tessera_bindings::{capability::CapabilityError, usdc::Usdc};

/// Why a plan, or an edit to it, is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// The plan was written in a format this orchestrator does not know.
    #[error(
        "plan format version {found} is not supported (this orchestrator reads version {supported})"
    )]
    UnsupportedVersion {
        /// Version found in the plan.
        found: u32,
        /// Version this crate supports.
        supported: u32,
    },
    /// The plan text is not a plan.
    #[error("plan is not valid JSON: {0}")]
    Json(String),
    /// A plan needs at least one sub-task.
    #[error("plan has no sub-tasks; add at least one")]
    Empty,
    /// More sub-tasks than the orchestrator will run in one plan.
    #[error("plan has {count} sub-tasks, more than the limit of {max}; merge or split the brief")]
    TooManySubtasks {
        /// Sub-tasks in the plan.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Two sub-tasks share an index.
    #[error("sub-task index {0} is used more than once")]
    DuplicateIndex(u32),
    /// Indexes must be exactly `0..n`.
    #[error("sub-task indexes must run 0..n without gaps: expected {expected}, found {found}")]
    NonContiguousIndexes {
        /// The index that should come next.
        expected: u32,
        /// The index found instead.
        found: u32,
    },
    /// An edit named a sub-task that is not in the plan.
    #[error("there is no sub-task {0} in this plan")]
    UnknownIndex(u32),
    /// The capability name cannot be stored on chain.
    #[error("sub-task {index}: {source}")]
    InvalidCapability {
        /// The sub-task.
        index: u32,
        /// Why the name is refused.
        source: CapabilityError,
    },
    /// No executor offers this capability.
    #[error("sub-task {index}: capability `{capability}` is not offered by any registered agent")]
    UnknownCapability {
        /// The sub-task.
        index: u32,
        /// The capability name.
        capability: String,
    },
    /// The spec is too large to hand to an executor.
    #[error("sub-task {index}: spec is {bytes} bytes, over the limit of {max}; shorten it")]
    SpecTooLarge {
        /// The sub-task.
        index: u32,
        /// Size of the spec.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The words that chose a sub-task's capability are not a short list
    /// of short words.
    #[error("sub-task {index}: chosen_by {problem}")]
    InvalidChosenBy {
        /// The sub-task.
        index: u32,
        /// What is wrong.
        problem: String,
    },
    /// The deadline offset is outside the accepted window.
    #[error("sub-task {index}: deadline offset of {secs} s is outside {min} s ..= {max} s")]
    DeadlineOutOfRange {
        /// The sub-task.
        index: u32,
        /// The requested offset in seconds.
        secs: u64,
        /// Lower bound in seconds.
        min: u64,
        /// Upper bound in seconds.
        max: u64,
    },
    /// A sub-task lists itself as a dependency.
    #[error("sub-task {0} depends on itself")]
    SelfDependency(u32),
    /// A sub-task depends on an index that is not in the plan.
    #[error("sub-task {index} depends on sub-task {missing}, which is not in the plan")]
    MissingDependency {
        /// The sub-task.
        index: u32,
        /// The missing dependency.
        missing: u32,
    },
    /// The dependencies loop; each listed sub-task depends on the next, the
    /// last on the first.
    #[error("dependency cycle: {}", fmt_cycle(.0))]
    Cycle(Vec<u32>),
    /// No executor chosen yet.
    #[error("sub-task {0} has no executor assigned; assign one before running")]
    ExecutorUnassigned(u32),
    /// The executor is not in the agent registry.
    #[error("sub-task {index}: executor {executor} is not registered")]
    ExecutorNotRegistered {
        /// The sub-task.
        index: u32,
        /// The executor.
        executor: Address,
    },
    /// The executor is registered but currently paused.
    #[error("sub-task {index}: executor {executor} is paused; re-assign the sub-task")]
    ExecutorPaused {
        /// The sub-task.
        index: u32,
        /// The executor.
        executor: Address,
    },
    /// The sum of sub-task costs does not fit in 128 bits.
    #[error("total cost overflows; sub-task costs are implausibly large")]
    CostOverflow,
    /// The sub-tasks cost more than the plan's budget.
    #[error("total cost {} exceeds the budget {} by {}", .total.with_unit(), .budget.with_unit(), .excess.with_unit())]
    OverBudget {
        /// Sum of sub-task costs.
        total: Usdc,
        /// The plan budget.
        budget: Usdc,
        /// `total - budget`.
        excess: Usdc,
    },
    /// Dropping this sub-task would leave others with a missing dependency.
    #[error("cannot drop sub-task {index}: sub-tasks {} depend on it; drop or edit them first", fmt_list(.dependents))]
    HasDependents {
        /// The sub-task to drop.
        index: u32,
        /// Sub-tasks depending on it.
        dependents: Vec<u32>,
    },
    /// The source material is too large to hand to executors.
    #[error("source material is {bytes} bytes, over the limit of {max}")]
    SourceTooLarge {
        /// Size of the source.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The review window is outside what the escrow accepts.
    #[error("review window of {secs} s is outside {min} s ..= {max} s")]
    ReviewWindowOutOfRange {
        /// The requested window.
        secs: u32,
        /// Lower bound.
        min: u32,
        /// Upper bound.
        max: u32,
    },
    /// The accept window is longer than a plan may ask for.
    #[error("accept window of {blocks} blocks is over the most, {max}")]
    AcceptWindowTooLong {
        /// The requested window.
        blocks: u32,
        /// Upper bound.
        max: u32,
    },
    /// The executor does not offer the capability, or asks more than the plan pays.
    #[error("sub-task {index}: executor {executor} {problem}")]
    ExecutorOffer {
        /// The sub-task.
        index: u32,
        /// The executor.
        executor: Address,
        /// What is wrong with its offer.
        problem: String,
    },
    /// A reorder must list every current index exactly once.
    #[error("new order must list each of the {expected} sub-task indexes exactly once")]
    InvalidOrder {
        /// Number of sub-tasks in the plan.
        expected: usize,
    },
    /// A sub-task's condition does not parse.
    #[error("sub-task {index}: {source}")]
    InvalidCondition {
        /// The sub-task.
        index: u32,
        /// Why.
        source: crate::condition::ConditionError,
    },
    /// A condition reads a sub-task its sub-task does not depend on.
    #[error(
        "sub-task {index}: its condition reads out[{read}], which it does not depend on (add {read} \
         to depends_on)"
    )]
    ConditionReference {
        /// The sub-task.
        index: u32,
        /// The sub-task read.
        read: u32,
    },
    /// A condition reads a field the result of the step it reads does not
    /// publish (see [`super::Plan::validate`]).
    #[error("step {step}: condition `{condition}` reads {field}, {problem}")]
    ConditionField {
        /// The step whose condition it is (its path).
        step: String,
        /// The condition, as the plan card shows it (cut to 120 characters).
        condition: String,
        /// The field read, `out[0].sentiment`.
        field: String,
        /// Why it cannot be read: the schema lacks it (with the fields the
        /// schema has), or no schema is published.
        problem: String,
    },
    /// An edit would renumber a sub-task a condition reads.
    #[error(
        "sub-task {0}'s condition reads sub-tasks this edit would renumber; edit the plan file \
         instead"
    )]
    ConditionRenumbered(u32),
    /// A checkpoint is malformed.
    #[error("checkpoint `{name}`: {problem}")]
    InvalidCheckpoint {
        /// Its name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// Upfront funding does not fit the plan (see
    /// [`super::Plan::validate_funding`]).
    #[error("upfront funding: {0}")]
    Funding(String),
    /// A recovery policy is not one of the words.
    #[error("`{0}` is not a recovery policy (retry(1) to retry(5), reassign, pause or cancel)")]
    InvalidPolicy(String),
    /// A step path is not dotted indexes (`2.1.0`).
    #[error("`{0}` is not a step path (indexes joined by dots, such as 2.1.0)")]
    InvalidPath(String),
    /// A nested plan would sit deeper than the orchestrator allows.
    #[error(
        "step `{path}` would open plan level {depth}; plans nest at most {max} levels deep \
         (the root plan is level 1)"
    )]
    NestingTooDeep {
        /// The nested step.
        path: String,
        /// The level its child plan would be.
        depth: usize,
        /// The limit.
        max: usize,
    },
    /// Named plans include each other.
    #[error("nested plans include each other: {}", .0.join(" → "))]
    NestingCycle(Vec<String>),
    /// A step names a plan the file does not define.
    #[error("step `{path}` names plan `{name}`, which the file's `plans` does not define")]
    UnknownPlan {
        /// The nested step.
        path: String,
        /// The name.
        name: String,
    },
    /// A condition reads a nested step whose child plan ends in several
    /// steps: which output it means is unclear.
    #[error(
        "step `{path}`: its condition reads out[{read}], a nested plan that ends in {ends} steps; \
         a condition reads one step's output (end the nested plan in one step)"
    )]
    ConditionReadsNested {
        /// The step whose condition it is.
        path: String,
        /// The nested step it reads.
        read: String,
        /// How many steps its child plan ends in.
        ends: usize,
    },
    /// Named plans no step uses.
    #[error("plans {} are defined but no step uses them", .0.join(", "))]
    UnusedPlans(Vec<String>),
    /// Nested steps and a flattened plan's paths mixed in one file.
    #[error(
        "a plan either nests steps (`plan` on a step) or is flattened (`path` and `groups`), not both"
    )]
    MixedNesting,
    /// A flattened plan's paths and groups do not fit together.
    #[error("nesting: {0}")]
    InvalidNesting(String),
    /// A refusal inside a nested plan.
    #[error("in nested plan `{path}`: {source}")]
    Nested {
        /// The nested step.
        path: String,
        /// The refusal.
        source: Box<PlanError>,
    },
    /// A nested plan's leaves cost more than its budget share.
    #[error(
        "nested plan `{path}` costs {} but its budget share is {}: over by {}",
        total.with_unit(),
        budget.with_unit(),
        excess.with_unit()
    )]
    GroupOverBudget {
        /// The nested step.
        path: String,
        /// What its leaves cost.
        total: Usdc,
        /// Its share.
        budget: Usdc,
        /// `total - budget`.
        excess: Usdc,
    },
}

fn fmt_list(items: &[u32]) -> String {
    items.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

fn fmt_cycle(cycle: &[u32]) -> String {
    let mut out = String::new();
    for index in cycle {
        let _ = write!(out, "{index} depends on ");
    }
    if let Some(first) = cycle.first() {
        let _ = write!(out, "{first}");
    }
    out
}
