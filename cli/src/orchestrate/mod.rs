//! `tessera serve`, `tessera plan` and `tessera runs show`: the
//! orchestrator service and its command-line client, which reads the API's
//! replies as the views the API serialises.

use std::{
    collections::BTreeMap,
    io::{BufRead, Write},
    path::PathBuf,
    time::{Duration, Instant},
};

use clap::Args;
use eyre::{Context, Result, bail, eyre};
use futures_util::StreamExt;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use tessera_classifier::Ceremony;
use tessera_orchestrator::{
    ceremony::BriefOutcome,
    plan::Plan,
    runner::RunView,
    state::{RunEvent, RunState},
};

use crate::client::Client;

mod render;
mod serve;

#[cfg(test)]
pub(crate) use self::render::fixture;
use self::render::{
    decision_event_line, decision_line, decline_line, nested_line, spend_line, usdc_of,
};
pub(crate) use self::{
    render::{card, classification_card},
    serve::{ServeArgs, redact, serve},
};

/// Where the API is, for the client commands.
#[derive(Debug, Args)]
pub(crate) struct ApiArgs {
    /// Orchestrator API base URL.
    #[arg(
        long = "api-url",
        alias = "api",
        value_name = "URL",
        env = "TESSERA_API_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub(crate) api: String,
    /// Operator mode: the sponsor's encrypted JSON keystore (password from
    /// TESSERA_KEYSTORE_PASSWORD), instead of TESSERA_SPONSOR_KEY. With
    /// either, the command signs in with Ethereum and signs each plan's
    /// grant here; the key never leaves this machine.
    #[arg(long, value_name = "PATH", env = "TESSERA_KEYSTORE")]
    pub(crate) keystore: Option<PathBuf>,
    /// Operator mode: the deployment record this sponsor trusts. When
    /// given, the server's chain id, escrow and token must be the record's
    /// before anything is signed (a server naming another escrow could ask
    /// for a permit to a contract of its own).
    #[arg(long, value_name = "PATH", env = "TESSERA_DEPLOYMENT")]
    pub(crate) deployment: Option<PathBuf>,
}

/// `tessera plan "<brief>"` or `tessera plan --file plan.json`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["brief", "file"])))]
pub(crate) struct PlanArgs {
    /// A brief to classify ("translate this to French, then summarize it").
    brief: Option<String>,
    /// A plan as JSON instead of a brief (see `GET /api/openapi.json`, schema Plan).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Material the sub-tasks work on (an article, a document), with a brief.
    #[arg(long, requires = "brief")]
    payload_file: Option<PathBuf>,
    /// Approve low-stakes plans without asking (high-stakes plans still need
    /// --confirm-amount and --confirm-recipients, or typing them).
    #[arg(long)]
    yes: bool,
    /// For a high-stakes plan: the total you agree to pay, in USDC.
    #[arg(long, requires = "confirm_recipients")]
    confirm_amount: Option<String>,
    /// For a high-stakes plan: the recipients you agree to pay, comma-separated.
    #[arg(long, requires = "confirm_amount", value_delimiter = ',')]
    confirm_recipients: Vec<String>,
    /// With a brief: how executors are chosen among the agents offering a
    /// capability: by price, by record, or both weighed together.
    #[arg(long, default_value = "balanced", value_parser = ["cheapest", "reliable", "balanced"])]
    policy: String,
    /// While following the run, ask on standard input what to do when it
    /// waits for someone: a delivered sub-task under manual review
    /// (approve / dispute <reason> / skip) or a checkpoint (approve /
    /// reject [reason] / skip). On by default when standard input is a terminal.
    #[arg(long, overrides_with = "no_interactive")]
    interactive: bool,
    /// Only follow the run; decide with `tessera runs …`.
    #[arg(long, overrides_with = "interactive")]
    no_interactive: bool,
    /// Say so when a funded step has had no sign of its executor
    /// (acceptance, delivery, decline) for this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    silent_after: u64,
    #[command(flatten)]
    api: ApiArgs,
}

