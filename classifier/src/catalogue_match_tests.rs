use tessera_bindings::describe::Describe;

use super::*;

fn entry(name: &str, description: &str, phrasings: &[&str]) -> Entry {
    Entry {
        name: name.into(),
        builtin: false,
        describe: Describe {
            description: (!description.is_empty()).then(|| description.to_owned()),
            phrasings: phrasings.iter().map(|p| (*p).to_owned()).collect(),
            ..Describe::default()
        },
        offerers: Vec::new(),
        offered_by: 1,
    }
}

/// The built-ins and `extra`.
fn catalogue(extra: Vec<Entry>) -> Catalogue {
    let mut c = Catalogue::builtins();
    c.entries.extend(extra);
    c
}

fn haiku() -> Entry {
    entry(
        "haiku-write",
        "Writes a haiku (three lines, 5-7-5 syllables) on a theme.",
        &["write a haiku about the sea", "a haiku on spring"],
    )
}

/// 200 characters of the words briefs use most, and phrasings stuffed with
/// the built-ins' own requests.
fn stuffed(name: &str) -> Entry {
    let description = "summarize translate report quarterly write haiku autumn review code \
        text article email document memo letter classify sentiment extract entities list \
        make create give best fast cheap";
    assert!(description.len() <= 200, "{}", description.len());
    entry(
        name,
        description,
        &[
            "summarize the report",
            "summarize the quarterly report",
            "translate this text",
            "write a haiku about autumn",
            "haiku autumn write poem leaves",
            "review summarize translate report haiku autumn quarterly write",
        ],
    )
}

