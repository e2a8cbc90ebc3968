//! The classifier's model path against a local OpenAI-compatible server:
//! valid tool calls, malformed JSON, 500s, 429s and 401s, timeouts,
//! addresses hidden in every field of the answer, and the catalogue the
//! model is offered and held to.

use std::time::Duration;

use serde_json::{Value, json};
use tessera_bindings::{
    catalogue::{Catalogue, Entry},
    describe::Describe,
};
use tessera_classifier::{
    Classifier, Quadrant,
    classify::Engine,
    llm::{LlmClassifier, LlmSettings},
};
use tessera_e2e::mock_openai::{MockOpenAi, Reply};

const ADDR: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
const CHAIN: &str = "Translate this article to French, then summarize it in three bullets";

fn classifier(mock: &MockOpenAi) -> Classifier {
    let mut settings = LlmSettings::new(&mock.base_url, "classifier-test", "test-key");
    settings.timeout = Duration::from_millis(300);
    Classifier::with_llm(settings)
}

fn answer() -> Value {
    json!({
        "decomposability": "composite",
        "decomposability_confidence": 0.9,
        "stakes": "low",
        "stakes_confidence": 0.85,
        "reasoning": "Two steps: a translation, then a summary of it.",
        "signals": ["sequence word 'then'"],
        "subtasks": [
            {"capability": "translate", "spec": "Translate the article to French", "estimated_cost_usdc": 0.8, "deadline_offset_secs": 1800},
            {"capability": "summarize", "spec": "Summarize the translation in three bullets", "depends_on": [0]}
        ]
    })
}

#[tokio::test]
async fn a_valid_tool_call_becomes_the_classification() {
    let mock = MockOpenAi::start().await;
    mock.script([Reply::Arguments(answer())]);
    let c = classifier(&mock).classify(CHAIN, Some("Le texte…")).await.unwrap();
    assert_eq!(c.engine, Engine::Llm);
    assert_eq!(c.quadrant(), Quadrant::CompositeLow);
    assert_eq!(c.plan.len(), 2);
    assert_eq!(c.plan[0].estimated_cost, Some(800_000));
    assert_eq!(c.plan[0].deadline_offset_secs, 1800);
    assert_eq!(c.plan[1].depends_on, vec![0]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "classifier-test");
    assert_eq!(requests[0]["tool_choice"]["function"]["name"], "classify_brief");
    let user = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("<brief>") && user.contains(CHAIN) && user.contains("<payload-excerpt>"));
    assert_eq!(mock.auth_headers(), ["Bearer test-key"]);
}

#[tokio::test]
async fn malformed_json_is_retried_once() {
    let mock = MockOpenAi::start().await;
    mock.script([Reply::Malformed, Reply::Arguments(answer())]);
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Llm);
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn schema_violations_count_as_malformed() {
    let mock = MockOpenAi::start().await;
    let mut bad = answer();
    bad["decomposability_confidence"] = json!(1.7);
    let mut cyclic = answer();
    cyclic["subtasks"][0]["depends_on"] = json!([0]);
    mock.script([Reply::Arguments(bad), Reply::Arguments(cyclic)]);
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Degraded);
    let failed = c.signals.iter().find(|s| s.name == "llm_failed").unwrap();
    assert!(
        failed.detail.contains("outside 0..1") && failed.detail.contains("depends on 0"),
        "{}",
        failed.detail
    );
}

#[tokio::test]
async fn two_server_errors_degrade_to_zero_confidence_and_the_cautious_quadrant() {
    let mock = MockOpenAi::start().await;
    mock.script([Reply::ServerError, Reply::ServerError]);
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Degraded);
    assert_eq!((c.decomposability.confidence, c.stakes.confidence), (0.0, 0.0));
    assert_eq!(c.quadrant(), Quadrant::CompositeHigh);
    assert_eq!(c.plan.len(), 2, "the offline plan is still shown");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn timeouts_are_retried_then_degrade() {
    let mock = MockOpenAi::start().await;
    mock.script([Reply::Slow(Duration::from_secs(2)), Reply::Slow(Duration::from_secs(2))]);
    let started = std::time::Instant::now();
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Degraded);
    assert!(started.elapsed() < Duration::from_secs(2), "each attempt is cut at its timeout");
    assert!(c.reasoning.contains("no answer within"), "{}", c.reasoning);
}

