//! What the client commands print of the API's views: the plan card, the
//! classification card, and a run's spend, nested plans, declines and
//! decisions as `runs show` lists them.

use alloy::primitives::Address;
use serde::Serialize;
use serde_json::Value;
use tessera_bindings::usdc::Usdc;
use tessera_orchestrator::{
    ceremony::BriefOutcome,
    plan::{Checkpoint, Choice, Plan, RecoveryOverride},
    runner::{NestedView, RunView},
    state::{Gate, Gates, RunEvent},
    store::DecisionRecord,
};

/// An amount with its unit (`1.200000 USDC`).
pub(super) fn usdc(amount: Usdc) -> String {
    amount.with_unit().to_string()
}

/// An amount an event sent (a string or number of base units) with its
/// unit; `?` when it is not one.
pub(super) fn usdc_of(amount: &Value) -> String {
    serde_json::from_value::<Usdc>(amount.clone()).map_or_else(|_| "? USDC".to_owned(), usdc)
}

/// An address as the API writes it (lower-case hex).
pub(super) fn address(a: &Address) -> String {
    a.to_string().to_lowercase()
}

/// A value the API writes as one JSON string (a state, a policy, an
/// engine), as it writes it.
fn word(v: &impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}

/// The plan card: sub-tasks, executors, costs, dependencies, totals.
pub(crate) fn card(view: &RunView) -> String {
    let mut out = String::new();
    let plan = &view.plan;
    out.push_str(&format!(
        "Plan {}  ({}; review: {})\n",
        view.run.id,
        view.run.state,
        word(&plan.review)
    ));
    out.push_str(&format!(
        "  {:>3}  {:<20} {:<44} {:>16}  {}\n",
        "#", "capability", "executor", "cost", "after"
    ));
    let nested = !plan.groups.is_empty();
    let path_of = step_paths(plan);
    let mut opened = std::collections::BTreeSet::new();
    for t in &plan.subtasks {
        let deps: Vec<String> =
            t.depends_on.iter().map(|&d| path_of(d).unwrap_or_else(|| d.to_string())).collect();
        // A nested plan's leaves follow a header naming it, indented one
        // step per level.
        let path = t.path.as_ref().filter(|_| nested).map(ToString::to_string);
        let segments: Vec<&str> =
            path.as_deref().map(|p| p.split('.').collect()).unwrap_or_default();
        for level in 1..segments.len() {
            let prefix = segments[..level].join(".");
            if !opened.insert(prefix.clone()) {
                continue;
            }
            let g = plan.groups.iter().find(|g| g.path.to_string() == prefix);
            out.push_str(&format!(
                "  {}▾ {prefix}  nested plan, share {}: {}\n",
                "  ".repeat(level - 1),
                g.map_or_else(|| "?".to_owned(), |g| usdc(g.budget)),
                truncate(g.map_or("", |g| g.spec.as_str()), 70)
            ));
            if let Some(when) = view.conditions.get(&prefix) {
                out.push_str(&format!(
                    "  {}  runs only if {when}; else every step of it is skipped, unfunded\n",
                    "  ".repeat(level - 1),
                ));
            }
        }
        let pad = "  ".repeat(segments.len().saturating_sub(1));
        let at = path.as_deref().map(|p| format!("  at {p}")).unwrap_or_default();
        out.push_str(&format!(
            "  {pad}{:>3}  {:<20} {:<44} {:>16}  {}{at}\n",
            t.index.to_string(),
            t.capability,
            t.executor.map_or_else(|| "(unassigned)".to_owned(), |a| address(&a)),
            usdc(t.cost),
            if deps.is_empty() { "-".to_owned() } else { deps.join(", ") }
        ));
        out.push_str(&format!("       {pad}{}\n", truncate(&t.spec, 90)));
        // The brief's words that chose the capability, when a brief was planned.
        if !t.chosen_by.is_empty() {
            out.push_str(&format!("       {pad}{}\n", chosen_by_line(&t.chosen_by)));
        }
        // Why the orchestrator chose this executor, while it still is the one.
        let chosen =
            plan.choices.iter().find(|c| c.index == t.index && Some(c.executor) == t.executor);
        if let Some(c) = chosen {
            out.push_str(&format!("       {pad}{}\n", choice_line(c)));
            if c.quiet {
                out.push_str(&format!(
                    "       {pad}! no sign of life from this agent in the last day: if it stays \
                     silent {} blocks it is cancelled and refunded ({})\n",
                    plan.accept_window_blocks,
                    plan.recovery.with(t.recovery.as_ref()).on_decline
                ));
            }
        }
        // A nested plan's conditions read by step path, as the API writes them.
        let when = path
            .as_ref()
            .and_then(|p| view.conditions.get(p))
            .map(String::as_str)
            .or(t.when.as_ref().map(|w| w.as_str()));
        if let Some(when) = when {
            out.push_str(&format!("       {pad}runs only if {when}; else skipped, unfunded\n"));
        }
        if let Some(r) = t.recovery.as_ref().and_then(recovery_line) {
            out.push_str(&format!("       {pad}recovery: {r}\n"));
        }
    }
    for cp in &plan.checkpoints {
        out.push_str(&format!("  {}\n", checkpoint_line(cp, &view.gates, &path_of)));
    }
    let r = plan.recovery;
    let recovery = RecoveryOverride {
        on_decline: Some(r.on_decline),
        on_expiry: Some(r.on_expiry),
        on_dispute_lost: Some(r.on_dispute_lost),
    };
    if let Some(r) = recovery_line(&recovery) {
        out.push_str(&format!("  recovery: {r}\n"));
    }
    let secs = view.estimated_duration_secs;
    out.push_str(&format!(
        "  total {} of budget {}; at most {}h{:02}m if every sub-task uses its whole deadline\n",
        usdc(view.total_cost),
        usdc(plan.budget),
        secs / 3600,
        secs % 3600 / 60
    ));
    out
}

