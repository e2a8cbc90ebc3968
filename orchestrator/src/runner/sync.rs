//! Chain sync: reads each sub-task's current task from the escrow's logs,
//! turns every log into a run event (stored once per log), and records
//! what changed in the sub-task's progress row.

use alloy::rpc::types::Log;
use serde_json::{Value, json};
use tessera_bindings::task::{Status, TaskRecord};
use tessera_injection as injection;

use super::{
    Orchestrator, RunError,
    reach::{Read, Unreadable},
};
use crate::{
    events::{self, fields, subtask_fields},
    plan::{Plan, ReviewMode},
    state::{EventKind, Phase, Progress, RunEvent},
};

impl Orchestrator {
    /// Reads the current attempt's task from the chain and records what
    /// changed; the record, when the task exists and may still move. A
    /// settled sub-task is read again only until its settlement has the
    /// confirmations asked for (or when it went). A sub-task whose task, or
    /// part of its history, was reorganised out goes back to where the
    /// chain now has it — waiting, when its creation went (the same
    /// reference, so the same task id when created again) — with a
    /// `subtask_reorged` event.
    pub(super) async fn sync(
        &self,
        plan: &Plan,
        row: &mut Progress,
        now: u64,
    ) -> Result<Option<TaskRecord>, RunError> {
        let id = self.task_of(plan.id, row.idx, row.attempt);
        if row.phase.is_settled()
            && row.task_id.is_some()
            && (row.phase == Phase::Skipped || self.chain.settled_deep(id).await)
        {
            return Ok(None);
        }
        let found = self.chain.task(id).await?;
        let was = row.phase;
        let reorgs = self.chain.reorgs(id).await;
        if found.is_none() {
            if reorgs > 0 && matches!(was, Phase::Chain(_)) {
                row.phase = Phase::Waiting;
                row.task_id = None;
                row.result_uri = None;
                row.output = None;
                self.store.put_subtask(&plan.id.to_string(), &row.to_row()).await?;
                self.reorged(plan, row, id, was, &format!("reorged:{id}:{reorgs}"), None).await?;
            }
            return Ok(None);
        }
        let rec = self.sync_record(plan, row, found, now).await?;
        if reorgs > 0 && went_back(was, row.phase) {
            self.reorged(plan, row, id, was, &format!("reorged:{id}:{reorgs}"), None).await?;
        }
        Ok(rec)
    }

    /// Whether every settled sub-task of `rows` (paid, refunded, cancelled,
    /// expired, declined) has its settlement as many blocks deep as the
    /// configuration asks (always, when it asks none).
    pub(super) async fn settled_deep(&self, plan: &Plan, rows: &[Progress]) -> bool {
        if self.config.confirmations == 0 {
            return true;
        }
        let settled = |r: &&Progress| matches!(r.phase, Phase::Chain(s) if s.is_terminal());
        for row in rows.iter().filter(settled) {
            let id = self.task_of(plan.id, row.idx, row.attempt);
            if !self.chain.settled_deep(id).await {
                return false;
            }
        }
        true
    }

    /// Tells that sub-task `row`'s task `id` lost logs to a reorganisation
    /// and went back from `was` to its phase now, or that the transaction of
    /// decision `sent_again` went and was sent again; once per `dedup`.
    pub(super) async fn reorged(
        &self,
        plan: &Plan,
        row: &Progress,
        id: alloy::primitives::U256,
        was: Phase,
        dedup: &str,
        sent_again: Option<&str>,
    ) -> Result<(), RunError> {
        tracing::warn!(
            index = row.idx,
            attempt = row.attempt,
            task = %id,
            %was,
            now = %row.phase,
            ?sent_again,
            "reorganised out; sending again"
        );
        let event = RunEvent::SubtaskReorged {
            plan_id: plan.id,
            index: row.idx,
            attempt: row.attempt,
            task_id: id.to_string(),
            was: was.to_string(),
            now: row.phase.to_string(),
            sent_again: sent_again.map(str::to_owned),
        };
        self.emit(plan, dedup, &event).await
    }

