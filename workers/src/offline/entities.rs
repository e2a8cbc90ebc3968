//! `extract-entities`: rule-based entity extraction.
//!
//! Rules, applied to whitespace-separated tokens with surrounding punctuation
//! trimmed:
//!
//! - **emails**: `local@domain.tld` with a dotted domain;
//! - **urls**: `http://`, `https://` or `www.` followed by a host;
//! - **eth_addresses**: `0x` followed by exactly 40 hex digits;
//! - **amounts**: `$` amounts (`$1,250.50`, `$5k`) and USDC amounts
//!   (`25 USDC`, `0.5 USDC`, `USDC 10`);
//! - **dates**: ISO `2025-03-12` and `12 March 2025` / `March 12, 2025`,
//!   each validated and given in ISO form too;
//! - **names**: runs of two or more capitalized words (`Ada Lovelace`,
//!   `Acme Labs Inc`), not crossing punctuation, with a leading
//!   sentence-initial stop word dropped (`The Acme Labs` → `Acme Labs`) and
//!   month names and tokens used by other entities left out.
//!
//! Every list keeps the first occurrence of each value, in text order.

use serde::Serialize;

use super::{TaskInput, WorkerError, is_zero, text};

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

const SENTENCE_OPENERS: &[&str] = &[
    "yesterday",
    "today",
    "tomorrow",
    "however",
    "meanwhile",
    "later",
    "also",
    "first",
    "next",
    "finally",
    "last",
    "please",
    "dear",
    "hi",
    "hello",
    "thanks",
    "overall",
    "still",
    "sadly",
    "luckily",
    "unfortunately",
    "fortunately",
    "instead",
    "since",
    "although",
    "though",
];

/// Titles written with a period that belong to the name after them.
const TITLES: &[&str] = &["dr", "mr", "mrs", "ms", "prof", "st", "sr", "jr", "gen", "capt"];

/// A date found in the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DateEntity {
    /// The date as written.
    pub text: String,
    /// The same date as `YYYY-MM-DD`.
    pub iso: String,
}

/// Result of `extract-entities`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Entities {
    /// Capitalized multi-word names of people, organisations and places.
    pub names: Vec<String>,
    /// Email addresses.
    pub emails: Vec<String>,
    /// URLs.
    pub urls: Vec<String>,
    /// Money amounts in dollars or USDC, as written.
    pub amounts: Vec<String>,
    /// Ethereum addresses.
    pub eth_addresses: Vec<String>,
    /// Dates.
    pub dates: Vec<DateEntity>,
    /// Sentences of the material dropped as instructions aimed at agents or
    /// the judge (their text is not repeated); omitted from JSON when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub withheld_sentences: usize,
}

#[derive(Debug)]
struct Token<'a> {
    /// The token with surrounding punctuation trimmed.
    core: &'a str,
    /// Punctuation after the core ends a run of capitalized words.
    breaks_after: bool,
    /// The token ends a sentence (or is the first token).
    ends_sentence: bool,
    /// Claimed by an entity other than a name.
    used: bool,
}

/// Extracts entities from the task material.
pub fn extract_entities(input: &TaskInput<'_>) -> Result<Entities, WorkerError> {
    let material = input.material_for("extract-entities")?;
    let mut tokens = tokenize(&material.text);
    if tokens.is_empty() {
        return Err(WorkerError::EmptyMaterial { capability: "extract-entities" });
    }
    let mut found = Entities::default();
    for token in &mut tokens {
        let core = token.core;
        let list = if is_email(core) {
            &mut found.emails
        } else if is_url(core) {
            &mut found.urls
        } else if is_eth_address(core) {
            &mut found.eth_addresses
        } else {
            continue;
        };
        push_unique(list, core.to_owned());
        token.used = true;
    }
    find_amounts(&mut tokens, &mut found.amounts);
    find_dates(&mut tokens, &mut found.dates);
    find_names(&tokens, &mut found.names);
    found.withheld_sentences = material.withheld.len();
    Ok(found)
}

fn tokenize(text: &str) -> Vec<Token<'_>> {
    text.split_whitespace()
        .filter_map(|raw| {
            let rest = raw.trim_start_matches(['(', '[', '{', '"', '\'', '“', '‘', '<', '*']);
            let core = rest.trim_end_matches(|c: char| {
                matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | ')' | ']' | '}' | '"' | '\'')
                    || matches!(c, '”' | '’' | '>' | '*')
            });
            if core.is_empty() {
                return None;
            }
            // Keep a title's period ("Dr. Ng") so it neither ends the name nor the sentence.
            let core = match rest.get(..core.len() + 1) {
                Some(with_dot) if with_dot.ends_with('.') && is_title(core) => with_dot,
                _ => core,
            };
            let tail = &rest[core.len()..];
            Some(Token {
                core,
                breaks_after: !tail.is_empty(),
                ends_sentence: tail.contains(['.', '!', '?']),
                used: false,
            })
        })
        .collect()
}

