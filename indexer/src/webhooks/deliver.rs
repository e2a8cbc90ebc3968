//! The delivery loop: reads the outbox and POSTs each delivery due to its
//! subscriber, signed, with a time limit per request and at most
//! [`DeliveryConfig::per_webhook`] requests in flight per subscriber. A
//! delivery is marked done on a 2xx answer; any other answer, a timeout or
//! a connection failure makes it due again after a capped exponential
//! backoff, and holds the subscriber's other deliveries until then (a dead
//! endpoint is not hammered, and never holds up another subscriber).
//!
//! Ingestion never waits on this loop: it only inserts rows, and wakes it.
//! A delivery sent but not yet marked when the process stops is sent again
//! after the restart, under the same key (at least once).

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use tessera_db::now_ms;
use tokio::{task::JoinSet, time::Instant};

use super::{DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, backoff, signature};
use crate::store::{IndexStore, outbox::Target};

/// How deliveries are made.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Time limit of one request, connection included.
    pub timeout: Duration,
    /// Wait after the first failure of a delivery; doubled per failure.
    pub base_backoff: Duration,
    /// Longest wait between two attempts.
    pub max_backoff: Duration,
    /// Requests in flight per subscriber at most.
    pub per_webhook: usize,
    /// Longest time between two looks at the outbox when nothing wakes the
    /// loop (another process wrote to it, a retry fell due).
    pub poll: Duration,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            base_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(600),
            per_webhook: 4,
            poll: Duration::from_secs(1),
        }
    }
}

/// The outcome of one attempt.
struct Attempt {
    webhook: String,
    key: String,
    attempts: u32,
    result: Result<(), String>,
}

/// Delivers from `store`'s outbox until `stop`. Errors of the store or
/// of a subscriber are logged and retried; this returns only on `stop`.
pub async fn run(store: IndexStore, cfg: DeliveryConfig, stop: impl Future<Output = ()>) {
    let client = match reqwest::Client::builder()
        .timeout(cfg.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "webhook HTTP client");
            return stop.await;
        }
    };
    tokio::pin!(stop);
    let mut flying: HashMap<String, HashSet<String>> = HashMap::new();
    let mut held: HashMap<String, Instant> = HashMap::new();
    let mut attempts: JoinSet<Attempt> = JoinSet::new();
    loop {
        if let Err(e) = dispatch(&store, &client, &cfg, &mut flying, &held, &mut attempts).await {
            tracing::warn!(error = %e, "reading the webhook outbox; trying again");
        }
        let now = Instant::now();
        held.retain(|_, until| *until > now);
        let wait = held.values().map(|u| *u - now).min().unwrap_or(cfg.poll).min(cfg.poll);
        tokio::select! {
            () = &mut stop => return,
            () = store.outbox_written() => {}
            () = tokio::time::sleep(wait) => {}
            Some(done) = attempts.join_next(), if !attempts.is_empty() => {
                match done {
                    Ok(a) => settle(&store, &cfg, &mut flying, &mut held, a).await,
                    // A send task does not panic; if one did, its delivery
                    // stays pending and is tried again after a restart.
                    Err(e) => tracing::error!(error = %e, "webhook send task failed"),
                }
                // Settle whatever else finished before looking again.
                while let Some(done) = attempts.try_join_next() {
                    if let Ok(a) = done {
                        settle(&store, &cfg, &mut flying, &mut held, a).await;
                    }
                }
            }
        }
    }
}

/// Starts the attempts due: per subscriber not held, as many as it has
/// free slots.
async fn dispatch(
    store: &IndexStore,
    client: &reqwest::Client,
    cfg: &DeliveryConfig,
    flying: &mut HashMap<String, HashSet<String>>,
    held: &HashMap<String, Instant>,
    attempts: &mut JoinSet<Attempt>,
) -> Result<(), tessera_db::DbError> {
    let now = Instant::now();
    for Target { id, url, secret } in store.webhook_targets().await? {
        if held.get(&id).is_some_and(|until| *until > now) {
            continue;
        }
        let busy = flying.get(&id).map_or(0, HashSet::len);
        let free = cfg.per_webhook.max(1).saturating_sub(busy);
        if free == 0 {
            continue;
        }
        let due = store.due_deliveries(&id, now_ms(), (busy + free) as i64).await?;
        let keys = flying.entry(id.clone()).or_default();
        let fresh: Vec<_> = due.into_iter().filter(|d| !keys.contains(&d.key)).take(free).collect();
        for d in fresh {
            keys.insert(d.key.clone());
            let (client, url, secret, webhook) =
                (client.clone(), url.clone(), secret.clone(), id.clone());
            attempts.spawn(async move {
                let result = send(&client, &url, &secret, &d.key, d.payload).await;
                Attempt { webhook, key: d.key, attempts: d.attempts + 1, result }
            });
        }
    }
    Ok(())
}

/// One POST: the body signed, its key and the time in headers; `Ok` on a
/// 2xx answer.
async fn send(
    client: &reqwest::Client,
    url: &str,
    secret: &str,
    key: &str,
    payload: String,
) -> Result<(), String> {
    let sig = signature(secret.as_bytes(), payload.as_bytes());
    let resp = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, sig)
        .header(DELIVERY_HEADER, key)
        .header(TIMESTAMP_HEADER, now_ms().to_string())
        .body(payload)
        .send()
        .await
        // The URL may carry a token of the subscriber's: never in a message.
        .map_err(|e| e.without_url().to_string())?;
    let status = resp.status();
    if status.is_success() { Ok(()) } else { Err(format!("answered HTTP {}", status.as_u16())) }
}

