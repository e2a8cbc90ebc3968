//! The webhooks' durable outbox: subscribers, and one delivery row per
//! event and subscriber whose filter matches it, written in the
//! transaction that stores the event ([`IndexStore::apply`]); a rollback
//! writes the retraction of every delivery of an event it takes away in
//! its own transaction. Each row is keyed by subscriber and idempotency
//! key, so nothing is enqueued twice; the delivery loop
//! ([`crate::webhooks::deliver`]) reads the rows and marks them.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::atomic::{AtomicI64, AtomicU64, Ordering},
};

use alloy::{primitives::U256, rpc::types::Log};
use serde_json::{Value, json};
use sqlx::{Any, Row, Transaction};
use tessera_bindings::{TaskEscrow::TaskEscrowEvents, task::decode_log};
use tessera_db::{DbError, now_ms};
use tokio::sync::Notify;

use super::{
    INSERT_CHUNK, IndexStore,
    codecs::{Columns, Param, classify, decode_raw, id_bytes, int},
};
use crate::webhooks::{EventFacts, Webhook, WebhookFilter};

/// Pending deliveries a subscriber keeps at most unless told otherwise:
/// past it the oldest are dropped (and counted).
pub const DEFAULT_MAX_PENDING: i64 = 10_000;

/// What the outbox shares between the store's clones: the chain the keys
/// name, the bound per subscriber, and the signal that rows were written.
#[derive(Debug)]
pub(super) struct Outbox {
    chain_id: AtomicU64,
    max_pending: AtomicI64,
    wake: Notify,
}

impl Default for Outbox {
    fn default() -> Self {
        Self {
            chain_id: AtomicU64::new(0),
            max_pending: AtomicI64::new(DEFAULT_MAX_PENDING),
            wake: Notify::new(),
        }
    }
}

/// A subscriber as the delivery loop needs it.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// Its id.
    pub id: String,
    /// Where to POST.
    pub url: String,
    /// The HMAC key.
    pub secret: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is never shown; the URL may carry a token of its own.
        f.debug_struct("Target").field("id", &self.id).finish_non_exhaustive()
    }
}

/// A delivery due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// Its idempotency key.
    pub key: String,
    /// The JSON body, exactly as signed and sent.
    pub payload: String,
    /// Attempts made so far.
    pub attempts: u32,
}

/// One row of `ix_deliveries` being written.
#[derive(Debug)]
struct DeliveryRow {
    webhook: String,
    key: String,
    retracts: Option<String>,
    block: u64,
    log_index: u64,
    payload: String,
    at: i64,
}

/// The columns of `ix_deliveries` a new row sets.
static DELIVERY_COLUMNS: Columns<DeliveryRow> = Columns {
    table: "ix_deliveries",
    columns: &[
        ("webhook", |d| Ok(Param::Text(d.webhook.clone()))),
        ("idem_key", |d| Ok(Param::Text(d.key.clone()))),
        ("retracts", |d| Ok(Param::OptText(d.retracts.clone()))),
        ("block", |d| Ok(Param::Int(int(d.block)?))),
        ("log_index", |d| Ok(Param::Int(int(d.log_index)?))),
        ("payload", |d| Ok(Param::Text(d.payload.clone()))),
        ("attempts", |_| Ok(Param::Int(0))),
        ("next_attempt_at", |d| Ok(Param::Int(d.at))),
        ("created", |d| Ok(Param::Int(d.at))),
    ],
};

/// The plan, funder and executor of a task, from its creation.
#[derive(Debug, Clone, Default)]
struct TaskFacts {
    plan: String,
    funder: String,
    executor: String,
}

impl TaskFacts {
    fn of(c: &tessera_bindings::TaskEscrow::TaskCreated) -> Self {
        Self {
            plan: c.planId.to_string(),
            funder: c.task.funder.to_string().to_ascii_lowercase(),
            executor: c.task.executor.to_string().to_ascii_lowercase(),
        }
    }
}

/// A subscriber's filter from its row.
fn filter_of(r: &sqlx::any::AnyRow) -> Result<WebhookFilter, DbError> {
    let kinds: Option<String> = r.try_get("kinds")?;
    let kinds = match kinds {
        None => Vec::new(),
        Some(k) => serde_json::from_str(&k).map_err(|e| DbError::Corrupt {
            table: "ix_webhooks",
            detail: format!("kinds {k:?}: {e}"),
        })?,
    };
    Ok(WebhookFilter {
        plan: r.try_get("plan")?,
        agent: r.try_get("agent")?,
        funder: r.try_get("funder")?,
        kinds,
    })
}

/// The idempotency key of the event at `log_index` of block `block_hash`
/// on chain `chain`.
pub fn event_key(chain: u64, block_hash: &str, log_index: u64) -> String {
    format!("{chain}:{block_hash}:{log_index}")
}

