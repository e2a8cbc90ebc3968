//! The seam: the offline runner answering through it, every answer
//! checked the same way, and the reasons a decline publishes.

use serde_json::json;
use tessera_bindings::describe::builtin;

use super::{
    wire::{InputItem, Limits, MayHire, TaskInfo, WIRE_VERSION},
    *,
};

const ARTICLE: &str =
    "The city approved the budget. The school is new. The market is open on Sundays.";

/// A request for built-in `capability` with its built-in schema.
fn request(capability: &str, spec: &str) -> HandlerRequest {
    HandlerRequest {
        tessera: WIRE_VERSION,
        task: TaskInfo {
            id: "7".into(),
            capability: capability.into(),
            amount: "1200000".into(),
            funder: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
            client: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
            plan: format!("0x{}", "00".repeat(32)),
            parent: "0".into(),
            deadline: 2_000_000_000,
            chain_id: 31337,
        },
        spec: spec.into(),
        source: Some(ARTICLE.into()),
        inputs: Vec::new(),
        hired: None,
        limits: Limits {
            timeout_ms: 1000,
            max_answer_bytes: MAX_ANSWER_BYTES,
            may_hire: Vec::new(),
        },
        result_schema: builtin(capability).and_then(|d| d.result),
    }
}

/// A brain answering `value`, whatever it is asked.
#[derive(Debug)]
struct Says(Value);

impl Brain for Says {
    fn answer<'a>(&'a self, _: &'a HandlerRequest) -> Answering<'a> {
        let value = self.0.clone();
        Box::pin(async move { Ok(value) })
    }

    fn describe(&self) -> String {
        "a fixed answer".into()
    }
}

/// A brain that fails with `failure`.
#[derive(Debug)]
struct Fails(Failure);

impl Brain for Fails {
    fn answer<'a>(&'a self, _: &'a HandlerRequest) -> Answering<'a> {
        let failure = self.0.clone();
        Box::pin(async move { Err(failure) })
    }

    fn describe(&self) -> String {
        "a failure".into()
    }
}

#[tokio::test]
async fn the_offline_runner_answers_through_the_seam() {
    for capability in crate::OFFLINE_CAPABILITIES {
        let spec = "Translate to French, two bullets";
        let verdict = think(&OfflineBrain, &request(capability, spec)).await;
        let Verdict::Deliver(result) = verdict else { panic!("{capability}: {verdict:?}") };
        assert_eq!(result["capability"], capability, "{result}");
    }
    // Its own words when it cannot work: no prefix.
    let mut empty = request("summarize", "Summarize");
    empty.source = None;
    let verdict = think(&OfflineBrain, &empty).await;
    let Verdict::Decline(reason) = verdict else { panic!("{verdict:?}") };
    assert!(reason.starts_with("summarize: nothing to work on"), "{reason}");
    // Upstream results are its material when there is no source.
    let mut piped = request("summarize", "Summarize in one bullet");
    piped.source = None;
    piped.inputs = vec![InputItem { from: 0, task: None, output: ARTICLE.into() }];
    let Verdict::Deliver(result) = think(&OfflineBrain, &piped).await else { panic!() };
    assert_eq!(result["bullets"].as_array().unwrap().len(), 1, "{result}");
    assert!(OfflineBrain.inline());
    assert!(OfflineBrain.describe().contains("offline runner"));
}

#[tokio::test]
async fn a_brief_that_may_hire_hires_its_translation_then_summarizes_the_childs() {
    let mut req = request("brief", "Brief in French, two bullets");
    req.limits.may_hire =
        vec![MayHire { capability: "translate".into(), max_price: "1000000".into() }];
    let Verdict::Hire(hires) = think(&OfflineBrain, &req).await else { panic!("a hire") };
    assert_eq!(hires.len(), 1);
    assert_eq!(
        (hires[0].capability.as_str(), hires[0].spec.as_str(), hires[0].source.as_deref()),
        ("translate", "Brief in French, two bullets", Some(ARTICLE))
    );
    // Called again with the child's result: the brief is built from it.
    let translated =
        crate::run("translate", &crate::TaskInput::new("to French").with_source(ARTICLE))
            .unwrap()
            .to_json();
    req.hired = Some(vec![Hired {
        capability: "translate".into(),
        task: "99".into(),
        executor: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC".into(),
        paid: "800000".into(),
        spec: req.spec.clone(),
        result: translated.clone(),
    }]);
    let Verdict::Deliver(brief) = think(&OfflineBrain, &req).await else { panic!("a result") };
    assert_eq!(brief["translation"], translated["text"]);
    assert_eq!(brief["delegated"]["task"], "99");
    assert_eq!(brief["delegated"]["paid"], "800000");
    assert_eq!(brief["summary"]["bullets"].as_array().unwrap().len(), 2, "{brief}");
    // A child's result without text: declined in the runner's words.
    req.hired.as_mut().unwrap()[0].result = json!({"words": []});
    assert_eq!(
        think(&OfflineBrain, &req).await,
        Verdict::Decline("the delegated result has no text".into())
    );
    // A card that may not hire has it all done here.
    req.limits.may_hire.clear();
    req.hired = None;
    let Verdict::Deliver(brief) = think(&OfflineBrain, &req).await else { panic!("a result") };
    assert!(brief.get("delegated").is_none(), "{brief}");
}

