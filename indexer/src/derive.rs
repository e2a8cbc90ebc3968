//! Derived state: a task folded from its logs (with every transition checked
//! against the escrow's state machine) and an agent folded from its registry
//! logs. Pure functions of the stored events, so a rollback only has to
//! delete events and fold again.

use std::collections::BTreeMap;

use alloy::{primitives::B256, rpc::types::Log};
use serde::Serialize;
use tessera_bindings::{
    AgentRegistry::AgentRegistryEvents,
    TaskEscrow::{self, TaskEscrowEvents},
    capability,
    envelope::{BlobStore, EnvelopeCodec, MemoryBlobStore},
    task::{Status, TaskRecord, decode_log},
    usdc::Usdc,
};
use tessera_records::decline_is_late;

pub use crate::content::Decoded;

/// A task row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRow {
    /// Task id (decimal).
    pub task_id: String,
    /// Plan id (0x hex).
    pub plan_id: String,
    /// Parent task id (decimal; "0" for a root).
    pub parent_id: String,
    /// Funder.
    pub funder: String,
    /// Client.
    pub client: String,
    /// Executor.
    pub executor: String,
    /// Amount.
    pub amount: Usdc,
    /// Status name.
    pub status: String,
    /// Spec URI.
    pub spec_uri: String,
    /// Result URI.
    pub result_uri: Option<String>,
    /// Capability from the envelope.
    pub capability: Option<String>,
    /// Spec from the envelope.
    pub spec: Option<String>,
    /// The upstream tasks whose outputs the envelope's `inputs` hand to
    /// this one (decimal ids, in the envelope's order, each once, at most
    /// [`MAX_INPUT_EDGES`]): with the parent, every dependency edge.
    /// Stored in a table of their own; not part of a task's view.
    #[serde(skip)]
    pub inputs: Vec<String>,
    /// The task's step in its (possibly nested) plan, such as `1.1.0`,
    /// from the envelope; `None` when it names none.
    pub path: Option<String>,
    /// The labels of the nested plans enclosing the task, outermost first
    /// (one fewer than the path's segments), from the envelope; empty when
    /// it names none.
    pub groups: Vec<String>,
    /// Why the envelope could not be read, when it could not.
    pub envelope_error: Option<String>,
    /// An impossible transition seen, if any.
    pub flagged: Option<String>,
    /// Block of creation.
    pub created_block: u64,
    /// Block of the last change.
    pub updated_block: u64,
    /// Chain time of creation.
    pub created_at: u64,
    /// Chain time of acceptance.
    pub accepted_at: Option<u64>,
    /// Chain time of delivery.
    pub completed_at: Option<u64>,
    /// Chain time of settlement.
    pub settled_at: Option<u64>,
    /// Whether it was ever disputed.
    pub disputed: bool,
    /// What the executor received at settlement.
    pub executor_paid: Usdc,
    /// The reason URI of the executor's decline, when it declined.
    pub decline_reason_uri: Option<String>,
    /// The decline's reason: the `reason` of the JSON behind
    /// [`Self::decline_reason_uri`] (at most [`MAX_REASON_CHARS`]), when it
    /// could be read.
    pub decline_reason: Option<String>,
    /// Why the decline's reason URI could not be read, when it could not.
    pub decline_error: Option<String>,
    /// The executor declined late: past the deadline, or after accepting,
    /// past [`tessera_records::DECLINE_GRACE_BPS`] of the time from its
    /// acceptance to the deadline ([`decline_is_late`]). The record counts
    /// the task as expired, not declined.
    pub late_decline: bool,
    /// Why the task settled (`TaskSettled`'s settlement, snake case:
    /// `approved`, `ruling`, `dispute_default`, …); `None` until it settles.
    pub settlement: Option<String>,
    /// The client's rating of the work in its approval (`TaskSettled`'s
    /// `rating`, 0 to [`tessera_bindings::task::MAX_RATING`] percent);
    /// `None` unless the task settled by approval (settlement `approved`).
    /// Its funder's record counts the task `rating/100` completed and the
    /// rest failed ([`crate::store::totals`]).
    pub rating: Option<u8>,
    /// Its dispute, ruling and appeal; `None` for a task never disputed.
    pub dispute: Option<DisputeRow>,
    /// The spec envelope behind [`Self::spec_uri`], decoded, with the hash
    /// the escrow stores for it. Filled when a row is read back from the
    /// store (a fold leaves it `None`; nothing of it is stored).
    pub envelope: Option<Decoded>,
    /// The result behind [`Self::result_uri`], decoded, with the hash the
    /// escrow stores for it; `None` without a result. Filled when a row is
    /// read back, like [`Self::envelope`].
    pub result: Option<Decoded>,
}

