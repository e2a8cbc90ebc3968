//! `tessera runs …`: runs listed, and every decision a run takes, from the
//! command line; and the prompts `tessera plan --interactive` asks when a
//! run it follows waits for someone.

use std::io::{BufRead, Write};

use alloy::primitives::Address;
use clap::{Args, Subcommand, ValueEnum};
use eyre::Result;
use serde::Deserialize;
use serde_json::{Value, json};
use tessera_orchestrator::{
    runner::RunView,
    state::{RunEvent, RunState},
    store::RunSummary,
};

use crate::{
    client::{Client, EXIT_CODES},
    orchestrate::ApiArgs,
};

/// Where the API is, and how to print its reply.
#[derive(Debug, Args)]
pub(crate) struct Reply {
    /// Print the API's JSON reply instead of a line of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    api: ApiArgs,
}

/// A review's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Verdict {
    /// Pay the executor.
    Approve,
    /// Send the result to the arbiter (needs --reason).
    Dispute,
}

/// A checkpoint's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Gate {
    /// The run goes on.
    Approve,
    /// The run closes.
    Reject,
}

/// How the orchestrator picks the new executor of a sub-task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Policy {
    /// The lowest price.
    Cheapest,
    /// The best record, price aside.
    Reliable,
    /// Record and price weighed together.
    Balanced,
}

impl Policy {
    fn as_str(self) -> &'static str {
        match self {
            Self::Cheapest => "cheapest",
            Self::Reliable => "reliable",
            Self::Balanced => "balanced",
        }
    }
}

/// The decisions a run takes from the command line: each is sent to the
/// orchestrator, which queues it for the run's driver. They need
/// TESSERA_API_TOKEN.
#[derive(Debug, Subcommand)]
pub(crate) enum DecideCommand {
    /// Approve and pay a delivered sub-task, or dispute it with a reason.
    #[command(after_help = EXIT_CODES)]
    Review {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        run: String,
        /// The sub-task's index in the plan.
        index: u32,
        /// approve or dispute.
        verdict: Verdict,
        /// Why the result is disputed (required with dispute).
        #[arg(long, required_if_eq("verdict", "dispute"))]
        reason: Option<String>,
        #[command(flatten)]
        reply: Reply,
    },
    /// Run a stuck sub-task again (or give a task nobody accepted a fresh
    /// deadline).
    #[command(after_help = EXIT_CODES)]
    Retry {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        run: String,
        /// The sub-task's index in the plan.
        index: u32,
        #[command(flatten)]
        reply: Reply,
    },
    /// Give a sub-task to another registered agent: a named one (--to), or
    /// the one a selection policy picks (--policy).
    #[command(after_help = EXIT_CODES)]
    #[command(group(clap::ArgGroup::new("target").required(true).args(["to", "policy"])))]
    ChangeExecutor {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        run: String,
        /// The sub-task's index in the plan.
        index: u32,
        /// The agent's address.
        #[arg(long)]
        to: Option<Address>,
        /// Let the orchestrator pick by this policy.
        #[arg(long)]
        policy: Option<Policy>,
        /// The new cost, typed (USDC, e.g. 0.5): needed when the new
        /// executor asks more than the sub-task's cost on a high-stakes run.
        #[arg(long)]
        amount: Option<String>,
        #[command(flatten)]
        reply: Reply,
    },
    /// Cancel a run: settled work stays settled, unaccepted tasks are refunded.
    #[command(after_help = EXIT_CODES)]
    Cancel {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        run: String,
        #[command(flatten)]
        reply: Reply,
    },
    /// Pass or stop a run at one of its plan's checkpoints.
    #[command(after_help = EXIT_CODES)]
    Checkpoint {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        run: String,
        /// The checkpoint's name, as the plan gives it.
        name: String,
        /// approve (the run goes on) or reject (the run closes).
        verdict: Gate,
        /// Why, in words.
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        reply: Reply,
    },
    /// Appeal the arbiter's ruling on a sub-task, with a reason.
    #[command(after_help = EXIT_CODES)]
    Appeal {
        /// The run id (the plan id, 0x + 64 hex).
        #[arg(value_parser = crate::client::parse_plan_id)]
        run: String,
        /// The sub-task's index in the plan.
        index: u32,
        /// Why the ruling is wrong.
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        reply: Reply,
    },
}

