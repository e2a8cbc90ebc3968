//! The demo's parties, each at a home of its own (see [`Home`]): the
//! sponsor's orchestrator, every agent, the arbiter and the indexer keep
//! their blobs in directories of their own and serve them over HTTP, so a
//! blob one writes reaches another only by its URI's location hint, and is
//! verified by its hash on arrival. One agent's home is cut off from the
//! others' gateways: a large envelope is beyond it, so it declines such a
//! task on chain, and the runner hands the step on in the next block.

use std::{fmt::Write as _, path::PathBuf};

use tessera_bindings::usdc::Usdc;

use tessera_anvil::deploy::{self, DemoAgent};

use crate::{Error, Home};

/// The demo agent whose home reads no location hint.
pub(crate) const CUT_OFF: &str = "summarizer-b";

/// Every party's home, under one demo directory.
#[derive(Debug)]
pub(crate) struct Homes {
    /// The directory holding every home.
    pub(crate) root: PathBuf,
    /// The sponsor's orchestrator.
    pub(crate) sponsor: Home,
    /// The indexer rebuilding the trees.
    pub(crate) indexer: Home,
    /// The arbiter.
    pub(crate) arbiter: Home,
    /// The agent that hires another.
    pub(crate) brief: Home,
    /// Each demo agent's, in [`deploy::DEMO_AGENTS`] order.
    pub(crate) agents: Vec<Home>,
}

impl Homes {
    /// A home for every party under `root`; [`CUT_OFF`]'s cut off.
    pub(crate) async fn open(root: PathBuf) -> Result<Self, Error> {
        let mut agents = Vec::new();
        for agent in deploy::DEMO_AGENTS {
            let home = Home::open(root.join(agent.id)).await?;
            agents.push(if agent.id == CUT_OFF { home.cut_off() } else { home });
        }
        Ok(Self {
            sponsor: Home::open(root.join("sponsor")).await?,
            indexer: Home::open(root.join("indexer")).await?,
            arbiter: Home::open(root.join("arbiter")).await?,
            brief: Home::open(root.join("brief-agent")).await?,
            agents,
            root,
        })
    }

    /// The home of demo agent `id`.
    pub(crate) fn agent(&self, id: &str) -> Result<&Home, Error> {
        deploy::DEMO_AGENTS
            .iter()
            .position(|a| a.id == id)
            .map(|i| &self.agents[i])
            .ok_or_else(|| Error::UnknownAgent(id.to_owned()))
    }

    /// What the transcript says of the homes.
    pub(crate) fn describe(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\none home per party under {}: each keeps its blobs in its own directory and serves \
             them over HTTP",
            self.root.display()
        );
        let mut line = |who: &str, home: &Home| {
            let _ = writeln!(out, "  {who:<14} {}", home.url.as_str());
        };
        line("sponsor", &self.sponsor);
        for (agent, home) in deploy::DEMO_AGENTS.iter().zip(&self.agents) {
            line(agent.id, home);
        }
        line("brief agent", &self.brief);
        line("arbiter", &self.arbiter);
        line("indexer", &self.indexer);
        let _ = writeln!(
            out,
            "  ({CUT_OFF}'s home reads no location hint: a large envelope is beyond it)"
        );
    }
}

