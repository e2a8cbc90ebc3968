//! What a capability says of itself: a one-line description, what its spec
//! and inputs should hold, a bounded JSON Schema of its result and a few
//! phrasings a brief might use for it.
//!
//! A descriptor travels in the agent card (each capability offer carries
//! its fields) and so in the registry's metadata URI: anyone can publish
//! one, so every part is bounded ([`MAX_DESCRIPTION_CHARS`],
//! [`MAX_PHRASINGS`], [`ResultSchema`]'s limits) and checked on both sides,
//! when a card is loaded and when it is read back from the chain.
//!
//! The result schema is a small subset of JSON Schema: an object of typed
//! fields (`string`, `number`, `integer`, `boolean`, an `array` of one item
//! type, or a nested `object`), each with an optional `description` and,
//! for strings, an optional `enum`; `required` lists the fields always
//! present. Nothing else (no `$ref`, no combinators) is read, so a hostile
//! schema is at most [`MAX_SCHEMA_FIELDS`] fields [`MAX_SCHEMA_DEPTH`]
//! levels deep. A result is checked against it with
//! [`ResultSchema::check`]; a condition's field path with
//! [`ResultSchema::lookup`]. The declared fields are the published shape:
//! a result may carry more, but nothing may rely on them.
//!
//! The built-in capabilities have the same descriptors ([`builtin`]); a
//! card naming a built-in capability cannot redefine it in the catalogue.

use std::{collections::BTreeMap, fmt};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest one-line description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Longest `spec` or `inputs` note, in characters.
pub const MAX_NOTE_CHARS: usize = 400;
/// Most example phrasings one capability carries.
pub const MAX_PHRASINGS: usize = 6;
/// Longest phrasing, in characters.
pub const MAX_PHRASING_CHARS: usize = 100;
/// Most fields in one result schema, nested ones included.
pub const MAX_SCHEMA_FIELDS: usize = 40;
/// Deepest nesting of a result schema (the top object is level 1).
pub const MAX_SCHEMA_DEPTH: usize = 4;
/// Longest field name, in bytes.
pub const MAX_FIELD_NAME: usize = 48;
/// Most values in a string field's `enum`.
pub const MAX_ENUM_VALUES: usize = 16;
/// Longest `enum` value, in characters.
pub const MAX_ENUM_CHARS: usize = 64;
/// Longest field description, in characters.
pub const MAX_FIELD_DESCRIPTION_CHARS: usize = 200;

/// Why a descriptor or a result schema is refused. Every message names the
/// part at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {problem}")]
pub struct DescribeError {
    /// Where (`description`, `result.properties.score`, …).
    pub at: String,
    /// What is wrong.
    pub problem: String,
}

impl DescribeError {
    fn new(at: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { at: at.into(), problem: problem.into() }
    }
}

/// A capability's descriptor: every part optional, every part bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Describe {
    /// One line: what the capability does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the task's spec should say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// What inputs (upstream results, the source) it works on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    /// The shape of its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultSchema>,
    /// A few ways a brief might ask for it ("write a haiku about …").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phrasings: Vec<String>,
}

impl Describe {
    /// Whether nothing is described.
    pub fn is_empty(&self) -> bool {
        self.description.is_none()
            && self.spec.is_none()
            && self.inputs.is_none()
            && self.result.is_none()
            && self.phrasings.is_empty()
    }

    /// Checks every bound; `at` prefixes the field names in errors.
    pub fn check(&self, at: &str) -> Result<(), DescribeError> {
        let text = |field: &str, value: &Option<String>, max: usize| {
            if let Some(v) = value {
                check_text(&format!("{at}.{field}"), v, max)?;
            }
            Ok::<_, DescribeError>(())
        };
        text("description", &self.description, MAX_DESCRIPTION_CHARS)?;
        text("spec", &self.spec, MAX_NOTE_CHARS)?;
        text("inputs", &self.inputs, MAX_NOTE_CHARS)?;
        if self.phrasings.len() > MAX_PHRASINGS {
            return Err(DescribeError::new(
                format!("{at}.phrasings"),
                format!("at most {MAX_PHRASINGS} phrasings, not {}", self.phrasings.len()),
            ));
        }
        for (i, p) in self.phrasings.iter().enumerate() {
            check_text(&format!("{at}.phrasings[{i}]"), p, MAX_PHRASING_CHARS)?;
        }
        Ok(())
    }
}

