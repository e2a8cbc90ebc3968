//! The delegation part of the demo: an agent that hires another through a
//! child task of its own.

use std::fmt::Write as _;

use alloy::primitives::U256;
use tessera_anvil::deploy;
use tessera_bindings::usdc::Usdc;

use super::{ARTICLE, Scene, indent};
use crate::Error;

/// The card of the demo's agent that hires an agent.
const BRIEF_CARD: &str = include_str!("../../../workers/cards/brief.yaml");

/// The delegation part of the demo: a one-step plan asks the brief agent
/// for a brief; the agent hires the translator through a child task of its
/// own (paid from its wallet), summarizes the translation and delivers.
/// The lineage rebuilt from chain events shows the child under the task.
pub(super) async fn delegation(scene: &mut Scene<'_>) -> Result<(), Error> {
    let (chain, actors, deployment, orch, homes) =
        (scene.chain, scene.actors, scene.deployment, scene.orch, scene.homes);
    let (tasks, out) = (&mut *scene.tasks, &mut *scene.out);
    use alloy::{network::EthereumWallet, signers::local::PrivateKeySigner};
    use tessera_orchestrator::plan::{Plan, ReviewMode, SubTask};
    use tessera_workers::{AgentCard, runtime::Worker};
    let provider = actors.provider(chain.endpoint_url());
    // An account no role uses: the brief agent, with 5 USDC of its own.
    let keys = chain.keys();
    let key = keys.get(10).ok_or(Error::NoAccount(10))?;
    let signer = PrivateKeySigner::from_signing_key(key.clone());
    let me = signer.address();
    let usdc = tessera_bindings::MockUSDC::new(deployment.token, &provider);
    let mint = usdc.mint(me, U256::from(5_000_000u64)).from(actors.deployer.address());
    deploy::confirm(mint.send().await, "funding the brief agent").await?;
    let card = AgentCard::from_yaml(BRIEF_CARD)?;
    let price = card.capability("brief").map(|c| c.price.usdc()).unwrap_or_default();
    let wallet =
        tessera_bindings::client::connect(chain.endpoint_url(), EthereumWallet::new(signer));
    let local = std::sync::Arc::clone(homes.brief.sources.local());
    let mut worker = Worker::new(wallet, me, card, deployment.clone(), local)
        .with_blob_sources(homes.brief.sources.clone());
    worker.ensure_registered().await.map_err(|source| Error::Register { agent: me, source })?;
    let ws = chain.ws_endpoint();
    tasks.push(tokio::spawn(async move {
        let poll = std::time::Duration::from_millis(200);
        worker.run(Some(&ws), poll, |_| {}, std::future::pending()).await;
    }));
    let before = d_balance(&usdc, me).await?;

    let mut plan =
        Plan::new(Plan::id_from_label("demo: a brief"), Usdc::from_whole(5), ReviewMode::Auto);
    plan.source = Some(ARTICLE.into());
    plan.subtasks = vec![SubTask {
        index: 0,
        capability: "brief".into(),
        spec: "Brief in French, two bullets".into(),
        executor: Some(me),
        cost: price,
        deadline_offset_secs: 3600,
        depends_on: vec![],
        ..Default::default()
    }];
    let id = plan.id.to_string();
    let mut events = orch.subscribe();
    orch.propose(plan.clone()).await?;
    orch.approve(&id, None).await?;
    let _ =
        writeln!(out, "\nplan a brief ({id}): approved; the brief agent {me} hires a translator");
    let wait = async {
        while let Ok(ev) = events.recv().await {
            if ev.run_id == id && tessera_orchestrator::events::is_final(&ev.kind) {
                return ev.kind;
            }
        }
        "stream closed".to_owned()
    };
    let outcome =
        tokio::time::timeout(std::time::Duration::from_secs(60), wait).await.map_err(|_| {
            Error::Unfinished { plan: "the brief plan".into(), end: "finish", secs: 60 }
        })?;
    let after = d_balance(&usdc, me).await?;
    let profit =
        i128::try_from(after).unwrap_or_default() - i128::try_from(before).unwrap_or_default();
    let _ = writeln!(
        out,
        "  {outcome}; the brief agent earned {price} USDC, paid its translator, and is {} {} USDC",
        if profit >= 0 { "up" } else { "down" },
        Usdc::from_base_units(profit.unsigned_abs())
    );
    let _ = write!(
        out,
        "  tree rebuilt by the indexer from chain events (the translation is the brief agent's \
         own child task):\n{}",
        indent(
            &crate::indexed_tree(chain, deployment, plan.id, homes.indexer.sources.clone()).await?
        )
    );
    Ok(())
}

/// `who`'s token balance, base units.
async fn d_balance<P: alloy::providers::Provider>(
    usdc: &tessera_bindings::MockUSDC::MockUSDCInstance<P>,
    who: alloy::primitives::Address,
) -> Result<u128, Error> {
    let b = usdc.balanceOf(who).call().await?;
    Ok(u128::try_from(b).unwrap_or(u128::MAX))
}
