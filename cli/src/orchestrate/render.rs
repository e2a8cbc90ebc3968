//! What the client commands print of the API's views: the plan card, the
//! classification card, and a run's spend, nested plans, declines and
//! decisions as `runs show` lists them.

use serde_json::Value;
use tessera_bindings::usdc::Usdc;

/// An amount the API sent (a string or number of base units) with its unit;
/// `?` when it is not one.
pub(super) fn usdc(amount: &Value) -> String {
    serde_json::from_value::<Usdc>(amount.clone())
        .map_or_else(|_| "? USDC".to_owned(), |u| u.with_unit().to_string())
}

/// The plan card: sub-tasks, executors, costs, dependencies, totals.
pub(crate) fn card(view: &Value) -> String {
    let mut out = String::new();
    let plan = &view["plan"];
    out.push_str(&format!(
        "Plan {}  ({}; review: {})\n",
        view["id"].as_str().unwrap_or("?"),
        view["state"].as_str().unwrap_or("?"),
        plan["review"].as_str().unwrap_or("auto")
    ));
    out.push_str(&format!(
        "  {:>3}  {:<20} {:<44} {:>16}  {}\n",
        "#", "capability", "executor", "cost", "after"
    ));
    let groups: Vec<&Value> = plan["groups"].as_array().into_iter().flatten().collect();
    let path_of = step_paths(plan);
    let mut opened = std::collections::BTreeSet::new();
    for t in plan["subtasks"].as_array().into_iter().flatten() {
        let deps: Vec<String> = t["depends_on"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| path_of(d).unwrap_or_else(|| d.to_string()))
            .collect();
        // A nested plan's leaves follow a header naming it, indented one
        // step per level.
        let path = t["path"].as_str().filter(|_| !groups.is_empty());
        let segments: Vec<&str> = path.map(|p| p.split('.').collect()).unwrap_or_default();
        for level in 1..segments.len() {
            let prefix = segments[..level].join(".");
            if !opened.insert(prefix.clone()) {
                continue;
            }
            let g = groups.iter().find(|g| g["path"] == prefix.as_str());
            out.push_str(&format!(
                "  {}▾ {prefix}  nested plan, share {}: {}\n",
                "  ".repeat(level - 1),
                g.map_or_else(|| "?".to_owned(), |g| usdc(&g["budget"])),
                truncate(g.and_then(|g| g["spec"].as_str()).unwrap_or(""), 70)
            ));
            if let Some(when) = view["conditions"][prefix.as_str()].as_str() {
                out.push_str(&format!(
                    "  {}  runs only if {when}; else every step of it is skipped, unfunded\n",
                    "  ".repeat(level - 1),
                ));
            }
        }
        let pad = "  ".repeat(segments.len().saturating_sub(1));
        let at = path.map(|p| format!("  at {p}")).unwrap_or_default();
        out.push_str(&format!(
            "  {pad}{:>3}  {:<20} {:<44} {:>16}  {}{at}\n",
            t["index"].to_string(),
            t["capability"].as_str().unwrap_or("?"),
            t["executor"].as_str().unwrap_or("(unassigned)"),
            usdc(&t["cost"]),
            if deps.is_empty() { "-".to_owned() } else { deps.join(", ") }
        ));
        out.push_str(&format!("       {pad}{}\n", truncate(t["spec"].as_str().unwrap_or(""), 90)));
        // Why the orchestrator chose this executor, while it still is the one.
        let chosen = plan["choices"].as_array().into_iter().flatten().find(|c| {
            c["index"] == t["index"]
                && c["executor"].as_str().map(str::to_lowercase)
                    == t["executor"].as_str().map(str::to_lowercase)
        });
        if let Some(c) = chosen {
            out.push_str(&format!("       {pad}{}\n", choice_line(c)));
        }
        // A nested plan's conditions read by step path, as the API writes them.
        let when = path.and_then(|p| view["conditions"][p].as_str()).or(t["when"].as_str());
        if let Some(when) = when {
            out.push_str(&format!("       {pad}runs only if {when}; else skipped, unfunded\n"));
        }
        if let Some(r) = recovery_line(&t["recovery"]) {
            out.push_str(&format!("       {pad}recovery: {r}\n"));
        }
    }
    for cp in plan["checkpoints"].as_array().into_iter().flatten() {
        out.push_str(&format!("  {}\n", checkpoint_line(cp, &view["gates"], &path_of)));
    }
    if let Some(r) = recovery_line(&plan["recovery"]) {
        out.push_str(&format!("  recovery: {r}\n"));
    }
    let secs = view["estimated_duration_secs"].as_u64().unwrap_or(0);
    out.push_str(&format!(
        "  total {} of budget {}; at most {}h{:02}m if every sub-task uses its whole deadline\n",
        usdc(&view["total_cost"]),
        usdc(&plan["budget"]),
        secs / 3600,
        secs % 3600 / 60
    ));
    out
}

