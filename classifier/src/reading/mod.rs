//! How the rules read a brief: the instruction apart from the material, then
//! the instruction cut into steps, each with the capability it asks for.
//!
//! **Instruction and material.** What a brief asks for is in its instruction;
//! the text it asks about is material, and words in the material ("plan",
//! "then", "translate", "top 3") are never read as instructions. Material is:
//!
//! - the text after a colon (or a blank line, or a list that starts on the
//!   next line) when the part before it names a capability — "Summarize this
//!   article: …" — or, failing that, the long text after a short label
//!   ("Here is the article: …") that does not itself start with a verb;
//! - quoted text (`"…"`, `“…”`, `«…»`, `'…'`, `` `…` ``), unless the quotes
//!   hold the whole brief;
//! - the separate payload, which the rules never read at all.
//!
//! **Steps.** The instruction splits into clauses on sequencing words
//! (`then`, `after that`, `followed by`…), and a clause into segments where
//! another verb the rules know starts after `and`, a comma or a full stop
//! ("Translate to French and summarize the letter"). A segment's capability
//! comes from its **verbs** first (`translate`, `summarize`, `extract`, or a
//! general verb such as `classify`/`give`/`list` followed by a capability
//! noun); only a segment with no such verb falls back on capability nouns
//! (`sentiment`, `summary`, `entities`…). So "Translate the business plan"
//! is a translation whatever its object is called.
//!
//! **Research.** A brief is research when its first verb is a research verb
//! (`research`, `find`, `compare`, `plan`, `investigate`…) and it names no
//! capability of its own or asks for the top N; or when it names no capability
//! at all, asks for the top N and points at no material ("What are the top 5
//! vector databases?"). "Top N" beside a capability ("Summarize the top 3
//! takeaways") is not research.
//!
//! Words are read after [`crate::normalize`] folds look-alike letters.
//!
//! The module is split by job: `words` holds the vocabularies the rules
//! know, `material` finds the material (quotes, the text after a colon) and
//! cuts words; this file reads the instruction into clauses, segments and
//! steps.

mod material;
mod words;

use std::ops::Range;

use crate::{
    heuristic::{addresses, amounts, number},
    normalize::{self, FoldedWord},
};

pub(crate) use self::words::{DETERMINERS, FILLERS};
use self::{material::*, words::*};
pub use self::{
    material::{list_item, tokens},
    words::{
        CAPABILITY_NOUNS, CAPABILITY_VERBS, GENERAL_VERBS, ITEM_NOUNS, MAX_FAN_OUT, MONEY_NOUNS,
        MONEY_ONLY_VERBS, RESEARCH_VERBS, SEPARATORS, TRANSFER_VERBS,
    },
};

/// A word of the instruction and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Byte range in [`Reading::text`] (and [`Reading::mask`]).
    pub at: Range<usize>,
    /// The word, lowercased.
    pub word: String,
}

/// A capability one segment asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The capability.
    pub capability: &'static str,
    /// The segment that asks for it (byte range in [`Reading::text`]).
    pub at: Range<usize>,
    /// Named by a verb or an outright noun (not only hinted at).
    pub strong: bool,
    /// Several capabilities came out of the same segment.
    pub shared: bool,
    /// The words that asked for it (byte ranges in [`Reading::text`]): the
    /// verb, a general verb and its noun, or the nouns.
    pub by: Vec<Range<usize>>,
}

/// A capability a segment asks for, and the words that asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The capability.
    pub capability: &'static str,
    /// Named by a verb or an outright noun (not only hinted at).
    pub strong: bool,
    /// The words that asked for it (byte ranges in [`Reading::text`]).
    pub by: Vec<Range<usize>>,
}

/// A piece of a clause: from a verb the rules know to just before the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Byte range in [`Reading::text`].
    pub at: Range<usize>,
    /// The first word that is not a filler, lowercased.
    pub lead: Option<String>,
    /// Capabilities it asks for, each with whether it is strong and the
    /// words that asked.
    pub capabilities: Vec<Asked>,
    /// It asks to move money ("pay the designer", "send the funds to Bob").
    pub moves_money: bool,
    /// It names an amount.
    pub amount: bool,
}