/// A task's dispute, as its events tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisputeRow {
    /// Where it stands: `awaiting_ruling` (Disputed), `appealable` (Ruled:
    /// the ruling stands, the appeal window is open), `awaiting_appeal_ruling`
    /// (Appealed) or `settled`. Set when a row is read back (from its
    /// status); a fold leaves it empty.
    pub state: String,
    /// Chain time of the dispute.
    pub disputed_at: u64,
    /// The client's reason URI (`TaskDisputed`), as emitted.
    pub reason_uri: String,
    /// The reason behind it, decoded (filled when read back).
    pub reason: Option<Decoded>,
    /// The arbiter's ruling, once it ruled.
    pub ruling: Option<RulingRow>,
    /// The appeal of that ruling, once a party appealed.
    pub appeal: Option<AppealRow>,
}

/// A ruling (`DisputeRuled`, or `AppealRuled` for an appeal's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RulingRow {
    /// Who it favours: `worker` (10,000 bps), `client` (0) or `split`.
    pub verdict: String,
    /// The executor's share in basis points.
    pub executor_share_bps: u16,
    /// The (appeal) arbiter that ruled.
    pub arbiter: String,
    /// Chain time of the ruling.
    pub at: u64,
    /// The rationale URI, as emitted.
    pub rationale_uri: String,
    /// The rationale behind it, decoded (filled when read back): the
    /// arbiter publishes its verdict as JSON (`verdict`,
    /// `executor_share_bps`, `rationale`, `judge`).
    pub rationale: Option<Decoded>,
}

impl RulingRow {
    /// A ruling of `share` basis points for the executor.
    pub fn new(share: u16, arbiter: String, at: u64, rationale_uri: String) -> Self {
        let verdict = match share {
            0 => "client",
            10_000.. => "worker",
            _ => "split",
        };
        Self {
            verdict: verdict.into(),
            executor_share_bps: share,
            arbiter,
            at,
            rationale_uri,
            rationale: None,
        }
    }
}

/// An appeal of a ruling (`RulingAppealed`) and its ruling (`AppealRuled`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppealRow {
    /// The party that appealed.
    pub appellant: String,
    /// Chain time of the appeal.
    pub at: u64,
    /// The appellant's reason URI, as emitted.
    pub reason_uri: String,
    /// The reason behind it, decoded (filled when read back).
    pub reason: Option<Decoded>,
    /// The appeal arbiter's ruling, once it ruled (final); `None` while it
    /// has not, and for an appeal that went undecided (the standing ruling
    /// applied: settlement `ruling_finalized`).
    pub ruling: Option<RulingRow>,
}

/// Characters of a decline's reason a row keeps at most; the URI keeps all.
pub const MAX_REASON_CHARS: usize = 2_000;

/// One transition of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TransitionRow {
    /// Block.
    pub block: u64,
    /// Log index.
    pub log_index: u64,
    /// Event name.
    pub kind: String,
    /// Status before.
    pub from_status: String,
    /// Status after (unchanged when refused).
    pub to_status: String,
    /// Whether the state machine allows it.
    pub valid: bool,
    /// Why not, when not.
    pub problem: Option<String>,
}

