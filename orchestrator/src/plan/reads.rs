//! What conditions read, checked against the result schemas the
//! capabilities publish (the catalogue, [`super::ResultShape`]).
//!
//! Every `out[i].a.b[0]` of a sub-task's or a nested step's `when` must be
//! a field the result schema of sub-task `i` declares: its executor's own
//! schema when that executor publishes another than the capability's, the
//! capability's otherwise (a draft's unassigned sub-task). A field the
//! schema lacks refuses the plan, naming the condition, the step, the field
//! and the fields the schema has; a capability that publishes no result
//! schema, or is not in the catalogue, refuses every field of its result.
//! Reading the whole result (`out[i]`, `len(out[i])`, `out[i] == null`)
//! is always allowed: a paid step has a result document, whatever its shape.
//!
//! A context without a catalogue ([`super::ResultShape::Unchecked`]) checks
//! nothing; the orchestrator hands one in when a plan is proposed or edited.

use tessera_bindings::describe::{Lookup, Step};

use super::{Plan, PlanContext, PlanError, ResultShape, StepPath};
use crate::condition::{Field, When, path_text};

/// Longest condition text a refusal quotes, in characters.
const QUOTED_CHARS: usize = 120;

impl Plan {
    /// Every condition of the plan with the path of its step: the nested
    /// steps' first, then the sub-tasks', in index order.
    fn conditions(&self) -> Vec<(StepPath, &When)> {
        let groups =
            self.groups.iter().filter_map(|g| g.when.as_ref().map(|w| (g.path.clone(), w)));
        let tasks = self
            .subtasks
            .iter()
            .filter_map(|t| t.when.as_ref().map(|w| (self.path_of(t.index), w)));
        groups.chain(tasks).collect()
    }

    /// Whether some condition reads a field of a result (not only whole
    /// results): only then is the catalogue needed to check the plan.
    pub fn reads_fields(&self) -> bool {
        self.conditions().iter().any(|(_, when)| {
            when.condition().is_ok_and(|c| c.paths().iter().any(|(_, path)| !path.is_empty()))
        })
    }

    /// Checks every field a condition reads against the result shape `ctx`
    /// knows for the sub-task it reads (see the module docs).
    pub(super) fn validate_condition_fields(
        &self,
        ctx: &impl PlanContext,
    ) -> Result<(), PlanError> {
        for (step, when) in self.conditions() {
            // A condition that does not parse was refused by the shape.
            let Ok(condition) = when.condition() else { continue };
            for (read, path) in condition.paths() {
                if path.is_empty() {
                    continue;
                }
                let Some(task) = self.subtask(read) else { continue };
                let Some(problem) =
                    self.field_problem(ctx, read, &task.capability, task.executor, path)
                else {
                    continue;
                };
                let shown = self.condition_by_path(when);
                let mut condition: String = shown.chars().take(QUOTED_CHARS).collect();
                if condition.len() < shown.len() {
                    condition.push('…');
                }
                return Err(PlanError::ConditionField {
                    step: step.to_string(),
                    condition,
                    field: format!("out[{}]{}", self.path_of(read), path_text(path)),
                    problem,
                });
            }
        }
        Ok(())
    }

