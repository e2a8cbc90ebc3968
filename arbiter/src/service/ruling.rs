//! One ruling path for both levels ([`Arbiter::rule`]): the status checked
//! before anything is sent, the escrow's default past the window, the
//! verdict judged once on the level's evidence, recorded, published and
//! sent (re-sent as recorded by a restarted arbiter).

use alloy::{primitives::U256, rpc::types::Filter, sol_types::SolEvent};
use tessera_bindings::{
    ITaskEscrow::Task,
    TaskEscrow,
    envelope::{BlobStore, BlobUrl, EnvelopeCodec},
    task::{Status, TaskRecord, decode_log},
};

use super::{Action, Arbiter, ArbiterError};
use crate::{
    evidence::{self, AppealFiled, Evidence},
    judge::Verdict,
    store::{Decision, Level},
};

impl Arbiter {
    /// Rules on one case at this arbiter's level, if its task still is
    /// disputed (the arbiter) or under appeal (the appeal arbiter), with the
    /// dispute's reason URI when its log gave it (else it is read from the
    /// task's logs). Past the window of its status the escrow's default is
    /// taken instead: the arbiter claims the refund; an appealed ruling
    /// stands (and the arbiter finalizes it).
    pub async fn rule(
        &mut self,
        id: U256,
        reason_uri: &str,
    ) -> Result<Option<Action>, ArbiterError> {
        let level = self.level;
        let task = id.to_string();
        let mut rec = self.escrow.fetch(id, self.deployment.deploy_block).await?;
        if rec.status() != case_status(level) {
            // Ruled already (by a previous life, by hand, or the event came
            // twice), or finalized: nothing is left to send.
            if self.store.decision(&task, level).await?.is_some_and(|d| d.tx_hash.is_none()) {
                self.store.executed(&task, level, None).await?;
            }
            // A first ruling is watched until it is final.
            if level == Level::Dispute && matches!(rec.status(), Status::Ruled | Status::Appealed) {
                self.watch.insert(id);
            }
            return Ok(None);
        }
        let now = self.now().await?;
        if window_end(&rec.task).is_some_and(|end| now > end) {
            return match level {
                Level::Dispute => {
                    let receipt = self.escrow.claim_default(self.me, &mut rec).await?;
                    tracing::info!(%task, "dispute window passed: refunded by default");
                    Ok(Some(Action::DefaultClaimed { task, tx: receipt.transaction_hash }))
                }
                Level::Appeal => {
                    tracing::warn!(%task, "appeal ruling window passed: the appealed ruling stands");
                    Ok(None)
                }
            };
        }
        let decision = match self.store.decision(&task, level).await? {
            Some(d) => d,
            None => {
                // Evidence out of reach is waited for only so long: past
                // that the case is judged on what could be read.
                let waited_out = now > rec.task.updatedAt.to::<u64>() + evidence_wait(&rec.task);
                let evidence = match level {
                    Level::Dispute => self.dispute_evidence(&rec, reason_uri, waited_out).await?,
                    Level::Appeal => self.appeal_evidence(&rec, waited_out).await?,
                };
                self.decide_once(&task, level, &evidence).await?
            }
        };
        let (share_bps, rationale_uri) = (decision.share_bps, &decision.rationale_uri);
        let receipt = match level {
            Level::Dispute => {
                self.escrow.resolve(self.me, &mut rec, share_bps, rationale_uri).await?
            }
            Level::Appeal => {
                self.escrow.resolve_appeal(self.me, &mut rec, share_bps, rationale_uri).await?
            }
        };
        let tx = receipt.transaction_hash;
        self.store.executed(&task, level, Some(&tx.to_string())).await?;
        if level == Level::Dispute && rec.status() == Status::Ruled {
            self.watch.insert(id);
        }
        tracing::info!(%task, verdict = %decision.verdict, share = share_bps, %tx, "{level} ruled");
        let verdict = decision.verdict;
        Ok(Some(match level {
            Level::Dispute => Action::Ruled { task, verdict, share_bps, tx },
            Level::Appeal => Action::AppealRuled { task, verdict, share_bps, tx },
        }))
    }

