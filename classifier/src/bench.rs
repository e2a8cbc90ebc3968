//! The classify benchmark: offline classification latency over the corpus,
//! against the heuristic scan alone as the same-run baseline (the cost of
//! reading the brief at all).

use std::time::Instant;

use serde::Serialize;

use crate::{Classifier, corpus::BRIEFS, heuristic};

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

/// What the classify bench measured.
#[derive(Debug, Clone, Serialize)]
pub struct ClassifyBenchReport {
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
        out
    }
}

fn latency(mut us: Vec<f64>) -> Latency {
    us.sort_by(f64::total_cmp);
    let at = |q: f64| us[(((us.len() - 1) as f64) * q).round() as usize];
    Latency { n: us.len(), p50_us: at(0.5), p99_us: at(0.99), max_us: at(1.0) }
}

/// Classifies every brief of the corpus `rounds` times (after one warm-up round).
pub async fn run(rounds: usize) -> ClassifyBenchReport {
    let classifier = Classifier::offline();
    let rounds = rounds.max(1);
    let mut full = Vec::with_capacity(rounds * BRIEFS.len());
    let mut scan = Vec::with_capacity(rounds * BRIEFS.len());
    for round in 0..=rounds {
        for (brief, _, _) in BRIEFS {
            let t = Instant::now();
            let c = classifier.classify(brief, None).await;
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
        ratio_to_scan: offline_classify.p50_us / heuristic_scan.p50_us.max(f64::MIN_POSITIVE),
        offline_classify,
        heuristic_scan,
        goal_p99_us: 5000.0,
    }
}
