//! Operator mode: one orchestrator holds an operator key only (it pays
//! gas and is every task's client) and no sponsor's. Two sponsors that only
//! sign — an EIP-712 grant per plan, and an EIP-2612 permit or an `approve`
//! of their own — fund their plans through it: each pays exactly what its
//! executors were paid, a cancelled task's refund lands at its sponsor, and
//! a sponsor that revokes its grant mid-run pauses its own run with the
//! reason while the other sponsor's run settles.

use std::time::Duration;

use alloy::{
    network::EthereumWallet,
    primitives::{Address, B256, Bytes, U256},
    providers::Provider,
    signers::local::PrivateKeySigner,
};
use serde_json::{Value, json};
use tessera_bindings::{
    MockUSDC, TaskEscrow,
    grant::{self, GrantTerms, SignedGrant},
    permit::{self, TokenDomain},
};
use tessera_e2e::Stack;
use tessera_orchestrator::{
    plan::{Plan, PlanId},
    runner::{Chain, GrantPermit, RunnerConfig},
};

const NOTE: &str = "The harbour reopened on Tuesday after the storm. Ships had queued for two \
days. Traders said the delay cost them dearly. The port authority promised new breakwaters.";

/// Two steps, the second reading the first: `a`'s capability then `b`'s.
fn two_steps(
    label: &str,
    review: &str,
    a: (&str, &str, Address, u64),
    b: (&str, &str, Address, u64),
) -> Value {
    json!({
        "version": 1, "id": Plan::id_from_label(label), "review": review,
        "budget": 10_000_000u64, "source": NOTE, "review_window_secs": 600,
        "subtasks": [
            {"index": 0, "capability": a.0, "spec": a.1, "executor": a.2,
             "cost": a.3, "deadline_offset_secs": 3600, "depends_on": []},
            {"index": 1, "capability": b.0, "spec": b.1, "executor": b.2,
             "cost": b.3, "deadline_offset_secs": 3600, "depends_on": [0]},
        ],
    })
}

/// The newest block's time.
async fn now(stack: &Stack) -> u64 {
    let block = stack.env.provider.get_block_by_number(Default::default()).await.unwrap();
    block.expect("a block").header.timestamp
}

/// Proposes `plan` (the operator's admin token); the run id and plan id.
async fn propose(stack: &Stack, plan: &Value) -> (String, B256) {
    let (status, body) = stack.post("/api/plans", plan).await;
    assert_eq!(status, 201, "propose: {body}");
    let id = body["id"].as_str().expect("run id").to_owned();
    (id.clone(), id.parse().expect("a plan id"))
}

/// `sponsor`'s grant of `budget` for plan `plan_id` to the orchestrator's operator.
async fn sign_grant(
    stack: &Stack,
    sponsor: &PrivateKeySigner,
    plan_id: B256,
    budget: u128,
) -> SignedGrant {
    let d = &stack.env.deployment;
    let terms = GrantTerms {
        sponsor: sponsor.address(),
        plan_id,
        operator: stack.orch.chain().address(),
        budget,
        valid_until: now(stack).await + 3600,
        nonce: U256::from(7),
    };
    let signature = grant::sign(sponsor, d.chain_id, d.task_escrow, &terms).unwrap();
    SignedGrant { terms, signature }
}

/// `sponsor`'s EIP-2612 permit letting the escrow pull `value`.
async fn sign_permit(stack: &Stack, sponsor: &PrivateKeySigner, value: u128) -> GrantPermit {
    let d = &stack.env.deployment;
    let token = MockUSDC::new(d.token, &stack.env.provider);
    let nonce = token.nonces(sponsor.address()).call().await.unwrap();
    let domain = TokenDomain {
        name: "USD Coin".into(),
        version: "1".into(),
        chain_id: d.chain_id,
        token: d.token,
    };
    let deadline = now(stack).await + 3600;
    let sig = permit::sign_permit(
        sponsor,
        &domain,
        d.task_escrow,
        U256::from(value),
        nonce,
        U256::from(deadline),
    )
    .unwrap();
    let mut bytes = sig.r.to_vec();
    bytes.extend_from_slice(sig.s.as_slice());
    bytes.push(sig.v);
    GrantPermit { value: U256::from(value), deadline, signature: Bytes::from(bytes) }
}

/// Records `grant` (and `permit`) for run `id` the way approval does, then approves it.
async fn approve(stack: &Stack, id: &str, grant: SignedGrant, permit: Option<GrantPermit>) {
    stack.orch.fund_with_grant(id, grant, permit).await.expect("the grant is taken");
    let (status, body) = stack.post(&format!("/api/runs/{id}/approve"), &Value::Null).await;
    assert_eq!(status, 200, "approve: {body}");
}

