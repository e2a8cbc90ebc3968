//! The heuristic cross-check: a pure function of the brief that looks for
//! composite cues (sequencing words, research and top-N briefs, lists, several
//! capabilities) and stakes cues (money verbs, amounts, addresses, keys).
//! Where it flags what a classifier missed, that axis's confidence halves.
//!
//! Composite cues come from the instruction only (see [`crate::reading`]):
//! "then" or "top 3" inside the material is not a cue. Stakes cues come from
//! the whole brief, material included, after look-alike letters are folded:
//! money mentioned anywhere keeps a brief from being read as low stakes.

use crate::{
    classify::{Classification, Decomposability, Signal, SignalKind, Stakes},
    reading::{MONEY_NOUNS, MONEY_ONLY_VERBS, Reading},
};

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
const EACH_PHRASES: &[&str] = &["each of", "every one of", "all of these", "all of the following"];
/// Verbs that move money wherever they appear beside an amount or address.
const MONEY_VERBS: &[&str] = &[
    "send",
    "transfer",
    "pay",
    "withdraw",
    "wire",
    "swap",
    "bridge",
    "stake",
    "deposit",
    "tip",
    "remit",
    "reimburse",
    "refund",
    "disburse",
    "airdrop",
    "venmo",
    "zelle",
    "paypal",
    "payout",
    "donate",
    "compensate",
    "lend",
    "loan",
];
const MONEY_PHRASES: &[&str] = &[
    "approve spending",
    "set allowance",
    "approve the allowance",
    "unlimited approval",
    "increase allowance",
    "setapprovalforall",
];
const KEY_PHRASES: &[&str] =
    &["private key", "seed phrase", "mnemonic", "secret key", "recovery phrase", "seed words"];
const CURRENCIES: &[&str] = &[
    "usdc", "usd", "usdt", "dai", "eth", "dollars", "dollar", "wei", "gwei", "tokens", "eur",
    "euro", "euros", "gbp", "pounds", "btc", "bitcoin", "sats", "sol", "matic", "bucks", "cents",
    "yen", "jpy", "chf", "cad", "aud", "inr", "rupees", "rubles", "dólares", "dolares", "francs",
];
const CURRENCY_SIGNS: &[char] = &['$', '€', '£', '¥', '₹', '₽', '₩', '₿'];

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

