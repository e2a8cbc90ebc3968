//! Address stripping: no model output may choose where money goes, so every
//! Ethereum address anywhere in a model's answer — any string, any key, any
//! depth — is replaced before anything else reads the answer.
//!
//! Stripping is deliberately broader than address detection: any run of 40
//! or more hex digits goes (with its `0x` when it has one), so addresses
//! glued together, written without `0x` or padded with extra digits go too.

use serde_json::Value;

/// What replaces a stripped address.
pub const REDACTED: &str = "[address removed]";

/// Shortest run of hex digits that is stripped.
pub const MIN_HEX_RUN: usize = 40;

/// Replaces every run of [`MIN_HEX_RUN`]+ hex digits (and its `0x`) in
/// `text`; returns the new text and how many runs went.
pub fn strip_text(text: &str) -> (String, usize) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_hexdigit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        // "0x" + run: the run starts after the x.
        let (run_start, prefix) = if start >= 2
            && bytes[start - 1].eq_ignore_ascii_case(&b'x')
            && bytes[start - 2] == b'0'
            && start - 2 >= copied
        {
            (start, 2)
        } else {
            (start, 0)
        };
        if i - run_start >= MIN_HEX_RUN {
            out.push_str(&text[copied..run_start - prefix]);
            out.push_str(REDACTED);
            copied = i;
            removed += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, removed)
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

    #[test]
    fn glued_bare_and_padded_addresses_go_too() {
        let glued = format!("{A}{A}");
        let (out, n) = strip_text(&glued);
        assert_eq!(n, 2, "{out}");
        assert!(!out.to_lowercase().contains("52908400098527886e0f"), "{out}");
        let (out, n) = strip_text(&format!("to {} ok", &A[2..]));
        assert_eq!((out.as_str(), n), ("to [address removed] ok", 1));
        let (out, n) = strip_text("short 0x1234 and deadbeef stay");
        assert_eq!((out.as_str(), n), ("short 0x1234 and deadbeef stay", 0));
    }
}
