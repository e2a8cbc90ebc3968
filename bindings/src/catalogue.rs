//! The live catalogue: every capability active agents offer on chain, what
//! it says of itself ([`crate::describe`]) and who offers it at what price.
//!
//! It is built from the registry alone (each active agent's on-chain
//! offers and the card in its metadata URI) by [`Catalogue::build`], so an
//! indexer, an orchestrator and a command line all read the same thing.
//! The descriptor of a capability is:
//!
//! - a built-in capability's own ([`crate::describe::builtin`]), whatever
//!   the cards say: a card cannot redefine `summarize`;
//! - otherwise the one most of its offerers publish word for word, ties to
//!   the agent registered first; an offerer publishing another keeps it in
//!   [`Offerer::describe`] (a condition over its result is checked against
//!   its own schema).
//!
//! Everything is bounded: at most [`MAX_ENTRIES`] capabilities, at most
//! [`MAX_OFFERERS`] offerers each (the cheapest), and a card's descriptors
//! were bounded when the card was read ([`crate::card::AgentCard::from_uri`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    card::AgentCard,
    describe::{self, Describe, ResultSchema},
};

/// Most capabilities in a catalogue.
pub const MAX_ENTRIES: usize = 512;
/// Most offerers listed per capability (the cheapest).
pub const MAX_OFFERERS: usize = 32;

/// One agent's offer of a capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Offerer {
    /// The agent's address (checksummed hex).
    pub agent: String,
    /// Its card's id, when its metadata URI holds a valid card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
    /// Its price, USDC base units (a decimal string).
    pub price: String,
    /// Its record, when an index knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<OffererRecord>,
    /// Its own descriptor, when it differs from the capability's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub describe: Option<Describe>,
}

impl Offerer {
    /// The price in base units (0 when unreadable).
    pub fn price_units(&self) -> u128 {
        self.price.parse().unwrap_or(0)
    }
}

/// What an offerer's settled tasks show, weighed by the money behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffererRecord {
    /// Tasks settled that say something about it.
    pub settled: u64,
    /// Of those, completed (paid).
    pub completed: u64,
    /// Reliability, the weighed mean (0-1) the executor choice scores.
    pub reliability: f64,
}

/// One capability of the catalogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The capability name.
    pub name: String,
    /// Whether Tessera's own runners implement it.
    pub builtin: bool,
    /// What it says of itself.
    pub describe: Describe,
    /// The active agents offering it, cheapest first.
    pub offerers: Vec<Offerer>,
    /// How many active agents offer it (may exceed the offerers listed).
    pub offered_by: usize,
}

impl Entry {
    /// The result schema that holds for `agent`'s deliveries (its own when
    /// it publishes another), or the capability's.
    pub fn schema_for(&self, agent: Option<&str>) -> Option<&ResultSchema> {
        let own = agent.and_then(|a| {
            self.offerers
                .iter()
                .find(|o| o.agent.eq_ignore_ascii_case(a))
                .and_then(|o| o.describe.as_ref())
        });
        match own {
            Some(d) => d.result.as_ref(),
            None => self.describe.result.as_ref(),
        }
    }

    /// The lowest price listed, base units.
    pub fn cheapest(&self) -> Option<u128> {
        self.offerers.iter().map(Offerer::price_units).min()
    }
}

/// One active agent as the registry has it: what [`Catalogue::build`]
/// reads.
#[derive(Debug, Clone)]
pub struct ListedAgent {
    /// Its address (checksummed hex).
    pub agent: String,
    /// Its card, when its metadata URI holds a valid one.
    pub card: Option<AgentCard>,
    /// Its on-chain offers: capability → price, base units.
    pub offers: BTreeMap<String, u128>,
}

/// The live catalogue, capabilities by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalogue {
    /// Every capability, by name.
    pub entries: Vec<Entry>,
}

impl Catalogue {
    /// The built-in capabilities only, offered by nobody known: what a
    /// planner knows with no registry at hand.
    pub fn builtins() -> Self {
        let entries = describe::BUILTIN
            .iter()
            .map(|name| Entry {
                name: (*name).to_owned(),
                builtin: true,
                describe: describe::builtin(name).unwrap_or_default(),
                offerers: Vec::new(),
                offered_by: 0,
            })
            .collect();
        Self { entries }
    }

