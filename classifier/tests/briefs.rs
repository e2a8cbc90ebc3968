//! The offline classifier against the corpus: every brief must get its
//! expected decomposability, stakes and plan.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

use tessera_classifier::{Classifier, Stakes, corpus::CASES};

#[tokio::test]
async fn offline_planner_answers_every_corpus_brief() {
    let classifier = Classifier::offline();
    assert!(CASES.len() >= 80, "the corpus has {} briefs", CASES.len());
    let mut failures = Vec::new();
    for case in CASES {
        let c = classifier.classify(case.brief, case.payload).await.unwrap();
        let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        if c.decomposability.value != case.decomposability
            || c.stakes.value != case.stakes
            || caps != case.capabilities
            || c.refusal.is_some() != case.refused
        {
            failures.push(format!(
                "{:?}: got {:?} / {:?} {caps:?} refused={}, want {:?} / {:?} {:?} refused={}",
                case.brief,
                c.decomposability.value,
                c.stakes.value,
                c.refusal.is_some(),
                case.decomposability,
                case.stakes,
                case.capabilities,
                case.refused,
            ));
        }
        // Every proposed plan is well formed: indexes 0..n, dependencies earlier.
        for (i, s) in c.plan.iter().enumerate() {
            assert_eq!(s.index as usize, i);
            assert!(s.depends_on.iter().all(|d| (*d as usize) < i), "{:?}", case.brief);
        }
        // The label matches the plan: composite means two sub-tasks or more.
        assert_eq!(
            c.plan.len() >= 2,
            c.quadrant() == tessera_classifier::Quadrant::CompositeLow
                || c.quadrant() == tessera_classifier::Quadrant::CompositeHigh,
            "{:?}",
            case.brief
        );
        // A high-stakes brief with nothing to plan says why: a refusal, or a
        // manual pick.
        if c.plan.is_empty() {
            assert!(c.refusal.is_some() || c.needs_manual_pick(), "{:?}", case.brief);
            assert_eq!(c.stakes.value, Stakes::High, "{:?}", case.brief);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} briefs misclassified:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn empty_and_oversized_briefs_are_refused() {
    let c = Classifier::offline();
    assert_eq!(
        c.classify("   ", None).await.unwrap_err(),
        tessera_classifier::ClassifyError::Empty
    );
    let long = "x".repeat(20_000);
    assert!(matches!(
        c.classify(&long, None).await,
        Err(tessera_classifier::ClassifyError::TooLong(_))
    ));
}
