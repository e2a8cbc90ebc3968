//! `summarize`: extractive summary by sentence scoring.
//!
//! Sentences are scored by the mean normalized term frequency of their content
//! words (stop words dropped; a word's weight is its count in the whole text
//! divided by the count of the most frequent word), damped for fragments of
//! fewer than four content words, plus a small bonus for appearing early. The
//! top N sentences are returned as bullets in their original order; ties go to
//! the earlier sentence.

use std::collections::HashMap;

use serde::Serialize;

use super::{TaskInput, WorkerError, is_zero, text};

/// Sentences returned when the spec does not ask for a number.
pub const DEFAULT_SENTENCES: usize = 3;

/// Most sentences a spec may ask for.
const MAX_SENTENCES: usize = 20;

/// Weight of the position bonus: the first sentence gets this much extra,
/// falling linearly to zero for the last.
const POSITION_WEIGHT: f64 = 0.1;

/// Content words below which a sentence's score is scaled down.
const FULL_LENGTH: usize = 4;

const COUNT_NOUNS: &[&str] = &[
    "bullet",
    "bullets",
    "sentence",
    "sentences",
    "point",
    "points",
    "line",
    "lines",
    "item",
    "items",
];

const NUMBER_WORDS: &[&str] =
    &["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];

/// Result of `summarize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The selected sentences, in original order.
    pub bullets: Vec<String>,
    /// The bullets as a Markdown list, one `- ` line each.
    pub text: String,
    /// Zero-based positions of the selected sentences in the material.
    pub selected: Vec<usize>,
    /// Number of sentences in the material.
    pub sentence_count: usize,
    /// Sentences of the material dropped as instructions aimed at agents or
    /// the judge (their text is not repeated); omitted from JSON when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub withheld_sentences: usize,
}

/// Summarizes the task material into N bullets (N from the spec, e.g.
/// "three bullets" or "2 sentences", else [`DEFAULT_SENTENCES`]).
pub fn summarize(input: &TaskInput<'_>) -> Result<Summary, WorkerError> {
    let material = input.material_for("summarize")?;
    let sentences = text::split_sentences(&material.text);
    if sentences.is_empty() {
        return Err(WorkerError::EmptyMaterial { capability: "summarize" });
    }
    let wanted = requested_count(input.spec).unwrap_or(DEFAULT_SENTENCES);

    let content: Vec<Vec<String>> = sentences
        .iter()
        .map(|s| text::words(s).into_iter().filter(|w| !text::is_stop_word(w)).collect())
        .collect();
    let mut freq: HashMap<&str, usize> = HashMap::new();
    for word in content.iter().flatten() {
        *freq.entry(word.as_str()).or_default() += 1;
    }
    let max = freq.values().copied().max().unwrap_or(1) as f64;

    let n = sentences.len() as f64;
    let mut scored: Vec<(usize, f64)> = content
        .iter()
        .enumerate()
        .map(|(i, words)| {
            let position = POSITION_WEIGHT * (n - i as f64) / n;
            if words.is_empty() {
                return (i, position);
            }
            let tf: f64 = words.iter().map(|w| freq[w.as_str()] as f64 / max).sum();
            let mean = tf / words.len() as f64;
            let length = words.len().min(FULL_LENGTH) as f64 / FULL_LENGTH as f64;
            (i, mean * length + position)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut selected: Vec<usize> = scored.iter().take(wanted).map(|&(i, _)| i).collect();
    selected.sort_unstable();

    let bullets: Vec<String> = selected.iter().map(|&i| sentences[i].clone()).collect();
    let text = bullets.iter().map(|b| format!("- {b}")).collect::<Vec<_>>().join("\n");
    Ok(Summary {
        bullets,
        text,
        selected,
        sentence_count: sentences.len(),
        withheld_sentences: material.withheld.len(),
    })
}

/// The number of sentences the spec asks for, if it says so: a number (digits
/// or one..ten) directly before "bullets", "sentences", "points", "lines" or
/// "items". Clamped to 1..=20.
fn requested_count(spec: &str) -> Option<usize> {
    let words = text::words(spec);
    words.windows(2).find_map(|pair| {
        if !COUNT_NOUNS.contains(&pair[1].as_str()) {
            return None;
        }
        let n = pair[0]
            .parse::<usize>()
            .ok()
            .or_else(|| NUMBER_WORDS.iter().position(|w| *w == pair[0]).map(|p| p + 1))?;
        Some(n.clamp(1, MAX_SENTENCES))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "Tessera settles agent work through an on-chain escrow. \
        Workers register capabilities in the registry. \
        The weather was pleasant on Tuesday. \
        Each task escrow holds the payment until the work is delivered. \
        Dr. Lee noted that escrow disputes go to an arbiter, e.g. when work is late. \
        Lunch was served at noon. \
        The escrow releases payment to workers after delivery.";

    #[test]
    fn picks_the_top_sentences_in_original_order() {
        let input = TaskInput::new("Summarize in three bullets").with_source(REPORT);
        let s = summarize(&input).unwrap();
        assert_eq!(s.sentence_count, 7);
        assert_eq!(
            s.bullets,
            [
                "Tessera settles agent work through an on-chain escrow.",
                "Each task escrow holds the payment until the work is delivered.",
                "The escrow releases payment to workers after delivery.",
            ]
        );
        assert_eq!(s.selected, [0, 3, 6]);
        assert!(s.text.starts_with("- Tessera settles") && s.text.matches("\n- ").count() == 2);
    }

    #[test]
    fn reads_the_count_from_the_spec() {
        let bullets = |spec| summarize(&TaskInput::new(spec).with_source(REPORT)).unwrap().bullets;
        assert_eq!(bullets("Give 1 sentence").len(), 1);
        assert_eq!(bullets("five points please").len(), 5);
        assert_eq!(bullets("summarize it").len(), DEFAULT_SENTENCES);
        assert_eq!(bullets("in 50 sentences").len(), 7);
        assert_eq!(requested_count("in 0 bullets"), Some(1));
        assert_eq!(requested_count("top bullets"), None);
    }

    #[test]
    fn one_sentence_and_abbreviations() {
        let s = summarize(&TaskInput::new("Summarize: Dr. Who met Prof. X in the U.S. today."))
            .unwrap();
        assert_eq!(s.bullets, ["Dr. Who met Prof. X in the U.S. today."]);
        assert_eq!(s.sentence_count, 1);
    }

    #[test]
    fn works_on_unicode_and_upstream_inputs() {
        let inputs = vec![
            "Le café est ouvert. Le café sert du thé. Il pleut.".to_owned(),
            "Über café Kultur wird viel geschrieben.".to_owned(),
        ];
        let s = summarize(&TaskInput::new("2 bullets").with_inputs(&inputs)).unwrap();
        assert_eq!(s.sentence_count, 4);
        assert_eq!(s.bullets, ["Le café est ouvert.", "Le café sert du thé."]);
    }

    #[test]
    fn empty_material_is_an_error() {
        let e = summarize(&TaskInput::new("Summarize:").with_source("  ")).unwrap_err();
        assert_eq!(e, WorkerError::EmptyMaterial { capability: "summarize" });
    }
}
