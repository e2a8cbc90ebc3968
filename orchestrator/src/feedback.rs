//! Feedback with a receipt. Every approval carries the client's rating
//! (`TaskSettled.rating`, [`tessera_bindings::task::FULL_RATING`] for what
//! the runner approves): the feedback that travels with the payment, at no
//! transaction of its own ([`FeedbackMode::Approval`], the default). On top
//! of it an operator may give, for the sponsor once its tasks settle,
//! ERC-8004 feedback in the deployment's reputation registry whose URI and
//! hash name the settlements it speaks of ([`tessera_bindings::feedback`]),
//! so anyone can check it against the escrow's `TaskSettled` events. A lost
//! dispute, or a task left to expire, is negative feedback (−100); a paid
//! task is worth the executor's share in percent.
//!
//! [`FeedbackMode::PerTask`] gives one feedback per settled task as it
//! settles (the long proof, [`Proof`]); [`FeedbackMode::PerPlan`] one per
//! executor once its run is over, summing up that executor's tasks of the
//! run (the compact proof, [`tessera_bindings::feedback::CompactProof`]);
//! [`FeedbackMode::Approval`] none beyond the approvals' ratings.
//! An executor without a linked ERC-8004 identity gets none (the ledger
//! says so). Each subject is claimed in the store before its transaction
//! goes out ([`crate::store::Store::claim_feedback`]); a crash in between
//! sends it again on the next pass.

use std::{collections::BTreeMap, str::FromStr, sync::Arc, time::Duration};

use alloy::primitives::{Address, B256, U256};
use serde_json::Value;
use tessera_bindings::{
    client::ClientError,
    feedback::{Proof, SettledTask},
};
use tokio_util::sync::CancellationToken;

use crate::{
    plan::Plan,
    runner::{Orchestrator, RunError},
    store::{FeedbackClaim, Settled},
};

/// What one feedback is about: its ledger subject, its run and, for a
/// plan's summary, the plan.
#[derive(Debug, Clone, Copy)]
struct Subject<'a> {
    key: &'a str,
    run_id: &'a str,
    plan: Option<&'a str>,
}

/// How feedback is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackMode {
    /// The rating each approval carries, and ERC-8004 feedback per settled task.
    PerTask,
    /// The rating each approval carries, and ERC-8004 feedback per executor
    /// and run, once the run is over.
    PerPlan,
    /// The rating each approval carries, and no ERC-8004 feedback (the
    /// default: no transaction beyond the lifecycle's).
    Approval,
}

impl FromStr for FeedbackMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "per-task" => Ok(Self::PerTask),
            "per-plan" => Ok(Self::PerPlan),
            // `off`: the older name, from before approvals carried a rating.
            "approval" | "off" => Ok(Self::Approval),
            other => Err(format!("feedback is approval, per-plan or per-task, not {other:?}")),
        }
    }
}

impl std::fmt::Display for FeedbackMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::PerTask => "per-task",
            Self::PerPlan => "per-plan",
            Self::Approval => "approval",
        })
    }
}

/// What one pass read once and shares between its feedbacks: the plans of
/// its runs, and each executor's ERC-8004 identity (one `identityOf` per
/// executor a pass, not one per run it worked for).
#[derive(Debug, Default)]
struct Pass {
    plans: BTreeMap<String, Option<Plan>>,
    identities: BTreeMap<Address, Option<U256>>,
}

/// What one pass gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// Feedback transactions mined.
    pub given: usize,
    /// Subjects recorded without feedback (no identity linked, or the
    /// registry refused it).
    pub skipped: usize,
}

/// A settlement event's fields, as the runner stored them.
fn settled_task(body: &Value) -> Option<(Address, SettledTask)> {
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    let executor: Address = text("executor")?.parse().ok()?;
    let tx: B256 = text("tx_hash")?.parse().ok()?;
    Some((
        executor,
        SettledTask {
            task_id: text("task_id")?,
            status: text("status")?,
            executor_amount: text("executor_amount")?,
            funder_amount: text("funder_amount")?,
            tx,
        },
    ))
}