/// The step path of sub-task `i` in a nested plan (`2`, `1.1`); `None` in
/// a flat plan, where a sub-task goes by its index.
fn step_paths(plan: &Value) -> impl Fn(&Value) -> Option<String> + '_ {
    let nested = plan["groups"].as_array().is_some_and(|g| !g.is_empty());
    move |i: &Value| {
        let task = plan["subtasks"].as_array()?.iter().find(|t| t["index"] == *i)?;
        task["path"].as_str().filter(|_| nested).map(str::to_owned)
    }
}

/// `⏸ checkpoint legal after #0, #1: an approver passes or stops the run;
/// after 1h escalate` (after `2`, `1.1` in a nested plan) and, once
/// reached, where it stands.
fn checkpoint_line(
    cp: &Value,
    gates: &Value,
    path_of: impl Fn(&Value) -> Option<String>,
) -> String {
    let after: Vec<String> = cp["after"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| path_of(i).unwrap_or_else(|| format!("#{i}")))
        .collect();
    let name = cp["name"].as_str().unwrap_or("?");
    let timeout = match cp["timeout_secs"].as_u64() {
        Some(t) if t % 3600 == 0 => format!("{}h", t / 3600),
        Some(t) if t % 60 == 0 => format!("{}m", t / 60),
        Some(t) => format!("{t}s"),
        None => "the decision timeout".to_owned(),
    };
    let mut out = format!(
        "⏸ checkpoint {name} after {}: an approver passes or stops the run; after {timeout} {}",
        after.join(", "),
        cp["on_timeout"].as_str().unwrap_or("escalate")
    );
    let gate = &gates[name];
    if let Some(state) = gate["state"].as_str() {
        out.push_str(&format!(" — {state}"));
        if let Some(by) = gate["by"].as_str() {
            out.push_str(&format!(" by the {by}"));
        }
    }
    out
}

/// A recovery object as `on decline retry(2) · on expiry reassign`,
/// defaults left out; `None` when everything is the default.
fn recovery_line(r: &Value) -> Option<String> {
    let parts: Vec<String> = [
        ("on_decline", "on decline", "pause"),
        ("on_expiry", "on expiry", "pause"),
        ("on_dispute_lost", "on a lost dispute", "fail"),
    ]
    .iter()
    .filter_map(|(key, words, default)| {
        r[key].as_str().filter(|v| v != default).map(|v| format!("{words} {v}"))
    })
    .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// `chosen: 0x14dC…9955 — balanced: 91% reliable (…), 0.42 USDC (…);
/// runner-up 0x2361…1E8f (37%: less reliable: …)`.
fn choice_line(c: &Value) -> String {
    let short = |a: &Value| match a.as_str() {
        Some(a) if a.len() == 42 && a.is_ascii() => format!("{}…{}", &a[..6], &a[38..]),
        Some(a) => a.to_owned(),
        None => "?".to_owned(),
    };
    let mut out =
        format!("chosen: {} — {}", short(&c["executor"]), c["reason"].as_str().unwrap_or("?"));
    if let Some(ru) = c.get("runner_up").filter(|r| r.is_object()) {
        out.push_str(&format!(
            "; runner-up {} ({}%: {})",
            short(&ru["executor"]),
            (ru["score_bps"].as_u64().unwrap_or(0) + 50) / 100,
            ru["reason"].as_str().unwrap_or("?")
        ));
    }
    out
}

pub(super) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// The classification card: quadrant, confidences, signals, reasoning.
pub(crate) fn classification_card(outcome: &Value) -> String {
    let c = &outcome["classification"];
    let mut out = format!(
        "Classification ({}): {} — decomposability {} ({:.2}), stakes {} ({:.2}); ceremony: {}\n",
        c["engine"].as_str().unwrap_or("?"),
        outcome["quadrant"].as_str().unwrap_or("?"),
        c["decomposability"]["value"].as_str().unwrap_or("?"),
        c["decomposability"]["confidence"].as_f64().unwrap_or(0.0),
        c["stakes"]["value"].as_str().unwrap_or("?"),
        c["stakes"]["confidence"].as_f64().unwrap_or(0.0),
        outcome["ceremony"].as_str().unwrap_or("?"),
    );
    out.push_str(&format!("  reasoning: {}\n", c["reasoning"].as_str().unwrap_or("")));
    for sig in c["signals"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  signal {:<8} {:<24} {}\n",
            sig["kind"].as_str().unwrap_or(""),
            sig["name"].as_str().unwrap_or(""),
            truncate(sig["detail"].as_str().unwrap_or(""), 70)
        ));
    }
    if let Some(u) = outcome["unassigned"].as_array().filter(|u| !u.is_empty()) {
        let list: Vec<String> = u.iter().map(Value::to_string).collect();
        out.push_str(&format!(
            "  no active agent offers sub-task(s) {}: reassign them by hand\n",
            list.join(", ")
        ));
    }
    out
}