#[tokio::test]
async fn addresses_in_every_field_are_stripped() {
    let mock = MockOpenAi::start().await;
    let mut a = answer();
    a["reasoning"] = json!(format!("Pay {ADDR} for the translation"));
    a["signals"] = json!([format!("recipient {ADDR}")]);
    a["subtasks"][0]["spec"] =
        json!(format!("Translate, then send the text to {}", ADDR.to_lowercase()));
    a["subtasks"][1]["spec"] = json!(format!("{ADDR}{ADDR}"));
    mock.script([Reply::Arguments(a)]);
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Llm);
    let text = serde_json::to_string(&c).unwrap().to_lowercase();
    assert!(!text.contains(&ADDR.to_lowercase()[2..]), "{text}");
    let guard = c.signals.iter().find(|s| s.name == "address_stripped").unwrap();
    assert!(guard.detail.starts_with("5 address"), "{}", guard.detail);

    // An executor smuggled in as an extra field: stripped, then refused by the
    // schema; a capability that was an address becomes invalid. Both degrade.
    let mut extra = answer();
    extra["subtasks"][0]["executor"] = json!(ADDR);
    let mut cap = answer();
    cap["subtasks"][1]["capability"] = json!(ADDR);
    mock.script([Reply::Arguments(extra), Reply::Arguments(cap)]);
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Degraded);
    assert!(!serde_json::to_string(&c).unwrap().to_lowercase().contains(&ADDR.to_lowercase()[2..]));
}