impl Orchestrator {
    /// One pass: gives the feedback `mode` asks for on what settled since
    /// the last pass, for this orchestrator's sponsor. Nothing without a
    /// reputation registry in the deployment, or while another replica
    /// holds the sponsor's lane.
    pub async fn give_feedback(&self, mode: FeedbackMode) -> Result<Given, RunError> {
        let Some(registry) = self.chain().deployment().reputation_registry else {
            return Ok(Given::default());
        };
        if mode == FeedbackMode::Approval || !self.may_drive() {
            return Ok(Given::default());
        }
        // Runs record their lane: the sponsor's address, lower-case.
        let sponsor = self.chain().sponsor().to_string().to_lowercase();
        let due =
            self.store().settled_without_feedback(&sponsor, mode == FeedbackMode::PerPlan).await?;
        let mut out = Given::default();
        let mut pass = Pass::default();
        if mode == FeedbackMode::PerTask {
            for s in &due {
                let subject = Subject { key: &s.dedup, run_id: &s.run_id, plan: None };
                self.give_one(registry, subject, std::slice::from_ref(s), &mut pass, &mut out)
                    .await?;
            }
            return Ok(out);
        }
        let runs: std::collections::BTreeSet<&str> =
            due.iter().map(|s| s.run_id.as_str()).collect();
        for run_id in runs {
            let settled = self.store().settlements_of(run_id).await?;
            let mut by_executor: BTreeMap<Address, Vec<Settled>> = BTreeMap::new();
            for s in settled {
                if let Some((executor, _)) = settled_task(&s.body) {
                    by_executor.entry(executor).or_default().push(s);
                }
            }
            for (executor, list) in &by_executor {
                let key = format!("plan:{run_id}:{executor}");
                let subject = Subject { key: &key, run_id, plan: Some(run_id) };
                self.give_one(registry, subject, list, &mut pass, &mut out).await?;
            }
            let marker = format!("plan:{run_id}");
            let claim = FeedbackClaim {
                subject: &marker,
                run_id,
                executor: "",
                value: 0,
                uri: "",
                state: "done",
                note: None,
            };
            self.store().claim_feedback(&claim).await?;
        }
        Ok(out)
    }

