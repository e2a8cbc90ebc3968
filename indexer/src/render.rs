//! A plan tree as text, as `tessera tasks tree` and `make demo` print it,
//! from the read API's JSON (`GET /api/plans/{plan}/tree`).

use std::collections::BTreeSet;

use serde_json::Value;
use tessera_bindings::{envelope::path_segments, usdc::Usdc};

/// The tree as text, children under their parents. A plan with nested
/// plans (tasks whose step paths have more than one segment) is drawn as
/// its nesting instead: its steps in path order, each nested plan as a
/// header line with its tasks indented under it; tasks without a path hang
/// under their parents as before.
pub fn plan_tree(body: &Value) -> String {
    plan_tree_with(body, &|_| Vec::new())
}

/// The lines drawn under a task (given the task's JSON), indented to its
/// place in the tree; none for most.
pub type Notes<'n> = &'n dyn Fn(&Value) -> Vec<String>;

/// [`plan_tree`] with `notes` drawn under each task, such as what it
/// delivered.
pub fn plan_tree_with(body: &Value, notes: Notes<'_>) -> String {
    let tasks: Vec<&Value> =
        body["tasks"].as_array().map(|t| t.iter().collect()).unwrap_or_default();
    let mut out = format!(
        "plan {}  (as of block {})\n",
        body["plan_id"].as_str().unwrap_or("?"),
        body["block"]
    );
    let mut seen = BTreeSet::new();
    if tasks.iter().any(|t| step(t).is_some_and(|s| s.len() > 1)) {
        render_nested(&mut out, &tasks, &mut seen, notes);
    } else {
        walk(&mut out, &tasks, None, "", false, &mut seen, notes);
    }
    render_foreign(&mut out, body);
    out
}

/// The tasks others funded naming the plan or one of its tasks, apart
/// from the tree (never in its cost), each with who funded it and what it
/// names as parent.
fn render_foreign(out: &mut String, body: &Value) {
    let foreign: Vec<&Value> =
        body["foreign"].as_array().map(|t| t.iter().collect()).unwrap_or_default();
    if foreign.is_empty() {
        return;
    }
    let more = if body["foreign_truncated"] == true { " (and more)" } else { "" };
    out.push_str(&format!(
        "foreign: {} task{}{more} naming this plan or its tasks, funded by others (not in its cost)\n",
        foreign.len(),
        if foreign.len() == 1 { "" } else { "s" },
    ));
    for (i, t) in foreign.iter().enumerate() {
        let lead = if i + 1 == foreign.len() { "└─" } else { "├─" };
        let parent = match t["parent_id"].as_str() {
            Some("0") | None => "no parent".to_owned(),
            Some(p) => format!("under {}", shorten(p)),
        };
        let amount = amount_of(t).map_or_else(|| "?".to_owned(), |a| a.with_unit().to_string());
        out.push_str(&format!(
            "{lead} {}  {:<9} {:<18} funded by {}  {parent}  {amount}\n",
            shorten(t["task_id"].as_str().unwrap_or("?")),
            t["status"].as_str().unwrap_or("?"),
            t["capability"].as_str().unwrap_or("?"),
            t["funder"].as_str().unwrap_or("?"),
        ));
    }
}

/// A task's step path as its segments, when it carries a well-formed one.
fn step(task: &Value) -> Option<Vec<u32>> {
    task["path"].as_str().and_then(|p| path_segments(p).ok())
}

/// A long id as its head and tail.
fn shorten(id: &str) -> String {
    if id.len() > 12 { format!("{}…{}", &id[..6], &id[id.len() - 4..]) } else { id.to_owned() }
}

/// A task's amount, when it reads as base units.
fn amount_of(task: &Value) -> Option<Usdc> {
    task["amount"].as_str().and_then(|a| Usdc::parse_base_units(a).ok())
}

/// Characters of a decline's reason a tree line shows.
const REASON_CHARS: usize = 120;