    /// Why `path` of sub-task `read`'s result cannot be read, if it cannot.
    fn field_problem(
        &self,
        ctx: &impl PlanContext,
        read: u32,
        capability: &str,
        executor: Option<alloy::primitives::Address>,
        path: &[Field],
    ) -> Option<String> {
        let at = self.path_of(read);
        let whose = |own: bool| match (own, executor) {
            (true, Some(e)) => format!("executor {e}'s offer of `{capability}` (step {at})"),
            _ => format!("`{capability}` (step {at})"),
        };
        match ctx.result_shape(capability, executor) {
            ResultShape::Unchecked => None,
            ResultShape::Schema { schema, executors_own } => {
                let steps: Vec<Step<'_>> = path
                    .iter()
                    .map(|f| match f {
                        Field::Name(n) => Step::Name(n),
                        Field::Item(i) => Step::Index(u32::try_from(*i).unwrap_or(u32::MAX)),
                    })
                    .collect();
                match schema.lookup(&steps) {
                    Lookup::Found(_) => None,
                    Lookup::Missing { at: field, why } => Some(format!(
                        "which the result schema of {} does not declare: at `{field}`, {why}",
                        whose(executors_own)
                    )),
                }
            }
            ResultShape::Unpublished { executors_own } => Some(format!(
                "but {} publishes no result schema: a condition may read its whole result \
                 (out[{at}], len(out[{at}])), not its fields",
                whose(executors_own)
            )),
            ResultShape::NotListed => Some(format!(
                "but `{capability}` (step {at}) is not in the capability catalogue, so its result \
                 schema is unknown (without an index only the built-in capabilities are listed)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy::primitives::Address;
    use serde_json::json;
    use tessera_bindings::{
        card::{AgentCard, CapabilityOffer, Price, Role},
        catalogue::{Catalogue, ListedAgent},
        describe::ResultSchema,
    };

    use super::*;
    use crate::plan::{ExecutorStatus, InMemoryContext, ReviewMode, SubTask, Usdc};

    const A: Address = Address::repeat_byte(0xaa);
    const B: Address = Address::repeat_byte(0xbb);

    fn task(index: u32, capability: &str, executor: Address, depends_on: &[u32]) -> SubTask {
        SubTask {
            index,
            capability: capability.into(),
            spec: format!("do step {index}"),
            executor: Some(executor),
            cost: Usdc::from_base_units(100),
            deadline_offset_secs: 3600,
            depends_on: depends_on.to_vec(),
            ..Default::default()
        }
    }

    /// Step 0 runs `capability` by `executor`; step 1 runs when `when`.
    fn plan(capability: &str, executor: Address, when: &str) -> Plan {
        let mut p =
            Plan::new(Plan::id_from_label("reads"), Usdc::from_base_units(1_000), ReviewMode::Auto);
        let mut then = task(1, "summarize", A, &[0]);
        then.when = Some(when.into());
        p.subtasks = vec![task(0, capability, executor, &[]), then];
        p
    }

    /// A card offering each capability with its result schema, if any.
    fn card(id: &str, offers: &[(&str, Option<serde_json::Value>)]) -> AgentCard {
        let offer = |(capability, result): &(&str, Option<serde_json::Value>)| {
            let mut offer = CapabilityOffer::new(*capability, Price::from_base_units(1));
            offer.description = Some(format!("Does {capability}."));
            offer.result = result.as_ref().map(|r| ResultSchema::from_json(r).unwrap());
            offer
        };
        AgentCard {
            id: id.into(),
            description: "x".into(),
            role: Role::Executor,
            capabilities: offers.iter().map(offer).collect(),
            model: "offline".into(),
            instructions: String::new(),
            publish_instructions: false,
            delegates: Vec::new(),
            max_delegated_outstanding: None,
            handler: None,
        }
    }

    /// `rate` offered by A and C (stars) and B (its own: grade);
    /// `haiku-write` by A without a schema; the built-ins.
    fn ctx() -> InMemoryContext {
        let stars = json!({"type": "object", "properties": {"stars": {"type": "integer"},
            "notes": {"type": "array", "items": {"type": "object",
                "properties": {"line": {"type": "string"}}}}}});
        let grade = json!({"type": "object", "properties": {"grade": {"type": "string"}}});
        let listed = |agent: Address, card: AgentCard| ListedAgent {
            agent: agent.to_string(),
            offers: card.capabilities.iter().map(|o| (o.name.clone(), 1u128)).collect(),
            card: Some(card),
        };
        let c = Address::repeat_byte(0xcc);
        let catalogue = Catalogue::build([
            listed(A, card("a", &[("rate", Some(stars.clone())), ("haiku-write", None)])),
            listed(B, card("b", &[("rate", Some(grade))])),
            listed(c, card("c", &[("rate", Some(stars))])),
        ]);
        let mut ctx = InMemoryContext::new().with_catalogue(catalogue);
        for cap in ["rate", "haiku-write", "summarize", "sentiment-classify", "translate"] {
            ctx = ctx.with_capability(cap);
        }
        ctx.with_executor(A, ExecutorStatus::Active).with_executor(B, ExecutorStatus::Active)
    }

    fn refusal(p: &Plan) -> String {
        p.validate(&ctx()).unwrap_err().to_string()
    }

    #[test]
    fn a_field_the_schema_lacks_is_refused_naming_everything() {
        let p = plan("sentiment-classify", A, r#"out[0].sentiment == "negative""#);
        let e = refusal(&p);
        assert!(
            e.starts_with(
                "step 1: condition `out[0].sentiment == \"negative\"` reads out[0].sentiment, which \
                 the result schema of `sentiment-classify` (step 0) does not declare: at \
                 `.sentiment`, no such field (the schema has: "
            ),
            "{e}"
        );
        assert!(e.contains("label, model, score"), "{e}");
        assert!(matches!(p.validate(&ctx()), Err(PlanError::ConditionField { .. })));
        // The declared fields, nested ones and array items included, are read.
        for ok in [
            r#"out[0].label == "negative" and out[0].score < 0"#,
            "len(out[0].terms) > 0 and out[0].terms[0].weight > 0.5",
            "len(out[0]) > 0 and out[0] != null",
        ] {
            plan("sentiment-classify", A, ok)
                .validate(&ctx())
                .unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let e = refusal(&plan("sentiment-classify", A, "out[0].label.first"));
        assert!(e.contains("at `.label.first`, a string has no fields"), "{e}");
        let e = refusal(&plan("sentiment-classify", A, "out[0].score[0]"));
        assert!(e.contains("a number is not an array"), "{e}");
    }

    #[test]
    fn the_executors_own_schema_holds_for_its_result() {
        plan("rate", A, "out[0].stars > 3 and out[0].notes[1].line").validate(&ctx()).unwrap();
        let e = refusal(&plan("rate", B, "out[0].stars > 3"));
        assert!(
            e.contains(&format!("the result schema of executor {B}'s offer of `rate` (step 0)")),
            "{e}"
        );
        assert!(e.contains("(the schema has: grade)"), "{e}");
        plan("rate", B, r#"out[0].grade == "A""#).validate(&ctx()).unwrap();
        // A draft's unassigned step reads the capability's schema.
        let mut draft = plan("rate", B, "out[0].stars > 3");
        draft.subtasks[0].executor = None;
        draft.validate_draft(&ctx()).unwrap();
    }

    #[test]
    fn no_published_schema_allows_the_whole_result_only() {
        let e = refusal(&plan("haiku-write", A, "len(out[0].lines) == 3"));
        assert!(
            e.contains(
                "reads out[0].lines, but `haiku-write` (step 0) publishes no result schema: a \
                 condition may read its whole result (out[0], len(out[0])), not its fields"
            ),
            "{e}"
        );
        plan("haiku-write", A, "len(out[0]) > 0").validate(&ctx()).unwrap();
        let mut unlisted = plan("haiku-write", A, "out[0].x");
        unlisted.subtasks[0].capability = "translate-legal".into();
        let ctx = ctx().with_capability("translate-legal");
        let e = unlisted.validate(&ctx).unwrap_err().to_string();
        assert!(e.contains("`translate-legal` (step 0) is not in the capability catalogue"), "{e}");
    }

    #[test]
    fn without_a_catalogue_nothing_is_checked_and_reads_are_told_apart() {
        let p = plan("sentiment-classify", A, "out[0].sentiment");
        let bare = InMemoryContext::new()
            .with_capability("sentiment-classify")
            .with_capability("summarize")
            .with_executor(A, ExecutorStatus::Active);
        p.validate(&bare).unwrap();
        assert!(p.reads_fields());
        assert!(!plan("sentiment-classify", A, "len(out[0]) > 0").reads_fields());
    }

    #[test]
    fn a_nested_steps_condition_is_checked_by_step_path() {
        let file = json!({"version": 1, "id": format!("0x{}", "11".repeat(32)), "budget": 10_000,
            "subtasks": [
                {"index": 0, "capability": "sentiment-classify", "spec": "tone",
                 "executor": A, "cost": 100, "deadline_offset_secs": 3600},
                {"index": 1, "spec": "digest", "cost": 200, "deadline_offset_secs": 3600,
                 "depends_on": [0], "when": "out[0].mood == \"bad\"",
                 "plan": {"subtasks": [
                    {"index": 0, "capability": "summarize", "spec": "s", "executor": A,
                     "cost": 100, "deadline_offset_secs": 3600}]}}]});
        let p = Plan::from_json(&file.to_string()).unwrap();
        let e = p.validate(&ctx()).unwrap_err().to_string();
        assert!(
            e.starts_with("step 1: condition `out[0].mood == \"bad\"` reads out[0].mood"),
            "{e}"
        );
        let long = format!("out[0].mood == \"{}\"", "x".repeat(200));
        let mut p = plan("sentiment-classify", A, &long);
        p.subtasks[1].when = Some(long.as_str().into());
        let e = refusal(&p);
        assert!(e.contains(&format!("`{}…`", &long[..QUOTED_CHARS])), "{e}");
    }
}