/// The step path of sub-task `i` in a nested plan (`2`, `1.1`); `None` in
/// a flat plan, where a sub-task goes by its index.
fn step_paths(plan: &Plan) -> impl Fn(u32) -> Option<String> + '_ {
    let nested = !plan.groups.is_empty();
    move |i: u32| {
        let task = plan.subtask(i)?;
        task.path.as_ref().filter(|_| nested).map(ToString::to_string)
    }
}

/// `⏸ checkpoint legal after #0, #1: an approver passes or stops the run;
/// after 1h escalate` (after `2`, `1.1` in a nested plan) and, once
/// reached, where it stands.
fn checkpoint_line(
    cp: &Checkpoint,
    gates: &Gates,
    path_of: impl Fn(u32) -> Option<String>,
) -> String {
    let after: Vec<String> =
        cp.after.iter().map(|&i| path_of(i).unwrap_or_else(|| format!("#{i}"))).collect();
    let name = &cp.name;
    let timeout = match cp.timeout_secs {
        Some(t) if t % 3600 == 0 => format!("{}h", t / 3600),
        Some(t) if t % 60 == 0 => format!("{}m", t / 60),
        Some(t) => format!("{t}s"),
        None => "the decision timeout".to_owned(),
    };
    let mut out = format!(
        "⏸ checkpoint {name} after {}: an approver passes or stops the run; after {timeout} {}",
        after.join(", "),
        word(&cp.on_timeout)
    );
    if let Some(gate) = gates.get(name) {
        out.push_str(&format!(" — {}", gate.word()));
        if let Gate::Approved { by, .. } | Gate::Rejected { by, .. } = gate {
            out.push_str(&format!(" by the {}", by.as_str()));
        }
    }
    out
}

/// A recovery as `on decline retry(2) · on expiry reassign`, defaults left
/// out; `None` when everything is the default.
fn recovery_line(r: &RecoveryOverride) -> Option<String> {
    let parts: Vec<String> = [
        (r.on_decline.map(|p| word(&p)), "on decline", "pause"),
        (r.on_expiry.map(|p| word(&p)), "on expiry", "pause"),
        (r.on_dispute_lost.map(|p| word(&p)), "on a lost dispute", "fail"),
    ]
    .into_iter()
    .filter_map(|(value, words, default)| {
        value.filter(|v| v != default).map(|v| format!("{words} {v}"))
    })
    .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// `chosen by: "Write", "haiku"`: the brief's words that chose a
/// sub-task's capability, quoted as written (escaped, at most 24
/// characters each).
fn chosen_by_line(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("{:?}", truncate(w, 24))).collect();
    format!("chosen by: {}", quoted.join(", "))
}

