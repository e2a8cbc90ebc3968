//! Feedback with a receipt: once a plan's tasks settle, the orchestrator
//! gives ERC-8004 feedback for its sponsor whose URI and hash name each
//! settlement; the indexer matches it against the escrow's `TaskSettled`
//! and counts only what matches. A stranger who copies the proof into a
//! feedback of its own is not counted; per-plan mode gives one summary per
//! executor.

use std::time::Duration;

use alloy::primitives::Address;
use serde_json::{Value, json};
use tessera_bindings::{
    IdentityRegistry, ReputationRegistry,
    feedback::{CompactProof, Proof},
};
use tessera_e2e::Stack;
use tessera_orchestrator::{feedback::FeedbackMode, plan::Plan, runner::RunnerConfig};

use crate::support;

const ARTICLE: &str = "The harbour reopened on Tuesday after the storm. Ships had queued for \
two days. Traders said the delay cost them dearly. The port authority promised new breakwaters.";

fn two_steps(label: &str, translator: Address, summarizer: Address) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": "auto",
        "budget": 10_000_000u64, "source": ARTICLE, "review_window_secs": 600,
        "subtasks": [
            {"index": 0, "capability": "translate", "spec": "Translate the article to French",
             "executor": translator, "cost": 800_000, "deadline_offset_secs": 3600, "depends_on": []},
            {"index": 1, "capability": "summarize", "spec": "Summarize the translation",
             "executor": summarizer, "cost": 400_000, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    })
}

/// Waits until every feedback row of `run` is given; the rows.
async fn given(
    stack: &Stack,
    run: &str,
    rows: usize,
) -> Vec<(String, String, i64, String, Option<String>)> {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let feedback = stack.orch.store().feedback_of(run).await.unwrap();
        let done = feedback.iter().filter(|f| f.3 == "given").count();
        if done >= rows {
            return feedback;
        }
        assert!(tokio::time::Instant::now() < end, "feedback never given: {feedback:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn feedback_given_after_settlement_is_matched_to_its_settlement_by_the_indexer() {
    let config = RunnerConfig { feedback: FeedbackMode::PerTask, ..RunnerConfig::default() };
    let stack = Stack::start_with(config, None).await;
    let env = &stack.env;
    let (translator, summarizer) = (env.actors.agent(2), env.actors.agent(1));
    let t_id = support::link_identity(env, translator).await;
    let s_id = support::link_identity(env, summarizer).await;

    let run = stack.run_plan(&two_steps("feedback per task", translator, summarizer)).await;
    stack.wait_state(&run, "completed", 60).await;
    let rows = given(&stack, &run, 2).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r.0.starts_with("settled:") && r.2 == 100), "{rows:?}");

    let (store, _dir) = tessera_e2e::synced_index(env).await;
    for (agent, id, capability) in
        [(translator, t_id, "translate"), (summarizer, s_id, "summarize")]
    {
        let view = store.agent(&agent.to_string()).await.unwrap().unwrap();
        assert_eq!(view.identity.as_ref().map(|i| i.agent_id.clone()), Some(id.to_string()));
        let fb = &view.feedback;
        assert_eq!((fb.count, fb.matched, fb.average), (1, 1, Some(100.0)), "{fb:?}");
        let f = &fb.latest[0];
        assert!(f.matched && f.why.is_none(), "{f:?}");
        assert_eq!(
            (f.tag1.as_str(), f.tag2.as_str()),
            (tessera_bindings::feedback::TAG, capability)
        );
        assert!(f.client.eq_ignore_ascii_case(&env.actors.sponsor.address().to_string()));
        // The proof names the task and the transaction it settled in, as
        // the escrow's history has them.
        let task = &f.task_ids[0];
        assert_eq!(f.task_id.as_ref(), Some(task), "the page links the task");
        let detail = store.task(task).await.unwrap().expect("the task is indexed");
        assert_eq!(detail.task.status, "Paid");
        let settled_in = detail
            .transactions
            .iter()
            .find(|t| t.event == "TaskSettled")
            .map(|t| t.tx_hash.clone());
        let proof = Proof::decode(&f.uri, f.hash.parse().unwrap()).unwrap();
        assert_eq!(settled_in, Some(proof.tasks[0].tx.to_string()));
    }

    // A stranger copies the sponsor's proof into a feedback of its own: it
    // is listed, and not counted.
    let view = store.agent(&summarizer.to_string()).await.unwrap().unwrap();
    let copied = view.feedback.latest[0].clone();
    let stranger = env.actors.client.address();
    let reputation =
        ReputationRegistry::new(env.deployment.reputation_registry.unwrap(), &env.provider);
    let r = reputation
        .giveFeedback(
            s_id,
            100,
            0,
            copied.tag1.clone(),
            copied.tag2.clone(),
            String::new(),
            copied.uri.clone(),
            copied.hash.parse().unwrap(),
        )
        .from(stranger)
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(r.status());
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    let fb = store.agent(&summarizer.to_string()).await.unwrap().unwrap().feedback;
    assert_eq!((fb.count, fb.matched), (2, 1), "{fb:?}");
    let forged =
        fb.latest.iter().find(|f| f.client.eq_ignore_ascii_case(&stranger.to_string())).unwrap();
    assert!(!forged.matched);
    assert!(forged.why.as_deref().unwrap_or_default().contains("neither the giver"), "{forged:?}");
}

