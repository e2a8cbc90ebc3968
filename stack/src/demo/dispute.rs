//! The dispute part of the demo: a reviewed result disputed, ruled by the
//! arbiter's offline rubric, and settled once the appeal window passes.

use std::fmt::Write as _;

use tessera_bindings::usdc::Usdc;

use super::Scene;
use crate::Error;

/// The dispute part of the demo: a reviewed summary of a short note is
/// disputed, the arbiter's offline rubric splits the payment, the appeal
/// window passes (skipped ahead on the local chain) and the ruling settles.
pub(super) async fn dispute(scene: &mut Scene<'_>) -> Result<(), Error> {
    let (chain, actors, deployment, orch, homes) =
        (scene.chain, scene.actors, scene.deployment, scene.orch, scene.homes);
    let (tasks, out) = (&mut *scene.tasks, &mut *scene.out);
    use alloy::providers::Provider;
    use tessera_arbiter::{Arbiter, Judge, store::ArbiterStore};
    use tessera_orchestrator::{
        plan::{Plan, ReviewMode, SubTask},
        runner::Decision,
    };
    let key = actors.arbiter.clone();
    let me = key.address();
    let arbiter_provider = tessera_bindings::client::connect(
        chain.endpoint_url(),
        alloy::network::EthereumWallet::new(key),
    );
    let store =
        ArbiterStore::connect("sqlite::memory:").await.map_err(|e| Error::Arbiter(Box::new(e)))?;
    let mut arbiter = Arbiter::new(
        arbiter_provider,
        me,
        deployment.clone(),
        store,
        Judge::Offline,
        std::sync::Arc::clone(homes.arbiter.sources.local()),
    )
    .await
    .map_err(|e| Error::Arbiter(Box::new(e)))?
    .with_blob_sources(homes.arbiter.sources.clone());
    let ws = chain.ws_endpoint();
    tasks.push(tokio::spawn(async move {
        arbiter
            .run(Some(&ws), std::time::Duration::from_millis(200), |_| {}, std::future::pending())
            .await;
    }));

    let summarizer = actors.agent(1);
    let mut plan = Plan::new(
        Plan::id_from_label("demo: a disputed summary"),
        Usdc::from_whole(1),
        ReviewMode::Manual,
    );
    plan.source = Some("The ferry leaves at nine. Bring your ticket and arrive early.".into());
    plan.subtasks = vec![SubTask {
        index: 0,
        capability: "summarize".into(),
        spec: "Summarize the note".into(),
        executor: Some(summarizer),
        cost: Usdc::from_base_units(400_000),
        deadline_offset_secs: 3600,
        depends_on: vec![],
        ..Default::default()
    }];
    let id = plan.id.to_string();
    let cost = plan.total_cost().unwrap_or_default().to_u256();
    let provider = actors.provider(chain.endpoint_url());
    let sponsor = actors.sponsor.address();
    let usdc = tessera_bindings::MockUSDC::new(deployment.token, &provider);
    let balance = |who| {
        let usdc = usdc.clone();
        async move {
            usdc.balanceOf(who)
                .call()
                .await
                .map_err(tessera_anvil::contract_err("reading a balance"))
        }
    };
    // Balances before anything is funded.
    let (exec0, fund0) = (balance(summarizer).await?, balance(sponsor).await?);
    let mut events = orch.subscribe();
    orch.propose(plan).await?;
    orch.approve(&id, None).await?;
    let _ = writeln!(out, "\nplan with manual review ({id}): a summary of a two-sentence note");
    let wait = async {
        while let Ok(ev) = events.recv().await {
            if ev.run_id != id {
                continue;
            }
            let body: serde_json::Value = serde_json::from_str(&ev.body).unwrap_or_default();
            match ev.kind.as_str() {
                "review_required" => {
                    let _ = writeln!(
                        out,
                        "  delivered; the client disputes: \"it just repeats the note\""
                    );
                    orch.decide(&id, Decision::Dispute(0, "it just repeats the note".into()))
                        .await?;
                }
                "dispute_ruled" => {
                    let _ = writeln!(
                        out,
                        "  the arbiter rules {} bps to the executor (offline rubric; rationale at {}); \
                         appeal window of one day skipped ahead on the local chain",
                        body["executor_share_bps"],
                        body["rationale_uri"]
                            .as_str()
                            .unwrap_or("")
                            .chars()
                            .take(60)
                            .collect::<String>()
                    );
                    provider
                        .raw_request::<_, serde_json::Value>(
                            "evm_increaseTime".into(),
                            (24 * 3600 + 1,),
                        )
                        .await?;
                    provider.raw_request::<_, serde_json::Value>("evm_mine".into(), ()).await?;
                }
                "dispute_resolved" => {
                    let _ = writeln!(
                        out,
                        "  dispute resolved: {} at {} bps (block {}, tx {})",
                        body["verdict"].as_str().unwrap_or("?"),
                        body["executor_share_bps"],
                        body["block"],
                        body["tx_hash"].as_str().unwrap_or("")
                    );
                }
                kind if tessera_orchestrator::events::is_final(kind) => {
                    return Ok::<_, Error>(ev.kind);
                }
                _ => {}
            }
        }
        Ok("stream closed".to_owned())
    };
    let outcome =
        tokio::time::timeout(std::time::Duration::from_secs(60), wait).await.map_err(|_| {
            Error::Unfinished { plan: "the disputed plan".into(), end: "settle", secs: 60 }
        })??;
    let (exec1, fund1) = (balance(summarizer).await?, balance(sponsor).await?);
    let _ = writeln!(
        out,
        "  {outcome}: executor received {} USDC, sponsor refunded {} USDC of 0.400000",
        Usdc::from_u256(exec1 - exec0)?,
        // The sponsor funded the whole cost and got the client's share back.
        Usdc::from_u256(fund1 + cost - fund0)?
    );
    Ok(())
}
