//! The arbiter service, in one of the escrow's two judging roles:
//!
//! - the arbiter ([`Arbiter::new`]) watches the escrow for disputes and
//!   appeals, judges each dispute on its evidence, executes the verdict on
//!   chain with the arbiter key, finalizes rulings whose appeal window (or
//!   appeal ruling window) passed, and claims the refund of disputes left
//!   unruled past their window;
//! - the appeal arbiter ([`Arbiter::appeal_arbiter`]) watches for appeals,
//!   judges each on the dispute's evidence, the ruling appealed and the
//!   appellant's reason, and executes its final verdict with the appeal
//!   arbiter key.
//!
//! Exactly once, in both roles: the on-chain status is checked before
//! anything is sent; the verdict is recorded before it is sent and re-sent
//! as is (never re-judged) by a restarted arbiter; the same dispute or appeal
//! seen twice finds its task no longer disputed or appealed and does nothing.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, B256, U256},
    providers::{DynProvider, Provider},
    rpc::types::Filter,
    sol_types::SolEvent,
};
use serde::Serialize;
use tessera_bindings::{
    TaskEscrow,
    client::{ClientError, EscrowClient, map_call},
    deployment::Deployment,
    envelope::{BlobSources, BlobStore, BlobUrl, FetchError},
    heads::Follow,
    logs::LogScan,
    task::{Status, decode_log},
};

use crate::{
    judge::{Judge, VerdictKind},
    store::{ArbiterStore, Level},
};

mod by_hand;
mod ruling;

pub use by_hand::{appeals, decide_appeal};
pub use ruling::window_end;

/// Why the arbiter failed.
#[derive(Debug, thiserror::Error)]
pub enum ArbiterError {
    /// The key is not the escrow's arbiter.
    #[error(
        "this key ({me}) is not the escrow's arbiter ({arbiter}); set TESSERA_ARBITER_KEY to the arbiter's key"
    )]
    NotArbiter {
        /// The key's address.
        me: Address,
        /// The escrow's arbiter.
        arbiter: Address,
    },
    /// The key is not the escrow's appeal arbiter.
    #[error(
        "this key ({me}) is not the escrow's appeal arbiter ({appeal_arbiter}); set TESSERA_APPEAL_ARBITER_KEY to the appeal arbiter's key"
    )]
    NotAppealArbiter {
        /// The key's address.
        me: Address,
        /// The escrow's appeal arbiter.
        appeal_arbiter: Address,
    },
    /// An appeal ruling was asked for a task that is not under appeal.
    #[error("task {task} is {status}, not under appeal")]
    NotAppealed {
        /// The task.
        task: U256,
        /// Where it stands.
        status: Status,
    },
    /// A chain call failed.
    #[error(transparent)]
    Client(#[from] Box<ClientError>),
    /// An RPC failed.
    #[error("rpc: {0}")]
    Rpc(#[from] alloy::transports::TransportError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] tessera_db::DbError),
    /// Publishing the rationale failed.
    #[error("publishing the rationale: {0}")]
    Publish(#[source] tessera_bindings::envelope::EnvelopeError),
    /// Evidence (a spec, result or reason) could not be fetched for now: the
    /// case is looked at again next pass, not judged without it.
    #[error("evidence unavailable for now, will retry: {0}")]
    BlobUnavailable(#[source] Box<FetchError>),
}

impl From<ClientError> for ArbiterError {
    fn from(e: ClientError) -> Self {
        Self::Client(Box::new(e))
    }
}

/// What one look at the chain did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// A dispute was ruled.
    Ruled {
        /// The task.
        task: String,
        /// The verdict.
        verdict: VerdictKind,
        /// Executor's share.
        share_bps: u16,
        /// The ruling's transaction.
        tx: B256,
    },
    /// An appeal was ruled, finally (the appeal arbiter).
    AppealRuled {
        /// The task.
        task: String,
        /// The verdict.
        verdict: VerdictKind,
        /// Executor's share.
        share_bps: u16,
        /// The appeal ruling's transaction.
        tx: B256,
    },
    /// A ruling became final after its appeal window.
    Finalized {
        /// The task.
        task: String,
        /// The transaction.
        tx: B256,
    },
    /// A dispute past its window was refunded by default.
    DefaultClaimed {
        /// The task.
        task: String,
        /// The transaction.
        tx: B256,
    },
}

impl Action {
    /// Counts this action in `/metrics` (`tessera_arbiter_rulings_total`,
    /// `tessera_arbiter_actions_total`).
    fn count(&self) {
        use crate::metrics::{arbiter_action, arbiter_ruling};
        match self {
            Self::Ruled { verdict, .. } => {
                arbiter_ruling(Level::Dispute.as_str(), verdict.as_str())
            }
            Self::AppealRuled { verdict, .. } => {
                arbiter_ruling(Level::Appeal.as_str(), verdict.as_str());
            }
            Self::Finalized { .. } => arbiter_action("finalized"),
            Self::DefaultClaimed { .. } => arbiter_action("default_claimed"),
        }
    }
}

/// The arbiter service, ruling on disputes or on appeals.
pub struct Arbiter {
    provider: DynProvider,
    me: Address,
    /// Which rulings it makes: first rulings or appeal rulings.
    level: Level,
    deployment: Deployment,
    escrow: EscrowClient,
    store: ArbiterStore,
    judge: Judge,
    /// Where evidence is read from (the local store, URI hints, gateways)
    /// and the hint rationales are published with.
    sources: BlobSources,
    /// The escrow's logs, read from the stored cursor: moved past a range
    /// once every case it holds was handled.
    scan: LogScan,
    watch: BTreeSet<U256>,
    /// Cases whose evidence was out of reach, with their reason URI: looked
    /// at again next pass.
    deferred: Vec<(U256, String)>,
    /// The newest block the subscription announced, while it is live.
    head: Option<u64>,
}

impl std::fmt::Debug for Arbiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arbiter")
            .field("me", &self.me)
            .field("level", &self.level)
            .field("next_block", &self.scan.next_block())
            .finish_non_exhaustive()
    }
}