/// The event name of an escrow event.
pub fn escrow_kind(ev: &TaskEscrowEvents) -> &'static str {
    match ev {
        TaskEscrowEvents::TaskCreated(_) => "TaskCreated",
        TaskEscrowEvents::TaskAccepted(_) => "TaskAccepted",
        TaskEscrowEvents::TaskCompleted(_) => "TaskCompleted",
        TaskEscrowEvents::TaskDisputed(_) => "TaskDisputed",
        TaskEscrowEvents::DisputeRuled(_) => "DisputeRuled",
        TaskEscrowEvents::RulingAppealed(_) => "RulingAppealed",
        TaskEscrowEvents::AppealRuled(_) => "AppealRuled",
        TaskEscrowEvents::TaskReassigned(_) => "TaskReassigned",
        TaskEscrowEvents::TaskDeclined(_) => "TaskDeclined",
        TaskEscrowEvents::TaskSettled(_) => "TaskSettled",
        _ => "Other",
    }
}

/// A task's fold in progress: the record the escrow's state machine checks
/// each event against, and the row it yields.
#[derive(Debug, Clone)]
pub struct TaskFold {
    rec: TaskRecord,
    row: TaskRow,
}

impl TaskFold {
    /// Starts from a creation log; the envelope is read once, here.
    pub fn created(
        log: &Log,
        c: &TaskEscrow::TaskCreated,
        blobs: Option<&dyn BlobStore>,
    ) -> (Self, TransitionRow) {
        let rec = TaskRecord::from_created(c);
        let block = log.block_number.unwrap_or_default();
        let empty = MemoryBlobStore::new();
        let store: &dyn BlobStore = blobs.unwrap_or(&empty);
        // The capability the escrow checked the executor against is on
        // chain; an envelope naming another one is noted, not believed.
        let on_chain = capability::decode(rec.capability);
        let (capability, spec, inputs, nesting, envelope_error) =
            match EnvelopeCodec::default().decode(&rec.spec_uri, store) {
                Ok(e) => {
                    let mut notes = Vec::new();
                    if let (Some(named), Some(checked)) = (&e.capability, &on_chain)
                        && named != checked
                    {
                        notes.push(format!(
                        "envelope names capability `{named}`, the task was created for `{checked}`"
                    ));
                    }
                    let (inputs, note) = input_edges(&e.inputs, rec.id);
                    notes.extend(note);
                    let note = (!notes.is_empty()).then(|| notes.join("; "));
                    (on_chain.or(e.capability), Some(e.spec), inputs, (e.path, e.groups), note)
                }
                Err(e) => (on_chain, None, Vec::new(), (None, Vec::new()), Some(e.to_string())),
            };
        let (path, groups) = nesting;
        let row = TaskRow {
            task_id: rec.id.to_string(),
            plan_id: rec.plan_id.to_string(),
            parent_id: rec.parent_id.to_string(),
            funder: rec.task.funder.to_string(),
            client: rec.task.client.to_string(),
            executor: rec.task.executor.to_string(),
            amount: Usdc::from_base_units(rec.task.amount),
            status: rec.status().as_str().into(),
            spec_uri: rec.spec_uri.clone(),
            result_uri: None,
            capability,
            spec,
            inputs,
            path,
            groups,
            envelope_error,
            flagged: None,
            created_block: block,
            updated_block: block,
            created_at: c.task.updatedAt.to::<u64>(),
            accepted_at: None,
            completed_at: None,
            settled_at: None,
            disputed: false,
            executor_paid: Usdc::ZERO,
            decline_reason_uri: None,
            decline_reason: None,
            decline_error: None,
            late_decline: false,
            settlement: None,
            rating: None,
            dispute: None,
            envelope: None,
            result: None,
        };
        let transition = TransitionRow {
            block,
            log_index: log.log_index.unwrap_or_default(),
            kind: "TaskCreated".into(),
            from_status: "None".into(),
            to_status: row.status.clone(),
            valid: true,
            problem: None,
        };
        (Self { rec, row }, transition)
    }

    /// The row as folded so far.
    pub fn row(&self) -> &TaskRow {
        &self.row
    }

