//! `tessera agents`: the registry's agents as the indexer sees them (status,
//! offers, record weighed by the money behind it, ERC-8004 identity and
//! settlement-backed feedback), one agent in full, how a policy ranks the
//! agents offering a capability, with the reasons, and the capability
//! catalogue ([`capabilities`]), from the orchestrator's API.
//!
//! Reading only: nothing here needs a token or a key. The identity and
//! feedback fields are shown when the indexer serves them and left out
//! when it does not.

use alloy::primitives::Address;
use clap::{Args, Subcommand};
use eyre::Result;
use serde_json::Value;
use tessera_bindings::usdc::Usdc;
use tessera_orchestrator::select::{self, AgentRecord, Evidence, PRIOR_FAILURES, PRIOR_SUCCESSES};

use crate::{client::ApiError, orchestrate::ApiArgs};

mod capabilities;

/// `tessera agents [show <address> | rank <capability> | capabilities]`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct AgentsArgs {
    #[command(subcommand)]
    command: Option<AgentsCommand>,
    #[command(flatten)]
    indexer: IndexerUrl,
    /// Print the indexer's JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// The indexer an agents view reads.
#[derive(Debug, Args)]
pub(crate) struct IndexerUrl {
    /// Indexer API base URL: `tessera serve`'s embedded one by default, a
    /// standalone `tessera indexer run` at http://127.0.0.1:8090.
    #[arg(
        long = "indexer-url",
        alias = "indexer",
        value_name = "URL",
        env = "TESSERA_INDEXER_URL",
        default_value = "http://127.0.0.1:8080/index"
    )]
    url: String,
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// One agent in full: offers, record and its weighing (with the
    /// funders when the indexer lists them), ERC-8004 identity, and its
    /// latest feedback with the proof (the task settled and its transaction).
    Show {
        /// The agent's address (0x + 40 hex digits).
        #[arg(value_parser = parse_address)]
        address: Address,
        #[command(flatten)]
        indexer: IndexerUrl,
        /// Print the indexer's JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// How a policy ranks the active agents offering a capability, best
    /// first, each with why it stands there: the first why it would be
    /// chosen, every other why it lost to the one just above it.
    Rank {
        /// The capability (1-31 of a-z, 0-9 and '-'), e.g. translate.
        #[arg(value_parser = parse_capability)]
        capability: String,
        /// cheapest (the lowest price), reliable (the weighed record, price
        /// aside) or balanced (record and price together).
        #[arg(long, default_value = "balanced", value_parser = ["cheapest", "reliable", "balanced"])]
        policy: String,
        #[command(flatten)]
        api: ApiArgs,
        /// Print the API's JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// The capability catalogue plans are made from: each capability,
    /// whether it is built in, how many active agents offer it, the
    /// cheapest price, the best offerer's reliability, what it does and
    /// the fields of its result (what a plan's condition may read). From
    /// the orchestrator, whose embedded index reads it from the registry;
    /// an orchestrator run with --no-index knows the built-in capabilities
    /// only.
    Capabilities {
        #[command(flatten)]
        api: ApiArgs,
        /// Read a standalone indexer's catalogue instead of the
        /// orchestrator's (`tessera indexer run`, e.g. http://127.0.0.1:8090).
        #[arg(long = "indexer-url", value_name = "URL")]
        indexer: Option<String>,
        /// Print the raw catalogue (the API's JSON) instead.
        #[arg(long)]
        json: bool,
    },
}

fn parse_address(s: &str) -> Result<Address, String> {
    s.parse().map_err(|_| format!("{s:?} is not an address: 0x and 40 hex digits"))
}

fn parse_capability(s: &str) -> Result<String, String> {
    tessera_bindings::capability::check(s).map(|()| s.to_owned()).map_err(|e| e.to_string())
}

/// Runs `tessera agents …`.
pub(crate) async fn run(args: AgentsArgs) -> Result<()> {
    match args.command {
        None => {
            let body = get_json(&args.indexer.url, "/api/agents", "indexer").await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&body)?);
            } else {
                print!("{}", list(body["agents"].as_array().map_or(&[][..], Vec::as_slice)));
            }
        }
        Some(AgentsCommand::Show { address, indexer, json }) => {
            let body = get_json(&indexer.url, &format!("/api/agents/{address}"), "indexer").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&body)?);
            } else {
                print!("{}", show(&body["agent"]));
            }
        }
        Some(AgentsCommand::Rank { capability, policy, api, json }) => {
            let path = format!("/api/agents/ranking?capability={capability}&policy={policy}");
            let body = get_json(&api.api, &path, "orchestrator").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&body)?);
            } else {
                // Names from the orchestrator's embedded indexer, when it has one.
                let base = format!("{}/index", api.api.trim_end_matches('/'));
                let known = get_json(&base, "/api/agents", "indexer").await.unwrap_or(Value::Null);
                let names = known["agents"].as_array().map_or(&[][..], Vec::as_slice);
                print!("{}", ranking(&body, names));
            }
        }
        Some(AgentsCommand::Capabilities { api, indexer, json }) => {
            let (base, service) = match &indexer {
                Some(url) => (url.as_str(), "indexer"),
                None => (api.api.as_str(), "orchestrator"),
            };
            let body = get_json(base, "/api/capabilities", service).await?;
            let catalogue = capabilities::read(&body, service)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&body)?);
            } else {
                print!("{}", capabilities::render(&catalogue, &body));
            }
        }
    }
    Ok(())
}

