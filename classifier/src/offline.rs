//! The offline planner: deterministic rules that classify a brief and propose
//! a plan with no model and no network. The rules, in the order they apply:
//!
//! 1. **Raw transfer.** Stakes cues that add up to money at risk (a money verb
//!    with an amount or an address, an allowance or key phrase) and no work
//!    capability named: atomic / high, no sub-tasks, and a refusal that says
//!    Tessera pays registered agents for work and never sends funds to an
//!    arbitrary address.
//! 2. **Chain.** The instruction splits on sequencing words (`then`, `after
//!    that`, `followed by`, `and finally`), or names several capabilities in
//!    one sentence ("translate … and summarize …"): one sub-task per
//!    capability in order of mention, each depending on the one before.
//! 3. **Fan-out.** "each of these three articles", "these 4 reviews", or a
//!    bulleted / numbered list: one sub-task per item, in parallel.
//! 4. **Research / top-N.** `research`, `compare`, `plan`, `top N`: N parallel
//!    research summaries (3 when no number is given) and a final summary that
//!    depends on all of them.
//! 5. **Single capability.** One sub-task, atomic.
//! 6. **Nothing recognized.** Atomic with no sub-tasks and a low confidence.
//!
//! Stakes are high whenever the heuristic's stakes cues add up to money at
//! risk, whatever the rule. The result then goes through the same cross-check
//! and caution rules as a model's answer.

use crate::{
    classify::{
        Axis, Classification, Decomposability, Engine, ProposedSubTask, Signal, SignalKind, Stakes,
    },
    heuristic::{self, Cues, capabilities_named, number},
};

/// Seconds each proposed sub-task gets.
pub const DEFAULT_DEADLINE_SECS: u64 = 3600;
/// Research briefs with no number get this many candidates.
pub const DEFAULT_RESEARCH_WIDTH: u32 = 3;
/// Most parallel items a fan-out or research plan proposes.
pub const MAX_FAN_OUT: u32 = 12;

const SEPARATORS: &[&str] = &[
    ", and then ",
    " and then ",
    ", then ",
    "; then ",
    ". then ",
    " then ",
    ", after that ",
    ". after that ",
    " after that ",
    ", followed by ",
    " followed by ",
    ", and finally ",
    " and finally ",
    ". finally ",
];
const ITEM_NOUNS: &[&str] = &[
    "articles",
    "documents",
    "texts",
    "reviews",
    "posts",
    "emails",
    "reports",
    "papers",
    "pages",
    "stories",
    "paragraphs",
    "messages",
    "items",
    "links",
    "files",
];

/// The part of a brief that is instruction rather than material: everything
/// before a colon that introduces a longer text, or the whole brief.
pub fn instruction(brief: &str) -> &str {
    match brief.find(':') {
        Some(at) if brief[at + 1..].trim().len() > 80 => brief[..at].trim(),
        _ => brief.trim(),
    }
}

fn sentence_case(s: &str) -> String {
    let s = s.trim().trim_end_matches(['.', ',', ';']).trim();
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn subtask(index: u32, capability: &str, spec: String, depends_on: Vec<u32>) -> ProposedSubTask {
    ProposedSubTask {
        index,
        capability: capability.to_owned(),
        spec,
        estimated_cost: None,
        deadline_offset_secs: DEFAULT_DEADLINE_SECS,
        depends_on,
    }
}

/// Splits the instruction into clauses on sequencing words.
fn clauses(text: &str) -> Vec<String> {
    let mut parts = vec![text.to_owned()];
    for sep in SEPARATORS {
        parts = parts
            .into_iter()
            .flat_map(|p| {
                let lower = p.to_lowercase();
                let mut out = Vec::new();
                let mut start = 0;
                while let Some(found) = lower[start..].find(sep) {
                    out.push(p[start..start + found].to_owned());
                    start += found + sep.len();
                }
                out.push(p[start..].to_owned());
                out
            })
            .filter(|p| !p.trim().is_empty())
            .collect();
    }
    parts
}

/// How many items a fan-out brief names ("each of these three articles").
fn fan_out_count(text: &str) -> Option<u32> {
    let w = heuristic::words(text);
    for (i, word) in w.iter().enumerate() {
        if ITEM_NOUNS.contains(&word.as_str())
            && let Some(n) = i.checked_sub(1).and_then(|j| number(&w[j])).filter(|n| *n > 1)
        {
            return Some(n.min(MAX_FAN_OUT));
        }
    }
    None
}

/// Bulleted or numbered list items of a brief.
fn list_items(brief: &str) -> Vec<String> {
    brief
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            for bullet in ["- ", "* ", "• "] {
                if let Some(rest) = l.strip_prefix(bullet) {
                    return Some(rest.trim().to_owned());
                }
            }
            let (n, rest) = l.split_once(['.', ')'])?;
            (!n.is_empty()
                && n.len() <= 2
                && n.chars().all(|c| c.is_ascii_digit())
                && rest.starts_with(' '))
            .then(|| rest.trim().to_owned())
        })
        .filter(|i| !i.is_empty())
        .collect()
}

