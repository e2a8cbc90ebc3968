//! The field tables of docs/plans.md, made from the `Plan` and `SubTask`
//! schemas of the OpenAPI document, so the reference cannot drift from
//! what the API checks: the test below fails, printing the tables as they
//! should read, when the two differ (`TESSERA_BLESS_DOCS=1 cargo test -p
//! tessera-orchestrator fields_doc` writes them in).

use serde_json::Value;

/// One schema's fields as a Markdown table: field, type and limits,
/// whether it is required, and what it means.
fn table(schemas: &Value, name: &str) -> String {
    let schema = &schemas[name];
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("| field | type | required | meaning |\n|---|---|---|---|\n");
    for (field, prop) in schema["properties"].as_object().into_iter().flatten() {
        let mut meaning = prop["description"].as_str().unwrap_or_default().to_owned();
        if let Some(d) = prop.get("default") {
            if !meaning.is_empty() && !meaning.ends_with('.') {
                meaning.push('.');
            }
            meaning = format!("{meaning} Default: `{d}`.").trim().to_owned();
        }
        out.push_str(&format!(
            "| `{field}` | {} | {} | {} |\n",
            type_of(prop).replace('|', "\\|"),
            if required.contains(&field.as_str()) { "yes" } else { "no" },
            meaning.replace('|', "\\|").replace('\n', " "),
        ));
    }
    out
}

/// A property's type in words: its JSON type, enum values or constant,
/// with its bounds.
fn type_of(p: &Value) -> String {
    if let Some(c) = p.get("const") {
        return format!("`{c}`");
    }
    if let Some(values) = p["enum"].as_array() {
        return values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(" or ");
    }
    if let Some(r) = p["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or(r).to_owned();
    }
    let ty = match &p["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
        _ => "any".to_owned(),
    };
    let ty = match (ty.as_str(), p["items"].get("$ref").and_then(Value::as_str)) {
        ("array", Some(r)) => format!("array of {}", r.rsplit('/').next().unwrap_or(r)),
        ("array", None) if p["items"]["type"].is_string() => {
            format!("array of {}", p["items"]["type"].as_str().unwrap_or_default())
        }
        _ => ty,
    };
    let bound = |lo: &str, hi: &str| match (p.get(lo), p.get(hi)) {
        (Some(a), Some(b)) => format!(" {a} to {b}"),
        (Some(a), None) => format!(" ≥ {a}"),
        (None, Some(b)) => format!(" ≤ {b}"),
        (None, None) => String::new(),
    };
    let mut words = ty;
    words.push_str(&bound("minimum", "maximum"));
    let items = bound("minItems", "maxItems");
    if !items.is_empty() {
        words.push_str(&format!(",{items} items"));
    }
    let len = bound("minLength", "maxLength");
    if !len.is_empty() {
        words.push_str(&format!(",{len} bytes"));
    }
    if let Some(pattern) = p["pattern"].as_str() {
        words.push_str(&format!(", `{pattern}`"));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = include_str!("../../../docs/plans.md");

    fn schemas() -> Value {
        let doc: Value = serde_json::from_str(crate::api::OPENAPI).expect("the OpenAPI document");
        doc["components"]["schemas"].clone()
    }

    /// The text of docs/plans.md between `<!-- fields:NAME -->` and
    /// `<!-- /fields:NAME -->`.
    fn documented(name: &str) -> &'static str {
        let open = format!("<!-- fields:{name} -->\n");
        let close = format!("<!-- /fields:{name} -->");
        let at = DOC.find(&open).unwrap_or_else(|| panic!("docs/plans.md has no {open}"));
        let rest = &DOC[at + open.len()..];
        &rest[..rest.find(&close).unwrap_or_else(|| panic!("docs/plans.md has no {close}"))]
    }

    /// With TESSERA_BLESS_DOCS=1 set, the tables are written into
    /// docs/plans.md instead of compared.
    #[test]
    fn the_field_tables_are_the_schemas() {
        let schemas = schemas();
        if std::env::var_os("TESSERA_BLESS_DOCS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/plans.md");
            let mut doc = std::fs::read_to_string(path).expect("docs/plans.md");
            for name in ["Plan", "SubTask"] {
                let old = format!("<!-- fields:{name} -->\n{}", documented(name));
                let new = format!("<!-- fields:{name} -->\n{}", table(&schemas, name));
                doc = doc.replacen(&old, &new, 1);
            }
            std::fs::write(path, doc).expect("docs/plans.md written");
            return;
        }
        for name in ["Plan", "SubTask"] {
            let want = table(&schemas, name);
            assert_eq!(
                documented(name),
                want,
                "docs/plans.md's table of {name} differs from the OpenAPI schema; it should read:\n{want}"
            );
        }
    }

    #[test]
    fn a_type_reads_with_its_bounds() {
        let p = serde_json::json!({"type": "integer", "minimum": 60, "maximum": 600});
        assert_eq!(type_of(&p), "integer 60 to 600");
        let p = serde_json::json!({"type": "array", "items": {"$ref": "#/x/SubTask"}, "minItems": 1, "maxItems": 64});
        assert_eq!(type_of(&p), "array of SubTask, 1 to 64 items");
        let p = serde_json::json!({"type": ["string", "null"], "maxLength": 9, "pattern": "^a$"});
        assert_eq!(type_of(&p), "string or null, ≤ 9 bytes, `^a$`");
        assert_eq!(type_of(&serde_json::json!({"enum": ["a", "b"]})), "`\"a\"` or `\"b\"`");
        assert_eq!(type_of(&serde_json::json!({"const": 1})), "`1`");
    }
}