/// Whom a sub-task goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// This agent.
    Agent(Address),
    /// Whoever the policy picks.
    Policy(Policy),
}

/// One decision, as sent to the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Approve (no reason) or dispute (a reason) a delivered sub-task.
    Review { index: u32, dispute: Option<String> },
    /// Run a sub-task again.
    Retry { index: u32 },
    /// Give a sub-task to another executor (with the new cost typed).
    Executor { index: u32, to: Target, amount: Option<String> },
    /// Close the run.
    Cancel,
    /// Pass or stop a checkpoint.
    Checkpoint { name: String, approve: bool, reason: Option<String> },
    /// Appeal a ruling.
    Appeal { index: u32, reason: String },
}

impl Decision {
    /// The API path (under the run `run`) and body of the request.
    pub(crate) fn request(&self, run: &str) -> (String, Option<Value>) {
        let at = |index: &u32, what: &str| format!("/api/runs/{run}/subtasks/{index}/{what}");
        match self {
            Self::Review { index, dispute: None } => {
                (at(index, "review"), Some(json!({"decision": "approve"})))
            }
            Self::Review { index, dispute: Some(reason) } => {
                (at(index, "review"), Some(json!({"decision": "dispute", "reason": reason})))
            }
            Self::Retry { index } => (at(index, "retry"), None),
            Self::Executor { index, to, amount } => {
                let mut body = match to {
                    Target::Agent(a) => json!({"executor": a}),
                    Target::Policy(p) => json!({"policy": p.as_str()}),
                };
                if let Some(amount) = amount {
                    body["amount"] = json!(amount);
                }
                (at(index, "executor"), Some(body))
            }
            Self::Cancel => (format!("/api/runs/{run}/cancel"), None),
            Self::Checkpoint { name, approve, reason } => {
                let mut body = json!({"decision": if *approve { "approve" } else { "reject" }});
                if let Some(r) = reason {
                    body["reason"] = json!(r);
                }
                (format!("/api/runs/{run}/checkpoints/{}", path_segment(name)), Some(body))
            }
            Self::Appeal { index, reason } => {
                (format!("/api/runs/{run}/appeal"), Some(json!({"index": index, "reason": reason})))
            }
        }
    }

    /// What was decided, in words.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Review { index, dispute: None } => format!("approval of #{index}"),
            Self::Review { index, dispute: Some(_) } => format!("dispute of #{index}"),
            Self::Retry { index } => format!("retry of #{index}"),
            Self::Executor { index, to: Target::Agent(a), .. } => {
                format!("executor change of #{index} to {a}")
            }
            Self::Executor { index, to: Target::Policy(p), .. } => {
                format!("executor change of #{index} by the {} policy", p.as_str())
            }
            Self::Cancel => "cancellation".to_owned(),
            Self::Checkpoint { name, approve: true, .. } => {
                format!("approval of checkpoint {name}")
            }
            Self::Checkpoint { name, approve: false, .. } => {
                format!("rejection of checkpoint {name}")
            }
            Self::Appeal { index, .. } => format!("appeal of the ruling on #{index}"),
        }
    }

    /// Sends it for run `run`: the API's reply.
    pub(crate) async fn send(&self, client: &Client, run: &str) -> Result<Value> {
        let (path, body) = self.request(run);
        Ok(client.call(reqwest::Method::POST, &path, body.as_ref()).await?)
    }
}