/// Records an attempt's outcome: done, or due again after its backoff,
/// the subscriber held until then.
async fn settle(
    store: &IndexStore,
    cfg: &DeliveryConfig,
    flying: &mut HashMap<String, HashSet<String>>,
    held: &mut HashMap<String, Instant>,
    a: Attempt,
) {
    if let Some(keys) = flying.get_mut(&a.webhook) {
        keys.remove(&a.key);
    }
    let written = match &a.result {
        Ok(()) => {
            crate::metrics::webhook_delivery(true);
            store.delivery_done(&a.webhook, &a.key, now_ms()).await
        }
        Err(error) => {
            crate::metrics::webhook_delivery(false);
            let wait = backoff(a.attempts, cfg.base_backoff, cfg.max_backoff);
            held.insert(a.webhook.clone(), Instant::now() + wait);
            tracing::info!(
                webhook = a.webhook,
                key = a.key,
                attempts = a.attempts,
                retry_in_ms = wait.as_millis() as u64,
                error,
                "webhook delivery failed"
            );
            let next = now_ms().saturating_add(wait.as_millis() as i64);
            store.delivery_failed(&a.webhook, &a.key, next, error).await
        }
    };
    // Not recorded: it stays due and is sent again (the receiver keeps
    // the first by its key).
    if let Err(e) = written {
        tracing::warn!(webhook = a.webhook, key = a.key, error = %e, "recording a webhook attempt");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post};

    use super::*;
    use crate::{
        store::outbox_tests::{at, batch, created},
        webhooks::{WebhookFilter, verify},
    };

    const SECRET: &str = "a-secret-for-the-loop";

    /// Requests seen: key, signature good, timestamp present.
    type Seen = Arc<Mutex<Vec<(String, bool, bool)>>>;

    /// A receiver that answers 500 to its very first request, then 200.
    async fn receiver() -> (Seen, String) {
        async fn hook(State(seen): State<Seen>, headers: HeaderMap, body: Bytes) -> StatusCode {
            let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
            let good = verify(SECRET.as_bytes(), &body, &h(SIGNATURE_HEADER));
            let stamped = h(TIMESTAMP_HEADER).parse::<i64>().is_ok();
            let mut seen = seen.lock().unwrap();
            seen.push((h(DELIVERY_HEADER), good, stamped));
            if seen.len() == 1 { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::OK }
        }
        let seen = Seen::default();
        let app = axum::Router::new().route("/", post(hook)).with_state(Arc::clone(&seen));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (seen, url)
    }

    /// A server that accepts every connection and never answers.
    async fn tarpit() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((conn, _)) = listener.accept().await {
                held.push(conn);
            }
        });
        url
    }

    /// A dead subscriber (a tarpit) neither holds up a live one nor the
    /// batches written beside the loop; a failed attempt is tried again;
    /// every request is signed and stamped.
    #[tokio::test]
    async fn a_dead_endpoint_holds_up_nobody_and_failures_are_retried() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("index.db").display());
        let store = IndexStore::connect(&url).await.unwrap();
        store.set_chain_id(31_337);
        let (seen, live) = receiver().await;
        let dead = tarpit().await;
        let every = WebhookFilter::default();
        store.add_webhook("dead", &dead, SECRET, &every).await.unwrap();
        store.add_webhook("live", &live, SECRET, &every).await.unwrap();

        let cfg = DeliveryConfig {
            timeout: Duration::from_millis(300),
            base_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            per_webhook: 2,
            poll: Duration::from_millis(200),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let loop_ = tokio::spawn(run(store.clone(), cfg, async {
            let _ = stopped.await;
        }));
        let mut keys = Vec::new();
        for block in 1..=5u64 {
            let started = std::time::Instant::now();
            let applied = store.apply(&batch(block, vec![at(&created(block, 2), block, 0)])).await;
            assert_eq!(applied.unwrap().deliveries, 2);
            assert!(started.elapsed() < Duration::from_secs(1), "a batch does not wait");
            keys.push(crate::store::outbox::event_key(
                31_337,
                &alloy::primitives::B256::repeat_byte(block as u8).to_string(),
                0,
            ));
        }
        let got = || {
            let seen = seen.lock().unwrap();
            keys.iter().all(|k| seen.iter().filter(|s| &s.0 == k).count() >= 1)
                && seen.len() > keys.len()
        };
        for _ in 0..100 {
            if got()
                && store.webhooks().await.unwrap().iter().any(|h| h.id == "live" && h.pending == 0)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let hooks = store.webhooks().await.unwrap();
        let live = hooks.iter().find(|h| h.id == "live").unwrap();
        let dead = hooks.iter().find(|h| h.id == "dead").unwrap();
        assert_eq!(live.pending, 0, "every delivery to the live subscriber is done: {hooks:?}");
        assert_eq!(dead.pending, 5, "the dead one's wait: {hooks:?}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 6, "five deliveries and the retry of the refused one: {seen:?}");
        assert!(seen.iter().all(|(_, good, stamped)| *good && *stamped), "{seen:?}");
        let retried = &seen[0].0;
        assert_eq!(seen.iter().filter(|s| &s.0 == retried).count(), 2, "{seen:?}");
        let _ = stop.send(());
        tokio::time::timeout(Duration::from_secs(5), loop_).await.unwrap().unwrap();
    }
}