    /// Gives (or records as skipped) one feedback on `settled`, all of one
    /// executor, under `subject`.
    async fn give_one(
        &self,
        registry: Address,
        subject: Subject<'_>,
        settled: &[Settled],
        pass: &mut Pass,
        out: &mut Given,
    ) -> Result<(), RunError> {
        let tasks: Vec<(Address, SettledTask)> =
            settled.iter().filter_map(|s| settled_task(&s.body)).collect();
        let Some(executor) = tasks.first().map(|(e, _)| *e) else { return Ok(()) };
        // The settlements it speaks of must be as deep as the runner's
        // confirmations, so a reorganisation cannot leave it describing a
        // settlement that was replaced; not yet: next pass.
        let txs: Vec<B256> = tasks.iter().map(|(_, t)| t.tx).collect();
        if !self.chain().deep(&txs, self.config().confirmations).await? {
            tracing::debug!(run = %subject.run_id, subject = %subject.key, "settlement not deep enough for feedback yet");
            return Ok(());
        }
        let deployment = self.chain().deployment();
        let proof = Proof::new(
            deployment.chain_id,
            deployment.task_escrow,
            subject.plan.map(str::to_owned),
            tasks.into_iter().map(|(_, t)| t).collect(),
        );
        let value = proof.value();
        // A plan's summary names its tasks in the compact form (less
        // calldata for the sponsor to pay); a task's feedback keeps the long
        // form, which names the settling transaction.
        let compact = subject.plan.and_then(|_| proof.compact());
        let (uri, hash) = compact.map_or_else(|| proof.encode(), |c| c.encode());
        let executor_text = executor.to_string();
        let run_id = subject.run_id;
        let mut claim = FeedbackClaim {
            subject: subject.key,
            run_id,
            executor: &executor_text,
            value: i64::try_from(value).unwrap_or_default(),
            uri: &uri,
            state: "sending",
            note: None,
        };
        let identity = match pass.identities.get(&executor) {
            Some(known) => *known,
            None => {
                let read = self.chain().identity_of(executor).await?;
                *pass.identities.entry(executor).or_insert(read)
            }
        };
        let Some(agent_id) = identity else {
            claim.state = "skipped";
            claim.note = Some("the executor has no ERC-8004 identity linked in the registry");
            if self.store().claim_feedback(&claim).await? {
                out.skipped += 1;
            }
            return Ok(());
        };
        if !self.store().claim_feedback(&claim).await? {
            return Ok(());
        }
        // The capability the executor was hired for, as tag2.
        let index = settled.first().and_then(|s| s.body.get("index")).and_then(Value::as_u64);
        if !pass.plans.contains_key(run_id) {
            let row = self.store().run(run_id).await?;
            let plan = row.and_then(|r| Plan::from_json(&r.plan_json).ok());
            pass.plans.insert(run_id.to_owned(), plan);
        }
        let capability = match (pass.plans.get(run_id).and_then(Option::as_ref), index) {
            (Some(p), Some(i)) if settled.len() == 1 => {
                u32::try_from(i).ok().and_then(|i| p.subtask(i)).map(|t| t.capability.clone())
            }
            _ => None,
        }
        .unwrap_or_default();
        let sent =
            self.chain().give_feedback(registry, agent_id, value, &capability, uri, hash).await;
        let receipt = match sent {
            Ok(receipt) => receipt,
            // The registry refused it (its owner is the sponsor, say): said
            // once in the ledger, so it never holds up the feedback after it.
            // Refused as self-feedback though the sponsor neither owns the
            // identity nor is its wallet: the owner approved the sponsor as
            // an operator to shed its feedback. Recorded as such, and
            // counted against the agent when it is next chosen.
            Err(e)
                if e.revert().is_some_and(is_self_feedback)
                    && !self
                        .chain()
                        .controls_identity(agent_id, self.chain().sponsor())
                        .await? =>
            {
                let note = format!(
                    "approval game: the registry refused the sponsor's feedback as self-feedback, \
                     yet the sponsor neither owns ERC-8004 identity {agent_id} nor is its wallet \
                     (its owner approved the sponsor as an operator); counted against {executor}"
                );
                tracing::warn!(run = %run_id, subject = %subject.key, %executor, %agent_id, "feedback refused by an approval game");
                self.store().feedback_gamed(subject.key, &note).await?;
                out.skipped += 1;
                return Ok(());
            }
            Err(e) if e.revert().is_some() || matches!(e, ClientError::Reverted(_)) => {
                let note = e.to_string();
                tracing::warn!(run = %run_id, subject = %subject.key, %executor, error = %note, "feedback refused by the registry");
                self.store().feedback_refused(subject.key, &note).await?;
                out.skipped += 1;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        self.store().feedback_given(subject.key, &receipt.transaction_hash.to_string()).await?;
        tracing::info!(run = %run_id, subject = %subject.key, %executor, %agent_id, value, tx = %receipt.transaction_hash, "feedback given");
        out.given += 1;
        Ok(())
    }
}

/// Whether `revert` is the reputation registry refusing self-feedback.
fn is_self_feedback(revert: &tessera_bindings::revert::ContractRevert) -> bool {
    use tessera_bindings::{
        ReputationRegistry::ReputationRegistryErrors as R, revert::ContractRevert,
    };
    matches!(revert, ContractRevert::Reputation(R::ReputationRegistrySelfFeedback(_)))
}

/// Runs [`Orchestrator::give_feedback`] every `every` until `stop`; a
/// failed pass is logged and tried again next time.
pub async fn feedback_loop(
    orch: Arc<Orchestrator>,
    mode: FeedbackMode,
    every: Duration,
    stop: CancellationToken,
) {
    if mode == FeedbackMode::Approval || orch.chain().deployment().reputation_registry.is_none() {
        // Nothing to give: idle until the service stops (its end is a failure).
        return stop.cancelled().await;
    }
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        if let Err(error) = orch.give_feedback(mode).await {
            tracing::warn!(%error, "giving feedback failed; trying again");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tessera_bindings::feedback::task_value;

    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for m in [FeedbackMode::PerTask, FeedbackMode::PerPlan, FeedbackMode::Approval] {
            assert_eq!(m.to_string().parse::<FeedbackMode>(), Ok(m));
        }
        assert!(
            "daily".parse::<FeedbackMode>().unwrap_err().contains("approval, per-plan or per-task")
        );
        assert_eq!("off".parse::<FeedbackMode>(), Ok(FeedbackMode::Approval), "the older name");
    }

    #[test]
    fn a_settlement_body_reads_as_a_settled_task() {
        let tx = B256::repeat_byte(3);
        let body = json!({"task_id": "12", "executor": Address::repeat_byte(1), "status": "Paid",
            "executor_amount": "500000", "funder_amount": "0", "tx_hash": tx, "index": 0});
        let (executor, t) = settled_task(&body).unwrap();
        assert_eq!(executor, Address::repeat_byte(1));
        assert_eq!((t.task_id.as_str(), t.status.as_str(), t.tx), ("12", "Paid", tx));
        assert_eq!(task_value(&t.status, 500_000, 0), Some(100));
        let mut no_executor = body;
        no_executor.as_object_mut().unwrap().remove("executor");
        assert_eq!(settled_task(&no_executor), None);
    }
}