/// A brief as the rules read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The brief with the instruction's look-alike letters folded and the
    /// material as written; specs are cut from it.
    pub text: String,
    /// `text` with the material blanked out and ASCII letters lowercased;
    /// the same length as `text`, so ranges apply to both.
    pub mask: String,
    /// The whole brief, material included, with look-alike letters folded:
    /// the stakes rules read money anywhere.
    pub full: String,
    /// Where the instruction ends in `text`.
    pub instruction_end: usize,
    /// Where the material after a colon (or blank line) starts in `text`.
    pub material_start: Option<usize>,
    /// Quoted spans read as material.
    pub quoted: usize,
    /// Words spelled with look-alike letters, as written and as read.
    pub folded: Vec<FoldedWord>,
    /// Most letters are Latin (otherwise the brief is likely in a language
    /// the rules do not read).
    pub latin: bool,
    /// The instruction's words.
    pub tokens: Vec<Token>,
    /// Clauses split on sequencing words (byte ranges in `text`).
    pub clauses: Vec<Range<usize>>,
    /// Sequencing separators found between clauses.
    pub sequence: Vec<&'static str>,
    /// Segments of every clause, in order.
    pub segments: Vec<Segment>,
    /// The capabilities asked for, in order.
    pub steps: Vec<Step>,
    /// The brief's leading verb (first segment's lead).
    pub lead: Option<String>,
    /// The leading verb is a research verb (or "make a plan").
    pub research_lead: bool,
    /// "top 5", "best 3", "the 4 cheapest": the number asked for.
    pub top_n: Option<(String, u32)>,
    /// The rules plan research for this brief.
    pub research: bool,
    /// The instruction points at material (this, these, the following…) or
    /// the brief carries some.
    pub material_ref: bool,
}

impl Reading {
    /// Reads `brief`.
    pub fn of(brief: &str) -> Self {
        let brief = brief.trim();
        let latin = normalize::latin_dominant(brief);
        let whole = normalize::fold(brief, latin);
        let quotes = quote_spans(brief);
        let split = material_split(brief, &quotes, latin);
        let (text, mask, instruction_end, material_start, quoted) =
            assemble(brief, &quotes, split, latin);
        let mut r = Reading {
            text,
            mask,
            full: whole.text,
            instruction_end,
            material_start,
            quoted,
            folded: whole.words,
            latin,
            tokens: Vec::new(),
            clauses: Vec::new(),
            sequence: Vec::new(),
            segments: Vec::new(),
            steps: Vec::new(),
            lead: None,
            research_lead: false,
            top_n: None,
            research: false,
            material_ref: false,
        };
        r.tokens = tokens(&r.mask, 0..r.instruction_end);
        r.split_clauses();
        r.split_segments();
        r.intent();
        r
    }

    /// The instruction (material after a colon excluded; quotes kept as
    /// written).
    pub fn instruction(&self) -> &str {
        self.text[..self.instruction_end].trim()
    }

    /// The material after a colon or blank line, if any.
    pub fn material(&self) -> Option<&str> {
        self.material_start.map(|at| self.text[at..].trim()).filter(|m| !m.is_empty())
    }

