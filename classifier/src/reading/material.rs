//! Material and words: quoted spans, where the material after a colon or
//! blank line starts, the text/mask pair a reading works on, and the
//! instruction's words with their ranges.

use std::ops::Range;

use super::{Token, is_head, names_capability, words::*};
use crate::normalize;

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '\'' | ';' | '’')
}

/// Words of `mask[at]` with their ranges, lowercased, trimmed of joiners.
pub fn tokens(mask: &str, at: Range<usize>) -> Vec<Token> {
    let mut out = Vec::new();
    let text = &mask[at.clone()];
    let mut start = None;
    let mut push = |s: usize, e: usize| {
        let raw = &text[s..e];
        let trimmed = raw.trim_start_matches(['-', '\'', ';', '’']);
        let lead = raw.len() - trimmed.len();
        let trimmed = trimmed.trim_end_matches(['-', '\'', ';', '’']);
        if !trimmed.is_empty() {
            let from = at.start + s + lead;
            out.push(Token {
                at: from..from + trimmed.len(),
                word: trimmed.to_lowercase().replace('’', "'"),
            });
        }
    };
    for (i, c) in text.char_indices() {
        match (word_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push(s, i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push(s, text.len());
    }
    out
}

/// Quoted spans of `brief` (byte ranges of what is between the quotes)
/// holding at least one letter.
pub(super) fn quote_spans(brief: &str) -> Vec<Range<usize>> {
    const PAIRS: &[(char, &[char])] = &[
        ('"', &['"', '”']),
        ('“', &['”', '“']),
        ('„', &['“', '”']),
        ('«', &['»']),
        ('‹', &['›']),
        ('‘', &['’']),
        ('\'', &['\'']),
        ('`', &['`']),
    ];
    let mut out = Vec::new();
    // Openers with no closer after them: none after a later one either.
    let mut unclosed: Vec<char> = Vec::new();
    let mut i = 0;
    while i < brief.len() {
        let rest = &brief[i..];
        let Some(c) = rest.chars().next() else { break };
        if rest.starts_with("```")
            && let Some(end) = rest[3..].find("```")
        {
            out.push(i + 3..i + 3 + end);
            i += 3 + end + 3;
            continue;
        }
        let Some((_, closers)) = PAIRS.iter().find(|(o, _)| *o == c && !unclosed.contains(o))
        else {
            i += c.len_utf8();
            continue;
        };
        let before = brief[..i].chars().next_back();
        let after = rest[c.len_utf8()..].chars().next();
        // A single quote or apostrophe opens only at the start of a word.
        let apostrophe_like = matches!(c, '\'' | '‘');
        if apostrophe_like
            && (before.is_some_and(|b| b.is_alphanumeric())
                || after.is_none_or(char::is_whitespace))
        {
            i += c.len_utf8();
            continue;
        }
        let body = i + c.len_utf8();
        let mut close = None;
        for (k, d) in brief[body..].char_indices() {
            if !closers.contains(&d) {
                continue;
            }
            let next = brief[body + k + d.len_utf8()..].chars().next();
            let closes_word = !matches!(d, '\'' | '’') || next.is_none_or(|n| !n.is_alphanumeric());
            if closes_word {
                close = Some((body + k, d.len_utf8()));
                break;
            }
        }
        match close {
            Some((end, len)) => {
                if brief[body..end].chars().any(char::is_alphabetic) {
                    out.push(body..end);
                }
                i = end + len;
            }
            None => {
                unclosed.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The brief with its quoted spans left out (what the rules may read of an
/// instruction candidate).
pub(super) fn unquoted(brief: &str, quotes: &[Range<usize>], upto: usize) -> String {
    let mut out = String::new();
    let mut from = 0;
    for q in quotes.iter().filter(|q| q.start < upto) {
        out.push_str(&brief[from..q.start]);
        out.push(' ');
        from = q.end.min(upto);
    }
    out.push_str(&brief[from.min(upto)..upto]);
    out
}

/// Where material after a colon, blank line or list starts: `(instruction
/// end, material start)` in `brief`.
pub(super) fn material_split(
    brief: &str,
    quotes: &[Range<usize>],
    latin: bool,
) -> Option<(usize, usize)> {
    let mut fallback = None;
    let mut candidates = 0;
    let mut quote = quotes.iter().peekable();
    for (at, c) in brief.char_indices() {
        if !matches!(c, ':' | '：' | '\n') {
            continue;
        }
        while quote.next_if(|q| q.end <= at).is_some() {}
        if quote.peek().is_some_and(|q| q.start <= at) {
            continue;
        }
        // Bounded work on briefs made of colons and lines.
        if candidates == MAX_SPLIT_CANDIDATES {
            break;
        }
        let after = at + c.len_utf8();
        let rest = &brief[after..];
        let (is_colon, cut) = match c {
            ':' | '：' if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
                (true, after)
            }
            '\n' => {
                let next_line = rest.trim_start_matches([' ', '\t', '\r']);
                let blank = next_line.starts_with('\n');
                if !(blank || list_item(next_line.lines().next().unwrap_or("")).is_some()) {
                    continue;
                }
                (false, after)
            }
            _ => continue,
        };
        let tail = brief[cut..].trim();
        if tail.is_empty() {
            continue;
        }
        candidates += 1;
        let head = normalize::fold(&unquoted(brief, quotes, at), latin).text;
        if names_capability(&head) {
            return Some((at, cut));
        }
        // A short label before long material ("Here is the article: …").
        if is_colon && fallback.is_none() && tail.len() > 80 && head.split_whitespace().count() <= 6
        {
            let tail_lower = normalize::fold(tail, latin).text.to_lowercase();
            let toks = tokens(&tail_lower, 0..tail_lower.len());
            let first = toks.iter().position(|t| !FILLERS.contains(&t.word.as_str()));
            let verb_first = first.is_some_and(|i| {
                let w = toks[i].word.as_str();
                is_head(&toks, i)
                    || RESEARCH_VERBS.contains(&w)
                    || GENERAL_VERBS.contains(&w)
                    || CREATION_VERBS.contains(&w)
            });
            if !verb_first {
                fallback = Some((at, cut));
            }
        }
    }
    fallback
}

/// `(text, mask, instruction end, material start, quoted spans used)`.
pub(super) fn assemble(
    brief: &str,
    quotes: &[Range<usize>],
    split: Option<(usize, usize)>,
    latin: bool,
) -> (String, String, usize, Option<usize>, usize) {
    let instruction_end = split.map_or(brief.len(), |(end, _)| end);
    let mut quotes: Vec<Range<usize>> =
        quotes.iter().filter(|q| q.end <= instruction_end).cloned().collect();
    // Quotes holding the whole instruction are not material.
    if !unquoted(brief, &quotes, instruction_end).chars().any(char::is_alphabetic) {
        quotes.clear();
    }
    let mut text = String::with_capacity(brief.len());
    let mut mask = String::with_capacity(brief.len());
    let push_instruction = |text: &mut String, mask: &mut String, s: &str| {
        let folded = normalize::fold(s, latin).text;
        mask.push_str(&folded.to_ascii_lowercase());
        text.push_str(&folded);
    };
    let push_material = |text: &mut String, mask: &mut String, s: &str| {
        text.push_str(s);
        mask.extend(std::iter::repeat_n(' ', s.len()));
    };
    let mut from = 0;
    for q in &quotes {
        push_instruction(&mut text, &mut mask, &brief[from..q.start]);
        push_material(&mut text, &mut mask, &brief[q.clone()]);
        from = q.end;
    }
    push_instruction(&mut text, &mut mask, &brief[from..instruction_end]);
    let end = text.len();
    let material_start = split.map(|(_, cut)| {
        push_instruction(&mut text, &mut mask, &brief[instruction_end..cut]);
        let start = text.len();
        push_material(&mut text, &mut mask, &brief[cut..]);
        start
    });
    (text, mask, end, material_start, quotes.len())
}

/// A bulleted or numbered list item's text.
pub fn list_item(line: &str) -> Option<&str> {
    let l = line.trim();
    for bullet in ["- ", "* ", "• "] {
        if let Some(rest) = l.strip_prefix(bullet) {
            return Some(rest.trim()).filter(|r| !r.is_empty());
        }
    }
    let (n, rest) = l.split_once(['.', ')'])?;
    (!n.is_empty()
        && n.len() <= 2
        && n.chars().all(|c| c.is_ascii_digit())
        && rest.starts_with(' '))
    .then(|| rest.trim())
    .filter(|r| !r.is_empty())
}
