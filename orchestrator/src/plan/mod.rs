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
//!
//! The module is split by job: this file holds the model, [`error`] the
//! refusals, [`context`] the outside facts, `validate` the checks, `reads`
//! the fields conditions read against the published result schemas,
//! `graph` the dependency order and `edit` the re-indexing edits.

mod context;
mod edit;
mod error;
#[cfg(test)]
mod fields_doc;
mod flatten;
mod funding;
mod graph;
mod id;
mod nest;
mod reads;
mod strategy;
mod validate;

use alloy::primitives::{Address, keccak256};
use serde::{Deserialize, Serialize};

use crate::condition::When;
pub use tessera_bindings::usdc::Usdc;

pub use self::{
    context::{ExecutorStatus, InMemoryContext, PlanContext, ResultShape},
    error::PlanError,
    funding::Funding,
    id::PlanId,
    nest::{ChildPlan, DEFAULT_MAX_NESTING_DEPTH, Group, MAX_NESTING_DEPTH, Nested, StepPath},
    strategy::{
        Checkpoint, Choice, DisputePolicy, MAX_CHECKPOINTS, MAX_RETRIES, OnTimeout, Policy,
        Recovery, RecoveryOverride, RunnerUp, Selection,
    },
};

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
/// Most words a sub-task's `chosen_by` lists.
pub const MAX_CHOSEN_BY: usize = 8;
/// Longest word of a sub-task's `chosen_by`, in characters.
pub const MAX_CHOSEN_BY_CHARS: usize = 64;

/// Whether completed sub-tasks are paid at once or wait for a person.
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
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SubTask {
    /// Position in the plan; indexes run `0..n`.
    pub index: u32,
    /// Capability name as registered (at most 31 bytes, no NUL); none for
    /// a nested step as a plan file writes it.
    #[serde(default)]
    pub capability: String,
    /// The instruction for the executor.
    pub spec: String,
    /// Agent that will do the work; `None` until one is assigned.
    #[serde(default)]
    pub executor: Option<Address>,
    /// Price (a JSON integer of USDC base units in plan files).
    #[serde(with = "tessera_bindings::usdc::as_integer")]
    pub cost: Usdc,
    /// The cost the sponsor approved, or a person's change of executor
    /// later raised it to: no attempt is funded above it (a JSON integer of
    /// base units). Set by the orchestrator at approval; a proposal's is
    /// ignored.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "approved_amount")]
    pub approved: Option<Usdc>,
    /// Seconds the executor gets from task creation.
    pub deadline_offset_secs: u64,
    /// Indexes of sub-tasks whose output this one needs.
    #[serde(default)]
    pub depends_on: Vec<u32>,
    /// Where the sub-task sits in a nested plan (`1.0`); a flat plan's
    /// sub-tasks have none (their path is their index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<StepPath>,
    /// As a plan file writes it only: this step is a plan of its own, its
    /// `cost` the child plan's budget share. [`Plan::flatten`] replaces it
    /// by its leaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Nested>,
    /// A condition over the outputs of the sub-tasks it names: false means
    /// the sub-task is skipped, never funded (see [`crate::condition`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// This sub-task's recovery, over the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryOverride>,
    /// The brief's own words that chose the capability, when a brief was
    /// planned (at most [`MAX_CHOSEN_BY`]); shown on the plan card.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chosen_by: Vec<String>,
}

/// Serde for [`SubTask::approved`]: an optional JSON integer of base units.
mod approved_amount {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Usdc;

