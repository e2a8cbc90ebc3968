//! The trace a classification pass writes, in a test binary of its own: a
//! scoped subscriber (`set_default`) only sees events whose callsites no
//! other thread was registering at the same moment, so tests of the same
//! process classifying in parallel would make this one flaky.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use std::sync::{Arc, Mutex};

use tessera_classifier::Classifier;

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_pass_writes_five_json_trace_events() {
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let c = Classifier::offline()
        .classify("Summarize each of these three articles", None)
        .await
        .unwrap();
    assert_eq!(c.plan.len(), 3);
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let events: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["fields"]["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["started", "llm_attempt", "raw", "heuristic_applied", "completed"]);
    assert!(events.iter().all(|e| e["target"] == "tessera::classify"));
    let pass = &events[0]["fields"]["pass"];
    assert!(events.iter().all(|e| &e["fields"]["pass"] == pass), "one pass id throughout");
    assert_eq!(events[1]["fields"]["outcome"], "skipped: no API key");
    assert!(events[4]["fields"]["quadrant"].as_str().unwrap().contains("CompositeLow"));
}