#[tokio::test]
async fn per_plan_feedback_sums_up_each_executors_tasks_once_the_run_is_over() {
    let stack = Stack::start().await;
    let env = &stack.env;
    let (translator, summarizer) = (env.actors.agent(2), env.actors.agent(1));
    support::link_identity(env, translator).await;
    support::link_identity(env, summarizer).await;
    let run = stack.run_plan(&two_steps("feedback per plan", translator, summarizer)).await;
    stack.wait_state(&run, "completed", 60).await;
    // The loop is off here; one pass by hand, then another that finds nothing.
    let first = stack.orch.give_feedback(FeedbackMode::PerPlan).await.unwrap();
    assert_eq!(first.given, 2, "one per executor");
    let again = stack.orch.give_feedback(FeedbackMode::PerPlan).await.unwrap();
    assert_eq!(again.given, 0, "a run is summed up once");
    let rows = stack.orch.store().feedback_of(&run).await.unwrap();
    let subjects: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert!(subjects.contains(&format!("plan:{run}").as_str()), "{subjects:?}");
    assert_eq!(rows.iter().filter(|r| r.3 == "given").count(), 2, "{rows:?}");
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    let fb = store.agent(&translator.to_string()).await.unwrap().unwrap().feedback;
    assert_eq!((fb.count, fb.matched), (1, 1), "{fb:?}");
    // A plan's summary names its tasks in the compact form.
    let proof =
        CompactProof::decode(&fb.latest[0].uri, fb.latest[0].hash.parse().unwrap()).unwrap();
    assert_eq!(proof.escrow, env.deployment.task_escrow);
    assert_eq!(proof.task_ids.len(), 1);
    assert_eq!(fb.latest[0].task_ids, vec![proof.task_ids[0].to_string()]);
}

