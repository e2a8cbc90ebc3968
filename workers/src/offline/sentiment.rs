//! `sentiment-classify`: lexicon sentiment with negation and intensifiers.
//!
//! Each lexicon word carries a weight in -3..=3. An intensifier directly
//! before it ("very", "extremely") scales it up, a downtoner ("slightly")
//! scales it down, and a negator ("not", "never", "-n't") up to three words
//! before it in the same clause flips it and damps it (`NEGATION_FACTOR`), so
//! "not good" is mildly negative. The sum `s` is squashed into (-1, 1) as
//! `s / sqrt(s² + 15)`; the label is positive at ≥ 0.05, negative at ≤ -0.05,
//! neutral between.

use serde::Serialize;

use super::{TaskInput, WorkerError, is_zero, text};

const NEGATION_FACTOR: f64 = -0.75;
const NEGATION_SCOPE: usize = 3;
const SQUASH_ALPHA: f64 = 15.0;
const THRESHOLD: f64 = 0.05;

const LEXICON: &[(&str, f64)] = &[
    ("good", 2.0),
    ("great", 3.0),
    ("excellent", 3.0),
    ("amazing", 3.0),
    ("awesome", 3.0),
    ("fantastic", 3.0),
    ("wonderful", 3.0),
    ("outstanding", 3.0),
    ("superb", 3.0),
    ("perfect", 3.0),
    ("love", 3.0),
    ("loved", 3.0),
    ("loves", 3.0),
    ("like", 1.5),
    ("liked", 1.5),
    ("enjoy", 2.0),
    ("enjoyed", 2.0),
    ("happy", 2.0),
    ("pleased", 2.0),
    ("glad", 2.0),
    ("nice", 2.0),
    ("fine", 1.0),
    ("helpful", 2.0),
    ("useful", 2.0),
    ("reliable", 2.0),
    ("fast", 1.5),
    ("quick", 1.5),
    ("easy", 1.5),
    ("clean", 1.0),
    ("clear", 1.0),
    ("smooth", 1.5),
    ("impressive", 2.5),
    ("recommend", 2.0),
    ("recommended", 2.0),
    ("best", 3.0),
    ("better", 1.5),
    ("beautiful", 2.5),
    ("brilliant", 3.0),
    ("satisfied", 2.0),
    ("success", 2.0),
    ("successful", 2.0),
    ("win", 2.0),
    ("works", 1.0),
    ("friendly", 2.0),
    ("affordable", 1.5),
    ("cheap", 0.5),
    ("thanks", 1.5),
    ("thank", 1.5),
    ("delighted", 3.0),
    ("positive", 2.0),
    ("solid", 1.5),
    ("efficient", 2.0),
    ("accurate", 2.0),
    ("bad", -2.0),
    ("terrible", -3.0),
    ("awful", -3.0),
    ("horrible", -3.0),
    ("poor", -2.0),
    ("worst", -3.0),
    ("worse", -2.0),
    ("hate", -3.0),
    ("hated", -3.0),
    ("dislike", -2.0),
    ("disappointed", -2.5),
    ("disappointing", -2.5),
    ("sad", -2.0),
    ("angry", -2.5),
    ("annoying", -2.0),
    ("annoyed", -2.0),
    ("slow", -1.5),
    ("broken", -2.5),
    ("bug", -1.5),
    ("bugs", -1.5),
    ("buggy", -2.0),
    ("crash", -2.5),
    ("crashes", -2.5),
    ("crashed", -2.5),
    ("fail", -2.0),
    ("failed", -2.0),
    ("fails", -2.0),
    ("failure", -2.5),
    ("useless", -3.0),
    ("expensive", -1.5),
    ("overpriced", -2.0),
    ("late", -1.5),
    ("problem", -1.5),
    ("problems", -1.5),
    ("issue", -1.0),
    ("issues", -1.0),
    ("error", -1.5),
    ("errors", -1.5),
    ("wrong", -2.0),
    ("confusing", -2.0),
    ("difficult", -1.5),
    ("hard", -1.0),
    ("ugly", -2.5),
    ("rude", -2.5),
    ("scam", -3.0),
    ("unreliable", -2.5),
    ("waste", -2.5),
    ("refund", -1.0),
    ("lost", -1.5),
    ("unhappy", -2.5),
    ("negative", -2.0),
    ("frustrating", -2.5),
    ("frustrated", -2.5),
    ("mediocre", -1.5),
    ("boring", -2.0),
];

const INTENSIFIERS: &[(&str, f64)] = &[
    ("very", 1.5),
    ("really", 1.5),
    ("extremely", 2.0),
    ("incredibly", 2.0),
    ("so", 1.3),
    ("super", 1.5),
    ("truly", 1.5),
    ("absolutely", 2.0),
    ("highly", 1.5),
    ("totally", 1.5),
    ("quite", 1.2),
    ("slightly", 0.5),
    ("somewhat", 0.5),
    ("barely", 0.4),
    ("fairly", 0.8),
    ("kinda", 0.6),
    ("rather", 0.8),
];

const NEGATORS: &[&str] = &[
    "not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "without", "hardly",
    "cannot",
];

/// Overall polarity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SentimentLabel {
    /// Score at least 0.05.
    Positive,
    /// Score at most -0.05.
    Negative,
    /// Score in between, or no sentiment words at all.
    Neutral,
}

/// One lexicon hit and what it contributed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SentimentTerm {
    /// The words involved, e.g. `"not very good"`.
    pub phrase: String,
    /// Contribution to the raw sum, rounded to three decimals.
    pub weight: f64,
}