impl PlanArgs {
    /// Whether to ask at the run's pauses: as told, else when standard
    /// input is a terminal.
    fn interactive(&self) -> bool {
        use std::io::IsTerminal;
        !self.no_interactive && (self.interactive || std::io::stdin().is_terminal())
    }
}

/// `tessera plan`: classify a brief (or read a plan), show the card, take
/// the path its quadrant calls for, run with live progress.
pub(crate) async fn plan(args: PlanArgs) -> Result<()> {
    let client = Client::connect(&args.api).await?;
    let view = if let Some(file) = &args.file {
        let text = std::fs::read_to_string(file)
            .wrap_err_with(|| format!("reading {}", file.display()))?;
        let mut body: Value = serde_json::from_str(&text)
            .wrap_err_with(|| format!("{} is not JSON", file.display()))?;
        // A plan file without an id (a template, run again and again) gets
        // a fresh one each time it is proposed.
        if let Some(fields) =
            body.as_object_mut().filter(|o| o.get("id").is_none_or(Value::is_null))
        {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            let label = format!("{} at {now}", file.display());
            fields.insert("id".into(), json!(Plan::id_from_label(&label)));
        }
        let plan = Plan::from_json(&body.to_string())
            .wrap_err_with(|| format!("{} is not a plan", file.display()))?;
        plan.validate_shape().wrap_err("the plan is invalid")?;
        client.call_as(reqwest::Method::POST, "/api/plans", Some(&body)).await?
    } else {
        let brief = args.brief.clone().unwrap_or_default();
        let payload = match &args.payload_file {
            Some(p) => Some(
                std::fs::read_to_string(p).wrap_err_with(|| format!("reading {}", p.display()))?,
            ),
            None => None,
        };
        let outcome: BriefOutcome = client
            .call_as(
                reqwest::Method::POST,
                "/api/classify",
                Some(&json!({"brief": brief, "payload": payload, "policy": args.policy})),
            )
            .await?;
        print!("{}", classification_card(&outcome));
        if let Some(reason) = &outcome.refusal {
            bail!("nothing to run: {reason}");
        }
        let Some(view) = outcome.run else {
            bail!("nothing to run: no active agent offers what the brief asks for");
        };
        let running = RunState::parse(&view.run.state) == Ok(RunState::Running);
        if outcome.ceremony == Ceremony::Direct && running {
            println!("atomic, low stakes: executed directly");
            print!("{}", card(&view));
            let id = view.run.id.clone();
            return follow(&client, &id, &view, &args).await;
        }
        view
    };
    decide_and_follow(&client, view, &args).await
}

/// Shows the card, asks (approve / edit / cancel; a typed confirmation for
/// high stakes), approves, follows. A run that could not be approved (no
/// answer, a refused confirmation) is cancelled rather than left proposed.
async fn decide_and_follow(client: &Client, view: RunView, args: &PlanArgs) -> Result<()> {
    let id = view.run.id.clone();
    let view = match decide(client, view, args).await {
        Ok(Some(view)) => view,
        Ok(None) => return Ok(()),
        Err(e) => {
            let path = format!("/api/runs/{id}/cancel");
            let cancelled = match client.call(reqwest::Method::POST, &path, None).await {
                Ok(_) => format!("the proposed run {id} was cancelled; nothing was funded"),
                Err(c) => format!("the proposed run {id} could not be cancelled: {c}"),
            };
            return Err(e.wrap_err(cancelled));
        }
    };
    follow(client, &id, &view, args).await
}