    /// Applies one later event of this task; an impossible transition is
    /// flagged on the row and recorded, not applied. A decline's reason is
    /// read from `blobs` when its URI is content-addressed.
    pub fn apply(
        &mut self,
        log: &Log,
        ev: &TaskEscrowEvents,
        blobs: Option<&dyn BlobStore>,
    ) -> TransitionRow {
        let block = log.block_number.unwrap_or_default();
        let log_index = log.log_index.unwrap_or_default();
        let kind = escrow_kind(ev);
        let from = self.rec.status();
        let executor = self.rec.task.executor;
        // Before the event: an Accepted task's `updatedAt` is its acceptance
        // (by the current executor, also after a reassignment).
        let accepted_at =
            (self.rec.status() == Status::Accepted).then(|| self.rec.task.updatedAt.to::<u64>());
        let deadline = self.rec.task.deadline.to::<u64>();
        let row = &mut self.row;
        match self.rec.apply(ev) {
            Ok(()) => {
                row.updated_block = block;
                match ev {
                    TaskEscrowEvents::TaskAccepted(e) => row.accepted_at = Some(e.at.to::<u64>()),
                    TaskEscrowEvents::TaskCompleted(e) => {
                        row.completed_at = Some(e.at.to::<u64>());
                    }
                    TaskEscrowEvents::TaskDisputed(e) => {
                        row.disputed = true;
                        row.dispute = Some(DisputeRow {
                            state: String::new(),
                            disputed_at: e.at.to::<u64>(),
                            reason_uri: e.reasonURI.clone(),
                            reason: None,
                            ruling: None,
                            appeal: None,
                        });
                    }
                    TaskEscrowEvents::DisputeRuled(e) => {
                        if let Some(d) = row.dispute.as_mut() {
                            d.ruling = Some(RulingRow::new(
                                e.executorShareBps,
                                e.arbiter.to_string(),
                                e.at.to::<u64>(),
                                e.rationaleURI.clone(),
                            ));
                        }
                    }
                    TaskEscrowEvents::RulingAppealed(e) => {
                        if let Some(d) = row.dispute.as_mut() {
                            d.appeal = Some(AppealRow {
                                appellant: e.appellant.to_string(),
                                at: e.at.to::<u64>(),
                                reason_uri: e.reasonURI.clone(),
                                reason: None,
                                ruling: None,
                            });
                        }
                    }
                    TaskEscrowEvents::AppealRuled(e) => {
                        if let Some(a) = row.dispute.as_mut().and_then(|d| d.appeal.as_mut()) {
                            a.ruling = Some(RulingRow::new(
                                e.executorShareBps,
                                e.appealArbiter.to_string(),
                                e.at.to::<u64>(),
                                e.rationaleURI.clone(),
                            ));
                        }
                    }
                    TaskEscrowEvents::TaskDeclined(e) => {
                        let empty = MemoryBlobStore::new();
                        let (reason, error) =
                            match decline_reason(&e.reasonURI, blobs.unwrap_or(&empty)) {
                                Ok(reason) => (reason, None),
                                Err(error) => (None, Some(error)),
                            };
                        row.decline_reason_uri = Some(e.reasonURI.clone());
                        row.decline_reason = reason;
                        row.decline_error = error;
                        row.late_decline = decline_is_late(accepted_at, deadline, e.at.to::<u64>());
                    }
                    TaskEscrowEvents::TaskSettled(e) => {
                        row.settled_at = Some(e.at.to::<u64>());
                        row.executor_paid = Usdc::from_base_units(e.executorAmount);
                        row.settlement = tessera_bindings::task::Settlement::try_from(e.settlement)
                            .ok()
                            .map(|s| s.as_str().to_owned());
                        // Checked by the record: only an approval carries
                        // one, at most MAX_RATING.
                        row.rating = self.rec.rating;
                    }
                    _ => {}
                }
                row.status = self.rec.status().as_str().into();
                // An address's text is checksummed (a hash): only on a change.
                if self.rec.task.executor != executor {
                    row.executor = self.rec.task.executor.to_string();
                }
                row.result_uri.clone_from(&self.rec.result_uri);
                TransitionRow {
                    block,
                    log_index,
                    kind: kind.into(),
                    from_status: from.as_str().into(),
                    to_status: row.status.clone(),
                    valid: true,
                    problem: None,
                }
            }
            Err(e) => {
                row.flagged.get_or_insert_with(|| format!("{kind} at block {block}: {e}"));
                TransitionRow {
                    block,
                    log_index,
                    kind: kind.into(),
                    from_status: from.as_str().into(),
                    to_status: from.as_str().into(),
                    valid: false,
                    problem: Some(e.to_string()),
                }
            }
        }
    }
}