/// `chosen: 0x14dC…9955 — balanced: 91% reliable (…), 0.42 USDC (…);
/// runner-up 0x2361…1E8f (37%: less reliable: …)`.
fn choice_line(c: &Choice) -> String {
    let short = |a: &Address| {
        let a = address(a);
        format!("{}…{}", &a[..6], &a[38..])
    };
    let mut out = format!("chosen: {} — {}", short(&c.executor), c.reason);
    if let Some(ru) = &c.runner_up {
        out.push_str(&format!(
            "; runner-up {} ({}%: {})",
            short(&ru.executor),
            (ru.score_bps + 50) / 100,
            ru.reason
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
pub(crate) fn classification_card(outcome: &BriefOutcome) -> String {
    let c = &outcome.classification;
    let mut out = format!(
        "Classification ({}): {} — decomposability {} ({:.2}), stakes {} ({:.2}); ceremony: {}\n",
        word(&c.engine),
        word(&outcome.quadrant),
        word(&c.decomposability.value),
        c.decomposability.confidence,
        word(&c.stakes.value),
        c.stakes.confidence,
        word(&outcome.ceremony),
    );
    out.push_str(&format!("  reasoning: {}\n", c.reasoning));
    for sig in &c.signals {
        out.push_str(&format!(
            "  signal {:<8} {:<24} {}\n",
            word(&sig.kind),
            sig.name,
            truncate(&sig.detail, 70)
        ));
    }
    if !outcome.unassigned.is_empty() {
        let list: Vec<String> = outcome.unassigned.iter().map(u32::to_string).collect();
        out.push_str(&format!(
            "  no active agent offers sub-task(s) {}: reassign them by hand\n",
            list.join(", ")
        ));
    }
    out
}

/// A sub-task attempt its executor declined on chain (a `subtask_declined`
/// event, as the run view's `declines` holds them), with the reason it gave.
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

/// One nested plan of a run, as `runs show` lists it.
pub(super) fn nested_line(n: &NestedView) -> String {
    format!(
        "  nested {} (level {}) {}: leaves {} cost {} of share {}; plan {}",
        n.path,
        n.depth,
        word(&n.state),
        n.subtasks.len(),
        usdc(n.cost),
        usdc(n.budget),
        n.plan_id,
    )
}

/// What a started run has spent against its budget, from the API's view.
pub(super) fn spend_line(view: &RunView) -> Option<String> {
    let spend = Some(view.spend).filter(|s| s.committed != Usdc::ZERO)?;
    Some(format!(
        "  spent: {} funded, {} paid, {} refunded, of a {} budget",
        usdc(spend.committed),
        usdc(spend.paid),
        usdc(spend.refunded),
        usdc(view.plan.budget)
    ))
}

/// One decision of a run, from the API's view: what came of it, and a
/// failure plainly, with the chain's refusal.
pub(super) fn decision_line(d: &DecisionRecord) -> String {
    let seq = format!(" {}", d.seq);
    let outcome = Outcome {
        ok: d.ok,
        error: d.error.as_deref(),
        outcome: d.outcome.as_deref(),
        revert: d.revert.as_deref(),
    };
    decision_text(&seq, d.kind.as_str(), d.idx.map(u64::from), &outcome)
}

/// A `decision_applied` event of a run's stream, read as [`decision_line`]
/// reads a decision; any other event reads as nothing.
pub(super) fn decision_event_line(ev: &RunEvent) -> String {
    let RunEvent::DecisionApplied { index, decision, outcome, ok, error, revert, .. } = ev else {
        return String::new();
    };
    let outcome = Outcome {
        ok: Some(*ok),
        error: error.as_deref(),
        outcome: Some(outcome.as_str()),
        revert: revert.as_deref(),
    };
    decision_text("", decision.as_str(), index.map(u64::from), &outcome)
}

/// What came of a decision.
struct Outcome<'a> {
    ok: Option<bool>,
    error: Option<&'a str>,
    outcome: Option<&'a str>,
    revert: Option<&'a str>,
}

fn decision_text(seq: &str, kind: &str, index: Option<u64>, o: &Outcome<'_>) -> String {
    let index = index.map(|i| format!(" #{i}")).unwrap_or_default();
    let what = match o.ok {
        Some(false) => {
            let error = o.error.or(o.outcome).unwrap_or("failed");
            match o.revert {
                Some(revert) => format!("FAILED: {error} (revert: {revert})"),
                None => format!("FAILED: {error}"),
            }
        }
        Some(true) => o.outcome.unwrap_or("done").to_owned(),
        None => "queued".to_owned(),
    };
    format!("  decision{seq} {kind}{index}: {what}")
}

/// One line of `tessera plan`'s live progress: `elapsed` since it began
/// following, the event's step, kind and block, and what it moved
/// (an amount paid or refunded, a short transaction hash). `None` for an
/// event of no step (the plan's own events print otherwise).
pub(crate) fn event_line(elapsed: std::time::Duration, ev: &Value) -> Option<String> {
    let index = ev["index"].as_u64()?;
    let kind = ev["kind"].as_str().unwrap_or("event");
    let mut line = format!("[{:>6.1}s] #{index} {kind}", elapsed.as_secs_f64());
    if let Some(block) = ev["block"].as_u64() {
        line.push_str(&format!(" (block {block})"));
    }
    if matches!(kind, "subtask_paid" | "subtask_refunded") {
        line.push_str(&format!(": {}", usdc_of(&ev["executor_amount"])));
    }
    if let Some(reason) = ev["reason"]
        .as_str()
        .filter(|_| matches!(kind, "subtask_silent" | "recovery_applied" | "subtask_declined"))
    {
        line.push_str(&format!(": {reason}"));
    }
    if let Some(tx) = ev["tx_hash"].as_str().filter(|t| t.len() > 12) {
        line.push_str(&format!(" tx {}…", &tx[..10]));
    }
    Some(line)
}

/// The line `tessera plan` prints once when step `index` was funded
/// `waited` ago and its executor has given no sign since (no acceptance,
/// delivery or decline).
pub(crate) fn silent_line(
    elapsed: std::time::Duration,
    index: u64,
    executor: &str,
    waited: std::time::Duration,
) -> String {
    format!(
        "[{:>6.1}s] #{index} waits on its executor {executor}: no sign of it {} s after funding (is its worker running? the plan's accept window cancels and refunds it)",
        elapsed.as_secs_f64(),
        waited.as_secs()
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn live_lines_name_the_step_the_event_and_the_time() {
        let at = std::time::Duration::from_millis(12_345);
        let ev = json!({"kind": "subtask_paid", "index": 1, "block": 42,
            "executor_amount": "400000", "tx_hash": format!("0x{}", "ab".repeat(32))});
        assert_eq!(
            event_line(at, &ev).unwrap(),
            "[  12.3s] #1 subtask_paid (block 42): 0.400000 USDC tx 0xabababab…"
        );
        let created = json!({"kind": "subtask_created", "index": 0, "block": 7});
        assert_eq!(event_line(at, &created).unwrap(), "[  12.3s] #0 subtask_created (block 7)");
        assert_eq!(event_line(at, &json!({"kind": "plan_completed"})), None);
        let line = silent_line(at, 0, "0xabc", std::time::Duration::from_secs(30));
        assert!(line.starts_with("[  12.3s] #0 waits on its executor 0xabc: no sign of it 30 s"));
    }
    use serde_json::json;

    use super::{fixture::view, *};

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
        let fields = json!({"id": "0xabc", "state": "proposed", "total_cost": "300000",
            "estimated_duration_secs": 3600,
            "plan": {"review": "auto", "budget": 1_000_000,
                "groups": [{"path": "1", "spec": "Digest", "budget": 250_000},
                           {"path": "1.1", "spec": "Judge", "budget": 100_000}],
                "subtasks": [leaf(0, "0", "translate"), leaf(1, "1.0", "summarize"),
                             leaf(2, "1.1.0", "sentiment-classify")]}});
        let text = card(&view(fields));
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
        assert!(!card(&view(flat)).contains("at 0"), "a flat plan reads as before");
        let plan_id = format!("0x{}", "de".repeat(32));
        let n = json!({"path": "1.1", "depth": 3, "state": "completed", "subtasks": [2],
                       "cost": "100000", "budget": "100000", "plan_id": plan_id,
                       "parent_plan_id": plan_id, "run_id": "0x1", "spec": "Judge"});
        assert_eq!(
            nested_line(&serde_json::from_value(n).unwrap()),
            format!(
                "  nested 1.1 (level 3) completed: leaves 1 cost 0.100000 USDC of share 0.100000 \
                 USDC; plan {plan_id}"
            )
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
        let fields = json!({"id": "0x1", "state": "proposed", "plan": plan,
            "conditions": tessera_orchestrator::runner::views::conditions_by_path(&plan)});
        let text = card(&view(fields));
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
        let fields = json!({"id": "0x1", "state": "paused", "total_cost": "600000",
            "gates": {"tone-check": {"state": "reached", "at": 1}},
            "plan": {"budget": 1_000_000,
                "recovery": {"on_decline": "retry(2)", "on_expiry": "pause", "on_dispute_lost": "fail"},
                "checkpoints": [{"name": "tone-check", "after": [0], "timeout_secs": 3600,
                                 "on_timeout": "escalate"},
                                {"name": "final", "after": [0, 1], "on_timeout": "approve"}],
                "subtasks": [
                    {"index": 0, "capability": "sentiment-classify", "spec": "Tone",
                     "executor": "0x0000000000000000000000000000000000000001", "cost": 200_000, "depends_on": []},
                    {"index": 1, "capability": "summarize", "spec": "Summary", "executor": "0x0000000000000000000000000000000000000002",
                     "cost": 400_000, "depends_on": [0], "when": "out[0].score < 0",
                     "recovery": {"on_expiry": "reassign"}}]}});
        let text = card(&view(fields));
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
        let defaults = serde_json::from_value(json!({"on_decline": "pause"})).unwrap();
        assert_eq!(recovery_line(&defaults), None, "defaults say nothing");
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
            view(json!({"id": "0x1", "plan": {"choices": [choice.clone()], "subtasks": [
                {"index": 0, "capability": "summarize", "spec": "Summarize", "executor": executor,
                 "cost": 420_000, "depends_on": []}]}}))
        };
        let text = card(&view(&a.to_lowercase()));
        assert_eq!(
            text.lines().nth(4).unwrap(),
            "       chosen: 0x14dc…9955 — balanced: 91% reliable (19/20 settled, 1 expired, \
             prior 2:1), 0.42 USDC (cheapest 0.35 USDC); runner-up 0x2361…1e8f (37%: less \
             reliable: 38% reliable (1/5 settled, 4 expired), 0.35 USDC)"
        );
        assert!(!card(&view(b)).contains("chosen"), "a hand-picked executor has no choice line");
        assert!(!card(&view(a)).contains("no sign of life"), "{}", card(&view(a)));
        let mut quiet = choice.clone();
        quiet["quiet"] = json!(true);
        let text = card(&super::fixture::view(json!({"id": "0x1", "plan": {
            "choices": [quiet], "accept_window_blocks": 7, "subtasks": [
            {"index": 0, "capability": "summarize", "spec": "Summarize", "executor": a,
             "cost": 420_000, "depends_on": []}]}})));
        assert_eq!(
            text.lines().nth(5).unwrap(),
            "       ! no sign of life from this agent in the last day: if it stays silent 7 \
             blocks it is cancelled and refunded (pause)"
        );
        let alone = json!({"index": 0, "policy": "cheapest", "executor": a, "price": 350_000,
            "score_bps": 10_000, "reason": "cheapest: 0.35 USDC, the only eligible offer"});
        assert_eq!(
            choice_line(&serde_json::from_value(alone).unwrap()),
            "chosen: 0x14dc…9955 — cheapest: 0.35 USDC, the only eligible offer"
        );
    }

    #[test]
    fn the_card_says_which_words_of_the_brief_chose_each_capability() {
        let text = card(&view(json!({"id": "0x1", "plan": {"subtasks": [
            {"index": 0, "capability": "haiku-write", "spec": "Write a haiku about autumn",
             "chosen_by": ["Write", "haiku"], "depends_on": []},
            {"index": 1, "capability": "translate", "spec": "Translate it to French",
             "depends_on": [0]}]}})));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[4], "       chosen by: \"Write\", \"haiku\"", "{text}");
        assert!(lines[6].contains("Translate it to French"), "{text}");
        assert_eq!(lines.iter().filter(|l| l.contains("chosen by")).count(), 1, "{text}");
        assert_eq!(
            chosen_by_line(&["a\"b".into(), "x".repeat(30)]),
            format!("chosen by: \"a\\\"b\", \"{}…\"", "x".repeat(24))
        );
    }

    #[test]
    fn spend_shows_once_money_moved() {
        let view = |committed: &str| {
            view(json!({"plan": {"budget": "5000000"},
                   "spend": {"committed": committed, "paid": "800000", "refunded": "400000"}}))
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
        assert_eq!(usdc_of(&json!("1200000")), "1.200000 USDC");
        assert_eq!(usdc_of(&json!(5)), "0.000005 USDC");
        assert_eq!(usdc_of(&json!("x")), "? USDC");
    }

    #[test]
    fn failed_decisions_are_shown_plainly() {
        let row = |fields: Value| -> DecisionRecord {
            let mut fields = fields;
            fields["created_at"] = json!(1);
            serde_json::from_value(fields).unwrap()
        };
        let failed = row(json!({"seq": 2, "idx": 0, "kind": "retry", "ok": false,
            "outcome": "failed: chain: …", "error": "chain: refused",
            "revert": "TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 9 })"}));
        assert_eq!(
            decision_line(&failed),
            "  decision 2 retry #0: FAILED: chain: refused (revert: TaskEscrowTooEarly(TaskEscrowTooEarly { notBefore: 9 }))"
        );
        let fine = row(
            json!({"seq": 1, "idx": null, "kind": "cancel", "ok": true, "outcome": "cancelling"}),
        );
        assert_eq!(decision_line(&fine), "  decision 1 cancel: cancelling");
        let queued =
            row(json!({"seq": 3, "idx": 1, "kind": "approve", "ok": null, "outcome": null}));
        assert_eq!(decision_line(&queued), "  decision 3 approve #1: queued");
    }
}

/// Views for the tests: a run view from the fields that matter to one,
/// everything else as a freshly proposed run has it.
#[cfg(test)]
pub(crate) mod fixture {
    use serde_json::{Value, json};
    use tessera_orchestrator::runner::RunView;

    /// `fields` over an empty proposed run: the plan's and each sub-task's
    /// fields over a plan's defaults, each row's over a waiting row's.
    pub(crate) fn view(fields: Value) -> RunView {
        let mut view = json!({"id": "0x1", "plan_json": "", "state": "proposed", "reason": null,
            "created_at": 0, "updated_at": 0, "paused_at": null, "stakes": "low",
            "classification": null, "subtasks": [], "decisions": [], "total_cost": "0",
            "estimated_duration_secs": 0,
            "spend": {"committed": "0", "paid": "0", "refunded": "0"}});
        let mut plan = json!({"version": 1, "id": format!("0x{}", "00".repeat(32)),
            "subtasks": [], "budget": 0});
        over(&mut plan, &fields["plan"]);
        for t in plan["subtasks"].as_array_mut().into_iter().flatten() {
            let mut task = json!({"spec": "", "cost": 0, "deadline_offset_secs": 3600});
            over(&mut task, t);
            *t = task;
        }
        over(&mut view, &fields);
        view["plan"] = plan;
        for s in view["subtasks"].as_array_mut().into_iter().flatten() {
            let mut row = json!({"attempt": 0, "executor": "", "phase": "waiting",
                "task_id": null, "result_uri": null, "output": null});
            over(&mut row, s);
            *s = row;
        }
        serde_json::from_value(view).expect("a run view")
    }

    fn over(base: &mut Value, fields: &Value) {
        for (k, v) in fields.as_object().into_iter().flatten() {
            base[k] = v.clone();
        }
    }
}
