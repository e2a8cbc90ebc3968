//! The fields an LLM result promises for each capability: those the offline
//! runner's results carry (`label` and `score` for a sentiment, `names`,
//! `emails`, … for entities, `bullets` for a summary, `target_language` for
//! a translation), so a plan's condition (`out[0].label == "negative" and
//! out[0].score < -0.2`, `out[1].names[0]`) reads the same result whichever
//! engine made it. [`schema`] writes them as the tool's JSON schema;
//! [`check`] holds the model's arguments to them: a field missing, of the
//! wrong shape or out of range, or one not promised, makes the answer
//! malformed (asked again once, then the task is declined on chain).

use serde_json::{Map, Value, json};

use super::{LlmError, MAX_TEXT_BYTES, SENTIMENT_LABELS};

/// Most items in one list field.
pub const MAX_ITEMS: usize = 256;

/// What one field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A non-empty string of at most [`MAX_TEXT_BYTES`].
    Text,
    /// One of [`SENTIMENT_LABELS`].
    Label,
    /// A number in [-1, 1].
    Score,
    /// A list of strings, possibly empty.
    Strings,
    /// A list of at least one non-empty string.
    Bullets,
    /// A list of dates, each `{text, iso}` with `iso` as `YYYY-MM-DD`.
    Dates,
    /// An ISO 639-1 language code: two or three lowercase letters.
    Language,
    /// A summary: `{text, bullets}`.
    Summary,
}

/// One field a capability's result promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Its name in the result.
    pub name: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// What the model is told it is.
    pub description: &'static str,
}

const fn field(name: &'static str, kind: Kind, description: &'static str) -> Field {
    Field { name, kind, description }
}

const TEXT: Field =
    field("text", Kind::Text, "The result: the summary, translation, explanation or list.");

/// The fields `capability`'s result promises, in order; a capability the
/// offline runner does not know promises a `text`.
pub fn fields(capability: &str) -> &'static [Field] {
    const SUMMARIZE: &[Field] = &[
        field("text", Kind::Text, "The summary as a Markdown list, one `- ` line per bullet."),
        field("bullets", Kind::Bullets, "The summary's bullets, in the material's order."),
    ];
    const TRANSLATE: &[Field] = &[
        field("text", Kind::Text, "The translated text."),
        field(
            "target_language",
            Kind::Language,
            "ISO 639-1 code of the language translated into, e.g. \"fr\".",
        ),
    ];
    const SENTIMENT: &[Field] = &[
        field("text", Kind::Text, "One sentence saying why."),
        field("label", Kind::Label, "The sentiment."),
        field("score", Kind::Score, "From -1 (most negative) to 1 (most positive)."),
    ];
    const ENTITIES: &[Field] = &[
        field("text", Kind::Text, "The entities as a short list."),
        field("names", Kind::Strings, "Names of people, organisations and places."),
        field("emails", Kind::Strings, "Email addresses."),
        field("urls", Kind::Strings, "URLs."),
        field("amounts", Kind::Strings, "Money amounts, as written."),
        field("eth_addresses", Kind::Strings, "Ethereum addresses."),
        field("dates", Kind::Dates, "Dates, as written and as YYYY-MM-DD."),
    ];
    const BRIEF: &[Field] = &[
        field("translation", Kind::Text, "The material translated as the spec asks."),
        field("summary", Kind::Summary, "The translation summarized."),
    ];
    match capability {
        "summarize" => SUMMARIZE,
        "translate" => TRANSLATE,
        "sentiment-classify" => SENTIMENT,
        "extract-entities" => ENTITIES,
        "brief" => BRIEF,
        _ => std::slice::from_ref(&TEXT),
    }
}