/// An agent cannot shed the feedback a sponsor gave it: neither a stranger's
/// junk (feedback of its own and responses, past the newest-200 window)
/// nor a fresh identity linked over the old one hides it.
#[tokio::test]
async fn matched_feedback_survives_junk_and_a_fresh_identity() {
    let config = RunnerConfig { feedback: FeedbackMode::PerTask, ..RunnerConfig::default() };
    let stack = Stack::start_with(config, None).await;
    let env = &stack.env;
    let (translator, summarizer) = (env.actors.agent(2), env.actors.agent(1));
    support::link_identity(env, translator).await;
    let old_id = support::link_identity(env, summarizer).await;
    let run = stack.run_plan(&two_steps("feedback kept", translator, summarizer)).await;
    stack.wait_state(&run, "completed", 60).await;
    given(&stack, &run, 2).await;
    let matched = |store: tessera_indexer::IndexStore| async move {
        let fb = store.agent(&summarizer.to_string()).await.unwrap().unwrap().feedback;
        (fb.matched, fb.average)
    };
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    assert_eq!(matched(store).await, (1, Some(100.0)));

    // A stranger answers the sponsor's feedback 120 times and gives 120
    // feedbacks of its own: 240 events newer than the matched one.
    let stranger = env.actors.client.address();
    let sponsor = env.actors.sponsor.address();
    let reputation =
        ReputationRegistry::new(env.deployment.reputation_registry.unwrap(), &env.provider);
    for i in 0..120u64 {
        let response = reputation.appendResponse(
            old_id,
            sponsor,
            1,
            format!("data:,junk {i}"),
            alloy::primitives::B256::ZERO,
        );
        let r = response.from(stranger).send().await.unwrap().get_receipt().await.unwrap();
        assert!(r.status());
        let junk = reputation.giveFeedback(
            old_id,
            -100,
            0,
            "tessera".into(),
            String::new(),
            String::new(),
            format!("data:,junk {i}"),
            alloy::primitives::B256::ZERO,
        );
        let r = junk.from(stranger).send().await.unwrap().get_receipt().await.unwrap();
        assert!(r.status());
    }
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    assert_eq!(matched(store).await, (1, Some(100.0)), "junk does not push it out");

    // The summarizer links a fresh identity: the old one's feedback stays.
    let fresh = support::link_identity(env, summarizer).await;
    assert_ne!(fresh, old_id);
    let (store, _dir) = tessera_e2e::synced_index(env).await;
    let view = store.agent(&summarizer.to_string()).await.unwrap().unwrap();
    assert_eq!(view.identity.as_ref().map(|i| i.agent_id.clone()), Some(fresh.to_string()));
    let fb = &view.feedback;
    assert_eq!((fb.matched, fb.average), (1, Some(100.0)), "read across identities");
    assert!(fb.latest.iter().any(|f| f.matched && f.agent_id == old_id.to_string()));
}

/// The summarizer's owner approves the sponsor as an operator of its
/// identity, so the registry refuses the sponsor's feedback on it as
/// self-feedback: the ledger records an approval game (not a plain
/// refusal), and the summarizer's record counts it as a task failed.
#[tokio::test]
async fn an_approval_game_is_recorded_and_weighs_against_the_agent() {
    use tessera_orchestrator::plan::Selection;
    let stack = Stack::start().await;
    let env = &stack.env;
    let (translator, summarizer) = (env.actors.agent(2), env.actors.agent(1));
    support::link_identity(env, translator).await;
    support::link_identity(env, summarizer).await;
    let identity = IdentityRegistry::new(env.deployment.identity_registry.unwrap(), &env.provider);
    let sponsor = env.actors.sponsor.address();
    let approve = identity.setApprovalForAll(sponsor, true).from(summarizer);
    assert!(approve.send().await.unwrap().get_receipt().await.unwrap().status());
    let reliability = || async {
        let ranked = stack.orch.ranking("summarize", Selection::Reliable).await.unwrap();
        ranked.iter().find(|r| r.agent == summarizer).expect("ranked").reliability
    };
    let before = reliability().await;

    let run = stack.run_plan(&two_steps("approval game", translator, summarizer)).await;
    stack.wait_state(&run, "completed", 60).await;
    let out = stack.orch.give_feedback(FeedbackMode::PerTask).await.unwrap();
    assert_eq!((out.given, out.skipped), (1, 1), "{out:?}");
    let rows = stack.orch.store().feedback_of(&run).await.unwrap();
    let gamed: Vec<_> = rows.iter().filter(|r| r.3 == "approval-game").collect();
    assert_eq!(gamed.len(), 1, "{rows:?}");
    assert!(gamed[0].1.eq_ignore_ascii_case(&summarizer.to_string()), "{rows:?}");
    assert!(reliability().await < before, "the game counts against the summarizer");
}