/// Polls run `id` until `ok` holds of its view (panics after `secs`).
async fn wait_for(stack: &Stack, id: &str, secs: u64, ok: impl Fn(&Value) -> bool) -> Value {
    let end = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let (_, view) = stack.get(&format!("/api/runs/{id}")).await;
        if ok(&view) {
            return view;
        }
        assert!(tokio::time::Instant::now() < end, "never: {view:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn two_sponsors_that_only_sign_fund_their_own_runs_through_one_operator() {
    // No worker for agent 4 (extract-entities): its task is never accepted.
    let stack = Stack::start_operator(RunnerConfig::default(), &[0, 1, 2, 3]).await;
    let env = &stack.env;
    let operator = stack.orch.chain().address();
    assert!(stack.orch.chain().is_operator());
    assert_eq!(operator, env.actors.client.address());
    let d = env.deployment.clone();
    let token = MockUSDC::new(d.token, &env.provider);

    // Sponsor A: the deployment's funded sponsor, whose key the
    // orchestrator does not hold. Sponsor B: a fresh account with tokens
    // and gas of its own.
    let a = env.actors.sponsor.clone();
    let b = PrivateKeySigner::random();
    let b_chain =
        tessera_bindings::client::connect(env.chain.endpoint_url(), EthereumWallet::new(b.clone()));
    let _: Value = env
        .provider
        .raw_request("anvil_setBalance".into(), (b.address(), U256::from(10u128.pow(18))))
        .await
        .unwrap();
    let minted = token
        .mint(b.address(), U256::from(5_000_000))
        .from(env.actors.deployer.address())
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(minted.status());
    let (a0, b0, op0) = (
        env.balance(a.address()).await,
        env.balance(b.address()).await,
        env.balance(operator).await,
    );
    assert_eq!(token.allowance(a.address(), d.task_escrow).call().await.unwrap(), U256::ZERO);

    // A: translate (agent 2) then summarize (agent 1), reviewed
    // automatically; allowance by a permit the operator submits. The permit
    // also covers A's later plan (250_000).
    let (translator, summarizer, tone, extractor) =
        (env.actors.agent(2), env.actors.agent(1), env.actors.agent(3), env.actors.agent(4));
    let plan_a = two_steps(
        "operator: sponsor a",
        "auto",
        ("translate", "Translate the article to French", translator, 800_000),
        ("summarize", "Summarize the translation", summarizer, 400_000),
    );
    let (run_a, plan_id_a) = propose(&stack, &plan_a).await;
    let grant_a = sign_grant(&stack, &a, plan_id_a, 1_200_000).await;
    let permit_a = sign_permit(&stack, &a, 1_450_000).await;

    // B: summarize (agent 1) then tone (agent 3), reviewed by hand; the
    // allowance by an `approve` of B's own.
    let plan_b = two_steps(
        "operator: sponsor b",
        "manual",
        ("summarize", "Summarize the note", summarizer, 400_000),
        ("sentiment-classify", "Tone of the summary", tone, 200_000),
    );
    let (run_b, plan_id_b) = propose(&stack, &plan_b).await;
    let grant_b = sign_grant(&stack, &b, plan_id_b, 600_000).await;
    let b_token = MockUSDC::new(d.token, &b_chain);
    let r = b_token.approve(d.task_escrow, U256::from(600_000)).send().await.unwrap();
    assert!(r.get_receipt().await.unwrap().status());

    let mark = |g: &SignedGrant| grant::digest(d.chain_id, d.task_escrow, &g.terms);
    let (mark_a, mark_b) = (mark(&grant_a), mark(&grant_b));
    let (terms_a, terms_b) = (grant_a.terms.to_sol(), grant_b.terms.to_sol());
    approve(&stack, &run_a, grant_a, Some(permit_a)).await;
    approve(&stack, &run_b, grant_b.clone(), None).await;

    // B's first step is delivered and waits for B's review; B revokes the
    // grant, then the review approves it: the second step cannot be funded.
    stack.wait_phase(&run_b, 0, "completed", 60).await;
    let escrow = TaskEscrow::new(d.task_escrow, &b_chain);
    let revoked = escrow.revokeGrant(grant_b.terms.to_sol()).send().await.unwrap();
    assert!(revoked.get_receipt().await.unwrap().status());
    let (status, body) = stack
        .post(&format!("/api/runs/{run_b}/subtasks/0/review"), &json!({"decision": "approve"}))
        .await;
    assert_eq!(status, 202, "{body}");

    // A settles whatever B does.
    let view_a = stack.wait_state(&run_a, "completed", 90).await;
    let view_b = stack.wait_state(&run_b, "paused", 60).await;
    let reason = view_b.to_string();
    assert!(reason.contains("the sponsor revoked the grant"), "{view_b:#}");
    assert_eq!(view_b["subtasks"][0]["phase"], "paid", "{view_b:#}");
    assert_eq!(view_b["subtasks"][1]["phase"], "waiting", "nothing funded after the revocation");

    // The tasks are the sponsors': funded by them, with the operator as
    // client; sub-task 0's first attempt is the grant's mark (referenced by
    // its digest, its id the escrow's grantMarkId), the others keep the
    // plan's references.
    for (view, sponsor, terms, mark) in
        [(&view_a, a.address(), &terms_a, mark_a), (&view_b, b.address(), &terms_b, mark_b)]
    {
        let id = grant::mark_id(sponsor, mark);
        assert_eq!(view["subtasks"][0]["task_id"], id.to_string(), "{view:#}");
        assert_eq!(escrow.grantMarkId(terms.clone()).call().await.unwrap(), id);
        assert_ne!(id, stack.orch.chain().task_id(sponsor, mark), "not an ordinary task id");
    }
    let second =
        stack.orch.chain().task_id(a.address(), Chain::reference(PlanId::new(plan_id_a), 1, 0));
    assert_eq!(view_a["subtasks"][1]["task_id"], second.to_string(), "{view_a:#}");

    // Each sponsor paid exactly what its executors were paid; the operator nothing.
    assert_eq!(env.balance(a.address()).await, a0 - U256::from(1_200_000));
    assert_eq!(env.balance(b.address()).await, b0 - U256::from(400_000));
    assert_eq!(env.balance(operator).await, op0);
    // The permit was submitted once and spent on A's creations only.
    let left = token.allowance(a.address(), d.task_escrow).call().await.unwrap();
    assert_eq!(left, U256::from(250_000));
    assert_eq!(stack.orch.store().grant(&run_a).await.unwrap().unwrap().permit_json, None);

    // A's next plan: its executor never accepts; cancelling refunds A.
    let plan_c = json!({
        "version": 1, "id": Plan::id_from_label("operator: refund"), "review": "auto",
        "budget": 1_000_000u64, "source": NOTE, "review_window_secs": 600,
        "subtasks": [{"index": 0, "capability": "extract-entities", "spec": "Entities",
                      "executor": extractor, "cost": 250_000, "deadline_offset_secs": 3600}],
    });
    let (run_c, plan_id_c) = propose(&stack, &plan_c).await;
    let grant_c = sign_grant(&stack, &a, plan_id_c, 250_000).await;
    let mark_c = mark(&grant_c);
    let terms_c = grant_c.terms.to_sol();
    approve(&stack, &run_c, grant_c, None).await;
    let view_c = stack.wait_phase(&run_c, 0, "created", 60).await;
    assert_eq!(env.balance(a.address()).await, a0 - U256::from(1_450_000), "A funded it");
    // One step spends the grant whole through its mark: no slot for it.
    let id_c = escrow.grantMarkId(terms_c.clone()).call().await.unwrap();
    assert_eq!(id_c, grant::mark_id(a.address(), mark_c));
    assert_eq!(view_c["subtasks"][0]["task_id"], id_c.to_string(), "{view_c:#}");
    let slot = escrow.grantState(mark_c).call().await.unwrap();
    assert_eq!((slot.spent, slot.revoked), (0, false), "no slot for a grant spent whole");
    let spent = escrow.grantSpent(terms_c).call().await.unwrap();
    assert_eq!((spent.spent, spent.revoked), (250_000, false));
    let (status, body) = stack.post(&format!("/api/runs/{run_c}/cancel"), &Value::Null).await;
    assert!(status < 300, "cancel: {status} {body}");
    wait_for(&stack, &run_c, 60, |v| v["state"] == "cancelled").await;
    assert_eq!(env.balance(a.address()).await, a0 - U256::from(1_200_000), "refunded to A");

    // B's next plan costs 400_000 while B allows the escrow 200_000 more,
    // with no permit: it pauses with the shortfall, nothing sent.
    let plan_d = json!({
        "version": 1, "id": Plan::id_from_label("operator: short"), "review": "auto",
        "budget": 1_000_000u64, "source": NOTE, "review_window_secs": 600,
        "subtasks": [{"index": 0, "capability": "summarize", "spec": "Summarize the note",
                      "executor": summarizer, "cost": 400_000, "deadline_offset_secs": 3600}],
    });
    let (run_d, plan_id_d) = propose(&stack, &plan_d).await;
    let grant_d = sign_grant(&stack, &b, plan_id_d, 400_000).await;
    approve(&stack, &run_d, grant_d, None).await;
    let view_d = stack.wait_state(&run_d, "paused", 60).await;
    assert!(
        view_d
            .to_string()
            .contains("the sponsor's allowance to the escrow is short by 0.200000 USDC"),
        "{view_d:#}"
    );
    assert_eq!(view_d["subtasks"][0]["phase"], "waiting");
    assert_eq!(env.balance(b.address()).await, b0 - U256::from(400_000));
    assert_eq!(env.balance(operator).await, op0);
}