/// A path segment with everything but unreserved characters percent-encoded.
fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl DecideCommand {
    /// The run, the decision and where to send it.
    fn parts(self) -> (String, Decision, Reply) {
        match self {
            Self::Review { run, index, verdict, reason, reply } => {
                let dispute = match verdict {
                    Verdict::Approve => None,
                    Verdict::Dispute => Some(reason.unwrap_or_default()),
                };
                (run, Decision::Review { index, dispute }, reply)
            }
            Self::Retry { run, index, reply } => (run, Decision::Retry { index }, reply),
            Self::ChangeExecutor { run, index, to, policy, amount, reply } => {
                // clap's group makes exactly one of them present.
                let to = match (to, policy) {
                    (Some(a), _) => Target::Agent(a),
                    (None, p) => Target::Policy(p.unwrap_or(Policy::Balanced)),
                };
                (run, Decision::Executor { index, to, amount }, reply)
            }
            Self::Cancel { run, reply } => (run, Decision::Cancel, reply),
            Self::Checkpoint { run, name, verdict, reason, reply } => {
                let approve = verdict == Gate::Approve;
                (run, Decision::Checkpoint { name, approve, reason }, reply)
            }
            Self::Appeal { run, index, reason, reply } => {
                (run, Decision::Appeal { index, reason }, reply)
            }
        }
    }
}

/// What the API answers a decision with.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DecisionReply {
    /// Queued for the run's driver (`202`): the decision's place in the
    /// run's decisions.
    Queued {
        /// Its sequence number.
        decision: i64,
    },
    /// A cancellation: the run's view.
    Run(Box<RunView>),
}

/// The runs `GET /api/runs` lists.
#[derive(Debug, Deserialize)]
struct RunList {
    runs: Vec<RunSummary>,
}

/// Sends a decision through the API and prints its reply: the JSON with
/// `--json`, else one line.
pub(crate) async fn decide(cmd: DecideCommand) -> Result<()> {
    let (run, decision, reply) = cmd.parts();
    let client = Client::connect(&reply.api).await?;
    let answer = decision.send(&client, &run).await?;
    if reply.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        let answer: DecisionReply = crate::client::read(answer)?;
        println!("{}", reply_line(&run, &decision, &answer));
    }
    Ok(())
}

/// The one line a decision's reply reads as.
fn reply_line(run: &str, decision: &Decision, reply: &DecisionReply) -> String {
    let what = decision.describe();
    match reply {
        DecisionReply::Queued { decision: seq } => format!(
            "{what} queued as decision {seq}; `tessera runs show {run}` tells what came of it"
        ),
        // A cancellation answers with the run's view.
        DecisionReply::Run(view) => match RunState::parse(&view.run.state) {
            Ok(RunState::Cancelled) => format!("run {run} cancelled; nothing was funded"),
            _ => format!(
                "{what} queued (the run is {}); settled work stays settled, unaccepted \
                 tasks are refunded; `tessera runs show {run}` tells what came of it",
                view.run.state
            ),
        },
    }
}

/// Lists at most `limit` runs, newest first, optionally only those in
/// `state`: a table, or the API's JSON with `json`.
pub(crate) async fn list(api: &ApiArgs, state: Option<&str>, limit: u32, json: bool) -> Result<()> {
    let client = Client::connect(api).await?;
    let path = match state {
        Some(s) => format!("/api/runs?state={s}&limit={limit}"),
        None => format!("/api/runs?limit={limit}"),
    };
    let RunList { mut runs } = client.call_as(reqwest::Method::GET, &path, None).await?;
    runs.sort_by_key(|r| std::cmp::Reverse(r.created_at));
    if json {
        println!("{}", serde_json::to_string_pretty(&json!({ "runs": runs }))?);
    } else {
        print!("{}", runs_table(&runs));
    }
    Ok(())
}

/// The states `runs list --state` takes.
pub(crate) fn run_states() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        tessera_orchestrator::state::RunState::ALL.iter().map(|s| s.as_str()),
    )
}

/// Runs as a table: id, state, reason.
fn runs_table(runs: &[RunSummary]) -> String {
    let mut out = String::new();
    for r in runs {
        out.push_str(&format!(
            "{}  {:<10} {}\n",
            r.id,
            r.state.as_str(),
            r.reason.as_deref().unwrap_or("")
        ));
    }
    if runs.is_empty() {
        out.push_str("no runs\n");
    }
    out
}