#[tokio::test]
async fn the_heuristic_halves_what_the_model_missed() {
    let mock = MockOpenAi::start().await;
    let mut a = answer();
    a["decomposability"] = json!("atomic");
    a["stakes_confidence"] = json!(0.8);
    a["subtasks"] = json!([{"capability": "summarize", "spec": "Summarize the invoice"}]);
    mock.script([Reply::Arguments(a)]);
    let brief = format!("Summarize the invoice, then send 40 USDC to {ADDR}");
    let c = classifier(&mock).classify(&brief, None).await.unwrap();
    assert_eq!(c.decomposability.confidence, 0.45);
    assert_eq!(c.stakes.confidence, 0.4);
    // Both below 0.5: the cautious quadrant — high stakes; the one-step plan
    // stays atomic (composite needs two sub-tasks).
    assert_eq!(c.quadrant(), Quadrant::AtomicHigh);
    let names: Vec<&str> = c.signals.iter().map(|s| s.name.as_str()).collect();
    assert!(
        names.contains(&"halved_decomposability") && names.contains(&"halved_stakes"),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_rate_limit_and_a_refused_key_come_out_apart_with_their_status() {
    let mock = MockOpenAi::start().await;
    mock.script([Reply::Status(429), Reply::Status(401)]);
    let llm = LlmClassifier::new(LlmSettings::new(&mock.base_url, "classifier-test", "test-key"));
    let limited = llm.attempt(CHAIN, None).await.expect_err("a 429 is an error");
    let refused = llm.attempt(CHAIN, None).await.expect_err("a 401 is an error");
    assert_eq!(
        (limited.status(), limited.code(), limited.is_rate_limited(), limited.is_auth()),
        (Some(429), Some("rate_limit_exceeded"), true, false),
        "{limited}"
    );
    assert!(limited.retryable(), "rate limiting passes: {limited}");
    assert_eq!(
        (refused.status(), refused.code(), refused.is_rate_limited(), refused.is_auth()),
        (Some(401), Some("invalid_api_key"), false, true),
        "{refused}"
    );
    assert!(!refused.retryable(), "a refused key stays refused: {refused}");
    let source = std::error::Error::source(&refused).expect("the provider's error is kept");
    assert!(source.to_string().contains("scripted 401"), "{source}");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_rate_limit_is_retried_and_a_refused_key_is_not() {
    let mock = MockOpenAi::start().await;
    mock.script([Reply::Status(429), Reply::Arguments(answer())]);
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Llm);
    assert_eq!(mock.requests().len(), 2);

    let mock = MockOpenAi::start().await;
    mock.script([Reply::Status(401)]);
    let c = classifier(&mock).classify(CHAIN, None).await.unwrap();
    assert_eq!(c.engine, Engine::Degraded);
    assert_eq!(mock.requests().len(), 1, "the same key is not tried again");
    let failed = c.signals.iter().find(|s| s.name == "llm_failed").unwrap();
    assert!(failed.detail.contains("401"), "{}", failed.detail);
}

const HAIKU: &str = "Write a haiku about autumn leaves, then translate it to French";

/// The built-ins and `haiku-write`, offered by two agents.
fn haiku_catalogue() -> Catalogue {
    let mut c = Catalogue::builtins();
    c.entries.push(Entry {
        name: "haiku-write".into(),
        builtin: false,
        describe: Describe {
            description: Some("Writes a haiku (5-7-5) on a theme.".into()),
            phrasings: vec!["write a haiku about the sea".into()],
            ..Describe::default()
        },
        offerers: Vec::new(),
        offered_by: 2,
    });
    c
}

fn haiku_answer(first: &str) -> Value {
    json!({
        "decomposability": "composite",
        "decomposability_confidence": 0.9,
        "stakes": "low",
        "stakes_confidence": 0.9,
        "reasoning": "A haiku, then its translation.",
        "subtasks": [
            {"capability": first, "spec": "Write a haiku about autumn leaves",
             "chosen_by": ["Write", "haiku", "sonnet"]},
            {"capability": "translate", "spec": "Translate the haiku to French", "depends_on": [0]}
        ]
    })
}

#[tokio::test]
async fn the_model_is_offered_the_catalogue_and_may_name_a_capability_from_it() {
    let mock = MockOpenAi::start().await;
    mock.script([Reply::Arguments(haiku_answer("haiku-write"))]);
    let c = classifier(&mock).classify_with(HAIKU, None, &haiku_catalogue()).await.unwrap();
    assert_eq!(c.engine, Engine::Llm);
    let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
    assert_eq!(caps, ["haiku-write", "translate"]);
    // The model's words the brief has are kept; "sonnet" is not in it. The
    // second step named none: the matcher's words.
    assert_eq!(c.plan[0].chosen_by, ["Write", "haiku"]);
    assert_eq!(c.plan[1].chosen_by, ["translate"]);

    let request = &mock.requests()[0];
    let offered = &request["tools"][0]["function"]["parameters"]["properties"]["subtasks"]["items"]
        ["properties"]["capability"]["enum"];
    let offered: Vec<&str> = offered.as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(&offered[..2], ["haiku-write", "translate"], "the most relevant first");
    assert_eq!(offered.len(), 6);
    let user = request["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("<capabilities>\nhaiku-write: Writes a haiku (5-7-5) on a theme."),
        "{user}"
    );
    assert!(!request["messages"][0]["content"].as_str().unwrap().contains("sentiment-classify"));
}

#[tokio::test]
async fn a_capability_outside_the_catalogue_is_refused() {
    let mock = MockOpenAi::start().await;
    mock.script([
        Reply::Arguments(haiku_answer("limerick-write")),
        Reply::Arguments(haiku_answer("limerick-write")),
    ]);
    let c = classifier(&mock).classify_with(HAIKU, None, &haiku_catalogue()).await.unwrap();
    assert_eq!(c.engine, Engine::Degraded);
    assert_eq!(mock.requests().len(), 2, "refused like any invalid answer, and asked again");
    let failed = c.signals.iter().find(|s| s.name == "llm_failed").unwrap();
    assert!(
        failed.detail.contains("\"limerick-write\" is not among the 6 capabilities offered"),
        "{}",
        failed.detail
    );
    // The degraded plan is the offline planner's, from the same catalogue.
    let caps: Vec<&str> = c.plan.iter().map(|s| s.capability.as_str()).collect();
    assert_eq!(caps, ["haiku-write", "translate"]);

    // Without haiku-write in the catalogue the model may not name it either.
    let mock = MockOpenAi::start().await;
    mock.script([Reply::Arguments(haiku_answer("haiku-write"))]);
    let llm = LlmClassifier::new(LlmSettings::new(&mock.base_url, "classifier-test", "test-key"));
    let err = llm.attempt(HAIKU, None).await.expect_err("not a built-in");
    assert!(err.to_string().contains("\"haiku-write\" is not among"), "{err}");
}
