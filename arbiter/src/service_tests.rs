//! Unit tests of the arbiter service: windows, actions, publishing.

use alloy::primitives::aliases::U40;
use tessera_bindings::{ITaskEscrow::Task, envelope::EnvelopeCodec};

use super::{ruling::publish_verdict, *};
use crate::judge::Verdict;

fn task(status: Status) -> Task {
    Task {
        status: status as u8,
        updatedAt: U40::from(1_000u64),
        disputeWindow: 86_400,
        appealWindow: 3_600,
        appealRulingWindow: 7_200,
        ..Default::default()
    }
}

#[test]
fn each_waiting_status_ends_with_its_own_window() {
    assert_eq!(window_end(&task(Status::Disputed)), Some(1_000 + 86_400));
    assert_eq!(window_end(&task(Status::Ruled)), Some(1_000 + 3_600));
    // An appeal waits for the appeal arbiter's window, not the dispute's.
    assert_eq!(window_end(&task(Status::Appealed)), Some(1_000 + 7_200));
    for status in Status::ALL {
        if !matches!(status, Status::Disputed | Status::Ruled | Status::Appealed) {
            assert_eq!(window_end(&task(status)), None, "{status}");
        }
    }
}

#[test]
fn a_long_rationale_is_published_with_the_hint() {
    let blobs = tessera_bindings::envelope::MemoryBlobStore::new();
    let hint = BlobUrl::parse("http://10.0.0.9:9102/blobs").unwrap();
    let long = Verdict::new(VerdictKind::Client, 0, "r".repeat(5_000), "offline-rubric");
    let d = publish_verdict("7", Level::Dispute, &long, &blobs, Some(&hint)).unwrap();
    assert!(d.rationale_uri.starts_with("sha256:"), "{}", d.rationale_uri);
    assert!(d.rationale_uri.ends_with("?src=http://10.0.0.9:9102/blobs"), "{}", d.rationale_uri);
    let body = EnvelopeCodec::default().fetch(&d.rationale_uri, &blobs).unwrap();
    assert_eq!(body, d.body.as_bytes());
    // A short one is inline, hint or not.
    let short = Verdict::new(VerdictKind::Worker, 10_000, "fine", "offline-rubric");
    let d = publish_verdict("7", Level::Dispute, &short, &blobs, Some(&hint)).unwrap();
    assert!(d.rationale_uri.starts_with("data:"), "{}", d.rationale_uri);
}

#[test]
fn an_appeal_ruling_reads_as_its_own_action() {
    let a = Action::AppealRuled {
        task: "7".into(),
        verdict: VerdictKind::Client,
        share_bps: 0,
        tx: B256::ZERO,
    };
    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(
        (v["action"].as_str(), v["verdict"].as_str()),
        (Some("appeal_ruled"), Some("client"))
    );
}