/// Asks until the plan is approved (`Some`, the approved view) or cancelled
/// at the prompt (`None`).
async fn decide(client: &Client, mut view: RunView, args: &PlanArgs) -> Result<Option<RunView>> {
    use std::io::IsTerminal;
    let id = view.run.id.clone();
    loop {
        print!("{}", card(&view));
        if args.yes {
            break;
        }
        if !std::io::stdin().is_terminal() {
            bail!(
                "standard input is not a terminal: nobody to approve the plan (--yes approves without asking)"
            );
        }
        print!("approve / edit / cancel? [a/e/c] ");
        std::io::stdout().flush()?;
        let answer = read_line()?;
        match answer.as_str() {
            "a" | "approve" => break,
            "c" | "cancel" => {
                client.call(reqwest::Method::POST, &format!("/api/runs/{id}/cancel"), None).await?;
                println!("cancelled; nothing was funded");
                return Ok(None);
            }
            "e" | "edit" => {
                println!(
                    "edit: `reassign <index> <address>`, `drop <index>`, `order <i> <j> …`, `review auto|manual`"
                );
                let line = read_line()?;
                match parse_edit(&line) {
                    Ok(edit) => match client
                        .call_as(
                            reqwest::Method::POST,
                            &format!("/api/runs/{id}/edit"),
                            Some(&edit),
                        )
                        .await
                    {
                        Ok(v) => view = v,
                        Err(e) => println!("edit refused: {e}"),
                    },
                    Err(e) => println!("{e}"),
                }
            }
            other => println!("unknown answer {other:?}"),
        }
    }
    let mut body = Value::Null;
    if view.run.stakes.as_str() == "high" {
        let terms = view.confirmation.as_ref();
        println!(
            "HIGH STAKES: this plan pays {} USDC to {}, within a budget of {} USDC. Confirm \
             by typing the amount and the recipients.",
            terms.map_or("?", |t| t.amount.as_str()),
            terms
                .map(|t| t.recipients.iter().map(render::address).collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
            terms.map_or("?", |t| t.budget.as_str())
        );
        let (amount, recipients) = match (&args.confirm_amount, args.confirm_recipients.is_empty())
        {
            (Some(a), false) => (a.clone(), args.confirm_recipients.clone()),
            _ => {
                print!("total amount (USDC): ");
                std::io::stdout().flush()?;
                let amount = read_line()?;
                print!("recipients (comma-separated): ");
                std::io::stdout().flush()?;
                let recipients = read_line()?
                    .split(',')
                    .map(|r| r.trim().to_owned())
                    .filter(|r| !r.is_empty())
                    .collect();
                (amount, recipients)
            }
        };
        let token = client
            .call(
                reqwest::Method::POST,
                &format!("/api/runs/{id}/confirm"),
                Some(&json!({"amount": amount, "recipients": recipients})),
            )
            .await
            .wrap_err("confirmation refused")?;
        body = json!({"confirmation_token": token["confirmation_token"]});
    }
    if let Some((signer, server)) = &client.sponsor {
        // Operator mode: the plan is funded by a grant signed here.
        let cost = view.plan.total_cost().ok().map(|c| c.base_units());
        let grant = crate::sponsor::grant_body(client, signer, server, &id, cost).await?;
        let mut with = if body.is_null() { json!({}) } else { body };
        for (k, v) in grant.as_object().into_iter().flatten() {
            with[k] = v.clone();
        }
        body = with;
    }
    let body = (!body.is_null()).then_some(body);
    client.call(reqwest::Method::POST, &format!("/api/runs/{id}/approve"), body.as_ref()).await?;
    Ok(Some(view))
}

fn read_line() -> Result<String> {
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        bail!("no answer on standard input (use --yes to approve without asking)");
    }
    Ok(line.trim().to_lowercase())
}

fn parse_edit(line: &str) -> Result<Value> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let index = |s: Option<&&str>| -> Result<u32> {
        s.and_then(|s| s.parse().ok()).ok_or_else(|| eyre!("expected a sub-task index"))
    };
    Ok(match words.first().copied() {
        Some("reassign") => {
            json!({"op": "reassign", "index": index(words.get(1))?, "executor": words.get(2).ok_or_else(|| eyre!("expected an address"))?})
        }
        Some("drop") => json!({"op": "drop", "index": index(words.get(1))?}),
        Some("order") => {
            let order: Result<Vec<u32>> = words[1..]
                .iter()
                .map(|w| w.parse().map_err(|_| eyre!("{w} is not an index")))
                .collect();
            json!({"op": "reorder", "order": order?})
        }
        Some("review") => {
            json!({"op": "review", "review": words.get(1).ok_or_else(|| eyre!("auto or manual"))?})
        }
        _ => bail!("unknown edit {line:?}"),
    })
}