/// `GET base + path`: the JSON reply, or why there is none (exit codes as
/// the orchestrator client's).
async fn get_json(base: &str, path: &str, service: &'static str) -> Result<Value, ApiError> {
    let base = base.trim_end_matches('/');
    let resp = reqwest::get(format!("{base}{path}"))
        .await
        .map_err(|e| ApiError::unreachable(base, &e).of(service))?;
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let message = body["error"].as_str().unwrap_or("no details").to_owned();
        return Err(ApiError::from_status(status.as_u16(), message).of(service));
    }
    Ok(body)
}

/// A JSON count (a number or a decimal string); 0 when neither.
fn count(v: &Value) -> u64 {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)
}

/// The record the indexer's `stats` describe, read as selection reads it.
fn record(stats: &Value) -> AgentRecord {
    let ev = &stats["evidence"];
    AgentRecord {
        completed: count(&stats["completed"]),
        refunded: count(&stats["refunded"]),
        expired: count(&stats["expired"]),
        median_completion_secs: stats["median_completion_secs"].as_u64(),
        weight: Evidence {
            completed: ev["completed"].as_f64().unwrap_or(0.0),
            failed: ev["failed"].as_f64().unwrap_or(0.0),
            funders: count(&ev["funders"]),
            linked_funders: count(&ev["linked_funders"]),
            below_floor: count(&ev["below_floor"]),
            own: ev["own"].as_f64().unwrap_or(0.0),
        },
        last_active_at: stats["last_active_at"].as_u64(),
    }
}

/// A price in base units (a decimal string or a number) as `0.80`.
fn price(v: &Value) -> String {
    let units: u128 =
        v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_u64().map(u128::from)).unwrap_or(0);
    let words = select::short_usdc(Usdc::from_base_units(units));
    words.trim_end_matches(" USDC").to_owned()
}

fn percent(x: f64) -> String {
    format!("{}%", (x * 100.0).round())
}

/// `3 from 2 funders, 1 paid by the agent, 4 below floor`, or `-`.
fn weighed(w: &Evidence) -> String {
    if w.funders == 0 && w.below_floor == 0 {
        return "-".to_owned();
    }
    let mut out = format!("{:.1} from {}", w.settled(), w.funders);
    if w.linked_funders > 0 {
        out.push_str(&format!(" ({} linked)", w.linked_funders));
    }
    if w.below_floor > 0 {
        out.push_str(&format!(", {} below floor", w.below_floor));
    }
    out
}

/// `#12`, or `-` without an ERC-8004 identity.
fn identity(a: &Value) -> String {
    match a["identity"]["agent_id"].as_str() {
        Some(id) => format!("#{id}"),
        None => a["identity"]["agent_id"].as_u64().map_or("-".to_owned(), |id| format!("#{id}")),
    }
}

/// `2/3 matched, avg 87.5`, `none` or `-` when the indexer has no feedback.
fn feedback(a: &Value) -> String {
    let f = &a["feedback"];
    if !f.is_object() {
        return "-".to_owned();
    }
    let (n, matched) = (count(&f["count"]), count(&f["matched"]));
    if n == 0 {
        return "none".to_owned();
    }
    let avg = f["average"].as_f64().map(|x| format!(", avg {}", trim(x))).unwrap_or_default();
    format!("{matched}/{n} matched{avg}")
}

