//! The classify benchmark: offline classification latency over the corpus,
//! against the heuristic scan alone as the same-run baseline (the cost of
//! reading the brief at all), and the planner's accuracy per axis on the
//! corpus, counted from its real answers.

use std::time::Instant;

use serde::Serialize;

use tessera_classifier::{Classifier, corpus::CASES, heuristic};

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Samples.
    pub n: usize,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
}

/// Right answers on one axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Score {
    /// Briefs answered right.
    pub right: usize,
    /// Briefs asked.
    pub of: usize,
    /// `right / of` in percent.
    pub percent: f64,
}

impl Score {
    fn new(right: usize, of: usize) -> Self {
        Self { right, of, percent: if of == 0 { 0.0 } else { 100.0 * right as f64 / of as f64 } }
    }
}

impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} ({:.1}%)", self.right, self.of, self.percent)
    }
}

/// A corpus brief answered wrong on at least one axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Miss {
    /// The brief.
    pub brief: String,
    /// The axes it got wrong (`decomposability`, `stakes`, `plan`).
    pub wrong: Vec<&'static str>,
    /// What the planner answered.
    pub got: String,
}

/// The offline planner's accuracy on the corpus, per axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// Briefs in the corpus.
    pub briefs: usize,
    /// Atomic or composite as expected.
    pub decomposability: Score,
    /// Low or high stakes as expected.
    pub stakes: Score,
    /// The plan's capabilities, in order, and whether it was refused, as
    /// expected.
    pub plan: Score,
    /// Briefs answered wrong.
    pub misses: Vec<Miss>,
}

/// Classifies every corpus brief once with `classifier` and counts the
/// answers that match the corpus, per axis. A brief that fails to classify
/// counts as wrong on every axis.
pub async fn accuracy(classifier: &Classifier) -> Accuracy {
    let (mut d, mut s, mut p) = (0, 0, 0);
    let mut misses = Vec::new();
    for case in CASES {
        let mut wrong = Vec::new();
        let got = match classifier.classify(case.brief, case.payload).await {
            Ok(c) => {
                let caps: Vec<&str> = c.plan.iter().map(|t| t.capability.as_str()).collect();
                if c.decomposability.value == case.decomposability {
                    d += 1;
                } else {
                    wrong.push("decomposability");
                }
                if c.stakes.value == case.stakes {
                    s += 1;
                } else {
                    wrong.push("stakes");
                }
                if caps == case.capabilities && c.refusal.is_some() == case.refused {
                    p += 1;
                } else {
                    wrong.push("plan");
                }
                format!(
                    "{:?} / {:?}, plan {caps:?}{}",
                    c.decomposability.value,
                    c.stakes.value,
                    if c.refusal.is_some() { ", refused" } else { "" }
                )
            }
            Err(e) => {
                wrong.extend(["decomposability", "stakes", "plan"]);
                format!("error: {e}")
            }
        };
        if !wrong.is_empty() {
            misses.push(Miss { brief: case.brief.to_owned(), wrong, got });
        }
    }
    let n = CASES.len();
    Accuracy {
        briefs: n,
        decomposability: Score::new(d, n),
        stakes: Score::new(s, n),
        plan: Score::new(p, n),
        misses,
    }
}

/// What the classify bench measured.
#[derive(Debug, Clone, Serialize)]
pub struct ClassifyBenchReport {
    /// The offline planner's accuracy on the corpus, per axis.
    pub accuracy: Accuracy,
    /// A full offline pass (planner, cross-check, caution rules, trace events).
    pub offline_classify: Latency,
    /// The heuristic scan alone.
    pub heuristic_scan: Latency,
    /// Median classify over median scan.
    pub ratio_to_scan: f64,
    /// Goal for the p99 of a pass, µs.
    pub goal_p99_us: f64,
}

impl ClassifyBenchReport {
    /// A printable table.
    pub fn table(&self) -> String {
        let row = |name: &str, l: &Latency| {
            format!(
                "{name:<40} {:>7} {:>10.1} {:>10.1} {:>10.1}\n",
                l.n, l.p50_us, l.p99_us, l.max_us
            )
        };
        let mut out = format!(
            "{:<40} {:>7} {:>10} {:>10} {:>10}\n",
            "measure", "n", "p50 µs", "p99 µs", "max µs"
        );
        out += &row("offline classify (full pass)", &self.offline_classify);
        out += &row("baseline: heuristic scan only", &self.heuristic_scan);
        out += &format!(
            "classify / scan: {:.1}x; goal p99 <= {:.0} µs: {}\n",
            self.ratio_to_scan,
            self.goal_p99_us,
            if self.offline_classify.p99_us <= self.goal_p99_us { "met" } else { "NOT met" }
        );
        let a = &self.accuracy;
        out += &format!(
            "accuracy on {} corpus briefs: decomposability {}, stakes {}, plan {}\n",
            a.briefs, a.decomposability, a.stakes, a.plan
        );
        for m in &a.misses {
            out += &format!("  wrong {}: {:?} -> {}\n", m.wrong.join("+"), m.brief, m.got);
        }
        out
    }
}

fn latency(mut us: Vec<f64>) -> Latency {
    us.sort_by(f64::total_cmp);
    let at = |q: f64| crate::percentile(&us, q);
    Latency { n: us.len(), p50_us: at(0.5), p99_us: at(0.99), max_us: at(1.0) }
}

/// Counts the planner's right answers on the corpus, then classifies every
/// brief of the corpus `rounds` times (after one warm-up round).
pub async fn run(rounds: usize) -> ClassifyBenchReport {
    let classifier = Classifier::offline();
    let accuracy = accuracy(&classifier).await;
    let rounds = rounds.max(1);
    let mut full = Vec::with_capacity(rounds * CASES.len());
    let mut scan = Vec::with_capacity(rounds * CASES.len());
    for round in 0..=rounds {
        for case in CASES {
            let brief = case.brief;
            let t = Instant::now();
            let c = classifier.classify(brief, case.payload).await;
            let full_us = t.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(&c);
            let t = Instant::now();
            std::hint::black_box(heuristic::scan(brief));
            let scan_us = t.elapsed().as_secs_f64() * 1e6;
            if round > 0 {
                full.push(full_us);
                scan.push(scan_us);
            }
        }
    }
    let offline_classify = latency(full);
    let heuristic_scan = latency(scan);
    ClassifyBenchReport {
        accuracy,
        ratio_to_scan: offline_classify.p50_us / heuristic_scan.p50_us.max(f64::MIN_POSITIVE),
        offline_classify,
        heuristic_scan,
        goal_p99_us: 5000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accuracy_counts_the_real_answers() {
        let a = accuracy(&Classifier::offline()).await;
        assert_eq!(a.briefs, CASES.len());
        assert_eq!(
            (a.decomposability.right, a.stakes.right, a.plan.right),
            (CASES.len(), CASES.len(), CASES.len())
        );
    }
}
