//! The steps of a brief as the offline planner plans them: each segment of
//! the instruction ([`crate::reading`]) with the capability the rules read
//! in it weighed against the catalogue ([`crate::catalogue_match`]), and
//! the brief's own words that chose it.

use std::ops::Range;

use crate::{
    catalogue_match::{Clause, MAX_CHOSEN_BY, Matcher, RuleChoice},
    reading::Reading,
};

/// One capability a segment of the instruction asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStep {
    /// The capability.
    pub capability: String,
    /// The segment (byte range in [`Reading::text`]).
    pub at: Range<usize>,
    /// Named outright (a verb, an outright noun, or a catalogue match),
    /// not only hinted at.
    pub strong: bool,
    /// Several capabilities came out of the same segment.
    pub shared: bool,
    /// The brief's words, as written, that chose it.
    pub chosen_by: Vec<String>,
}

/// The steps of `r`, in order: per segment, the rules' capabilities (all of
/// them in a segment that names several, none in one that moves money) or
/// the catalogue's choice (see [`Matcher::choose`]).
pub fn resolve(r: &Reading, m: &Matcher) -> Vec<PlannedStep> {
    let written =
        |ranges: &[Range<usize>]| ranges.iter().map(|at| r.text[at.clone()].to_owned()).collect();
    let mut out = Vec::new();
    for seg in &r.segments {
        let shared = seg.capabilities.len() > 1;
        if shared || seg.moves_money {
            out.extend(seg.capabilities.iter().map(|a| PlannedStep {
                capability: a.capability.to_owned(),
                at: seg.at.clone(),
                strong: a.strong,
                shared,
                chosen_by: written(&a.by),
            }));
            continue;
        }
        let toks = r.tokens_in(&seg.at);
        let words: Vec<&str> = toks.iter().map(|t| t.word.as_str()).collect();
        let asked = seg.capabilities.first();
        let rule = asked.map(|a| RuleChoice {
            capability: a.capability,
            words: toks
                .iter()
                .enumerate()
                .filter(|(_, t)| a.by.contains(&t.at))
                .map(|(i, _)| i)
                .collect(),
        });
        let Some(choice) = m.choose(&Clause::new(&words), rule) else { continue };
        let strong = match asked {
            Some(a) if choice.from_rule => a.strong,
            _ => true,
        };
        let by: Vec<Range<usize>> = choice.words.iter().map(|p| toks[*p].at.clone()).collect();
        out.push(PlannedStep {
            capability: choice.capability,
            at: seg.at.clone(),
            strong,
            shared,
            chosen_by: written(&by),
        });
    }
    out
}

/// Whether the rules plan research for `r` once the catalogue has spoken:
/// a research verb leads and either the brief asks for the top N or no
/// step names its capability outright; or, without a research verb, the
/// rules read research and no step was found at all.
pub fn research(r: &Reading, steps: &[PlannedStep]) -> bool {
    if r.research_lead {
        r.top_n.is_some() || !steps.iter().any(|s| s.strong)
    } else {
        r.research && steps.is_empty()
    }
}

/// The words, as written, that make `r` a research brief: its leading verb
/// and the "top N" it asks for.
pub fn research_words(r: &Reading) -> Vec<String> {
    let mut wanted: Vec<String> = r.lead.iter().cloned().collect();
    if let Some((phrase, _)) = &r.top_n {
        wanted.extend(phrase.split_whitespace().map(str::to_owned));
    }
    let mut out = Vec::new();
    for w in wanted {
        if let Some(t) = r.tokens.iter().find(|t| t.word == w) {
            let text = r.text[t.at.clone()].to_owned();
            if !out.contains(&text) {
                out.push(text);
            }
        }
    }
    out
}

/// The words of `r`'s instruction, as written, that a model said chose
/// `capability` (`offered`, its `chosen_by`): only those the brief really
/// has, in the brief's order, at most [`MAX_CHOSEN_BY`]. When none of them
/// is there, the words the matcher finds for `capability` instead.
pub fn ground_chosen_by(
    r: &Reading,
    capability: &str,
    offered: &[String],
    m: &Matcher,
) -> Vec<String> {
    let wanted: Vec<String> = offered
        .iter()
        .flat_map(|o| o.split_whitespace())
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    let mut positions: Vec<usize> = r
        .tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| wanted.contains(&t.word))
        .map(|(i, _)| i)
        .collect();
    if positions.is_empty() {
        let words: Vec<&str> = r.words().collect();
        positions = m.words_for(capability, &Clause::new(&words));
    }
    let mut out: Vec<String> = Vec::new();
    for p in positions {
        let w = r.text[r.tokens[p].at.clone()].to_owned();
        if !out.contains(&w) && out.len() < MAX_CHOSEN_BY {
            out.push(w);
        }
    }
    out
}