    /// The instruction's words, lowercased.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(|t| t.word.as_str())
    }

    /// List items of the material (or of the whole brief when it has none).
    pub fn list_items(&self) -> Vec<String> {
        let source = self.material().unwrap_or(&self.text);
        source.lines().filter_map(list_item).map(str::to_owned).collect()
    }

    /// Separate items the instruction asks to treat one by one: a count
    /// ("these 4 reviews", "each of these three articles") or a list the
    /// instruction points at in the plural ("the following:", "these:") or
    /// not at all ("Summarize:"), with the listed items.
    pub fn fan_out(&self) -> Option<(u32, Vec<String>)> {
        let words: Vec<&str> = self.words().collect();
        let counted = words.iter().enumerate().find_map(|(i, w)| {
            ITEM_NOUNS
                .contains(w)
                .then(|| i.checked_sub(1).and_then(|j| number(words[j])))
                .flatten()
                .filter(|n| *n > 1)
        });
        let items = self.list_items();
        if let Some(n) = counted {
            return Some((n.min(MAX_FAN_OUT), items));
        }
        let plural = words.iter().any(|w| {
            matches!(*w, "each" | "every" | "these" | "those" | "following" | "all" | "them")
        });
        let singular = words.iter().any(|w| matches!(*w, "this" | "it" | "that"));
        (items.len() >= 2 && (plural || !singular))
            .then(|| ((items.len() as u32).min(MAX_FAN_OUT), items))
    }

    /// The instruction's words within `at` (a byte range in [`Self::text`]).
    pub fn tokens_in(&self, at: &Range<usize>) -> &[Token] {
        let from = self.tokens.partition_point(|t| t.at.start < at.start);
        let to = self.tokens.partition_point(|t| t.at.start < at.end);
        &self.tokens[from..to]
    }

    fn split_clauses(&mut self) {
        let head = &self.mask[..self.instruction_end];
        let mut cuts: Vec<(Range<usize>, &'static str)> = Vec::new();
        for sep in SEPARATORS {
            let mut from = 0;
            while let Some(found) = head[from..].find(sep) {
                let at = from + found..from + found + sep.len();
                if !cuts.iter().any(|(c, _)| c.start < at.end && at.start < c.end) {
                    cuts.push((at.clone(), sep));
                }
                from = at.end;
            }
        }
        cuts.sort_by_key(|(at, _)| at.start);
        let mut start = 0;
        for (at, sep) in cuts {
            self.clauses.push(start..at.start);
            self.sequence.push(sep.trim_matches([',', ';', '.', ' ']));
            start = at.end;
        }
        self.clauses.push(start..self.instruction_end);
        self.clauses.retain(|c| !self.mask[c.clone()].trim().is_empty());
    }

    fn split_segments(&mut self) {
        let clauses = self.clauses.clone();
        for clause in clauses {
            let toks = self.tokens_in(&clause).to_vec();
            // Where each segment starts: the clause start, and every verb the
            // rules know that follows a joiner or punctuation. A word the rules
            // do not know starts one too when it reads as a verb there ("… and
            // comp the freelancer 300 USDC"): such a segment gets no capability
            // from nouns, but its amounts and money still count.
            let mut starts = vec![(0usize, false)];
            for i in 1..toks.len() {
                let hard = is_head(&toks, i);
                if !hard && !self.reads_as_verb(&toks, i) {
                    continue;
                }
                let mut j = i;
                let mut joined = false;
                while j > 0 && FILLERS.contains(&toks[j - 1].word.as_str()) {
                    joined |= JOINERS.contains(&toks[j - 1].word.as_str());
                    j -= 1;
                }
                let gap_from = if j == 0 { clause.start } else { toks[j - 1].at.end };
                let gap = &self.mask[gap_from..toks[i].at.start];
                joined |= gap.contains([',', ';', '.', '&', '\n', ':']);
                if j > 0 && joined && starts.last().map(|s| s.0) != Some(i) {
                    starts.push((i, !hard));
                }
            }
            for (k, &(s, soft)) in starts.iter().enumerate() {
                let end_tok = starts.get(k + 1).map_or(toks.len(), |n| n.0);
                // The segment ends at its last word before the next one's
                // joiners.
                let mut last = end_tok;
                if k + 1 < starts.len() {
                    while last > s + 1 && FILLERS.contains(&toks[last - 1].word.as_str()) {
                        last -= 1;
                    }
                }
                let from = if k == 0 { clause.start } else { toks[s].at.start };
                let to = if k + 1 < starts.len() {
                    toks.get(last.saturating_sub(1)).map_or(clause.end, |t| t.at.end)
                } else {
                    clause.end
                };
                let seg_toks = &toks[s..end_tok];
                self.segments.push(self.segment(from..to, seg_toks, !soft));
            }
        }
        for seg in &self.segments {
            let shared = seg.capabilities.len() > 1;
            for a in &seg.capabilities {
                self.steps.push(Step {
                    capability: a.capability,
                    at: seg.at.clone(),
                    strong: a.strong,
                    shared,
                    by: a.by.clone(),
                });
            }
        }
    }

    /// Whether token `i`, a word the rules do not know, reads as a verb: a
    /// plain word followed by a determiner, a pronoun or a name.
    fn reads_as_verb(&self, toks: &[Token], i: usize) -> bool {
        let w = toks[i].word.as_str();
        let Some(next) = toks.get(i + 1) else { return false };
        let plain = w.len() > 1
            && w.chars().all(|c| c.is_ascii_lowercase())
            && !FILLERS.contains(&w)
            && !DETERMINERS.contains(&w);
        let object = DETERMINERS.contains(&next.word.as_str())
            || self.text[next.at.clone()].starts_with(|c: char| c.is_uppercase());
        plain && object
    }

    /// A segment; `nouns` says whether capability nouns may name its
    /// capability when no verb does (not in a segment that pays: "pay Bob
    /// for the translation" asks for no translation).
    fn segment(&self, at: Range<usize>, toks: &[Token], nouns: bool) -> Segment {
        let lead_at = toks.iter().position(|t| !FILLERS.contains(&t.word.as_str()));
        let lead = lead_at.map(|i| toks[i].word.clone());
        let text = &self.text[at.clone()];
        let amount = !amounts(text).is_empty();
        let money_noun = toks.iter().any(|t| MONEY_NOUNS.contains(&t.word.as_str()));
        let moves_money = lead_at.is_some_and(|i| {
            let w = toks[i].word.as_str();
            MONEY_ONLY_VERBS.contains(&w)
                || (TRANSFER_VERBS.contains(&w)
                    && (money_noun || amount || !addresses(text).is_empty()))
        });
        let mut verbs: Vec<Asked> = Vec::new();
        for i in 0..toks.len() {
            // "Give Bob 10 USDC for the summary" asks for no summary.
            if moves_money && GENERAL_VERBS.contains(&toks[i].word.as_str()) {
                continue;
            }
            if let Some((cap, noun)) = verb_choice(toks, i)
                && !verbs.iter().any(|a| a.capability == cap)
            {
                let mut by = vec![toks[i].at.clone()];
                by.extend(noun.map(|n| toks[n].at.clone()));
                verbs.push(Asked { capability: cap, strong: true, by });
            }
        }
        let capabilities = if verbs.is_empty() && nouns && !moves_money {
            let mut nouns: Vec<Asked> = Vec::new();
            for t in toks {
                if let Some((_, cap, strong)) =
                    CAPABILITY_NOUNS.iter().find(|(w, _, _)| *w == t.word)
                {
                    match nouns.iter_mut().find(|a| a.capability == *cap) {
                        Some(n) => {
                            n.strong |= strong;
                            n.by.push(t.at.clone());
                        }
                        None => nouns.push(Asked {
                            capability: cap,
                            strong: *strong,
                            by: vec![t.at.clone()],
                        }),
                    }
                }
            }
            nouns
        } else {
            verbs
        };
        Segment { at, lead, capabilities, moves_money, amount }
    }

    fn intent(&mut self) {
        let words: Vec<&str> = self.tokens.iter().map(|t| t.word.as_str()).collect();
        let lead_at = words.iter().position(|w| !FILLERS.contains(w));
        self.lead = lead_at.map(|i| words[i].to_owned());
        self.research_lead = lead_at.is_some_and(|i| {
            let w = words[i];
            RESEARCH_VERBS.contains(&w)
                || (CREATION_VERBS.contains(&w)
                    && words[i + 1..].iter().take(4).any(|n| PLAN_NOUNS.contains(n)))
        });
        for pair in words.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            const RANKS: &[&str] =
                &["top", "best", "first", "leading", "cheapest", "biggest", "largest", "most"];
            let n = if matches!(a, "top" | "best" | "first" | "leading") {
                number(b)
            } else if RANKS.contains(&b) {
                number(a)
            } else {
                None
            };
            if let Some(n) = n.filter(|n| *n > 1) {
                self.top_n = Some((format!("{a} {b}"), n));
                break;
            }
        }
        self.material_ref = self.material().is_some()
            || self.quoted > 0
            || words.iter().any(|w| MATERIAL_WORDS.contains(w));
        let strong = self.steps.iter().any(|s| s.strong);
        let pays = self.segments.iter().any(|s| s.moves_money);
        // "What are the best laptops under $1000?" asks to find, like "top N".
        let asks_best = matches!(self.lead.as_deref(), Some("what" | "which" | "what's"))
            && words.iter().any(|w| {
                matches!(*w, "best" | "top" | "cheapest" | "leading" | "recommended" | "good")
            });
        self.research = if self.research_lead {
            self.top_n.is_some() || !strong
        } else {
            self.steps.is_empty()
                && (self.top_n.is_some() || asks_best)
                && !self.material_ref
                && !pays
        };
    }
}

