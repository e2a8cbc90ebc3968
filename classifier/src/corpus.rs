//! A corpus of briefs with the quadrant (and number of sub-tasks) the
//! offline planner gives each: the planner's regression table and the
//! classify benchmark's workload.

use crate::Quadrant::{self, *};

/// (brief, expected quadrant, expected number of proposed sub-tasks)
pub const BRIEFS: &[(&str, Quadrant, usize)] = &[
    // Atomic, low stakes: one capability.
    ("Summarize this article in three bullets", AtomicLow, 1),
    ("Summarise the meeting notes", AtomicLow, 1),
    ("Give me a tl;dr of the report", AtomicLow, 1),
    ("Translate the press release to French", AtomicLow, 1),
    ("Translate this paragraph to Spanish", AtomicLow, 1),
    ("What is the sentiment of this customer review?", AtomicLow, 1),
    ("Classify the tone of the email", AtomicLow, 1),
    ("Extract the entities from the contract", AtomicLow, 1),
    ("List the companies mentioned in the filing", AtomicLow, 1),
    ("Condense the transcript into a short summary", AtomicLow, 1),
    (
        "Summarize: The council met on Monday. It approved the budget and then voted to fund \
           schools, which critics said was too expensive for a small town.",
        AtomicLow,
        1,
    ),
    ("Translate the menu to Spanish please", AtomicLow, 1),
    // Composite, low stakes: chains.
    ("Translate this article to French, then summarize it in three bullets", CompositeLow, 2),
    ("Summarize the report and then translate the summary to Spanish", CompositeLow, 2),
    ("Extract the entities, then summarize who does what", CompositeLow, 2),
    ("Translate the review to French; then classify its sentiment", CompositeLow, 2),
    ("Summarize the thread, after that classify the tone of the summary", CompositeLow, 2),
    (
        "Translate the memo to Spanish, then summarize it, then extract the entities",
        CompositeLow,
        3,
    ),
    ("Translate to French and summarize the letter", CompositeLow, 2),
    ("Summarize the article followed by a sentiment check", CompositeLow, 2),
    // Composite, low stakes: fan-out.
    ("Summarize each of these three articles", CompositeLow, 3),
    ("Classify the sentiment of these 4 reviews", CompositeLow, 4),
    ("Translate these two emails to French", CompositeLow, 2),
    (
        "Summarize the following:\n- the budget memo\n- the hiring memo\n- the travel memo",
        CompositeLow,
        3,
    ),
    ("Extract entities from these five documents", CompositeLow, 5),
    ("Summarize:\n1. chapter one\n2. chapter two", CompositeLow, 2),
    // Composite, low stakes: research / top-N.
    ("Research the top 5 open-source vector databases", CompositeLow, 6),
    ("Find the top 3 coffee roasters in Lisbon", CompositeLow, 4),
    ("Compare the leading note-taking apps", CompositeLow, 4),
    ("Plan a three-day trip to Porto", CompositeLow, 4),
    ("Research best practices for API rate limiting", CompositeLow, 4),
    ("Investigate why the build got slower", CompositeLow, 4),
    // High stakes: raw transfers and money with work.
    ("Send 0.1 USDC to 0x52908400098527886E0F7030069857D2E4169EE7", AtomicHigh, 0),
    ("Transfer 25 USDC to 0x52908400098527886E0F7030069857D2E4169EE7 now", AtomicHigh, 0),
    ("Pay the designer $200", AtomicHigh, 0),
    ("Withdraw 5 ETH from the vault", AtomicHigh, 0),
    ("Approve spending of my USDC for this new contract", AtomicHigh, 0),
    ("Here is my seed phrase, keep it safe", AtomicHigh, 0),
    (
        "Summarize the invoice, then pay 40 USDC to 0x52908400098527886E0F7030069857D2E4169EE7",
        CompositeHigh,
        1,
    ),
    (
        "Translate the invoice to French and send it with $50 to 0x52908400098527886E0F7030069857D2E4169EE7",
        AtomicHigh,
        1,
    ),
    ("Research the top 3 grant programs and pay $10 to each applicant", CompositeHigh, 4),
    // Nothing recognized: no plan; low confidence keeps stakes cautious.
    ("Make it better", CompositeHigh, 0),
    ("Hello there", CompositeHigh, 0),
];
