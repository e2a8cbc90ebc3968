//! `tessera runs show` and `tessera runs output`: the work a run paid for
//! (each step's output, read from what its executor delivered) and each
//! ruling's rationale (who ruled, and why, as prose).

use std::{collections::BTreeMap, io::Write, path::PathBuf};

use eyre::{Result, bail, eyre};
use serde::Serialize;
use serde_json::{Value, json};
use tessera_bindings::envelope::{BlobHash, BlobRef, EnvelopeCodec, readable};
use tessera_orchestrator::{runner::RunView, store::SubtaskRow};

use crate::{
    client::{ApiError, Client},
    orchestrate::ApiArgs,
};

/// At most this many lines of an output are shown under its step.
const SHOWN_LINES: usize = 6;
/// At most this many characters of an output are shown under its step.
const SHOWN_CHARS: usize = 480;

/// A ruling on a sub-task, as its arbiter published it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Ruling {
    /// The sub-task.
    pub(crate) index: u64,
    /// `dispute_ruled` or `appeal_ruled`.
    pub(crate) kind: String,
    /// The executor's share, basis points.
    pub(crate) executor_share_bps: Option<u64>,
    /// Who ruled, in words (`the offline rubric`, `a council (model)`), when
    /// the document names its judge.
    pub(crate) by: Option<String>,
    /// Why, as written; or why it could not be read.
    pub(crate) rationale: String,
    /// What the judge noted beside its verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) flags: Vec<String>,
}

/// Who ruled and why, from the arbiter's published verdict (`{verdict,
/// executor_share_bps, rationale, judge, flags}`); text that is no such
/// document is the rationale itself, by nobody named.
pub(crate) fn ruling_text(text: &str) -> (Option<String>, String, Vec<String>) {
    let Ok(v) = serde_json::from_str::<Value>(text) else { return (None, text.to_owned(), vec![]) };
    let Some(rationale) = v.get("rationale").and_then(Value::as_str) else {
        return (None, readable(&v), vec![]);
    };
    let judge = v.get("judge").and_then(Value::as_str).unwrap_or_default();
    let by = match judge {
        "" => None,
        "offline-rubric" => Some("the offline rubric".to_owned()),
        "fallback" => Some("the fallback rule, after the council failed".to_owned()),
        j => Some(match j.strip_prefix("council:") {
            Some(model) => format!("a council ({model})"),
            None => j.replace('-', " "),
        }),
    };
    let flags = v
        .get("flags")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned)).collect()
        })
        .unwrap_or_default();
    (by, rationale.to_owned(), flags)
}

/// `text` cut for a glance: at most [`SHOWN_LINES`] lines and
/// [`SHOWN_CHARS`] characters, and how many bytes were left out.
pub(crate) fn glance(text: &str) -> (&str, usize) {
    // Trailing blanks are nothing left out.
    let text = text.trim_end();
    let mut end = text.len();
    if let Some((at, _)) = text.char_indices().nth(SHOWN_CHARS) {
        end = at;
    }
    if let Some((at, _)) = text.match_indices('\n').nth(SHOWN_LINES - 1) {
        end = end.min(at);
    }
    let shown = text[..end].trim_end();
    (shown, text.len() - shown.len())
}

/// The events a run stored so far (the stream read up to now, not followed).
async fn events(client: &Client, id: &str) -> Result<Vec<Value>> {
    let resp = client.get(&format!("/api/runs/{id}/events?follow=false")).send().await;
    let resp = resp.map_err(|e| crate::client::ApiError::unreachable(&client.base, &e))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(
            crate::client::ApiError::from_status(status.as_u16(), resp.text().await?).into()
        );
    }
    let text = resp.text().await?;
    Ok(text
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect())
}

/// The bytes behind a `data:` or `sha256:` URI (read from the
/// orchestrator, which keeps what its runs read, and checked against its
/// hash).
async fn resolve(client: &Client, uri: &str) -> Result<Vec<u8>> {
    let codec = EnvelopeCodec::default();
    match BlobRef::of_uri(uri)? {
        None => Ok(codec.fetch_inline(uri)?),
        Some(blob) => {
            let resp = client.get(&format!("/api/blobs/{}", blob.hash)).send().await;
            let resp = resp.map_err(|e| crate::client::ApiError::unreachable(&client.base, &e))?;
            if !resp.status().is_success() {
                bail!("the orchestrator does not have blob {} ({})", blob.hash, resp.status());
            }
            let bytes = resp.bytes().await?.to_vec();
            if BlobHash::of(&bytes) != blob.hash {
                bail!("blob {} does not match its hash", blob.hash);
            }
            Ok(bytes)
        }
    }
}

/// What a sub-task delivered, as text: the output the run handed on, else
/// its result read; `None` before it delivered.
async fn output_of(client: &Client, s: &SubtaskRow) -> Result<Option<String>> {
    if let Some(output) = &s.output {
        return Ok(Some(output.clone()));
    }
    let Some(uri) = &s.result_uri else { return Ok(None) };
    Ok(Some(read_result(client, uri).await?))
}