impl Arbiter {
    /// An arbiter sending from `me` (the provider's wallet must hold its
    /// key); refuses a key that is not the escrow's arbiter.
    pub async fn new(
        provider: DynProvider,
        me: Address,
        deployment: Deployment,
        store: ArbiterStore,
        judge: Judge,
        blobs: Arc<dyn BlobStore + Send + Sync>,
    ) -> Result<Self, ArbiterError> {
        Self::with_level(Level::Dispute, provider, me, deployment, store, judge, blobs).await
    }

    /// An appeal arbiter sending from `me` (the provider's wallet must hold
    /// its key); refuses a key that is not the escrow's appeal arbiter. It
    /// may share `store` with the arbiter: decisions are kept per level, and
    /// each role scans with a cursor of its own.
    pub async fn appeal_arbiter(
        provider: DynProvider,
        me: Address,
        deployment: Deployment,
        store: ArbiterStore,
        judge: Judge,
        blobs: Arc<dyn BlobStore + Send + Sync>,
    ) -> Result<Self, ArbiterError> {
        Self::with_level(Level::Appeal, provider, me, deployment, store, judge, blobs).await
    }

    async fn with_level(
        level: Level,
        provider: DynProvider,
        me: Address,
        deployment: Deployment,
        store: ArbiterStore,
        judge: Judge,
        blobs: Arc<dyn BlobStore + Send + Sync>,
    ) -> Result<Self, ArbiterError> {
        let escrow = EscrowClient::new(provider.clone(), deployment.task_escrow);
        match level {
            Level::Dispute => {
                let arbiter = escrow.contract().arbiter().call().await.map_err(map_call)?;
                if arbiter != me {
                    return Err(ArbiterError::NotArbiter { me, arbiter });
                }
            }
            Level::Appeal => {
                let appeal_arbiter =
                    escrow.contract().appealArbiter().call().await.map_err(map_call)?;
                if appeal_arbiter != me {
                    return Err(ArbiterError::NotAppealArbiter { me, appeal_arbiter });
                }
            }
        }
        let next_block = store.cursor(level).await?.unwrap_or(deployment.deploy_block);
        let chain_id = deployment.chain_id;
        Ok(Self {
            provider,
            me,
            level,
            deployment,
            escrow,
            store,
            judge,
            sources: BlobSources::new(blobs).on_chain(chain_id),
            scan: LogScan::new(next_block),
            watch: BTreeSet::new(),
            deferred: Vec::new(),
            head: None,
        })
    }