    /// The evidence of a disputed task: its spec, its result and the
    /// dispute's reason (`reason_uri`, or the latest dispute's in its logs).
    async fn dispute_evidence(
        &self,
        rec: &TaskRecord,
        reason_uri: &str,
        waited_out: bool,
    ) -> Result<Evidence, ArbiterError> {
        let reason_uri = if reason_uri.is_empty() {
            self.reason_uri(rec.id).await?
        } else {
            reason_uri.to_owned()
        };
        let result_uri = rec.result_uri.as_deref().unwrap_or_default();
        self.prefetch(&[&rec.spec_uri, result_uri, &reason_uri], waited_out).await?;
        Ok(evidence::gather(rec, &reason_uri, self.sources.local().as_ref()))
    }

    /// The evidence of an appealed task: the dispute's, the ruling appealed
    /// (the share the task keeps, the rationale its `DisputeRuled` names) and
    /// the appeal (appellant and reason, from `RulingAppealed`).
    async fn appeal_evidence(
        &self,
        rec: &TaskRecord,
        waited_out: bool,
    ) -> Result<Evidence, ArbiterError> {
        let filter = Filter::new().address(self.deployment.task_escrow).event_signature(vec![
            TaskEscrow::TaskDisputed::SIGNATURE_HASH,
            TaskEscrow::DisputeRuled::SIGNATURE_HASH,
            TaskEscrow::RulingAppealed::SIGNATURE_HASH,
        ]);
        let (mut reason_uri, mut rationale_uri) = (String::new(), String::new());
        let (mut appellant, mut appeal_uri) = (rec.task.client, String::new());
        for log in self.escrow.task_logs(&filter, rec.id, self.deployment.deploy_block).await? {
            match decode_log(&log) {
                Some(TaskEscrow::TaskEscrowEvents::TaskDisputed(e)) => reason_uri = e.reasonURI,
                Some(TaskEscrow::TaskEscrowEvents::DisputeRuled(e)) => {
                    rationale_uri = e.rationaleURI
                }
                Some(TaskEscrow::TaskEscrowEvents::RulingAppealed(e)) => {
                    (appellant, appeal_uri) = (e.appellant, e.reasonURI)
                }
                _ => {}
            }
        }
        let filed = AppealFiled {
            appellant,
            reason_uri: &appeal_uri,
            ruling_share_bps: rec.task.executorShareBps,
            ruling_rationale_uri: &rationale_uri,
        };
        self.prefetch(
            &[
                &rec.spec_uri,
                rec.result_uri.as_deref().unwrap_or_default(),
                &reason_uri,
                &appeal_uri,
                &rationale_uri,
            ],
            waited_out,
        )
        .await?;
        Ok(evidence::gather_appeal(rec, &reason_uri, &filed, self.sources.local().as_ref()))
    }

    /// Makes the evidence behind `uris` local (fetched from their hints and
    /// the gateways, all at once): a source failing for now is
    /// [`ArbiterError::BlobUnavailable`] until the case `waited_out` (see
    /// [`evidence_wait`]); a blob nowhere to be found or refused, or one
    /// still out of reach after the wait, is left for [`evidence::gather`]
    /// to report as a problem.
    async fn prefetch(&self, uris: &[&str], waited_out: bool) -> Result<(), ArbiterError> {
        let mut fetches = tokio::task::JoinSet::new();
        for uri in uris.iter().filter(|u| !u.is_empty()) {
            let (sources, uri) = (self.sources.clone(), (*uri).to_owned());
            fetches.spawn(async move {
                let got = sources.ensure(&uri).await;
                (uri, got)
            });
        }
        let mut unavailable = None;
        while let Some(joined) = fetches.join_next().await {
            let Ok((uri, got)) = joined else { continue };
            match got {
                Ok(()) => {}
                Err(e) if e.is_transient() && !waited_out => {
                    unavailable.get_or_insert(e);
                }
                Err(e) => tracing::warn!(%uri, error = %e, "evidence unreadable"),
            }
        }
        unavailable.map_or(Ok(()), |e| Err(ArbiterError::BlobUnavailable(Box::new(e))))
    }