/// A line of text: not blank, one line, at most `max` characters, no
/// control characters.
fn check_text(at: &str, value: &str, max: usize) -> Result<(), DescribeError> {
    if value.trim().is_empty() {
        return Err(DescribeError::new(at, "must not be empty"));
    }
    let chars = value.chars().count();
    if chars > max {
        return Err(DescribeError::new(at, format!("{chars} characters, over the limit of {max}")));
    }
    if value.chars().any(|c| c.is_control() && c != '\n') {
        return Err(DescribeError::new(at, "holds control characters"));
    }
    Ok(())
}

/// A field's type in a [`ResultSchema`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// A string, optionally one of `enum`.
    String {
        /// The allowed values; empty for any.
        one_of: Vec<String>,
    },
    /// Any JSON number.
    Number,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// An array of one item type.
    Array(Box<Field>),
    /// An object of typed fields.
    Object(Object),
}

impl FieldType {
    /// The JSON Schema `type` word.
    pub fn word(&self) -> &'static str {
        match self {
            Self::String { .. } => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Array(_) => "array",
            Self::Object(_) => "object",
        }
    }
}

/// One field: its type and what it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its type.
    pub ty: FieldType,
    /// What it holds.
    pub description: Option<String>,
}

/// An object's fields, and those always present.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Object {
    /// Field name → field.
    pub properties: BTreeMap<String, Field>,
    /// Fields always present.
    pub required: Vec<String>,
}

/// One step of a field path: an object field or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<'a> {
    /// `.name`
    Name(&'a str),
    /// `[i]`
    Index(u32),
}

/// What a field path finds in a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<'s> {
    /// A declared field of this type.
    Found(&'s FieldType),
    /// The schema has no such field: `at` is the path up to and including
    /// the step that failed, `why` says what the schema has there.
    Missing {
        /// The path that failed (`.summary.texts`).
        at: String,
        /// What is there instead.
        why: String,
    },
}

/// A capability's result schema: the bounded subset of JSON Schema above.
/// Reads and writes as JSON Schema (`{"type": "object", "properties": …}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawSchema", into = "RawSchema")]
pub struct ResultSchema {
    /// The result object.
    pub root: Object,
}

/// Why a result does not match its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the result {at}: {problem}")]
pub struct SchemaMismatch {
    /// Where (`is not an object`, `field .bullets[2]`).
    pub at: String,
    /// What is wrong.
    pub problem: String,
}

impl ResultSchema {
    /// A schema from its JSON form, checked.
    pub fn from_json(value: &Value) -> Result<Self, DescribeError> {
        let raw: RawSchema = serde_json::from_value(value.clone())
            .map_err(|e| DescribeError::new("result", e.to_string()))?;
        Self::try_from(raw).map_err(|problem| {
            // `try_from` errors are `at: problem` already.
            match problem.split_once(": ") {
                Some((at, p)) => DescribeError::new(at, p),
                None => DescribeError::new("result", problem),
            }
        })
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(RawSchema::from(self.clone())).unwrap_or(Value::Null)
    }

    /// Whether `result` is an object whose declared fields have their
    /// declared types and whose required fields are present.
    pub fn check(&self, result: &Value) -> Result<(), SchemaMismatch> {
        let Value::Object(_) = result else {
            return Err(SchemaMismatch {
                at: "is not a JSON object".into(),
                problem: format!("it is {}", kind(result)),
            });
        };
        check_object(&self.root, result, "")
    }

