//! The offline planner: deterministic rules that classify a brief and propose
//! a plan with no model and no network. The brief is read first (see
//! [`crate::reading`]): look-alike letters folded, the instruction set apart
//! from its material, the instruction cut into steps by the verbs it uses.
//! Then the rules, in the order they apply:
//!
//! 0. **Goals.** Numbered goals (`1. …`, `2. …`), at least one of several
//!    steps: each goal planned by the rules below, a goal of several steps
//!    as a nested plan (see [`crate::goals`]).
//! 1. **Research / top-N.** The brief leads with a research verb (`research`,
//!    `find`, `compare`, `plan`…) and names no capability of its own or asks
//!    for the top N; or it names no capability, asks for the top N and points
//!    at no material: N parallel research summaries (3 when no number is
//!    given) and a final summary that depends on all of them.
//! 2. **Chain.** Several steps, split on sequencing words (`then`, `after
//!    that`, `followed by`, `and finally`) or on a new capability verb after
//!    `and` or a comma ("translate … and summarize …"): one sub-task per step
//!    in order, each depending on the one before.
//! 3. **Fan-out.** One capability over separate items: "each of these three
//!    articles", "these 4 reviews", or a list the instruction points at in the
//!    plural: one sub-task per item, in parallel.
//! 4. **Single capability.** One sub-task.
//! 5. **Raw transfer.** No work named, but the stakes cues add up to money at
//!    risk: no sub-tasks, and a refusal that says Tessera pays registered
//!    agents for work and never sends funds to an arbitrary address.
//! 6. **Nothing recognized.** No capability matched (a brief in another
//!    language, a request the registry has no capability for): no sub-tasks
//!    and a plain "pick a capability by hand" naming some of the catalogue's
//!    capabilities, never a guessed plan.
//!
//! A step is the rules' own capability or, when the catalogue says so, one
//! somebody offers: every segment of the instruction is matched against the
//! catalogue's names, descriptions and phrasings (see
//! [`crate::catalogue_match`]), so a capability no rule knows is planned
//! when a brief asks for it ("Write a haiku about autumn leaves, then
//! translate it to French" → `haiku-write`, then `translate`), and each
//! sub-task keeps the brief's words that chose it (`chosen_by`). Without a
//! catalogue ([`plan`]) only the built-in capabilities are matched.
//!
//! The shape follows the plan: a plan with 0 or 1 sub-task is atomic, one
//! with 2 or more is composite. Stakes are high whenever the heuristic's
//! stakes cues add up to money at risk, whatever the rule; an unrecognized
//! brief's stakes are unknown, so its low confidence lets the caution rules
//! read it as high. A step that moves money beside the work is left out of
//! the plan and said so. The result then goes through the same cross-check
//! and caution rules as a model's answer.

use tessera_bindings::catalogue::Catalogue;

use crate::{
    catalogue_match::Matcher,
    classify::{
        Axis, Classification, Decomposability, Engine, ProposedSubTask, Signal, SignalKind, Stakes,
    },
    heuristic::{self, Cues},
    llm::MAX_SPEC_BYTES,
    reading::Reading,
    steps::{self, PlannedStep},
};

pub use crate::reading::MAX_FAN_OUT;

/// Seconds each proposed sub-task gets.
pub const DEFAULT_DEADLINE_SECS: u64 = 3600;
/// Research briefs with no number get this many candidates.
pub const DEFAULT_RESEARCH_WIDTH: u32 = 3;
/// The capabilities the rules can plan on their own.
pub const KNOWN_CAPABILITIES: &[&str] =
    &["translate", "summarize", "sentiment-classify", "extract-entities"];
/// Most capability names the "pick one by hand" answer lists.
pub const MAX_PICK_NAMES: usize = 12;

/// The part of a brief that is instruction rather than material (see
/// [`crate::reading`]).
pub fn instruction(brief: &str) -> String {
    Reading::of(brief).instruction().to_owned()
}