/// Folds one task's logs (in chain order). `None` while its creation is not
/// among them (created in a block that was reorganised away: pending).
pub fn fold_task<'a>(
    logs: impl IntoIterator<Item = &'a Log>,
    blobs: Option<&dyn BlobStore>,
) -> Option<(TaskFold, Vec<TransitionRow>)> {
    let mut fold: Option<TaskFold> = None;
    let mut transitions = Vec::new();
    for log in logs {
        let Some(ev) = decode_log(log) else { continue };
        match (&mut fold, &ev) {
            (None, TaskEscrowEvents::TaskCreated(c)) => {
                let (f, t) = TaskFold::created(log, c, blobs);
                transitions.push(t);
                fold = Some(f);
            }
            (None, _) => {}
            (Some(f), ev) => transitions.push(f.apply(log, ev, blobs)),
        }
    }
    fold.map(|f| (f, transitions))
}

/// The text of a decline's reason URI, read with the envelope codec (an
/// inline `data:` URI, or `sha256:` from `blobs`, size-bounded and hash
/// verified): the `reason` string of the JSON object behind it, cut to
/// [`MAX_REASON_CHARS`]. An empty URI is a decline without a reason
/// (`None`); anything unreadable is an error saying why.
pub fn decline_reason(uri: &str, blobs: &dyn BlobStore) -> Result<Option<String>, String> {
    if uri.is_empty() {
        return Ok(None);
    }
    let bytes = EnvelopeCodec::default().fetch(uri, blobs).map_err(|e| e.to_string())?;
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("reason is not JSON: {e}"))?;
    let reason = json
        .get("reason")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| "reason JSON has no `reason` string".to_owned())?;
    Ok(Some(match reason.char_indices().nth(MAX_REASON_CHARS) {
        Some((cut, _)) => format!("{}…", &reason[..cut]),
        None => reason.to_owned(),
    }))
}

/// The most input edges kept per task: an envelope is written by whoever
/// creates the task and may name any number of inputs.
pub const MAX_INPUT_EDGES: usize = 32;

/// The upstream task ids `inputs` names (each once, never the task itself,
/// at most [`MAX_INPUT_EDGES`]), and a note of what was left out.
fn input_edges(
    inputs: &[tessera_bindings::envelope::Input],
    own: alloy::primitives::U256,
) -> (Vec<String>, Option<String>) {
    let mut ids: Vec<String> = Vec::new();
    let mut bad = 0usize;
    let mut over = 0usize;
    for named in inputs.iter().filter_map(|i| i.task_id.as_deref()) {
        let id = match named.trim().parse::<alloy::primitives::U256>() {
            Ok(id) if !id.is_zero() && id != own => id.to_string(),
            _ => {
                bad += 1;
                continue;
            }
        };
        if ids.contains(&id) {
            continue;
        }
        if ids.len() == MAX_INPUT_EDGES {
            over += 1;
            continue;
        }
        ids.push(id);
    }
    let mut notes = Vec::new();
    if bad > 0 {
        notes.push(format!("{bad} input(s) name no other task id"));
    }
    if over > 0 {
        notes.push(format!("{over} input edge(s) beyond the first {MAX_INPUT_EDGES} not kept"));
    }
    (ids, (!notes.is_empty()).then(|| notes.join("; ")))
}

