//! The offline classifier against a table of briefs with their expected
//! quadrant (and, where it matters, the plan's shape).

use tessera_classifier::{Classifier, Quadrant};

const ADDR: &str = "0x52908400098527886E0F7030069857D2E4169EE7";

/// (brief, expected quadrant, expected number of sub-tasks)
fn table() -> Vec<(String, Quadrant, usize)> {
    use Quadrant::*;
    let s = |b: &str, q, n| (b.to_owned(), q, n);
    vec![
        // Atomic, low stakes: one capability.
        s("Summarize this article in three bullets", AtomicLow, 1),
        s("Summarise the meeting notes", AtomicLow, 1),
        s("Give me a tl;dr of the report", AtomicLow, 1),
        s("Translate the press release to French", AtomicLow, 1),
        s("Translate this paragraph to Spanish", AtomicLow, 1),
        s("What is the sentiment of this customer review?", AtomicLow, 1),
        s("Classify the tone of the email", AtomicLow, 1),
        s("Extract the entities from the contract", AtomicLow, 1),
        s("List the companies mentioned in the filing", AtomicLow, 1),
        s("Condense the transcript into a short summary", AtomicLow, 1),
        s(
            "Summarize: The council met on Monday. It approved the budget and then voted to fund \
           schools, which critics said was too expensive for a small town.",
            AtomicLow,
            1,
        ),
        s("Translate the menu to Spanish please", AtomicLow, 1),
        // Composite, low stakes: chains.
        s("Translate this article to French, then summarize it in three bullets", CompositeLow, 2),
        s("Summarize the report and then translate the summary to Spanish", CompositeLow, 2),
        s("Extract the entities, then summarize who does what", CompositeLow, 2),
        s("Translate the review to French; then classify its sentiment", CompositeLow, 2),
        s("Summarize the thread, after that classify the tone of the summary", CompositeLow, 2),
        s(
            "Translate the memo to Spanish, then summarize it, then extract the entities",
            CompositeLow,
            3,
        ),
        s("Translate to French and summarize the letter", CompositeLow, 2),
        s("Summarize the article followed by a sentiment check", CompositeLow, 2),
        // Composite, low stakes: fan-out.
        s("Summarize each of these three articles", CompositeLow, 3),
        s("Classify the sentiment of these 4 reviews", CompositeLow, 4),
        s("Translate these two emails to French", CompositeLow, 2),
        s(
            "Summarize the following:\n- the budget memo\n- the hiring memo\n- the travel memo",
            CompositeLow,
            3,
        ),
        s("Extract entities from these five documents", CompositeLow, 5),
        s("Summarize:\n1. chapter one\n2. chapter two", CompositeLow, 2),
        // Composite, low stakes: research / top-N.
        s("Research the top 5 open-source vector databases", CompositeLow, 6),
        s("Find the top 3 coffee roasters in Lisbon", CompositeLow, 4),
        s("Compare the leading note-taking apps", CompositeLow, 4),
        s("Plan a three-day trip to Porto", CompositeLow, 4),
        s("Research best practices for API rate limiting", CompositeLow, 4),
        s("Investigate why the build got slower", CompositeLow, 4),
        // High stakes: raw transfers and money with work.
        s(&format!("Send 0.1 USDC to {ADDR}"), AtomicHigh, 0),
        s(&format!("Transfer 25 USDC to {ADDR} now"), AtomicHigh, 0),
        s("Pay the designer $200", AtomicHigh, 0),
        s("Withdraw 5 ETH from the vault", AtomicHigh, 0),
        s("Approve spending of my USDC for this new contract", AtomicHigh, 0),
        s("Here is my seed phrase, keep it safe", AtomicHigh, 0),
        s(&format!("Summarize the invoice, then pay 40 USDC to {ADDR}"), CompositeHigh, 1),
        s(
            &format!("Translate the invoice to French and send it with $50 to {ADDR}"),
            AtomicHigh,
            1,
        ),
        s("Research the top 3 grant programs and pay $10 to each applicant", CompositeHigh, 4),
        // Nothing recognized: no plan; low confidence keeps stakes cautious.
        s("Make it better", CompositeHigh, 0),
        s("Hello there", CompositeHigh, 0),
    ]
}

#[tokio::test]
async fn offline_planner_puts_each_brief_in_its_quadrant() {
    let classifier = Classifier::offline();
    let table = table();
    assert!(table.len() >= 40, "the table has {} briefs", table.len());
    let mut failures = Vec::new();
    for (brief, quadrant, subtasks) in &table {
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
        if c.stakes.value == tessera_classifier::Stakes::High
            && c.plan.is_empty()
            && !brief.starts_with("Make")
            && !brief.starts_with("Hello")
        {
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
        table.len(),
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
