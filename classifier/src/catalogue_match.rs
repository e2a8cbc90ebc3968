//! Matching the words of one step of a brief against the capability
//! catalogue: how the offline planner plans a capability no rule knows, and
//! why a hostile card cannot capture briefs meant for others.
//!
//! The rules keep their own verbs ([`crate::reading`]); this module weighs
//! them against every capability somebody offers (and the built-ins). It
//! reads only the words of the instruction, one segment at a time: text
//! after a colon, in quotes or in the payload never reaches it.
//!
//! **Words.** Lowercase words; stop words dropped; a light stem (plural `-s`,
//! `-es`, `-ies`, then `-ing` or `-ed`, then a trailing `-e`) so "haikus"
//! meets "haiku", "reviewing" meets "review" and "writing" meets "write".
//!
//! **A card's vocabulary is bounded**, however long the card: its name words
//! (split on `-`), at most [`MAX_DESCRIPTION_WORDS`] content words of its
//! description, and at most [`MAX_PHRASINGS`] phrasings of at most
//! [`MAX_PHRASING_WORDS`] content words each. Anything beyond is ignored.
//!
//! **Evidence.** A card's evidence in a segment is the set of distinct words
//! of the segment it matched, each counted once at its best weight:
//!
//! - a name word [`NAME_WEIGHT`] (3), but a generic verb (`write`, `make`,
//!   `give`, `create`…: the rules' general verbs) only
//!   [`GENERIC_NAME_WEIGHT`] (1);
//! - a phrasing only when all its content words (two at least) occur in
//!   the segment, then each of them [`PHRASING_WEIGHT`] (2);
//! - a description word [`DESCRIPTION_WEIGHT`] (1).
//!
//! The rules' own reading of the segment (a verb or noun they know:
//! `translate`, `summary`, `list … companies`) is a candidate too, at
//! [`RULE_WEIGHT`] (3) per word that chose it.
//!
//! **Candidates.** Description words alone never make a candidate: a card
//! needs a non-generic name word or a whole phrasing. And the segment must
//! ask for it: its leading word (after fillers and determiners) is a word of
//! the card's name or of a phrasing it matched in full (a description word
//! does not count), or a verb that asks for work (`write`, `give`, `make`,
//! `do`, `compose`…). "Email the haiku to Bob" asks for no haiku; "Keep it
//! brief" asks for no `brief`; "Research best practices" asks for no
//! `best-agent`, whatever its description says.
//!
//! **The most specific candidate wins:** the most name evidence first (a
//! name is one per capability, at most 31 bytes, unique in the catalogue,
//! and printed on the plan card), then the highest total weight, then the
//! smaller vocabulary (the narrower card), then a built-in, then the name.
//! Phrasings and descriptions, the parts a card can stuff, only ever decide
//! between cards whose names match the segment equally well.
//!
//! **The rules keep their verbs.** When the rules read a capability in the
//! segment, a card takes the segment from them only when it is a
//! specialisation of that capability and says so in its name: its name
//! holds a word that chose the rules' capability (or one the rules read as
//! it: `summarize`, `translate`…) *and* a non-generic name word of its own
//! that the segment also uses, it matches strictly more of the segment's
//! words than the rules did, and it has more weight. So `contract-summarize`
//! takes "Summarize the contract", while no description or phrasing, however
//! stuffed with "summarize the report", takes "Summarize the quarterly
//! report" from `summarize`, and `business-plan` does not take "Translate
//! the business plan".
//!
//! Only capabilities somebody offers (`offered_by > 0`) and the built-ins
//! are matched. [`MAX_CHOSEN_BY`] words at most are reported as the words
//! that chose a capability: the heaviest evidence of the card that won, or
//! the rules' own words when they won.

use std::collections::BTreeMap;

use tessera_bindings::{
    catalogue::{Catalogue, Entry},
    describe::MAX_PHRASINGS,
};

use crate::reading::{CAPABILITY_NOUNS, CAPABILITY_VERBS, DETERMINERS, FILLERS, GENERAL_VERBS};

