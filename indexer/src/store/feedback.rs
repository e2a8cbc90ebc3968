//! ERC-8004 identities and feedback, read from the stored events: the
//! agent ids an agent linked in the registry (`IdentityLinked`, every one
//! it ever linked: linking a fresh identity does not shed the feedback
//! given to the old one), and the reputation registry's feedback on those
//! ids, each matched against the escrow's settlements (see
//! [`tessera_bindings::feedback`]). Anyone may give feedback on anyone and
//! respond to it, so feedback is read in two windows: the feedback of the
//! funders and clients of the agent's tasks (the only feedback that can
//! match: a sponsor funding through a grant pays, its operator approves as
//! the client and gives the feedback), the
//! newest [`PER_GIVER`] of each giver, and the newest [`MAX_FEEDBACK`] of
//! anyone's; responses are not read. Junk from strangers then fills only
//! the second window, never pushing matched feedback out. Only matched
//! feedback counts: its hash is its proof's, its giver funded or was the
//! client of every task the proof names, each task settled (as a long-form
//! proof says, in the transaction it names; a compact proof names the tasks
//! only), with this agent as executor, and its value has the settlements'
//! sign (not negative for a paid task, not positive for a refunded or
//! expired one). A matched feedback carries the one funder of its tasks and
//! their settlements as the index has them, whichever form its proof took.

use std::collections::{BTreeMap, BTreeSet};

use alloy::{
    primitives::{Address, U256},
    sol_types::SolEventInterface,
};
use serde::Serialize;
use sqlx::Row;
use tessera_bindings::{
    AgentRegistry::AgentRegistryEvents,
    ReputationRegistry::ReputationRegistryEvents,
    feedback::{AnyProof, SettledTask, task_value},
};
use tessera_db::DbError;

use super::{
    IndexStore,
    codecs::{bytes_hex, id_bytes, stored_content},
    totals::Key,
};

/// Feedback events read per agent from anyone, the newest first.
pub const MAX_FEEDBACK: i64 = 200;
/// Feedback events read per funder of the agent's tasks, the newest first.
pub const PER_GIVER: i64 = 50;
/// Funders of an agent's tasks whose feedback is read (the newest first).
pub const MAX_GIVERS: usize = 1_000;
/// Identities of an agent read (the newest links first).
pub const MAX_IDENTITIES: i64 = 64;

/// The columns a feedback read selects.
const FEEDBACK_COLUMNS: &str = "block, log_index, tx_hash, raw";
/// Feedback entries an agent view lists.
pub const LISTED_FEEDBACK: usize = 20;

/// The transaction hash column of an event row, as `0x…`.
fn tx_of(r: &sqlx::any::AnyRow) -> Result<String, DbError> {
    Ok(bytes_hex(&r.try_get::<Vec<u8>, _>("tx_hash")?))
}

/// The `agent` column of a reputation event: the agent id it is about.
pub(super) fn feedback_subject(agent_id: U256) -> String {
    format!("erc8004:{agent_id}")
}

/// An agent's ERC-8004 identity, as linked in the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdentityView {
    /// The agent id in the identity registry (decimal).
    pub agent_id: String,
    /// The block it was linked in.
    pub linked_block: i64,
    /// The linking transaction.
    pub tx: String,
}

/// One feedback on an agent, with whether it matches a settlement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeedbackView {
    /// The identity it was given to (decimal agent id): any the agent
    /// ever linked.
    pub agent_id: String,
    /// Who gave it.
    pub client: String,
    /// Its index among that giver's feedback on the agent.
    pub index: u64,
    /// The value (with `value_decimals` decimals).
    pub value: String,
    /// Decimals of `value`.
    pub value_decimals: u8,
    /// Its first tag.
    pub tag1: String,
    /// Its second tag (the capability, for a task's feedback).
    pub tag2: String,
    /// Its URI.
    pub uri: String,
    /// Its hash.
    pub hash: String,
    /// The tasks its proof names, when it reads as one.
    pub task_ids: Vec<String>,
    /// The first of them: the task, for a task's feedback (what the agents
    /// page links to).
    pub task_id: Option<String>,
    /// The transaction it was given in.
    pub tx: String,
    /// The block it was given in.
    pub block: i64,
    /// It matches the escrow's settlements.
    pub matched: bool,
    /// Why it does not, when it does not.
    pub why: Option<String>,
    /// Its giver revoked it.
    pub revoked: bool,
    /// The funder of every task it speaks of, when it matched: the giver
    /// itself, or the sponsor whose grant funded the tasks its giver (the
    /// operator, their client) approved. Whose record it moves.
    #[serde(skip)]
    pub funder: Option<String>,
    /// The settlements it speaks of, when it matched: as its proof names
    /// them (the long form) or as the index has them (the compact form,
    /// which names the tasks only).
    #[serde(skip)]
    pub settled: Vec<SettledTask>,
    /// The clients' ratings of the approved tasks among [`Self::settled`]
    /// (task id → percent), as the index has them: what the funder's record
    /// already counts of the client's word on them, so that
    /// [`super::evidence::with_feedback`] does not count it twice.
    #[serde(skip)]
    pub ratings: BTreeMap<String, u8>,
}