/// Classifies `brief` and proposes a plan by the rules above.
pub fn plan(brief: &str) -> Classification {
    let cues = heuristic::scan(brief);
    let mut c = propose(brief, &cues);
    c.signals.splice(0..0, cues.composite.iter().chain(&cues.stakes).cloned());
    c
}

fn propose(brief: &str, cues: &Cues) -> Classification {
    let head = instruction(brief);
    let named = capabilities_named(head);
    let stakes = if cues.high_stakes {
        Axis { value: Stakes::High, confidence: 0.9 }
    } else if cues.stakes.is_empty() {
        Axis { value: Stakes::Low, confidence: 0.85 }
    } else {
        Axis { value: Stakes::Low, confidence: 0.6 }
    };
    let result = |d: Decomposability,
                  conf: f64,
                  plan: Vec<ProposedSubTask>,
                  rule: &str,
                  reasoning: String| {
        Classification {
            decomposability: Axis { value: d, confidence: conf },
            stakes,
            plan,
            reasoning,
            signals: vec![Signal::new(SignalKind::Semantic, "offline_rule", rule)],
            engine: Engine::Offline,
            refusal: None,
        }
    };

    let research = cues.composite.iter().any(|s| s.name == "research" || s.name == "top_n");
    // 1. A raw transfer.
    if cues.high_stakes && named.is_empty() && !research {
        let to = cues.addresses.first().map_or("an address".to_owned(), Clone::clone);
        let mut c = result(
            Decomposability::Atomic,
            0.8,
            Vec::new(),
            "raw_transfer",
            "The brief asks to move money, not for work an agent can deliver.".into(),
        );
        c.stakes = Axis { value: Stakes::High, confidence: 0.95 };
        c.refusal = Some(format!(
            "Tessera pays registered agents for sub-tasks they deliver, within the plan's spend cap; \
             it does not send funds to {to} or any other arbitrary address."
        ));
        return c;
    }

    // 2. A chain.
    let all_clauses = clauses(head);
    let parts: Vec<(String, &'static str)> = all_clauses
        .iter()
        .filter_map(|clause| capabilities_named(clause).first().map(|cap| (clause.clone(), *cap)))
        .collect();
    // A money step beside the work ("…, then pay 40 USDC to 0x…") is dropped
    // from the plan: the work is still several steps, one of them refused.
    let dropped_money_step =
        cues.high_stakes && all_clauses.len() > parts.len() && !parts.is_empty();
    let chain: Vec<(String, &'static str)> = if parts.len() >= 2 {
        parts.clone()
    } else if named.len() >= 2 && !research {
        named.iter().map(|cap| (head.to_owned(), *cap)).collect()
    } else {
        Vec::new()
    };
    if chain.len() >= 2 {
        let plan = chain
            .iter()
            .enumerate()
            .map(|(i, (clause, cap))| {
                let spec = if chain.iter().all(|(c, _)| c == clause) {
                    format!("{} ({cap} step)", sentence_case(clause))
                } else {
                    sentence_case(clause)
                };
                let deps = if i == 0 { vec![] } else { vec![i as u32 - 1] };
                subtask(i as u32, cap, spec, deps)
            })
            .collect::<Vec<_>>();
        let steps: Vec<&str> = chain.iter().map(|(_, c)| *c).collect();
        return result(
            Decomposability::Composite,
            0.85,
            plan,
            "chain",
            format!(
                "A sequence of {} steps: {}; each step works on the previous one's output.",
                steps.len(),
                steps.join(" → ")
            ),
        );
    }

    // 3. A fan-out over items.
    let items = list_items(brief);
    let count = fan_out_count(head)
        .or_else(|| (items.len() >= 2).then(|| (items.len() as u32).min(MAX_FAN_OUT)));
    if let (Some(n), Some(cap), false) = (count, named.first(), research) {
        let plan = (0..n)
            .map(|k| {
                let spec = match items.get(k as usize) {
                    Some(item) => {
                        format!("{} — item {} of {n}: {item}", sentence_case(head), k + 1)
                    }
                    None => format!("{} — item {} of {n}", sentence_case(head), k + 1),
                };
                subtask(k, cap, spec, vec![])
            })
            .collect();
        return result(
            Decomposability::Composite,
            0.8,
            plan,
            "fan_out",
            format!("The same `{cap}` work on {n} separate items, in parallel."),
        );
    }

    // 4. Research / top-N.
    if research {
        let n = cues
            .composite
            .iter()
            .find(|s| s.name == "top_n")
            .and_then(|s| s.detail.split_whitespace().nth(1).and_then(number))
            .unwrap_or(DEFAULT_RESEARCH_WIDTH)
            .min(MAX_FAN_OUT);
        let topic = sentence_case(head);
        let mut plan: Vec<ProposedSubTask> = (0..n)
            .map(|k| {
                subtask(
                    k,
                    "summarize",
                    format!("Research candidate {} of {n} for: {topic}", k + 1),
                    vec![],
                )
            })
            .collect();
        plan.push(subtask(
            n,
            "summarize",
            format!("Combine the {n} findings into a ranked shortlist for: {topic}"),
            (0..n).collect(),
        ));
        return result(
            Decomposability::Composite,
            0.75,
            plan,
            "research",
            format!(
                "A research brief: {n} candidates looked at in parallel, then one combined answer."
            ),
        );
    }

    // 5. One capability.
    if let Some(cap) = named.first() {
        let (clause, d) = match (dropped_money_step, parts.first()) {
            (true, Some((clause, _))) => (clause.as_str(), Decomposability::Composite),
            _ => (head, Decomposability::Atomic),
        };
        let mut c = result(
            d,
            0.85,
            vec![subtask(0, cap, sentence_case(clause), vec![])],
            "single",
            format!("One `{cap}` task."),
        );
        if dropped_money_step {
            c.reasoning.push_str(
                " The brief also asks to move money; that step is not a sub-task — Tessera pays \
                 only the registered agents doing the work.",
            );
            c.signals.push(Signal::new(
                SignalKind::Guard,
                "transfer_dropped",
                "a money step is not planned",
            ));
        }
        return c;
    }

    // 6. Nothing recognized: neither axis is known.
    let mut c = result(
        Decomposability::Atomic,
        0.3,
        Vec::new(),
        "unrecognized",
        "No capability the registry knows (translate, summarize, sentiment-classify, \
         extract-entities) is named; write the plan by hand or rephrase the brief."
            .into(),
    );
    c.stakes.confidence = c.stakes.confidence.min(0.3);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_splits_on_then() {
        let c = plan("Translate this article to French, then summarize it in three bullets");
        let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        assert_eq!(caps, ["translate", "summarize"]);
        assert_eq!(c.plan[1].depends_on, vec![0]);
        assert_eq!(c.plan[0].spec, "Translate this article to French");
        assert_eq!(c.decomposability.value, Decomposability::Composite);
    }

    #[test]
    fn fan_out_counts_items() {
        let c = plan("Summarize each of these three articles");
        assert_eq!(c.plan.len(), 3);
        assert!(c.plan.iter().all(|s| s.capability == "summarize" && s.depends_on.is_empty()));
        let listed = plan("Summarize these:\n- the budget memo\n- the tax memo");
        assert_eq!(listed.plan.len(), 2);
        assert!(listed.plan[1].spec.ends_with("the tax memo"), "{:?}", listed.plan[1].spec);
    }

    #[test]
    fn research_fans_in() {
        let c = plan("Research the top 5 open-source vector databases");
        assert_eq!(c.plan.len(), 6);
        assert_eq!(c.plan[5].depends_on, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn raw_transfer_is_refused() {
        let c = plan("Send 0.1 USDC to 0x52908400098527886E0F7030069857D2E4169EE7");
        assert_eq!(c.stakes.value, Stakes::High);
        assert!(c.plan.is_empty());
        assert!(c.refusal.as_deref().unwrap().contains("does not send funds to 0x5290"));
    }

    #[test]
    fn material_after_a_colon_is_not_instruction() {
        let brief = "Summarize this: The council met on Monday and then voted to translate every \
                     form into Spanish, which critics said would cost too much money overall.";
        let c = plan(brief);
        assert_eq!(c.plan.len(), 1, "{:?}", c.plan);
        assert_eq!(c.plan[0].capability, "summarize");
    }
}