/// Most description words a card's vocabulary holds.
pub const MAX_DESCRIPTION_WORDS: usize = 24;
/// Most content words of one phrasing.
pub const MAX_PHRASING_WORDS: usize = 12;
/// Most words reported as having chosen a capability.
pub const MAX_CHOSEN_BY: usize = 8;
/// Weight of a matched name word.
pub const NAME_WEIGHT: u32 = 3;
/// Weight of a matched name word that is a generic verb.
pub const GENERIC_NAME_WEIGHT: u32 = 1;
/// Weight of each word of a wholly matched phrasing.
pub const PHRASING_WEIGHT: u32 = 2;
/// Weight of a matched description word.
pub const DESCRIPTION_WEIGHT: u32 = 1;
/// Weight of each word that chose the rules' capability.
pub const RULE_WEIGHT: u32 = 3;

/// Words that carry no meaning for matching.
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "down", "during", "each", "etc", "every", "few",
    "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him",
    "his", "how", "i", "i'd", "if", "in", "into", "is", "it", "it's", "its", "just", "kindly",
    "let's", "like", "me", "more", "most", "my", "need", "no", "nor", "not", "now", "of", "off",
    "on", "once", "one", "only", "or", "other", "our", "ours", "out", "over", "own", "please",
    "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "us", "very", "via", "want", "was", "we", "were", "what", "when", "where", "which", "while",
    "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// Verbs, besides the rules' general verbs, that ask for work when they
/// lead a segment.
const ASKING_VERBS: &[&str] = &[
    "do", "perform", "run", "generate", "compose", "craft", "build", "design", "draw", "come",
    "put", "turn", "convert", "render", "suggest", "propose", "help", "need", "want", "get",
];

/// The light stem of a lowercase word (see the module doc).
pub fn stem(word: &str) -> String {
    let mut w = word.trim_matches('\'').to_lowercase();
    if let Some(base) = w.strip_suffix("'s") {
        w = base.to_owned();
    }
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        w.truncate(n - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(n - 2);
    } else if n > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w.truncate(n - 1);
    }
    let n = w.len();
    if n > 5 && w.ends_with("ing") {
        w.truncate(n - 3);
    } else if n > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        w.truncate(n - 2);
    }
    let n = w.len();
    if n > 3 && w.ends_with('e') {
        w.truncate(n - 1);
    }
    w
}

/// Whether `word` (lowercase) carries meaning for matching.
fn content(word: &str) -> bool {
    word.chars().count() >= 2
        && word.chars().any(char::is_alphabetic)
        && !STOP_WORDS.contains(&word)
        && !FILLERS.contains(&word)
}