/// An agent's feedback in brief.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FeedbackSummary {
    /// Feedback given (revoked included).
    pub count: u64,
    /// Of it, matched to settlements and not revoked.
    pub matched: u64,
    /// The mean value of the matched, when any.
    pub average: Option<f64>,
    /// [`LISTED_FEEDBACK`] of it: the matched first, then the rest, each
    /// newest first.
    pub latest: Vec<FeedbackView>,
}

/// A settled task as the index has it.
#[derive(Debug, Clone)]
struct TaskFacts {
    funder: String,
    client: String,
    executor: String,
    status: String,
    executor_paid: i64,
    amount: i64,
    settled_tx: Option<String>,
    /// The client's rating in its approval, when it approved.
    rating: Option<u8>,
}

impl IndexStore {
    /// The ERC-8004 identity `agent` (an address as stored) linked last.
    pub async fn identity(&self, agent: &str) -> Result<Option<IdentityView>, DbError> {
        let row = sqlx::query(
            "SELECT block, log_index, tx_hash, raw FROM ix_events WHERE agent = $1 AND kind = 'IdentityLinked' \
             ORDER BY block DESC, log_index DESC LIMIT 1",
        )
        .bind(agent)
        .fetch_optional(&self.api)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let log = stored_content(&row)?;
        let Ok(AgentRegistryEvents::IdentityLinked(e)) =
            AgentRegistryEvents::decode_log(&log.inner).map(|d| d.data)
        else {
            return Ok(None);
        };
        Ok(Some(IdentityView {
            agent_id: e.agentId.to_string(),
            linked_block: row.try_get("block")?,
            tx: tx_of(&row)?,
        }))
    }

    /// Every ERC-8004 identity `agent` linked, the newest link first, each
    /// once (at most [`MAX_IDENTITIES`]).
    pub async fn identities(&self, agent: &str) -> Result<Vec<IdentityView>, DbError> {
        let rows = sqlx::query(&format!(
            "SELECT block, log_index, tx_hash, raw FROM ix_events WHERE agent = $1 AND kind = 'IdentityLinked' \
             ORDER BY block DESC, log_index DESC LIMIT {}",
            MAX_IDENTITIES * 4
        ))
        .bind(agent)
        .fetch_all(&self.api)
        .await?;
        let mut out: Vec<IdentityView> = Vec::new();
        for row in &rows {
            let log = stored_content(row)?;
            let Ok(AgentRegistryEvents::IdentityLinked(e)) =
                AgentRegistryEvents::decode_log(&log.inner).map(|d| d.data)
            else {
                continue;
            };
            let agent_id = e.agentId.to_string();
            if out.iter().any(|i| i.agent_id == agent_id) {
                continue;
            }
            out.push(IdentityView {
                agent_id,
                linked_block: row.try_get("block")?,
                tx: tx_of(row)?,
            });
            if out.len() as i64 >= MAX_IDENTITIES {
                break;
            }
        }
        Ok(out)
    }