/// The JSON schema of an object with exactly `fields`, all required.
pub fn schema(fields: &[Field]) -> Value {
    let properties: Map<String, Value> =
        fields.iter().map(|f| (f.name.to_owned(), kind_schema(f.kind, f.description))).collect();
    let required: Vec<&str> = fields.iter().map(|f| f.name).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn kind_schema(kind: Kind, description: &str) -> Value {
    let strings = json!({ "type": "array", "items": { "type": "string" }, "maxItems": MAX_ITEMS });
    let mut schema = match kind {
        Kind::Text => json!({ "type": "string" }),
        Kind::Label => json!({ "type": "string", "enum": SENTIMENT_LABELS }),
        Kind::Score => json!({ "type": "number", "minimum": -1, "maximum": 1 }),
        Kind::Strings => strings,
        Kind::Bullets => {
            let mut s = strings;
            s["minItems"] = json!(1);
            s
        }
        Kind::Dates => json!({
            "type": "array",
            "maxItems": MAX_ITEMS,
            "items": schema(&[
                field("text", Kind::Text, "The date as written."),
                field("iso", Kind::Text, "The date as YYYY-MM-DD."),
            ]),
        }),
        Kind::Language => json!({ "type": "string", "examples": ["fr", "es"] }),
        Kind::Summary => schema(&[
            field("text", Kind::Text, "The summary as a Markdown list."),
            field("bullets", Kind::Bullets, "The summary's bullets."),
        ]),
    };
    if matches!(kind, Kind::Dates) {
        schema["items"]["properties"]["iso"]["format"] = json!("date");
    }
    schema["description"] = json!(description);
    schema
}

/// Checks the model's arguments against `capability`'s fields: the
/// validated result fields, or why the answer is malformed.
pub fn check(args: &Value, capability: &str) -> Result<Map<String, Value>, LlmError> {
    let obj = args
        .as_object()
        .ok_or_else(|| LlmError::Malformed("arguments are not an object".into()))?;
    check_object(obj, fields(capability)).map_err(LlmError::Malformed)
}

fn check_object(obj: &Map<String, Value>, fields: &[Field]) -> Result<Map<String, Value>, String> {
    if let Some(extra) = obj.keys().find(|k| !fields.iter().any(|f| f.name == k.as_str())) {
        return Err(format!("unexpected field `{extra}`"));
    }
    let mut out = Map::new();
    for f in fields {
        out.insert(f.name.to_owned(), check_field(f.name, f.kind, obj.get(f.name))?);
    }
    Ok(out)
}

fn check_field(name: &str, kind: Kind, value: Option<&Value>) -> Result<Value, String> {
    let Some(value) = value else {
        return Err(match kind {
            Kind::Text => format!("`{name}` is missing or empty"),
            _ => format!("`{name}` is missing"),
        });
    };
    match kind {
        Kind::Text => text(name, value).map(Value::from),
        Kind::Label => match value.as_str() {
            Some(label) if SENTIMENT_LABELS.contains(&label) => Ok(label.into()),
            _ => Err(format!("`{name}` {value} is not one of {SENTIMENT_LABELS:?}")),
        },
        Kind::Score => match value.as_f64() {
            Some(score) if (-1.0..=1.0).contains(&score) => Ok(score.into()),
            _ => Err(format!("`{name}` {value} is not a number from -1 to 1")),
        },
        Kind::Strings | Kind::Bullets => {
            let items = list(name, value)?;
            let strings: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            let strings = strings.ok_or_else(|| format!("`{name}` is not a list of strings"))?;
            let bytes: usize = strings.iter().map(|s| s.len()).sum();
            if bytes > MAX_TEXT_BYTES {
                return Err(format!("`{name}` holds {bytes} bytes, over {MAX_TEXT_BYTES}"));
            }
            if kind == Kind::Bullets
                && (strings.is_empty() || strings.iter().any(|s| s.trim().is_empty()))
            {
                return Err(format!("`{name}` must list at least one non-empty bullet"));
            }
            Ok(Value::from(strings.iter().map(|s| s.trim()).collect::<Vec<_>>()))
        }
        Kind::Dates => {
            let mut dates = Vec::new();
            for item in list(name, value)? {
                let date = item
                    .as_object()
                    .ok_or_else(|| format!("`{name}` is not a list of {{text, iso}} objects"))
                    .and_then(|o| {
                        check_object(
                            o,
                            &[field("text", Kind::Text, ""), field("iso", Kind::Text, "")],
                        )
                    })?;
                let iso = date["iso"].as_str().unwrap_or_default();
                if !is_iso_date(iso) {
                    return Err(format!("`{name}`: {iso:?} is not a YYYY-MM-DD date"));
                }
                dates.push(Value::Object(date));
            }
            Ok(Value::Array(dates))
        }
        Kind::Language => match value.as_str() {
            Some(code)
                if (2..=3).contains(&code.len())
                    && code.bytes().all(|b| b.is_ascii_lowercase()) =>
            {
                Ok(code.into())
            }
            _ => Err(format!("`{name}` {value} is not an ISO 639-1 code such as \"fr\"")),
        },
        Kind::Summary => match value.as_object() {
            Some(o) => check_object(
                o,
                &[field("text", Kind::Text, ""), field("bullets", Kind::Bullets, "")],
            )
            .map(Value::Object)
            .map_err(|e| format!("`{name}`: {e}")),
            None => Err(format!("`{name}` is not an object")),
        },
    }
}

/// A non-empty string of at most [`MAX_TEXT_BYTES`], trimmed.
fn text<'a>(name: &str, value: &'a Value) -> Result<&'a str, String> {
    let text = value
        .as_str()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("`{name}` is missing or empty"))?;
    if text.len() > MAX_TEXT_BYTES {
        return Err(format!("`{name}` is {} bytes, over {MAX_TEXT_BYTES}", text.len()));
    }
    Ok(text)
}