/// A number with at most two decimals and no trailing zeros.
fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Columns padded to their widest cell, two spaces apart.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> =
            row.iter().enumerate().map(|(c, s)| format!("{s:<w$}", w = widths[c])).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The agents as a table: one row each.
pub(crate) fn list(agents: &[Value]) -> String {
    if agents.is_empty() {
        return "no agents indexed\n".to_owned();
    }
    let head = ["AGENT", "ADDRESS", "STATUS", "OFFERS (USDC)", "RECORD", "WEIGHED", "RELIABLE"];
    let mut rows = vec![head.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()];
    rows[0].extend(["ERC-8004".to_owned(), "FEEDBACK".to_owned()]);
    for a in agents {
        let r = record(&a["stats"]);
        let offers = a["offers"].as_object().map_or("-".to_owned(), |o| {
            o.iter().map(|(c, p)| format!("{c} {}", price(p))).collect::<Vec<_>>().join(", ")
        });
        rows.push(vec![
            a["name"].as_str().unwrap_or("-").to_owned(),
            a["agent"].as_str().unwrap_or("?").to_owned(),
            a["status"].as_str().unwrap_or("?").to_owned(),
            offers,
            format!("{}/{}", r.completed, r.settled()),
            weighed(&r.weight),
            percent(r.reliability()),
            identity(a),
            feedback(a),
        ]);
    }
    let mut out = table(&rows);
    out.push_str(&format!(
        "RECORD is completed/settled; WEIGHED what the tasks weigh by the money and funders behind \
         them; RELIABLE = (weighed completed + {PRIOR_SUCCESSES}) / (weighed settled + {})\n",
        PRIOR_SUCCESSES + PRIOR_FAILURES
    ));
    out
}

/// One agent in full.
pub(crate) fn show(a: &Value) -> String {
    let r = record(&a["stats"]);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |k: &str, v: String| rows.push(vec![k.to_owned(), v]);
    row(
        "agent",
        format!("{} {}", a["name"].as_str().unwrap_or("-"), a["agent"].as_str().unwrap_or("?")),
    );
    row("status", a["status"].as_str().unwrap_or("?").to_owned());
    row("card", a["metadata_uri"].as_str().unwrap_or("-").to_owned());
    if let Some(offers) = a["offers"].as_object() {
        for (c, p) in offers {
            row("offer", format!("{c} at {} USDC", price(p)));
        }
    }
    row("record", select::record_words(&r));
    row(
        "reliability",
        format!(
            "{} from the weighed record (prior {PRIOR_SUCCESSES}:{PRIOR_FAILURES}); {} counting \
             every task alike",
            percent(r.reliability()),
            percent(r.unweighted_reliability())
        ),
    );
    let w = &r.weight;
    row(
        "weighed",
        format!(
            "{:.2} completed, {:.2} failed from {} funders ({} paid by the agent), {} below the floor",
            w.completed, w.failed, w.funders, w.linked_funders, w.below_floor
        ),
    );
    let secs = |k: &str| a["stats"][k].as_u64().map_or("-".to_owned(), |s| format!("{s} s"));
    row(
        "median",
        format!(
            "accept {}, deliver {}",
            secs("median_accept_secs"),
            secs("median_completion_secs")
        ),
    );
    for f in a["funders"].as_array().or(a["stats"]["funders"].as_array()).into_iter().flatten() {
        let linked = if f["linked"].as_bool() == Some(true) { ", paid by the agent" } else { "" };
        row(
            "funder",
            format!(
                "{}: {} completed, {} failed, {} below the floor{linked}",
                f["funder"].as_str().unwrap_or("?"),
                count(&f["completed"]),
                count(&f["failed"]),
                count(&f["below_floor"])
            ),
        );
    }
    let id = &a["identity"];
    if id.is_object() {
        row(
            "erc-8004",
            format!(
                "agent {} in {} (owner {}, wallet {})",
                identity(a),
                id["registry"].as_str().unwrap_or("?"),
                id["owner"].as_str().unwrap_or("?"),
                id["wallet"].as_str().unwrap_or("-")
            ),
        );
        if let Some(uri) = id["uri"].as_str() {
            row("registration", uri.to_owned());
        }
    } else if a.get("identity").is_some() {
        row("erc-8004", "no identity linked".to_owned());
    }
    if a["feedback"].is_object() {
        row("feedback", feedback(a));
    }
    let mut out = table(&rows);
    let latest = a["feedback"]["latest"].as_array().map_or(&[][..], Vec::as_slice);
    if !latest.is_empty() {
        out.push_str("latest feedback:\n");
        for f in latest {
            out.push_str(&format!("  {}\n", feedback_line(f)));
        }
    }
    out
}