/// With confirmations asked, per-task feedback waits until the settlement
/// it names is that deep: a pass that runs as soon as the task settles
/// gives nothing yet, and each feedback goes out in a block at least
/// `confirmations` past its settlement's.
#[tokio::test]
async fn per_task_feedback_waits_for_the_settlements_confirmations() {
    use alloy::{consensus::Transaction as _, providers::Provider as _, sol_types::SolCall as _};
    const CONFIRMATIONS: u64 = 3;
    let config = RunnerConfig { confirmations: CONFIRMATIONS, ..RunnerConfig::default() };
    let stack = std::sync::Arc::new(Stack::start_on_timed_blocks_with(config, 1).await);
    let env = &stack.env;
    let (translator, summarizer) = (env.actors.agent(2), env.actors.agent(1));
    support::link_identity(env, translator).await;
    support::link_identity(env, summarizer).await;
    let run = stack.run_plan(&two_steps("feedback deep", translator, summarizer)).await;
    // Passes as often as can be, from before anything settles.
    let passes = {
        let stack = std::sync::Arc::clone(&stack);
        tokio::spawn(async move {
            loop {
                let _ = stack.orch.give_feedback(FeedbackMode::PerTask).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    stack.wait_state(&run, "completed", 120).await;
    let rows = given(&stack, &run, 2).await;
    passes.abort();
    for row in rows.iter().filter(|r| r.3 == "given") {
        let tx = row.4.as_ref().unwrap().parse().unwrap();
        let sent = env.provider.get_transaction_by_hash(tx).await.unwrap().unwrap();
        let call = ReputationRegistry::giveFeedbackCall::abi_decode(sent.input()).unwrap();
        let proof = Proof::decode(&call.feedbackURI, call.feedbackHash).unwrap();
        let given_in = sent.block_number.unwrap();
        let settled = env.provider.get_transaction_receipt(proof.tasks[0].tx).await.unwrap();
        let settled_in = settled.unwrap().block_number.unwrap();
        assert!(
            given_in >= settled_in + CONFIRMATIONS,
            "feedback in block {given_in} on a settlement of block {settled_in}"
        );
    }
}

/// The `eth_call`s the orchestrator sent (through its counting stand-in).
fn eth_calls(stack: &Stack) -> u64 {
    let counts = stack.stand_in.as_ref().expect("a counted stack").counts();
    counts.per_method.get("eth_call").copied().unwrap_or_default()
}

#[tokio::test]
async fn a_feedback_pass_reads_each_executors_identity_once_however_many_runs_it_covers() {
    // The loop is off; one pass by hand over every run once all are over.
    let stack = Stack::start_counted(RunnerConfig::default()).await;
    let env = &stack.env;
    let (translator, summarizer) = (env.actors.agent(2), env.actors.agent(1));
    support::link_identity(env, translator).await;
    let runs = 4;
    let mut ids = Vec::new();
    for i in 0..runs {
        let label = format!("feedback pass {i}");
        ids.push(stack.run_plan(&two_steps(&label, translator, summarizer)).await);
    }
    for id in &ids {
        stack.wait_state(id, "completed", 120).await;
    }
    let before = eth_calls(&stack);
    let out = stack.orch.give_feedback(FeedbackMode::PerPlan).await.unwrap();
    // The linked translator gets one summary per run; the summarizer has no
    // identity and is recorded as skipped in each.
    assert_eq!((out.given, out.skipped), (runs, runs), "{out:?}");
    // One `identityOf` per executor for the whole pass, not one per run and
    // executor: the pass's reads do not grow with the sub-tasks settled.
    assert_eq!(eth_calls(&stack) - before, 2, "one read per executor for {runs} runs");
}