    /// The judge's verdict on `evidence`, published and recorded once at
    /// `level`; a concurrent life that recorded first wins (what is stored
    /// is what gets sent).
    async fn decide_once(
        &self,
        task: &str,
        level: Level,
        evidence: &evidence::Evidence,
    ) -> Result<Decision, ArbiterError> {
        let verdict = self.judge.decide(evidence).await;
        let d = self.publish(task, level, &verdict)?;
        self.store.record(&d).await?;
        Ok(self.store.decision(task, level).await?.unwrap_or(d))
    }

    /// Publishes the verdict (rationale and all) and returns the decision row.
    fn publish(
        &self,
        task: &str,
        level: Level,
        verdict: &Verdict,
    ) -> Result<Decision, ArbiterError> {
        publish_verdict(
            task,
            level,
            verdict,
            self.sources.local().as_ref(),
            self.sources.public_url(),
        )
    }

    /// The reason URI of the task's latest dispute, from its logs.
    async fn reason_uri(&self, id: U256) -> Result<String, ArbiterError> {
        let filter = Filter::new()
            .address(self.deployment.task_escrow)
            .event_signature(TaskEscrow::TaskDisputed::SIGNATURE_HASH);
        let logs = self.escrow.task_logs(&filter, id, self.deployment.deploy_block).await?;
        Ok(logs
            .iter()
            .rev()
            .find_map(|l| match decode_log(l) {
                Some(TaskEscrow::TaskEscrowEvents::TaskDisputed(e)) => Some(e.reasonURI),
                _ => None,
            })
            .unwrap_or_default())
    }
}

/// The status a task waits for a ruling of `level` in.
fn case_status(level: Level) -> Status {
    match level {
        Level::Dispute => Status::Disputed,
        Level::Appeal => Status::Appealed,
    }
}

/// The most a case waits for evidence out of reach, in chain seconds from
/// the dispute (or appeal): [`EVIDENCE_WAIT`], at most a quarter of the
/// window the ruling must fit in. A party whose evidence stays out of reach
/// past it is judged without it.
pub(super) fn evidence_wait(task: &Task) -> u64 {
    let window = window_end(task).map_or(0, |end| end.saturating_sub(task.updatedAt.to::<u64>()));
    EVIDENCE_WAIT.min(window / 4)
}

/// The longest wait for evidence out of reach: two minutes of chain time.
pub(super) const EVIDENCE_WAIT: u64 = 120;

/// When the window of `task`'s current status ends, in chain seconds: the
/// dispute window of a disputed task (the arbiter's time to rule), the
/// appeal window of a ruled one (the parties' time to appeal) and the appeal
/// ruling window of an appealed one (the appeal arbiter's time to rule);
/// `None` in any other status. Past it the escrow takes the default: a
/// refund, or the standing ruling.
pub fn window_end(task: &Task) -> Option<u64> {
    let window = match Status::try_from(task.status).ok()? {
        Status::Disputed => task.disputeWindow,
        Status::Ruled => task.appealWindow,
        Status::Appealed => task.appealRulingWindow,
        _ => return None,
    };
    Some(task.updatedAt.to::<u64>() + u64::from(window))
}

/// Publishes `verdict` (rationale and all), content-addressed with the
/// location `hint` when given, and returns its decision row.
pub(super) fn publish_verdict(
    task: &str,
    level: Level,
    verdict: &Verdict,
    blobs: &dyn BlobStore,
    hint: Option<&BlobUrl>,
) -> Result<Decision, ArbiterError> {
    let body = serde_json::to_string(verdict).expect("verdicts serialize");
    let rationale_uri = EnvelopeCodec::default()
        .publish_at(body.as_bytes(), blobs, hint)
        .map_err(ArbiterError::Publish)?;
    Ok(Decision {
        task_id: task.to_owned(),
        level,
        verdict: verdict.verdict,
        share_bps: verdict.executor_share_bps,
        rationale_uri,
        judge: verdict.judge.clone(),
        body,
        tx_hash: None,
    })
}
