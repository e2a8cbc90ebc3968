//! What a classification pass returns: two axes with confidences, a proposed
//! plan, the reasoning, and the trace of signals that fired.

use serde::{Deserialize, Serialize};

/// Below this confidence an axis is not trusted (see [`Classification::settle`]).
pub const DEFAULT_THRESHOLD: f64 = 0.5;

/// Whether a brief is one unit of work or several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decomposability {
    /// One sub-task.
    Atomic,
    /// Several sub-tasks.
    Composite,
}

/// Whether a brief can move money somewhere it should not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stakes {
    /// Ordinary paid work.
    Low,
    /// Moves money, names recipients or amounts, or touches keys.
    High,
}

/// One axis: a label and how sure the classifier is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Axis<T> {
    /// The label.
    pub value: T,
    /// Confidence in `0.0..=1.0`.
    pub confidence: f64,
}

/// Where a signal came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// A word or phrase in the brief.
    Lexical,
    /// The brief's structure or meaning (several capabilities, a list).
    Semantic,
    /// Money, amounts, recipients.
    Stakes,
    /// A defence that acted (an address stripped, a confidence halved).
    Guard,
}

/// A signal that fired during classification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signal {
    /// Where it came from.
    pub kind: SignalKind,
    /// Short name, e.g. `then`, `top_n`, `money_verb`.
    pub name: String,
    /// What matched.
    pub detail: String,
}

impl Signal {
    /// A signal.
    pub fn new(kind: SignalKind, name: &str, detail: impl Into<String>) -> Self {
        Self { kind, name: name.to_owned(), detail: detail.into() }
    }
}

/// A sub-task as proposed, before an executor is resolved from the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposedSubTask {
    /// Position; indexes run `0..n`.
    pub index: u32,
    /// Capability name.
    pub capability: String,
    /// Instruction for the executor.
    pub spec: String,
    /// A model's cost estimate in USDC base units; never used to pay (the
    /// registry price is).
    #[serde(default)]
    pub estimated_cost: Option<u128>,
    /// Seconds the executor gets.
    pub deadline_offset_secs: u64,
    /// Indexes this one needs the output of.
    #[serde(default)]
    pub depends_on: Vec<u32>,
    /// Its step path (`1.0`) when the plan nests goals; see [`ProposedGroup`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The brief's own words, as written, that chose the capability (at
    /// most [`crate::catalogue_match::MAX_CHOSEN_BY`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chosen_by: Vec<String>,
}

/// A goal of several steps, proposed as a nested plan: the steps whose
/// paths start with `path` are its leaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposedGroup {
    /// The nested step's path (`1`).
    pub path: String,
    /// The goal, as its label.
    pub spec: String,
}

/// Which path produced a classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The LLM answered with a valid tool call.
    Llm,
    /// The deterministic offline planner (no key configured).
    Offline,
    /// The LLM failed twice (or once, refusing the key or the request);
    /// confidences are zero and the plan is the offline planner's.
    Degraded,
}

/// The four quadrants of the two axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quadrant {
    /// One sub-task, no money risk: runs directly.
    AtomicLow,
    /// Several sub-tasks, no money risk: the plan card.
    CompositeLow,
    /// One sub-task that moves money: card plus deliberate confirmation.
    AtomicHigh,
    /// Several sub-tasks and money risk: card plus deliberate confirmation.
    CompositeHigh,
}

/// How much ceremony the quadrant calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ceremony {
    /// Execute at once and show what ran.
    Direct,
    /// Show the plan card; the user approves, edits or cancels.
    PlanCard,
    /// The plan card, manual review, and a confirmation typed by the user
    /// (amount and recipients) bound to the exact plan.
    Confirm,
}

impl Quadrant {
    /// The ceremony for this quadrant. High stakes always confirm.
    pub fn ceremony(self) -> Ceremony {
        match self {
            Self::AtomicLow => Ceremony::Direct,
            Self::CompositeLow => Ceremony::PlanCard,
            Self::AtomicHigh | Self::CompositeHigh => Ceremony::Confirm,
        }
    }
}

