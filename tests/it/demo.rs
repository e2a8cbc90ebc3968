//! `make demo` end to end: it must succeed and leave no chain behind.

use tessera_anvil::chain::ChainOptions;

#[tokio::test]
async fn demo_runs_a_lifecycle_and_stops_its_chain() {
    // anvil binds a port of its own choosing; the outcome says which, so we
    // can check afterwards that nothing listens there.
    let _slot = tessera_e2e::anvil_slot().await;
    let outcome = tessera_anvil::demo::run(&ChainOptions::default()).await.expect("demo runs");
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
    // Then two plans through the runner, each settled, with their lineage.
    assert_eq!(
        outcome.transcript.matches("plan_completed in").count(),
        2,
        "{}",
        outcome.transcript
    );
    for needle in ["translate", "summarize", "extract-entities", "sentiment-classify"] {
        assert!(
            outcome
                .transcript
                .lines()
                .any(|l| l.contains("task 0x") && l.contains(needle) && l.contains("Paid")),
            "lineage line for {needle} in:\n{}",
            outcome.transcript
        );
    }
    // The summary under the translation is nested one level deeper.
    assert!(outcome.transcript.contains("   └─ task 0x"), "{}", outcome.transcript);
    // An agent that hires an agent: the translation is the brief agent's
    // own child task, nested under its task, and the agent keeps the margin.
    assert!(
        outcome.transcript.contains("paid its translator, and is up 0.400000 USDC"),
        "{}",
        outcome.transcript
    );
    let lines: Vec<&str> = outcome.transcript.lines().collect();
    let brief = lines.iter().position(|l| l.contains("task 0x") && l.contains("brief"));
    let brief = brief.unwrap_or_else(|| panic!("a brief task in:\n{}", outcome.transcript));
    assert!(
        lines[brief + 1].contains("└─ task 0x") && lines[brief + 1].contains("translate"),
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
    // anvil was killed when the demo returned: the port is free again.
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "anvil still listening on {port}"
    );
}
