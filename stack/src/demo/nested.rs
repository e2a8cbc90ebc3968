//! The nested-plan part of the demo: a step that is a plan of its own,
//! within its budget share.

use std::fmt::Write as _;

use tessera_bindings::AgentRegistry;

use super::{ARTICLE, Scene, cheapest_active, drive, indent};
use crate::Error;

/// The nested-plan part of the demo: the brief is translated, a nested
/// plan digests the translation (entities and tone side by side, within its
/// own budget share), and a summary merges the digest. The tree is rebuilt
/// by the indexer from the chain's events and the envelopes they point at.
pub(super) async fn nested_plan(scene: &mut Scene<'_>) -> Result<(), Error> {
    use serde_json::json;
    use tessera_orchestrator::plan::Plan;
    let provider = scene.actors.provider(scene.chain.endpoint_url());
    let registry = AgentRegistry::new(scene.deployment.agent_registry, &provider);
    let mut step = Vec::new();
    for cap in ["translate", "extract-entities", "sentiment-classify", "summarize"] {
        let (agent, price) = cheapest_active(&registry, cap).await?;
        step.push((cap, agent, price));
    }
    let leaf = |i: usize, index: u32, spec: &str, deps: &[u32]| {
        let (cap, agent, price) = step[i];
        json!({"index": index, "capability": cap, "spec": spec, "executor": agent,
               "cost": price, "deadline_offset_secs": 3600, "depends_on": deps})
    };
    let share = step[1].2 + step[2].2;
    let file = json!({
        "version": 1,
        "id": Plan::id_from_label("demo: a nested plan"),
        "budget": 5_000_000u64,
        "review": "auto",
        "source": ARTICLE,
        "subtasks": [
            leaf(0, 0, "Translate the article to French", &[]),
            {"index": 1, "spec": "Digest the translation", "cost": share,
             "deadline_offset_secs": 3600, "depends_on": [0],
             "plan": {"subtasks": [
                leaf(1, 0, "List the entities the translation names", &[]),
                leaf(2, 1, "Classify the translation's tone", &[]),
             ]}},
            leaf(3, 2, "Summarize the digest for the sponsor", &[1]),
        ],
    });
    let plan = Plan::from_json(&file.to_string())?;
    let _ = writeln!(
        scene.out,
        "\nplan a nested plan ({}): approved; step 1 is a plan of its own (share {} USDC)",
        plan.id,
        tessera_bindings::usdc::Usdc::from_base_units(share)
    );
    let (outcome, view) = drive(scene, &plan, "a nested plan").await?;
    let _ = writeln!(
        scene.out,
        "  {outcome}; spent {} USDC of the {} USDC budget",
        view.spend.paid, plan.budget
    );
    let tree = crate::indexed_tree(
        scene.chain,
        scene.deployment,
        plan.id,
        scene.homes.indexer.sources.clone(),
    )
    .await?;
    let _ =
        write!(scene.out, "  tree rebuilt by the indexer from chain events:\n{}", indent(&tree));
    Ok(())
}