    /// Records `found` (a task and its logs) for `row` at chain time `now`:
    /// its events, its phase, executor and result.
    pub(super) async fn sync_record(
        &self,
        plan: &Plan,
        row: &mut Progress,
        found: Option<(TaskRecord, Vec<Log>)>,
        now: u64,
    ) -> Result<Option<TaskRecord>, RunError> {
        let Some((rec, logs)) = found else { return Ok(None) };
        let run_id = plan.id.to_string();
        let task_id = rec.id.to_string();
        for log in &logs {
            let Some(ev) = events::from_log(log) else { continue };
            let mut body = subtask_fields(plan.id, row.idx, row.attempt, &task_id);
            events::merge(&mut body, ev.body.clone());
            // A settlement names whom it paid: the feedback on it is given
            // to that executor ([`crate::feedback`]).
            if matches!(
                ev.kind,
                EventKind::SubtaskPaid | EventKind::SubtaskRefunded | EventKind::SubtaskExpired
            ) {
                events::merge(&mut body, json!({ "executor": rec.task.executor }));
            }
            if let Some(window) = events::ruling_window(ev.kind, &ev.body, &rec.task) {
                events::merge(&mut body, window);
            }
            // A decline's reason is read once, when its event is first stored.
            if ev.kind == EventKind::SubtaskDeclined
                && !self.store.has_event(&run_id, &ev.dedup).await?
            {
                let uri = ev.body["reason_uri"].as_str().unwrap_or_default();
                let reason = self.decline_reason(uri).await?;
                tracing::info!(index = row.idx, task = %task_id, %reason, "declined by its executor");
                events::merge(&mut body, json!({ "reason": reason }));
            }
            // A ruling's rationale is copied home when its event is first
            // stored, so the web page reads it here; out of reach, it is
            // only logged (the ruling stands whatever its text).
            if let Some(uri) = ev.body["rationale_uri"].as_str()
                && !self.store.has_event(&run_id, &ev.dedup).await?
                && let Err(e) = self.quick.ensure(uri).await
            {
                tracing::warn!(index = row.idx, %uri, error = %e, "a ruling's rationale is out of reach");
            }
            self.emit_chain(plan, ev.kind, &ev.dedup, body.clone()).await?;
            if ev.kind == EventKind::SubtaskCompleted
                && plan.review_of(row.idx) == ReviewMode::Manual
            {
                let review_end = rec.task.reviewWindow;
                events::merge(&mut body, json!({ "review_window_secs": review_end }));
                let dedup = format!("review:{}", ev.dedup);
                self.emit_chain(plan, EventKind::ReviewRequired, &dedup, body).await?;
            } else if ev.kind == EventKind::SubtaskDisputed {
                let dedup = format!("opened:{}", ev.dedup);
                self.emit_chain(plan, EventKind::DisputeOpened, &dedup, body).await?;
            } else if let Some(resolved) = events::dispute_resolution(&ev.body) {
                events::merge(&mut body, resolved);
                let dedup = format!("resolved:{}", ev.dedup);
                self.emit_chain(plan, EventKind::DisputeResolved, &dedup, body).await?;
            }
        }
        let phase = Phase::Chain(rec.status());
        crate::ops::observe_phases(row.phase, phase, &logs);
        let mut changed = row.phase != phase || row.task_id.as_deref() != Some(task_id.as_str());
        row.phase = phase;
        row.task_id = Some(task_id);
        row.executor = rec.task.executor;
        if row.result_uri != rec.result_uri {
            row.result_uri.clone_from(&rec.result_uri);
            changed = true;
        }
        // A delivered result is handed on as soon as it is read: under auto
        // review dependants are created beside the approval. It is read off
        // this look's path ([`super::reach`]): one not there yet leaves the
        // output empty, and the look goes on.
        let delivered = phase == Phase::Chain(Status::Completed) && rec.result_uri.is_some();
        if (phase.is_paid() || delivered)
            && row.output.is_none()
            && let Some(output) = self.output_of(plan, row, &rec, now).await?
        {
            row.output = Some(output);
            changed = true;
        }
        if changed {
            self.store.put_subtask(&run_id, &row.to_row()).await?;
        }
        Ok(Some(rec))
    }

