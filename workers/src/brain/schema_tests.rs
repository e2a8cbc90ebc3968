//! The published JSON Schema (`docs/handler.schema.json`) says what the
//! Rust types write and read: every request the worker sends passes it,
//! and an answer passes it exactly when the worker takes it. A small
//! walker of the draft 2020-12 keywords the file uses (`$ref` to `$defs`,
//! `type`, `const`, `properties`, `required`, `additionalProperties`,
//! `items`, `oneOf`, `anyOf`, sizes); `pattern` is not checked.

use serde_json::{Value, json};

use super::{tests::request, *};

const SCHEMA: &str = include_str!("../../../docs/handler.schema.json");

fn schema() -> Value {
    serde_json::from_str(SCHEMA).expect("the published schema is JSON")
}

/// Why `v` does not pass `s` (within `root`), at `at`.
fn check(root: &Value, s: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").ok_or_else(|| format!("{at}: foreign $ref {r}"))?;
        let def = root["$defs"].get(name).ok_or_else(|| format!("{at}: no $defs/{name}"))?;
        check(root, def, v, at)?;
    }
    if let Some(ty) = s.get("type") {
        let types: Vec<&str> = match ty {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("{at}: bad type keyword")),
        };
        let is = |t: &str| match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            _ => false,
        };
        if !types.iter().any(|t| is(t)) {
            return Err(format!("{at}: {v} is not {types:?}"));
        }
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        return Err(format!("{at}: {v} is not {c}"));
    }
    if let Some(min) = s.get("minimum").and_then(Value::as_i64)
        && v.as_i64().is_some_and(|n| n < min)
    {
        return Err(format!("{at}: below {min}"));
    }
    if let Some(text) = v.as_str() {
        let chars = text.chars().count() as u64;
        if s.get("minLength").and_then(Value::as_u64).is_some_and(|m| chars < m) {
            return Err(format!("{at}: too short"));
        }
        if s.get("maxLength").and_then(Value::as_u64).is_some_and(|m| chars > m) {
            return Err(format!("{at}: too long"));
        }
    }
    if let Value::Array(items) = v {
        let n = items.len() as u64;
        if s.get("minItems").and_then(Value::as_u64).is_some_and(|m| n < m)
            || s.get("maxItems").and_then(Value::as_u64).is_some_and(|m| n > m)
        {
            return Err(format!("{at}: {n} items"));
        }
        if let Some(item) = s.get("items") {
            for (i, x) in items.iter().enumerate() {
                check(root, item, x, &format!("{at}[{i}]"))?;
            }
        }
    }
    if let Value::Object(map) = v {
        let props = s.get("properties").and_then(Value::as_object);
        for key in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            let key = key.as_str().unwrap_or_default();
            if !map.contains_key(key) {
                return Err(format!("{at}: `{key}` is required"));
            }
        }
        for (key, x) in map {
            match props.and_then(|p| p.get(key)) {
                Some(sub) => check(root, sub, x, &format!("{at}.{key}"))?,
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at}: `{key}` is not allowed"));
                }
                None => {}
            }
        }
    }
    if let Some(all) = s.get("oneOf").and_then(Value::as_array) {
        let passing = all.iter().filter(|sub| check(root, sub, v, at).is_ok()).count();
        if passing != 1 {
            return Err(format!("{at}: passes {passing} of oneOf"));
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array)
        && !any.iter().any(|sub| check(root, sub, v, at).is_ok())
    {
        return Err(format!("{at}: passes none of anyOf"));
    }
    Ok(())
}

fn passes(def: &str, v: &Value) -> Result<(), String> {
    let root = schema();
    check(&root, &json!({"$ref": format!("#/$defs/{def}")}), v, def)
}

#[test]
fn every_request_the_worker_writes_passes_the_published_schema() {
    let first = serde_json::to_value(request()).unwrap();
    passes("request", &first).unwrap();
    let mut again = request();
    again.source = Some("material".into());
    again.inputs[0].task = None;
    again.result_schema = None;
    again.hired = Some(vec![Hired {
        capability: "translate".into(),
        task: "99".into(),
        executor: again.task.funder.clone(),
        paid: "400000".into(),
        spec: "Translate to French".into(),
        result: json!({"text": "feuilles", "target_language": "fr"}),
    }]);
    let again = serde_json::to_value(again).unwrap();
    passes("request", &again).unwrap();
    // Every key the schema requires is written, and nothing else.
    let root = schema();
    let required: Vec<&str> = root["$defs"]["request"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut written: Vec<&str> =
        again.as_object().unwrap().keys().map(String::as_str).filter(|k| *k != "hired").collect();
    written.sort_unstable();
    let mut required = required;
    required.sort_unstable();
    assert_eq!(written, required);
    // The walker can fail: a request without its limits does not pass.
    let mut broken = first;
    broken.as_object_mut().unwrap().remove("limits");
    assert!(passes("request", &broken).unwrap_err().contains("`limits` is required"));
    // What a handler is sent reads back as a request.
    let read: HandlerRequest = serde_json::from_value(again.clone()).unwrap();
    assert_eq!(serde_json::to_value(read).unwrap(), again);
}

#[test]
fn an_answer_passes_the_schema_exactly_when_the_worker_takes_it() {
    let mut req = request();
    req.result_schema = None;
    let hire = |c: &str| json!({"capability": c, "spec": "Translate to French: leaves"});
    let answers = [
        (json!({"result": {"haiku": "x"}}), true),
        (json!({"result": {}}), true),
        (json!({"decline": {"reason": "not my line"}}), true),
        (json!({"hire": [hire("translate")]}), true),
        (json!({"hire": [{"capability": "translate", "spec": "x", "source": null}]}), true),
        (json!({"hire": [{"capability": "translate", "spec": "x", "source": "m"}]}), true),
        (json!({"result": "text"}), false),
        (json!({"result": {}, "decline": {"reason": "x"}}), false),
        (json!({}), false),
        (json!({"results": {}}), false),
        (json!({"decline": {"reason": ""}}), false),
        (json!({"decline": {"reason": "x", "more": 1}}), false),
        (json!({"decline": "x"}), false),
        (json!({"hire": []}), false),
        (json!({"hire": [hire("translate"), hire("a"), hire("b"), hire("c"), hire("d")]}), false),
        (json!({"hire": [{"capability": "translate"}]}), false),
        (json!({"hire": [{"capability": "translate", "spec": ""}]}), false),
        (json!({"hire": [{"capability": "translate", "spec": "x", "fee": 1}]}), false),
        (json!([]), false),
    ];
    for (answer, taken) in answers {
        let by_schema = passes("answer", &answer);
        let by_worker = HandlerAnswer::from_json(answer.clone(), &req);
        assert_eq!(by_schema.is_ok(), taken, "schema on {answer}: {by_schema:?}");
        assert_eq!(by_worker.is_ok(), taken, "worker on {answer}: {by_worker:?}");
    }
    // What the built-in brains answer passes too.
    for answer in [
        HandlerAnswer::Result(serde_json::Map::new()),
        HandlerAnswer::Decline { reason: "no".into() },
        HandlerAnswer::Hire(vec![Hire {
            capability: "translate".into(),
            spec: "s".into(),
            source: None,
        }]),
    ] {
        passes("answer", &answer.to_json()).unwrap();
    }
}