/// One feedback entry with its proof: `+95 (quality) by 0x… #3: matches
/// task 0x… settled in tx 0x…`, or why it does not match.
fn feedback_line(f: &Value) -> String {
    let value = fixed(&f["value"], count(&f["value_decimals"]));
    let tags: Vec<&str> = [&f["tag1"], &f["tag2"]]
        .iter()
        .filter_map(|t| t.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    let tags = if tags.is_empty() { String::new() } else { format!(" ({})", tags.join(", ")) };
    let mut out =
        format!("{value}{tags} by {} #{}", f["client"].as_str().unwrap_or("?"), count(&f["index"]));
    if f["revoked"].as_bool() == Some(true) {
        out.push_str(", revoked");
    }
    if f["matched"].as_bool() == Some(true) {
        out.push_str(&format!(": matches task {} settled", f["task_id"].as_str().unwrap_or("?"),));
    } else {
        let why = f["why"].as_str().unwrap_or("no settlement named");
        out.push_str(&format!(": not matched ({why})"));
    }
    if let Some(tx) = f["tx"].as_str() {
        out.push_str(&format!(", feedback tx {tx}"));
    }
    out
}

/// An integer (number or decimal string) scaled down by `decimals`.
fn fixed(v: &Value, decimals: u64) -> String {
    let raw = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return "?".to_owned(),
    };
    let (sign, digits) = raw.strip_prefix('-').map_or(("", raw.as_str()), |d| ("-", d));
    let d = usize::try_from(decimals).unwrap_or(0).min(77);
    if d == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>w$}", w = d + 1);
    let (int, frac) = padded.split_at(padded.len() - d);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() { format!("{sign}{int}") } else { format!("{sign}{int}.{frac}") }
}