    /// The feedback on `agent` (linked as each of `agent_ids`), each
    /// matched against the settlements, newest first: the newest
    /// [`PER_GIVER`] of each funder of its tasks, and the newest
    /// [`MAX_FEEDBACK`] of anyone's (see the module docs).
    pub async fn feedback(
        &self,
        agent: &str,
        agent_ids: &[U256],
    ) -> Result<Vec<FeedbackView>, DbError> {
        if agent_ids.is_empty() {
            return Ok(Vec::new());
        }
        let subjects: Vec<String> = agent_ids.iter().map(|id| feedback_subject(*id)).collect();
        let marks = |from: usize, n: usize| {
            (from..from + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
        };
        let in_subjects = marks(1, subjects.len());
        let anyone = format!(
            "SELECT {FEEDBACK_COLUMNS} FROM ix_events WHERE agent IN ({in_subjects}) \
             AND kind IN ('NewFeedback', 'FeedbackRevoked') \
             ORDER BY block DESC, log_index DESC LIMIT {MAX_FEEDBACK}"
        );
        let mut query = sqlx::query(&anyone);
        for s in &subjects {
            query = query.bind(s.as_str());
        }
        let mut rows = query.fetch_all(&self.api).await?;
        // The funders and clients of the agent's tasks (the newest
        // [`MAX_GIVERS`] of each), as the giver column has them.
        let totals = self.totals(agent).await?;
        let mut funders: Vec<Vec<u8>> = Vec::new();
        let parties: [fn(&Key) -> &str; 2] = [|k| &k.funder, |k| &k.client];
        for party in parties {
            let mut last: BTreeMap<&str, Option<i64>> = BTreeMap::new();
            for (key, t) in &totals {
                let seen = last.entry(party(key)).or_default();
                *seen = (*seen).max(t.last_created_block);
            }
            let mut newest: Vec<(&str, Option<i64>)> = last.into_iter().collect();
            newest.sort_by_key(|(_, block)| std::cmp::Reverse(*block));
            for (giver, _) in newest.into_iter().take(MAX_GIVERS) {
                let Ok(a) = giver.parse::<Address>() else { continue };
                if !funders.contains(&a.to_vec()) {
                    funders.push(a.to_vec());
                }
            }
        }
        for chunk in funders.chunks(super::INSERT_CHUNK) {
            let sql = format!(
                "SELECT {FEEDBACK_COLUMNS} FROM (SELECT {FEEDBACK_COLUMNS}, ROW_NUMBER() OVER \
                 (PARTITION BY giver ORDER BY block DESC, log_index DESC) AS n FROM ix_events \
                 WHERE agent IN ({in_subjects}) AND giver IN ({})) w WHERE n <= {PER_GIVER}",
                marks(subjects.len() + 1, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for s in &subjects {
                query = query.bind(s.as_str());
            }
            for g in chunk {
                query = query.bind(g.clone());
            }
            rows.extend(query.fetch_all(&self.api).await?);
        }
        // Both windows, each event once, the newest first.
        let mut keyed = Vec::with_capacity(rows.len());
        for row in rows {
            keyed.push((
                (row.try_get::<i64, _>("block")?, row.try_get::<i64, _>("log_index")?),
                row,
            ));
        }
        keyed.sort_by_key(|k| std::cmp::Reverse(k.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        let rows: Vec<sqlx::any::AnyRow> = keyed.into_iter().map(|(_, r)| r).collect();
        let mut revoked: BTreeSet<(U256, String, u64)> = BTreeSet::new();
        let mut given = Vec::new();
        for row in &rows {
            let log = stored_content(row)?;
            match ReputationRegistryEvents::decode_log(&log.inner).map(|d| d.data) {
                Ok(ReputationRegistryEvents::FeedbackRevoked(e)) => {
                    revoked.insert((
                        e.agentId,
                        e.clientAddress.to_string().to_lowercase(),
                        e.feedbackIndex,
                    ));
                }
                Ok(ReputationRegistryEvents::NewFeedback(e)) => {
                    given.push((row.try_get::<i64, _>("block")?, tx_of(row)?, e));
                }
                _ => {}
            }
        }
        let mut out = Vec::with_capacity(given.len());
        // Feedback with the same giver and hash counts once (a crash may
        // send a feedback again).
        let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
        for (block, tx, e) in given.into_iter().rev() {
            let client = e.clientAddress.to_string();
            let hash = e.feedbackHash.to_string();
            let proof = AnyProof::decode(&e.feedbackURI, e.feedbackHash);
            let task_ids: Vec<String> = proof.as_ref().map(AnyProof::task_ids).unwrap_or_default();
            let (mut why, funder, settled, ratings) = match &proof {
                Ok(p) => match self.check(agent, &client, e.value, p).await? {
                    Ok((funder, settled, ratings)) => (None, Some(funder), settled, ratings),
                    Err(why) => (Some(why), None, Vec::new(), BTreeMap::new()),
                },
                Err(err) => (Some(err.to_string()), None, Vec::new(), BTreeMap::new()),
            };
            if why.is_none() && !seen.insert((client.to_lowercase(), hash.clone())) {
                why = Some("the same giver gave this proof before".to_owned());
            }
            out.push(FeedbackView {
                revoked: revoked.contains(&(e.agentId, client.to_lowercase(), e.feedbackIndex)),
                agent_id: e.agentId.to_string(),
                client,
                index: e.feedbackIndex,
                value: e.value.to_string(),
                value_decimals: e.valueDecimals,
                tag1: e.tag1,
                tag2: e.tag2,
                uri: e.feedbackURI,
                hash,
                task_id: task_ids.first().cloned(),
                task_ids,
                tx,
                block,
                matched: why.is_none(),
                funder: if why.is_none() { funder } else { None },
                settled: if why.is_none() { settled } else { Vec::new() },
                ratings: if why.is_none() { ratings } else { BTreeMap::new() },
                why,
            });
        }
        out.reverse();
        Ok(out)
    }

    /// Whether `proof`, given by `client` with `value` on `agent`, matches
    /// the settlements: the one funder of the tasks it names, the
    /// settlements themselves and the ratings of the approved ones when it
    /// does (each as the index has it), why not when it does not. A
    /// long-form proof must also say of each task what the index says
    /// (status, amounts, transaction); a compact one names the tasks only.
    async fn check(
        &self,
        agent: &str,
        client: &str,
        value: i128,
        proof: &AnyProof,
    ) -> Result<Result<(String, Vec<SettledTask>, BTreeMap<String, u8>), String>, DbError> {
        let ids = proof.task_ids();
        let facts = self.task_facts(ids.iter().map(String::as_str)).await?;
        let claimed: Option<&[SettledTask]> = match proof {
            AnyProof::Full(p) => Some(&p.tasks),
            AnyProof::Compact(_) => None,
        };
        Ok(judge(agent, client, value, &ids, claimed, &facts).map(|(funder, settled)| {
            let ratings = settled
                .iter()
                .filter_map(|t| Some((t.task_id.clone(), facts.get(&t.task_id)?.rating?)))
                .collect();
            (funder, settled, ratings)
        }))
    }

    /// What the index has of `ids`.
    async fn task_facts<'a>(
        &self,
        ids: impl Iterator<Item = &'a str>,
    ) -> Result<BTreeMap<String, TaskFacts>, DbError> {
        let mut out = BTreeMap::new();
        for id in ids {
            let Ok(parsed) = id.parse::<U256>() else { continue };
            let row = sqlx::query(
                "SELECT funder, client, executor, status, executor_paid, amount_units, rating \
                 FROM ix_tasks WHERE task_id = $1",
            )
            .bind(id)
            .fetch_optional(&self.api)
            .await?;
            let Some(row) = row else { continue };
            let settled = sqlx::query(
                "SELECT tx_hash FROM ix_events WHERE task_id = $1 AND kind = 'TaskSettled' \
                 ORDER BY block DESC LIMIT 1",
            )
            .bind(id_bytes(parsed))
            .fetch_optional(&self.api)
            .await?;
            out.insert(
                id.to_owned(),
                TaskFacts {
                    funder: row.try_get("funder")?,
                    client: row.try_get("client")?,
                    executor: row.try_get("executor")?,
                    status: row.try_get("status")?,
                    executor_paid: row.try_get("executor_paid")?,
                    amount: row.try_get("amount_units")?,
                    settled_tx: settled.map(|r| tx_of(&r)).transpose()?,
                    rating: row
                        .try_get::<Option<i64>, _>("rating")?
                        .and_then(|r| u8::try_from(r).ok()),
                },
            );
        }
        Ok(out)
    }

    /// `agent`'s feedback in brief: the feedback on every identity it ever
    /// linked, the matched ones counted; the identity is the newest link.
    /// Also every feedback read, for [`IndexStore::evidence_with`].
    pub async fn feedback_summary(
        &self,
        agent: &str,
    ) -> Result<(Option<IdentityView>, FeedbackSummary, Vec<FeedbackView>), DbError> {
        let identities = self.identities(agent).await?;
        let Some(identity) = identities.first().cloned() else {
            return Ok((None, FeedbackSummary::default(), Vec::new()));
        };
        let ids: Vec<U256> = identities.iter().filter_map(|i| i.agent_id.parse().ok()).collect();
        let all = self.feedback(agent, &ids).await?;
        let counted: Vec<f64> = all
            .iter()
            .filter(|f| f.matched && !f.revoked)
            .filter_map(|f| {
                let v: f64 = f.value.parse().ok()?;
                Some(v / 10f64.powi(i32::from(f.value_decimals)))
            })
            .collect();
        let summary = FeedbackSummary {
            count: all.len() as u64,
            matched: counted.len() as u64,
            average: (!counted.is_empty())
                .then(|| counted.iter().sum::<f64>() / counted.len() as f64),
            // Matched feedback first, so junk cannot push it off the page.
            latest: all
                .iter()
                .filter(|f| f.matched)
                .chain(all.iter().filter(|f| !f.matched))
                .take(LISTED_FEEDBACK)
                .cloned()
                .collect(),
        };
        Ok((Some(identity), summary, all))
    }
}

/// [`IndexStore::check`] on what the index has of the tasks (`facts`):
/// `ids` the tasks the proof names, `claimed` their settlements as a
/// long-form proof states them.
fn judge(
    agent: &str,
    client: &str,
    value: i128,
    ids: &[String],
    claimed: Option<&[SettledTask]>,
    facts: &BTreeMap<String, TaskFacts>,
) -> Result<(String, Vec<SettledTask>), String> {
    let (mut good, mut bad) = (false, false);
    let mut funder: Option<&str> = None;
    let mut settled = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let Some(f) = facts.get(id) else {
            return Err(format!("task {id} is not indexed"));
        };
        if !f.executor.eq_ignore_ascii_case(agent) {
            return Err(format!("task {id} was executed by {}", f.executor));
        }
        if !f.funder.eq_ignore_ascii_case(client) && !f.client.eq_ignore_ascii_case(client) {
            return Err(format!(
                "task {id} was funded by {} for client {}, neither the giver",
                f.funder, f.client
            ));
        }
        let Some(tx) = f.settled_tx.as_deref().and_then(|t| t.parse().ok()) else {
            return Err(format!("task {id} has not settled"));
        };
        let indexed = SettledTask {
            task_id: id.clone(),
            status: f.status.clone(),
            executor_amount: f.executor_paid.to_string(),
            funder_amount: (f.amount - f.executor_paid).to_string(),
            tx,
        };
        if let Some(t) = claimed.and_then(|c| c.get(i)) {
            if indexed.status != t.status {
                return Err(format!("task {id} is {}, not {}", indexed.status, t.status));
            }
            if indexed.executor_amount != t.executor_amount
                || indexed.funder_amount != t.funder_amount
            {
                return Err(format!("task {id} settled other amounts"));
            }
            if indexed.tx != t.tx {
                return Err(format!("task {id} did not settle in {}", t.tx));
            }
        }
        match funder {
            Some(one) if !one.eq_ignore_ascii_case(&f.funder) => {
                return Err("its tasks were funded by several funders".to_owned());
            }
            _ => funder = Some(&f.funder),
        }
        match task_value(&indexed.status, 0, 0) {
            Some(v) if v < 0 => bad = true,
            Some(_) => good = true,
            None => return Err(format!("task {id} says nothing of the work")),
        }
        settled.push(indexed);
    }
    if (good && !bad && value < 0) || (bad && !good && value > 0) {
        return Err(format!("the value {value} contradicts the settlements"));
    }
    let funder = funder.ok_or_else(|| "it names no task".to_owned())?;
    Ok((funder.to_owned(), settled))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::B256;
    use tessera_bindings::feedback::Proof;

    const AGENT: &str = "0x00000000000000000000000000000000000000aa";
    const SPONSOR: &str = "0x00000000000000000000000000000000000000bb";
    const OPERATOR: &str = "0x00000000000000000000000000000000000000cc";

    fn facts(ids: &[(&str, &str, &str)]) -> BTreeMap<String, TaskFacts> {
        ids.iter()
            .map(|(id, funder, status)| {
                let paid = if *status == "Paid" { 500_000 } else { 0 };
                (
                    (*id).to_owned(),
                    TaskFacts {
                        funder: (*funder).to_owned(),
                        client: OPERATOR.to_owned(),
                        executor: AGENT.to_owned(),
                        status: (*status).to_owned(),
                        executor_paid: paid,
                        amount: 500_000,
                        settled_tx: Some(B256::repeat_byte(id.len() as u8).to_string()),
                        rating: None,
                    },
                )
            })
            .collect()
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_compact_proof_matches_on_what_the_index_has() {
        let known = facts(&[("1", SPONSOR, "Paid"), ("22", SPONSOR, "Paid")]);
        // The operator gives it, as the tasks' client: the sponsor's record moves.
        let (funder, settled) =
            judge(AGENT, OPERATOR, 100, &ids(&["1", "22"]), None, &known).unwrap();
        assert_eq!(funder, SPONSOR);
        assert_eq!(settled.len(), 2);
        assert_eq!(settled[1].task_id, "22");
        assert_eq!(settled[1].status, "Paid");
        assert_eq!(settled[1].executor_amount, "500000");
        assert_eq!(settled[1].funder_amount, "0");
        assert_eq!(settled[1].tx, B256::repeat_byte(2));
        // And the sponsor itself may.
        assert!(judge(AGENT, SPONSOR, 100, &ids(&["1"]), None, &known).is_ok());
    }

    #[test]
    fn a_compact_proof_is_refused_where_the_index_disagrees() {
        let mut known = facts(&[
            ("1", SPONSOR, "Paid"),
            ("2", OPERATOR, "Paid"),
            ("3", SPONSOR, "Refunded"),
            ("4", SPONSOR, "Accepted"),
        ]);
        let why = |list: &[&str], giver: &str, value: i128, known: &BTreeMap<_, _>| {
            judge(AGENT, giver, value, &ids(list), None, known).unwrap_err()
        };
        assert_eq!(why(&["9"], OPERATOR, 100, &known), "task 9 is not indexed");
        assert_eq!(
            why(&["1", "2"], OPERATOR, 100, &known),
            "its tasks were funded by several funders"
        );
        assert!(why(&["1"], AGENT, 100, &known).contains("neither the giver"));
        assert_eq!(why(&["3"], SPONSOR, 100, &known), "the value 100 contradicts the settlements");
        assert_eq!(
            why(&["1"], SPONSOR, -100, &known),
            "the value -100 contradicts the settlements"
        );
        assert!(judge(AGENT, SPONSOR, 0, &ids(&["1", "3"]), None, &known).is_ok(), "mixed");
        assert_eq!(why(&["4"], SPONSOR, 100, &known), "task 4 says nothing of the work");
        known.get_mut("1").unwrap().settled_tx = None;
        assert_eq!(why(&["1"], SPONSOR, 100, &known), "task 1 has not settled");
        known.get_mut("2").unwrap().executor = SPONSOR.to_owned();
        assert_eq!(why(&["2"], OPERATOR, 100, &known), format!("task 2 was executed by {SPONSOR}"));
    }

    #[test]
    fn a_long_proof_must_also_state_each_settlement_as_indexed() {
        let known = facts(&[("1", SPONSOR, "Paid")]);
        let stated = SettledTask {
            task_id: "1".into(),
            status: "Paid".into(),
            executor_amount: "500000".into(),
            funder_amount: "0".into(),
            tx: B256::repeat_byte(1),
        };
        let proof = Proof::new(1, Address::ZERO, None, vec![stated.clone()]);
        let any = AnyProof::Full(proof);
        assert_eq!(any.task_ids(), ids(&["1"]));
        let check = |t: SettledTask| judge(AGENT, SPONSOR, 100, &ids(&["1"]), Some(&[t]), &known);
        assert_eq!(check(stated.clone()).unwrap().1, vec![stated.clone()]);
        let status = SettledTask { status: "Split".into(), ..stated.clone() };
        assert_eq!(check(status).unwrap_err(), "task 1 is Paid, not Split");
        let amounts = SettledTask { funder_amount: "1".into(), ..stated.clone() };
        assert_eq!(check(amounts).unwrap_err(), "task 1 settled other amounts");
        let tx = SettledTask { tx: B256::repeat_byte(7), ..stated };
        assert!(check(tx).unwrap_err().starts_with("task 1 did not settle in"));
    }
}
