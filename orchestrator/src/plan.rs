//! The plan model: the sub-tasks a brief is split into, how they depend on
//! each other, who executes them and what they cost.
//!
//! A [`Plan`] is plain data (serde, versioned). Checks come in two layers:
//!
//! - [`Plan::validate_shape`] needs nothing but the plan: indexes, the
//!   dependency graph (resolvable, acyclic), capability-name syntax and limits;
//! - [`Plan::validate`] adds what only the outside world can answer through a
//!   [`PlanContext`] (known capabilities, executor registration) and the budget.
//!
//! Sub-task indexes are always `0..n` once a plan is shape-valid; the edits
//! ([`Plan::reorder`], [`Plan::drop_subtask`]) re-index to keep it so.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashMap, HashSet},
    fmt::Write as _,
    time::Duration,
};

use alloy::primitives::{Address, B256, keccak256};
use serde::{Deserialize, Serialize};
use tessera_bindings::capability::{self, CapabilityError};

/// The plan format version this crate writes and accepts.
pub const PLAN_VERSION: u32 = 1;
/// Most sub-tasks a plan may hold.
pub const MAX_SUBTASKS: usize = 64;
/// Largest spec, in bytes, a single sub-task may carry.
pub const MAX_SPEC_BYTES: usize = 16 * 1024;
/// Shortest deadline offset a sub-task may ask for (one minute).
pub const MIN_DEADLINE_SECS: u64 = 60;
/// Longest deadline offset a sub-task may ask for (30 days).
pub const MAX_DEADLINE_SECS: u64 = 30 * 24 * 60 * 60;

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
    #[error("total cost {total} exceeds the budget {budget} by {excess} (USDC base units)")]
    OverBudget {
        /// Sum of sub-task costs.
        total: u128,
        /// The plan budget.
        budget: u128,
        /// `total - budget`.
        excess: u128,
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

/// Whether completed sub-tasks are paid at once or wait for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewMode {
    /// Pay each sub-task as soon as it completes.
    #[default]
    Auto,
    /// Pause each completed sub-task for approve & pay or dispute.
    Manual,
}

/// One unit of work, settled through its own escrowed task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubTask {
    /// Position in the plan; indexes run `0..n`.
    pub index: u32,
    /// Capability name as registered (at most 31 bytes, no NUL).
    pub capability: String,
    /// The instruction for the executor.
    pub spec: String,
    /// Agent that will do the work; `None` until one is assigned.
    #[serde(default)]
    pub executor: Option<Address>,
    /// Price in USDC base units.
    pub cost: u128,
    /// Seconds the executor gets from task creation.
    pub deadline_offset_secs: u64,
    /// Indexes of sub-tasks whose output this one needs.
    #[serde(default)]
    pub depends_on: Vec<u32>,
}

/// A brief split into sub-tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Format version; [`PLAN_VERSION`] for plans this crate writes.
    pub version: u32,
    /// Plan id. Plans named by a string use [`Plan::id_from_label`]
    /// (keccak256 of the label), so the id is always 32 bytes, as on chain.
    pub id: B256,
    /// The sub-tasks, in index order.
    pub subtasks: Vec<SubTask>,
    /// How completed sub-tasks are settled.
    #[serde(default)]
    pub review: ReviewMode,
    /// Most the plan may spend, in USDC base units.
    pub budget: u128,
    /// The brief's material (an article, a document), handed to root
    /// sub-tasks in their envelope's `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Seconds the client has to review each delivered sub-task before the
    /// payment releases by itself.
    #[serde(default = "default_review_window")]
    pub review_window_secs: u32,
}

/// Review window when a plan names none: ten minutes.
pub const DEFAULT_REVIEW_WINDOW_SECS: u32 = 600;
/// The escrow's shortest review window.
pub const MIN_REVIEW_WINDOW_SECS: u32 = 60;
/// The escrow's longest review window.
pub const MAX_REVIEW_WINDOW_SECS: u32 = 30 * 24 * 60 * 60;
/// Largest source material a plan carries inline.
pub const MAX_SOURCE_BYTES: usize = 256 * 1024;

fn default_review_window() -> u32 {
    DEFAULT_REVIEW_WINDOW_SECS
}

/// What executors look like to the plan validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorStatus {
    /// Registered and taking work.
    Active,
    /// Registered but not taking work.
    Paused,
    /// Not in the registry.
    Unknown,
}