    /// The catalogue of `agents` (active ones, in registration order): every
    /// capability any of them offers on chain, described as the module
    /// says, with its offerers cheapest first. The built-in capabilities
    /// are listed too when nobody offers them.
    pub fn build(agents: impl IntoIterator<Item = ListedAgent>) -> Self {
        // name → (offerers, descriptor text → (count, first position, descriptor))
        type Votes = BTreeMap<String, (usize, usize, Describe)>;
        let mut by_name: BTreeMap<String, (Vec<(Offerer, Describe)>, Votes)> = BTreeMap::new();
        for (position, agent) in agents.into_iter().enumerate() {
            for (name, price) in &agent.offers {
                if *price == 0 {
                    continue;
                }
                if !by_name.contains_key(name) && by_name.len() >= MAX_ENTRIES {
                    continue;
                }
                let described = agent
                    .card
                    .as_ref()
                    .and_then(|c| c.capability(name))
                    .map(|o| o.described())
                    .unwrap_or_default();
                let (offerers, votes) = by_name.entry(name.clone()).or_default();
                if !described.is_empty() {
                    let key = serde_json::to_string(&described).unwrap_or_default();
                    let vote = votes.entry(key).or_insert((0, position, described.clone()));
                    vote.0 += 1;
                }
                offerers.push((
                    Offerer {
                        agent: agent.agent.clone(),
                        card: agent.card.as_ref().map(|c| c.id.clone()),
                        price: price.to_string(),
                        record: None,
                        describe: None,
                    },
                    described,
                ));
            }
        }
        let mut entries: Vec<Entry> = by_name
            .into_iter()
            .map(|(name, (mut offerers, votes))| {
                let builtin = describe::builtin(&name);
                let is_builtin = builtin.is_some();
                let describe = builtin.unwrap_or_else(|| {
                    votes
                        .into_values()
                        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
                        .map(|(_, _, d)| d)
                        .unwrap_or_default()
                });
                offerers.sort_by(|a, b| {
                    a.0.price_units().cmp(&b.0.price_units()).then(a.0.agent.cmp(&b.0.agent))
                });
                let offered_by = offerers.len();
                let offerers = offerers
                    .into_iter()
                    .take(MAX_OFFERERS)
                    .map(|(mut o, own)| {
                        if !own.is_empty() && own != describe && !is_builtin {
                            o.describe = Some(own);
                        }
                        o
                    })
                    .collect();
                Entry { name, builtin: is_builtin, describe, offerers, offered_by }
            })
            .collect();
        for name in describe::BUILTIN {
            if !entries.iter().any(|e| e.name == *name) {
                entries.push(Entry {
                    name: (*name).to_owned(),
                    builtin: true,
                    describe: describe::builtin(name).unwrap_or_default(),
                    offerers: Vec::new(),
                    offered_by: 0,
                });
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Self { entries }
    }

    /// The entry of capability `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The capabilities somebody offers.
    pub fn offered(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.offered_by > 0)
    }
}

/// A catalogue being read.
pub type CatalogueFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Catalogue, CatalogueError>> + Send + 'a>,
>;

/// Why the catalogue could not be read (its source's store or node failed).
#[derive(Debug, thiserror::Error)]
#[error("the capability catalogue cannot be read: {0}")]
pub struct CatalogueError(pub String);

/// Where the live catalogue comes from (an indexer's store).
pub trait CatalogueSource: Send + Sync {
    /// The catalogue as the source knows it now.
    fn catalogue(&self) -> CatalogueFuture<'_>;
}

/// A fixed catalogue (a snapshot, or tests).
impl CatalogueSource for Catalogue {
    fn catalogue(&self) -> CatalogueFuture<'_> {
        let c = self.clone();
        Box::pin(async move { Ok(c) })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::card::{CapabilityOffer, Price, Role};

    fn card(id: &str, offers: &[(&str, Option<&str>)]) -> AgentCard {
        AgentCard {
            id: id.into(),
            description: "x".into(),
            role: Role::Executor,
            capabilities: offers
                .iter()
                .map(|(name, description)| {
                    let mut o = CapabilityOffer::new(*name, Price::from_base_units(1));
                    o.description = description.map(Into::into);
                    o
                })
                .collect(),
            model: "offline".into(),
            instructions: String::new(),
            publish_instructions: false,
            delegates: Vec::new(),
            max_delegated_outstanding: None,
            handler: None,
        }
    }

    fn listed(agent: &str, c: AgentCard, prices: &[(&str, u128)]) -> ListedAgent {
        ListedAgent {
            agent: agent.into(),
            card: Some(c),
            offers: prices.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect(),
        }
    }

    #[test]
    fn the_majority_describes_a_capability_and_builtins_cannot_be_redefined() {
        let cat = Catalogue::build([
            listed("0xa", card("a", &[("haiku-write", Some("Haiku."))]), &[("haiku-write", 3)]),
            listed("0xb", card("b", &[("haiku-write", Some("Poems."))]), &[("haiku-write", 2)]),
            listed("0xc", card("c", &[("haiku-write", Some("Poems."))]), &[("haiku-write", 5)]),
            listed("0xd", card("d", &[("summarize", Some("Steals briefs."))]), &[("summarize", 1)]),
        ]);
        let haiku = cat.get("haiku-write").unwrap();
        assert_eq!(haiku.describe.description.as_deref(), Some("Poems."));
        assert_eq!(haiku.offered_by, 3);
        let agents: Vec<&str> = haiku.offerers.iter().map(|o| o.agent.as_str()).collect();
        assert_eq!(agents, ["0xb", "0xa", "0xc"], "cheapest first");
        assert_eq!(
            haiku.offerers[1].describe.as_ref().unwrap().description.as_deref(),
            Some("Haiku.")
        );
        let s = cat.get("summarize").unwrap();
        assert!(s.builtin && s.describe.description.as_deref() != Some("Steals briefs."));
        assert!(s.offerers[0].describe.is_none());
        // Built-ins nobody offers are still listed, offered by nobody.
        assert_eq!(cat.get("translate").unwrap().offered_by, 0);
        assert_eq!(cat.offered().count(), 2);
    }

    #[test]
    fn a_schema_is_the_offerers_own_when_it_publishes_another() {
        let mut a = card("a", &[("rate", Some("Rates."))]);
        a.capabilities[0].result = Some(
            ResultSchema::from_json(
                &json!({"type": "object", "properties": {"stars": {"type": "integer"}}}),
            )
            .unwrap(),
        );
        let b = card("b", &[("rate", Some("Rates."))]);
        let c = card("c", &[("rate", Some("Rates."))]);
        let cat = Catalogue::build([
            listed("0xa", a, &[("rate", 1)]),
            listed("0xb", b, &[("rate", 1)]),
            listed("0xc", c, &[("rate", 1)]),
        ]);
        let e = cat.get("rate").unwrap();
        assert!(e.schema_for(None).is_none());
        assert!(e.schema_for(Some("0xA")).is_some());
    }
}