/// The body of an event's delivery.
fn event_payload(key: &str, event: &Value) -> String {
    json!({ "kind": "event", "key": key, "event": event }).to_string()
}

/// The body of the retraction of the delivery `original` (a stored event
/// body) under `key`.
fn retraction_payload(key: &str, retracts: &str, original: &str) -> String {
    let event = serde_json::from_str::<Value>(original)
        .ok()
        .map(|mut v| v["event"].take())
        .unwrap_or(Value::Null);
    json!({ "kind": "retracted", "key": key, "retracts": retracts, "event": event }).to_string()
}

impl IndexStore {
    /// Sets the chain the idempotency keys name (the indexer does, from its
    /// deployment).
    pub fn set_chain_id(&self, chain_id: u64) {
        self.outbox.chain_id.store(chain_id, Ordering::Relaxed);
    }

    /// Sets how many pending deliveries a subscriber keeps at most
    /// (at least 1; [`DEFAULT_MAX_PENDING`] unless set).
    pub fn set_max_pending(&self, max: i64) {
        self.outbox.max_pending.store(max.max(1), Ordering::Relaxed);
    }

    /// Resolves once deliveries were written since the last call (a
    /// batch's, a rollback's retractions, or a registration).
    pub async fn outbox_written(&self) {
        self.outbox.wake.notified().await;
    }

    /// Tells the delivery loop rows were written.
    pub(super) fn outbox_wake(&self) {
        self.outbox.wake.notify_one();
    }

    /// Writes, in the batch's transaction, a delivery of each of `logs` to
    /// each subscriber whose filter matches it, then drops the oldest
    /// pending deliveries of any subscriber past the bound. Returns the
    /// deliveries written.
    pub(super) async fn enqueue_deliveries(
        &self,
        tx: &mut Transaction<'_, Any>,
        logs: &[Log],
    ) -> Result<usize, DbError> {
        if logs.is_empty() {
            return Ok(0);
        }
        let hooks = sqlx::query("SELECT id, plan, agent, funder, kinds FROM ix_webhooks")
            .fetch_all(&mut **tx)
            .await?;
        if hooks.is_empty() {
            return Ok(0);
        }
        let hooks: Vec<(String, WebhookFilter)> = hooks
            .iter()
            .map(|r| Ok((r.try_get("id")?, filter_of(r)?)))
            .collect::<Result<_, DbError>>()?;
        let classified: Vec<_> = logs.iter().map(classify).collect();
        let tasks = task_facts(tx, logs, &classified).await?;
        let chain = self.outbox.chain_id.load(Ordering::Relaxed);
        let at = now_ms();
        let mut rows = Vec::new();
        for (log, (contract, kind, task, agent)) in logs.iter().zip(&classified) {
            let facts = task.and_then(|t| tasks.get(&t));
            let agent = agent.as_ref().map(|a| a.to_ascii_lowercase());
            let e = EventFacts {
                kind,
                plan: facts.map(|f| f.plan.as_str()),
                funder: facts.map(|f| f.funder.as_str()),
                executor: facts.map(|f| f.executor.as_str()),
                agent: agent.as_deref(),
            };
            let wanted: Vec<&String> =
                hooks.iter().filter(|(_, f)| f.matches(&e)).map(|(id, _)| id).collect();
            if wanted.is_empty() {
                continue;
            }
            let block_hash = log.block_hash.map(|h| h.to_string()).unwrap_or_default();
            let (block, log_index) =
                (log.block_number.unwrap_or_default(), log.log_index.unwrap_or_default());
            let key = event_key(chain, &block_hash, log_index);
            let event = json!({
                "name": kind,
                "contract": contract,
                "chain_id": chain,
                "block": block,
                "block_hash": block_hash,
                "log_index": log_index,
                "tx_hash": log.transaction_hash.map(|h| h.to_string()),
                "address": log.address().to_string(),
                "topics": log.topics(),
                "data": log.data().data.to_string(),
                "task_id": task.map(|t| t.to_string()),
                "plan": e.plan,
                "funder": e.funder,
                "executor": e.executor,
                "agent": agent,
            });
            let payload = event_payload(&key, &event);
            for webhook in wanted {
                rows.push(DeliveryRow {
                    webhook: webhook.clone(),
                    key: key.clone(),
                    retracts: None,
                    block,
                    log_index,
                    payload: payload.clone(),
                    at,
                });
            }
        }
        let written = self.insert_deliveries(tx, &rows).await?;
        let touched: BTreeSet<&str> = rows.iter().map(|r| r.webhook.as_str()).collect();
        let max = self.outbox.max_pending.load(Ordering::Relaxed);
        for webhook in touched {
            let pending: i64 = sqlx::query(
                "SELECT COUNT(*) AS n FROM ix_deliveries WHERE webhook = $1 AND delivered_at IS NULL",
            )
            .bind(webhook)
            .fetch_one(&mut **tx)
            .await?
            .try_get("n")?;
            if pending <= max {
                continue;
            }
            let excess = pending - max;
            let dropped = sqlx::query(
                "DELETE FROM ix_deliveries WHERE webhook = $1 AND idem_key IN (\
                 SELECT idem_key FROM ix_deliveries WHERE webhook = $1 AND delivered_at IS NULL \
                 ORDER BY created, block, log_index, idem_key LIMIT $2)",
            )
            .bind(webhook)
            .bind(excess)
            .execute(&mut **tx)
            .await?
            .rows_affected();
            sqlx::query("UPDATE ix_webhooks SET dropped = dropped + $1 WHERE id = $2")
                .bind(dropped as i64)
                .bind(webhook)
                .execute(&mut **tx)
                .await?;
            tracing::warn!(
                webhook,
                dropped,
                max,
                "webhook deliveries past the bound; oldest dropped"
            );
        }
        Ok(written)
    }