/// The outside facts a plan is checked against; the chain-backed
/// implementation answers from the agent registry.
pub trait PlanContext {
    /// Whether some registered agent offers `capability`.
    fn is_known_capability(&self, capability: &str) -> bool;
    /// Registration status of `executor`.
    fn executor_status(&self, executor: Address) -> ExecutorStatus;
    /// The price `executor` asks for `capability`, when the context knows
    /// prices; `Some(None)` when it knows the executor does not offer it.
    fn executor_price(&self, _executor: Address, _capability: &str) -> Option<Option<u128>> {
        None
    }
}

/// A [`PlanContext`] held in memory, for tests and the offline planner.
#[derive(Debug, Clone, Default)]
pub struct InMemoryContext {
    capabilities: HashSet<String>,
    executors: HashMap<Address, ExecutorStatus>,
    prices: Option<HashMap<(Address, String), u128>>,
}

impl InMemoryContext {
    /// An empty context: no capabilities, no executors.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a known capability.
    pub fn with_capability(mut self, capability: impl Into<String>) -> Self {
        self.capabilities.insert(capability.into());
        self
    }

    /// Records an executor's status.
    pub fn with_executor(mut self, executor: Address, status: ExecutorStatus) -> Self {
        self.executors.insert(executor, status);
        self
    }

    /// Records an offer; once any offer is recorded, executors are checked
    /// against their offers (capability offered, price within cost).
    pub fn with_offer(mut self, executor: Address, capability: &str, price: u128) -> Self {
        self.capabilities.insert(capability.to_owned());
        self.prices
            .get_or_insert_with(HashMap::new)
            .insert((executor, capability.to_owned()), price);
        self
    }
}

impl PlanContext for InMemoryContext {
    fn is_known_capability(&self, capability: &str) -> bool {
        self.capabilities.contains(capability)
    }

    fn executor_status(&self, executor: Address) -> ExecutorStatus {
        self.executors.get(&executor).copied().unwrap_or(ExecutorStatus::Unknown)
    }

    fn executor_price(&self, executor: Address, capability: &str) -> Option<Option<u128>> {
        let prices = self.prices.as_ref()?;
        Some(prices.get(&(executor, capability.to_owned())).copied())
    }
}

/// Dependency graph over positions `0..n` (equal to indexes once checked).
struct Graph {
    deps: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
}

#[derive(Deserialize)]
struct VersionProbe {
    version: u32,
}

impl Plan {
    /// An empty plan of the current version.
    pub fn new(id: B256, budget: u128, review: ReviewMode) -> Self {
        Self {
            version: PLAN_VERSION,
            id,
            subtasks: Vec::new(),
            review,
            budget,
            source: None,
            review_window_secs: DEFAULT_REVIEW_WINDOW_SECS,
        }
    }

    /// The id of a plan named by a string: keccak256 of its UTF-8 bytes.
    pub fn id_from_label(label: &str) -> B256 {
        keccak256(label.as_bytes())
    }

    /// Parses a plan from JSON, refusing unknown versions before anything else.
    pub fn from_json(json: &str) -> Result<Self, PlanError> {
        let probe: VersionProbe =
            serde_json::from_str(json).map_err(|e| PlanError::Json(e.to_string()))?;
        check_version(probe.version)?;
        serde_json::from_str(json).map_err(|e| PlanError::Json(e.to_string()))
    }

    /// The sub-task with `index`, if any.
    pub fn subtask(&self, index: u32) -> Option<&SubTask> {
        self.subtasks.iter().find(|s| s.index == index)
    }