/// The result behind `uri`, read as text.
async fn read_result(client: &Client, uri: &str) -> Result<String> {
    Ok(result_text(&resolve(client, uri).await?))
}

/// A delivered result as text: its document read as a dependant reads it,
/// or the bytes themselves when they are no JSON.
fn result_text(bytes: &[u8]) -> String {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => readable(&v),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// What one task of a plan's tree delivered, and the command that prints
/// it whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskOutput {
    /// The output as text (or why it could not be read).
    pub(crate) text: String,
    /// `tessera runs output <run> <index>` for the run's current task of
    /// a sub-task; the tree's JSON for any other.
    pub(crate) whole: String,
}

/// The outputs of the tasks in `tree` (the indexer's lineage of `plan`)
/// that delivered, by task id: where the orchestrator runs the plan, a
/// sub-task's current task gives the output the run handed on; any other
/// (an earlier attempt, a task an executor funded) its result read.
pub(crate) async fn tree_outputs(
    client: &Client,
    plan: &str,
    tree: &Value,
) -> Result<BTreeMap<String, TaskOutput>> {
    let view = match client
        .call_as::<RunView>(reqwest::Method::GET, &format!("/api/runs/{plan}"), None)
        .await
    {
        Ok(view) => Some(view),
        // Not a run of this orchestrator: every result is read.
        Err(ApiError::Refused { status: 404, .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let mut out = BTreeMap::new();
    for task in tree["tasks"].as_array().into_iter().flatten() {
        let (Some(id), Some(uri)) = (task["task_id"].as_str(), task["result_uri"].as_str()) else {
            continue;
        };
        let current = view
            .as_ref()
            .and_then(|v| v.subtasks.iter().find(|s| s.task_id.as_deref() == Some(id)));
        let (read, whole) = match current {
            Some(s) => {
                // The run may not have recorded the delivery the index holds yet.
                let read = match output_of(client, s).await {
                    Ok(Some(text)) => Ok(text),
                    Ok(None) => read_result(client, uri).await,
                    Err(e) => Err(e),
                };
                (read, format!("tessera runs output {plan} {}", s.idx))
            }
            None => (
                read_result(client, uri).await,
                format!("tessera tasks tree {plan} --outputs --json"),
            ),
        };
        let text = read.unwrap_or_else(|e| format!("(unreadable: {e})"));
        out.insert(id.to_owned(), TaskOutput { text, whole });
    }
    Ok(out)
}

/// The rulings among a run's `events`, oldest first, their rationales read.
async fn rulings(client: &Client, events: &[Value]) -> Vec<Ruling> {
    let mut out = Vec::new();
    for ev in events {
        let kind = ev["kind"].as_str().unwrap_or_default();
        if !matches!(kind, "dispute_ruled" | "appeal_ruled") {
            continue;
        }
        let (by, rationale, flags) = match ev["rationale_uri"].as_str() {
            None => (None, "(no rationale published)".to_owned(), vec![]),
            Some(uri) => match resolve(client, uri).await {
                Ok(bytes) => ruling_text(&String::from_utf8_lossy(&bytes)),
                Err(e) => (None, format!("(rationale unreadable: {e})"), vec![]),
            },
        };
        out.push(Ruling {
            index: ev["index"].as_u64().unwrap_or_default(),
            kind: kind.to_owned(),
            executor_share_bps: ev["executor_share_bps"].as_u64(),
            by,
            rationale,
            flags,
        });
    }
    out
}

/// A ruling in words, its rationale on the lines after.
pub(crate) fn ruling_lines(r: &Ruling) -> String {
    let what = if r.kind == "appeal_ruled" { "appeal ruled" } else { "ruled" };
    let by = r.by.as_deref().map(|b| format!(" by {b}")).unwrap_or_default();
    let share = r
        .executor_share_bps
        .map(|bps| format!(": {}.{:02}% to the executor", bps / 100, bps % 100))
        .unwrap_or_default();
    let mut out = format!("  #{} {what}{by}{share}\n", r.index);
    for line in r.rationale.lines() {
        out.push_str(&format!("       {line}\n"));
    }
    if !r.flags.is_empty() {
        out.push_str(&format!("       noted: {}\n", r.flags.join(", ")));
    }
    out
}

/// An output under its step, cut for a glance, with how to get it whole.
pub(crate) fn output_lines(run: &str, index: u32, text: &str) -> String {
    glance_lines(text, &format!("tessera runs output {run} {index}"))
        .iter()
        .map(|line| format!("       {line}\n"))
        .collect()
}

/// An output cut for a glance, a line each, the last saying how many bytes
/// were left out and the command `whole` that prints them.
pub(crate) fn glance_lines(text: &str, whole: &str) -> Vec<String> {
    let (shown, more) = glance(text);
    let mut out: Vec<String> = shown.lines().map(str::to_owned).collect();
    if more > 0 {
        out.push(format!("… ({more} more bytes: {whole})"));
    }
    out
}

/// `tessera runs show <id>`: the card, each step with its output, the
/// rulings with their rationales; or all of it as JSON.
pub(crate) async fn show(api: &ApiArgs, id: &str, as_json: bool) -> Result<()> {
    let client = Client::connect(api).await?;
    let view: RunView =
        client.call_as(reqwest::Method::GET, &format!("/api/runs/{id}"), None).await?;
    let mut outputs = Vec::new();
    for s in &view.subtasks {
        // An output out of reach is said, not fatal: the rest still shows.
        outputs.push(
            output_of(&client, s).await.unwrap_or_else(|e| Some(format!("(unreadable: {e})"))),
        );
    }
    let rulings = rulings(&client, &events(&client, id).await?).await;
    if as_json {
        let mut v = serde_json::to_value(&view)?;
        if let Some(subtasks) = v["subtasks"].as_array_mut() {
            for (s, output) in subtasks.iter_mut().zip(&outputs) {
                s["output"] = json!(output);
            }
        }
        v["rulings"] = serde_json::to_value(&rulings)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    print!("{}", crate::orchestrate::show_text(&view, &outputs));
    for r in &rulings {
        print!("{}", ruling_lines(r));
    }
    Ok(())
}

/// Where `tessera runs output` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OutputTo {
    /// The output as it is, on standard output.
    Stdout,
    /// The output as it is, into this file.
    File(PathBuf),
    /// The sub-task and its output as JSON, on standard output.
    Json,
}

/// `tessera runs output <run> <index>`: one sub-task's output whole, on
/// standard output, into a file, or as JSON with the sub-task.
pub(crate) async fn output(api: &ApiArgs, id: &str, index: u32, to: OutputTo) -> Result<()> {
    let client = Client::connect(api).await?;
    let view: RunView =
        client.call_as(reqwest::Method::GET, &format!("/api/runs/{id}"), None).await?;
    let s = view
        .subtasks
        .iter()
        .find(|s| s.idx == index)
        .ok_or_else(|| eyre!("run {id} has no sub-task {index} (yet)"))?;
    let Some(text) = output_of(&client, s).await? else {
        bail!("sub-task {index} has delivered nothing yet (it is {})", s.phase);
    };
    match to {
        OutputTo::Json => {
            let doc = json!({
                "run": id, "index": s.idx, "attempt": s.attempt, "phase": s.phase,
                "executor": s.executor, "task_id": s.task_id, "result_uri": s.result_uri,
                "output": text,
            });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
        OutputTo::File(path) => {
            std::fs::write(&path, &text).map_err(|e| eyre!("writing {}: {e}", path.display()))?;
        }
        OutputTo::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glance_keeps_six_lines_or_480_characters_and_counts_the_rest() {
        assert_eq!(glance("Bonjour"), ("Bonjour", 0));
        let long = "é".repeat(500);
        let (shown, more) = glance(&long);
        assert_eq!(shown.chars().count(), 480);
        assert_eq!(more, 20 * 2);
        let lines = (0..10).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let (shown, more) = glance(&lines);
        assert_eq!(shown.lines().count(), 6);
        assert_eq!(more, lines.len() - shown.len());
        let text = output_lines("0xab", 2, &lines);
        assert!(text.ends_with(&format!("… ({more} more bytes: tessera runs output 0xab 2)\n")));
        assert_eq!(output_lines("0xab", 0, "fin\n"), "       fin\n");
    }

    #[test]
    fn a_ruling_names_its_judge_and_reads_as_prose() {
        let doc = json!({"verdict": "split", "executor_share_bps": 5500,
            "rationale": "Half of it is a copy.\nThe rest holds.", "judge": "offline-rubric",
            "flags": ["copied"]});
        let (by, prose, flags) = ruling_text(&doc.to_string());
        assert_eq!(by.as_deref(), Some("the offline rubric"));
        assert_eq!(prose, "Half of it is a copy.\nThe rest holds.");
        assert_eq!(flags, ["copied"]);
        let council = json!({"rationale": "ok", "judge": "council:gpt-x"}).to_string();
        assert_eq!(ruling_text(&council).0.as_deref(), Some("a council (gpt-x)"));
        assert_eq!(ruling_text("plain words"), (None, "plain words".to_owned(), vec![]));
        let r = Ruling {
            index: 0,
            kind: "dispute_ruled".into(),
            executor_share_bps: Some(5500),
            by,
            rationale: prose,
            flags,
        };
        assert_eq!(
            ruling_lines(&r),
            "  #0 ruled by the offline rubric: 55.00% to the executor\n       Half of it is a \
             copy.\n       The rest holds.\n       noted: copied\n"
        );
    }
}