    pub(super) fn serialize<S: Serializer>(amount: &Option<Usdc>, s: S) -> Result<S::Ok, S::Error> {
        match amount {
            Some(a) => tessera_bindings::usdc::as_integer::serialize(a, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Usdc>, D::Error> {
        Option::<Usdc>::deserialize(d)
    }
}

/// A brief split into sub-tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Format version; [`PLAN_VERSION`] for plans this crate writes.
    pub version: u32,
    /// Plan id. Plans named by a string use [`Plan::id_from_label`]
    /// (keccak256 of the label), so the id is always 32 bytes, as on chain.
    pub id: PlanId,
    /// The sub-tasks, in index order.
    pub subtasks: Vec<SubTask>,
    /// How completed sub-tasks are settled.
    #[serde(default)]
    pub review: ReviewMode,
    /// When sub-tasks are funded: as their dependencies deliver (the
    /// default) or all at approval (see [`Funding`]).
    #[serde(default, skip_serializing_if = "Funding::is_stepwise")]
    pub funding: Funding,
    /// Most the plan may spend (a JSON integer of USDC base units).
    #[serde(with = "tessera_bindings::usdc::as_integer")]
    pub budget: Usdc,
    /// The brief's material (an article, a document), handed to root
    /// sub-tasks in their envelope's `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Seconds the client has to review each delivered sub-task before the
    /// payment releases by itself.
    #[serde(default = "default_review_window")]
    pub review_window_secs: u32,
    /// Blocks an executor has to accept (or deliver) a sub-task once it can
    /// start (its task created and every upstream delivered), and never
    /// less than as many seconds; past it the task is cancelled at full
    /// refund and the sub-task goes to its `on_decline` policy. 0 waits
    /// for the deadline alone.
    #[serde(default = "default_accept_window")]
    pub accept_window_blocks: u32,
    /// The nested plans of a flattened plan, by path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Group>,
    /// As a plan file writes it only: child plans its steps name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub plans: std::collections::BTreeMap<String, ChildPlan>,
    /// Gates where the run waits for an approver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Checkpoint>,
    /// What the runner does on its own when work is not done in time or a
    /// dispute is lost (sub-tasks may override it).
    #[serde(default)]
    pub recovery: Recovery,
    /// How executors are picked where the plan leaves it to the orchestrator.
    #[serde(default)]
    pub selection: Selection,
    /// Why each chosen executor was chosen, and who came next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
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

/// Accept window when a plan names none: 100 blocks (about 3 minutes on
/// 2-second blocks, 20 on 12-second ones).
pub const DEFAULT_ACCEPT_WINDOW_BLOCKS: u32 = 100;
/// Longest accept window a plan may ask for.
pub const MAX_ACCEPT_WINDOW_BLOCKS: u32 = 1_000_000;

fn default_accept_window() -> u32 {
    DEFAULT_ACCEPT_WINDOW_BLOCKS
}

#[derive(Deserialize)]
struct VersionProbe {
    version: u32,
}

impl Plan {
    /// An empty plan of the current version.
    pub fn new(id: impl Into<PlanId>, budget: Usdc, review: ReviewMode) -> Self {
        Self {
            version: PLAN_VERSION,
            id: id.into(),
            subtasks: Vec::new(),
            review,
            funding: Funding::Stepwise,
            budget,
            source: None,
            review_window_secs: DEFAULT_REVIEW_WINDOW_SECS,
            accept_window_blocks: DEFAULT_ACCEPT_WINDOW_BLOCKS,
            groups: Vec::new(),
            plans: std::collections::BTreeMap::new(),
            checkpoints: Vec::new(),
            recovery: Recovery::default(),
            selection: Selection::default(),
            choices: Vec::new(),
        }
    }

    /// The id of a plan named by a string: keccak256 of its UTF-8 bytes.
    pub fn id_from_label(label: &str) -> PlanId {
        PlanId::new(keccak256(label.as_bytes()))
    }

    /// Parses a plan from JSON, refusing unknown versions before anything
    /// else, and flattens nested steps (at most
    /// [`DEFAULT_MAX_NESTING_DEPTH`] levels).
    pub fn from_json(json: &str) -> Result<Self, PlanError> {
        Self::from_json_nested(json, DEFAULT_MAX_NESTING_DEPTH)
    }

    /// [`Plan::from_json`] allowing `max_depth` levels of nesting (capped
    /// at [`MAX_NESTING_DEPTH`]).
    pub fn from_json_nested(json: &str, max_depth: usize) -> Result<Self, PlanError> {
        let probe: VersionProbe =
            serde_json::from_str(json).map_err(|e| PlanError::Json(e.to_string()))?;
        check_version(probe.version)?;
        let plan: Self = serde_json::from_str(json).map_err(|e| PlanError::Json(e.to_string()))?;
        plan.flatten(max_depth)
    }

    /// The sub-task with `index`, if any.
    pub fn subtask(&self, index: u32) -> Option<&SubTask> {
        self.subtasks.iter().find(|s| s.index == index)
    }
}

pub(super) fn check_version(found: u32) -> Result<(), PlanError> {
    if found == PLAN_VERSION {
        Ok(())
    } else {
        Err(PlanError::UnsupportedVersion { found, supported: PLAN_VERSION })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tessera_bindings::capability::CapabilityError;

    use super::*;

    const A: Address = Address::repeat_byte(0xaa);
    const B: Address = Address::repeat_byte(0xbb);
    const PAUSED: Address = Address::repeat_byte(0xcc);

    /// An amount of `units` base units.
    fn u(units: u128) -> Usdc {
        Usdc::from_base_units(units)
    }

    fn task(index: u32, depends_on: &[u32]) -> SubTask {
        SubTask {
            index,
            capability: "summarize".into(),
            spec: format!("do step {index}"),
            executor: Some(A),
            cost: u(100),
            deadline_offset_secs: 3600,
            depends_on: depends_on.to_vec(),
            ..Default::default()
        }
    }

    fn plan(tasks: Vec<SubTask>) -> Plan {
        let mut plan = Plan::new(Plan::id_from_label("test"), u(1_000), ReviewMode::Auto);
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
    fn conditions_and_checkpoints_are_checked_at_propose_time() {
        let mut p = plan(vec![task(0, &[]), task(1, &[0]), task(2, &[])]);
        p.subtasks[1].when = Some("out[0].label == \"negative\"".into());
        assert_eq!(p.validate(&ctx()), Ok(()));
        p.subtasks[1].when = Some("out[2].label == 1".into());
        let err = p.validate(&ctx()).unwrap_err();
        assert!(err.to_string().contains("2"), "reads a sub-task it does not depend on: {err}");
        p.subtasks[1].when = Some("out[0].label ==".into());
        let err = p.validate(&ctx()).unwrap_err();
        assert!(matches!(err, PlanError::InvalidCondition { index: 1, .. }), "{err}");
        p.subtasks[1].when = None;
        let cp = |name: &str, after: Vec<u32>| Checkpoint {
            name: name.into(),
            after,
            timeout_secs: None,
            on_timeout: OnTimeout::Escalate,
        };
        p.checkpoints = vec![cp("legal-review_2", vec![0])];
        assert_eq!(p.validate(&ctx()), Ok(()));
        for (bad, why) in [
            (vec![cp("Legal", vec![0])], "a-z"),
            (vec![cp("a/b", vec![0])], "a-z"),
            (vec![cp("", vec![0])], "a-z"),
            (vec![cp("x", vec![0]), cp("x", vec![1])], "unique"),
            (vec![cp("x", vec![])], "at least one"),
            (vec![cp("x", vec![7])], "no sub-task 7"),
        ] {
            p.checkpoints = bad;
            let err = p.validate(&ctx()).unwrap_err();
            assert!(matches!(err, PlanError::InvalidCheckpoint { .. }), "{err}");
            assert!(err.to_string().contains(why), "{err}");
        }
    }

    #[test]
    fn offers_are_checked_when_prices_are_known() {
        let p = plan(vec![task(0, &[])]);
        let priced = ctx().with_offer(A, "summarize", u(100));
        assert_eq!(p.validate(&priced), Ok(()));
        let dear = ctx().with_offer(A, "summarize", u(101));
        let err = p.validate(&dear).unwrap_err();
        assert!(
            err.to_string()
                .contains("asks 0.000101 USDC for `summarize` but the sub-task pays 0.000100 USDC")
        );
        let other = ctx().with_offer(A, "translate", u(1));
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
        let mut plan = diamond();
        plan.subtasks[1].chosen_by = vec!["Write".into(), "haiku".into()];
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(Plan::from_json(&json).unwrap(), plan);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["subtasks"][1]["chosen_by"], serde_json::json!(["Write", "haiku"]));
        assert!(value["subtasks"][0].get("chosen_by").is_none(), "left out when empty");

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
        assert_eq!(Plan::id_from_label("abc"), PlanId::from(keccak256(b"abc")));
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
        // The one capability-name rule: what no card may offer, no plan may ask for.
        for name in ["Summarize", "sum marize", "extract_entities"] {
            let mut bad = task(0, &[]);
            bad.capability = name.into();
            assert!(
                matches!(
                    plan(vec![bad]).validate_shape(),
                    Err(PlanError::InvalidCapability {
                        index: 0,
                        source: CapabilityError::InvalidCharacter(_)
                    })
                ),
                "{name:?}"
            );
        }
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
        p.budget = u(350);
        let err = p.validate(&ctx()).unwrap_err();
        assert_eq!(err, PlanError::OverBudget { total: u(400), budget: u(350), excess: u(50) });
        assert!(err.to_string().contains("by 0.000050 USDC"));
        p.budget = u(400);
        p.validate(&ctx()).unwrap();

        let mut huge = plan(vec![task(0, &[]), task(1, &[])]);
        huge.subtasks[0].cost = u(u128::MAX);
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

        let mut chosen = task(0, &[]);
        chosen.chosen_by = vec!["word".into(); MAX_CHOSEN_BY];
        plan(vec![chosen.clone()]).validate_shape().unwrap();
        for bad in [
            vec!["word".to_owned(); MAX_CHOSEN_BY + 1],
            vec![" ".to_owned()],
            vec!["x".repeat(MAX_CHOSEN_BY_CHARS + 1)],
            vec!["two\nlines".to_owned()],
        ] {
            chosen.chosen_by = bad;
            let err = plan(vec![chosen.clone()]).validate_shape().unwrap_err();
            assert!(matches!(err, PlanError::InvalidChosenBy { index: 0, .. }), "{err}");
            assert!(err.to_string().starts_with("sub-task 0: chosen_by "), "{err}");
        }

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
