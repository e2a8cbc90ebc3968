//! From a brief to a run, with the ceremony its quadrant calls for.
//!
//! The classifier proposes sub-tasks; executors and costs come from the
//! registry only, so no model output chooses who is paid or how much: per
//! capability, the active agent the request's selection policy picks
//! (balanced unless told: record and price weighed together; cheapest:
//! the lowest price, ties to the lowest address; reliable: the best record;
//! see [`crate::select`]) at its registered price. Each choice, with its
//! reasons and the runner-up, is kept in the plan's `choices`, and the
//! policy in its `selection`. Then:
//!
//! - atomic / low stakes: proposed and approved at once; the answer shows
//!   what ran — unless a step's capability is one only a registered card
//!   describes (not a built-in): then its plan card waits for approval, so a
//!   card never takes a brief unseen;
//! - composite / low stakes: proposed; the plan card waits for approve, edit
//!   or cancel;
//! - high stakes (either shape): proposed with manual review, and approval
//!   needs a confirmation token bound to the plan's exact amounts and
//!   recipients (see [`Orchestrator::confirm`]);
//! - a raw transfer to an address: refused with the explanation, no run.
//!
//! The brief is planned from the live capability catalogue
//! ([`Orchestrator::catalogue`]): a capability somebody offers can be
//! planned when the brief asks for it, and each sub-task keeps the brief's
//! words that chose it (`chosen_by`, on the plan card). When the catalogue
//! cannot be read the brief is still planned, from the built-in
//! capabilities only, and the classification says so with a
//! `catalogue_unavailable` guard signal: a plan a person reviews is better
//! than no answer, and the signal tells them why a capability they expected
//! is missing.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use alloy::primitives::keccak256;
use serde::{Deserialize, Serialize};
use tessera_bindings::{catalogue::Catalogue, usdc::Usdc};
use tessera_classifier::{
    Ceremony, Classification, Classifier, Quadrant, Stakes,
    classify::{Signal, SignalKind},
};

use crate::{
    plan::{Choice, Group, Plan, PlanError, ReviewMode, Selection, StepPath, SubTask},
    runner::{Orchestrator, RunError, RunView},
    store::now_ms,
};

/// What `POST /api/classify` answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BriefOutcome {
    /// The classification, after the cross-check and caution rules.
    pub classification: Classification,
    /// Its quadrant.
    pub quadrant: Quadrant,
    /// The ceremony that quadrant calls for.
    pub ceremony: Ceremony,
    /// The run: running for direct execution, proposed otherwise; none when
    /// refused or when nothing can run.
    pub run: Option<RunView>,
    /// Sub-tasks no active agent offers: pick an executor by hand.
    pub unassigned: Vec<u32>,
    /// Why nothing was proposed, when nothing was.
    pub refusal: Option<String>,
}

static NONCE: AtomicU64 = AtomicU64::new(0);