    /// Writes, in the rollback's transaction, the retraction of every
    /// delivery (delivered or not) of an event from block `fork` on.
    /// Returns the retractions written.
    pub(super) async fn enqueue_retractions(
        &self,
        tx: &mut Transaction<'_, Any>,
        fork: u64,
    ) -> Result<usize, DbError> {
        let originals = sqlx::query(
            "SELECT webhook, idem_key, block, log_index, payload FROM ix_deliveries \
             WHERE block >= $1 AND retracts IS NULL",
        )
        .bind(int(fork)?)
        .fetch_all(&mut **tx)
        .await?;
        let at = now_ms();
        let mut rows = Vec::with_capacity(originals.len());
        for r in &originals {
            let retracts: String = r.try_get("idem_key")?;
            let key = format!("{retracts}:retracted");
            let payload: String = r.try_get("payload")?;
            rows.push(DeliveryRow {
                webhook: r.try_get("webhook")?,
                payload: retraction_payload(&key, &retracts, &payload),
                key,
                retracts: Some(retracts),
                block: r.try_get::<i64, _>("block")? as u64,
                log_index: r.try_get::<i64, _>("log_index")? as u64,
                at,
            });
        }
        self.insert_deliveries(tx, &rows).await
    }

    /// Inserts delivery rows, each at most once per subscriber and key.
    async fn insert_deliveries(
        &self,
        tx: &mut Transaction<'_, Any>,
        rows: &[DeliveryRow],
    ) -> Result<usize, DbError> {
        let mut written = 0;
        for chunk in rows.chunks(INSERT_CHUNK) {
            let sql = DELIVERY_COLUMNS.insert(
                self.backend,
                chunk.len(),
                "ON CONFLICT (webhook, idem_key) DO NOTHING",
            );
            let q = DELIVERY_COLUMNS.bind(sqlx::query(&sql), chunk)?;
            written += q.execute(&mut **tx).await?.rows_affected() as usize;
        }
        Ok(written)
    }

