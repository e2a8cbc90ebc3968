//! Matching: a sentence as lowercase words, the pattern elements and where a
//! sentence gives orders, and the rules one sentence trips.

use super::{Rule, patterns::PATTERNS};

/// A lowercase word and the punctuation right after it, if any.
#[derive(Debug)]
pub(super) struct Tok {
    word: String,
    after: Option<char>,
}

/// Lowercase words of one sentence: runs of letters and digits, apostrophes
/// dropped (`don't` → `dont`), each with the punctuation that follows it.
fn tokens(sentence: &str) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::new();
    let mut word = String::new();
    let mut chars = sentence.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
            continue;
        }
        if matches!(c, '\'' | '’')
            && !word.is_empty()
            && chars.peek().is_some_and(|n| n.is_alphanumeric())
        {
            continue;
        }
        if !word.is_empty() {
            out.push(Tok { word: std::mem::take(&mut word), after: None });
        }
        // Quotes and closing brackets are transparent: `"agent":` is followed by a colon.
        if !c.is_whitespace()
            && !matches!(c, '"' | '\'' | '”' | '’' | '“' | ')' | ']' | '»')
            && let Some(last) = out.last_mut()
            && last.after.is_none()
        {
            last.after = Some(c);
        }
    }
    if !word.is_empty() {
        out.push(Tok { word, after: None });
    }
    out
}

/// One element of a word pattern.
#[derive(Debug, Clone, Copy)]
pub(super) enum P {
    /// One word from the set.
    W(&'static [&'static str]),
    /// At most one word from the set.
    Opt(&'static [&'static str]),
    /// Up to `n` words from the set.
    Skip(usize, &'static [&'static str]),
    /// Up to `n` words of any kind.
    Any(usize),
    /// A `0x` address (at least eight hex digits).
    Addr,
    /// The previous word ends the sentence or a clause (`.`, `:`, `;`, `,`,
    /// `!`, `?`, `—`) or is followed by "and" / "then" / "instead".
    End,
    /// The previous word is followed by a colon.
    Colon,
}

use P::{Addr, Any, Colon, End, Opt, Skip, W};

/// Whether `pats` match at `i`, allowing the shortest filler first.
fn matches_at(toks: &[Tok], i: usize, pats: &[P]) -> bool {
    let Some((first, rest)) = pats.split_first() else { return true };
    let word = toks.get(i).map(|t| t.word.as_str());
    match *first {
        W(set) => word.is_some_and(|w| set.contains(&w)) && matches_at(toks, i + 1, rest),
        Opt(set) => {
            (word.is_some_and(|w| set.contains(&w)) && matches_at(toks, i + 1, rest))
                || matches_at(toks, i, rest)
        }
        Skip(n, set) => (0..=n).any(|k| {
            toks.get(i..i + k).is_some_and(|s| s.iter().all(|t| set.contains(&t.word.as_str())))
                && matches_at(toks, i + k, rest)
        }),
        Any(n) => (0..=n).any(|k| i + k <= toks.len() && matches_at(toks, i + k, rest)),
        Addr => word.is_some_and(is_address) && matches_at(toks, i + 1, rest),
        End => {
            let prev = i.checked_sub(1).and_then(|p| toks.get(p));
            let closes = prev.is_some_and(|t| {
                matches!(t.after, Some('.' | ':' | ';' | ',' | '!' | '?' | '—' | '-'))
            });
            let joins = word.is_some_and(|w| matches!(w, "and" | "then" | "instead"));
            (word.is_none() || closes || joins) && matches_at(toks, i, rest)
        }
        Colon => {
            let prev = i.checked_sub(1).and_then(|p| toks.get(p));
            prev.is_some_and(|t| t.after == Some(':')) && matches_at(toks, i, rest)
        }
    }
}

fn is_address(w: &str) -> bool {
    w.strip_prefix("0x").is_some_and(|h| h.len() >= 8 && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A pattern of a rule; `anchored` ones count only where a sentence or
/// clause gives an order (see [`order_starts`]).
#[derive(Debug)]
pub(super) struct Pattern {
    pub(super) rule: Rule,
    pub(super) anchored: bool,
    pub(super) pats: &'static [P],
}

/// Words skipped before an order: "Please, now approve …".
const LEAD: &[&str] = &[
    "please",
    "kindly",
    "now",
    "then",
    "and",
    "also",
    "so",
    "just",
    "ok",
    "okay",
    "immediately",
    "finally",
    "first",
    "next",
    "instead",
];
/// Words that, followed by a comma or colon, address the reader: "Agent, …".
const VOCATIVE: &[&str] = &[
    "agent",
    "model",
    "assistant",
    "ai",
    "judge",
    "arbiter",
    "worker",
    "executor",
    "llm",
    "system",
    "reviewer",
];

/// Where a sentence gives orders: its start and every word after a colon,
/// semicolon or dash, each past lead words and vocatives.
fn order_starts(toks: &[Tok]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        toks.iter()
            .enumerate()
            .filter(|(_, t)| matches!(t.after, Some(':' | ';' | '—')))
            .map(|(i, _)| i + 1),
    );
    starts
        .into_iter()
        .map(|mut i| {
            while let Some(t) = toks.get(i) {
                let vocative =
                    VOCATIVE.contains(&t.word.as_str()) && matches!(t.after, Some(',' | ':'));
                if LEAD.contains(&t.word.as_str()) || vocative {
                    i += 1;
                } else {
                    break;
                }
            }
            i
        })
        .collect()
}

const FRAME_MARKERS: &[&str] = &[
    "</task-data",
    "<task-data",
    "</evidence",
    "<evidence>",
    "</untrusted",
    "<|im_start|>",
    "<|im_end|>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|endoftext|>",
    "<|start_header_id|>",
    "[inst]",
    "[/inst]",
    "<<sys>>",
    "<</sys>>",
];

/// The rules one sentence trips, each once, in [`Rule::ALL`] order.
pub(super) fn sentence_rules(sentence: &str) -> Vec<Rule> {
    let toks = tokens(sentence);
    let starts = order_starts(&toks);
    let mut found: Vec<Rule> = PATTERNS
        .iter()
        .filter(|p| {
            if p.anchored {
                starts.iter().any(|&s| matches_at(&toks, s, p.pats))
            } else {
                (0..toks.len()).any(|i| matches_at(&toks, i, p.pats))
            }
        })
        .map(|p| p.rule)
        .collect();
    let lower = sentence.to_lowercase();
    if FRAME_MARKERS.iter().any(|m| lower.contains(m)) {
        found.push(Rule::FrameEscape);
    }
    found.sort_unstable();
    found.dedup();
    found
}