    /// Checks everything that needs only the plan: version, indexes `0..n`,
    /// limits, capability-name syntax, resolvable and acyclic dependencies.
    pub fn validate_shape(&self) -> Result<(), PlanError> {
        check_version(self.version)?;
        if self.subtasks.len() > MAX_SUBTASKS {
            return Err(PlanError::TooManySubtasks {
                count: self.subtasks.len(),
                max: MAX_SUBTASKS,
            });
        }
        if let Some(source) = &self.source
            && source.len() > MAX_SOURCE_BYTES
        {
            return Err(PlanError::SourceTooLarge { bytes: source.len(), max: MAX_SOURCE_BYTES });
        }
        if !(MIN_REVIEW_WINDOW_SECS..=MAX_REVIEW_WINDOW_SECS).contains(&self.review_window_secs) {
            return Err(PlanError::ReviewWindowOutOfRange {
                secs: self.review_window_secs,
                min: MIN_REVIEW_WINDOW_SECS,
                max: MAX_REVIEW_WINDOW_SECS,
            });
        }
        let sorted = self.sorted()?;
        for task in &sorted {
            capability::encode(&task.capability)
                .map_err(|source| PlanError::InvalidCapability { index: task.index, source })?;
            if task.spec.len() > MAX_SPEC_BYTES {
                return Err(PlanError::SpecTooLarge {
                    index: task.index,
                    bytes: task.spec.len(),
                    max: MAX_SPEC_BYTES,
                });
            }
            if !(MIN_DEADLINE_SECS..=MAX_DEADLINE_SECS).contains(&task.deadline_offset_secs) {
                return Err(PlanError::DeadlineOutOfRange {
                    index: task.index,
                    secs: task.deadline_offset_secs,
                    min: MIN_DEADLINE_SECS,
                    max: MAX_DEADLINE_SECS,
                });
            }
        }
        self.topological_order().map(drop)
    }

    /// Full validation: [`Plan::validate_shape`], then capabilities and
    /// executors against `ctx`, then the budget.
    pub fn validate(&self, ctx: &impl PlanContext) -> Result<(), PlanError> {
        self.validate_with(ctx, true)
    }

    /// [`Plan::validate`] for a plan still being drafted: sub-tasks without
    /// an executor are allowed (the card asks for a manual pick); everything
    /// else is checked.
    pub fn validate_draft(&self, ctx: &impl PlanContext) -> Result<(), PlanError> {
        self.validate_with(ctx, false)
    }

    fn validate_with(
        &self,
        ctx: &impl PlanContext,
        require_executors: bool,
    ) -> Result<(), PlanError> {
        self.validate_shape()?;
        for task in self.sorted()? {
            if !ctx.is_known_capability(&task.capability) {
                return Err(PlanError::UnknownCapability {
                    index: task.index,
                    capability: task.capability.clone(),
                });
            }
            let Some(executor) = task.executor else {
                if require_executors {
                    return Err(PlanError::ExecutorUnassigned(task.index));
                }
                continue;
            };
            match ctx.executor_status(executor) {
                ExecutorStatus::Active => {}
                ExecutorStatus::Paused => {
                    return Err(PlanError::ExecutorPaused { index: task.index, executor });
                }
                ExecutorStatus::Unknown => {
                    return Err(PlanError::ExecutorNotRegistered { index: task.index, executor });
                }
            }
            match ctx.executor_price(executor, &task.capability) {
                None => {}
                Some(None) => {
                    return Err(PlanError::ExecutorOffer {
                        index: task.index,
                        executor,
                        problem: format!("does not offer `{}`", task.capability),
                    });
                }
                Some(Some(price)) if price > task.cost => {
                    return Err(PlanError::ExecutorOffer {
                        index: task.index,
                        executor,
                        problem: format!(
                            "asks {price} for `{}` but the sub-task pays {}",
                            task.capability, task.cost
                        ),
                    });
                }
                Some(Some(_)) => {}
            }
        }
        let total = self.total_cost()?;
        if total > self.budget {
            return Err(PlanError::OverBudget {
                total,
                budget: self.budget,
                excess: total - self.budget,
            });
        }
        Ok(())
    }

    /// Sum of sub-task costs in USDC base units.
    pub fn total_cost(&self) -> Result<u128, PlanError> {
        self.subtasks
            .iter()
            .try_fold(0u128, |sum, task| sum.checked_add(task.cost))
            .ok_or(PlanError::CostOverflow)
    }

    /// Indexes in an order that respects dependencies (Kahn's algorithm);
    /// among sub-tasks ready at the same time the lowest index goes first, so
    /// the order is deterministic.
    pub fn topological_order(&self) -> Result<Vec<u32>, PlanError> {
        let graph = self.graph()?;
        Ok(kahn(&graph)?.into_iter().map(to_index).collect())
    }

    /// Groups of indexes that can run in parallel: wave `k` holds the
    /// sub-tasks whose longest dependency chain has `k` links. Each wave is
    /// sorted by index.
    pub fn waves(&self) -> Result<Vec<Vec<u32>>, PlanError> {
        let graph = self.graph()?;
        let order = kahn(&graph)?;
        let mut level = vec![0usize; order.len()];
        let mut waves: Vec<Vec<u32>> = Vec::new();
        for &node in &order {
            level[node] = graph.deps[node].iter().map(|&d| level[d] + 1).max().unwrap_or(0);
            if waves.len() <= level[node] {
                waves.resize_with(level[node] + 1, Vec::new);
            }
            waves[level[node]].push(to_index(node));
        }
        for wave in &mut waves {
            wave.sort_unstable();
        }
        Ok(waves)
    }