    /// Reads evidence through `sources` (its local store replaces the one
    /// given at construction) and publishes rationales with its public URL
    /// as the hint.
    #[must_use]
    pub fn with_blob_sources(mut self, sources: BlobSources) -> Self {
        self.sources = sources.on_chain(self.deployment.chain_id);
        self
    }

    /// Publishes content-addressed rationales with the hint `?src=<url>`:
    /// where this arbiter serves its store (`GET <url>/<hex>`).
    #[must_use]
    pub fn with_public_blobs(mut self, url: BlobUrl) -> Self {
        self.sources = self.sources.with_public_url(Some(url));
        self
    }

    /// The store.
    pub fn store(&self) -> &ArbiterStore {
        &self.store
    }

    /// Which rulings this arbiter makes: [`Level::Dispute`] for the arbiter,
    /// [`Level::Appeal`] for the appeal arbiter.
    pub fn level(&self) -> Level {
        self.level
    }

    /// Works until `shutdown`: one look per new block (websocket at
    /// `ws_url`) and at least every `poll`.
    pub async fn run(
        &mut self,
        ws_url: Option<&str>,
        poll: Duration,
        mut on_action: impl FnMut(&Action),
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let what = match self.level {
            Level::Dispute => "arbiter scan",
            Level::Appeal => "appeal arbiter scan",
        };
        let mut follow = Follow::connect(ws_url, poll, what).await;
        self.escrow.follow(follow.watch());
        loop {
            self.head = follow.head().map(|h| h.number);
            let pass =
                self.poll_once().await.map(|actions| actions.iter().for_each(&mut on_action));
            if !follow.next(pass, shutdown.as_mut()).await {
                return;
            }
        }
    }

