//! What a delivered result must look like to be paid for: the shape each
//! capability delivers, whether the offline runner or a model produced it.
//!
//! An agent that bought a capability from another agent (a delegated part)
//! checks the child task's result with [`check_result`] before approving
//! its payment, and disputes a result that fails, with the reason.

use serde_json::Value;
use tessera_bindings::describe::ResultSchema;

use super::{Language, OFFLINE_CAPABILITIES};
use crate::llm::{MAX_TEXT_BYTES, SENTIMENT_LABELS};

/// Why a delivered result is not a result of the capability bought.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {capability} result is malformed: {reason}")]
pub struct MalformedResult {
    /// The capability bought.
    pub capability: String,
    /// What is wrong with the result.
    pub reason: String,
}

/// Checks `result` (the JSON a task delivered for `capability`, asked for
/// with `spec`) against the capability's published result `schema` (when
/// it has one: declared fields of their types, required ones present), and
/// a built-in capability's result against what its runners deliver
/// ([`check_result`]); any other capability's result need only be a JSON
/// object.
pub fn check_delivered(
    capability: &str,
    spec: &str,
    schema: Option<&ResultSchema>,
    result: &Value,
) -> Result<(), MalformedResult> {
    let bad = |reason: String| Err(MalformedResult { capability: capability.to_owned(), reason });
    if !result.is_object() {
        return bad("it is not a JSON object".into());
    }
    if let Some(schema) = schema
        && let Err(e) = schema.check(result)
    {
        return bad(e.to_string());
    }
    if OFFLINE_CAPABILITIES.contains(&capability) {
        return check_result(capability, spec, result);
    }
    Ok(())
}