/// `  declined: <reason>` for a task its executor declined (the reason
/// cut to [`REASON_CHARS`]; why it is unreadable, with its URI, when it
/// is); empty for any other task.
fn decline_note(t: &Value) -> String {
    let Some(uri) = t["decline_reason_uri"].as_str() else { return String::new() };
    let reason = match (t["decline_reason"].as_str(), t["decline_error"].as_str()) {
        (Some(reason), _) => {
            let mut cut: String = reason.chars().take(REASON_CHARS).collect();
            if cut.len() < reason.len() {
                cut.push('…');
            }
            cut
        }
        (None, Some(error)) => {
            format!("(reason unreadable: {error}; {})", uri.chars().take(80).collect::<String>())
        }
        (None, None) => "(no reason given)".to_owned(),
    };
    format!("  declined: {}", reason.replace(['\n', '\r'], " "))
}

/// One task's line after `lead` (the indentation and branch): its path
/// (when `with_path` and it has one), id, status, capability, executor,
/// amount, notes, spec, merge note and decline note.
fn task_line(t: &Value, lead: &str, with_path: bool) -> String {
    let id = t["task_id"].as_str().unwrap_or("?");
    let path =
        t["path"].as_str().filter(|_| with_path).map(|p| format!("[{p}] ")).unwrap_or_default();
    // A merge: the upstreams besides the parent it hangs under.
    let parent_id = t["parent_id"].as_str();
    let also: Vec<String> = t["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|i| Some(*i) != parent_id)
        .map(shorten)
        .collect();
    let merge = if t["merge"] == true && !also.is_empty() {
        format!("  ⇐ merge, also from {}", also.join(", "))
    } else {
        String::new()
    };
    let amount = amount_of(t).map_or_else(|| "?".to_owned(), |a| a.with_unit().to_string());
    format!(
        "{lead} {path}{}  {:<9} {:<18} {:<44} {amount}{}  {}{merge}{}\n",
        shorten(id),
        t["status"].as_str().unwrap_or("?"),
        t["capability"].as_str().unwrap_or("?"),
        t["executor"].as_str().unwrap_or("?"),
        if t["pending_parent"] == true { " (parent not indexed yet)" } else { "" },
        t["spec"].as_str().unwrap_or("").chars().take(50).collect::<String>(),
        decline_note(t),
    )
}

/// The children of `parent` (the roots for `None`) under `prefix`, and
/// theirs. With `skip_steps` (a nested plan), tasks carrying a step path
/// are left out: the nesting places them. Each task is drawn once.
fn walk<'a>(
    out: &mut String,
    tasks: &[&'a Value],
    parent: Option<&str>,
    prefix: &str,
    skip_steps: bool,
    seen: &mut BTreeSet<&'a str>,
    notes: Notes<'_>,
) {
    let children = children_of(tasks, parent, skip_steps, seen);
    for (i, t) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let lead = format!("{prefix}{}", if last { "└─" } else { "├─" });
        out.push_str(&task_line(t, &lead, skip_steps));
        let id = t["task_id"].as_str().unwrap_or("?");
        seen.insert(id);
        let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
        push_notes(out, tasks, t, &deeper, skip_steps, seen, notes);
        walk(out, tasks, Some(id), &deeper, skip_steps, seen, notes);
    }
}

/// The tasks `walk` draws under `parent` (the roots for `None`), not yet drawn.
fn children_of<'a>(
    tasks: &[&'a Value],
    parent: Option<&str>,
    skip_steps: bool,
    seen: &BTreeSet<&'a str>,
) -> Vec<&'a Value> {
    tasks
        .iter()
        .copied()
        .filter(|t| match parent {
            None => t["depth"] == 0,
            Some(p) => t["parent_id"].as_str() == Some(p) && t["depth"] != 0,
        })
        .filter(|t| !(skip_steps && step(t).is_some()))
        .filter(|t| !seen.contains(t["task_id"].as_str().unwrap_or("?")))
        .collect()
}