    /// One look: new disputes, appeals and rulings since the cursor (the
    /// appeal arbiter: new appeals), plus decisions of this level a previous
    /// life recorded but did not send.
    pub async fn poll_once(&mut self) -> Result<Vec<Action>, ArbiterError> {
        let head = match self.head {
            Some(n) => n,
            None => self.provider.get_block_number().await?,
        };
        // Tasks to rule on, with the dispute's reason URI when the log gave it.
        let mut cases: Vec<(U256, String)> = std::mem::take(&mut self.deferred);
        let signatures = match self.level {
            Level::Dispute => vec![
                TaskEscrow::TaskDisputed::SIGNATURE_HASH,
                TaskEscrow::DisputeRuled::SIGNATURE_HASH,
                TaskEscrow::RulingAppealed::SIGNATURE_HASH,
            ],
            Level::Appeal => vec![TaskEscrow::RulingAppealed::SIGNATURE_HASH],
        };
        let filter = Filter::new().address(self.deployment.task_escrow).event_signature(signatures);
        // A bounded range the provider accepts: an arbiter far behind
        // catches up a chunk per pass. The cursor moves past it once every
        // case it holds was handled.
        let chunk = self.scan.peek(&self.provider, &filter, head).await?;
        let read = chunk.as_ref().map(|c| c.to);
        if let Some(chunk) = chunk {
            for log in chunk.logs {
                // Its logs are read from its creation, looked for back from here.
                if let (Some(id), Some(block)) =
                    (log.topics().get(1).map(|t| U256::from_be_bytes(t.0)), log.block_number)
                {
                    self.escrow.note_seen(id, block);
                }
                match (self.level, decode_log(&log)) {
                    (Level::Dispute, Some(TaskEscrow::TaskEscrowEvents::TaskDisputed(e))) => {
                        cases.push((e.taskId, e.reasonURI))
                    }
                    (Level::Dispute, Some(TaskEscrow::TaskEscrowEvents::DisputeRuled(e))) => {
                        self.watch.insert(e.taskId);
                    }
                    (Level::Dispute, Some(TaskEscrow::TaskEscrowEvents::RulingAppealed(e))) => {
                        self.watch.insert(e.taskId);
                    }
                    (Level::Appeal, Some(TaskEscrow::TaskEscrowEvents::RulingAppealed(e))) => {
                        cases.push((e.taskId, String::new()))
                    }
                    _ => {}
                }
            }
        }
        let mut actions = Vec::new();
        for (task, level) in self.store.pending().await? {
            if level == self.level
                && let Ok(id) = task.parse::<U256>()
                && !cases.iter().any(|(d, _)| *d == id)
            {
                cases.push((id, String::new()));
            }
        }
        // Seen and not ruled yet, for /metrics: what a failed pass leaves
        // stays counted until a later pass rules on it.
        let mut queued = cases.len();
        crate::metrics::arbiter_queue(self.level.as_str(), queued);
        for (id, reason_uri) in cases {
            let action = match self.rule(id, &reason_uri).await {
                // Its evidence is out of reach for now: next pass (still
                // queued); the others go on.
                Err(e @ ArbiterError::BlobUnavailable(_)) => {
                    tracing::warn!(task = %id, error = %e, "case put off");
                    self.deferred.push((id, reason_uri));
                    continue;
                }
                // Its transaction was dropped (another took its nonce):
                // nothing happened on chain; the decision recorded is sent
                // again next pass, and the others go on.
                Err(ArbiterError::Client(e)) if e.is_dropped() => {
                    tracing::warn!(task = %id, error = %e, "transaction dropped; case put off");
                    self.deferred.push((id, reason_uri));
                    continue;
                }
                other => other?,
            };
            queued -= 1;
            crate::metrics::arbiter_queue(self.level.as_str(), queued);
            action.iter().for_each(Action::count);
            actions.extend(action);
        }
        let finalized = self.finalize_due().await?;
        finalized.iter().for_each(Action::count);
        actions.extend(finalized);
        if let Some(to) = read {
            self.scan.advance(to);
            self.store.set_cursor(self.level, self.scan.next_block()).await?;
        }
        Ok(actions)
    }

    /// Finalizes rulings whose appeal window (or appeal ruling window) passed.
    async fn finalize_due(&mut self) -> Result<Vec<Action>, ArbiterError> {
        let mut out = Vec::new();
        if self.watch.is_empty() {
            return Ok(out);
        }
        let now = self.now().await?;
        for id in self.watch.clone() {
            let mut rec = self.escrow.fetch(id, self.deployment.deploy_block).await?;
            let end = match rec.status() {
                Status::Ruled | Status::Appealed => window_end(&rec.task),
                _ => None,
            };
            let Some(end) = end else {
                self.watch.remove(&id);
                continue;
            };
            if now > end {
                let receipt = self.escrow.finalize(self.me, &mut rec).await?;
                self.watch.remove(&id);
                out.push(Action::Finalized { task: id.to_string(), tx: receipt.transaction_hash });
            }
        }
        Ok(out)
    }

    async fn now(&self) -> Result<u64, ArbiterError> {
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Latest).await?;
        Ok(block.map(|b| b.header.timestamp).unwrap_or_default())
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