/// Result of `sentiment-classify`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sentiment {
    /// Positive, negative or neutral.
    pub label: SentimentLabel,
    /// Normalized score in [-1, 1], rounded to three decimals.
    pub score: f64,
    /// Lexicon hits in order of appearance.
    pub terms: Vec<SentimentTerm>,
    /// Sentences of the material dropped as instructions aimed at agents or
    /// the judge (their text is not repeated); omitted from JSON when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub withheld_sentences: usize,
}

/// Classifies the sentiment of the task material.
pub fn classify_sentiment(input: &TaskInput<'_>) -> Result<Sentiment, WorkerError> {
    let material = input.material_for("sentiment-classify")?;
    let clauses = clauses(&material.text);
    if clauses.iter().all(Vec::is_empty) {
        return Err(WorkerError::EmptyMaterial { capability: "sentiment-classify" });
    }
    let mut terms = Vec::new();
    for words in &clauses {
        for (i, word) in words.iter().enumerate() {
            let Some(&(_, base)) = LEXICON.iter().find(|(w, _)| w == word) else { continue };
            let mut weight = base;
            let mut first = i;
            if let Some(&(_, factor)) =
                i.checked_sub(1).and_then(|p| INTENSIFIERS.iter().find(|(w, _)| *w == words[p]))
            {
                weight *= factor;
                first = i - 1;
            }
            let scope = i.saturating_sub(NEGATION_SCOPE)..first;
            if let Some(neg) = scope.rev().find(|&j| is_negator(&words[j])) {
                weight *= NEGATION_FACTOR;
                first = neg;
            }
            terms.push(SentimentTerm { phrase: words[first..=i].join(" "), weight });
        }
    }
    let sum: f64 = terms.iter().map(|t| t.weight).sum();
    let score = sum / (sum * sum + SQUASH_ALPHA).sqrt();
    let label = if score >= THRESHOLD {
        SentimentLabel::Positive
    } else if score <= -THRESHOLD {
        SentimentLabel::Negative
    } else {
        SentimentLabel::Neutral
    };
    for term in &mut terms {
        term.weight = text::round3(term.weight);
    }
    Ok(Sentiment {
        label,
        score: text::round3(score),
        terms,
        withheld_sentences: material.withheld.len(),
    })
}

fn is_negator(word: &str) -> bool {
    NEGATORS.contains(&word) || word.ends_with("n't") || word.ends_with("n’t")
}

/// Lowercase words grouped by clause: negation does not reach across
/// punctuation or "but".
fn clauses(text: &str) -> Vec<Vec<String>> {
    text.split(['.', ',', ';', ':', '!', '?', '\n'])
        .flat_map(|clause| {
            let words = text::words(clause);
            let mut parts: Vec<Vec<String>> = vec![Vec::new()];
            for w in words {
                if w == "but" {
                    parts.push(Vec::new());
                } else if let Some(last) = parts.last_mut() {
                    last.push(w);
                }
            }
            parts
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(text: &str) -> Sentiment {
        classify_sentiment(&TaskInput::new("Classify").with_source(text)).unwrap()
    }

    #[test]
    fn positive_review() {
        let s = classify("The service was excellent and the staff were very friendly.");
        assert_eq!(s.label, SentimentLabel::Positive);
        assert_eq!(s.score, 0.84);
        let phrases: Vec<_> = s.terms.iter().map(|t| (t.phrase.as_str(), t.weight)).collect();
        assert_eq!(phrases, [("excellent", 3.0), ("very friendly", 3.0)]);
    }

    #[test]
    fn negation_flips_and_damps() {
        let s = classify("The food was not good.");
        assert_eq!(s.label, SentimentLabel::Negative);
        assert_eq!(s.terms[0].phrase, "not good");
        assert_eq!(s.terms[0].weight, -1.5);
        assert_eq!(s.score, -0.361);
        let s = classify("It isn't very bad");
        assert_eq!(s.terms[0].phrase, "isn't very bad");
        assert_eq!(s.terms[0].weight, 2.25);
        assert_eq!(s.label, SentimentLabel::Positive);
    }

    #[test]
    fn negation_stops_at_clause_boundaries() {
        let s = classify("Not cheap, but great support");
        let phrases: Vec<_> = s.terms.iter().map(|t| t.phrase.as_str()).collect();
        assert_eq!(phrases, ["not cheap", "great"]);
        assert_eq!(s.label, SentimentLabel::Positive);
    }

    #[test]
    fn negative_and_neutral_texts() {
        let s = classify("Terrible experience. The app crashes constantly and support was rude!");
        assert_eq!(s.label, SentimentLabel::Negative);
        assert_eq!(s.score, -0.9);
        let s = classify("The meeting is on Tuesday at the office.");
        assert_eq!((s.label, s.score), (SentimentLabel::Neutral, 0.0));
        assert_eq!(serde_json::to_value(&s).unwrap()["score"].to_string(), "0.0");
        assert!(s.terms.is_empty());
    }

    #[test]
    fn unicode_text_and_empty_material() {
        let s = classify("Café was great — très bien! 👍");
        assert_eq!(s.label, SentimentLabel::Positive);
        let e = classify_sentiment(&TaskInput::new("Classify:").with_source("🙂 …")).unwrap_err();
        assert_eq!(e, WorkerError::EmptyMaterial { capability: "sentiment-classify" });
    }

    #[test]
    fn score_stays_in_range() {
        let s = classify(&"absolutely perfect, ".repeat(50));
        assert!(s.score <= 1.0 && s.score > 0.99, "{}", s.score);
        let s = classify(&"extremely terrible. ".repeat(50));
        assert!(s.score >= -1.0 && s.score < -0.99, "{}", s.score);
    }
}