/// The content words of `text`, stemmed, in order, each once.
pub fn content_words(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out: Vec<String> = Vec::new();
    for raw in lower.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’')) {
        let w = raw.trim_matches(['\'', '’']).replace('’', "'");
        if content(&w) {
            let s = stem(&w);
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// Whether a stem is a generic verb's.
fn generic(stemmed: &str) -> bool {
    GENERAL_VERBS.iter().any(|v| stem(v) == stemmed)
}

/// One matchable capability's bounded vocabulary.
#[derive(Debug, Clone)]
struct Card {
    name: String,
    builtin: bool,
    offered_by: usize,
    /// Name words, stemmed, with whether each is a generic verb.
    names: Vec<(String, bool)>,
    description: Vec<String>,
    phrasings: Vec<Vec<String>>,
    /// Distinct words in all of the above.
    vocabulary: usize,
}

impl Card {
    fn of(e: &Entry) -> Self {
        let names: Vec<(String, bool)> = content_words(&e.name.replace('-', " "))
            .into_iter()
            .map(|w| {
                let g = generic(&w);
                (w, g)
            })
            .collect();
        let description: Vec<String> = e
            .describe
            .description
            .as_deref()
            .map(content_words)
            .unwrap_or_default()
            .into_iter()
            .take(MAX_DESCRIPTION_WORDS)
            .collect();
        let phrasings: Vec<Vec<String>> = e
            .describe
            .phrasings
            .iter()
            .take(MAX_PHRASINGS)
            .map(|p| content_words(p).into_iter().take(MAX_PHRASING_WORDS).collect())
            .collect();
        let mut all: Vec<&String> = names
            .iter()
            .map(|(w, _)| w)
            .chain(&description)
            .chain(phrasings.iter().flatten())
            .collect();
        all.sort();
        all.dedup();
        Self {
            name: e.name.clone(),
            builtin: e.builtin,
            offered_by: e.offered_by,
            vocabulary: all.len(),
            names,
            description,
            phrasings,
        }
    }
}

/// The words of one segment, ready to match: each word's stems by position
/// (a hyphenated word gives several), and where the segment's leading word
/// is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// `(position, stem)` for every content word.
    stems: Vec<(usize, String)>,
    /// The words as given, lowercase.
    words: Vec<String>,
    /// The leading word's position (after fillers and determiners).
    lead: Option<usize>,
}

impl Clause {
    /// A clause of `words` (lowercase, as [`crate::reading::tokens`] cuts
    /// them).
    pub fn new<S: AsRef<str>>(words: &[S]) -> Self {
        let words: Vec<String> = words.iter().map(|w| w.as_ref().to_lowercase()).collect();
        let mut stems = Vec::new();
        for (i, w) in words.iter().enumerate() {
            for part in w.split('-') {
                let part = part.trim_matches(['\'', ';']);
                if content(part) {
                    stems.push((i, stem(part)));
                }
            }
        }
        let lead = words
            .iter()
            .position(|w| !FILLERS.contains(&w.as_str()) && !DETERMINERS.contains(&w.as_str()));
        Self { stems, words, lead }
    }

    /// The first position of a word with stem `s`.
    fn find(&self, s: &str) -> Option<usize> {
        self.stems.iter().find(|(_, x)| x == s).map(|(p, _)| *p)
    }

    /// The stems at `positions`.
    fn stems_at(&self, positions: &[usize]) -> Vec<String> {
        self.stems.iter().filter(|(p, _)| positions.contains(p)).map(|(_, s)| s.clone()).collect()
    }

    /// Whether the leading word asks for work.
    fn lead_asks(&self) -> bool {
        self.lead.is_some_and(|l| {
            let w = self.words[l].as_str();
            GENERAL_VERBS.contains(&w) || ASKING_VERBS.contains(&w)
        })
    }
}

/// What one card matched in a clause.
#[derive(Debug, Clone, Default)]
struct Evidence {
    /// Stem → (first position, weight).
    words: BTreeMap<String, (usize, u32)>,
    /// The weight of the matched name words.
    name_weight: u32,
    /// Matched non-generic name words (stems).
    own_names: Vec<String>,
    /// A whole phrasing matched.
    phrasing: bool,
    /// The position of a generic name word matched (weight 1, like a
    /// description word, but part of the name).
    led_by_generic_name: Option<usize>,
}

impl Evidence {
    fn add(&mut self, stem: &str, position: usize, weight: u32) {
        let slot = self.words.entry(stem.to_owned()).or_insert((position, 0));
        slot.1 = slot.1.max(weight);
    }

    fn weight(&self) -> u32 {
        self.words.values().map(|(_, w)| w).sum()
    }

    /// Distinct positions of the clause it matched.
    fn positions(&self) -> Vec<usize> {
        let mut p: Vec<usize> = self.words.values().map(|(p, _)| *p).collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// At most [`MAX_CHOSEN_BY`] positions, the heaviest, in order.
    fn chosen_by(&self) -> Vec<usize> {
        let mut by: Vec<(usize, u32)> = Vec::new();
        for (p, w) in self.words.values() {
            match by.iter_mut().find(|(q, _)| q == p) {
                Some(slot) => slot.1 = slot.1.max(*w),
                None => by.push((*p, *w)),
            }
        }
        by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        by.truncate(MAX_CHOSEN_BY);
        let mut p: Vec<usize> = by.into_iter().map(|(p, _)| p).collect();
        p.sort_unstable();
        p
    }
}

/// What the rules read in a segment: their capability and the positions
/// of the words that chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleChoice<'a> {
    /// The capability the rules read.
    pub capability: &'a str,
    /// Positions (in the clause) of the words that chose it.
    pub words: Vec<usize>,
}

/// The capability chosen for a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The capability.
    pub capability: String,
    /// Positions (in the clause) of the words that chose it, at most
    /// [`MAX_CHOSEN_BY`], in order.
    pub words: Vec<usize>,
    /// The rules' own reading won.
    pub from_rule: bool,
}

/// The catalogue, ready to match clauses against.
#[derive(Debug, Clone)]
pub struct Matcher {
    cards: Vec<Card>,
}

/// How a candidate ranks: name evidence, weight, a narrower vocabulary, a
/// built-in, then the name (smallest first).
type Rank<'a> = (u32, u32, std::cmp::Reverse<usize>, bool, std::cmp::Reverse<&'a str>);