/// Where an agent stands in the registry; its text form (`active`,
/// `paused`, `left`) is what the store keeps and the API shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    /// Registered and taking work.
    Active,
    /// Paused by the agent: no new work.
    Paused,
    /// Left the registry: its offers are gone.
    Left,
}

impl AgentStatus {
    /// Every status.
    pub const ALL: [Self; 3] = [Self::Active, Self::Paused, Self::Left];

    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Left => "left",
        }
    }

    /// Reads a stored status.
    pub fn parse(text: &str) -> Result<Self, UnknownAgentStatus> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| UnknownAgentStatus(text.to_owned()))
    }
}

impl std::fmt::Display for AgentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored agent status this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent status {0:?}")]
pub struct UnknownAgentStatus(pub String);

/// An agent row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentRow {
    /// Address.
    pub agent: String,
    /// Where it stands.
    pub status: AgentStatus,
    /// Card URI.
    pub metadata_uri: String,
    /// Capability name → price (base units).
    pub offers: BTreeMap<String, String>,
    /// Block of registration.
    pub registered_block: u64,
}

/// Decodes a registry log.
pub fn decode_registry(log: &Log) -> Option<AgentRegistryEvents> {
    use alloy::sol_types::SolEventInterface;
    AgentRegistryEvents::decode_log(&log.inner).ok().map(|d| d.data)
}

/// The agent a registry event is about, and the event's name.
pub fn registry_subject(ev: &AgentRegistryEvents) -> (alloy::primitives::Address, &'static str) {
    match ev {
        AgentRegistryEvents::AgentRegistered(e) => (e.agent, "AgentRegistered"),
        AgentRegistryEvents::CapabilitySet(e) => (e.agent, "CapabilitySet"),
        AgentRegistryEvents::CapabilityRemoved(e) => (e.agent, "CapabilityRemoved"),
        AgentRegistryEvents::MetadataUpdated(e) => (e.agent, "MetadataUpdated"),
        AgentRegistryEvents::AgentPaused(e) => (e.agent, "AgentPaused"),
        AgentRegistryEvents::AgentResumed(e) => (e.agent, "AgentResumed"),
        AgentRegistryEvents::AgentLeft(e) => (e.agent, "AgentLeft"),
        AgentRegistryEvents::IdentityLinked(e) => (e.agent, "IdentityLinked"),
    }
}

