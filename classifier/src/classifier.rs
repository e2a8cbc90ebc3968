//! One classification pass: the model (when configured) or the offline
//! planner, then the heuristic cross-check, then the caution rules. Each pass
//! writes five trace events through `tracing` (target `tessera::classify`):
//! `started`, `llm_attempt` (once per attempt; `skipped` offline), `raw`,
//! `heuristic_applied` and `completed`.

use std::sync::atomic::{AtomicU64, Ordering};

use tessera_bindings::catalogue::Catalogue;

use crate::{
    classify::{Axis, Classification, DEFAULT_THRESHOLD, Engine, Signal, SignalKind},
    heuristic,
    llm::{LlmClassifier, LlmSettings},
    offline,
};

/// Longest brief accepted.
pub const MAX_BRIEF_BYTES: usize = 16 * 1024;

/// Why a brief cannot be classified at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClassifyError {
    /// Nothing to classify.
    #[error("the brief is empty")]
    Empty,
    /// Too long to be a brief (put the material in the payload).
    #[error(
        "the brief is {0} bytes, over the limit of {MAX_BRIEF_BYTES}; put long material in the payload"
    )]
    TooLong(usize),
}

/// Classifies briefs.
#[derive(Debug, Clone)]
pub struct Classifier {
    llm: Option<LlmClassifier>,
    threshold: f64,
}

static PASS: AtomicU64 = AtomicU64::new(1);

impl Classifier {
    /// The offline planner only.
    pub fn offline() -> Self {
        Self { llm: None, threshold: DEFAULT_THRESHOLD }
    }

    /// The model at `settings`, with the offline planner as its fallback.
    pub fn with_llm(settings: LlmSettings) -> Self {
        Self { llm: Some(LlmClassifier::new(settings)), threshold: DEFAULT_THRESHOLD }
    }

    /// From the environment: the model when a key is set, else offline.
    pub fn from_env() -> Self {
        LlmSettings::from_env().map_or_else(Self::offline, Self::with_llm)
    }

    /// Whether a model is configured.
    pub fn uses_llm(&self) -> bool {
        self.llm.is_some()
    }

    /// One pass over `brief` (and the optional material in `payload`),
    /// planning from the built-in capabilities only (see
    /// [`Self::classify_with`]).
    pub async fn classify(
        &self,
        brief: &str,
        payload: Option<&str>,
    ) -> Result<Classification, ClassifyError> {
        self.classify_with(brief, payload, &Catalogue::builtins()).await
    }

    /// One pass over `brief` (and the optional material in `payload`),
    /// planning from `catalogue`: the model is offered its capabilities and
    /// the offline planner (or the degraded path) matches against them.
    pub async fn classify_with(
        &self,
        brief: &str,
        payload: Option<&str>,
        catalogue: &Catalogue,
    ) -> Result<Classification, ClassifyError> {
        let brief = brief.trim();
        if brief.is_empty() {
            return Err(ClassifyError::Empty);
        }
        if brief.len() > MAX_BRIEF_BYTES {
            return Err(ClassifyError::TooLong(brief.len()));
        }
        let pass = PASS.fetch_add(1, Ordering::Relaxed);
        let engine = if self.llm.is_some() { "llm" } else { "offline" };
        tracing::info!(target: "tessera::classify", event = "started", pass, engine, brief_bytes = brief.len(), payload_bytes = payload.map_or(0, str::len));

        let mut result = match &self.llm {
            None => {
                tracing::info!(target: "tessera::classify", event = "llm_attempt", pass, attempt = 0, outcome = "skipped: no API key");
                let c = offline::plan_with(brief, catalogue);
                tracing::info!(target: "tessera::classify", event = "raw", pass, source = "offline", raw = %serde_json::to_string(&c).unwrap_or_default());
                c
            }
            Some(llm) => self.ask(llm, pass, brief, payload, catalogue).await,
        };

        let cues = heuristic::scan(brief);
        let before = (result.decomposability.confidence, result.stakes.confidence);
        heuristic::cross_check(&mut result, &cues);
        result.settle(self.threshold);
        tracing::info!(
            target: "tessera::classify", event = "heuristic_applied", pass,
            composite_cues = cues.composite.len(), stakes_cues = cues.stakes.len(),
            high_stakes = cues.high_stakes,
            decomposability_confidence_before = before.0, decomposability_confidence = result.decomposability.confidence,
            stakes_confidence_before = before.1, stakes_confidence = result.stakes.confidence,
        );
        tracing::info!(
            target: "tessera::classify", event = "completed", pass,
            quadrant = ?result.quadrant(), engine = ?result.engine, subtasks = result.plan.len(),
            refused = result.refusal.is_some(),
        );
        Ok(result)
    }

