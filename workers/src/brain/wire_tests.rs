//! The wire format: requests read back, answers checked against the
//! request, and the published JSON Schema matching both.

use serde_json::json;

use super::*;

/// A request for `haiku-write` that may hire `translate`.
pub(crate) fn request() -> HandlerRequest {
    HandlerRequest {
        tessera: WIRE_VERSION,
        task: TaskInfo {
            id: "1234".into(),
            capability: "haiku-write".into(),
            amount: "250000".into(),
            funder: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
            client: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
            plan: format!("0x{}", "ab".repeat(32)),
            parent: "0".into(),
            deadline: 1_795_000_000,
            chain_id: 31337,
        },
        spec: "Write a haiku about autumn leaves".into(),
        source: None,
        inputs: vec![InputItem { from: 0, task: Some("1233".into()), output: "leaves".into() }],
        hired: None,
        limits: Limits {
            timeout_ms: 30_000,
            max_answer_bytes: MAX_ANSWER_BYTES,
            may_hire: vec![MayHire { capability: "translate".into(), max_price: "500000".into() }],
        },
        result_schema: Some(
            ResultSchema::from_json(&json!({
                "type": "object",
                "properties": {"haiku": {"type": "string"}, "lines": {"type": "integer"}},
                "required": ["haiku"]
            }))
            .unwrap(),
        ),
    }
}

fn answer(v: Value) -> Result<HandlerAnswer, String> {
    HandlerAnswer::from_json(v, &request()).map_err(|e| e.0)
}

#[test]
fn a_request_reads_back_the_same() {
    let mut req = request();
    req.hired = Some(vec![Hired {
        capability: "translate".into(),
        task: "99".into(),
        executor: req.task.funder.clone(),
        paid: "400000".into(),
        spec: "Translate to French".into(),
        result: json!({"text": "feuilles"}),
    }]);
    let text = serde_json::to_string(&req).unwrap();
    assert_eq!(serde_json::from_str::<HandlerRequest>(&text).unwrap(), req);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["source"], Value::Null, "null, not left out");
    assert_eq!(v["result_schema"]["required"], json!(["haiku"]));
    // No `hired` on a first call.
    let first = serde_json::to_value(request()).unwrap();
    assert!(first.get("hired").is_none(), "{first}");
}

#[test]
fn results_pass_the_schema_or_say_which_field_is_wrong() {
    let ok = answer(json!({"result": {"haiku": "five seven five", "extra": [1]}})).unwrap();
    assert!(matches!(ok, HandlerAnswer::Result(r) if r["haiku"] == "five seven five"));
    assert_eq!(
        answer(json!({"result": {"lines": 3}})).unwrap_err(),
        "the result field .haiku: is required and missing"
    );
    let e = answer(json!({"result": {"haiku": 7}})).unwrap_err();
    assert!(e.starts_with("the result field .haiku: should be a string"), "{e}");
    assert_eq!(
        answer(json!({"result": "a haiku"})).unwrap_err(),
        "the result is not a JSON object"
    );
    // Without a schema any object is a result.
    let mut free = request();
    free.result_schema = None;
    assert!(HandlerAnswer::from_json(json!({"result": {}}), &free).is_ok());
}

#[test]
fn an_answer_holds_exactly_one_of_the_three() {
    for (v, needle) in [
        (json!([]), "not a JSON object"),
        (json!({}), "(it has: nothing)"),
        (
            json!({"result": {"haiku": "x"}, "decline": {"reason": "no"}}),
            "(it has: decline, result)",
        ),
        (json!({"results": {}}), "not \"results\""),
    ] {
        let e = answer(v.clone()).unwrap_err();
        assert!(e.contains(needle), "{v}: {e}");
    }
}