fn is_title(word: &str) -> bool {
    TITLES.contains(&word.to_lowercase().as_str())
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    let local_ok = !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-'));
    let labels: Vec<&str> = domain.split('.').collect();
    local_ok
        && labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()))
}

fn is_url(s: &str) -> bool {
    let rest = ["https://", "http://", "www."].iter().find_map(|p| {
        s.get(..p.len()).filter(|h| h.eq_ignore_ascii_case(p)).map(|_| &s[p.len()..])
    });
    rest.is_some_and(|r| {
        let host = r.split(['/', '?', '#']).next().unwrap_or("");
        host.contains('.')
            && host.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | ':'))
    })
}

fn is_eth_address(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|hex| hex.len() == 40 && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `1,250.50`, `5`, `0.25`, `5k`, `2.5M`: digits with optional thousands
/// separators, decimals and a k/m/b suffix.
fn is_number(s: &str) -> bool {
    let s = s.strip_suffix(['k', 'K', 'm', 'M', 'b', 'B']).unwrap_or(s);
    let (whole, frac) = s.split_once('.').unwrap_or((s, "0"));
    !whole.is_empty()
        && whole.starts_with(|c: char| c.is_ascii_digit())
        && whole.chars().all(|c| c.is_ascii_digit() || c == ',')
        && !frac.is_empty()
        && frac.chars().all(|c| c.is_ascii_digit())
}

fn find_amounts(tokens: &mut [Token<'_>], amounts: &mut Vec<String>) {
    for i in 0..tokens.len() {
        if tokens[i].used {
            continue;
        }
        let core = tokens[i].core;
        if core.strip_prefix('$').is_some_and(is_number) {
            push_unique(amounts, core.to_owned());
            tokens[i].used = true;
        } else if is_number(core) && !tokens[i].breaks_after {
            let Some(next) = tokens.get(i + 1) else { continue };
            if next.core.eq_ignore_ascii_case("usdc") {
                push_unique(amounts, format!("{core} {}", next.core));
                tokens[i].used = true;
                tokens[i + 1].used = true;
            }
        } else if core.eq_ignore_ascii_case("usdc") && !tokens[i].breaks_after {
            let Some(next) = tokens.get(i + 1).filter(|t| is_number(t.core)) else { continue };
            push_unique(amounts, format!("{core} {}", next.core));
            tokens[i].used = true;
            tokens[i + 1].used = true;
        }
    }
}

fn month_number(word: &str) -> Option<u32> {
    let lower = word.to_lowercase();
    let full = MONTHS.iter().position(|m| *m == lower);
    let short = || {
        (lower.len() >= 3).then(|| MONTHS.iter().position(|m| m.get(..3) == Some(&lower))).flatten()
    };
    full.or_else(short).map(|p| p as u32 + 1)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn iso(year: u32, month: u32, day: u32) -> Option<String> {
    let valid = (1000..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day);
    valid.then(|| format!("{year:04}-{month:02}-{day:02}"))
}

fn parse_iso(s: &str) -> Option<String> {
    let mut parts = s.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    iso(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
}

fn parse_day(s: &str) -> Option<u32> {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &s[digits.len()..];
    let ok_suffix = matches!(suffix, "" | "st" | "nd" | "rd" | "th");
    (ok_suffix && (1..=2).contains(&digits.len())).then(|| digits.parse().ok()).flatten()
}

fn find_dates(tokens: &mut [Token<'_>], dates: &mut Vec<DateEntity>) {
    let mut i = 0;
    while i < tokens.len() {
        if let Some(iso) = parse_iso(tokens[i].core) {
            push_unique(dates, DateEntity { text: tokens[i].core.to_owned(), iso });
            tokens[i].used = true;
            i += 1;
            continue;
        }
        let Some(window) = tokens.get(i..i + 3) else { break };
        let year = window[2].core.parse::<u32>().ok();
        // "12 March 2025" or "March 12, 2025".
        let parsed = match (parse_day(window[0].core), month_number(window[1].core)) {
            (Some(day), Some(month)) => year.and_then(|y| iso(y, month, day)),
            _ => match (month_number(window[0].core), parse_day(window[1].core)) {
                (Some(month), Some(day)) => year.and_then(|y| iso(y, month, day)),
                _ => None,
            },
        };
        match parsed {
            Some(iso) => {
                let text = window.iter().map(|t| t.core).collect::<Vec<_>>().join(" ");
                let text = if window[1].core.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("{} {}, {}", window[0].core, window[1].core, window[2].core)
                } else {
                    text
                };
                push_unique(dates, DateEntity { text, iso });
                for t in &mut tokens[i..i + 3] {
                    t.used = true;
                }
                i += 3;
            }
            None => i += 1,
        }
    }
}

fn is_capitalized(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
        && chars.all(|c| c.is_alphabetic() || matches!(c, '\'' | '’' | '-' | '.' | '&'))
}

/// Capitalized only because they open a sentence: stop words and common
/// openers such as "Yesterday" or "However".
fn is_sentence_opener(lower: &str) -> bool {
    text::is_stop_word(lower) || SENTENCE_OPENERS.contains(&lower)
}

fn find_names(tokens: &[Token<'_>], names: &mut Vec<String>) {
    let mut run: Vec<&str> = Vec::new();
    let mut at_start = false;
    let flush = |run: &mut Vec<&str>, at_start: bool, names: &mut Vec<String>| {
        if at_start && run.first().is_some_and(|w| is_sentence_opener(&w.to_lowercase())) {
            run.remove(0);
        }
        if run.len() >= 2 {
            push_unique(names, run.join(" "));
        }
        run.clear();
    };
    for (i, token) in tokens.iter().enumerate() {
        let sentence_start = i == 0 || tokens[i - 1].ends_sentence;
        let nameable = !token.used
            && is_capitalized(token.core)
            && !MONTHS.contains(&token.core.to_lowercase().as_str());
        if nameable {
            if run.is_empty() {
                at_start = sentence_start;
            }
            run.push(token.core);
            if token.breaks_after {
                flush(&mut run, at_start, names);
            }
        } else {
            flush(&mut run, at_start, names);
        }
    }
    flush(&mut run, at_start, names);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(text: &str) -> Entities {
        extract_entities(&TaskInput::new("Extract entities").with_source(text)).unwrap()
    }

    #[test]
    fn extracts_every_kind_from_a_brief() {
        let e = extract(
            "The Acme Labs team hired Ada Lovelace on 12 March 2025. \
             Contact her at ada.lovelace@acme.io or see https://acme.io/team. \
             The budget is $1,250.50 plus 300 USDC, paid to \
             0x52908400098527886E0F7030069857D2E4169EE7 by 2025-04-01. \
             Grace Hopper joined on March 3, 2025 (budget USDC 12.5).",
        );
        assert_eq!(e.names, ["Acme Labs", "Ada Lovelace", "Grace Hopper"]);
        assert_eq!(e.emails, ["ada.lovelace@acme.io"]);
        assert_eq!(e.urls, ["https://acme.io/team"]);
        assert_eq!(e.amounts, ["$1,250.50", "300 USDC", "USDC 12.5"]);
        assert_eq!(e.eth_addresses, ["0x52908400098527886E0F7030069857D2E4169EE7"]);
        let dates: Vec<_> = e.dates.iter().map(|d| (d.text.as_str(), d.iso.as_str())).collect();
        assert_eq!(
            dates,
            [
                ("12 March 2025", "2025-03-12"),
                ("2025-04-01", "2025-04-01"),
                ("March 3, 2025", "2025-03-03")
            ]
        );
    }

    #[test]
    fn rejects_near_misses() {
        let e = extract(
            "Bad: user@localhost, 0x1234, 2025-02-30, 31 April 2025, ftp://x.org, $abc. \
             In Paris we met. Yesterday Bob said hi.",
        );
        assert_eq!(e, Entities::default());
    }

    #[test]
    fn names_do_not_cross_punctuation_and_deduplicate() {
        let e = extract("We met Alan Turing, Grace Hopper and Alan Turing again at New York.");
        assert_eq!(e.names, ["Alan Turing", "Grace Hopper", "New York"]);
        let e = extract("This Monday Night Football game was fun.");
        assert_eq!(e.names, ["Monday Night Football"]);
        let e = extract("Dr. Ng met Prof. Ada Byron. Yesterday Bob Smith left.");
        assert_eq!(e.names, ["Dr. Ng", "Prof. Ada Byron", "Bob Smith"]);
    }

    #[test]
    fn unicode_names_and_www_urls() {
        let e = extract("Émile Zola wrote to José García via www.example.es/contacto today.");
        assert_eq!(e.names, ["Émile Zola", "José García"]);
        assert_eq!(e.urls, ["www.example.es/contacto"]);
    }

    #[test]
    fn empty_material_is_an_error() {
        let e = extract_entities(&TaskInput::new("Extract:")).unwrap_err();
        assert_eq!(e, WorkerError::EmptyMaterial { capability: "extract-entities" });
    }
}
