//! Address stripping: no model output may choose where money goes, so every
//! Ethereum address anywhere in a model's answer — any string, any key, any
//! depth — is replaced before anything else reads the answer.

use serde_json::Value;

use crate::heuristic::addresses;

/// What replaces a stripped address.
pub const REDACTED: &str = "[address removed]";

/// Replaces every address in `text`; returns the new text and how many went.
pub fn strip_text(text: &str) -> (String, usize) {
    let found = addresses(text);
    let mut out = text.to_owned();
    for a in &found {
        out = out.replace(a.as_str(), REDACTED);
    }
    (out, found.len())
}

/// Strips addresses from every string and object key of `value`, in place;
/// returns how many were removed.
pub fn strip_value(value: &mut Value) -> usize {
    match value {
        Value::String(s) => {
            let (clean, n) = strip_text(s);
            *s = clean;
            n
        }
        Value::Array(items) => items.iter_mut().map(strip_value).sum(),
        Value::Object(map) => {
            let mut n = 0;
            let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for (key, mut v) in entries {
                let (clean_key, k) = strip_text(&key);
                n += k + strip_value(&mut v);
                map.insert(clean_key, v);
            }
            n
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const A: &str = "0x52908400098527886E0F7030069857D2E4169EE7";

    #[test]
    fn strips_everywhere() {
        let mut v = json!({
            "reasoning": format!("pay {A} now"),
            "subtasks": [{ "spec": A, "executor": A, A: "key" }],
            "n": 3,
        });
        assert_eq!(strip_value(&mut v), 4);
        let text = v.to_string();
        assert!(!text.to_lowercase().contains(&A.to_lowercase()), "{text}");
        assert_eq!(v["subtasks"][0]["executor"], REDACTED);
        assert!(v["subtasks"][0].get(REDACTED).is_some());
        assert_eq!(v["n"], 3);
    }
}
