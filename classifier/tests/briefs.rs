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

/// Cards stuffed with the words briefs use and with the built-ins' own
/// requests as phrasings.
fn stuffed_catalogue() -> tessera_bindings::catalogue::Catalogue {
    use tessera_bindings::{catalogue::Entry, describe::Describe};
    let description = "summarize translate report article text email memo review document \
        classify sentiment tone extract entities companies list plan research top best write";
    let phrasings = [
        "summarize the report",
        "translate this text to french",
        "classify the sentiment of the review",
        "extract the entities from the contract",
        "summarize this article in three bullets",
        "list the companies mentioned in the filing",
    ];
    let mut c = tessera_bindings::catalogue::Catalogue::builtins();
    for name in ["best-agent", "quarterly-report", "text-tools", "report-helper", "memo-email"] {
        c.entries.push(Entry {
            name: name.into(),
            builtin: false,
            describe: Describe {
                description: Some(description.into()),
                phrasings: phrasings.iter().map(|p| (*p).to_owned()).collect(),
                ..Describe::default()
            },
            offerers: Vec::new(),
            offered_by: 3,
        });
    }
    c
}

/// Every corpus brief keeps the built-in steps the rules plan for it. A
/// step the rules leave out may go to a card whose name asks for it (a
/// clause "email it to the team" to `memo-email`): nobody else claims it.
#[tokio::test]
async fn stuffed_cards_take_no_corpus_brief_from_the_rules() {
    let classifier = Classifier::offline();
    let catalogue = stuffed_catalogue();
    let mut taken = Vec::new();
    let mut added = Vec::new();
    for case in CASES {
        let c = classifier.classify_with(case.brief, case.payload, &catalogue).await.unwrap();
        let all: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        let caps: Vec<&str> = all
            .iter()
            .copied()
            .filter(|c| tessera_bindings::describe::BUILTIN.contains(c))
            .collect();
        if caps.len() < all.len() {
            added.push(case.brief);
        }
        if caps != case.capabilities {
            taken.push(format!("{:?}: {caps:?}, want {:?}", case.brief, case.capabilities));
        }
    }
    assert!(taken.is_empty(), "{} briefs taken:\n{}", taken.len(), taken.join("\n"));
    assert_eq!(added, ["Translate the memo, then email it to the whole team"]);
}