/// The orchestrator's ranking with the reasons, agents named from `known`
/// (the indexer's agents; addresses alone when it has none).
pub(crate) fn ranking(body: &Value, known: &[Value]) -> String {
    let agents = body["agents"].as_array().map_or(&[][..], Vec::as_slice);
    let capability = body["capability"].as_str().unwrap_or("?");
    let policy = body["policy"].as_str().unwrap_or("?");
    if agents.is_empty() {
        return format!("no active agent offers {capability}\n");
    }
    let mut out = format!(
        "{policy} ranking of {capability}: {} eligible (R reliability, L latency, P price \
         factor); each below the first lost to the one above it\n",
        agents.len()
    );
    for a in agents {
        let f = |k: &str| a[k].as_f64().unwrap_or(0.0);
        let address = a["agent"].as_str().unwrap_or("?");
        let name = known
            .iter()
            .find(|k| k["agent"].as_str().is_some_and(|x| x.eq_ignore_ascii_case(address)))
            .and_then(|k| k["name"].as_str())
            .map(|n| format!("{n} "))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:>2}. {name}{address}  {} USDC  score {}  R {}  L {:.2}  P {:.2}\n    {}\n",
            count(&a["rank"]),
            price(&a["price"]),
            count(&a["score_bps"]),
            percent(f("reliability")),
            f("latency"),
            f("price_factor"),
            a["reason"].as_str().unwrap_or("")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn agent() -> Value {
        json!({
            "agent": "0x00000000000000000000000000000000000000b2",
            "status": "active",
            "metadata_uri": "data:application/json,{}",
            "name": "translator",
            "offers": { "translate": "800000" },
            "stats": {
                "tasks": 5, "completed": 4, "refunded": 0, "expired": 1, "disputed": 0,
                "earnings": "3200000", "median_accept_secs": 2, "median_completion_secs": 7,
                "success_rate": 0.8,
                "evidence": { "completed": 2.5, "failed": 1.5, "funders": 3, "linked_funders": 1,
                              "below_floor": 100, "own": 0.0 }
            }
        })
    }

    #[test]
    fn the_list_reads_the_weighed_record_and_tolerates_missing_identity() {
        let out = list(&[agent()]);
        let row = out.lines().nth(1).unwrap();
        assert!(row.contains("translate 0.80"), "{out}");
        assert!(row.contains("4/5"), "{out}");
        assert!(row.contains("4.0 from 3 (1 linked), 100 below floor"), "{out}");
        // (2.5 + 2) / (4 + 3), neither the raw 80 % nor (4 + 2) / (5 + 3).
        assert!(row.contains("64%"), "{out}");
        let last: Vec<&str> = row.split_whitespace().rev().take(2).collect();
        assert_eq!(last, ["-", "-"], "no identity, no feedback: {out}");
        assert_eq!(list(&[]), "no agents indexed\n");
    }

    #[test]
    fn identity_and_feedback_show_with_their_proof() {
        let mut a = agent();
        a["identity"] = json!({ "agent_id": "12", "registry": "0xreg", "owner": "0xown",
                                "wallet": "0xwal", "uri": "ipfs://card" });
        a["feedback"] = json!({ "count": 3, "matched": 2, "average": 87.5, "latest": [
            { "client": "0xc1", "index": 1, "value": "950", "value_decimals": 1, "tag1": "quality",
              "tag2": "", "uri": "u", "hash": "h", "task_id": "0xtask", "tx": "0xtx",
              "matched": true, "why": null, "revoked": false },
            { "client": "0xc2", "index": 2, "value": -5, "value_decimals": 0, "tag1": null,
              "tag2": null, "uri": "u", "hash": "h", "task_id": null, "tx": "0xtx2",
              "matched": false, "why": "no such settlement", "revoked": true }
        ]});
        let row = list(std::slice::from_ref(&a));
        assert!(row.contains("#12"), "{row}");
        assert!(row.contains("2/3 matched, avg 87.5"), "{row}");
        let out = show(&a);
        assert!(out.contains("agent #12 in 0xreg (owner 0xown, wallet 0xwal)"), "{out}");
        assert!(
            out.contains("95 (quality) by 0xc1 #1: matches task 0xtask settled, feedback tx 0xtx"),
            "{out}"
        );
        assert!(out.contains("-5 by 0xc2 #2, revoked: not matched (no such settlement)"), "{out}");
        assert!(out.contains("64% from the weighed record"), "{out}");
        assert!(out.contains("75% counting every task alike"), "{out}");
        assert!(out.contains("accept 2 s, deliver 7 s"), "{out}");
    }

    #[test]
    fn numbers_read_as_written() {
        assert_eq!(fixed(&json!("950"), 1), "95");
        assert_eq!(fixed(&json!("5"), 2), "0.05");
        assert_eq!(fixed(&json!(-125), 2), "-1.25");
        assert_eq!(fixed(&json!(7), 0), "7");
        assert_eq!(price(&json!("1")), "0.000001");
        assert_eq!(trim(87.5), "87.5");
        assert_eq!(trim(90.0), "90");
    }

    #[test]
    fn the_ranking_prints_each_reason() {
        let body = json!({ "capability": "translate", "policy": "balanced", "agents": [
            { "rank": 1, "agent": "0xb2", "price": 420000, "score_bps": 7352, "reliability": 0.913,
              "latency": 0.967, "price_factor": 0.833, "record": "19/20 settled", "below": null,
              "reason": "balanced: 91% reliable" },
            { "rank": 2, "agent": "0xa1", "price": 350000, "score_bps": 3375, "reliability": 0.375,
              "latency": 0.9, "price_factor": 1.0, "record": "1/5 settled", "below": "0xb2",
              "reason": "less reliable: 38% reliable" }
        ]});
        let known = [json!({ "agent": "0xA1", "name": "summarizer-a" })];
        let out = ranking(&body, &known);
        assert!(out.starts_with("balanced ranking of translate: 2 eligible"), "{out}");
        assert!(
            out.contains(
                " 1. 0xb2  0.42 USDC  score 7352  R 91%  L 0.97  P 0.83\n    balanced: 91% reliable"
            ),
            "{out}"
        );
        assert!(out.contains(" 2. summarizer-a 0xa1  0.35 USDC"), "{out}");
        assert!(out.contains("    less reliable: 38% reliable"), "{out}");
        let none = json!({ "capability": "x", "policy": "cheapest", "agents": [] });
        assert_eq!(ranking(&none, &[]), "no active agent offers x\n");
        assert!(parse_capability("Translate").is_err());
        assert!(parse_address("0x12").unwrap_err().contains("not an address"));
    }
}