/// Checks `result` (the JSON a task delivered) against `capability`, asked
/// for with `spec`: an object tagged with the capability, carrying the
/// fields that capability delivers — a non-empty `text` of at most
/// [`MAX_TEXT_BYTES`] for a translation (in the language the spec names,
/// when the result says which), a summary or a list of entities, a `label`
/// among [`SENTIMENT_LABELS`] for a classification, a `translation` and a
/// `summary` for a brief.
pub fn check_result(capability: &str, spec: &str, result: &Value) -> Result<(), MalformedResult> {
    let bad = |reason: String| Err(MalformedResult { capability: capability.to_owned(), reason });
    let Some(obj) = result.as_object() else {
        return bad("it is not a JSON object".into());
    };
    match obj.get("capability").and_then(Value::as_str) {
        Some(tag) if tag == capability => {}
        Some(tag) => return bad(format!("it is a {tag:?} result")),
        None => return bad("it names no capability".into()),
    }
    let text = |field: &str| match obj.get(field) {
        Some(Value::String(t)) if t.trim().is_empty() => Err(format!("`{field}` is empty")),
        Some(Value::String(t)) if t.len() > MAX_TEXT_BYTES => {
            Err(format!("`{field}` is {} bytes, over {MAX_TEXT_BYTES}", t.len()))
        }
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(format!("`{field}` is not a string")),
        None => Err(format!("`{field}` is missing")),
    };
    let checked = match capability {
        "translate" => text("text").and_then(|()| {
            let (Some(said), Some(asked)) = (obj.get("target_language"), Language::from_spec(spec))
            else {
                return Ok(());
            };
            let asked = serde_json::to_value(asked).unwrap_or_default();
            if *said == asked {
                Ok(())
            } else {
                Err(format!("it is in {said}, the spec asks for {asked}"))
            }
        }),
        "sentiment-classify" => match obj.get("label").and_then(Value::as_str) {
            Some(label) if SENTIMENT_LABELS.contains(&label) => Ok(()),
            other => Err(format!("`label` {other:?} is not one of {SENTIMENT_LABELS:?}")),
        },
        "extract-entities" if obj.contains_key("names") => match obj.get("names") {
            Some(Value::Array(_)) => Ok(()),
            _ => Err("`names` is not a list".into()),
        },
        "brief" => text("translation").and_then(|()| match obj.get("summary") {
            Some(Value::Object(_)) => Ok(()),
            _ => Err("`summary` is missing".into()),
        }),
        _ => text("text"),
    };
    checked.or_else(bad)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::offline::{TaskInput, run};

    #[test]
    fn every_offline_result_passes_its_own_check() {
        let input = TaskInput::new("Translate to French, two bullets")
            .with_source("The city approved the budget. The school is new. The market is open.");
        for capability in crate::OFFLINE_CAPABILITIES {
            let out = run(capability, &input).unwrap().to_json();
            assert_eq!(check_result(capability, input.spec, &out), Ok(()), "{capability}: {out}");
        }
        let llm =
            json!({"capability": "translate", "engine": "llm", "model": "m", "text": "Le chat."});
        assert_eq!(check_result("translate", "To French", &llm), Ok(()));
    }

    #[test]
    fn delivered_results_pass_the_published_schema_first() {
        let input = TaskInput::new("Translate to French").with_source("The cat is black.");
        let good = run("translate", &input).unwrap().to_json();
        let schema = tessera_bindings::describe::builtin("translate").unwrap().result;
        assert_eq!(check_delivered("translate", input.spec, schema.as_ref(), &good), Ok(()));
        let mut untold = good.clone();
        untold.as_object_mut().unwrap().remove("target_language");
        let e = check_delivered("translate", input.spec, schema.as_ref(), &untold).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the translate result is malformed: the result field .target_language: is required \
             and missing"
        );
        let mut spanish = good;
        spanish["target_language"] = "es".into();
        let e = check_delivered("translate", input.spec, schema.as_ref(), &spanish).unwrap_err();
        assert!(e.reason.contains("the spec asks for \"fr\""), "{e}");

        let haiku = ResultSchema::from_json(&json!({
            "type": "object",
            "properties": {"haiku": {"type": "string"}, "lines": {"type": "integer"}},
            "required": ["haiku"]
        }))
        .unwrap();
        let ok = json!({"haiku": "old pond / a frog leaps in / water's sound", "mood": "calm"});
        assert_eq!(check_delivered("haiku-write", "", Some(&haiku), &ok), Ok(()));
        let e = check_delivered("haiku-write", "", Some(&haiku), &json!({"lines": 3})).unwrap_err();
        assert!(e.reason.contains(".haiku: is required and missing"), "{e}");
        let e = check_delivered("haiku-write", "", Some(&haiku), &json!({"haiku": 7})).unwrap_err();
        assert!(e.reason.contains("should be a string"), "{e}");
        assert!(check_delivered("haiku-write", "", None, &json!([1])).is_err());
        assert_eq!(check_delivered("haiku-write", "", None, &json!({"any": 1})), Ok(()));
    }

    #[test]
    fn malformed_results_say_what_is_wrong() {
        let input = TaskInput::new("Translate to French").with_source("The cat is black.");
        let good = run("translate", &input).unwrap().to_json();
        let with = |field: &str, value: Value| {
            let mut v = good.clone();
            v[field] = value;
            v
        };
        let mut untagged = good.clone();
        untagged.as_object_mut().unwrap().remove("capability");
        let mut textless = good.clone();
        textless.as_object_mut().unwrap().remove("text");
        for (result, needle) in [
            (json!("Le chat est noir."), "not a JSON object"),
            (untagged, "names no capability"),
            (with("capability", json!("summarize")), "is a \"summarize\" result"),
            (textless, "`text` is missing"),
            (with("text", json!("  ")), "`text` is empty"),
            (with("text", json!(7)), "`text` is not a string"),
            (with("text", json!("x".repeat(MAX_TEXT_BYTES + 1))), "over"),
            (with("target_language", json!("es")), "the spec asks for \"fr\""),
        ] {
            let e = check_result("translate", input.spec, &result).unwrap_err();
            assert!(e.to_string().starts_with("the translate result is malformed: "), "{e}");
            assert!(e.reason.contains(needle), "{needle}: {e}");
        }
        let label = json!({"capability": "sentiment-classify", "label": "ecstatic"});
        assert!(check_result("sentiment-classify", "", &label).is_err());
    }
}
