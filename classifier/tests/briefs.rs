//! The offline classifier against the corpus of briefs with their expected
//! quadrant and plan size.

use tessera_classifier::{Classifier, Stakes, corpus::BRIEFS};

#[tokio::test]
async fn offline_planner_puts_each_brief_in_its_quadrant() {
    let classifier = Classifier::offline();
    assert!(BRIEFS.len() >= 40, "the corpus has {} briefs", BRIEFS.len());
    let mut failures = Vec::new();
    for (brief, quadrant, subtasks) in BRIEFS {
        let c = classifier.classify(brief, None).await.unwrap();
        if c.quadrant() != *quadrant || c.plan.len() != *subtasks {
            failures.push(format!(
                "{brief:?}: got {:?} with {} sub-tasks ({:?}), want {quadrant:?} with {subtasks}",
                c.quadrant(),
                c.plan.len(),
                c.plan.iter().map(|s| s.capability.as_str()).collect::<Vec<_>>()
            ));
        }
        // Every proposed plan is well formed: indexes 0..n, dependencies earlier.
        for (i, s) in c.plan.iter().enumerate() {
            assert_eq!(s.index as usize, i);
            assert!(s.depends_on.iter().all(|d| (*d as usize) < i), "{brief:?}");
        }
        // A high-stakes brief with nothing to plan says why.
        if c.stakes.value == Stakes::High && c.plan.is_empty() && c.stakes.confidence >= 0.5 {
            assert!(
                c.refusal.is_some(),
                "{brief:?} is a raw transfer and must say why it is refused"
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} briefs misclassified:\n{}",
        failures.len(),
        BRIEFS.len(),
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
