//! The heuristic cross-check: a pure function of the brief that looks for
//! composite cues (sequencing words, research and top-N briefs, lists, several
//! capabilities) and stakes cues (money verbs, amounts, addresses, keys).
//! Where it flags what a classifier missed, that axis's confidence halves.

use crate::classify::{Classification, Decomposability, Signal, SignalKind, Stakes};

/// What the scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cues {
    /// Composite signals, in order of discovery.
    pub composite: Vec<Signal>,
    /// Stakes signals, in order of discovery.
    pub stakes: Vec<Signal>,
    /// Amounts mentioned (`$5`, `0.1 USDC`).
    pub amounts: Vec<String>,
    /// Ethereum addresses mentioned.
    pub addresses: Vec<String>,
    /// Whether the stakes cues add up to money at risk.
    pub high_stakes: bool,
}

impl Cues {
    /// Whether the brief looks like several units of work.
    pub fn says_composite(&self) -> bool {
        !self.composite.is_empty()
    }
}

const SEQUENCE_WORDS: &[&str] = &["then", "afterwards", "afterward", "subsequently", "finally"];
const SEQUENCE_PHRASES: &[&str] =
    &["after that", "followed by", "and finally", "once that is done", "next,"];
const RESEARCH_WORDS: &[&str] =
    &["plan", "research", "compare", "investigate", "survey", "evaluate"];
const EACH_PHRASES: &[&str] =
    &["each of", "every one of", "all of these", "all of the following", "the following"];
const MONEY_VERBS: &[&str] = &[
    "send", "transfer", "pay", "withdraw", "wire", "swap", "bridge", "stake", "deposit", "tip",
    "remit",
];
const MONEY_PHRASES: &[&str] =
    &["approve spending", "set allowance", "approve the allowance", "unlimited approval"];
const KEY_PHRASES: &[&str] = &["private key", "seed phrase", "mnemonic", "secret key"];
const CURRENCIES: &[&str] =
    &["usdc", "usd", "usdt", "dai", "eth", "dollars", "dollar", "wei", "gwei", "tokens"];

/// Number words the scanner understands, with their values.
pub const NUMBER_WORDS: &[(&str, u32)] = &[
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("twenty", 20),
];

/// Words that name a capability, per capability.
pub const CAPABILITY_WORDS: &[(&str, &[&str])] = &[
    ("translate", &["translate", "translation", "translated"]),
    (
        "summarize",
        &["summarize", "summarise", "summary", "summaries", "tl;dr", "tldr", "condense", "digest"],
    ),
    ("sentiment-classify", &["sentiment", "tone", "mood", "positive", "negative"]),
    (
        "extract-entities",
        &["entities", "entity", "extract", "names", "people", "organizations", "companies"],
    ),
];

/// Lowercased words of `text` (letters, digits, `-`, `;` kept inside words).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == ';' || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A count written as digits or as a word.
pub fn number(word: &str) -> Option<u32> {
    word.parse::<u32>()
        .ok()
        .or_else(|| NUMBER_WORDS.iter().find(|(w, _)| *w == word).map(|(_, n)| *n))
}