impl Matcher {
    /// The matchable capabilities of `catalogue`: the built-ins and those
    /// somebody offers.
    pub fn new(catalogue: &Catalogue) -> Self {
        let cards = catalogue
            .entries
            .iter()
            .filter(|e| e.builtin || e.offered_by > 0)
            .map(Card::of)
            .collect();
        Self { cards }
    }

    /// The built-in capabilities only.
    pub fn builtins() -> Self {
        Self::new(&Catalogue::builtins())
    }

    /// Whether `capability` can be planned.
    pub fn knows(&self, capability: &str) -> bool {
        self.cards.iter().any(|c| c.name == capability)
    }

    /// Up to `n` capability names to pick from by hand: the built-ins the
    /// rules plan, then the most offered, then by name; and how many more
    /// there are.
    pub fn names(&self, n: usize) -> (Vec<&str>, usize) {
        let mut cards: Vec<&Card> = self.cards.iter().collect();
        let ruled = |c: &Card| {
            CAPABILITY_VERBS.iter().any(|(_, cap)| *cap == c.name)
                || CAPABILITY_NOUNS.iter().any(|(_, cap, _)| *cap == c.name)
        };
        cards.sort_by(|a, b| {
            ruled(b)
                .cmp(&ruled(a))
                .then(b.builtin.cmp(&a.builtin))
                .then(b.offered_by.cmp(&a.offered_by))
                .then(a.name.cmp(&b.name))
        });
        let more = cards.len().saturating_sub(n);
        (cards.into_iter().take(n).map(|c| c.name.as_str()).collect(), more)
    }

    fn evidence(card: &Card, clause: &Clause) -> Evidence {
        let mut e = Evidence::default();
        for (name, is_generic) in &card.names {
            if let Some(p) = clause.find(name) {
                let w = if *is_generic { GENERIC_NAME_WEIGHT } else { NAME_WEIGHT };
                if !e.words.contains_key(name) {
                    e.name_weight += w;
                }
                e.add(name, p, w);
                if *is_generic {
                    e.led_by_generic_name.get_or_insert(p);
                } else {
                    e.own_names.push(name.clone());
                }
            }
        }
        for phrasing in &card.phrasings {
            if phrasing.len() < 2 {
                continue;
            }
            let found: Option<Vec<usize>> = phrasing.iter().map(|w| clause.find(w)).collect();
            if let Some(found) = found {
                e.phrasing = true;
                for (w, p) in phrasing.iter().zip(found) {
                    e.add(w, p, PHRASING_WEIGHT);
                }
            }
        }
        for w in &card.description {
            if let Some(p) = clause.find(w) {
                e.add(w, p, DESCRIPTION_WEIGHT);
            }
        }
        e
    }

    /// Whether `e` makes a card a candidate in `clause` (see the module
    /// doc): a non-generic name word or a whole phrasing, in a segment that
    /// asks for it (led by a word of its name or phrasing, never of its
    /// description alone, or by a verb that asks for work).
    fn candidate(e: &Evidence, clause: &Clause) -> bool {
        let led = clause.lead.is_some_and(|l| {
            e.words.values().any(|(p, w)| *p == l && *w > DESCRIPTION_WEIGHT)
                || e.led_by_generic_name == Some(l)
        });
        (!e.own_names.is_empty() || e.phrasing) && (led || clause.lead_asks())
    }