    /// The text `row`'s delivered result hands to dependants, once it is
    /// read (see [`readable`]; flagged when it carries text aimed at a later
    /// agent or the judge); `None` while it is pending. A paid result that
    /// cannot be read hands on a marker naming why; a delivered one in
    /// review stays `None`, for the look to treat as unreadable (see
    /// [`Self::unreadable`]).
    async fn output_of(
        &self,
        plan: &Plan,
        row: &Progress,
        rec: &TaskRecord,
        now: u64,
    ) -> Result<Option<String>, RunError> {
        let Some(uri) = rec.result_uri.as_deref() else { return Ok(Some(String::new())) };
        let why = match self.reach.read(&self.local, &self.sources, uri, rec.task.executor).await {
            Read::Ready(bytes) => {
                self.flag_output(plan, row, uri, &bytes).await?;
                return Ok(Some(match serde_json::from_slice::<Value>(&bytes) {
                    Ok(v) => readable(&v),
                    Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
                }));
            }
            Read::Gone(why) => why,
            Read::Pending { last } => {
                let waited = self.config.result_wait_for(u64::from(rec.task.reviewWindow));
                if rec.status().is_terminal() && now > rec.task.updatedAt.to::<u64>() + waited {
                    last.unwrap_or(Unreadable::Unavailable)
                } else {
                    return Ok(None);
                }
            }
        };
        if !rec.status().is_terminal() {
            return Ok(None);
        }
        tracing::warn!(index = row.idx, %uri, %why, "unreadable result");
        Ok(Some(format!("[unreadable result: {why}]")))
    }

    /// Why the result `row` delivered cannot be read, once that is known:
    /// no source has it, what they answer is refused, or it stayed out of
    /// reach past the runner's wait (chain seconds from its delivery, see
    /// [`super::RunnerConfig::result_wait`]). `None` while it is read, or
    /// still pending within the wait.
    pub(super) async fn unreadable(
        &self,
        row: &Progress,
        rec: &TaskRecord,
        now: u64,
    ) -> Option<Unreadable> {
        let uri = rec.result_uri.as_deref()?;
        if row.output.is_some() || row.phase != Phase::Chain(Status::Completed) {
            return None;
        }
        match self.reach.read(&self.local, &self.sources, uri, rec.task.executor).await {
            Read::Ready(_) => None,
            Read::Gone(why) => Some(why),
            Read::Pending { last } => {
                let waited = self.config.result_wait_for(u64::from(rec.task.reviewWindow));
                (now > rec.task.updatedAt.to::<u64>() + waited)
                    .then(|| last.unwrap_or(Unreadable::Unavailable))
            }
        }
    }

    /// Stores a chain-derived event of `kind` with `body` for the run of
    /// `plan`.
    async fn emit_chain(
        &self,
        plan: &Plan,
        kind: EventKind,
        dedup: &str,
        body: Value,
    ) -> Result<(), RunError> {
        match RunEvent::from_chain(kind, fields(body)) {
            Some(ev) => self.emit(plan, dedup, &ev).await,
            None => Ok(()),
        }
    }