fn list<'a>(name: &str, value: &'a Value) -> Result<&'a Vec<Value>, String> {
    match value.as_array() {
        Some(items) if items.len() <= MAX_ITEMS => Ok(items),
        Some(items) => Err(format!("`{name}` has {} items, over {MAX_ITEMS}", items.len())),
        None => Err(format!("`{name}` is not a list")),
    }
}

fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter()
            .enumerate()
            .all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TaskInput, run};

    /// An LLM result and an offline one carry the same promised fields, of
    /// the same JSON types: a condition reads either.
    #[test]
    fn the_promised_fields_are_the_offline_results_fields() {
        let input = TaskInput::new("Translate to French, two bullets").with_source(
            "Ada Lovelace met Charles Babbage in London on 5 June 1833. The city is happy.",
        );
        for capability in crate::OFFLINE_CAPABILITIES {
            let offline = run(capability, &input).unwrap().to_json();
            for f in fields(capability) {
                // The offline sentiment and entities carry no prose `text`.
                if f.name == "text"
                    && matches!(capability, "sentiment-classify" | "extract-entities")
                {
                    continue;
                }
                let value = &offline[f.name];
                assert!(!value.is_null(), "{capability}: offline result lacks {}", f.name);
                if f.kind == Kind::Summary {
                    // The offline summary says more (`selected`, …); its promised part:
                    let bullets = check_field("bullets", Kind::Bullets, Some(&value["bullets"]));
                    let text = check_field("text", Kind::Text, Some(&value["text"]));
                    assert!(bullets.is_ok() && text.is_ok(), "{capability}: {value}");
                    continue;
                }
                let checked = check_field(f.name, f.kind, Some(value));
                assert!(checked.is_ok(), "{capability}.{}: {value}: {checked:?}", f.name);
            }
        }
    }

    #[test]
    fn missing_or_malformed_fields_are_refused() {
        let sentiment = json!({"text": "Calm.", "label": "neutral", "score": 0.1});
        assert_eq!(check(&sentiment, "sentiment-classify").unwrap()["score"], 0.1);
        for (args, capability, why) in [
            (
                json!({"text": "Calm.", "label": "neutral"}),
                "sentiment-classify",
                "`score` is missing",
            ),
            (
                json!({"text": "Calm.", "label": "neutral", "score": 3}),
                "sentiment-classify",
                "from -1 to 1",
            ),
            (
                json!({"text": "Calm.", "label": "neutral", "score": "0.1"}),
                "sentiment-classify",
                "from -1 to 1",
            ),
            (json!({"text": "A."}), "summarize", "`bullets` is missing"),
            (json!({"text": "A.", "bullets": []}), "summarize", "at least one"),
            (json!({"text": "A.", "bullets": [1]}), "summarize", "list of strings"),
            (json!({"text": "Le chat.", "target_language": "French"}), "translate", "ISO 639-1"),
            (
                json!({"text": "x", "names": [], "emails": [], "urls": [], "amounts": [],
                    "eth_addresses": [], "dates": [{"text": "June 5", "iso": "June 5"}]}),
                "extract-entities",
                "not a YYYY-MM-DD date",
            ),
            (json!({"text": "x", "names": "Ada"}), "extract-entities", "`names` is not a list"),
            (
                json!({"translation": "Le chat.", "summary": {"text": "- Le chat."}}),
                "brief",
                "`summary`: `bullets` is missing",
            ),
            (json!({"text": "x", "pay_to": "0x1"}), "write-poetry", "unexpected field `pay_to`"),
        ] {
            let e = check(&args, capability).unwrap_err().to_string();
            assert!(e.contains(why), "{capability} {args}: {e}");
        }
        let entities = json!({"text": "Ada", "names": ["Ada Lovelace"], "emails": [], "urls": [],
            "amounts": [], "eth_addresses": [], "dates": [{"text": "5 June 1833", "iso": "1833-06-05"}]});
        assert_eq!(check(&entities, "extract-entities").unwrap()["names"][0], "Ada Lovelace");
    }

    #[test]
    fn the_schema_requires_every_promised_field() {
        let s = schema(fields("sentiment-classify"));
        assert_eq!(s["required"], json!(["text", "label", "score"]));
        assert_eq!(s["properties"]["score"]["minimum"], -1);
        assert_eq!(s["additionalProperties"], false);
        let s = schema(fields("extract-entities"));
        assert_eq!(s["properties"]["dates"]["items"]["required"], json!(["text", "iso"]));
        assert_eq!(schema(fields("anything"))["required"], json!(["text"]));
    }
}