#[tokio::test]
async fn every_answer_is_checked_and_every_reason_says_who() {
    let req = request("sentiment-classify", "Classify");
    let off = think(&Says(json!({"result": {"label": "positive"}})), &req).await;
    assert_eq!(
        off,
        Verdict::Decline(
            "handler answered off-schema: the result field .score: is required and missing".into()
        )
    );
    let ok = think(&Says(json!({"result": {"label": "positive", "score": 0.5}})), &req).await;
    assert!(matches!(ok, Verdict::Deliver(_)), "{ok:?}");
    assert_eq!(
        think(&Says(json!({"decline": {"reason": "I only do haiku"}})), &req).await,
        Verdict::Decline("handler declined: I only do haiku".into())
    );
    let e = think(&Says(json!({"hire": [{"capability": "translate", "spec": "x"}]})), &req).await;
    assert_eq!(
        e,
        Verdict::Decline(
            "handler answered off-schema: hire[0].capability \"translate\" is not among the \
             card's delegates (may hire: nothing)"
                .into()
        )
    );
    let mut small = req.clone();
    small.limits.max_answer_bytes = 64;
    let big = json!({"result": {"label": "positive", "score": 0.5, "why": "x".repeat(100)}});
    let Verdict::Decline(reason) = think(&Says(big), &small).await else { panic!() };
    assert!(
        reason.starts_with("handler answered off-schema: the answer is ")
            && reason.ends_with("over the cap of 64"),
        "{reason}"
    );
    for (failure, reason) in [
        (Failure::TimedOut(Duration::from_secs(2)), "handler timed out after 2 s"),
        (Failure::TimedOut(Duration::from_millis(1500)), "handler timed out after 1.5 s"),
        (Failure::Failed("HTTP 500".into()), "handler failed: HTTP 500"),
        (
            Failure::OffSchema("the answer is not JSON".into()),
            "handler answered off-schema: the answer is not JSON",
        ),
        (Failure::Said("LLM: no answer within 60 s".into()), "LLM: no answer within 60 s"),
    ] {
        assert_eq!(think(&Fails(failure), &req).await, Verdict::Decline(reason.into()));
    }
}

#[test]
fn a_card_gets_the_brain_it_names() {
    let card = |extra: &str| {
        crate::AgentCard::from_yaml(&format!(
            "id: h\ndescription: d\nrole: executor\ncapabilities:\n  - name: haiku-write\n    price: 1\n{extra}"
        ))
        .unwrap()
    };
    let http = for_card(
        &card("handler:\n  http: http://user:pw@127.0.0.1:9/agent?key=s3cret\n"),
        None,
        None,
    );
    assert!(!http.inline());
    let shown = http.describe();
    assert_eq!(shown, "the HTTP handler at http://127.0.0.1:9/agent", "no user, password or query");
    let cmd = for_card(&card("handler:\n  command: [python3, agent.py]\n"), None, None);
    assert_eq!(cmd.describe(), "the command handler `python3 agent.py`");
    let offline = crate::AgentCard::from_yaml(
        "id: o\ndescription: d\nrole: executor\nmodel: offline\ncapabilities:\n  - name: summarize\n    price: 1\ninstructions: i\n",
    )
    .unwrap();
    let llm = crate::llm::LlmConfig::new("http://llm.local/v1?api-key=s3cret", "sk-s3cret");
    assert!(
        for_card(&offline, None, Some(&llm)).describe().contains("offline runner"),
        "offline stays offline"
    );
    let model = crate::AgentCard::from_yaml(
        "id: m\ndescription: d\nrole: executor\nmodel: gpt-test\ncapabilities:\n  - name: summarize\n    price: 1\ninstructions: i\n",
    )
    .unwrap();
    let shown = for_card(&model, None, Some(&llm)).describe();
    assert_eq!(shown, "the LLM gpt-test at http://llm.local/v1");
    assert!(!shown.contains("s3cret"));
}