/// A sub-task attempt its executor declined on chain (a `subtask_declined`
/// event of the run view's `declines`), with the reason it gave.
pub(super) fn decline_line(d: &Value) -> String {
    format!(
        "  step {} declined by {} (attempt {}, task {}): {}",
        d["index"],
        d["executor"].as_str().unwrap_or("?"),
        d["attempt"],
        d["task_id"].as_str().unwrap_or("-"),
        d["reason"].as_str().unwrap_or("(no reason read)"),
    )
}

/// What a started run has spent against its budget, from the API's view.
/// One nested plan of a run, as `runs show` lists it.
pub(super) fn nested_line(n: &Value) -> String {
    format!(
        "  nested {} (level {}) {}: leaves {} cost {} of share {}; plan {}",
        n["path"].as_str().unwrap_or("?"),
        n["depth"],
        n["state"].as_str().unwrap_or("?"),
        n["subtasks"].as_array().map_or(0, Vec::len),
        usdc(&n["cost"]),
        usdc(&n["budget"]),
        n["plan_id"].as_str().unwrap_or("?"),
    )
}

pub(super) fn spend_line(view: &Value) -> Option<String> {
    let spend = view.get("spend").filter(|s| s["committed"] != "0")?;
    Some(format!(
        "  spent: {} funded, {} paid, {} refunded, of a {} budget",
        usdc(&spend["committed"]),
        usdc(&spend["paid"]),
        usdc(&spend["refunded"]),
        usdc(&view["plan"]["budget"])
    ))
}