impl Drop for Homes {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// About 20 KB of English prose (distinct sentences, so translating and
/// summarizing it are real work): well over the inline limit of an
/// envelope, and its translation over the limit of a result.
pub fn long_article() -> String {
    const TOPICS: [&str; 5] = [
        "The harbour reopened after the storm",
        "The council approved a new budget for the library",
        "Fishermen reported a record catch of sardines",
        "The railway company announced a faster line to Paris",
        "Teachers in Lyon voted for a new school calendar",
    ];
    let mut text = String::new();
    let mut day = 0;
    while text.len() < 20 * 1024 {
        let topic = TOPICS[day % TOPICS.len()];
        let _ = write!(
            text,
            "{topic} on day {day}, and the town of Marseille welcomed the news with a market. "
        );
        day += 1;
    }
    text
}

/// The plan between homes: the long article translated (a result over the
/// inline limit, kept at the translator's home), then summarized by
/// [`CUT_OFF`], who cannot read the envelope carrying the translation and
/// declines on chain; the plan's `on_decline: reassign` hands the step to
/// the other summarizer at the next block, within the cost approved.
pub(crate) async fn between_homes(scene: &mut crate::demo::Scene<'_>) -> Result<(), Error> {
    use tessera_orchestrator::plan::{Plan, Policy, ReviewMode, SubTask};

    let agent = |id: &str| -> Result<&DemoAgent, Error> {
        deploy::DEMO_AGENTS
            .iter()
            .find(|a| a.id == id)
            .ok_or_else(|| Error::UnknownAgent(id.to_owned()))
    };
    let translator = agent("translator")?;
    let blind = agent(CUT_OFF)?;
    let price =
        |a: &DemoAgent, cap: &str| a.offers.iter().find(|(c, _)| *c == cap).map_or(0, |&(_, p)| p);
    // The dearer summarizer's price: the step can go to either.
    let summarize_cost =
        deploy::DEMO_AGENTS.iter().map(|a| price(a, "summarize")).max().unwrap_or_default();
    let source = long_article();
    let mut plan = Plan::new(
        Plan::id_from_label("demo: between homes"),
        Usdc::from_whole(5),
        ReviewMode::Auto,
    );
    plan.source = Some(source.clone());
    plan.recovery.on_decline = Policy::Reassign;
    plan.subtasks = vec![
        SubTask {
            index: 0,
            capability: "translate".into(),
            spec: "Translate the article to French".into(),
            executor: Some(scene.actors.agent(translator.account)),
            cost: Usdc::from_base_units(price(translator, "translate")),
            deadline_offset_secs: 3600,
            ..Default::default()
        },
        SubTask {
            index: 1,
            capability: "summarize".into(),
            spec: "Summarize the translation in three bullets".into(),
            executor: Some(scene.actors.agent(blind.account)),
            cost: Usdc::from_base_units(summarize_cost),
            deadline_offset_secs: 3600,
            depends_on: vec![0],
            ..Default::default()
        },
    ];
    let _ = writeln!(
        scene.out,
        "\nplan between homes ({}): a {} KB article, translated, then summarized by {CUT_OFF}",
        plan.id,
        source.len() / 1024
    );
    let (outcome, view) = crate::demo::drive(scene, &plan, "between homes").await?;
    let sponsor = &scene.homes.sponsor;
    for row in &view.subtasks {
        let Some(uri) = row.result_uri.as_deref() else { continue };
        if uri.starts_with("data:") {
            let _ = writeln!(scene.out, "  step {} result inline ({} bytes)", row.idx, uri.len());
            continue;
        }
        let kept = scene.homes.agents.iter().zip(deploy::DEMO_AGENTS).find(|(h, _)| h.holds(uri));
        let _ = writeln!(
            scene.out,
            "  step {} result {}: {}{}",
            row.idx,
            short(uri),
            kept.map_or_else(|| "inline".to_owned(), |(_, a)| format!("kept at {}'s home", a.id)),
            if sponsor.holds(uri) { ", a verified copy at the sponsor's" } else { "" }
        );
    }
    let blind_home = scene.homes.agent(CUT_OFF)?;
    let translation = view.subtasks.first().and_then(|r| r.result_uri.as_deref());
    let _ = writeln!(
        scene.out,
        "  {outcome}: {CUT_OFF}'s home holds {} of the translation",
        if translation.is_some_and(|u| blind_home.holds(u)) { "a copy" } else { "no copy" }
    );
    Ok(())
}

/// A `sha256:` URI shortened for the transcript (its hint left out).
fn short(uri: &str) -> String {
    let bare = uri.split('?').next().unwrap_or(uri);
    match bare.strip_prefix("sha256:") {
        Some(hex) if hex.len() > 12 => format!("sha256:{}…", &hex[..12]),
        _ => bare.chars().take(40).collect(),
    }
}
