//! Saying no on chain: a task this worker cannot do is declined with
//! `declineTask` and a published reason, so its funder is refunded at once
//! and its client's runner moves on in the next block instead of waiting
//! for the deadline.
//!
//! Only what the worker can never do goes on chain (an unreadable
//! envelope, a capability not offered or funded for another, a price not
//! met, a failed run, a delegated part that failed). A task past its
//! deadline is left to `refundExpired`; one deferred under the card's cap
//! on delegated spend is looked at again later; a transient failure (the
//! node, a blob not reachable yet) is an error, retried next pass.

use alloy::primitives::U256;
use tessera_bindings::{
    client::ClientError,
    task::{Status, TaskRecord},
};

use super::{Handled, RuntimeError, Worker};

/// Most characters of a reason published with a decline: one line.
pub const MAX_REASON_CHARS: usize = 480;

/// `reason` as one line of at most [`MAX_REASON_CHARS`] characters.
pub fn one_line(reason: &str) -> String {
    let line = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(MAX_REASON_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Left alone, off chain: the task's fate is someone else's call.
pub(super) fn leave(task: U256, reason: String) -> Handled {
    tracing::warn!(%task, %reason, "declined, left alone");
    Handled::Declined { task, reason }
}

/// A decline ready to send, or the task left alone.
pub(super) enum Ready {
    /// This worker may decline it: the reason is published.
    Send {
        /// The task as read.
        rec: Box<TaskRecord>,
        /// Why, one line.
        reason: String,
        /// Where the reason is published.
        reason_uri: String,
    },
    /// Not this worker's to decline (any more), or past its deadline.
    Left(Handled),
}

/// What came of sending a decline of `task`: declined on chain; left alone
/// when the escrow refused it (the task moved meanwhile); an error to try
/// again next pass otherwise.
pub(super) fn sent(
    task: U256,
    reason: String,
    reason_uri: String,
    result: Result<(), ClientError>,
) -> Result<Handled, RuntimeError> {
    match result {
        Ok(()) => {
            tracing::info!(%task, %reason, "declined on chain");
            Ok(Handled::DeclinedOnChain { task, reason, reason_uri })
        }
        Err(ClientError::Revert(r)) => {
            Ok(leave(task, format!("{reason} (declining on chain was refused: {r})")))
        }
        Err(e) => Err(e.into()),
    }
}

impl Worker {
    /// Declines `rec` on chain with `reason` (published as
    /// `{"reason": …}` through the worker's codec: inline when small), when
    /// it still can: this worker's task, `Created` or `Accepted`, and before
    /// its deadline (past it, `refundExpired` is the path; the task is left
    /// alone). A refusal means the task moved meanwhile (reassigned,
    /// cancelled): left alone. Any other failure is an error: the caller
    /// tries again next pass.
    pub(super) async fn decline(
        &self,
        rec: TaskRecord,
        reason: String,
    ) -> Result<Handled, RuntimeError> {
        match self.ready(rec, reason).await? {
            Ready::Left(done) => Ok(done),
            Ready::Send { mut rec, reason, reason_uri } => {
                let result = self.escrow.decline(self.me, &mut rec, &reason_uri).await;
                sent(rec.id, reason, reason_uri, result)
            }
        }
    }

    /// Whether `rec` may be declined now (see [`Self::decline`]), its
    /// reason published if so.
    pub(super) async fn ready(
        &self,
        rec: TaskRecord,
        reason: String,
    ) -> Result<Ready, RuntimeError> {
        let id = rec.id;
        let reason = one_line(&reason);
        if rec.task.executor != self.me
            || !matches!(rec.status(), Status::Created | Status::Accepted)
        {
            let why = format!("{reason} (no longer this worker's: {})", rec.status());
            return Ok(Ready::Left(leave(id, why)));
        }
        let now = self.chain_time().await?;
        if now >= rec.task.deadline.to::<u64>() {
            let why = format!("{reason} (past its deadline: left to refundExpired)");
            return Ok(Ready::Left(leave(id, why)));
        }
        let reason_uri = self.publish_reason(&reason)?;
        Ok(Ready::Send { rec: Box::new(rec), reason, reason_uri })
    }

    /// Gives up own task `own` (its delegated part failed): declined on
    /// chain as it stands now, read afresh (see [`Self::decline`]).
    pub(super) async fn give_up(&self, own: U256, reason: String) -> Result<Handled, RuntimeError> {
        let rec = self.escrow.fetch(own, self.deployment.deploy_block).await?;
        self.decline(rec, reason).await
    }

    /// Publishes a reason as `{"reason": …}`; returns its URI.
    pub(super) fn publish_reason(&self, reason: &str) -> Result<String, RuntimeError> {
        let body = serde_json::json!({ "reason": reason }).to_string();
        self.sources.publish(body.as_bytes()).map_err(RuntimeError::Blob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_one_bounded_line() {
        assert_eq!(
            one_line("capability \"x\"\nis  not\toffered"),
            "capability \"x\" is not offered"
        );
        let long = "é".repeat(MAX_REASON_CHARS + 10);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), MAX_REASON_CHARS + 1, "the cut and an ellipsis");
        assert!(cut.ends_with('…'));
        assert_eq!(one_line(&"a".repeat(MAX_REASON_CHARS)).len(), MAX_REASON_CHARS, "kept whole");
    }
}