/// The capability token `i` asks for as a verb: a capability verb, or a
/// general verb with a capability noun among the next six words.
fn verb_capability(toks: &[Token], i: usize) -> Option<&'static str> {
    verb_choice(toks, i).map(|(cap, _)| cap)
}

/// [`verb_capability`], with the index of the noun that named the
/// capability after a general verb.
fn verb_choice(toks: &[Token], i: usize) -> Option<(&'static str, Option<usize>)> {
    let w = toks[i].word.as_str();
    if let Some((_, cap)) = CAPABILITY_VERBS.iter().find(|(v, _)| *v == w) {
        return Some((cap, None));
    }
    if GENERAL_VERBS.contains(&w) {
        return toks[i + 1..].iter().enumerate().take(6).find_map(|(k, t)| {
            CAPABILITY_NOUNS
                .iter()
                .find(|(n, _, _)| *n == t.word)
                .map(|(_, cap, _)| (*cap, Some(i + 1 + k)))
        });
    }
    None
}

/// Whether token `i` is a verb that can start a new segment.
fn is_head(toks: &[Token], i: usize) -> bool {
    let w = toks[i].word.as_str();
    verb_capability(toks, i).is_some()
        || MONEY_ONLY_VERBS.contains(&w)
        || TRANSFER_VERBS.contains(&w)
}