/// Ethereum addresses (`0x` + 40 hex digits) anywhere in `text`.
pub fn addresses(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 42 <= bytes.len() {
        if bytes[i] == b'0' && (bytes[i + 1] == b'x' || bytes[i + 1] == b'X') {
            let hex = &bytes[i + 2..i + 42];
            let boundary_before = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
            let boundary_after = bytes.get(i + 42).is_none_or(|b| !b.is_ascii_hexdigit());
            if boundary_before && boundary_after && hex.iter().all(u8::is_ascii_hexdigit) {
                out.push(text[i..i + 42].to_owned());
                i += 42;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Amounts: `$` followed by a number, or a number followed by a currency.
pub fn amounts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let is_num = |s: &str| {
        let s = s.trim_end_matches([',', '.', ';', ':', '!', '?', ')']);
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
            && s.chars().any(|c| c.is_ascii_digit())
    };
    for (i, t) in tokens.iter().enumerate() {
        if let Some(rest) = t.strip_prefix('$')
            && is_num(rest)
        {
            out.push((*t).to_owned());
            continue;
        }
        let lower = t.to_lowercase();
        // "5usdc"
        if let Some(cur) = CURRENCIES.iter().find(|c| lower.ends_with(*c))
            && is_num(&lower[..lower.len() - cur.len()])
        {
            out.push((*t).to_owned());
            continue;
        }
        if is_num(t)
            && let Some(next) = tokens.get(i + 1)
        {
            let next = next.to_lowercase();
            let next = next.trim_end_matches([',', '.', ';', ':', '!', '?', ')']);
            if CURRENCIES.contains(&next) {
                out.push(format!("{t} {next}"));
            }
        }
    }
    out
}

/// Capabilities the brief names, in order of first mention, without repeats.
pub fn capabilities_named(text: &str) -> Vec<&'static str> {
    let mut found: Vec<(usize, &'static str)> = Vec::new();
    for (position, word) in words(text).iter().enumerate() {
        for (capability, keys) in CAPABILITY_WORDS {
            if keys.contains(&word.as_str()) && !found.iter().any(|(_, c)| c == capability) {
                found.push((position, capability));
            }
        }
    }
    found.into_iter().map(|(_, c)| c).collect()
}

/// Scans a brief for composite and stakes cues.
pub fn scan(brief: &str) -> Cues {
    let lower = brief.to_lowercase();
    let w = words(brief);
    let mut cues = Cues::default();
    let lexical = |name: &str, detail: &str| Signal::new(SignalKind::Lexical, name, detail);

    for word in SEQUENCE_WORDS {
        if w.iter().any(|x| x == word) {
            cues.composite.push(lexical("sequence", word));
        }
    }
    for phrase in SEQUENCE_PHRASES {
        if lower.contains(phrase) {
            cues.composite.push(lexical("sequence", phrase));
        }
    }
    for word in RESEARCH_WORDS {
        if w.iter().any(|x| x == word) {
            cues.composite.push(lexical("research", word));
        }
    }
    for pair in w.windows(2) {
        let (a, b) = (pair[0].as_str(), pair[1].as_str());
        if matches!(a, "top" | "best" | "first") && number(b).is_some_and(|n| n > 1) {
            cues.composite.push(lexical("top_n", &format!("{a} {b}")));
        }
    }
    for phrase in EACH_PHRASES {
        if lower.contains(phrase) {
            cues.composite.push(lexical("each", phrase));
        }
    }
    let list_lines = brief
        .lines()
        .map(str::trim_start)
        .filter(|l| {
            l.starts_with("- ")
                || l.starts_with("* ")
                || l.starts_with("• ")
                || l.split_once(['.', ')']).is_some_and(|(n, rest)| {
                    !n.is_empty()
                        && n.len() <= 2
                        && n.chars().all(|c| c.is_ascii_digit())
                        && rest.starts_with(' ')
                })
        })
        .count();
    if list_lines >= 2 {
        cues.composite.push(Signal::new(
            SignalKind::Semantic,
            "list",
            format!("{list_lines} list items"),
        ));
    }
    let caps = capabilities_named(brief);
    if caps.len() >= 2 {
        cues.composite.push(Signal::new(
            SignalKind::Semantic,
            "several_capabilities",
            caps.join(", "),
        ));
    }

    let mut money_verb = false;
    for verb in MONEY_VERBS {
        if w.iter().any(|x| x == verb) {
            money_verb = true;
            cues.stakes.push(Signal::new(SignalKind::Stakes, "money_verb", *verb));
        }
    }
    let mut phrase_hit = false;
    for phrase in MONEY_PHRASES.iter().chain(KEY_PHRASES) {
        if lower.contains(phrase) {
            phrase_hit = true;
            cues.stakes.push(Signal::new(SignalKind::Stakes, "money_phrase", *phrase));
        }
    }
    cues.amounts = amounts(brief);
    for a in &cues.amounts {
        cues.stakes.push(Signal::new(SignalKind::Stakes, "amount", a.clone()));
    }
    cues.addresses = addresses(brief);
    for a in &cues.addresses {
        cues.stakes.push(Signal::new(SignalKind::Stakes, "address", a.clone()));
    }
    let has_amount = !cues.amounts.is_empty();
    let has_address = !cues.addresses.is_empty();
    cues.high_stakes =
        phrase_hit || (money_verb && (has_amount || has_address)) || (has_amount && has_address);
    cues
}

/// Halves the confidence of each axis where the heuristic flags what the
/// classification missed; records a guard signal when it does.
pub fn cross_check(c: &mut Classification, cues: &Cues) {
    if cues.says_composite() && c.decomposability.value == Decomposability::Atomic {
        c.decomposability.confidence /= 2.0;
        c.signals.push(Signal::new(
            SignalKind::Guard,
            "halved_decomposability",
            format!("heuristic saw {} composite cue(s)", cues.composite.len()),
        ));
    }
    if cues.high_stakes && c.stakes.value == Stakes::Low {
        c.stakes.confidence /= 2.0;
        c.signals.push(Signal::new(
            SignalKind::Guard,
            "halved_stakes",
            format!("heuristic saw {} stakes cue(s)", cues.stakes.len()),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{Axis, DEFAULT_THRESHOLD, Engine, Quadrant};

    const ADDR: &str = "0x52908400098527886E0F7030069857D2E4169EE7";

    fn classified(d: Decomposability, s: Stakes) -> Classification {
        Classification {
            decomposability: Axis { value: d, confidence: 0.9 },
            stakes: Axis { value: s, confidence: 0.8 },
            plan: vec![],
            reasoning: String::new(),
            signals: vec![],
            engine: Engine::Llm,
            refusal: None,
        }
    }

    #[test]
    fn finds_addresses_amounts_and_numbers() {
        assert_eq!(addresses(&format!("to {ADDR}.")), vec![ADDR.to_owned()]);
        assert!(addresses("0x1234 and 0xZZ").is_empty());
        assert!(addresses(&format!("{ADDR}00")).is_empty(), "too long is not an address");
        assert_eq!(amounts("send $5 and 0.1 USDC, or 3usdc"), ["$5", "0.1 usdc", "3usdc"]);
        assert!(amounts("the top 5 articles").is_empty());
        assert_eq!(number("five"), Some(5));
        assert_eq!(number("12"), Some(12));
        assert_eq!(number("many"), None);
    }

    #[test]
    fn composite_cues() {
        let c = scan("Translate this article to French, then summarize it");
        let names: Vec<&str> = c.composite.iter().map(|s| s.name.as_str()).collect();
        assert!(
            names.contains(&"sequence") && names.contains(&"several_capabilities"),
            "{names:?}"
        );
        assert!(scan("Find the top 5 coffee shops").says_composite());
        assert!(scan("Summarize each of these articles").says_composite());
        assert!(scan("Summarize:\n- one thing\n- another thing").says_composite());
        assert!(!scan("Summarize this article in three bullets").says_composite());
    }

    #[test]
    fn stakes_cues_need_money_and_a_target() {
        assert!(scan(&format!("Send 0.1 USDC to {ADDR}")).high_stakes);
        assert!(scan("Pay the designer $200").high_stakes);
        assert!(scan("Approve spending of my tokens for this contract").high_stakes);
        assert!(scan("Here is my seed phrase, check it").high_stakes);
        assert!(!scan("Summarize the article about how people send letters").high_stakes);
        assert!(!scan("Translate the price list to Spanish").high_stakes);
    }

    #[test]
    fn halving_in_isolation() {
        // The model said atomic / low; the brief says composite and high.
        let cues = scan(&format!("Translate the memo, then send 5 USDC to {ADDR}"));
        let mut c = classified(Decomposability::Atomic, Stakes::Low);
        cross_check(&mut c, &cues);
        assert_eq!(c.decomposability.confidence, 0.45);
        assert_eq!(c.stakes.confidence, 0.4);
        assert_eq!(
            c.decomposability.value,
            Decomposability::Atomic,
            "halving alone does not relabel"
        );
        c.settle(DEFAULT_THRESHOLD);
        assert_eq!(c.quadrant(), Quadrant::CompositeHigh);

        // Agreement leaves confidences alone.
        let mut agree = classified(Decomposability::Composite, Stakes::High);
        cross_check(&mut agree, &cues);
        assert_eq!((agree.decomposability.confidence, agree.stakes.confidence), (0.9, 0.8));
        assert!(agree.signals.is_empty());

        // Nothing flagged: nothing halved.
        let mut quiet = classified(Decomposability::Atomic, Stakes::Low);
        cross_check(&mut quiet, &scan("Summarize this article"));
        assert_eq!((quiet.decomposability.confidence, quiet.stakes.confidence), (0.9, 0.8));
    }
}
