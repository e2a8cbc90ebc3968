//! The appeal arbiter's rulings made by hand (the CLI's `arbitrate`
//! command): the tasks under appeal, and a final ruling on one of them.

use alloy::{
    primitives::{Address, B256, U256},
    rpc::types::Filter,
    sol_types::SolEvent,
};
use tessera_bindings::{
    TaskEscrow,
    client::EscrowClient,
    deployment::Deployment,
    envelope::BlobStore,
    task::{Status, TaskRecord, decode_log},
};

use super::{ArbiterError, ruling::publish_verdict};
use crate::{
    judge::Verdict,
    store::{ArbiterStore, Level},
};

/// Tasks under appeal, with their first-level ruling, for the appeal arbiter.
pub async fn appeals(
    escrow: &EscrowClient,
    deployment: &Deployment,
) -> Result<Vec<TaskRecord>, ArbiterError> {
    let filter = Filter::new()
        .address(deployment.task_escrow)
        .event_signature(TaskEscrow::RulingAppealed::SIGNATURE_HASH);
    let mut ids: Vec<U256> = Vec::new();
    for log in escrow.logs(&filter, deployment.deploy_block).await? {
        if let Some(TaskEscrow::TaskEscrowEvents::RulingAppealed(e)) = decode_log(&log)
            && !ids.contains(&e.taskId)
        {
            ids.push(e.taskId);
        }
    }
    let mut out = Vec::new();
    for id in ids {
        let rec = escrow.fetch(id, deployment.deploy_block).await?;
        if rec.status() == Status::Appealed {
            out.push(rec);
        }
    }
    Ok(out)
}

/// The appeal arbiter's final ruling on `task`, published with `verdict`'s
/// rationale (in `blobs`, without a location hint: a one-off command serves
/// nothing).
pub async fn decide_appeal(
    escrow: &EscrowClient,
    from: Address,
    deployment: &Deployment,
    task: U256,
    verdict: &Verdict,
    blobs: &dyn BlobStore,
    store: Option<&ArbiterStore>,
) -> Result<B256, ArbiterError> {
    let mut rec = escrow.fetch(task, deployment.deploy_block).await?;
    if rec.status() != Status::Appealed {
        return Err(ArbiterError::NotAppealed { task, status: rec.status() });
    }
    let d = publish_verdict(&task.to_string(), Level::Appeal, verdict, blobs, None)?;
    let receipt = escrow.resolve_appeal(from, &mut rec, d.share_bps, &d.rationale_uri).await?;
    if let Some(store) = store {
        store.record(&d).await?;
        store
            .executed(&d.task_id, Level::Appeal, Some(&receipt.transaction_hash.to_string()))
            .await?;
    }
    Ok(receipt.transaction_hash)
}