fn sentence_case(s: &str) -> String {
    let s = s.trim().trim_end_matches(['.', ',', ';', ':']).trim();
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A spec no longer than an executor accepts.
pub(crate) fn bounded(mut spec: String) -> String {
    if spec.len() > MAX_SPEC_BYTES {
        let mut at = MAX_SPEC_BYTES - '…'.len_utf8();
        while !spec.is_char_boundary(at) {
            at -= 1;
        }
        spec.truncate(at);
        spec.push('…');
    }
    spec
}

/// `instruction` with the brief's material after a colon, when it has some:
/// the executor of a first step needs the text it works on.
fn with_material(instruction: String, r: &Reading) -> String {
    match r.material() {
        Some(m) => format!("{instruction}: {m}"),
        None => instruction,
    }
}

fn subtask(
    index: u32,
    capability: &str,
    spec: String,
    depends_on: Vec<u32>,
    chosen_by: &[String],
) -> ProposedSubTask {
    ProposedSubTask {
        index,
        capability: capability.to_owned(),
        spec: bounded(spec),
        estimated_cost: None,
        deadline_offset_secs: DEFAULT_DEADLINE_SECS,
        depends_on,
        path: None,
        chosen_by: chosen_by.to_vec(),
    }
}

/// The offline rules on a brief already read (no signals added); `None`
/// when it names no work (no step, research or otherwise).
pub(crate) fn plan_reading(r: &Reading, m: &Matcher) -> Option<Classification> {
    let steps = steps::resolve(r, m);
    (!steps.is_empty()).then(|| propose(r, &heuristic::cues(r), &steps, m))
}

/// Classifies `brief` and proposes a plan by the rules above, matching only
/// the built-in capabilities (see [`plan_with`]).
pub fn plan(brief: &str) -> Classification {
    plan_with(brief, &Catalogue::builtins())
}

/// Classifies `brief` and proposes a plan by the rules above, its steps
/// matched against `catalogue` as well as the rules' own verbs.
///
/// The payload (material sent beside the brief) is not an argument: the
/// rules read only the brief, so nothing in the payload can steer the plan.
pub fn plan_with(brief: &str, catalogue: &Catalogue) -> Classification {
    let m = Matcher::new(catalogue);
    let r = Reading::of(brief);
    let cues = heuristic::cues(&r);
    let steps = steps::resolve(&r, &m);
    let mut c = propose(&r, &cues, &steps, &m);
    let mut head: Vec<Signal> = cues.composite.iter().chain(&cues.stakes).cloned().collect();
    if !r.folded.is_empty() {
        let words: Vec<String> =
            r.folded.iter().take(5).map(|f| format!("{} → {}", f.written, f.read)).collect();
        head.push(Signal::new(
            SignalKind::Guard,
            "homoglyphs",
            format!(
                "{} word(s) spelled with look-alike or hidden characters, read as Latin: {}",
                r.folded.len(),
                words.join(", ")
            ),
        ));
    }
    c.signals.splice(0..0, head);
    c
}

fn propose(r: &Reading, cues: &Cues, steps: &[PlannedStep], m: &Matcher) -> Classification {
    let stakes = if cues.high_stakes {
        Axis { value: Stakes::High, confidence: 0.9 }
    } else if cues.stakes.is_empty() {
        Axis { value: Stakes::Low, confidence: 0.85 }
    } else {
        Axis { value: Stakes::Low, confidence: 0.6 }
    };
    let result = |conf: f64, plan: Vec<ProposedSubTask>, rule: &str, reasoning: String| {
        let d = if plan.len() >= 2 { Decomposability::Composite } else { Decomposability::Atomic };
        Classification {
            decomposability: Axis { value: d, confidence: conf },
            stakes,
            plan,
            groups: Vec::new(),
            reasoning,
            signals: vec![Signal::new(SignalKind::Semantic, "offline_rule", rule)],
            engine: Engine::Offline,
            refusal: None,
        }
    };
    // 0. Numbered goals, some of several steps: nested plans.
    if let Some(g) = crate::goals::plan(&r.text, |goal| plan_reading(goal, m).map(|c| c.plan)) {
        let mut c = result(0.8, g.plan, "goals", g.reasoning);
        c.groups = g.groups;
        return c;
    }
    let instruction = sentence_case(r.instruction());
    // Steps that pay, or name an amount beside no work (research plans,
    // which return first, may name a budget).
    let money_steps = r
        .segments
        .iter()
        .filter(|s| s.moves_money || (s.amount && s.capabilities.is_empty()))
        .count();

    // 1. Research / top-N.
    if steps::research(r, steps) {
        let n = r.top_n.as_ref().map_or(DEFAULT_RESEARCH_WIDTH, |(_, n)| *n).min(MAX_FAN_OUT);
        let topic = with_material(instruction, r);
        let by = steps::research_words(r);
        let mut plan: Vec<ProposedSubTask> = (0..n)
            .map(|k| {
                subtask(
                    k,
                    "summarize",
                    format!("Research candidate {} of {n} for: {topic}", k + 1),
                    vec![],
                    &by,
                )
            })
            .collect();
        plan.push(subtask(
            n,
            "summarize",
            format!("Combine the {n} findings into a ranked shortlist for: {topic}"),
            (0..n).collect(),
            &by,
        ));
        return result(
            0.75,
            plan,
            "research",
            format!(
                "A research brief: {n} candidates looked at in parallel, then one combined answer."
            ),
        );
    }

    // 2. A chain.
    if steps.len() >= 2 {
        let plan: Vec<ProposedSubTask> = steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let clause = sentence_case(&r.text[step.at.clone()]);
                let spec = if step.shared {
                    format!("{clause} ({} step)", step.capability)
                } else {
                    clause
                };
                let spec = if i == 0 { with_material(spec, r) } else { spec };
                let deps = if i == 0 { vec![] } else { vec![i as u32 - 1] };
                subtask(i as u32, &step.capability, spec, deps, &step.chosen_by)
            })
            .collect();
        let steps: Vec<&str> = steps.iter().map(|s| s.capability.as_str()).collect();
        let mut c = result(
            0.85,
            plan,
            "chain",
            format!(
                "A sequence of {} steps: {}; each step works on the previous one's output.",
                steps.len(),
                steps.join(" → ")
            ),
        );
        note_dropped_money(&mut c, money_steps);
        return c;
    }

    if let Some(step) = steps.first() {
        let cap = step.capability.as_str();
        let by = &step.chosen_by;
        // 3. A fan-out over items.
        if let Some((n, items)) = r.fan_out() {
            let plan = (0..n)
                .map(|k| {
                    let spec = match items.get(k as usize) {
                        Some(item) => format!("{instruction} — item {} of {n}: {item}", k + 1),
                        None => with_material(format!("{instruction} — item {} of {n}", k + 1), r),
                    };
                    subtask(k, cap, spec, vec![], by)
                })
                .collect();
            let mut c = result(
                0.8,
                plan,
                "fan_out",
                format!("The same `{cap}` work on {n} separate items, in parallel."),
            );
            note_dropped_money(&mut c, money_steps);
            return c;
        }

        // 4. One capability: its own segment when a money step is left out.
        let spec =
            if money_steps > 0 { sentence_case(&r.text[step.at.clone()]) } else { instruction };
        let mut c = result(
            0.85,
            vec![subtask(0, cap, with_material(spec, r), vec![], by)],
            "single",
            format!("One `{cap}` task."),
        );
        note_dropped_money(&mut c, money_steps);
        return c;
    }

    // 5. A raw transfer.
    if cues.high_stakes {
        let to = cues.addresses.first().map_or("an address".to_owned(), Clone::clone);
        let mut c = result(
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

    // 6. Nothing recognized: a manual pick, not a guess. Neither axis is
    // known; the low stakes confidence lets the caution rules read it as high.
    let why = if r.latin {
        "No capability matched"
    } else {
        "No capability matched (the brief looks written in a language the offline rules do not read)"
    };
    let (names, more) = m.names(MAX_PICK_NAMES);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    let mut c = result(
        0.3,
        Vec::new(),
        "unrecognized",
        format!("{why}: pick one by hand ({}{more}) or rephrase the brief.", names.join(", ")),
    );
    c.signals.push(Signal::new(
        SignalKind::Guard,
        "needs_manual_pick",
        "no capability matched; no plan proposed",
    ));
    c.stakes.confidence = c.stakes.confidence.min(0.3);
    c
}

/// Says that a step moving money was left out of the plan.
fn note_dropped_money(c: &mut Classification, money_steps: usize) {
    if money_steps == 0 {
        return;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{DEFAULT_THRESHOLD, Quadrant};

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

    /// The plan's capabilities and the quadrant after the caution rules.
    fn settled(brief: &str) -> (Vec<String>, Quadrant, Classification) {
        let mut c = plan(brief);
        heuristic::cross_check(&mut c, &heuristic::scan(brief));
        c.settle(DEFAULT_THRESHOLD);
        (c.plan.iter().map(|s| s.capability.clone()).collect(), c.quadrant(), c)
    }

    #[test]
    fn a_planning_word_noun_does_not_make_a_research_plan() {
        // Used to be four research summaries and no translation.
        let (caps, q, c) = settled("Translate the business plan to French");
        assert_eq!((caps, q), (vec!["translate".to_owned()], Quadrant::AtomicLow));
        assert_eq!(c.plan[0].spec, "Translate the business plan to French");
        let (caps, q, _) = settled("Summarize the top 3 takeaways of the quarterly report");
        assert_eq!((caps, q), (vec!["summarize".to_owned()], Quadrant::AtomicLow));
        let (caps, _, _) = settled("What is the tone of the project plan?");
        assert_eq!(caps, ["sentiment-classify"]);
        // "Top N" is research when the brief asks to find or research.
        let (caps, q, _) = settled("Find the top 3 coffee roasters in Lisbon");
        assert_eq!((caps.len(), q), (4, Quadrant::CompositeLow));
        let (caps, _, _) = settled("Plan a three-day trip to Porto");
        assert_eq!(caps.len(), 4);
    }

    #[test]
    fn material_is_not_scanned_as_instructions() {
        // After a colon, even when short.
        let (caps, q, c) = settled(
            "Summarize this article: The city will plan a new tram line, then research the top 3 routes.",
        );
        assert_eq!((caps, q), (vec!["summarize".to_owned()], Quadrant::AtomicLow));
        assert!(
            c.plan[0].spec.ends_with("research the top 3 routes."),
            "material kept in the spec"
        );
        assert!(!c.signals.iter().any(|s| s.name == "sequence" || s.name == "research"));
        // In quotes.
        let (caps, q, c) = settled(
            "Translate \"Plan the top 3 launches, then summarize the results\" into Italian",
        );
        assert_eq!((caps, q), (vec!["translate".to_owned()], Quadrant::AtomicLow));
        assert!(c.plan[0].spec.contains("\"Plan the top 3 launches"), "{}", c.plan[0].spec);
        // Outside the quotes the instruction still chains.
        let (caps, _, _) = settled(
            "Translate \u{AB}research the top 3 vendors\u{BB} to English, then summarize it",
        );
        assert_eq!(caps, ["translate", "summarize"]);
    }

    #[test]
    fn an_unrecognized_brief_is_a_manual_pick_not_a_composite() {
        for brief in [
            "Traduis ce document en anglais, s'il te plaît",
            "Переведи этот текст на английский",
            "この記事を要約してください",
            "Make it better",
        ] {
            let (caps, q, c) = settled(brief);
            assert!(caps.is_empty(), "{brief}");
            assert_eq!(q, Quadrant::AtomicHigh, "{brief}: zero sub-tasks is not composite");
            assert!(c.needs_manual_pick(), "{brief}");
            assert!(c.signals.iter().any(|s| s.name == "needs_manual_pick"), "{brief}");
            assert!(c.reasoning.contains("pick one by hand"), "{}", c.reasoning);
        }
    }

    #[test]
    fn look_alike_letters_neither_fool_the_rules_nor_lower_the_stakes() {
        // A Cyrillic "а" in "Summarize".
        let (caps, q, c) = settled("Summ\u{0430}rize the quarterly report");
        assert_eq!((caps, q), (vec!["summarize".to_owned()], Quadrant::AtomicLow));
        assert!(c.signals.iter().any(|s| s.name == "homoglyphs"));
        // A Cyrillic "ѕеnd" beside work: the money step still makes it high.
        let (caps, q, _) = settled("Translate the memo and \u{0455}\u{0435}nd 30 USDC to Bob");
        assert_eq!((caps, q), (vec!["translate".to_owned()], Quadrant::AtomicHigh));
        // A Greek and Cyrillic "Pay" with no amount at all.
        let (_, q, c) = settled("\u{03A1}\u{0430}\u{0443} the contractor for the logo");
        assert_eq!(q, Quadrant::AtomicHigh);
        assert!(c.refusal.is_some() && c.stakes.confidence >= DEFAULT_THRESHOLD);
    }

    #[test]
    fn unfamiliar_money_verbs_are_high_stakes() {
        for brief in [
            "Summarize the receipt and reimburse Alice 30 USDC",
            "Summarize the receipt and refund the customer 15 USDC",
            "Translate the memo, then settle the $40 tab with Bob",
            "Summarize the receipt and comp the freelancer 300 USDC",
        ] {
            let (caps, q, c) = settled(brief);
            assert_eq!(caps.len(), 1, "{brief}: the money step is not planned");
            assert_eq!(q, Quadrant::AtomicHigh, "{brief}");
            assert!(c.signals.iter().any(|s| s.name == "transfer_dropped"), "{brief}");
        }
        for brief in ["Reimburse Alice for the team lunch", "Überweise 50 Euro an Max"] {
            let (caps, q, c) = settled(brief);
            assert!(caps.is_empty() && c.refusal.is_some(), "{brief}");
            assert_eq!(q, Quadrant::AtomicHigh, "{brief}");
        }
    }

    #[test]
    fn a_composite_label_needs_two_sub_tasks() {
        // The money step is dropped: one sub-task left, so atomic.
        let c = plan(
            "Summarize the invoice, then pay 40 USDC to 0x52908400098527886E0F7030069857D2E4169EE7",
        );
        assert_eq!(c.plan.len(), 1);
        assert_eq!(c.decomposability.value, Decomposability::Atomic);
        assert_eq!(c.stakes.value, Stakes::High);
        assert!(c.signals.iter().any(|s| s.name == "transfer_dropped"));
        // A one-step brief with a sequencing word that leads nowhere.
        let (caps, q, _) = settled("Translate the memo, then email it to the whole team");
        assert_eq!((caps, q), (vec!["translate".to_owned()], Quadrant::AtomicLow));
    }

    #[test]
    fn material_after_a_colon_is_not_instruction() {
        let brief = "Summarize this: The council met on Monday and then voted to translate every \
                     form into Spanish, which critics said would cost too much money overall.";
        let c = plan(brief);
        assert_eq!(c.plan.len(), 1, "{:?}", c.plan);
        assert_eq!(c.plan[0].capability, "summarize");
    }

    fn offered(
        name: &str,
        description: &str,
        phrasings: &[&str],
    ) -> tessera_bindings::catalogue::Entry {
        tessera_bindings::catalogue::Entry {
            name: name.into(),
            builtin: false,
            describe: tessera_bindings::describe::Describe {
                description: Some(description.into()),
                phrasings: phrasings.iter().map(|p| (*p).to_owned()).collect(),
                ..Default::default()
            },
            offerers: Vec::new(),
            offered_by: 1,
        }
    }

    fn with(entries: Vec<tessera_bindings::catalogue::Entry>) -> Catalogue {
        let mut c = Catalogue::builtins();
        c.entries.extend(entries);
        c
    }

    #[test]
    fn a_capability_no_rule_knows_is_planned_from_the_catalogue() {
        let cat = with(vec![
            offered("haiku-write", "Writes a haiku on a theme.", &["write a haiku about the sea"]),
            offered("proofread", "Fixes spelling and grammar.", &["check the grammar"]),
        ]);
        let c = plan_with("Write a haiku about autumn leaves, then translate it to French", &cat);
        let shape: Vec<(&str, &[u32], Vec<&str>)> = c
            .plan
            .iter()
            .map(|s| {
                (
                    s.capability.as_str(),
                    s.depends_on.as_slice(),
                    s.chosen_by.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("haiku-write", &[][..], vec!["Write", "haiku"]),
                ("translate", &[0][..], vec!["translate"]),
            ]
        );
        assert_eq!(c.plan[0].spec, "Write a haiku about autumn leaves");
        assert!(c.reasoning.contains("haiku-write → translate"), "{}", c.reasoning);
        // After "and", with a pronoun: its own step.
        let c = plan_with("Summarize the memo and proofread it", &cat);
        let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        assert_eq!(caps, ["summarize", "proofread"]);
        // A fan-out over items, and a phrasing in full.
        let c = plan_with("Check the grammar of these 4 letters", &cat);
        assert_eq!(c.plan.len(), 4);
        assert!(c.plan.iter().all(|s| s.capability == "proofread"));
        assert_eq!(c.plan[0].chosen_by, ["Check", "grammar"]);
        // Numbered goals.
        let c = plan_with(
            "1. Write a haiku about the sea, then translate it to German.\n2. Summarize the memo.",
            &cat,
        );
        let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
        assert_eq!(caps, ["haiku-write", "translate", "summarize"]);
        assert_eq!(c.groups.len(), 1);
    }

    #[test]
    fn the_rules_say_which_words_chose_each_capability() {
        let by = |brief: &str| -> Vec<Vec<String>> {
            plan(brief).plan.into_iter().map(|s| s.chosen_by).collect()
        };
        assert_eq!(
            by("Give me the top 5 takeaways from the board minutes"),
            [["Give", "takeaways"]]
        );
        assert_eq!(by("What is the sentiment of this review?"), [["sentiment"]]);
        assert_eq!(
            by("Translate the memo to Spanish, then summarize it"),
            [["Translate"], ["summarize"]]
        );
        let research = by("Research the top 5 open-source vector databases");
        assert_eq!(research.len(), 6);
        assert!(research.iter().all(|w| w == &["Research", "top", "5"]), "{research:?}");
    }

    #[test]
    fn a_manual_pick_names_the_catalogue_bounded() {
        let many: Vec<_> =
            (0..20).map(|i| offered(&format!("cap-{i:02}"), "Does a thing.", &[])).collect();
        let c = plan_with("Make it better", &with(many));
        assert!(c.needs_manual_pick());
        assert!(
            c.reasoning.contains(
                "pick one by hand (extract-entities, sentiment-classify, summarize, translate, \
                 brief, cap-00, cap-01, cap-02, cap-03, cap-04, cap-05, cap-06 and 13 more)"
            ),
            "{}",
            c.reasoning
        );
    }
}