/// Where a followed run waits for someone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pause {
    /// A delivered sub-task under manual review.
    Review { index: u32, result: Option<String> },
    /// A checkpoint, with the outputs of the sub-tasks it follows.
    Checkpoint { name: String, outputs: Vec<(String, String)> },
}

impl Pause {
    /// The pause event `ev` (from a run's stream) announces, if any.
    pub(crate) fn of(ev: &RunEvent) -> Option<Self> {
        match ev {
            RunEvent::ReviewRequired(fields) => Some(Self::Review {
                index: u32::try_from(fields.get("index")?.as_u64()?).ok()?,
                result: fields.get("result_uri").and_then(Value::as_str).map(str::to_owned),
            }),
            RunEvent::CheckpointReached { name, outputs, .. } => Some(Self::Checkpoint {
                name: name.clone(),
                outputs: outputs.iter().map(|(i, o)| (i.to_string(), o.clone())).collect(),
            }),
            _ => None,
        }
    }
}

impl Pause {
    /// Fills in what a reviewed sub-task delivered from the run's `view`
    /// (its output as handed on, rather than the result's URI).
    pub(crate) fn with_view(mut self, view: &RunView) -> Self {
        if let Self::Review { index, result } = &mut self
            && let Some(output) =
                view.subtasks.iter().find(|s| s.idx == *index).and_then(|s| s.output.as_deref())
        {
            *result = Some(output.to_owned());
        }
        self
    }
}

/// What was answered at a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Queue this decision.
    Decide(Decision),
    /// Leave it for later.
    Skip,
    /// The input ended: nobody is there to ask.
    Closed,
}

/// Asks what to do at `pause` of a run, on `out`, reading answers from
/// `input` until one is understood.
pub(crate) fn ask(
    pause: &Pause,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> std::io::Result<Answer> {
    match pause {
        Pause::Review { index, result } => {
            let result = result.as_deref().map(|r| format!(": {}", clip(r, 100)));
            writeln!(out, "sub-task #{index} delivered{}", result.unwrap_or_default())?;
        }
        Pause::Checkpoint { name, outputs } => {
            writeln!(out, "checkpoint {name} reached")?;
            for (i, o) in outputs {
                writeln!(out, "  #{i}: {}", clip(o, 100))?;
            }
        }
    }
    loop {
        match pause {
            Pause::Review { .. } => write!(out, "approve / dispute <reason> / skip? ")?,
            Pause::Checkpoint { .. } => write!(out, "approve / reject [reason] / skip? ")?,
        }
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(out, "\nno answer: skipped (decide later with `tessera runs …`)")?;
            return Ok(Answer::Closed);
        }
        let line = line.trim();
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let reason = (!rest.is_empty()).then(|| rest.to_owned());
        let answer = match (pause, word.to_lowercase().as_str()) {
            (_, "s" | "skip") => return Ok(Answer::Skip),
            (Pause::Review { index, .. }, "a" | "approve") => {
                Some(Decision::Review { index: *index, dispute: None })
            }
            (Pause::Review { index, .. }, "d" | "dispute") => match reason {
                Some(r) => Some(Decision::Review { index: *index, dispute: Some(r) }),
                None => {
                    writeln!(out, "a dispute needs a reason: `dispute <reason>`")?;
                    continue;
                }
            },
            (Pause::Checkpoint { name, .. }, verdict @ ("a" | "approve" | "r" | "reject")) => {
                Some(Decision::Checkpoint {
                    name: name.clone(),
                    approve: verdict.starts_with('a'),
                    reason,
                })
            }
            _ => None,
        };
        match answer {
            Some(d) => return Ok(Answer::Decide(d)),
            None => writeln!(out, "unknown answer {line:?}")?,
        }
    }
}