/// Amounts: a currency sign and a number (`$5`, `50€`), a number and a
/// currency (`0.1 USDC`, `5usdc`, `twenty dollars`), or a currency and a
/// number (`USDC 40`).
pub fn amounts(text: &str) -> Vec<String> {
    const TRAILING: &[char] = &[',', '.', ';', ':', '!', '?', ')'];
    let mut out = Vec::new();
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let is_num = |s: &str| {
        let s = s.trim_end_matches(TRAILING);
        let s = s.strip_suffix(['k', 'K', 'm', 'M']).unwrap_or(s);
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
            && s.chars().any(|c| c.is_ascii_digit())
    };
    let is_count = |s: &str| is_num(s) || number(&s.to_lowercase()).is_some();
    let currency = |s: &str| {
        let s = s.to_lowercase();
        let s = s.trim_end_matches(TRAILING);
        CURRENCIES.contains(&s)
    };
    for (i, t) in tokens.iter().enumerate() {
        if let Some(rest) = t.strip_prefix(CURRENCY_SIGNS)
            && is_num(rest)
        {
            out.push((*t).to_owned());
            continue;
        }
        if let Some(rest) = t.trim_end_matches(TRAILING).strip_suffix(CURRENCY_SIGNS)
            && is_num(rest)
        {
            out.push(t.trim_end_matches(TRAILING).to_owned());
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
        if is_count(t)
            && let Some(next) = tokens.get(i + 1)
            && currency(next)
        {
            let next = next.to_lowercase();
            out.push(format!("{t} {}", next.trim_end_matches(TRAILING)));
            continue;
        }
        // "USDC 40" (the currency is not also the tail of "40 USDC").
        if currency(t)
            && !tokens.get(i.wrapping_sub(1)).is_some_and(|p| is_count(p))
            && let Some(next) = tokens.get(i + 1)
            && is_num(next)
        {
            out.push(format!(
                "{} {}",
                lower.trim_end_matches(TRAILING),
                next.trim_end_matches(TRAILING)
            ));
        }
    }
    out
}

/// Scans a brief for composite and stakes cues.
pub fn scan(brief: &str) -> Cues {
    cues(&Reading::of(brief))
}

/// The cues of a brief already read.
pub fn cues(r: &Reading) -> Cues {
    let mut cues = Cues::default();
    let lexical = |name: &str, detail: &str| Signal::new(SignalKind::Lexical, name, detail);

    // Composite cues: the instruction only.
    let instruction = &r.mask[..r.instruction_end];
    for word in SEQUENCE_WORDS {
        if r.words().any(|x| x == *word) {
            cues.composite.push(lexical("sequence", word));
        }
    }
    for phrase in SEQUENCE_PHRASES {
        if instruction.contains(phrase) {
            cues.composite.push(lexical("sequence", phrase));
        }
    }
    if r.research {
        cues.composite.push(lexical("research", r.lead.as_deref().unwrap_or("top n")));
        if let Some((phrase, _)) = &r.top_n {
            cues.composite.push(lexical("top_n", phrase));
        }
    }
    for phrase in EACH_PHRASES {
        if instruction.contains(phrase) {
            cues.composite.push(lexical("each", phrase));
        }
    }
    let listed = r.fan_out().map_or(0, |(_, items)| items.len());
    if listed >= 2 {
        cues.composite.push(Signal::new(
            SignalKind::Semantic,
            "list",
            format!("{listed} list items"),
        ));
    }
    if r.steps.len() >= 2 {
        let caps: Vec<&str> = r.steps.iter().map(|s| s.capability).collect();
        cues.composite.push(Signal::new(
            SignalKind::Semantic,
            "several_capabilities",
            caps.join(", "),
        ));
    }

    // Stakes cues: the whole brief, material included.
    let lower = r.full.to_lowercase();
    let w = words(&r.full);
    let mut money_verb = false;
    for verb in MONEY_VERBS {
        if w.iter().any(|x| x == verb) {
            money_verb = true;
            cues.stakes.push(Signal::new(SignalKind::Stakes, "money_verb", *verb));
        }
    }
    let mut high = false;
    for phrase in MONEY_PHRASES.iter().chain(KEY_PHRASES) {
        if lower.contains(phrase) {
            high = true;
            cues.stakes.push(Signal::new(SignalKind::Stakes, "money_phrase", *phrase));
        }
    }
    cues.amounts = amounts(&r.full);
    for a in &cues.amounts {
        cues.stakes.push(Signal::new(SignalKind::Stakes, "amount", a.clone()));
    }
    cues.addresses = addresses(&r.full);
    for a in &cues.addresses {
        cues.stakes.push(Signal::new(SignalKind::Stakes, "address", a.clone()));
    }
    let has_amount = !cues.amounts.is_empty();
    let has_address = !cues.addresses.is_empty();
    high |= (money_verb && (has_amount || has_address)) || (has_amount && has_address);

    // A step of the instruction that pays ("reimburse Alice", "send the
    // funds to Bob"), or names an amount beside no work the rules know
    // ("settle the $40 tab with Bob", a brief in another language).
    for seg in &r.segments {
        let text = clip(r.text[seg.at.clone()].trim(), 60);
        if seg.moves_money {
            high = true;
            cues.stakes.push(Signal::new(SignalKind::Stakes, "money_step", text));
        } else if seg.amount && seg.capabilities.is_empty() && !r.research {
            high = true;
            cues.stakes.push(Signal::new(SignalKind::Stakes, "amount_without_work", text));
        }
    }
    // A money word spelled with look-alike letters is a disguise.
    for f in &r.folded {
        let read = f.read.to_lowercase();
        let money = MONEY_VERBS.contains(&read.as_str())
            || MONEY_ONLY_VERBS.contains(&read.as_str())
            || MONEY_NOUNS.contains(&read.as_str())
            || CURRENCIES.contains(&read.as_str());
        if money {
            high = true;
            cues.stakes.push(Signal::new(
                SignalKind::Stakes,
                "disguised_money_word",
                format!("{} read as {read}", f.written),
            ));
        }
    }
    cues.high_stakes = high;
    cues
}

/// At most `n` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
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
            groups: Vec::new(),
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
        assert_eq!(
            amounts("50 Euro, 20€, USDC 40, twenty dollars, 40 USDC"),
            ["50 euro", "20€", "usdc 40", "twenty dollars", "40 usdc"]
        );
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
        // Words in the material, or a planning noun after a verb, are no cue.
        assert!(!scan("Summarize this: then plan the top 3 moves").says_composite());
        assert!(!scan("Translate the business plan to French").says_composite());
    }

    #[test]
    fn stakes_cues_need_money_and_a_target() {
        assert!(scan(&format!("Send 0.1 USDC to {ADDR}")).high_stakes);
        assert!(scan("Pay the designer $200").high_stakes);
        assert!(scan("Approve spending of my tokens for this contract").high_stakes);
        assert!(scan("Here is my seed phrase, check it").high_stakes);
        assert!(!scan("Summarize the article about how people send letters").high_stakes);
        assert!(!scan("Translate the price list to Spanish").high_stakes);
        assert!(!scan("Summarize the $200 invoice").high_stakes, "an amount beside work");
        // A step that pays, with or without an amount, and verbs the old
        // list did not know.
        assert!(scan("Reimburse Alice for lunch").high_stakes);
        assert!(scan("Summarize the memo and send the funds to Bob").high_stakes);
        assert!(scan("Summarize the receipt and comp the freelancer 300 USDC").high_stakes);
        // An amount beside no work the rules know, in any language.
        assert!(scan("Überweise 50 Euro an Max").high_stakes);
        // A money verb in look-alike letters.
        let c = scan("\u{0420}\u{0430}\u{0443} the contractor");
        assert!(c.high_stakes);
        assert!(c.stakes.iter().any(|s| s.name == "disguised_money_word"));
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
        // Both below the threshold: high stakes; composite only when the
        // plan has several sub-tasks.
        let mut two = c.clone();
        c.settle(DEFAULT_THRESHOLD);
        assert_eq!(c.quadrant(), Quadrant::AtomicHigh, "no sub-tasks: not composite");
        two.plan = crate::offline::plan("Translate the memo, then summarize it").plan;
        two.settle(DEFAULT_THRESHOLD);
        assert_eq!(two.quadrant(), Quadrant::CompositeHigh);

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
