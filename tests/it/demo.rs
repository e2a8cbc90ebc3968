//! `make demo` end to end: it must succeed and leave no chain behind.

use tessera_anvil::chain::ChainOptions;

#[tokio::test]
async fn demo_runs_a_lifecycle_and_stops_its_chain() {
    // anvil binds a port of its own choosing; the outcome says which, so we
    // can check afterwards that nothing listens there.
    let _slot = tessera_e2e::anvil_slot().await;
    let outcome = tessera_stack::demo::run(&ChainOptions::default()).await.expect("demo runs");
    let port = outcome.chain_port;
    for step in ["createTaskWithPermit", "acceptTask", "completeTask", "approvePayment"] {
        assert!(outcome.transcript.contains(step), "missing {step} in:\n{}", outcome.transcript);
    }
    assert!(outcome.transcript.contains("status Paid"), "{}", outcome.transcript);
    // The executor's work is real: three extracted sentences from the article.
    let bullets = outcome.transcript.lines().filter(|l| l.starts_with("  - ")).count();
    assert_eq!(bullets, 3, "{}", outcome.transcript);
    assert_eq!(
        outcome.executor_paid,
        alloy::primitives::U256::from(400_000u64),
        "cheapest summarizer's price"
    );
    // Then plans through the runner, each settled: the two first with
    // their lineage, the nested one and the plan between homes.
    assert_eq!(
        outcome.transcript.matches("plan_completed in").count(),
        4,
        "{}",
        outcome.transcript
    );
    // Their trees, rebuilt by the indexer from chain events.
    let lines: Vec<&str> = outcome.transcript.lines().collect();
    let task_line = |l: &&str| l.contains("─ ") && l.contains("…") && l.contains("Paid");
    for needle in ["translate", "summarize", "extract-entities", "sentiment-classify"] {
        assert!(
            lines.iter().any(|l| task_line(l) && l.contains(needle)),
            "tree line for {needle} in:\n{}",
            outcome.transcript
        );
    }
    // The summary under the translation is drawn one level deeper, and the
    // three-step plan's summary is marked a merge of both upstreams.
    let translation = lines.iter().position(|l| task_line(l) && l.contains("translate")).unwrap();
    assert!(
        lines[translation + 1].starts_with("       └─ ")
            && lines[translation + 1].contains("summarize"),
        "{}",
        outcome.transcript
    );
    assert!(outcome.transcript.contains("⇐ merge, also from"), "{}", outcome.transcript);
    // A nested plan: settled within its share, drawn as a group with its
    // leaves at their step paths, the step after it a merge of both.
    assert!(
        outcome
            .transcript
            .contains("nested plan 1 settled: paid 0.450000 USDC of its 0.450000 USDC share"),
        "{}",
        outcome.transcript
    );
    let group = lines
        .iter()
        .position(|l| {
            l.contains("▾ 1 nested plan \"Digest the translation\": 2 tasks, 0.450000 USDC")
        })
        .unwrap_or_else(|| panic!("the nested plan's header in:\n{}", outcome.transcript));
    assert!(
        lines[group + 1].contains("[1.0]") && task_line(&lines[group + 1]),
        "{}",
        outcome.transcript
    );
    assert!(
        lines[group + 2].contains("[1.1]") && task_line(&lines[group + 2]),
        "{}",
        outcome.transcript
    );
    assert!(
        lines[group + 3].contains("[2]") && lines[group + 3].contains("⇐ merge"),
        "{}",
        outcome.transcript
    );
    // An agent that hires an agent: the translation is the brief agent's
    // own child task, nested under its task, and the agent keeps the margin.
    assert!(
        outcome.transcript.contains("paid its translator, and is up 0.400000 USDC"),
        "{}",
        outcome.transcript
    );
    let brief = lines.iter().position(|l| task_line(l) && l.contains("brief"));
    let brief = brief.unwrap_or_else(|| panic!("a brief task in:\n{}", outcome.transcript));
    assert!(
        lines[brief + 1].contains("   └─ ") && lines[brief + 1].contains("translate"),
        "the child under the brief:\n{}",
        outcome.transcript
    );
    // And one dispute, resolved by the arbiter with a split that settles.
    assert!(outcome.transcript.contains("dispute resolved: split at"), "{}", outcome.transcript);
    assert!(
        outcome
            .transcript
            .contains("executor received 0.316000 USDC, sponsor refunded 0.084000 USDC"),
        "{}",
        outcome.transcript
    );
    // Between homes: the long article's translation stays with the
    // translator (the sponsor keeps a verified copy), the agent cut off
    // from the others' gateways declines on chain, and the step is
    // reassigned at once.
    let t = &outcome.transcript;
    assert!(t.contains("one home per party under"), "{t}");
    assert!(t.contains("a 20 KB article, translated, then summarized by summarizer-b"), "{t}");
    assert!(
        t.contains("kept at translator's home, a verified copy at the sponsor's"),
        "the translation is content-addressed and travelled: {t}"
    );
    let declined = lines.iter().position(|l| l.contains("#1 subtask_declined")).expect("declined");
    assert!(
        lines[declined + 1].contains("declined on chain by")
            && lines[declined + 1].contains("envelope unreadable"),
        "{t}"
    );
    assert!(
        lines[declined + 2].contains("its executor declined it on chain; reassigned to"),
        "{t}"
    );
    let block = |l: &str| {
        l.split("block")
            .nth(1)
            .and_then(|b| b.split_whitespace().next())
            .and_then(|b| b.parse::<u64>().ok())
    };
    let recreated =
        lines[declined..].iter().find(|l| l.contains("#1 subtask_created")).expect("recreated");
    assert_eq!(
        block(recreated),
        block(lines[declined]).map(|b| b + 1),
        "reassigned in the next block: {t}"
    );
    assert!(
        t.contains("plan_completed: summarizer-b's home holds no copy of the translation"),
        "{t}"
    );
    // anvil was killed when the demo returned: the port is free again.
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "anvil still listening on {port}"
    );
}