/// The result of classifying a brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    /// Atomic or composite.
    pub decomposability: Axis<Decomposability>,
    /// Low or high stakes.
    pub stakes: Axis<Stakes>,
    /// The proposed sub-tasks.
    pub plan: Vec<ProposedSubTask>,
    /// The goals proposed as nested plans (empty for a flat plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<ProposedGroup>,
    /// Why, in a sentence or two.
    pub reasoning: String,
    /// Every signal that fired, in order.
    pub signals: Vec<Signal>,
    /// Which path produced it.
    pub engine: Engine,
    /// Set when the brief asks for something Tessera will not execute (a raw
    /// transfer to an arbitrary address), with the explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

impl Classification {
    /// The quadrant of the two labels.
    pub fn quadrant(&self) -> Quadrant {
        match (self.decomposability.value, self.stakes.value) {
            (Decomposability::Atomic, Stakes::Low) => Quadrant::AtomicLow,
            (Decomposability::Composite, Stakes::Low) => Quadrant::CompositeLow,
            (Decomposability::Atomic, Stakes::High) => Quadrant::AtomicHigh,
            (Decomposability::Composite, Stakes::High) => Quadrant::CompositeHigh,
        }
    }

    /// No sub-tasks and no refusal: no capability matched, so a capability
    /// has to be picked by hand (or the brief rephrased).
    pub fn needs_manual_pick(&self) -> bool {
        self.plan.is_empty() && self.refusal.is_none()
    }

    /// The decomposability the plan itself has: composite with two or more
    /// sub-tasks, atomic with one or none.
    pub fn plan_shape(&self) -> Decomposability {
        if self.plan.len() >= 2 { Decomposability::Composite } else { Decomposability::Atomic }
    }