    /// What the field path `steps` (from the result's top) finds.
    pub fn lookup<'s>(&'s self, steps: &[Step<'_>]) -> Lookup<'s> {
        let mut at = String::new();
        let mut here: Option<&'s FieldType> = None;
        let root = &self.root;
        for step in steps {
            let object = match here {
                None => Some(root),
                Some(FieldType::Object(o)) => Some(o),
                _ => None,
            };
            match (step, here) {
                (Step::Name(name), _) => {
                    at.push('.');
                    at.push_str(name);
                    let Some(object) = object else {
                        let what = here.map_or("object", FieldType::word);
                        return Lookup::Missing { at, why: format!("a {what} has no fields") };
                    };
                    match object.properties.get(*name) {
                        Some(f) => here = Some(&f.ty),
                        None => {
                            let known: Vec<&str> =
                                object.properties.keys().map(String::as_str).collect();
                            return Lookup::Missing {
                                at,
                                why: format!(
                                    "no such field (the schema has: {})",
                                    known.join(", ")
                                ),
                            };
                        }
                    }
                }
                (Step::Index(i), Some(FieldType::Array(item))) => {
                    at.push_str(&format!("[{i}]"));
                    here = Some(&item.ty);
                }
                (Step::Index(i), other) => {
                    at.push_str(&format!("[{i}]"));
                    let what = other.map_or("object", FieldType::word);
                    return Lookup::Missing { at, why: format!("a {what} is not an array") };
                }
            }
        }
        match here {
            Some(ty) => Lookup::Found(ty),
            None => Lookup::Missing { at: String::new(), why: "the whole result".into() },
        }
    }

    /// The schema's fields as `path: type` lines, nested ones dotted.
    pub fn fields(&self) -> Vec<(String, &'static str)> {
        fn walk(o: &Object, prefix: &str, out: &mut Vec<(String, &'static str)>) {
            for (name, f) in &o.properties {
                let path = format!("{prefix}.{name}");
                out.push((path.clone(), f.ty.word()));
                match &f.ty {
                    FieldType::Object(inner) => walk(inner, &path, out),
                    FieldType::Array(item) => {
                        if let FieldType::Object(inner) = &item.ty {
                            walk(inner, &format!("{path}[]"), out);
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, "", &mut out);
        out
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_object(o: &Object, v: &Value, at: &str) -> Result<(), SchemaMismatch> {
    let Value::Object(map) = v else { unreachable!("checked by the caller") };
    for name in &o.required {
        if map.get(name).is_none_or(Value::is_null) {
            return Err(SchemaMismatch {
                at: format!("field {at}.{name}"),
                problem: "is required and missing".into(),
            });
        }
    }
    for (name, field) in &o.properties {
        if let Some(value) = map.get(name)
            && !value.is_null()
        {
            check_value(&field.ty, value, &format!("{at}.{name}"))?;
        }
    }
    Ok(())
}

fn check_value(ty: &FieldType, v: &Value, at: &str) -> Result<(), SchemaMismatch> {
    let wrong = || SchemaMismatch {
        at: format!("field {at}"),
        problem: format!("should be {} {}, is {}", article(ty.word()), ty.word(), kind(v)),
    };
    match (ty, v) {
        (FieldType::String { one_of }, Value::String(s)) => {
            if !one_of.is_empty() && !one_of.contains(s) {
                let shown: String = s.chars().take(40).collect();
                return Err(SchemaMismatch {
                    at: format!("field {at}"),
                    problem: format!("{shown:?} is not one of {}", one_of.join(", ")),
                });
            }
            Ok(())
        }
        (FieldType::Number, Value::Number(_)) | (FieldType::Boolean, Value::Bool(_)) => Ok(()),
        (FieldType::Integer, Value::Number(n)) => {
            if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) {
                Ok(())
            } else {
                Err(wrong())
            }
        }
        (FieldType::Array(item), Value::Array(items)) => {
            for (i, x) in items.iter().enumerate() {
                check_value(&item.ty, x, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        (FieldType::Object(o), Value::Object(_)) => check_object(o, v, at),
        _ => Err(wrong()),
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}

/// The JSON Schema form read and written (only these keys).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchema {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    properties: Option<BTreeMap<String, RawSchema>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    required: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    items: Option<Box<RawSchema>>,
    #[serde(default, rename = "enum", skip_serializing_if = "Vec::is_empty")]
    one_of: Vec<String>,
    /// Ignored when read (sizes are capped by the result's byte limit);
    /// accepted so a schema written for other tools reads.
    #[serde(default, rename = "$schema", skip_serializing)]
    _schema: Option<String>,
    #[serde(default, rename = "additionalProperties", skip_serializing)]
    _additional: Option<Value>,
    #[serde(default, skip_serializing)]
    title: Option<String>,
}

impl TryFrom<RawSchema> for ResultSchema {
    type Error = String;

    fn try_from(raw: RawSchema) -> Result<Self, Self::Error> {
        let mut budget = MAX_SCHEMA_FIELDS;
        let field = convert(raw, "result", 1, &mut budget).map_err(|e| e.to_string())?;
        match field.ty {
            FieldType::Object(root) => Ok(Self { root }),
            other => Err(format!(
                "result: the result must be an object of fields, not {} {}",
                article(other.word()),
                other.word()
            )),
        }
    }
}

fn convert(
    raw: RawSchema,
    at: &str,
    depth: usize,
    budget: &mut usize,
) -> Result<Field, DescribeError> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(DescribeError::new(at, format!("nests deeper than {MAX_SCHEMA_DEPTH} levels")));
    }
    if let Some(d) = &raw.description {
        check_text(&format!("{at}.description"), d, MAX_FIELD_DESCRIPTION_CHARS)?;
    }
    let _ = raw.title;
    let only = |key: &str, present: bool| {
        if present {
            Err(DescribeError::new(at, format!("`{key}` does not apply to type {:?}", raw.ty)))
        } else {
            Ok(())
        }
    };
    let ty = match raw.ty.as_str() {
        "string" => {
            only("properties", raw.properties.is_some())?;
            only("items", raw.items.is_some())?;
            only("required", !raw.required.is_empty())?;
            if raw.one_of.len() > MAX_ENUM_VALUES {
                return Err(DescribeError::new(
                    format!("{at}.enum"),
                    format!("at most {MAX_ENUM_VALUES} values"),
                ));
            }
            for v in &raw.one_of {
                check_text(&format!("{at}.enum"), v, MAX_ENUM_CHARS)?;
            }
            FieldType::String { one_of: raw.one_of }
        }
        "number" | "integer" | "boolean" => {
            only("properties", raw.properties.is_some())?;
            only("items", raw.items.is_some())?;
            only("required", !raw.required.is_empty())?;
            only("enum", !raw.one_of.is_empty())?;
            match raw.ty.as_str() {
                "number" => FieldType::Number,
                "integer" => FieldType::Integer,
                _ => FieldType::Boolean,
            }
        }
        "array" => {
            only("properties", raw.properties.is_some())?;
            only("required", !raw.required.is_empty())?;
            only("enum", !raw.one_of.is_empty())?;
            let Some(items) = raw.items else {
                return Err(DescribeError::new(at, "an array names its `items` type"));
            };
            FieldType::Array(Box::new(convert(*items, &format!("{at}.items"), depth + 1, budget)?))
        }
        "object" => {
            only("items", raw.items.is_some())?;
            only("enum", !raw.one_of.is_empty())?;
            let props = raw.properties.unwrap_or_default();
            let mut properties = BTreeMap::new();
            for (name, sub) in props {
                let here = format!("{at}.properties.{name}");
                if name.is_empty()
                    || name.len() > MAX_FIELD_NAME
                    || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    return Err(DescribeError::new(
                        here,
                        format!("a field name is 1-{MAX_FIELD_NAME} bytes of A-Z, a-z, 0-9 and _"),
                    ));
                }
                if *budget == 0 {
                    return Err(DescribeError::new(
                        here,
                        format!("a result schema has at most {MAX_SCHEMA_FIELDS} fields"),
                    ));
                }
                *budget -= 1;
                let field = convert(sub, &here, depth + 1, budget)?;
                properties.insert(name, field);
            }
            for r in &raw.required {
                if !properties.contains_key(r) {
                    return Err(DescribeError::new(
                        format!("{at}.required"),
                        format!("{r:?} is required but not among the properties"),
                    ));
                }
            }
            FieldType::Object(Object { properties, required: raw.required })
        }
        other => {
            return Err(DescribeError::new(
                at,
                format!(
                    "type {other:?} is not one of string, number, integer, boolean, array, object"
                ),
            ));
        }
    };
    Ok(Field { ty, description: raw.description })
}

impl From<ResultSchema> for RawSchema {
    fn from(s: ResultSchema) -> Self {
        raw_of(Field { ty: FieldType::Object(s.root), description: None })
    }
}

fn raw_of(f: Field) -> RawSchema {
    let mut raw =
        RawSchema { ty: f.ty.word().to_owned(), description: f.description, ..Default::default() };
    match f.ty {
        FieldType::String { one_of } => raw.one_of = one_of,
        FieldType::Array(item) => raw.items = Some(Box::new(raw_of(*item))),
        FieldType::Object(o) => {
            raw.properties = Some(o.properties.into_iter().map(|(k, v)| (k, raw_of(v))).collect());
            raw.required = o.required;
        }
        FieldType::Number | FieldType::Integer | FieldType::Boolean => {}
    }
    raw
}

impl fmt::Display for ResultSchema {
    /// `{bullets: array, text: string, …}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fields: Vec<String> =
            self.root.properties.iter().map(|(k, v)| format!("{k}: {}", v.ty.word())).collect();
        write!(f, "{{{}}}", fields.join(", "))
    }
}

/// The built-in capabilities' descriptors: what the offline runner and the
/// LLM runner deliver for each (a card naming one describes it the same).
pub const BUILTIN: &[&str] =
    &["summarize", "translate", "sentiment-classify", "extract-entities", "brief"];

/// The descriptor of built-in capability `name`, if it is one.
pub fn builtin(name: &str) -> Option<Describe> {
    let (description, spec, inputs, result, phrasings): (&str, &str, &str, Value, &[&str]) =
        match name {
            "summarize" => (
                "Extractive summary of a text in a few bullets.",
                "What to summarize and how many bullets (\"in three bullets\").",
                "The text: the source, the upstream results, or the spec after a colon.",
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "capability": {"type": "string", "enum": ["summarize"]},
                        "engine": {"type": "string", "description": "llm from the LLM runner"},
                        "model": {"type": "string", "description": "the model, from the LLM runner"},
                        "bullets": {"type": "array", "items": {"type": "string"}, "description": "the summary's sentences"},
                        "text": {"type": "string", "description": "the bullets as one text"},
                        "selected": {"type": "array", "items": {"type": "integer"}},
                        "sentence_count": {"type": "integer"},
                        "withheld_sentences": {"type": "integer"}
                    },
                    "required": ["bullets", "text"]
                }),
                &["summarize the report", "give me the gist", "tl;dr of the article"],
            ),
            "translate" => (
                "Translation of a text into another language.",
                "The target language (\"to French\").",
                "The text: the source, the upstream results, or the spec after a colon.",
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "capability": {"type": "string", "enum": ["translate"]},
                        "engine": {"type": "string", "description": "offline-glossary or llm"},
                        "model": {"type": "string", "description": "the model, from the LLM runner"},
                        "source_language": {"type": "string"},
                        "target_language": {"type": "string"},
                        "text": {"type": "string", "description": "the translation"},
                        "word_count": {"type": "integer"},
                        "translated_count": {"type": "integer"},
                        "unknown_words": {"type": "array", "items": {"type": "string"}},
                        "coverage": {"type": "number", "description": "share of words translated (offline)"},
                        "withheld_sentences": {"type": "integer"}
                    },
                    "required": ["text", "target_language"]
                }),
                &["translate the memo to French", "put this into Spanish"],
            ),
            "sentiment-classify" => (
                "The tone of a text: positive, negative, neutral or mixed, with a score.",
                "What to classify.",
                "The text: the source, the upstream results, or the spec after a colon.",
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "capability": {"type": "string", "enum": ["sentiment-classify"]},
                        "engine": {"type": "string", "description": "llm from the LLM runner"},
                        "model": {"type": "string", "description": "the model, from the LLM runner"},
                        "text": {"type": "string", "description": "why, in one sentence (LLM runner)"},
                        "label": {"type": "string", "enum": ["positive", "negative", "neutral", "mixed"]},
                        "score": {"type": "number", "description": "from -1 (negative) to 1 (positive)"},
                        "terms": {"type": "array", "items": {"type": "object", "properties": {
                            "phrase": {"type": "string"}, "weight": {"type": "number"}
                        }}},
                        "withheld_sentences": {"type": "integer"}
                    },
                    "required": ["label", "score"]
                }),
                &["classify the sentiment of the reviews", "what is the tone of the email"],
            ),
            "extract-entities" => (
                "Names, emails, URLs, amounts, addresses and dates found in a text.",
                "What to extract from.",
                "The text: the source, the upstream results, or the spec after a colon.",
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "capability": {"type": "string", "enum": ["extract-entities"]},
                        "engine": {"type": "string", "description": "llm from the LLM runner"},
                        "model": {"type": "string", "description": "the model, from the LLM runner"},
                        "text": {"type": "string", "description": "the entities as a short list (LLM runner)"},
                        "names": {"type": "array", "items": {"type": "string"}},
                        "emails": {"type": "array", "items": {"type": "string"}},
                        "urls": {"type": "array", "items": {"type": "string"}},
                        "amounts": {"type": "array", "items": {"type": "string"}},
                        "eth_addresses": {"type": "array", "items": {"type": "string"}},
                        "dates": {"type": "array", "items": {"type": "object", "properties": {
                            "text": {"type": "string"}, "iso": {"type": "string"}
                        }}},
                        "withheld_sentences": {"type": "integer"}
                    },
                    "required": ["names"]
                }),
                &["extract the people and companies", "list the entities in the contract"],
            ),
            "brief" => (
                "A translated text with its summary: a translation and a summary in one task.",
                "The target language and what to summarize.",
                "The text: the source, the upstream results, or the spec after a colon.",
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "capability": {"type": "string", "enum": ["brief"]},
                        "engine": {"type": "string", "description": "llm from the LLM runner"},
                        "model": {"type": "string", "description": "the model, from the LLM runner"},
                        "translation": {"type": "string"},
                        "summary": {"type": "object", "properties": {
                            "bullets": {"type": "array", "items": {"type": "string"}},
                            "text": {"type": "string"},
                            "selected": {"type": "array", "items": {"type": "integer"}},
                            "sentence_count": {"type": "integer"},
                            "withheld_sentences": {"type": "integer"}
                        }},
                        "delegated": {"type": "object", "description": "the sub-task it hired, if any", "properties": {
                            "capability": {"type": "string"}, "task": {"type": "string"},
                            "executor": {"type": "string"}, "paid": {"type": "string"}
                        }}
                    },
                    "required": ["translation", "summary"]
                }),
                &["a French brief of the report"],
            ),
            _ => return None,
        };
    Some(Describe {
        description: Some(description.into()),
        spec: Some(spec.into()),
        inputs: Some(inputs.into()),
        result: Some(ResultSchema::from_json(&result).expect("built-in schemas are valid")),
        phrasings: phrasings.iter().map(|p| (*p).to_owned()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_builtin_is_described_and_round_trips() {
        for name in BUILTIN {
            let d = builtin(name).unwrap();
            d.check(name).unwrap();
            let schema = d.result.unwrap();
            let back: ResultSchema = serde_json::from_value(schema.to_json()).unwrap();
            assert_eq!(back, schema, "{name}");
        }
        assert!(builtin("haiku-write").is_none());
    }

    #[test]
    fn results_are_checked_against_the_schema() {
        let s = builtin("sentiment-classify").unwrap().result.unwrap();
        s.check(&json!({"label": "positive", "score": 0.5, "extra": [1]})).unwrap();
        for (bad, needle) in [
            (json!([1]), "is not a JSON object"),
            (json!({"score": 0.5}), "field .label: is required"),
            (json!({"label": "great", "score": 1}), "is not one of"),
            (json!({"label": "positive", "score": "high"}), "should be a number, is a string"),
            (
                json!({"label": "positive", "score": 1, "terms": [{"phrase": 3}]}),
                ".terms[0].phrase",
            ),
        ] {
            let e = s.check(&bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn lookups_follow_declared_fields_only() {
        let s = builtin("brief").unwrap().result.unwrap();
        let found = s.lookup(&[Step::Name("summary"), Step::Name("bullets"), Step::Index(0)]);
        assert_eq!(found, Lookup::Found(&FieldType::String { one_of: vec![] }));
        match s.lookup(&[Step::Name("summary"), Step::Name("texts")]) {
            Lookup::Missing { at, why } => {
                assert_eq!(at, ".summary.texts");
                assert!(why.contains("bullets, selected, sentence_count, text"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.lookup(&[Step::Name("translation"), Step::Index(0)]),
            Lookup::Missing { .. }
        ));
    }

    #[test]
    fn hostile_schemas_are_refused_with_the_part_at_fault() {
        let deep = (0..6).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "object", "properties": {"a": inner}}),
        );
        let wide: serde_json::Map<String, Value> =
            (0..50).map(|i| (format!("f{i}"), json!({"type": "string"}))).collect();
        for (bad, needle) in [
            (deep, "deeper than 4"),
            (json!({"type": "object", "properties": wide}), "at most 40 fields"),
            (json!({"type": "string"}), "must be an object"),
            (json!({"type": "object", "properties": {"a b": {"type": "string"}}}), "field name"),
            (json!({"type": "object", "properties": {"a": {"type": "array"}}}), "`items`"),
            (json!({"type": "object", "properties": {"a": {"type": "date"}}}), "not one of"),
            (json!({"type": "object", "$ref": "#/x"}), "unknown field"),
            (json!({"type": "object", "required": ["x"]}), "not among the properties"),
        ] {
            let e = ResultSchema::from_json(&bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn descriptors_are_bounded() {
        let mut d = builtin("summarize").unwrap();
        d.description = Some("x".repeat(MAX_DESCRIPTION_CHARS + 1));
        assert!(d.check("capabilities[0]").unwrap_err().to_string().contains("description"));
        d.description = None;
        d.phrasings = vec!["p".into(); MAX_PHRASINGS + 1];
        assert!(d.check("c").unwrap_err().to_string().contains("at most 6 phrasings"));
        d.phrasings = vec![" ".into()];
        assert!(d.check("c").unwrap_err().to_string().contains("must not be empty"));
    }
}