/// `s` on one line, cut after `n` characters.
fn clip(s: &str, n: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= n { s } else { format!("{}…", s.chars().take(n).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orchestrate::fixture::view;

    fn asked(pause: &Pause, input: &str) -> (Answer, String) {
        let mut out = Vec::new();
        let d = ask(pause, &mut input.as_bytes(), &mut out).unwrap();
        (d, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_review_prompt_takes_approve_dispute_or_skip() {
        let pause = Pause::Review { index: 1, result: Some("data:,Bonjour".into()) };
        let (d, text) = asked(&pause, "approve\n");
        assert_eq!(d, Answer::Decide(Decision::Review { index: 1, dispute: None }));
        assert_eq!(
            text,
            "sub-task #1 delivered: data:,Bonjour\napprove / dispute <reason> / skip? "
        );
        // A dispute without a reason is asked again; the reason keeps its case.
        let (d, text) = asked(&pause, "dispute\nD  It leaves out the traders.\n");
        assert_eq!(
            d,
            Answer::Decide(Decision::Review {
                index: 1,
                dispute: Some("It leaves out the traders.".into())
            })
        );
        assert!(text.contains("a dispute needs a reason"), "{text}");
        let (d, text) = asked(&pause, "maybe\nskip\n");
        assert_eq!(d, Answer::Skip);
        assert!(text.contains("unknown answer \"maybe\""), "{text}");
        // No more input is a skip, said plainly.
        let (d, text) = asked(&pause, "");
        assert_eq!(d, Answer::Closed);
        assert!(text.contains("no answer: skipped"), "{text}");
        // A checkpoint's words are not a review's.
        assert_eq!(asked(&pause, "reject\ns\n").0, Answer::Skip);
    }

    #[test]
    fn a_checkpoint_prompt_takes_approve_reject_with_a_reason_or_skip() {
        let pause = Pause::Checkpoint {
            name: "legal".into(),
            outputs: vec![("0".into(), "The contract is fine.".into())],
        };
        let (d, text) = asked(&pause, "a\n");
        assert_eq!(
            d,
            Answer::Decide(Decision::Checkpoint {
                name: "legal".into(),
                approve: true,
                reason: None
            })
        );
        assert_eq!(
            text,
            "checkpoint legal reached\n  #0: The contract is fine.\napprove / reject [reason] / skip? "
        );
        let (d, _) = asked(&pause, "reject clause 4 is missing\n");
        assert_eq!(
            d,
            Answer::Decide(Decision::Checkpoint {
                name: "legal".into(),
                approve: false,
                reason: Some("clause 4 is missing".into())
            })
        );
        let (d, _) = asked(&pause, "reject\n");
        assert_eq!(
            d,
            Answer::Decide(Decision::Checkpoint {
                name: "legal".into(),
                approve: false,
                reason: None
            })
        );
        assert_eq!(asked(&pause, "dispute x\nskip\n").0, Answer::Skip);
    }

    #[test]
    fn pauses_are_read_from_events() {
        // As the stream sends it: JSON text.
        let event = |body: Value| RunEvent::from_body(&body.to_string()).unwrap();
        let plan_id = format!("0x{}", "11".repeat(32));
        let ev = event(json!({"kind": "review_required", "index": 2, "result_uri": "data:,x"}));
        assert_eq!(
            Pause::of(&ev),
            Some(Pause::Review { index: 2, result: Some("data:,x".into()) })
        );
        let ev = event(json!({"kind": "checkpoint_reached", "plan_id": plan_id, "name": "go",
            "after": [0], "outputs": {"0": "done"}, "timeout_secs": 60, "on_timeout": "escalate"}));
        assert_eq!(
            Pause::of(&ev),
            Some(Pause::Checkpoint {
                name: "go".into(),
                outputs: vec![("0".into(), "done".into())]
            })
        );
        assert_eq!(Pause::of(&event(json!({"kind": "subtask_completed", "index": 0}))), None);
        let view =
            view(json!({"subtasks": [{"idx": 0, "output": "x"}, {"idx": 2, "output": "Bonjour"}]}));
        let pause = Pause::Review { index: 2, result: Some("data:,x".into()) }.with_view(&view);
        assert_eq!(pause, Pause::Review { index: 2, result: Some("Bonjour".into()) });
        let (_, text) =
            asked(&pause.with_view(&crate::orchestrate::fixture::view(json!({}))), "skip\n");
        assert!(text.starts_with("sub-task #2 delivered: Bonjour\n"), "{text}");
    }

    #[test]
    fn decisions_become_requests() {
        let run = "0xab";
        let a: Address = "0x52908400098527886E0F7030069857D2E4169EE7".parse().unwrap();
        let cases = [
            (
                Decision::Review { index: 0, dispute: None },
                "/api/runs/0xab/subtasks/0/review",
                Some(json!({"decision": "approve"})),
            ),
            (
                Decision::Review { index: 1, dispute: Some("why".into()) },
                "/api/runs/0xab/subtasks/1/review",
                Some(json!({"decision": "dispute", "reason": "why"})),
            ),
            (Decision::Retry { index: 2 }, "/api/runs/0xab/subtasks/2/retry", None),
            (
                Decision::Executor { index: 0, to: Target::Agent(a), amount: None },
                "/api/runs/0xab/subtasks/0/executor",
                Some(json!({"executor": a})),
            ),
            (
                Decision::Executor { index: 1, to: Target::Agent(a), amount: Some("0.5".into()) },
                "/api/runs/0xab/subtasks/1/executor",
                Some(json!({"executor": a, "amount": "0.5"})),
            ),
            (
                Decision::Executor { index: 0, to: Target::Policy(Policy::Reliable), amount: None },
                "/api/runs/0xab/subtasks/0/executor",
                Some(json!({"policy": "reliable"})),
            ),
            (Decision::Cancel, "/api/runs/0xab/cancel", None),
            (
                Decision::Checkpoint { name: "legal review".into(), approve: false, reason: None },
                "/api/runs/0xab/checkpoints/legal%20review",
                Some(json!({"decision": "reject"})),
            ),
            (
                Decision::Checkpoint {
                    name: "go".into(),
                    approve: true,
                    reason: Some("ok".into()),
                },
                "/api/runs/0xab/checkpoints/go",
                Some(json!({"decision": "approve", "reason": "ok"})),
            ),
            (
                Decision::Appeal { index: 3, reason: "no".into() },
                "/api/runs/0xab/appeal",
                Some(json!({"index": 3, "reason": "no"})),
            ),
        ];
        for (decision, path, body) in cases {
            assert_eq!(decision.request(run), (path.to_owned(), body), "{decision:?}");
        }
    }

    #[test]
    fn replies_read_as_one_line() {
        // A queued decision, or a cancellation's run view.
        let reply = |body: Value| -> DecisionReply {
            match body.get("decision") {
                Some(_) => crate::client::read(body).unwrap(),
                None => crate::client::read(serde_json::to_value(view(body)).unwrap()).unwrap(),
            }
        };
        let d = Decision::Review { index: 0, dispute: None };
        assert_eq!(
            reply_line(
                "0xab",
                &d,
                &reply(json!({"run": "0xab", "decision": 3, "status": "queued"}))
            ),
            "approval of #0 queued as decision 3; `tessera runs show 0xab` tells what came of it"
        );
        let line = reply_line("0xab", &Decision::Cancel, &reply(json!({"state": "running"})));
        assert!(line.starts_with("cancellation queued (the run is running)"), "{line}");
        assert_eq!(
            reply_line("0xab", &Decision::Cancel, &reply(json!({"state": "cancelled"}))),
            "run 0xab cancelled; nothing was funded"
        );
    }

    #[test]
    fn runs_read_as_a_table() {
        let run = |fields: Value| -> RunSummary {
            let mut fields = fields;
            fields["created_at"] = json!(1);
            fields["updated_at"] = json!(2);
            serde_json::from_value(fields).unwrap()
        };
        let runs = [
            run(json!({"id": "0xab", "state": "paused", "reason": "sub-task 0 expired"})),
            run(json!({"id": "0xcd", "state": "completed", "reason": null})),
        ];
        assert_eq!(runs_table(&runs), "0xab  paused     sub-task 0 expired\n0xcd  completed  \n");
        assert_eq!(runs_table(&[]), "no runs\n");
    }
}
