//! From a brief to a run, with the ceremony its quadrant calls for.
//!
//! The classifier proposes sub-tasks; executors and costs come from the
//! registry only (the cheapest active agent per capability, ties to the
//! lowest address, its registered price), so no model output chooses who is
//! paid or how much. Then:
//!
//! - atomic / low stakes: proposed and approved at once; the answer shows
//!   what ran;
//! - composite / low stakes: proposed; the plan card waits for approve, edit
//!   or cancel;
//! - high stakes (either shape): proposed with manual review, and approval
//!   needs a confirmation token bound to the plan's exact amounts and
//!   recipients (see [`Orchestrator::confirm`]);
//! - a raw transfer to an address: refused with the explanation, no run.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use alloy::primitives::{Address, keccak256};
use serde::Serialize;
use tessera_bindings::{AgentRegistry, capability, offers, usdc::Usdc};
use tessera_classifier::{Ceremony, Classification, Classifier, Quadrant, Stakes};

use crate::{
    plan::{Group, Plan, PlanError, ReviewMode, StepPath, SubTask},
    runner::{Orchestrator, RunError, RunView},
    store::now_ms,
};

/// What `POST /api/classify` answers.
#[derive(Debug, Clone, Serialize)]
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
    /// Classifies `brief`, resolves executors from the registry, and proposes
    /// (or, for atomic / low stakes, runs) the plan.
    pub async fn classify_brief(
        self: &Arc<Self>,
        classifier: &Classifier,
        brief: &str,
        payload: Option<&str>,
    ) -> Result<BriefOutcome, RunError> {
        let classification = classifier
            .classify(brief, payload)
            .await
            .map_err(|e| RunError::Invalid(e.to_string()))?;
        let quadrant = classification.quadrant();
        let ceremony = quadrant.ceremony();
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
        let subtasks = self.resolve(&classification).await?;
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
            ..Plan::new(
                keccak256(label.as_bytes()),
                self.config().max_plan_spend,
                if high { ReviewMode::Manual } else { ReviewMode::Auto },
            )
        };
        let json = serde_json::to_value(&classification).expect("classifications serialize");
        let mut view = self.propose_with(plan, high, Some(&json)).await?;
        if ceremony == Ceremony::Direct && unassigned.is_empty() {
            view = self.approve(&view.run.id, None).await?;
        }
        Ok(outcome(Some(view), unassigned, None))
    }

    /// Sub-tasks with the registry's cheapest active agent and its price.
    async fn resolve(&self, c: &Classification) -> Result<Vec<SubTask>, RunError> {
        let registry =
            AgentRegistry::new(self.chain().deployment().agent_registry, self.chain().provider());
        let mut offers: HashMap<String, Option<(Address, Usdc)>> = HashMap::new();
        for p in &c.plan {
            if offers.contains_key(&p.capability) {
                continue;
            }
            let offer = match capability::encode(&p.capability) {
                Ok(word) => {
                    let read = offers::offers_for(&registry, word, offers::DEFAULT_MAX_OFFERS)
                        .await
                        .map_err(RunError::from)?;
                    offers::cheapest_active(&read.offers, None)
                        .map(|(agent, price)| (agent, Usdc::from_base_units(price)))
                }
                Err(_) => None,
            };
            offers.insert(p.capability.clone(), offer);
        }
        c.plan
            .iter()
            .map(|p| {
                let offer = offers.get(&p.capability).copied().flatten();
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
                    ..Default::default()
                })
            })
            .collect()
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
            Ok(Group { path, spec: g.spec.clone(), budget, review: None })
        })
        .collect()
}