    fn rank<'a>(card: &'a Card, e: &Evidence) -> Rank<'a> {
        (
            e.name_weight,
            e.weight(),
            std::cmp::Reverse(card.vocabulary),
            card.builtin,
            std::cmp::Reverse(card.name.as_str()),
        )
    }

    /// The capability for a segment of `clause`, given what the rules read
    /// in it (see the module doc for the order of precedence).
    pub fn choose(&self, clause: &Clause, rule: Option<RuleChoice<'_>>) -> Option<Choice> {
        let scored: Vec<(&Card, Evidence)> =
            self.cards.iter().map(|c| (c, Self::evidence(c, clause))).collect();
        let Some(rule) = rule else {
            return scored
                .iter()
                .filter(|(_, e)| Self::candidate(e, clause))
                .max_by(|(a, x), (b, y)| Self::rank(a, x).cmp(&Self::rank(b, y)))
                .map(|(c, e)| Choice {
                    capability: c.name.clone(),
                    words: e.chosen_by(),
                    from_rule: false,
                });
        };
        // The rules' reading, merged with the same capability's card.
        let mut ruled = scored
            .iter()
            .find(|(c, _)| c.name == rule.capability)
            .map(|(_, e)| e.clone())
            .unwrap_or_default();
        let rule_weight = RULE_WEIGHT * rule.words.len() as u32;
        for p in &rule.words {
            let s = clause.stems_at(&[*p]).into_iter().next().unwrap_or_else(|| format!("#{p}"));
            ruled.add(&s, *p, RULE_WEIGHT);
        }
        let mut owned: Vec<String> = clause.stems_at(&rule.words);
        owned.extend(rule_stems(rule.capability));
        let rule_rank = (rule_weight.max(ruled.name_weight), ruled.weight());
        let rule_count = rule.words.len().max(1);
        let challenger = scored
            .iter()
            .filter(|(c, e)| {
                c.name != rule.capability
                    && c.names.iter().any(|(n, _)| owned.contains(n))
                    && e.own_names.iter().any(|n| !owned.contains(n))
                    && e.positions().len() > rule_count
                    && (e.name_weight, e.weight()) > rule_rank
            })
            .max_by(|(a, x), (b, y)| Self::rank(a, x).cmp(&Self::rank(b, y)));
        Some(match challenger {
            Some((c, e)) => {
                Choice { capability: c.name.clone(), words: e.chosen_by(), from_rule: false }
            }
            None => {
                let mut words = rule.words.clone();
                words.sort_unstable();
                words.dedup();
                words.truncate(MAX_CHOSEN_BY);
                Choice { capability: rule.capability.to_owned(), words, from_rule: true }
            }
        })
    }

    /// A card's evidence in `clause` with the words the rules read as its
    /// capability counted as name words.
    fn evidence_with_rules(card: &Card, clause: &Clause) -> Evidence {
        let mut e = Self::evidence(card, clause);
        for p in rule_positions(&card.name, clause) {
            for s in clause.stems_at(&[p]) {
                if !e.words.contains_key(&s) {
                    e.name_weight += RULE_WEIGHT;
                }
                e.add(&s, p, RULE_WEIGHT);
            }
        }
        e
    }

    /// How well each matchable capability fits `clause`, for ordering:
    /// `(name, name evidence, weight)` of every card with any evidence.
    pub fn relevance(&self, clause: &Clause) -> Vec<(&str, u32, u32)> {
        self.cards
            .iter()
            .filter_map(|c| {
                let e = Self::evidence_with_rules(c, clause);
                let weight = e.weight();
                (weight > 0).then_some((c.name.as_str(), e.name_weight, weight))
            })
            .collect()
    }

    /// The positions in `clause` of the words that speak for `capability`
    /// (its card's evidence and the rules' words for it), at most
    /// [`MAX_CHOSEN_BY`]: why a capability someone else named fits.
    pub fn words_for(&self, capability: &str, clause: &Clause) -> Vec<usize> {
        self.cards
            .iter()
            .find(|c| c.name == capability)
            .map(|c| Self::evidence_with_rules(c, clause).chosen_by())
            .unwrap_or_default()
    }
}

/// Stems the rules read as `capability`: its verbs and nouns, and its
/// name's non-generic words.
fn rule_stems(capability: &str) -> Vec<String> {
    let mut out: Vec<String> = CAPABILITY_VERBS
        .iter()
        .filter(|(_, c)| *c == capability)
        .map(|(v, _)| stem(v))
        .chain(
            CAPABILITY_NOUNS.iter().filter(|(_, c, _)| *c == capability).map(|(n, _, _)| stem(n)),
        )
        .collect();
    if out.is_empty() {
        return out;
    }
    out.extend(content_words(&capability.replace('-', " ")).into_iter().filter(|w| !generic(w)));
    out
}

/// Positions in `clause` of words the rules read as `capability`.
fn rule_positions(capability: &str, clause: &Clause) -> Vec<usize> {
    let verbs = CAPABILITY_VERBS.iter().filter(|(_, c)| *c == capability).map(|(v, _)| *v);
    let nouns = CAPABILITY_NOUNS
        .iter()
        .filter(|(_, c, strong)| *c == capability && *strong)
        .map(|(n, ..)| *n);
    let known: Vec<&str> = verbs.chain(nouns).collect();
    clause
        .words
        .iter()
        .enumerate()
        .filter(|(_, w)| known.contains(&w.as_str()))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
#[path = "catalogue_match_tests.rs"]
mod tests;