/// One decision of a run (from the API's view or a `decision_applied`
/// event): what came of it, and a failure plainly, with the chain's refusal.
pub(super) fn decision_line(d: &Value) -> String {
    // An event names the decision in `decision` (its `kind` and `seq` are
    // the event's own); the API's row in `kind`.
    let event = d.get("decision").is_some();
    let kind = d["decision"].as_str().or_else(|| d["kind"].as_str()).unwrap_or("?");
    let seq = d["seq"].as_i64().filter(|_| !event).map(|s| format!(" {s}")).unwrap_or_default();
    let index = d["idx"].as_u64().or_else(|| d["index"].as_u64());
    let index = index.map(|i| format!(" #{i}")).unwrap_or_default();
    let what = match d["ok"].as_bool() {
        Some(false) => {
            let error = d["error"].as_str().or_else(|| d["outcome"].as_str()).unwrap_or("failed");
            match d["revert"].as_str() {
                Some(revert) => format!("FAILED: {error} (revert: {revert})"),
                None => format!("FAILED: {error}"),
            }
        }
        Some(true) => d["outcome"].as_str().unwrap_or("done").to_owned(),
        None => "queued".to_owned(),
    };
    format!("  decision{seq} {kind}{index}: {what}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tessera_orchestrator::plan::Plan;

    use super::*;

    #[test]
    fn a_decline_reads_with_its_executor_and_reason() {
        let d = json!({"kind": "subtask_declined", "index": 1, "attempt": 0, "task_id": "42",
            "executor": "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
            "reason": "capability \"x\" is not offered", "reason_uri": "data:…"});
        assert_eq!(
            decline_line(&d),
            "  step 1 declined by 0x90f79bf6eb2c4f870365e785982e1f101e93b906 (attempt 0, task \
             42): capability \"x\" is not offered"
        );
        assert!(decline_line(&json!({"index": 0})).ends_with("(no reason read)"));
    }

    #[test]
    fn a_nested_plan_card_shows_its_levels() {
        let leaf = |index: u32, path: &str, cap: &str| {
            json!({"index": index, "path": path, "capability": cap, "spec": format!("do {cap}"),
                   "executor": null, "cost": 100_000, "depends_on": []})
        };
        let view = json!({"id": "0xabc", "state": "proposed", "total_cost": "300000",
            "estimated_duration_secs": 3600,
            "plan": {"review": "auto", "budget": 1_000_000,
                "groups": [{"path": "1", "spec": "Digest", "budget": 250_000},
                           {"path": "1.1", "spec": "Judge", "budget": 100_000}],
                "subtasks": [leaf(0, "0", "translate"), leaf(1, "1.0", "summarize"),
                             leaf(2, "1.1.0", "sentiment-classify")]}});
        let text = card(&view);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("    0  translate") && lines[2].ends_with("at 0"), "{text}");
        assert_eq!(lines[4], "  ▾ 1  nested plan, share 0.250000 USDC: Digest");
        assert!(
            lines[5].starts_with("      1  summarize") && lines[5].ends_with("at 1.0"),
            "{text}"
        );
        assert_eq!(lines[7], "    ▾ 1.1  nested plan, share 0.100000 USDC: Judge");
        assert!(lines[8].starts_with("        2  sentiment-classify"), "{text}");
        let flat = json!({"id": "0x1", "plan": {"subtasks": [leaf(0, "0", "translate")]}});
        assert!(!card(&flat).contains("at 0"), "a flat plan reads as before");
        let n = json!({"path": "1.1", "depth": 3, "state": "completed", "subtasks": [2],
                       "cost": "100000", "budget": "100000", "plan_id": "0xdef"});
        assert_eq!(
            nested_line(&n),
            "  nested 1.1 (level 3) completed: leaves 1 cost 0.100000 USDC of share 0.100000 \
             USDC; plan 0xdef"
        );
    }

    #[test]
    fn a_nested_plan_card_names_steps_by_path() {
        // Issue 28's plan: 0 translate; 1 nested {1.0 entities, 1.1
        // sentiment}; 2 sentiment; 3 summarize after 1 and 2 when out[2]'s
        // score is at least -1; a checkpoint after 2; and a nested step with
        // its own condition.
        let leaf = |index: u32, cap: &str, deps: &[u32]| {
            json!({"index": index, "capability": cap, "spec": format!("do {cap}"),
                   "executor": "0x00000000000000000000000000000000000000aa", "cost": 100,
                   "deadline_offset_secs": 3600, "depends_on": deps})
        };
        let mut summarize = leaf(3, "summarize", &[1, 2]);
        summarize["when"] = json!("out[2].score >= -1");
        let file = json!({"version": 1, "id": format!("0x{}", "11".repeat(32)), "budget": 10_000,
            "checkpoints": [{"name": "tone", "after": [2]}],
            "subtasks": [leaf(0, "translate", &[]),
                {"index": 1, "spec": "Digest", "cost": 200, "deadline_offset_secs": 3600,
                 "depends_on": [0], "when": "len(out[0].text) > 0",
                 "plan": {"subtasks": [leaf(0, "entities", &[]), leaf(1, "sentiment", &[])]}},
                leaf(2, "sentiment", &[0]), summarize]});
        let plan = Plan::from_json(&file.to_string()).unwrap();
        let view = json!({"id": "0x1", "state": "proposed", "plan": plan,
            "conditions": tessera_orchestrator::runner::views::conditions_by_path(&plan)});
        let text = card(&view);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[4], "  ▾ 1  nested plan, share 0.000200 USDC: Digest", "{text}");
        assert_eq!(
            lines[5],
            "    runs only if len(out[0].text) > 0; else every step of it is skipped, unfunded",
            "{text}"
        );
        let summarize = lines.iter().position(|l| l.contains("summarize")).unwrap();
        assert!(lines[summarize].ends_with("1.0, 1.1, 2  at 3"), "{text}");
        assert_eq!(
            lines[summarize + 2],
            "       runs only if out[2].score >= -1; else skipped, unfunded",
            "{text}"
        );
        assert!(
            text.contains("⏸ checkpoint tone after 2: an approver passes"),
            "the checkpoint follows root step 2: {text}"
        );
    }

    #[test]
    fn the_card_shows_checkpoints_conditions_and_recovery() {
        let view = json!({"id": "0x1", "state": "paused", "total_cost": "600000",
            "gates": {"tone-check": {"state": "reached", "at": 1}},
            "plan": {"budget": 1_000_000,
                "recovery": {"on_decline": "retry(2)", "on_expiry": "pause", "on_dispute_lost": "fail"},
                "checkpoints": [{"name": "tone-check", "after": [0], "timeout_secs": 3600,
                                 "on_timeout": "escalate"},
                                {"name": "final", "after": [0, 1], "on_timeout": "approve"}],
                "subtasks": [
                    {"index": 0, "capability": "sentiment-classify", "spec": "Tone",
                     "executor": "0x1", "cost": 200_000, "depends_on": []},
                    {"index": 1, "capability": "summarize", "spec": "Summary", "executor": "0x2",
                     "cost": 400_000, "depends_on": [0], "when": "out[0].score < 0",
                     "recovery": {"on_expiry": "reassign"}}]}});
        let text = card(&view);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[6], "       runs only if out[0].score < 0; else skipped, unfunded",
            "{text}"
        );
        assert_eq!(lines[7], "       recovery: on expiry reassign", "{text}");
        assert_eq!(
            lines[8],
            "  ⏸ checkpoint tone-check after #0: an approver passes or stops the run; after 1h \
             escalate — reached"
        );
        assert_eq!(
            lines[9],
            "  ⏸ checkpoint final after #0, #1: an approver passes or stops the run; after the \
             decision timeout approve"
        );
        assert_eq!(lines[10], "  recovery: on decline retry(2)");
        assert_eq!(recovery_line(&json!({"on_decline": "pause"})), None, "defaults say nothing");
    }

    #[test]
    fn the_card_says_why_an_executor_was_chosen() {
        let (a, b) = (
            "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
            "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
        );
        let choice = json!({"index": 0, "policy": "balanced", "executor": a, "price": 420_000,
            "score_bps": 7589,
            "reason": "balanced: 91% reliable (19/20 settled, 1 expired, prior 2:1), 0.42 USDC (cheapest 0.35 USDC)",
            "runner_up": {"executor": b, "price": 350_000, "score_bps": 3745,
                          "reason": "less reliable: 38% reliable (1/5 settled, 4 expired), 0.35 USDC"}});
        let view = |executor: &str| {
            json!({"id": "0x1", "plan": {"choices": [choice.clone()], "subtasks": [
                {"index": 0, "capability": "summarize", "spec": "Summarize", "executor": executor,
                 "cost": 420_000, "depends_on": []}]}})
        };
        let text = card(&view(&a.to_lowercase()));
        assert_eq!(
            text.lines().nth(4).unwrap(),
            "       chosen: 0x14dC…9955 — balanced: 91% reliable (19/20 settled, 1 expired, \
             prior 2:1), 0.42 USDC (cheapest 0.35 USDC); runner-up 0x2361…1E8f (37%: less \
             reliable: 38% reliable (1/5 settled, 4 expired), 0.35 USDC)"
        );
        assert!(!card(&view(b)).contains("chosen"), "a hand-picked executor has no choice line");
        let alone =
            json!({"executor": a, "reason": "cheapest: 0.35 USDC, the only eligible offer"});
        assert_eq!(
            choice_line(&alone),
            "chosen: 0x14dC…9955 — cheapest: 0.35 USDC, the only eligible offer"
        );
    }

    #[test]
    fn spend_shows_once_money_moved() {
        let view = |committed: &str| {
            json!({"plan": {"budget": "5000000"},
                   "spend": {"committed": committed, "paid": "800000", "refunded": "400000"}})
        };
        assert_eq!(spend_line(&view("0")), None, "nothing funded yet");
        assert_eq!(
            spend_line(&view("1200000")).unwrap(),
            "  spent: 1.200000 USDC funded, 0.800000 USDC paid, 0.400000 USDC refunded, \
             of a 5.000000 USDC budget"
        );
    }

    #[test]
    fn usdc_formats_base_units() {
        assert_eq!(usdc(&json!("1200000")), "1.200000 USDC");
        assert_eq!(usdc(&json!(5)), "0.000005 USDC");
        assert_eq!(usdc(&json!("x")), "? USDC");
    }

    #[test]
    fn failed_decisions_are_shown_plainly() {
        let failed = json!({"seq": 2, "idx": 0, "kind": "retry", "ok": false,
            "outcome": "failed: chain: …", "error": "chain: refused",
            "revert": "TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 9 })"});
        assert_eq!(
            decision_line(&failed),
            "  decision 2 retry #0: FAILED: chain: refused (revert: TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 9 }))"
        );
        let fine =
            json!({"seq": 1, "idx": null, "kind": "cancel", "ok": true, "outcome": "cancelling"});
        assert_eq!(decision_line(&fine), "  decision 1 cancel: cancelling");
        let queued = json!({"seq": 3, "idx": 1, "kind": "approve", "ok": null, "outcome": null});
        assert_eq!(decision_line(&queued), "  decision 3 approve #1: queued");
    }
}