    /// Registers a subscriber.
    pub async fn add_webhook(
        &self,
        id: &str,
        url: &str,
        secret: &str,
        filter: &WebhookFilter,
    ) -> Result<(), DbError> {
        let kinds = (!filter.kinds.is_empty())
            .then(|| serde_json::to_string(&filter.kinds).expect("strings serialize"));
        sqlx::query(
            "INSERT INTO ix_webhooks (id, url, secret, plan, agent, funder, kinds, created, dropped) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0)",
        )
        .bind(id)
        .bind(url)
        .bind(secret)
        .bind(filter.plan.clone())
        .bind(filter.agent.clone())
        .bind(filter.funder.clone())
        .bind(kinds)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The subscribers, oldest first, with their pending deliveries.
    pub async fn webhooks(&self) -> Result<Vec<Webhook>, DbError> {
        let rows = sqlx::query(
            "SELECT w.id, w.url, w.plan, w.agent, w.funder, w.kinds, w.created, w.dropped, \
             (SELECT COUNT(*) FROM ix_deliveries d WHERE d.webhook = w.id AND d.delivered_at IS NULL) AS pending \
             FROM ix_webhooks w ORDER BY w.created, w.id",
        )
        .fetch_all(&self.api)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Webhook {
                    id: r.try_get("id")?,
                    url: r.try_get("url")?,
                    filter: filter_of(r)?,
                    created: r.try_get("created")?,
                    pending: r.try_get("pending")?,
                    dropped: r.try_get("dropped")?,
                })
            })
            .collect()
    }

    /// Subscribers registered.
    pub async fn webhook_count(&self) -> Result<i64, DbError> {
        Ok(sqlx::query("SELECT COUNT(*) AS n FROM ix_webhooks")
            .fetch_one(&self.api)
            .await?
            .try_get("n")?)
    }

    /// Removes a subscriber and its deliveries; whether there was one.
    pub async fn remove_webhook(&self, id: &str) -> Result<bool, DbError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM ix_deliveries WHERE webhook = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let gone = sqlx::query("DELETE FROM ix_webhooks WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(gone > 0)
    }

    /// The subscribers with their URL and secret, for the delivery loop.
    pub async fn webhook_targets(&self) -> Result<Vec<Target>, DbError> {
        let rows = sqlx::query("SELECT id, url, secret FROM ix_webhooks ORDER BY id")
            .fetch_all(&self.api)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(Target {
                    id: r.try_get("id")?,
                    url: r.try_get("url")?,
                    secret: r.try_get("secret")?,
                })
            })
            .collect()
    }

    /// Up to `limit` deliveries of `webhook` due at `now` (ms), oldest
    /// first; a retraction only once its event's delivery is done.
    pub async fn due_deliveries(
        &self,
        webhook: &str,
        now: i64,
        limit: i64,
    ) -> Result<Vec<Due>, DbError> {
        let rows = sqlx::query(
            "SELECT d.idem_key, d.payload, d.attempts FROM ix_deliveries d \
             WHERE d.webhook = $1 AND d.delivered_at IS NULL AND d.next_attempt_at <= $2 \
             AND (d.retracts IS NULL OR NOT EXISTS (SELECT 1 FROM ix_deliveries o \
                  WHERE o.webhook = d.webhook AND o.idem_key = d.retracts AND o.delivered_at IS NULL)) \
             ORDER BY d.created, d.block, d.log_index, d.idem_key LIMIT $3",
        )
        .bind(webhook)
        .bind(now)
        .bind(limit)
        .fetch_all(&self.api)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Due {
                    key: r.try_get("idem_key")?,
                    payload: r.try_get("payload")?,
                    attempts: u32::try_from(r.try_get::<i64, _>("attempts")?).unwrap_or(u32::MAX),
                })
            })
            .collect()
    }

    /// Marks a delivery done at `now` (ms).
    pub async fn delivery_done(&self, webhook: &str, key: &str, now: i64) -> Result<(), DbError> {
        sqlx::query(
            "UPDATE ix_deliveries SET delivered_at = $1, attempts = attempts + 1, last_error = NULL \
             WHERE webhook = $2 AND idem_key = $3",
        )
        .bind(now)
        .bind(webhook)
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records a failed attempt of a delivery, tried again at `next` (ms).
    pub async fn delivery_failed(
        &self,
        webhook: &str,
        key: &str,
        next: i64,
        error: &str,
    ) -> Result<(), DbError> {
        sqlx::query(
            "UPDATE ix_deliveries SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2 \
             WHERE webhook = $3 AND idem_key = $4",
        )
        .bind(next)
        .bind(error)
        .bind(webhook)
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forgets the deliveries done of events below `keep_from` (older than
    /// the reorg depth: none of them can be retracted any more).
    pub(super) async fn prune_deliveries(&self, keep_from: u64) -> Result<(), DbError> {
        sqlx::query("DELETE FROM ix_deliveries WHERE delivered_at IS NOT NULL AND block < $1")
            .bind(int(keep_from)?)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// The plan, funder and executor of every task `logs` name, from the
/// creations among them or else those stored (read in the transaction).
async fn task_facts(
    tx: &mut Transaction<'_, Any>,
    logs: &[Log],
    classified: &[(&'static str, &'static str, Option<U256>, Option<String>)],
) -> Result<BTreeMap<U256, TaskFacts>, DbError> {
    let mut facts = BTreeMap::new();
    for log in logs {
        if let Some(TaskEscrowEvents::TaskCreated(c)) = decode_log(log) {
            facts.insert(c.taskId, TaskFacts::of(&c));
        }
    }
    let missing: BTreeSet<U256> =
        classified.iter().filter_map(|c| c.2).filter(|t| !facts.contains_key(t)).collect();
    for id in missing {
        let row = sqlx::query(
            "SELECT raw FROM ix_events WHERE task_id = $1 AND kind = 'TaskCreated' LIMIT 1",
        )
        .bind(id_bytes(id))
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = row else { continue };
        let raw: Vec<u8> = row.try_get("raw")?;
        let Some(inner) = decode_raw(&raw) else { continue };
        let log = Log { inner, ..Log::default() };
        if let Some(TaskEscrowEvents::TaskCreated(c)) = decode_log(&log) {
            facts.insert(id, TaskFacts::of(&c));
        }
    }
    Ok(facts)
}