/// Whether a bit of instruction names a capability at all (verb or noun).
fn names_capability(text: &str) -> bool {
    let lower = text.to_lowercase();
    let toks = tokens(&lower, 0..lower.len());
    (0..toks.len()).any(|i| {
        verb_capability(&toks, i).is_some()
            || CAPABILITY_NOUNS.iter().any(|(n, _, _)| *n == toks[i].word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_the_rules_name_follows_the_one_name_rule() {
        let names = CAPABILITY_VERBS
            .iter()
            .map(|(_, c)| *c)
            .chain(CAPABILITY_NOUNS.iter().map(|(_, c, _)| *c));
        for name in names {
            tessera_bindings::capability::check(name).unwrap();
        }
    }

    fn caps(brief: &str) -> Vec<&'static str> {
        Reading::of(brief).steps.iter().map(|s| s.capability).collect()
    }

    #[test]
    fn material_after_a_colon_quotes_and_lists() {
        let r = Reading::of("Summarize this article: Plan the top 3 moves, then translate.");
        assert_eq!(r.instruction(), "Summarize this article");
        assert_eq!(r.material(), Some("Plan the top 3 moves, then translate."));
        assert!(r.sequence.is_empty() && r.top_n.is_none() && !r.research);

        let r = Reading::of(
            "Translate \"Our plan: research the top 5 markets, then expand\" to German",
        );
        assert_eq!(r.quoted, 1);
        assert_eq!(
            caps("Translate \"Our plan: research the top 5 markets\" to German"),
            ["translate"]
        );
        assert!(r.material().is_none(), "the colon is inside the quotes");
        assert_eq!(
            r.instruction(),
            "Translate \"Our plan: research the top 5 markets, then expand\" to German"
        );

        let r = Reading::of("Summarize the following\n- the plan memo\n- the tone guide");
        assert_eq!(r.instruction(), "Summarize the following");
        assert_eq!(
            caps("Summarize the following\n- the plan memo\n- the tone guide"),
            ["summarize"]
        );

        // The whole brief in quotes is still the instruction.
        assert_eq!(caps("\"Translate the memo to French\""), ["translate"]);
        // A label before long material.
        let r = Reading::of(
            "Here is the article: The board will plan a merger, then research the top 3 \
             candidates and translate the filings before summer.",
        );
        assert_eq!(r.instruction(), "Here is the article");
        assert!(r.steps.is_empty() && !r.research);
        // … but not before an instruction.
        let r = Reading::of(
            "Note: translate the memo to French, then summarize it and extract the entities \
             from it for the team",
        );
        assert_eq!(r.steps.len(), 3);
    }

    #[test]
    fn verbs_before_nouns() {
        assert_eq!(caps("Translate the business plan to French"), ["translate"]);
        assert_eq!(caps("Translate the summary of the companies' tone"), ["translate"]);
        assert_eq!(caps("Classify the tone of the email"), ["sentiment-classify"]);
        assert_eq!(caps("What is the sentiment of this review?"), ["sentiment-classify"]);
        assert_eq!(caps("List the companies mentioned"), ["extract-entities"]);
        assert_eq!(
            caps("Translate to French and summarize the letter"),
            ["translate", "summarize"]
        );
        assert_eq!(caps("Give me the top 3 takeaways from the report"), ["summarize"]);
    }

    #[test]
    fn segments_split_at_known_verbs_only() {
        let r = Reading::of("Translate the invoice to French and send it with $50 to Bob");
        assert_eq!(r.segments.len(), 2);
        assert!(r.segments[1].moves_money);
        assert_eq!(&r.text[r.segments[0].at.clone()], "Translate the invoice to French");
        let r = Reading::of("Summarize the pros and cons");
        assert_eq!(r.segments.len(), 1);
    }

    #[test]
    fn research_intent() {
        assert!(Reading::of("Research the top 5 vector databases").research);
        assert!(Reading::of("Plan a three-day trip to Porto").research);
        assert!(Reading::of("Make a plan for the product launch").research);
        assert!(Reading::of("What are the top 5 vector databases?").research);
        assert!(!Reading::of("Translate the business plan to French").research);
        assert!(!Reading::of("Summarize the top 3 takeaways of this report").research);
        assert!(!Reading::of("Identify the top 3 risks in this report").research);
        assert!(!Reading::of("Pay the top 3 contributors $10 each").research);
        assert_eq!(Reading::of("Find the 4 cheapest flights to Oslo").top_n.map(|t| t.1), Some(4));
    }

    #[test]
    fn any_text_reads_without_panicking() {
        // Quotes, colons, lines, several-byte letters, look-alikes, hidden
        // characters, digits and currency signs, shuffled deterministically.
        const PIECES: &[&str] = &[
            "\"",
            "'",
            "\u{201C}",
            "\u{201D}",
            "\u{AB}",
            "\u{BB}",
            "`",
            "```",
            ":",
            "\u{FF1A}",
            " ",
            "\n",
            "\n\n",
            "- ",
            "1. ",
            ", then ",
            " and ",
            "translate",
            "summarize",
            "top 3",
            "pay",
            "$5",
            "5 USDC",
            "\u{0430}",
            "\u{0405}",
            "\u{0130}",
            "\u{200B}",
            "\u{1D42C}",
            "日本",
            "é",
            "the",
            "plan",
            "research",
            "0x52908400098527886E0F7030069857D2E4169EE7",
            ".",
        ];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..3000 {
            let mut brief = String::new();
            for _ in 0..(seed % 24) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                brief.push_str(PIECES[(seed % PIECES.len() as u64) as usize]);
            }
            let r = Reading::of(&brief);
            assert_eq!(r.text.len(), r.mask.len(), "{brief:?}");
            for step in &r.steps {
                assert!(r.text.get(step.at.clone()).is_some(), "{brief:?}");
            }
            let c = crate::offline::plan(&brief);
            assert_eq!(
                c.plan.len() >= 2,
                c.decomposability.value == crate::Decomposability::Composite
            );
        }
    }

    #[test]
    fn tokens_keep_ranges() {
        let t = tokens("tl;dr this, then done.", 0..22);
        let words: Vec<&str> = t.iter().map(|t| t.word.as_str()).collect();
        assert_eq!(words, ["tl;dr", "this", "then", "done"]);
        assert_eq!(t[1].at, 6..10);
    }
}