/// How often `tessera plan` looks for steps whose executor is silent.
const SILENCE_CHECK: Duration = Duration::from_secs(1);

/// Shows live progress per sub-task from the SSE stream, then the settlement
/// summary. With `interactive`, asks on standard input what to do when the
/// run waits for a review or at a checkpoint, and queues the answer.
async fn follow(client: &Client, id: &str, view: &RunView, args: &PlanArgs) -> Result<()> {
    let mut interactive = args.interactive();
    let silent_after = Duration::from_secs(args.silent_after);
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>4} {spinner} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let mut rows: BTreeMap<u64, ProgressBar> = BTreeMap::new();
    for t in &view.plan.subtasks {
        let bar = bars.add(ProgressBar::new_spinner());
        bar.set_style(style.clone());
        bar.set_prefix(format!("#{}", t.index));
        bar.set_message(format!("{} — waiting", t.capability));
        bar.enable_steady_tick(Duration::from_millis(120));
        rows.insert(u64::from(t.index), bar);
    }
    let resp = client.get(&format!("/api/runs/{id}/events")).send().await;
    let resp = resp.map_err(|e| crate::client::ApiError::unreachable(&client.base, &e))?;
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut txs: BTreeMap<u64, Vec<(String, String)>> = BTreeMap::new();
    let mut outcome = None;
    // Every event is a line as it happens (above the bars on a terminal,
    // alone when the bars are hidden); a step funded and not heard of
    // since gets one line naming its silent executor.
    let started = Instant::now();
    let say = |line: String| -> Result<()> {
        if bars.is_hidden() {
            println!("{line}");
        } else {
            bars.println(line)?;
        }
        Ok(())
    };
    let executors: BTreeMap<u64, String> = view
        .plan
        .subtasks
        .iter()
        .map(|t| (u64::from(t.index), t.executor.map(|a| a.to_string()).unwrap_or_default()))
        .collect();
    // Steps funded and waiting on their executor: since when, and whether
    // their silence was already told.
    let mut waiting: BTreeMap<u64, (Instant, bool)> = BTreeMap::new();
    let mut ticks = tokio::time::interval(SILENCE_CHECK);
    'read: loop {
        let chunk = tokio::select! {
            chunk = stream.next() => match chunk {
                Some(chunk) => chunk?,
                None => break 'read,
            },
            _ = ticks.tick() => {
                for (i, (since, told)) in &mut waiting {
                    if !*told && since.elapsed() >= silent_after {
                        *told = true;
                        let executor = executors.get(i).map_or("?", String::as_str);
                        say(render::silent_line(started.elapsed(), *i, executor, since.elapsed()))?;
                    }
                }
                continue 'read;
            }
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) else { continue };
            let ev: Value = serde_json::from_str(data)?;
            // The event as the runner reports it; a kind this client does
            // not know still moves its sub-task's bar.
            let typed = RunEvent::from_body(data).ok();
            let kind = ev["kind"].as_str().unwrap_or_default();
            match &typed {
                Some(d @ RunEvent::DecisionApplied { ok: false, .. }) => {
                    say(decision_event_line(d))?;
                }
                Some(RunEvent::SubtaskDeclined(fields)) => {
                    say(decline_line(&Value::Object(fields.clone())))?;
                }
                _ => {}
            }
            if let Some(line) = render::event_line(started.elapsed(), &ev) {
                say(line)?;
            }
            if let Some(i) = ev["index"].as_u64() {
                if kind == "subtask_created" {
                    waiting.insert(i, (Instant::now(), false));
                } else {
                    waiting.remove(&i);
                }
            }
            if let Some(i) = ev["index"].as_u64()
                && let Some(bar) = rows.get(&i)
            {
                bar.set_message(format!("{kind} (block {})", ev["block"]));
                if let Some(tx) = ev["tx_hash"].as_str() {
                    txs.entry(i).or_default().push((kind.to_owned(), tx.to_owned()));
                }
                if matches!(kind, "subtask_paid" | "subtask_refunded") {
                    bar.finish_with_message(format!("{kind}: {}", usdc_of(&ev["executor_amount"])));
                }
            }
            if let Some(end @ (RunEvent::PlanCompleted { .. } | RunEvent::PlanFailed { .. })) =
                typed
            {
                outcome = Some(end);
                break 'read;
            }
            if interactive && let Some(pause) = typed.as_ref().and_then(crate::runs::Pause::of) {
                interactive = ask_and_decide(client, id, &bars, &pause).await?;
            }
        }
    }
    for bar in rows.values() {
        if !bar.is_finished() {
            bar.finish();
        }
    }
    let (kind, reason) = match &outcome {
        Some(RunEvent::PlanCompleted { .. }) => ("plan_completed", None),
        Some(RunEvent::PlanFailed { reason, .. }) => ("plan_failed", Some(reason)),
        _ => ("stream ended", None),
    };
    println!("\nSettlement of {id}: {kind}");
    if let Some(reason) = reason {
        println!("  reason: {reason}");
    }
    for (i, list) in &txs {
        for (kind, tx) in list {
            println!("  #{i} {kind:<20} {tx}");
        }
    }
    if !matches!(outcome, Some(RunEvent::PlanCompleted { .. })) {
        bail!("the plan did not complete");
    }
    Ok(())
}