impl Orchestrator {
    /// Classifies `brief`, chooses executors from the registry by `policy`,
    /// and proposes (or, for atomic / low stakes, runs) the plan.
    pub async fn classify_brief(
        self: &Arc<Self>,
        classifier: &Classifier,
        brief: &str,
        payload: Option<&str>,
        policy: Selection,
    ) -> Result<BriefOutcome, RunError> {
        let (catalogue, unavailable) = match self.catalogue().await {
            Ok(c) => (c, None),
            Err(e) => {
                tracing::warn!(error = %e, "planning a brief from the built-in capabilities only");
                (Catalogue::builtins(), Some(e.to_string()))
            }
        };
        let mut classification = classifier.classify_with(brief, payload, &catalogue).await?;
        if let Some(why) = unavailable {
            classification.signals.push(Signal::new(
                SignalKind::Guard,
                "catalogue_unavailable",
                format!("{why}; planned from the built-in capabilities only"),
            ));
        }
        let quadrant = classification.quadrant();
        let mut ceremony = quadrant.ceremony();
        // A capability only a registered card describes never runs unseen:
        // its plan card (which words chose it, who is paid) waits for the
        // sponsor, however small the brief.
        let registered: Vec<&str> = classification
            .plan
            .iter()
            .map(|p| p.capability.as_str())
            .filter(|c| !tessera_bindings::describe::BUILTIN.contains(c))
            .collect();
        if ceremony == Ceremony::Direct && !registered.is_empty() {
            ceremony = Ceremony::PlanCard;
            classification.signals.push(Signal::new(
                SignalKind::Guard,
                "registered_capability",
                format!(
                    "{} is described by a registered card, not by Tessera: the plan card waits \
                     for approval",
                    registered.join(", ")
                ),
            ));
        }
        let outcome = |run, unassigned, refusal| BriefOutcome {
            classification: classification.clone(),
            quadrant,
            ceremony,
            run,
            unassigned,
            refusal,
        };
        if let Some(reason) = &classification.refusal {
            return Ok(outcome(None, vec![], Some(reason.clone())));
        }
        if classification.plan.is_empty() {
            return Ok(outcome(None, vec![], Some(classification.reasoning.clone())));
        }
        let (subtasks, choices) = self.resolve(&classification, policy).await?;
        let unassigned: Vec<u32> =
            subtasks.iter().filter(|t| t.executor.is_none()).map(|t| t.index).collect();
        let high = classification.stakes.value == Stakes::High;
        let label = format!(
            "brief:{brief}:{}:{}:{}",
            now_ms(),
            std::process::id(),
            NONCE.fetch_add(1, Ordering::Relaxed)
        );
        let plan = Plan {
            source: payload.map(str::to_owned),
            groups: groups_of(&classification, &subtasks)?,
            subtasks,
            selection: policy,
            choices,
            ..Plan::new(
                keccak256(label.as_bytes()),
                self.config().max_plan_spend,
                if high { ReviewMode::Manual } else { ReviewMode::Auto },
            )
        };
        let json = serde_json::to_value(&classification).expect("classifications serialize");
        let mut view = self.propose_with(plan, high, Some(&json)).await?;
        // Under operator mode a run waits for its sponsor's grant.
        if ceremony == Ceremony::Direct && unassigned.is_empty() && !self.config().grants_required {
            view = self.approve(&view.run.id, None).await?;
        }
        Ok(outcome(Some(view), unassigned, None))
    }

    /// Sub-tasks with the agent `policy` chooses per capability and its
    /// registered price, and each choice.
    async fn resolve(
        &self,
        c: &Classification,
        policy: Selection,
    ) -> Result<(Vec<SubTask>, Vec<Choice>), RunError> {
        let mut chosen: HashMap<String, Option<Choice>> = HashMap::new();
        for p in &c.plan {
            if !chosen.contains_key(&p.capability) {
                let choice = self.choose(p.index, &p.capability, policy, &[], None).await?;
                chosen.insert(p.capability.clone(), choice);
            }
        }
        let mut choices = Vec::new();
        let subtasks = c
            .plan
            .iter()
            .map(|p| {
                let choice = chosen.get(&p.capability).cloned().flatten();
                let offer = choice.as_ref().map(|ch| (ch.executor, ch.price));
                choices.extend(choice.map(|ch| Choice { index: p.index, ..ch }));
                Ok(SubTask {
                    index: p.index,
                    capability: p.capability.clone(),
                    spec: p.spec.clone(),
                    executor: offer.map(|(a, _)| a),
                    // The registry price; a model's estimate never pays anyone.
                    cost: offer.map_or(Usdc::ZERO, |(_, price)| price),
                    deadline_offset_secs: p.deadline_offset_secs,
                    depends_on: p.depends_on.clone(),
                    // Only a plan that nests goals carries paths.
                    path: if c.groups.is_empty() {
                        None
                    } else {
                        p.path.as_deref().map(str::parse).transpose()?
                    },
                    chosen_by: p.chosen_by.clone(),
                    ..Default::default()
                })
            })
            .collect::<Result<Vec<_>, RunError>>()?;
        Ok((subtasks, choices))
    }
}

/// The proposed goals of several steps as the plan's nested plans, each
/// with its leaves' registry prices as its budget share.
fn groups_of(c: &Classification, subtasks: &[SubTask]) -> Result<Vec<Group>, RunError> {
    c.groups
        .iter()
        .map(|g| {
            let path: StepPath = g.path.parse()?;
            let members = subtasks
                .iter()
                .filter(|t| t.path.as_ref().is_some_and(|p| p.is_inside(&path)))
                .map(|t| t.cost);
            let budget = Usdc::sum(members).ok_or(PlanError::CostOverflow)?;
            Ok(Group { path, spec: g.spec.clone(), budget, review: None, when: None })
        })
        .collect()
}