    /// Longest chain of deadline offsets through the dependency graph: how
    /// long the plan may take if every sub-task uses its full deadline.
    pub fn estimated_duration(&self) -> Result<Duration, PlanError> {
        let graph = self.graph()?;
        let order = kahn(&graph)?;
        let sorted = self.sorted()?;
        let mut finish = vec![0u64; order.len()];
        for &node in &order {
            let start = graph.deps[node].iter().map(|&d| finish[d]).max().unwrap_or(0);
            finish[node] = start.saturating_add(sorted[node].deadline_offset_secs);
        }
        Ok(Duration::from_secs(finish.into_iter().max().unwrap_or(0)))
    }

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
        let mut plan = self.clone();
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
        plan.validate_shape()?;
        Ok(plan)
    }

    /// Sub-tasks sorted by index, after checking indexes are exactly `0..n`.
    fn sorted(&self) -> Result<Vec<&SubTask>, PlanError> {
        if self.subtasks.is_empty() {
            return Err(PlanError::Empty);
        }
        let mut sorted: Vec<&SubTask> = self.subtasks.iter().collect();
        sorted.sort_by_key(|s| s.index);
        for pair in sorted.windows(2) {
            if pair[0].index == pair[1].index {
                return Err(PlanError::DuplicateIndex(pair[0].index));
            }
        }
        for (expected, task) in sorted.iter().enumerate() {
            let expected = to_index(expected);
            if task.index != expected {
                return Err(PlanError::NonContiguousIndexes { expected, found: task.index });
            }
        }
        Ok(sorted)
    }

    fn graph(&self) -> Result<Graph, PlanError> {
        let sorted = self.sorted()?;
        let n = sorted.len();
        let mut deps = vec![Vec::new(); n];
        let mut dependents = vec![Vec::new(); n];
        for (node, task) in sorted.iter().enumerate() {
            for &dep in &task.depends_on {
                if dep == task.index {
                    return Err(PlanError::SelfDependency(task.index));
                }
                if dep as usize >= n {
                    return Err(PlanError::MissingDependency { index: task.index, missing: dep });
                }
                deps[node].push(dep as usize);
                dependents[dep as usize].push(node);
            }
        }
        for list in deps.iter_mut().chain(dependents.iter_mut()) {
            list.sort_unstable();
            list.dedup();
        }
        Ok(Graph { deps, dependents })
    }
}

fn check_version(found: u32) -> Result<(), PlanError> {
    if found == PLAN_VERSION {
        Ok(())
    } else {
        Err(PlanError::UnsupportedVersion { found, supported: PLAN_VERSION })
    }
}

/// Positions come from plans capped well below `u32::MAX` sub-tasks.
fn to_index(position: usize) -> u32 {
    u32::try_from(position).unwrap_or(u32::MAX)
}