#[test]
fn a_decline_is_one_bounded_line() {
    let d = answer(json!({"decline": {"reason": "not\nin   my\tline of work"}})).unwrap();
    assert_eq!(d, HandlerAnswer::Decline { reason: "not in my line of work".into() });
    let long = "x".repeat(MAX_DECLINE_CHARS + 50);
    let HandlerAnswer::Decline { reason } = answer(json!({"decline": {"reason": long}})).unwrap()
    else {
        panic!("a decline")
    };
    assert_eq!(reason.chars().count(), MAX_DECLINE_CHARS + 1, "cut, with an ellipsis");
    for (v, needle) in [
        (json!({"decline": "no"}), "decline is not an object"),
        (json!({"decline": {}}), "holds only a reason"),
        (json!({"decline": {"reason": "no", "code": 3}}), "holds only a reason"),
        (json!({"decline": {"reason": 3}}), "not a string"),
        (json!({"decline": {"reason": " \n "}}), "decline.reason is empty"),
    ] {
        let e = answer(v.clone()).unwrap_err();
        assert!(e.contains(needle), "{v}: {e}");
    }
}

#[test]
fn a_hire_stays_within_the_cards_delegates() {
    let h =
        answer(json!({"hire": [{"capability": "translate", "spec": "To French: hi"}]})).unwrap();
    let HandlerAnswer::Hire(hires) = h else { panic!("a hire") };
    assert_eq!((hires[0].capability.as_str(), hires[0].source.as_deref()), ("translate", None));
    let hire = |c: &str, spec: &str| json!({"capability": c, "spec": spec});
    let too_many: Vec<Value> = (0..=MAX_HIRES).map(|_| hire("translate", "x")).collect();
    for (v, needle) in [
        (json!({"hire": []}), "1-4 children, not 0"),
        (json!({"hire": too_many}), "not 5"),
        (json!({"hire": {"capability": "translate"}}), "hire is not a list"),
        (
            json!({"hire": [hire("summarize", "x")]}),
            "\"summarize\" is not among the card's delegates (may hire: translate)",
        ),
        (
            json!({"hire": [hire("translate", "x"), hire("translate", "y")]}),
            "hire[1].capability \"translate\" is hired once per task",
        ),
        (json!({"hire": [hire("translate", "  ")]}), "hire[0].spec is empty"),
        (json!({"hire": [hire("translate", &"x".repeat(MAX_HIRE_SPEC_BYTES + 1))]}), "over 4096"),
        (
            json!({"hire": [{"capability": "translate", "spec": "x", "pay": 1}]}),
            "hire[0]: unknown field `pay`",
        ),
    ] {
        let e = answer(v.clone()).unwrap_err();
        assert!(e.contains(needle), "{needle}: {e}");
    }
    // Hired on an earlier call: not again.
    let mut again = request();
    again.hired = Some(vec![Hired {
        capability: "translate".into(),
        task: "9".into(),
        executor: "0x0".into(),
        paid: "1".into(),
        spec: "x".into(),
        result: json!({}),
    }]);
    let e =
        HandlerAnswer::from_json(json!({"hire": [hire("translate", "x")]}), &again).unwrap_err();
    assert!(e.0.contains("hired once per task"), "{e}");
}

#[test]
fn answers_are_read_within_the_cap_and_as_json() {
    let req = request();
    assert!(HandlerAnswer::parse(br#"{"result": {"haiku": "x"}}"#, &req).is_ok());
    let e = HandlerAnswer::parse(b"<html>oops</html>", &req).unwrap_err();
    assert!(e.0.starts_with("the answer is not JSON"), "{e}");
    let big = format!(r#"{{"result": {{"haiku": "{}"}}}}"#, "x".repeat(MAX_ANSWER_BYTES));
    let e = HandlerAnswer::parse(big.as_bytes(), &req).unwrap_err();
    assert!(e.0.contains("over the cap of 262144"), "{e}");
}

#[test]
fn answers_write_the_wire_json() {
    let hire = HandlerAnswer::Hire(vec![Hire {
        capability: "translate".into(),
        spec: "s".into(),
        source: Some("m".into()),
    }]);
    assert_eq!(
        hire.to_json(),
        json!({"hire": [{"capability": "translate", "spec": "s", "source": "m"}]})
    );
    let decline = HandlerAnswer::Decline { reason: "no".into() };
    assert_eq!(HandlerAnswer::from_json(decline.to_json(), &request()).unwrap(), decline);
}
