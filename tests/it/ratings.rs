//! The client's rating in an approval, read back through the indexer: the
//! task carries it, and the executor's record counts a task approved at 40
//! as 40% completed and 60% failed on its funder's record (a full rating,
//! what the orchestrator gives, moves nothing). ERC-8004 feedback on the
//! same task is the same word: the task counts once, at the lower of the
//! two.

use alloy::{primitives::Address, providers::Provider};
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{
    ReputationRegistry,
    client::ClientError,
    feedback::{CompactProof, TAG},
    task::{FULL_RATING, MAX_RATING, Status},
};
use tessera_e2e::{TASK_AMOUNT, TestEnv};

#[tokio::test]
async fn an_approval_at_40_is_indexed_and_weighs_60_percent_failed() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let agent = env.actors.agent(0);
    let client = env.actors.client.address();
    let sponsor = env.actors.sponsor.address();
    let mut d = env.driver();
    d.scenario("ratings");
    let mut recs = Vec::new();
    for i in 0..3 {
        let params = d.params(agent, TASK_AMOUNT, "data:,x".into()).await.unwrap();
        let mut rec = d.create_with_permit(params).await.unwrap();
        d.deliver(&mut rec, &format!("data:text/plain,result {i}")).await.unwrap();
        recs.push(rec);
    }
    d.escrow.approve_rated(client, &mut recs[0], 40).await.unwrap();
    d.escrow.approve(client, &mut recs[1]).await.unwrap();
    // More than full is refused on chain; the task stays delivered.
    let err = d.escrow.approve_rated(client, &mut recs[2], MAX_RATING + 1).await.unwrap_err();
    assert!(matches!(err, ClientError::Revert(_)), "{err}");
    assert_eq!(recs[2].status(), Status::Completed);
    assert_eq!(
        recs.iter().map(|r| r.rating).collect::<Vec<_>>(),
        [Some(40), Some(FULL_RATING), None],
        "the records folded from the receipts"
    );

    let (store, _dir) = tessera_e2e::synced_index(&env).await;
    let mut indexed = Vec::new();
    for rec in &recs {
        let task = store.task(&rec.id.to_string()).await.unwrap().unwrap().task;
        indexed.push((task.status, task.settlement, task.rating));
    }
    let approved = || Some("approved".to_owned());
    assert_eq!(
        indexed,
        [
            ("Paid".to_owned(), approved(), Some(40)),
            ("Paid".to_owned(), approved(), Some(FULL_RATING)),
            ("Completed".to_owned(), None, None),
        ]
    );

    // The sponsor's record with the agent: 0.5 USDC approved in full, and
    // 0.5 at 40 (0.2 completed, 0.3 failed).
    let funders = store.funders(&agent.to_string()).await.unwrap();
    assert_eq!(funders.len(), 1, "{funders:?}");
    assert_eq!(funders[0].funder, sponsor.to_string());
    assert_eq!((funders[0].completed, funders[0].failed), (2, 0), "both were paid");
    assert_eq!((funders[0].completed_units, funders[0].failed_units), (700_000, 300_000));
    let stats = store.agent(&agent.to_string()).await.unwrap().unwrap().stats;
    let e = stats.evidence;
    assert!((e.failed / e.settled() - 0.3).abs() < 1e-9, "{e:?}");
    // Weighed for the sponsor (its own tasks count double), as the
    // orchestrator's choice reads it: the same share fails.
    let own = store.evidence(&agent.to_string(), Some(&sponsor.to_string())).await.unwrap();
    assert!(own.own > 0.0, "{own:?}");
    assert!((own.failed / own.settled() - 0.3).abs() < 1e-9, "{own:?}");
    let mut record = tessera_indexer::store::records::record_of(&stats);
    let rated = record.reliability();
    record.weight.failed = 0.0;
    record.weight.completed = e.settled();
    assert!(rated < record.reliability(), "the rating lowers the reliability");

    // Feedback on the task rated 40, naming it in a compact proof. The
    // client's at 60 says more than its rating: nothing more moves.
    let agent_id = crate::support::link_identity(&env, agent).await;
    let proof = CompactProof {
        chain_id: env.provider.get_chain_id().await.unwrap(),
        escrow: env.deployment.task_escrow,
        task_ids: vec![recs[0].id],
    };
    let (uri, hash) = proof.encode();
    let reputation =
        ReputationRegistry::new(env.deployment.reputation_registry.unwrap(), &env.provider);
    let give = |from: Address, value: i128| {
        let (reputation, uri) = (reputation.clone(), uri.clone());
        async move {
            let call = reputation.giveFeedback(
                agent_id,
                value,
                0,
                TAG.into(),
                "summarize".into(),
                String::new(),
                uri,
                hash,
            );
            let r = call.from(from).send().await.unwrap().get_receipt().await.unwrap();
            assert!(r.status());
        }
    };
    give(client, 60).await;
    let (store, _dir) = tessera_e2e::synced_index(&env).await;
    let fb = store.agent(&agent.to_string()).await.unwrap().unwrap().feedback;
    assert_eq!((fb.count, fb.matched), (1, 1), "{fb:?}");
    let e = store.evidence(&agent.to_string(), None).await.unwrap();
    assert!((e.failed / e.settled() - 0.3).abs() < 1e-9, "counted once, at 40: {e:?}");
    // The sponsor's at 20 says less: the task counts 20% completed (0.4
    // of the 1 USDC failed in all).
    give(sponsor, 20).await;
    let (store, _dir) = tessera_e2e::synced_index(&env).await;
    let fb = store.agent(&agent.to_string()).await.unwrap().unwrap().feedback;
    assert_eq!((fb.count, fb.matched), (2, 2), "{fb:?}");
    let e = store.evidence(&agent.to_string(), None).await.unwrap();
    assert!((e.failed / e.settled() - 0.4).abs() < 1e-9, "counted once, at 20: {e:?}");
}
