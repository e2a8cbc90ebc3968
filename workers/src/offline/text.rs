//! Text helpers shared by the offline capabilities.

/// English stop words: ignored when scoring sentences and when deciding
/// whether a capitalized sentence-initial word starts a name.
pub(crate) const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "may",
    "might",
    "must",
    "shall",
    "our",
    "us",
    "many",
    "much",
];

/// Whether `word` (lowercase) is a stop word.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// Abbreviations whose trailing period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "prof", "sr", "jr", "st", "vs", "fig", "approx", "dept", "mt", "gen",
    "col", "lt", "sgt", "rev", "hon", "capt", "cf", "al",
];

const TERMINATORS: [char; 7] = ['.', '!', '?', '…', '。', '！', '？'];
const CLOSERS: [char; 7] = ['"', '\'', ')', ']', '”', '’', '»'];
const BULLETS: [char; 4] = ['-', '*', '•', '–'];

/// Splits text into sentences.
///
/// A sentence ends at `.`, `!`, `?` or `…` (plus any closing quotes or
/// brackets) followed by whitespace and a character that is not a lowercase
/// letter, or at the end of the text; CJK full stops end a sentence outright.
/// A period after a known abbreviation (`Dr.`, `e.g.`, `U.S.`, an initial like
/// `J.`) does not end one. Blank lines and bullet lines also separate
/// sentences. Bullet markers are dropped and whitespace is collapsed.
pub(crate) fn split_sentences(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut sentences = Vec::new();
    let mut current = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            let start = i;
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            let newlines = chars[start..i].iter().filter(|&&c| c == '\n').count();
            let next_is_bullet =
                i + 1 < chars.len() && BULLETS.contains(&chars[i]) && chars[i + 1].is_whitespace();
            if newlines >= 2 || newlines == 1 && next_is_bullet {
                push_sentence(&mut sentences, &mut current);
            } else {
                current.push(' ');
            }
            continue;
        }
        current.push(c);
        i += 1;
        if !TERMINATORS.contains(&c) {
            continue;
        }
        while i < chars.len() && (TERMINATORS.contains(&chars[i]) || CLOSERS.contains(&chars[i])) {
            current.push(chars[i]);
            i += 1;
        }
        if matches!(c, '。' | '！' | '？') {
            push_sentence(&mut sentences, &mut current);
            continue;
        }
        let Some(&after) = chars.get(i) else { break };
        if !after.is_whitespace() {
            continue;
        }
        let next = chars[i..].iter().find(|c| !c.is_whitespace());
        let starts_new = next.is_none_or(|n| !n.is_lowercase());
        if starts_new && !(c == '.' && ends_with_abbreviation(&current)) {
            push_sentence(&mut sentences, &mut current);
        }
    }
    push_sentence(&mut sentences, &mut current);
    sentences
}

fn push_sentence(sentences: &mut Vec<String>, current: &mut String) {
    let mut s = current.trim();
    if let Some(rest) = s.strip_prefix(BULLETS).filter(|r| r.starts_with(char::is_whitespace)) {
        s = rest.trim_start();
    }
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().any(char::is_alphanumeric) {
        sentences.push(s);
    }
    current.clear();
}

fn ends_with_abbreviation(sentence: &str) -> bool {
    let last = sentence.rsplit(char::is_whitespace).next().unwrap_or("");
    let last = last.trim_start_matches(['(', '[', '"', '\'', '“']).trim_end_matches(CLOSERS);
    let Some(stem) = last.strip_suffix('.') else { return false };
    let lower = stem.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return true;
    }
    // A single-letter initial ("J.") or dotted letters ("e.g", "U.S").
    !stem.is_empty()
        && stem.split('.').all(|part| part.chars().count() == 1)
        && stem.chars().all(|c| c.is_alphabetic() || c == '.')
}

/// Lowercase words: runs of letters and digits, keeping inner apostrophes
/// (`don't`) and hyphens (`well-known`).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let joiner = matches!(c, '\'' | '’' | '-')
            && !current.is_empty()
            && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if c.is_alphanumeric() || joiner {
            current.extend(c.to_lowercase());
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Rounds to three decimals, the precision all offline scores are reported in.
pub(crate) fn round3(x: f64) -> f64 {
    // `+ 0.0` turns -0.0 (e.g. an empty float sum) into 0.0 so JSON shows `0.0`.
    (x * 1000.0).round() / 1000.0 + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_terminators_but_not_abbreviations() {
        let text = "Dr. Smith arrived at 9 a.m. today. He met Mr. J. Doe, e.g. at the U.S. office! \
                    Was it useful? Yes… \"Quite.\" The end";
        assert_eq!(
            split_sentences(text),
            [
                "Dr. Smith arrived at 9 a.m. today.",
                "He met Mr. J. Doe, e.g. at the U.S. office!",
                "Was it useful?",
                "Yes…",
                "\"Quite.\"",
                "The end",
            ]
        );
    }

    #[test]
    fn keeps_decimals_and_lowercase_continuations() {
        assert_eq!(
            split_sentences("Growth was 3.5 percent. costs fell, i.e. a win.\nNext line."),
            ["Growth was 3.5 percent. costs fell, i.e. a win.", "Next line."]
        );
    }

    #[test]
    fn splits_paragraphs_bullets_and_cjk() {
        let text =
            "Intro line\n\nSecond para\n- bullet one\n* bullet two\n\n今日は晴れ。明日は雨！";
        assert_eq!(
            split_sentences(text),
            ["Intro line", "Second para", "bullet one", "bullet two", "今日は晴れ。", "明日は雨！"]
        );
        assert!(split_sentences("  \n ... ").is_empty());
    }

    #[test]
    fn words_are_lowercase_with_inner_joiners() {
        assert_eq!(
            words("Don't re-run the 'well-known' Café-test, OK?"),
            ["don't", "re-run", "the", "well-known", "café-test", "ok"]
        );
    }
}