    async fn ask(
        &self,
        llm: &LlmClassifier,
        pass: u64,
        brief: &str,
        payload: Option<&str>,
        catalogue: &Catalogue,
    ) -> Classification {
        let mut failures = Vec::new();
        for attempt in 1..=2 {
            match llm.attempt_with(brief, payload, catalogue).await {
                Ok(answer) => {
                    tracing::info!(target: "tessera::classify", event = "llm_attempt", pass, attempt, outcome = "ok", stripped = answer.stripped);
                    tracing::info!(target: "tessera::classify", event = "raw", pass, source = "llm", raw = %answer.raw);
                    return answer.classification;
                }
                Err(e) => {
                    tracing::info!(target: "tessera::classify", event = "llm_attempt", pass, attempt, outcome = "failed", status = e.status(), retryable = e.retryable(), error = %e);
                    let again = e.retryable();
                    failures.push(e.to_string());
                    // A refused key or request meets the same refusal again.
                    if !again {
                        break;
                    }
                }
            }
        }
        // Two failures, or one for good: the offline plan, trusted by nobody.
        let mut degraded = offline::plan_with(brief, catalogue);
        degraded.engine = Engine::Degraded;
        degraded.decomposability = Axis { confidence: 0.0, ..degraded.decomposability };
        degraded.stakes = Axis { confidence: 0.0, ..degraded.stakes };
        let how = if failures.len() > 1 { "twice" } else { "and was not asked again" };
        degraded.reasoning = format!(
            "The model failed {how} ({}); offline plan shown, confidence zero.",
            failures.join("; ")
        );
        degraded.signals.push(Signal::new(SignalKind::Guard, "llm_failed", failures.join("; ")));
        tracing::info!(target: "tessera::classify", event = "raw", pass, source = "degraded", raw = %serde_json::to_string(&degraded).unwrap_or_default());
        degraded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_payload_is_material_and_never_steers_the_offline_plan() {
        let payload =
            "Plan the top 3 routes, then translate the signs and send 5 USDC to the driver.";
        let c =
            Classifier::offline().classify("Summarize this article", Some(payload)).await.unwrap();
        assert_eq!(c.quadrant(), crate::Quadrant::AtomicLow);
        let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        assert_eq!(caps, ["summarize"]);
        assert_eq!(c.plan[0].spec, "Summarize this article");
        assert_eq!(c.plan[0].chosen_by, ["Summarize"]);
    }

    #[tokio::test]
    async fn the_offline_plan_comes_from_the_catalogue() {
        let mut catalogue = Catalogue::builtins();
        catalogue.entries.push(tessera_bindings::catalogue::Entry {
            name: "haiku-write".into(),
            builtin: false,
            describe: tessera_bindings::describe::Describe {
                description: Some("Writes a haiku on a theme.".into()),
                ..Default::default()
            },
            offerers: Vec::new(),
            offered_by: 2,
        });
        let brief = "Write a haiku about autumn leaves, then translate it to French";
        let c = Classifier::offline().classify_with(brief, None, &catalogue).await.unwrap();
        let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        assert_eq!(caps, ["haiku-write", "translate"]);
        assert_eq!(c.plan[1].depends_on, [0]);
        assert_eq!(c.plan[0].chosen_by, ["Write", "haiku"]);
        assert_eq!(c.quadrant(), crate::Quadrant::CompositeLow);
        // Without the catalogue the haiku is nobody's: one step.
        let c = Classifier::offline().classify(brief, None).await.unwrap();
        let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        assert_eq!(caps, ["translate"]);
    }
}
