//! The shape of a metric table.
//!
//! Each crate that records metrics (through the `metrics` facade) names
//! them, gives their kind, labels and help, and exports them as one
//! `METRICS: &[Metric]` table next to the functions that record them:
//! `tessera-bindings` (RPC calls, blob fetches), `tessera-orchestrator`
//! (runs, phases, decisions, leases), `tessera-indexer` and
//! `tessera-arbiter`. The exporter (`tessera_http::ops`) takes the tables of
//! the parts a process runs: it describes every metric and sets each
//! histogram's buckets from them.
//!
//! This crate has no dependency, so the lowest crate that records can use it.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

/// What a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (resets when the process restarts).
    Counter,
    /// A value now.
    Gauge,
    /// Observations in buckets (`_bucket`, `_sum`, `_count`).
    Histogram,
}

impl Kind {
    /// The Prometheus type word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// One metric: name, kind, label names, what it means and, for a
/// histogram, its buckets.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// The exported name.
    pub name: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// Its label names.
    pub labels: &'static [&'static str],
    /// What it means (the `# HELP` line).
    pub help: &'static str,
    /// A histogram's bucket bounds (empty: the exporter's default, and
    /// nothing for counters and gauges).
    pub buckets: &'static [f64],
}

/// A table's conventions, checked by each crate's tests: every name starts
/// with `tessera_`, a counter's and only a counter's ends with `_total`,
/// and only a histogram has buckets. The first metric that breaks one, and
/// how.
pub fn check(table: &[Metric]) -> Result<(), String> {
    for m in table {
        if !m.name.starts_with("tessera_") {
            return Err(format!("{}: not named tessera_…", m.name));
        }
        if (m.kind == Kind::Counter) != m.name.ends_with("_total") {
            return Err(format!("{}: only counters end with _total", m.name));
        }
        if m.kind != Kind::Histogram && !m.buckets.is_empty() {
            return Err(format!("{}: buckets on a {}", m.name, m.kind.as_str()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn metric(name: &'static str, kind: Kind, buckets: &'static [f64]) -> Metric {
        Metric { name, kind, labels: &[], help: "", buckets }
    }

    #[test]
    fn the_conventions_are_checked() {
        assert!(check(&[metric("tessera_x_total", Kind::Counter, &[])]).is_ok());
        assert!(check(&[metric("tessera_x_seconds", Kind::Histogram, &[1.0])]).is_ok());
        assert!(check(&[metric("x_total", Kind::Counter, &[])]).is_err());
        assert!(check(&[metric("tessera_x", Kind::Counter, &[])]).is_err());
        assert!(check(&[metric("tessera_x_total", Kind::Gauge, &[])]).is_err());
        assert!(check(&[metric("tessera_x", Kind::Gauge, &[1.0])]).is_err());
    }
}