/// The notes of `task` under its line, at `deeper` (its children's
/// indentation), with a branch line down to its children when it has any.
fn push_notes<'a>(
    out: &mut String,
    tasks: &[&'a Value],
    task: &Value,
    deeper: &str,
    skip_steps: bool,
    seen: &BTreeSet<&'a str>,
    notes: Notes<'_>,
) {
    let lines = notes(task);
    if lines.is_empty() {
        return;
    }
    let id = task["task_id"].as_str();
    let down = if children_of(tasks, id, skip_steps, seen).is_empty() { " " } else { "│" };
    for line in lines {
        out.push_str(format!("{deeper}{down}  {line}").trim_end());
        out.push('\n');
    }
}

/// What one level of a nested plan shows: a task, or a nested plan with
/// its tasks (in path order, all sharing the plan's path).
enum Level<'v, 'a> {
    Task(&'a Value),
    Plan(&'v [(Vec<u32>, &'a Value)]),
}

/// The tasks with a step path in path order (numeric, segment by segment),
/// under the headers of their nested plans, then the roots without one;
/// tasks without a path hang under their parents.
fn render_nested<'a>(
    out: &mut String,
    tasks: &[&'a Value],
    seen: &mut BTreeSet<&'a str>,
    notes: Notes<'_>,
) {
    let mut steps: Vec<(Vec<u32>, &'a Value)> =
        tasks.iter().filter_map(|t| step(t).map(|s| (s, *t))).collect();
    // Stable: tasks of one path (retries) keep the indexer's order.
    steps.sort_by(|a, b| a.0.cmp(&b.0));
    let roots = tasks.iter().copied().filter(|t| t["depth"] == 0 && step(t).is_none());
    let mut top = levels(&steps, 0);
    top.extend(roots.map(Level::Task));
    render_levels(out, tasks, &top, 0, "", seen, notes);
}

/// The entries of one level of `steps` (all sharing their first `depth`
/// segments): a step ending here is a task, a run of deeper steps under one
/// segment a nested plan.
fn levels<'v, 'a>(steps: &'v [(Vec<u32>, &'a Value)], depth: usize) -> Vec<Level<'v, 'a>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let (segments, task) = &steps[i];
        if segments.len() == depth + 1 {
            out.push(Level::Task(task));
            i += 1;
            continue;
        }
        let run = steps[i..]
            .iter()
            .take_while(|(s, _)| s.len() > depth + 1 && s[depth] == segments[depth])
            .count();
        out.push(Level::Plan(&steps[i..i + run]));
        i += run;
    }
    out
}