/// Kahn's algorithm with a min-heap so ties go to the lowest index; on a
/// cycle, reports one cycle found among the nodes left over.
fn kahn(graph: &Graph) -> Result<Vec<usize>, PlanError> {
    let n = graph.deps.len();
    let mut pending: Vec<usize> = graph.deps.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&v| pending[v] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(node)) = ready.pop() {
        order.push(node);
        for &next in &graph.dependents[node] {
            pending[next] -= 1;
            if pending[next] == 0 {
                ready.push(Reverse(next));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every leftover node still waits on a leftover dependency, so following
    // dependencies from any leftover node must revisit one: that loop is a cycle.
    let mut seen_at: HashMap<usize, usize> = HashMap::new();
    let mut path = Vec::new();
    let mut node = (0..n).find(|&v| pending[v] > 0).unwrap_or(0);
    let start = loop {
        if let Some(&at) = seen_at.get(&node) {
            break at;
        }
        seen_at.insert(node, path.len());
        path.push(node);
        node = graph.deps[node].iter().copied().find(|&d| pending[d] > 0).unwrap_or(node);
    };
    let mut cycle: Vec<u32> = path[start..].iter().copied().map(to_index).collect();
    if let Some(min_at) = cycle.iter().enumerate().min_by_key(|&(_, v)| *v).map(|(i, _)| i) {
        cycle.rotate_left(min_at);
    }
    Err(PlanError::Cycle(cycle))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Address = Address::repeat_byte(0xaa);
    const B: Address = Address::repeat_byte(0xbb);
    const PAUSED: Address = Address::repeat_byte(0xcc);

    fn task(index: u32, depends_on: &[u32]) -> SubTask {
        SubTask {
            index,
            capability: "summarize".into(),
            spec: format!("do step {index}"),
            executor: Some(A),
            cost: 100,
            deadline_offset_secs: 3600,
            depends_on: depends_on.to_vec(),
        }
    }

    fn plan(tasks: Vec<SubTask>) -> Plan {
        let mut plan = Plan::new(Plan::id_from_label("test"), 1_000, ReviewMode::Auto);
        plan.subtasks = tasks;
        plan
    }

    fn ctx() -> InMemoryContext {
        InMemoryContext::new()
            .with_capability("summarize")
            .with_capability("translate")
            .with_executor(A, ExecutorStatus::Active)
            .with_executor(B, ExecutorStatus::Active)
            .with_executor(PAUSED, ExecutorStatus::Paused)
    }

    #[test]
    fn offers_are_checked_when_prices_are_known() {
        let p = plan(vec![task(0, &[])]);
        let priced = ctx().with_offer(A, "summarize", 100);
        assert_eq!(p.validate(&priced), Ok(()));
        let dear = ctx().with_offer(A, "summarize", 101);
        let err = p.validate(&dear).unwrap_err();
        assert!(err.to_string().contains("asks 101 for `summarize` but the sub-task pays 100"));
        let other = ctx().with_offer(A, "translate", 1);
        let err = p.validate(&other).unwrap_err();
        assert!(err.to_string().contains("does not offer `summarize`"), "{err}");
    }

    #[test]
    fn drafts_may_leave_executors_unassigned() {
        let mut t = task(0, &[]);
        t.executor = None;
        let p = plan(vec![t]);
        assert_eq!(p.validate_draft(&ctx()), Ok(()));
        assert_eq!(p.validate(&ctx()), Err(PlanError::ExecutorUnassigned(0)));
    }

    #[test]
    fn source_and_review_window_limits() {
        let mut p = plan(vec![task(0, &[])]);
        p.source = Some("x".repeat(MAX_SOURCE_BYTES + 1));
        assert!(matches!(p.validate_shape(), Err(PlanError::SourceTooLarge { .. })));
        p.source = Some("article".into());
        p.review_window_secs = MIN_REVIEW_WINDOW_SECS - 1;
        assert!(matches!(p.validate_shape(), Err(PlanError::ReviewWindowOutOfRange { .. })));
        p.review_window_secs = MIN_REVIEW_WINDOW_SECS;
        assert_eq!(p.validate_shape(), Ok(()));
    }

    #[test]
    fn review_window_defaults_when_absent_from_json() {
        let mut json = serde_json::to_value(plan(vec![task(0, &[])])).unwrap();
        json.as_object_mut().unwrap().remove("review_window_secs");
        let parsed = Plan::from_json(&json.to_string()).unwrap();
        assert_eq!(parsed.review_window_secs, DEFAULT_REVIEW_WINDOW_SECS);
        assert_eq!(parsed.source, None);
    }

    /// 0 → {1, 2} → 3 (diamond).
    fn diamond() -> Plan {
        plan(vec![task(0, &[]), task(1, &[0]), task(2, &[0]), task(3, &[1, 2])])
    }

    #[test]
    fn valid_plan_passes() {
        diamond().validate(&ctx()).unwrap();
    }

    #[test]
    fn json_round_trip_and_version_gate() {
        let plan = diamond();
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(Plan::from_json(&json).unwrap(), plan);

        let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
        value["version"] = 2.into();
        // Version is checked before the rest of the shape.
        value["subtasks"] = "garbage".into();
        assert_eq!(
            Plan::from_json(&value.to_string()),
            Err(PlanError::UnsupportedVersion { found: 2, supported: 1 })
        );
        assert!(matches!(Plan::from_json("{"), Err(PlanError::Json(_))));

        let mut old = diamond();
        old.version = 0;
        assert!(matches!(
            old.validate(&ctx()),
            Err(PlanError::UnsupportedVersion { found: 0, .. })
        ));
    }

    #[test]
    fn id_from_label_is_keccak() {
        assert_eq!(Plan::id_from_label("abc"), keccak256(b"abc"));
        assert_ne!(Plan::id_from_label("abc"), Plan::id_from_label("abd"));
    }

    #[test]
    fn refuses_bad_indexes() {
        assert_eq!(plan(vec![]).validate(&ctx()), Err(PlanError::Empty));
        assert_eq!(
            plan(vec![task(0, &[]), task(0, &[])]).validate(&ctx()),
            Err(PlanError::DuplicateIndex(0))
        );
        assert_eq!(
            plan(vec![task(0, &[]), task(2, &[])]).validate(&ctx()),
            Err(PlanError::NonContiguousIndexes { expected: 1, found: 2 })
        );
        // Order in the vector does not matter, only the set of indexes.
        plan(vec![task(1, &[0]), task(0, &[])]).validate(&ctx()).unwrap();
    }

    #[test]
    fn refuses_bad_dependencies() {
        assert_eq!(plan(vec![task(0, &[0])]).validate(&ctx()), Err(PlanError::SelfDependency(0)));
        assert_eq!(
            plan(vec![task(0, &[]), task(1, &[5])]).validate(&ctx()),
            Err(PlanError::MissingDependency { index: 1, missing: 5 })
        );
    }

    #[test]
    fn reports_the_cycle() {
        // 0 is fine; 1 → 3 → 2 → 1 loops; 4 hangs off the loop.
        let p =
            plan(vec![task(0, &[]), task(1, &[0, 3]), task(2, &[1]), task(3, &[2]), task(4, &[2])]);
        let err = p.validate(&ctx()).unwrap_err();
        assert_eq!(err, PlanError::Cycle(vec![1, 3, 2]));
        assert_eq!(err.to_string(), "dependency cycle: 1 depends on 3 depends on 2 depends on 1");
        assert_eq!(p.topological_order(), Err(PlanError::Cycle(vec![1, 3, 2])));
    }

    #[test]
    fn refuses_bad_capabilities() {
        let mut bad = task(0, &[]);
        bad.capability = "x".repeat(32);
        assert!(matches!(
            plan(vec![bad]).validate(&ctx()),
            Err(PlanError::InvalidCapability { index: 0, source: CapabilityError::TooLong(_) })
        ));
        let mut unknown = task(0, &[]);
        unknown.capability = "juggle".into();
        assert_eq!(
            plan(vec![unknown.clone()]).validate(&ctx()),
            Err(PlanError::UnknownCapability { index: 0, capability: "juggle".into() })
        );
        // Shape checks do not need the registry.
        plan(vec![unknown]).validate_shape().unwrap();
    }

    #[test]
    fn refuses_bad_executors() {
        let mut t = task(0, &[]);
        t.executor = None;
        assert_eq!(plan(vec![t.clone()]).validate(&ctx()), Err(PlanError::ExecutorUnassigned(0)));
        let stranger = Address::repeat_byte(0x11);
        t.executor = Some(stranger);
        assert_eq!(
            plan(vec![t.clone()]).validate(&ctx()),
            Err(PlanError::ExecutorNotRegistered { index: 0, executor: stranger })
        );
        t.executor = Some(PAUSED);
        assert_eq!(
            plan(vec![t]).validate(&ctx()),
            Err(PlanError::ExecutorPaused { index: 0, executor: PAUSED })
        );
    }

    #[test]
    fn refuses_over_budget_with_excess() {
        let mut p = diamond();
        p.budget = 350;
        let err = p.validate(&ctx()).unwrap_err();
        assert_eq!(err, PlanError::OverBudget { total: 400, budget: 350, excess: 50 });
        assert!(err.to_string().contains("by 50"));
        p.budget = 400;
        p.validate(&ctx()).unwrap();

        let mut huge = plan(vec![task(0, &[]), task(1, &[])]);
        huge.subtasks[0].cost = u128::MAX;
        assert_eq!(huge.total_cost(), Err(PlanError::CostOverflow));
    }

    #[test]
    fn enforces_limits() {
        let many: Vec<SubTask> = (0..=64).map(|i| task(i, &[])).collect();
        assert_eq!(
            plan(many).validate_shape(),
            Err(PlanError::TooManySubtasks { count: 65, max: 64 })
        );
        let exactly: Vec<SubTask> = (0..64).map(|i| task(i, &[])).collect();
        plan(exactly).validate_shape().unwrap();

        let mut big = task(0, &[]);
        big.spec = "x".repeat(MAX_SPEC_BYTES + 1);
        assert!(matches!(
            plan(vec![big.clone()]).validate_shape(),
            Err(PlanError::SpecTooLarge { bytes: 16_385, .. })
        ));
        big.spec.pop();
        plan(vec![big]).validate_shape().unwrap();

        for (secs, ok) in
            [(59, false), (60, true), (MAX_DEADLINE_SECS, true), (MAX_DEADLINE_SECS + 1, false)]
        {
            let mut t = task(0, &[]);
            t.deadline_offset_secs = secs;
            assert_eq!(plan(vec![t]).validate_shape().is_ok(), ok, "deadline {secs}");
        }
    }

    #[test]
    fn topological_order_is_deterministic() {
        // 3 has no deps; 0 depends on 2; 1 depends on 3.
        let p = plan(vec![task(0, &[2]), task(1, &[3]), task(2, &[]), task(3, &[])]);
        assert_eq!(p.topological_order().unwrap(), vec![2, 0, 3, 1]);
        assert_eq!(diamond().topological_order().unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn waves_group_parallel_work() {
        assert_eq!(diamond().waves().unwrap(), vec![vec![0], vec![1, 2], vec![3]]);
        // A long chain pushes its dependent later than a short one would.
        let p =
            plan(vec![task(0, &[]), task(1, &[0]), task(2, &[1]), task(3, &[0, 2]), task(4, &[])]);
        assert_eq!(p.waves().unwrap(), vec![vec![0, 4], vec![1], vec![2], vec![3]]);
    }

    #[test]
    fn estimated_duration_follows_critical_path() {
        let mut p = diamond();
        p.subtasks[1].deadline_offset_secs = 100;
        p.subtasks[2].deadline_offset_secs = 500;
        // 0 (3600) → 2 (500) → 3 (3600).
        assert_eq!(p.estimated_duration().unwrap(), Duration::from_secs(7700));
    }

    #[test]
    fn reorder_reindexes_dependencies() {
        let p = plan(vec![task(0, &[]), task(1, &[0]), task(2, &[])]);
        let r = p.reorder(&[2, 0, 1]).unwrap();
        assert_eq!(
            r.subtasks.iter().map(|s| s.spec.as_str()).collect::<Vec<_>>(),
            ["do step 2", "do step 0", "do step 1"]
        );
        assert_eq!(r.subtasks[2].depends_on, vec![1]);
        assert_eq!(r.topological_order().unwrap(), vec![0, 1, 2]);
        assert_eq!(p.reorder(&[0, 1]), Err(PlanError::InvalidOrder { expected: 3 }));
        assert_eq!(p.reorder(&[0, 0, 1]), Err(PlanError::InvalidOrder { expected: 3 }));
        assert_eq!(p.reorder(&[0, 1, 3]), Err(PlanError::InvalidOrder { expected: 3 }));
    }

    #[test]
    fn reassign_sets_executor() {
        let p = diamond();
        let r = p.reassign(2, B).unwrap();
        assert_eq!(r.subtask(2).unwrap().executor, Some(B));
        assert_eq!(r.subtask(1).unwrap().executor, Some(A));
        assert_eq!(p.reassign(9, B), Err(PlanError::UnknownIndex(9)));
    }

    #[test]
    fn drop_refuses_depended_on_and_reindexes() {
        let p = diamond();
        let err = p.drop_subtask(0).unwrap_err();
        assert_eq!(err, PlanError::HasDependents { index: 0, dependents: vec![1, 2] });
        assert!(err.to_string().contains("sub-tasks 1, 2 depend on it"));

        let without_3 = p.drop_subtask(3).unwrap();
        let without_1 = without_3.drop_subtask(1).unwrap();
        assert_eq!(without_1.subtasks.len(), 2);
        assert_eq!(without_1.subtasks[1].spec, "do step 2");
        assert_eq!(without_1.subtasks[1].index, 1);
        assert_eq!(without_1.subtasks[1].depends_on, vec![0]);
        without_1.validate(&ctx()).unwrap();

        assert_eq!(p.drop_subtask(7), Err(PlanError::UnknownIndex(7)));
        assert_eq!(plan(vec![task(0, &[])]).drop_subtask(0), Err(PlanError::Empty));
    }
}