fn words(brief: &str) -> Vec<String> {
    brief
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// What `m` chooses for `brief` as one segment, with the rules' reading of
/// it: `rule` at the positions of the words `by`.
fn chosen(
    m: &Matcher,
    brief: &str,
    rule: Option<(&str, &[&str])>,
) -> Option<(String, Vec<String>)> {
    let w = words(brief);
    let clause = Clause::new(&w);
    let rule = rule.map(|(capability, by)| RuleChoice {
        capability,
        words: by.iter().map(|b| w.iter().position(|x| x == b).expect("a rule word")).collect(),
    });
    m.choose(&clause, rule).map(|c| (c.capability, c.words.iter().map(|p| w[*p].clone()).collect()))
}

fn cap(m: &Matcher, brief: &str, rule: Option<(&str, &[&str])>) -> Option<String> {
    chosen(m, brief, rule).map(|c| c.0)
}

#[test]
fn stems_meet_across_plurals_and_verb_forms() {
    for (a, b) in [
        ("haikus", "haiku"),
        ("reviewing", "review"),
        ("reviewed", "reviews"),
        ("writing", "write"),
        ("writes", "write"),
        ("entities", "entity"),
        ("translated", "translate"),
        ("summarizing", "summarize"),
        ("boxes", "box"),
        ("classes", "class"),
    ] {
        assert_eq!(stem(a), stem(b), "{a} / {b}");
    }
    assert_ne!(stem("code"), stem("coffee"));
    assert_eq!(content_words("Write THE haikus, about the sea!"), ["writ", "haiku", "sea"]);
}

#[test]
fn a_capability_no_rule_knows_is_chosen_by_its_name_words() {
    let m = Matcher::new(&catalogue(vec![haiku()]));
    let (c, by) = chosen(&m, "Write a haiku about autumn leaves", None).unwrap();
    assert_eq!(c, "haiku-write");
    assert_eq!(by, ["write", "haiku"]);
    // Plurals and other verb forms meet.
    assert_eq!(cap(&m, "Please write three haikus", None).as_deref(), Some("haiku-write"));
    // A phrasing matched in full adds its words.
    let (_, by) = chosen(&m, "Compose a haiku on spring", None).unwrap();
    assert_eq!(by, ["haiku", "spring"]);
    // Nothing asks for it: no candidate.
    assert_eq!(cap(&m, "Make it better", None), None);
}

#[test]
fn description_words_alone_never_make_a_candidate() {
    let m = Matcher::new(&catalogue(vec![entry(
        "verse-smith",
        "Haiku about autumn, spring and the sea.",
        &[],
    )]));
    assert_eq!(cap(&m, "Write a haiku about autumn", None), None);
    // Nor does a one-word phrasing: a keyword belongs in the name.
    let m = Matcher::new(&catalogue(vec![entry("verse-smith", "", &["haiku", "the haiku"])]));
    assert_eq!(cap(&m, "Write a haiku about autumn", None), None);
    // A phrasing of two words or more does.
    let m = Matcher::new(&catalogue(vec![entry("verse-smith", "", &["write a haiku"])]));
    assert_eq!(cap(&m, "Write a haiku about autumn", None).as_deref(), Some("verse-smith"));
}

#[test]
fn the_segment_must_ask_for_it() {
    let m = Matcher::new(&catalogue(vec![haiku()]));
    // The haiku is the object of another verb.
    assert_eq!(cap(&m, "Email the haiku to Bob", None), None);
    // A built-in's name as an adjective.
    assert_eq!(cap(&m, "Keep it brief", None), None);
    assert_eq!(cap(&m, "Give me a brief of the filing", None).as_deref(), Some("brief"));
    // Led by the name word, or by a verb that asks for work.
    assert_eq!(cap(&m, "Haiku about autumn", None).as_deref(), Some("haiku-write"));
    assert_eq!(cap(&m, "Could you do a haiku about autumn", None).as_deref(), Some("haiku-write"));
}

#[test]
fn a_stuffed_card_does_not_take_the_built_ins_briefs() {
    for name in ["best-agent", "quarterly-report", "report-helper", "text-tools"] {
        let m = Matcher::new(&catalogue(vec![stuffed(name)]));
        let rule = Some(("summarize", &["summarize"][..]));
        assert_eq!(
            cap(&m, "Summarize the quarterly report", rule).as_deref(),
            Some("summarize"),
            "{name}"
        );
        let rule = Some(("translate", &["translate"][..]));
        assert_eq!(cap(&m, "Translate this text to French", rule).as_deref(), Some("translate"));
    }
    // A card named after the object is no translation of it either.
    let m = Matcher::new(&catalogue(vec![entry(
        "business-plan",
        "Writes business plans.",
        &["translate the business plan", "business plan"],
    )]));
    let rule = Some(("translate", &["translate"][..]));
    assert_eq!(
        cap(&m, "Translate the business plan to French", rule).as_deref(),
        Some("translate")
    );
}

#[test]
fn a_stuffed_card_does_not_take_a_registered_capabilitys_briefs() {
    for name in ["best-agent", "haiku-helper", "poem-haiku-pro"] {
        let m = Matcher::new(&catalogue(vec![haiku(), stuffed(name)]));
        let (c, by) = chosen(&m, "Write a haiku about autumn", None).unwrap();
        assert_eq!(c, "haiku-write", "{name}");
        assert_eq!(by, ["write", "haiku"]);
    }
    // With nobody else claiming it, a whole phrasing is enough.
    let m = Matcher::new(&catalogue(vec![stuffed("best-agent")]));
    assert_eq!(cap(&m, "Write a haiku about autumn", None).as_deref(), Some("best-agent"));
}

#[test]
fn a_specialisation_named_as_such_takes_the_rules_brief() {
    let contract = entry(
        "contract-summarize",
        "Summarizes legal contracts clause by clause.",
        &["summarize the contract"],
    );
    let m = Matcher::new(&catalogue(vec![contract]));
    let rule = Some(("summarize", &["summarize"][..]));
    let (c, by) = chosen(&m, "Summarize the supplier contract", rule).unwrap();
    assert_eq!(c, "contract-summarize");
    assert_eq!(by, ["summarize", "contract"]);
    // Not a brief that only shares the verb.
    assert_eq!(cap(&m, "Summarize the quarterly report", rule).as_deref(), Some("summarize"));
    // The rules' words are reported when they win.
    let (_, by) = chosen(&m, "Summarize the quarterly report", rule).unwrap();
    assert_eq!(by, ["summarize"]);
}

#[test]
fn ties_go_to_the_narrower_card_then_a_built_in_then_the_name() {
    let narrow = entry("haiku-write", "Haiku.", &[]);
    let broad = entry(
        "write-haiku",
        "Haiku, limericks, sonnets, odes, ballads, villanelles and free verse.",
        &[],
    );
    let m = Matcher::new(&catalogue(vec![broad.clone(), narrow.clone()]));
    assert_eq!(cap(&m, "Write a haiku", None).as_deref(), Some("haiku-write"));
    let m = Matcher::new(&catalogue(vec![narrow.clone(), broad]));
    assert_eq!(cap(&m, "Write a haiku", None).as_deref(), Some("haiku-write"));
    // Same vocabulary: the smaller name.
    let twin = entry("write-haiku", "Haiku.", &[]);
    let m = Matcher::new(&catalogue(vec![twin, narrow]));
    assert_eq!(cap(&m, "Write a haiku", None).as_deref(), Some("haiku-write"));
}

#[test]
fn only_offered_capabilities_and_built_ins_are_matched() {
    let mut nobody = haiku();
    nobody.offered_by = 0;
    let m = Matcher::new(&catalogue(vec![nobody]));
    assert_eq!(cap(&m, "Write a haiku about autumn", None), None);
    assert!(!m.knows("haiku-write") && m.knows("summarize") && m.knows("brief"));
}

#[test]
fn a_vocabulary_is_bounded_however_long_the_card() {
    // The 25th description word and beyond are ignored.
    let filler: Vec<String> = (0..24).map(|i| format!("word{i}x")).collect();
    let late = entry("late-card", &format!("{} haiku", filler.join(" ")), &["write a haiku"]);
    let m = Matcher::new(&catalogue(vec![late]));
    let (_, by) = chosen(&m, "Write a haiku", None).unwrap();
    assert_eq!(by, ["write", "haiku"], "the phrasing, not the description");
    let w = words("Haiku");
    assert!(m.relevance(&Clause::new(&w)).iter().all(|(n, ..)| *n != "late-card"));
    // Phrasings past the sixth, and words past the twelfth, are ignored.
    let mut phrasings: Vec<String> = (0..6).map(|i| format!("alpha{i}x beta{i}x")).collect();
    phrasings.push("write a haiku".into());
    let many = Entry {
        describe: Describe { phrasings, ..Describe::default() },
        ..entry("many-card", "", &[])
    };
    let long = entry(
        "long-card",
        "",
        &["one1 two2 three3 four4 five5 six6 seven7 eight8 nine9 ten10 eleven11 twelve12 haiku"],
    );
    let m = Matcher::new(&catalogue(vec![many, long]));
    assert_eq!(cap(&m, "Write a haiku", None), None);
    assert_eq!(
        cap(
            &m,
            "Write one1 two2 three3 four4 five5 six6 seven7 eight8 nine9 ten10 eleven11 twelve12",
            None
        )
        .as_deref(),
        Some("long-card")
    );
}

#[test]
fn at_most_eight_words_chose_a_capability() {
    let card = entry(
        "alpha-beta-gamma-delta",
        "epsilon zeta eta theta iota kappa lambda",
        &["alpha beta gamma delta epsilon zeta"],
    );
    let m = Matcher::new(&catalogue(vec![card]));
    let (_, by) =
        chosen(&m, "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda", None)
            .unwrap();
    assert_eq!(by.len(), MAX_CHOSEN_BY);
    assert_eq!(&by[..4], ["alpha", "beta", "gamma", "delta"], "the heaviest first");
}

#[test]
fn manual_pick_names_are_bounded_and_ruled_ones_first() {
    let extra: Vec<Entry> = (0..20).map(|i| entry(&format!("cap-{i:02}"), "", &[])).collect();
    let m = Matcher::new(&catalogue(extra));
    let (names, more) = m.names(8);
    assert_eq!(names.len(), 8);
    assert_eq!(more, 25 - 8);
    let ruled = |n: &str| {
        CAPABILITY_VERBS.iter().any(|(_, c)| *c == n)
            || CAPABILITY_NOUNS.iter().any(|(_, c, _)| *c == n)
    };
    assert!(names[..4].iter().all(|n| ruled(n)), "{names:?}");
    assert_eq!(names[4], "brief");
}
