//! The arbiter's metrics: its queue, the rulings it sent and its other
//! actions, recorded by [`crate::service`] and exported by
//! `tessera_http::ops` with [`METRICS`].

use tessera_http::ops::{Kind, Metric};

/// Disputes or appeals the arbiter has seen and not ruled on yet.
pub const ARBITER_QUEUE: &str = "tessera_arbiter_queue";
/// Rulings the arbiter sent.
pub const ARBITER_RULINGS: &str = "tessera_arbiter_rulings_total";
/// Other arbiter actions (finalizations, default refunds).
pub const ARBITER_ACTIONS: &str = "tessera_arbiter_actions_total";

/// The arbiter's metrics.
pub const METRICS: &[Metric] = &[
    Metric {
        name: ARBITER_QUEUE,
        kind: Kind::Gauge,
        labels: &["level"],
        help: "Disputes (level=dispute) or appeals (level=appeal) seen and not ruled on yet.",
        buckets: &[],
    },
    Metric {
        name: ARBITER_RULINGS,
        kind: Kind::Counter,
        labels: &["level", "verdict"],
        help: "Rulings sent: level=dispute (the arbiter) or appeal (the appeal arbiter), verdict=worker, client or split.",
        buckets: &[],
    },
    Metric {
        name: ARBITER_ACTIONS,
        kind: Kind::Counter,
        labels: &["action"],
        help: "Other arbiter actions sent: finalized (a ruling past its appeal window), default_claimed (a dispute past its window refunded).",
        buckets: &[],
    },
];

/// Sets [`ARBITER_QUEUE`] of `level` (`dispute` or `appeal`).
pub fn arbiter_queue(level: &'static str, queued: usize) {
    metrics::gauge!(ARBITER_QUEUE, "level" => level).set(queued as f64);
}

/// Counts one ruling sent at `level` with `verdict`.
pub fn arbiter_ruling(level: &'static str, verdict: &'static str) {
    metrics::counter!(ARBITER_RULINGS, "level" => level, "verdict" => verdict).increment(1);
}

/// Counts one other arbiter `action` sent.
pub fn arbiter_action(action: &'static str) {
    metrics::counter!(ARBITER_ACTIONS, "action" => action).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_metrics_render_with_their_names_labels_and_help() {
        let text = tessera_http::ops::render_with(&[METRICS], || {
            arbiter_queue("dispute", 1);
            arbiter_ruling("dispute", "worker");
            arbiter_action("finalized");
        });
        for line in [
            "tessera_arbiter_queue{level=\"dispute\"} 1",
            "tessera_arbiter_rulings_total{level=\"dispute\",verdict=\"worker\"} 1",
            "tessera_arbiter_actions_total{action=\"finalized\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
        }
        // Every metric of the table, recorded above, has its help line.
        tessera_http::ops::check(METRICS).unwrap();
        for m in METRICS {
            assert!(text.contains(&format!("# HELP {} ", m.name)), "no help for {}", m.name);
        }
    }
}