    /// Fails towards caution: when both confidences are below `threshold`,
    /// the cautious quadrant wins — high stakes, and composite when the plan
    /// has several sub-tasks. On top of that, a stakes axis below the
    /// threshold is read as high on its own — an uncertain "low stakes" is
    /// never trusted to skip the confirmation.
    ///
    /// Last, the decomposability label is made to match the plan (see
    /// [`Self::plan_shape`]): a plan with 0 or 1 sub-task is never
    /// "composite", and one with several is never "atomic" (which would run
    /// it without showing the plan card). Stakes are never lowered here.
    pub fn settle(&mut self, threshold: f64) {
        let d_low = self.decomposability.confidence < threshold;
        let s_low = self.stakes.confidence < threshold;
        if d_low && s_low {
            let shape = self.plan_shape();
            if self.decomposability.value != shape || self.stakes.value != Stakes::High {
                let label = match shape {
                    Decomposability::Composite => "composite / high",
                    Decomposability::Atomic => {
                        "high stakes (a plan of at most one sub-task stays atomic)"
                    }
                };
                self.signals.push(Signal::new(
                    SignalKind::Guard,
                    "cautious_quadrant",
                    format!("both confidences below {threshold}: {label}"),
                ));
            }
            self.decomposability.value = shape;
            self.stakes.value = Stakes::High;
        } else if s_low && self.stakes.value == Stakes::Low {
            self.signals.push(Signal::new(
                SignalKind::Guard,
                "uncertain_stakes",
                format!("stakes confidence below {threshold}: treated as high"),
            ));
            self.stakes.value = Stakes::High;
        }
        let shape = self.plan_shape();
        if self.decomposability.value != shape {
            self.signals.push(Signal::new(
                SignalKind::Guard,
                "shape_follows_plan",
                format!(
                    "labelled {:?} with {} sub-task(s): {:?}",
                    self.decomposability.value,
                    self.plan.len(),
                    shape
                ),
            ));
            self.decomposability.value = shape;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(index: u32) -> ProposedSubTask {
        ProposedSubTask {
            index,
            capability: "summarize".into(),
            spec: "s".into(),
            estimated_cost: None,
            deadline_offset_secs: 60,
            depends_on: vec![],
            path: None,
            chosen_by: vec![],
        }
    }

    /// A classification whose plan has as many sub-tasks as its label says.
    fn c(d: Decomposability, dc: f64, s: Stakes, sc: f64) -> Classification {
        let n = if d == Decomposability::Composite { 2 } else { 1 };
        Classification {
            decomposability: Axis { value: d, confidence: dc },
            stakes: Axis { value: s, confidence: sc },
            plan: (0..n).map(step).collect(),
            groups: Vec::new(),
            reasoning: String::new(),
            signals: vec![],
            engine: Engine::Offline,
            refusal: None,
        }
    }

    #[test]
    fn both_uncertain_goes_cautious() {
        let mut x = c(Decomposability::Atomic, 0.4, Stakes::Low, 0.3);
        x.plan.push(step(1));
        x.settle(DEFAULT_THRESHOLD);
        assert_eq!(x.quadrant(), Quadrant::CompositeHigh);
        assert_eq!(x.signals[0].name, "cautious_quadrant");
        // One sub-task: the caution is in the stakes; the shape stays atomic.
        let mut y = c(Decomposability::Atomic, 0.4, Stakes::Low, 0.3);
        y.settle(DEFAULT_THRESHOLD);
        assert_eq!(y.quadrant(), Quadrant::AtomicHigh);
        assert_eq!(y.signals[0].name, "cautious_quadrant");
    }

    #[test]
    fn the_shape_follows_the_plan() {
        // Composite with no sub-tasks (an unrecognized brief, before) or one
        // (a dropped money step, before): atomic.
        for n in [0, 1] {
            let mut x = c(Decomposability::Composite, 0.9, Stakes::High, 0.9);
            x.plan.truncate(n);
            x.settle(DEFAULT_THRESHOLD);
            assert_eq!(x.quadrant(), Quadrant::AtomicHigh, "{n} sub-task(s)");
            assert!(x.signals.iter().any(|s| s.name == "shape_follows_plan"));
        }
        // Atomic with three sub-tasks: composite, so the plan card is shown.
        let mut y = c(Decomposability::Atomic, 0.9, Stakes::Low, 0.9);
        y.plan = (0..3).map(step).collect();
        y.settle(DEFAULT_THRESHOLD);
        assert_eq!(y.quadrant(), Quadrant::CompositeLow);
        // Zero sub-tasks, no refusal: a manual pick.
        let mut z = c(Decomposability::Atomic, 0.3, Stakes::Low, 0.3);
        z.plan.clear();
        z.settle(DEFAULT_THRESHOLD);
        assert_eq!(z.quadrant(), Quadrant::AtomicHigh);
        assert!(z.needs_manual_pick());
    }

    #[test]
    fn confident_labels_stand_and_uncertain_low_stakes_does_not() {
        let mut x = c(Decomposability::Atomic, 0.9, Stakes::Low, 0.9);
        x.settle(DEFAULT_THRESHOLD);
        assert_eq!(x.quadrant(), Quadrant::AtomicLow);
        let mut y = c(Decomposability::Atomic, 0.9, Stakes::Low, 0.45);
        y.settle(DEFAULT_THRESHOLD);
        assert_eq!(y.quadrant(), Quadrant::AtomicHigh);
        let mut z = c(Decomposability::Atomic, 0.3, Stakes::Low, 0.9);
        z.settle(DEFAULT_THRESHOLD);
        assert_eq!(z.quadrant(), Quadrant::AtomicLow, "one uncertain axis alone is not both");
    }

    #[test]
    fn ceremony_by_quadrant() {
        assert_eq!(Quadrant::AtomicLow.ceremony(), Ceremony::Direct);
        assert_eq!(Quadrant::CompositeLow.ceremony(), Ceremony::PlanCard);
        assert_eq!(Quadrant::AtomicHigh.ceremony(), Ceremony::Confirm);
        assert_eq!(Quadrant::CompositeHigh.ceremony(), Ceremony::Confirm);
    }
}
