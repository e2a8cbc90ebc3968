//! `tessera agents capabilities`: the capability catalogue plans are made
//! from, as a table: each capability, whether Tessera's runners implement
//! it, how many active agents offer it, the cheapest price, the best
//! reliability among its offerers, its one-line description and the fields
//! of its result (what a condition may read).
//!
//! Every text comes from cards anyone can publish: what is shown is cut to
//! one line, with control and bidirectional-override characters removed.

use serde_json::Value;
use tessera_bindings::{catalogue::Catalogue, describe::ResultSchema, usdc::Usdc};
use tessera_orchestrator::select;

use super::table;
use crate::client::ApiError;

/// Longest description shown, in characters.
const DESCRIPTION_CHARS: usize = 48;
/// Longest list of result fields shown, in characters.
const FIELDS_CHARS: usize = 40;

/// The catalogue in an answer of `service`'s `/api/capabilities`.
pub(crate) fn read(body: &Value, service: &'static str) -> Result<Catalogue, ApiError> {
    serde_json::from_value(body.clone())
        .map_err(|e| ApiError::Unreadable { service, error: format!("the catalogue: {e}") })
}

/// The catalogue as a table, with where it came from underneath.
pub(crate) fn render(catalogue: &Catalogue, body: &Value) -> String {
    let head = ["CAPABILITY", "BUILT-IN", "OFFERED BY", "CHEAPEST (USDC)", "BEST RELIABILITY"];
    let mut rows = vec![head.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()];
    rows[0].extend(["DESCRIPTION".to_owned(), "RESULT FIELDS".to_owned()]);
    for e in &catalogue.entries {
        let best = e
            .offerers
            .iter()
            .filter_map(|o| o.record.as_ref())
            .max_by(|a, b| a.reliability.total_cmp(&b.reliability));
        let fields = match &e.describe.result {
            Some(schema) => fields(schema),
            None => "(no schema)".to_owned(),
        };
        rows.push(vec![
            e.name.clone(),
            if e.builtin { "yes" } else { "no" }.to_owned(),
            e.offered_by.to_string(),
            e.cheapest().map_or("-".to_owned(), usdc),
            best.map_or("-".to_owned(), |r| {
                format!("{}% ({}/{})", (r.reliability * 100.0).round(), r.completed, r.settled)
            }),
            one_line(e.describe.description.as_deref().unwrap_or("-"), DESCRIPTION_CHARS),
            one_line(&fields, FIELDS_CHARS),
        ]);
    }
    let mut out = table(&rows);
    let offered = catalogue.offered().count();
    out.push_str(&match body["source"].as_str() {
        Some("built-in") => "built-in capabilities only: this orchestrator runs without an index \
                             (tessera serve --no-index), so it knows no registered capability\n"
            .to_owned(),
        _ => format!(
            "{} capabilities, {offered} offered by active agents; BEST RELIABILITY is the best \
             offerer's weighed record (completed/settled); a condition may read the RESULT FIELDS \
             (those always present first; --json shows each capability's whole schema)\n",
            catalogue.entries.len()
        ),
    });
    out
}

/// The top-level fields of `schema`: those always present first, as
/// listed, then the others by name.
fn fields(schema: &ResultSchema) -> String {
    let root = &schema.root;
    let others = root.properties.keys().filter(|k| !root.required.contains(k));
    root.required.iter().chain(others).cloned().collect::<Vec<_>>().join(", ")
}

/// Base units as `0.05`.
fn usdc(units: u128) -> String {
    select::short_usdc(Usdc::from_base_units(units)).trim_end_matches(" USDC").to_owned()
}

/// `text` on one line of at most `max` characters (cut with `…`), without
/// control characters or bidirectional overrides.
fn one_line(text: &str, max: usize) -> String {
    let bidi = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let clean: String =
        text.chars().filter(|c| !bidi(*c)).map(|c| if c.is_control() { ' ' } else { c }).collect();
    let words = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.chars().count() <= max {
        return words;
    }
    let mut cut: String = words.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body() -> Value {
        json!({"source": "index", "entries": [
            {"name": "haiku-write", "builtin": false,
             "describe": {"description": "Writes a haiku\u{202e} about\nany \u{1b}[31mtheme, in three lines, five-seven-five syllables.",
                          "result": {"type": "object", "properties": {
                              "lines": {"type": "array", "items": {"type": "string"}},
                              "title": {"type": "string"}}, "required": ["title"]}},
             "offerers": [
                {"agent": "0x00000000000000000000000000000000000000b1", "price": "50000",
                 "record": {"settled": 0, "completed": 0, "reliability": 0.6667}},
                {"agent": "0x00000000000000000000000000000000000000b2", "price": "70000",
                 "record": {"settled": 6, "completed": 5, "reliability": 0.7778}}],
             "offered_by": 2},
            {"name": "translate", "builtin": true,
             "describe": {"description": "Translation of a text into another language."},
             "offerers": [], "offered_by": 0}]})
    }

    #[test]
    fn the_table_shows_offers_records_descriptions_and_fields() {
        let body = body();
        let out = render(&read(&body, "orchestrator").unwrap(), &body);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("CAPABILITY   BUILT-IN  OFFERED BY  CHEAPEST (USDC)"),
            "{out}"
        );
        let haiku = lines[1];
        for part in ["haiku-write", " no ", " 2 ", "0.05", "78% (5/6)", "title, lines"] {
            assert!(haiku.contains(part), "{part:?} in {haiku}");
        }
        // Hostile text: one line, no escape or override characters, cut.
        assert!(haiku.contains("Writes a haiku about any [31mtheme, in three li…"), "{haiku}");
        assert!(!out.contains('\u{1b}') && !out.contains('\u{202e}'));
        let translate = lines[2];
        for part in ["translate", " yes ", " 0 ", " - ", "Translation of a text", "(no schema)"] {
            assert!(translate.contains(part), "{part:?} in {translate}");
        }
        assert!(lines[3].starts_with("2 capabilities, 1 offered by active agents"), "{out}");
    }

    #[test]
    fn the_built_ins_alone_say_so_and_a_broken_answer_is_an_error() {
        let body = json!({"source": "built-in", "entries": []});
        let out = render(&read(&body, "orchestrator").unwrap(), &body);
        assert!(out.contains("built-in capabilities only"), "{out}");
        let e = read(&json!({"entries": 3}), "indexer").unwrap_err();
        assert_eq!(e.exit_code(), 5);
        assert!(e.to_string().starts_with("the indexer answered what this client cannot read"));
        assert_eq!(one_line("  a\tb  ", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
