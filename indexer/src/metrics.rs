//! The indexer's metrics: how far it has read the chain and how many
//! events it stored, recorded by [`crate::ingest`] and exported by
//! `tessera_http::ops` ([`crate::api::ops`] describes them).

use tessera_http::ops::{Kind, Metric};

/// The chain head the indexer last read.
pub const INDEXER_HEAD: &str = "tessera_indexer_head_block";
/// The highest block the index reflects.
pub const INDEXER_INDEXED: &str = "tessera_indexer_indexed_block";
/// Chain head − indexed block.
pub const INDEXER_LAG: &str = "tessera_indexer_head_lag_blocks";
/// Escrow and registry events stored by the indexer.
pub const INDEXER_EVENTS: &str = "tessera_indexer_events_total";
/// Specs the indexer's fetch queue handled, by outcome.
pub const INDEXER_SPEC_FETCHES: &str = "tessera_indexer_spec_fetches_total";
/// Specs waiting in the indexer's fetch queue.
pub const INDEXER_SPEC_QUEUE: &str = "tessera_indexer_spec_queue";
/// Spec fetches the indexer is running.
pub const INDEXER_SPEC_IN_FLIGHT: &str = "tessera_indexer_spec_fetches_in_flight";

/// Webhook delivery attempts, by outcome.
pub const INDEXER_WEBHOOK_DELIVERIES: &str = "tessera_indexer_webhook_deliveries_total";

/// The indexer's metrics.
pub const METRICS: &[Metric] = &[
    Metric {
        name: INDEXER_HEAD,
        kind: Kind::Gauge,
        labels: &[],
        help: "The chain head at the indexer's latest pass.",
        buckets: &[],
    },
    Metric {
        name: INDEXER_INDEXED,
        kind: Kind::Gauge,
        labels: &[],
        help: "The highest block the index reflects.",
        buckets: &[],
    },
    Metric {
        name: INDEXER_LAG,
        kind: Kind::Gauge,
        labels: &[],
        help: "Blocks the index is behind the chain: head at the latest pass minus the highest indexed block.",
        buckets: &[],
    },
    Metric {
        name: INDEXER_EVENTS,
        kind: Kind::Counter,
        labels: &[],
        help: "Escrow and registry events the indexer stored.",
        buckets: &[],
    },
    Metric {
        name: INDEXER_SPEC_FETCHES,
        kind: Kind::Counter,
        labels: &["outcome"],
        help: "Task specs the indexer's fetch queue handled, off the ingest path: outcome=fetched (kept: an envelope), refused (bytes that are no envelope, or do not hash right), failed (out of reach within the fetch bounds) or dropped (the queue, or the funder's share of it, was full).",
        buckets: &[],
    },
    Metric {
        name: INDEXER_SPEC_QUEUE,
        kind: Kind::Gauge,
        labels: &[],
        help: "Task specs waiting in the indexer's fetch queue.",
        buckets: &[],
    },
    Metric {
        name: INDEXER_SPEC_IN_FLIGHT,
        kind: Kind::Gauge,
        labels: &[],
        help: "Task spec fetches the indexer is running.",
        buckets: &[],
    },
    Metric {
        name: INDEXER_WEBHOOK_DELIVERIES,
        kind: Kind::Counter,
        labels: &["outcome"],
        help: "Webhook delivery attempts: outcome=delivered (a 2xx answer) or failed (another answer, a timeout or no connection; tried again after a backoff).",
        buckets: &[],
    },
];

/// Sets the indexer's head, indexed block and lag.
pub fn indexer_progress(head: u64, indexed: u64) {
    metrics::gauge!(INDEXER_HEAD).set(head as f64);
    metrics::gauge!(INDEXER_INDEXED).set(indexed as f64);
    metrics::gauge!(INDEXER_LAG).set(head.saturating_sub(indexed) as f64);
}

/// Sets the indexer's head only (its indexed block is not known yet).
pub fn indexer_head(head: u64) {
    metrics::gauge!(INDEXER_HEAD).set(head as f64);
}

/// Counts `n` events stored by the indexer.
pub fn events_indexed(n: u64) {
    metrics::counter!(INDEXER_EVENTS).increment(n);
}

/// Counts a spec fetch of the queue by `outcome`.
pub fn spec_fetch(outcome: &'static str) {
    metrics::counter!(INDEXER_SPEC_FETCHES, "outcome" => outcome).increment(1);
}

/// Sets the fetch queue's waiting and running counts.
pub fn spec_queue(waiting: usize, in_flight: usize) {
    metrics::gauge!(INDEXER_SPEC_QUEUE).set(waiting as f64);
    metrics::gauge!(INDEXER_SPEC_IN_FLIGHT).set(in_flight as f64);
}

/// Counts a webhook delivery attempt, delivered or failed.
pub fn webhook_delivery(delivered: bool) {
    let outcome = if delivered { "delivered" } else { "failed" };
    metrics::counter!(INDEXER_WEBHOOK_DELIVERIES, "outcome" => outcome).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_metrics_render_with_their_names_labels_and_help() {
        let text = tessera_http::ops::render_with(&[METRICS], || {
            indexer_progress(120, 100);
            events_indexed(5);
            spec_fetch("dropped");
            spec_queue(3, 2);
            webhook_delivery(true);
            webhook_delivery(false);
            webhook_delivery(false);
        });
        for line in [
            "tessera_indexer_head_block 120",
            "tessera_indexer_indexed_block 100",
            "tessera_indexer_head_lag_blocks 20",
            "tessera_indexer_events_total 5",
            "tessera_indexer_spec_fetches_total{outcome=\"dropped\"} 1",
            "tessera_indexer_spec_queue 3",
            "tessera_indexer_spec_fetches_in_flight 2",
            "tessera_indexer_webhook_deliveries_total{outcome=\"delivered\"} 1",
            "tessera_indexer_webhook_deliveries_total{outcome=\"failed\"} 2",
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