/// Asks what to do at `pause` (the progress bars hidden meanwhile) and
/// queues the answer; whether to go on asking (not once the input ended).
async fn ask_and_decide(
    client: &Client,
    id: &str,
    bars: &MultiProgress,
    pause: &crate::runs::Pause,
) -> Result<bool> {
    use crate::runs::Answer;
    let path = format!("/api/runs/{id}");
    let pause = match client.call_as::<RunView>(reqwest::Method::GET, &path, None).await {
        Ok(view) => pause.clone().with_view(&view),
        Err(_) => pause.clone(),
    };
    let pause = &pause;
    let answer = tokio::task::block_in_place(|| {
        bars.suspend(|| {
            crate::runs::ask(pause, &mut std::io::stdin().lock(), &mut std::io::stdout())
        })
    })?;
    match answer {
        Answer::Decide(decision) => {
            let what = decision.describe();
            match decision.send(client, id).await {
                Ok(_) => bars.suspend(|| println!("  {what} queued")),
                Err(e) => bars.suspend(|| println!("  {what} refused: {e}")),
            }
        }
        Answer::Skip => bars.suspend(|| println!("  skipped; decide later with `tessera runs …`")),
        Answer::Closed => return Ok(false),
    }
    Ok(true)
}

/// `tessera runs show <id>` as text: the card, the reason and spend, each
/// step (with its output under it, cut for a glance), nested plans,
/// declines and decisions. `outputs` are the steps' texts, in the order of
/// `view.subtasks`.
pub(crate) fn show_text(view: &RunView, outputs: &[Option<String>]) -> String {
    use std::fmt::Write as _;
    let mut out = card(view);
    let id = &view.run.id;
    if let Some(reason) = &view.run.reason {
        let _ = writeln!(out, "  reason: {reason}");
    }
    if let Some(line) = spend_line(view) {
        let _ = writeln!(out, "{line}");
    }
    for (i, s) in view.subtasks.iter().enumerate() {
        let _ = writeln!(
            out,
            "  #{} attempt {} {:<10} task {}",
            s.idx,
            s.attempt,
            s.phase.as_str(),
            s.task_id.as_deref().unwrap_or("-")
        );
        if let Some(Some(text)) = outputs.get(i) {
            out.push_str(&crate::work::output_lines(id, s.idx, text));
        }
    }
    for n in &view.nested {
        let _ = writeln!(out, "{}", nested_line(n));
    }
    for d in &view.declines {
        let _ = writeln!(out, "{}", decline_line(d));
    }
    for d in &view.decisions {
        let _ = writeln!(out, "{}", decision_line(d));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_parse() {
        assert_eq!(parse_edit("drop 2").unwrap(), json!({"op": "drop", "index": 2}));
        assert_eq!(parse_edit("order 1 0").unwrap(), json!({"op": "reorder", "order": [1, 0]}));
        assert!(parse_edit("drop x").is_err());
        assert!(parse_edit("fly").is_err());
    }
}