/// Draws `entries`, the level `depth` of a nested plan, under `prefix`.
fn render_levels<'a>(
    out: &mut String,
    tasks: &[&'a Value],
    entries: &[Level<'_, 'a>],
    depth: usize,
    prefix: &str,
    seen: &mut BTreeSet<&'a str>,
    notes: Notes<'_>,
) {
    for (i, entry) in entries.iter().enumerate() {
        let last = i + 1 == entries.len();
        let lead = format!("{prefix}{}", if last { "└─" } else { "├─" });
        let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
        match entry {
            Level::Task(t) => {
                out.push_str(&task_line(t, &lead, true));
                let id = t["task_id"].as_str().unwrap_or("?");
                seen.insert(id);
                push_notes(out, tasks, t, &deeper, true, seen, notes);
                walk(out, tasks, Some(id), &deeper, true, seen, notes);
            }
            Level::Plan(steps) => {
                let segments = &steps[0].0;
                let path: Vec<String> = segments[..=depth].iter().map(u32::to_string).collect();
                // The first label given at this level (quoted, control
                // characters escaped: labels are written by task creators).
                let label = steps
                    .iter()
                    .find_map(|(_, t)| t["groups"][depth].as_str())
                    .map(|l| format!(" {l:?}"))
                    .unwrap_or_default();
                let count = steps.len();
                let cost = steps
                    .iter()
                    .try_fold(Usdc::ZERO, |sum, (_, t)| sum.checked_add(amount_of(t)?))
                    .map_or_else(|| "?".to_owned(), |c| c.with_unit().to_string());
                out.push_str(&format!(
                    "{lead} ▾ {} nested plan{label}: {count} task{}, {cost}\n",
                    path.join("."),
                    if count == 1 { "" } else { "s" },
                ));
                let inner = levels(steps, depth + 1);
                render_levels(out, tasks, &inner, depth + 1, &deeper, seen, notes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::plan_tree;

    #[test]
    fn a_merge_is_marked_with_its_other_upstreams() {
        let task = |id: &str, parent: &str, depth: i64, inputs: Vec<&str>, merge: bool| {
            json!({
                "task_id": id, "parent_id": parent, "depth": depth, "status": "Paid",
                "capability": "summarize", "executor": "0x01", "amount": "1000000",
                "spec": "s", "pending_parent": false, "inputs": inputs, "merge": merge,
            })
        };
        let body = json!({
            "plan_id": "0xab", "block": 9,
            "tasks": [
                task("11", "0", 0, vec![], false),
                task("12", "0", 0, vec![], false),
                task("13", "11", 1, vec!["11", "12"], true),
            ],
        });
        let text = plan_tree(&body);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[2].contains(" 13 ") && lines[2].ends_with("⇐ merge, also from 12"), "{text}");
        assert!(!lines[1].contains("merge") && !lines[3].contains("merge"), "{text}");
    }

    /// Notes hang under their task, indented to its place, with a branch
    /// line down to its children when it has some; a task without notes
    /// draws as before.
    #[test]
    fn notes_hang_under_their_task() {
        let task = |id: &str, parent: &str, depth: i64| {
            json!({
                "task_id": id, "parent_id": parent, "depth": depth, "status": "Paid",
                "capability": "summarize", "executor": "0x01", "amount": "1000000",
                "spec": "s", "pending_parent": false, "inputs": [], "merge": false,
            })
        };
        let body = json!({
            "plan_id": "0xab", "block": 9,
            "tasks": [task("11", "0", 0), task("12", "11", 1), task("13", "0", 0)],
        });
        let notes = |t: &serde_json::Value| match t["task_id"].as_str() {
            Some("11") => vec!["Bonjour".to_owned(), "le monde".to_owned()],
            Some("12") => vec!["fin".to_owned()],
            _ => Vec::new(),
        };
        let text = super::plan_tree_with(&body, &notes);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "{text}");
        assert!(lines[1].starts_with("├─ 11 "), "{text}");
        assert_eq!(lines[2..4], ["│  │  Bonjour", "│  │  le monde"], "{text}");
        assert!(lines[4].starts_with("│  └─ 12 "), "{text}");
        assert_eq!(lines[5], "│        fin", "{text}");
        assert!(lines[6].starts_with("└─ 13 "), "{text}");
        let bare: Vec<String> =
            text.lines().filter(|l| l.contains(" Paid ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(plan_tree(&body), format!("plan 0xab  (as of block 9)\n{}", bare.concat()));
    }

    /// Tasks others funded under the plan are drawn apart from its tree,
    /// with who funded them and what they name as parent.
    #[test]
    fn foreign_tasks_are_drawn_apart() {
        let body = json!({
            "plan_id": "0xab", "block": 9,
            "tasks": [{"task_id": "11", "parent_id": "0", "depth": 0, "status": "Paid",
                       "capability": "summarize", "executor": "0x01", "amount": "1000000",
                       "spec": "s", "pending_parent": false, "inputs": [], "merge": false}],
            "foreign": [
                {"task_id": "21", "parent_id": "11", "status": "Created",
                 "capability": "summarize", "funder": "0x09", "amount": "500000"},
                {"task_id": "22", "parent_id": "0", "status": "Created",
                 "capability": "summarize", "funder": "0x09", "amount": "500000"},
            ],
            "foreign_truncated": false,
        });
        let text = plan_tree(&body);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].starts_with("└─ 11 "), "{text}");
        assert!(lines[2].starts_with("foreign: 2 tasks naming this plan"), "{text}");
        assert!(lines[3].starts_with("├─ 21 ") && lines[3].contains("funded by 0x09  under 11"));
        assert!(lines[4].starts_with("└─ 22 ") && lines[4].contains("no parent  0.500000 USDC"));
    }

    /// A declined task says so, with its reason; an unreadable reason says
    /// why and keeps its URI; a decline without one says that.
    #[test]
    fn a_declined_task_shows_its_reason() {
        let task = |id: &str, extra: serde_json::Value| {
            let mut t = json!({
                "task_id": id, "parent_id": "0", "depth": 0, "status": "Declined",
                "capability": "translate", "executor": "0x01", "amount": "1000000",
                "spec": "s", "pending_parent": false, "inputs": [], "merge": false,
            });
            t.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            t
        };
        let long = "x".repeat(300);
        let body = json!({
            "plan_id": "0xab", "block": 9,
            "tasks": [
                task("11", json!({"decline_reason_uri": "data:,r",
                                  "decline_reason": "cannot read the envelope:\nno blob"})),
                task("12", json!({"decline_reason_uri": "sha256:ab", "decline_reason": null,
                                  "decline_error": "no blob stored for sha256:ab"})),
                task("13", json!({"decline_reason_uri": "", "decline_reason": null})),
                task("14", json!({"decline_reason_uri": "data:,l", "decline_reason": long})),
                task("15", json!({"status": "Paid", "decline_reason_uri": null})),
            ],
        });
        let text = plan_tree(&body);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[1].ends_with("  s  declined: cannot read the envelope: no blob"), "{text}");
        assert!(
            lines[2].ends_with(
                "declined: (reason unreadable: no blob stored for sha256:ab; sha256:ab)"
            ),
            "{text}"
        );
        assert!(lines[3].ends_with("declined: (no reason given)"), "{text}");
        assert!(lines[4].ends_with(&format!("declined: {}…", "x".repeat(120))), "{text}");
        assert!(!lines[5].contains("declined"), "{text}");
    }

    /// Byte for byte what a tree without nesting printed before plans could
    /// nest, a one-segment path included.
    #[test]
    fn a_flat_tree_prints_as_before() {
        let body = json!({
            "plan_id": "0xab", "block": 9,
            "tasks": [
                {"task_id": "11", "parent_id": "0", "depth": 0, "status": "Paid",
                 "capability": "translate", "executor": "0x01", "amount": "250000",
                 "spec": "Translate the brief into English, keeping every figure as it is",
                 "pending_parent": false, "inputs": [], "merge": false},
                {"task_id": "123456789012345678", "parent_id": "11", "depth": 1,
                 "status": "Accepted", "capability": "summarize", "executor": "0x02",
                 "amount": "1000000", "spec": "s", "pending_parent": false,
                 "inputs": ["11", "12"], "merge": true},
                {"task_id": "12", "parent_id": "7", "depth": 0, "status": "Created",
                 "capability": null, "executor": "0x03", "amount": "x", "spec": null,
                 "pending_parent": true, "inputs": [], "merge": false},
                {"task_id": "14", "parent_id": "12", "depth": 1, "status": "Paid",
                 "capability": "review", "executor": "0x04", "amount": "5",
                 "spec": "r", "pending_parent": false, "inputs": [], "merge": false,
                 "path": "3", "groups": []},
                {"task_id": "15", "parent_id": "99", "depth": null, "status": "Paid",
                 "capability": "review", "executor": "0x04", "amount": "5",
                 "spec": "detached", "pending_parent": false, "inputs": [], "merge": false},
            ],
        });
        let expected = [
            "plan 0xab  (as of block 9)",
            "├─ 11  Paid      translate          0x01                                         \
             0.250000 USDC  Translate the brief into English, keeping every fi",
            "│  └─ 123456…5678  Accepted  summarize          0x02                                         \
             1.000000 USDC  s  ⇐ merge, also from 12",
            "└─ 12  Created   ?                  0x03                                         \
             ? (parent not indexed yet)  ",
            "   └─ 14  Paid      review             0x04                                         \
             0.000005 USDC  r",
        ];
        assert_eq!(plan_tree(&body), format!("{}\n", expected.join("\n")));
    }

    #[test]
    fn a_nested_plan_is_drawn_as_its_nesting_in_path_order() {
        let task = |id: &str, parent: &str, depth: i64, path: Option<&str>, groups: Vec<&str>| {
            json!({
                "task_id": id, "parent_id": parent, "depth": depth, "status": "Paid",
                "capability": "summarize", "executor": "0x01", "amount": format!("{id}0000"),
                "spec": format!("step {id}"), "pending_parent": false, "inputs": [],
                "merge": false, "path": path, "groups": groups,
            })
        };
        let (outer, inner) = ("research the market", "dig deeper");
        let mut merge = task("13", "12", 2, Some("1.1.1"), vec![outer, inner]);
        merge["inputs"] = json!(["12", "10"]);
        merge["merge"] = json!(true);
        let mut last = task("14", "13", 3, Some("2"), vec![]);
        last["inputs"] = json!(["13", "11"]);
        last["merge"] = json!(true);
        // In the indexer's order (depth, then block), not the path's.
        let body = json!({
            "plan_id": "0xab", "block": 9,
            "tasks": [
                task("11", "0", 0, Some("1.0"), vec![outer]),
                task("10", "0", 0, Some("0"), vec![]),
                task("12", "11", 1, Some("1.1.0"), vec![outer, inner]),
                task("15", "12", 2, None, vec![]),
                merge,
                last,
            ],
        });
        let text = plan_tree(&body);
        let lines: Vec<&str> = text.lines().collect();
        let heads: Vec<String> =
            lines.iter().map(|l| l.split("  Paid").next().unwrap_or(l).to_owned()).collect();
        assert_eq!(
            heads,
            [
                "plan 0xab  (as of block 9)",
                "├─ [0] 10",
                "├─ ▾ 1 nested plan \"research the market\": 3 tasks, 0.360000 USDC",
                "│  ├─ [1.0] 11",
                "│  └─ ▾ 1.1 nested plan \"dig deeper\": 2 tasks, 0.250000 USDC",
                "│     ├─ [1.1.0] 12",
                "│     │  └─ 15",
                "│     └─ [1.1.1] 13",
                "└─ [2] 14",
            ],
            "{text}"
        );
        // Every task keeps its marks: status, capability, amount, spec, merge.
        assert!(lines[1].ends_with("0.100000 USDC  step 10"), "{text}");
        assert!(
            lines[6].contains("  Paid      summarize ") && lines[6].ends_with("step 15"),
            "{text}"
        );
        assert!(lines[7].ends_with("0.130000 USDC  step 13  ⇐ merge, also from 10"), "{text}");
        assert!(lines[8].ends_with("step 14  ⇐ merge, also from 11"), "{text}");
        assert_eq!(text.matches("merge").count(), 2, "{text}");
    }

    #[test]
    fn a_nested_plan_without_labels_or_amounts_still_draws() {
        let body = json!({
            "plan_id": "0xab", "block": 9,
            "tasks": [
                {"task_id": "20", "parent_id": "0", "depth": 0, "path": "10.0", "amount": "x"},
                {"task_id": "21", "parent_id": "0", "depth": 0, "path": "9"},
                {"task_id": "22", "parent_id": "0", "depth": 0, "path": "not.a.path"},
                {"task_id": "23", "parent_id": "0", "depth": 0, "path": "10.1", "amount": "5",
                 "groups": ["\u{1b}[31mred"]},
            ],
        });
        let text = plan_tree(&body);
        let heads: Vec<&str> = text.lines().map(|l| l.split("  ?").next().unwrap_or(l)).collect();
        assert_eq!(
            heads,
            [
                "plan 0xab  (as of block 9)",
                "├─ [9] 21",
                // The first label given, quoted, its control characters escaped.
                "├─ ▾ 10 nested plan \"\\u{1b}[31mred\": 2 tasks, ?",
                "│  ├─ [10.0] 20",
                "│  └─ [10.1] 23",
                "└─ [not.a.path] 22",
            ],
            "numeric order (9 before 10), a malformed path as a plain root: {text}"
        );
        assert!(!text.contains('\u{1b}'), "{text}");
        let mut unlabelled = body;
        unlabelled["tasks"][3]["groups"] = json!([]);
        let text = plan_tree(&unlabelled);
        assert!(text.contains("\n├─ ▾ 10 nested plan: 2 tasks, ?\n"), "{text}");
    }
}