    /// Emits `output_flagged` when the result at `uri` (its `bytes`) carries
    /// text aimed at a later agent or the judge (the shared detector over
    /// every string of it). Read once, when the result is first read; the
    /// flag informs and does not stop the plan.
    async fn flag_output(
        &self,
        plan: &Plan,
        row: &Progress,
        uri: &str,
        bytes: &[u8],
    ) -> Result<(), RunError> {
        let result = serde_json::from_slice::<Value>(bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
        let Some(flag) = events::output_flag(row.idx, &injection::scan_json(&result)) else {
            return Ok(());
        };
        let task_id = row.task_id.as_deref().unwrap_or_default();
        let mut body = subtask_fields(plan.id, row.idx, row.attempt, task_id);
        events::merge(&mut body, json!({ "result_uri": uri }));
        events::merge(&mut body, flag);
        let dedup = format!("flagged:{task_id}");
        self.emit_chain(plan, events::OUTPUT_FLAGGED, &dedup, body).await
    }

    /// The reason behind a decline's `uri`, bounded (see
    /// [`events::decline_reason`]).
    /// A reason out of reach (for now or for good) is shown as unreadable,
    /// with the category of why: the executor's source is asked once,
    /// within seconds ([`super::QUICK`]), and never holds up the recovery.
    async fn decline_reason(&self, uri: &str) -> Result<String, RunError> {
        let max = events::DECLINE_REASON_DOC_BYTES;
        let fetched = self.quick.fetch(uri).await;
        let doc = fetched.map_err(|e| e.category().to_string()).and_then(|bytes| {
            if bytes.len() > max {
                Err(format!("the reason is {} bytes, over the limit of {max}", bytes.len()))
            } else {
                Ok(bytes)
            }
        });
        Ok(events::decline_reason(doc))
    }

    /// A delivered result as the JSON document a condition reads (a result
    /// that is not JSON is its text as a string; an unreadable one `null`).
    /// Read from the local store only: a condition is read once the result
    /// was handed on, which kept it there.
    pub(super) async fn result_doc(&self, uri: &str) -> Value {
        match self.local.fetch(uri).await {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) => {
                tracing::warn!(%uri, error = %e, "unreadable result");
                Value::Null
            }
        }
    }
}

/// Whether a sub-task went back from `was` to `now`: its task gone, or an
/// earlier step of its life than the chain had shown. (A reassignment also
/// moves a task from accepted to created; only a reorganisation counts.)
fn went_back(was: Phase, now: Phase) -> bool {
    let rank = |p: Phase| match p {
        Phase::Waiting | Phase::Skipped | Phase::Chain(Status::None) => 0,
        Phase::Chain(Status::Created) => 1,
        Phase::Chain(Status::Accepted) => 2,
        Phase::Chain(Status::Completed) => 3,
        Phase::Chain(Status::Disputed) => 4,
        Phase::Chain(Status::Ruled) => 5,
        Phase::Chain(Status::Appealed) => 6,
        Phase::Chain(_) => 7,
    };
    rank(now) < rank(was)
}

/// A result as text for the next sub-task: its `text` when it has one, else
/// one `field: value` line per non-empty field (lists joined by commas).
/// The executors of a pipeline funded up front read it the same way.
pub use tessera_bindings::envelope::readable;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_earlier_step_is_going_back() {
        let chain = Phase::Chain;
        assert!(went_back(chain(Status::Paid), chain(Status::Completed)));
        assert!(went_back(chain(Status::Created), Phase::Waiting));
        assert!(went_back(chain(Status::Refunded), chain(Status::Disputed)));
        assert!(!went_back(chain(Status::Completed), chain(Status::Paid)));
        assert!(!went_back(Phase::Waiting, chain(Status::Created)));
        assert!(!went_back(chain(Status::Accepted), chain(Status::Accepted)));
    }

    #[test]
    fn results_become_readable_text() {
        assert_eq!(readable(&json!({"capability": "summarize", "text": "short"})), "short");
        let sentiment = json!({"capability": "sentiment-classify", "label": "negative", "score": -0.5, "terms": []});
        assert_eq!(readable(&sentiment), "label: negative\nscore: -0.5");
        let entities = json!({"names": ["Ada", "Linus"], "emails": [], "eth_addresses": ["0x1"]});
        assert_eq!(readable(&entities), "eth addresses: 0x1\nnames: Ada, Linus");
        assert_eq!(readable(&json!("plain")), "\"plain\"");
    }
}