/// Folds one agent's registry logs.
pub fn fold_agent(logs: &[Log]) -> Option<AgentRow> {
    let mut row: Option<AgentRow> = None;
    for log in logs {
        let Some(ev) = decode_registry(log) else { continue };
        let name = |w: B256| capability::decode(w).unwrap_or_else(|| w.to_string());
        match ev {
            AgentRegistryEvents::AgentRegistered(e) => {
                row = Some(AgentRow {
                    agent: e.agent.to_string(),
                    status: AgentStatus::Active,
                    metadata_uri: e.metadataURI,
                    offers: BTreeMap::new(),
                    registered_block: log.block_number.unwrap_or_default(),
                });
            }
            AgentRegistryEvents::CapabilitySet(e) => {
                if let Some(r) = row.as_mut() {
                    r.offers.insert(name(e.capability), e.price.to_string());
                }
            }
            AgentRegistryEvents::CapabilityRemoved(e) => {
                if let Some(r) = row.as_mut() {
                    r.offers.remove(&name(e.capability));
                }
            }
            AgentRegistryEvents::MetadataUpdated(e) => {
                if let Some(r) = row.as_mut() {
                    r.metadata_uri = e.metadataURI;
                }
            }
            AgentRegistryEvents::AgentPaused(_) => {
                if let Some(r) = row.as_mut() {
                    r.status = AgentStatus::Paused;
                }
            }
            AgentRegistryEvents::AgentResumed(_) => {
                if let Some(r) = row.as_mut() {
                    r.status = AgentStatus::Active;
                }
            }
            AgentRegistryEvents::AgentLeft(_) => {
                if let Some(r) = row.as_mut() {
                    r.status = AgentStatus::Left;
                    r.offers.clear();
                }
            }
            // The ERC-8004 identity is not part of the offer row.
            AgentRegistryEvents::IdentityLinked(_) => {}
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use alloy::{
        primitives::{Address, B256, U256, aliases::U40, keccak256},
        sol_types::SolEvent,
    };
    use tessera_bindings::TaskEscrow as E;

    use super::*;

    #[test]
    fn agent_statuses_round_trip_through_their_text() {
        for status in AgentStatus::ALL {
            assert_eq!(AgentStatus::parse(status.as_str()), Ok(status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert!(AgentStatus::parse("Active").is_err());
    }

    #[test]
    fn every_input_edge_is_kept_once_and_hostile_ones_are_bounded_and_noted() {
        use tessera_bindings::envelope::Input;
        let input = |id: &str| Input::carried(0, Some(id.into()), "");
        let own = U256::from(9u8);
        let (ids, note) = input_edges(&[input("7"), input("0x8"), input("7")], own);
        assert_eq!(ids, ["7", "8"], "decimal and hex, duplicates once");
        assert_eq!(note, None);
        let unnamed = Input::carried(1, None, "");
        let (ids, note) = input_edges(&[input("9"), input("0"), input("x"), unnamed], own);
        assert!(ids.is_empty(), "itself, zero and garbage are no edges: {ids:?}");
        assert_eq!(note.as_deref(), Some("3 input(s) name no other task id"));
        let many: Vec<Input> = (1..=40).map(|i| input(&format!("{}", 100 + i))).collect();
        let (ids, note) = input_edges(&many, own);
        assert_eq!(ids.len(), MAX_INPUT_EDGES);
        assert_eq!(ids[0], "101");
        assert!(note.unwrap().contains("8 input edge(s) beyond the first 32"));
    }

    fn log(ev: &impl SolEvent, block: u64) -> Log {
        Log {
            inner: alloy::primitives::Log {
                address: Address::repeat_byte(1),
                data: ev.encode_log_data(),
            },
            block_number: Some(block),
            log_index: Some(0),
            ..Default::default()
        }
    }

    fn created() -> E::TaskCreated {
        crate::testkit::task_created(
            7,
            keccak256("plan"),
            "summarize",
            Address::repeat_byte(2),
            Address::repeat_byte(3),
            500,
            "data:application/json,{\"parent\":\"task:1\",\"spec\":\"go\",\"capability\":\"summarize\"}",
        )
    }

    #[test]
    fn impossible_transitions_are_flagged_not_applied() {
        let paid_too_early = E::TaskSettled {
            taskId: U256::from(7),
            status: 7,
            settlement: 0,
            executorAmount: 500,
            funderAmount: 0,
            rating: 100,
            at: U40::from(1_100),
        };
        let accepted = E::TaskAccepted {
            taskId: U256::from(7),
            executor: Address::repeat_byte(3),
            at: U40::from(1_200),
        };
        let logs = [log(&created(), 5), log(&paid_too_early, 6), log(&accepted, 7)];
        let (fold, transitions) = fold_task(&logs, None).unwrap();
        let row = fold.row();
        assert_eq!(
            row.status, "Accepted",
            "the bad settlement was skipped, the next event applied"
        );
        assert!(
            row.flagged.as_deref().unwrap().starts_with("TaskSettled at block 6"),
            "{:?}",
            row.flagged
        );
        assert_eq!(transitions.len(), 3);
        assert!(!transitions[1].valid);
        assert_eq!(
            (transitions[1].from_status.as_str(), transitions[1].to_status.as_str()),
            ("Created", "Created")
        );
        assert!(transitions[2].valid);
        assert_eq!(row.capability.as_deref(), Some("summarize"));
        assert_eq!(row.executor_paid, Usdc::ZERO);
    }

    #[test]
    fn a_decline_reason_is_read_or_said_unreadable() {
        let blobs = MemoryBlobStore::new();
        let read = |uri: &str| decline_reason(uri, &blobs);
        assert_eq!(read(""), Ok(None), "no reason given");
        assert_eq!(
            read("data:application/json,{\"reason\":\"no inputs\"}"),
            Ok(Some("no inputs".into()))
        );
        let not_json = read("data:application/json,plain words").unwrap_err();
        assert!(not_json.starts_with("reason is not JSON"), "{not_json}");
        assert_eq!(
            read("data:application/json,{\"note\":\"x\"}"),
            Err("reason JSON has no `reason` string".into())
        );
        assert!(read("ipfs://x").unwrap_err().contains("ipfs"), "an unknown scheme is named");
    }

    #[test]
    fn events_before_creation_leave_the_task_pending() {
        let accepted = E::TaskAccepted {
            taskId: U256::from(7),
            executor: Address::repeat_byte(3),
            at: U40::from(1_200),
        };
        assert!(fold_task(&[log(&accepted, 7)], None).is_none());
    }

    #[test]
    fn the_capability_checked_on_chain_wins_over_the_envelope() {
        let mut c = created();
        c.capability = capability::encode("translate").unwrap();
        let (fold, _) = fold_task(&[log(&c, 5)], None).unwrap();
        assert_eq!(fold.row().capability.as_deref(), Some("translate"));
        let note = fold.row().envelope_error.as_deref().unwrap();
        assert!(note.contains("`summarize`") && note.contains("`translate`"), "{note}");
        // A word that is no capability name falls back to the envelope's.
        c.capability = B256::repeat_byte(0xff);
        let (fold, _) = fold_task(&[log(&c, 5)], None).unwrap();
        assert_eq!(fold.row().capability.as_deref(), Some("summarize"));
        assert_eq!(fold.row().envelope_error, None);
    }

    #[test]
    fn malformed_envelopes_are_recorded() {
        let mut c = created();
        c.specURI = "data:application/json,{not json".into();
        let (fold, _) = fold_task(&[log(&c, 5)], None).unwrap();
        assert!(fold.row().envelope_error.is_some());
        assert_eq!(fold.row().status, "Created");
    }

    #[test]
    fn the_step_path_and_group_labels_come_from_the_envelope() {
        use tessera_bindings::envelope::{Envelope, Parent, percent_data_uri};
        let mut env = Envelope::new(Parent::Task("1".into()), "go");
        env.capability = Some("summarize".into());
        env.path = Some("1.1.0".into());
        env.groups = vec!["research the market".into(), "dig deeper".into()];
        let mut c = created();
        c.specURI = percent_data_uri(&env.to_json().unwrap());
        let (fold, _) = fold_task(&[log(&c, 5)], None).unwrap();
        let row = fold.row();
        assert_eq!(row.path.as_deref(), Some("1.1.0"));
        assert_eq!(row.groups, ["research the market", "dig deeper"]);
        assert_eq!(row.envelope_error, None);
        let json = serde_json::to_value(row).unwrap();
        assert_eq!(json["path"], "1.1.0");
        assert_eq!(json["groups"], serde_json::json!(["research the market", "dig deeper"]));

        // Without nesting: no path, no groups.
        let (fold, _) = fold_task(&[log(&created(), 5)], None).unwrap();
        assert_eq!((fold.row().path.as_deref(), fold.row().groups.len()), (None, 0));

        // A malformed path or a label count that does not fit it: the
        // envelope is not believed, and says why.
        for bad in [
            r#"{"parent":"task:1","spec":"go","path":"1.01"}"#,
            r#"{"parent":"task:1","spec":"go","path":"1.1.0","groups":["only one"]}"#,
        ] {
            let mut c = created();
            c.specURI = percent_data_uri(bad.as_bytes());
            let (fold, _) = fold_task(&[log(&c, 5)], None).unwrap();
            let row = fold.row();
            assert_eq!(
                (row.path.as_deref(), row.groups.len(), row.spec.as_deref()),
                (None, 0, None)
            );
            let error = row.envelope_error.as_deref().unwrap();
            assert!(error.contains("path") || error.contains("group label"), "{error}");
        }
    }
}
