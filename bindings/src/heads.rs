//! New-block notifications for the services' loops: a websocket
//! subscription to new heads when one answers, else a timer.
//!
//! One background reader per subscription publishes each announced head on
//! a watch channel, so a loop waiting between passes and every transaction
//! waiting for its receipt (see [`crate::sender::Sender::mined`]) follow the
//! same stream: one subscription confirms many transactions.

use std::time::Duration;

use alloy::providers::{Provider, ProviderBuilder, WsConnect};
use futures_util::StreamExt;
use tokio::sync::watch;

/// While a subscription is live, the longest wait between passes: a
/// safety net for a missed notification, not a polling cadence.
pub const SUBSCRIBED_FALLBACK: Duration = Duration::from_secs(10);

/// The newest block a subscription announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Its number.
    pub number: u64,
    /// Its timestamp, chain seconds.
    pub timestamp: u64,
}

/// The announced heads, for as long as the subscription lives, starting
/// with the head when it began (`None` only when that could not be read);
/// closed when the subscription ends.
pub type HeadWatch = watch::Receiver<Option<Head>>;

/// Wakes a loop on each new block, and at least every `poll` (every
/// [`SUBSCRIBED_FALLBACK`] while a subscription is live).
pub struct Heads {
    watch: Option<HeadWatch>,
    /// Reads the subscription; aborted when these heads are dropped.
    reader: Option<tokio::task::JoinHandle<()>>,
    /// The heads come from polling, not from a websocket.
    polled: bool,
    poll: Duration,
}

impl Drop for Heads {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
    }
}

impl std::fmt::Debug for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heads")
            .field("websocket", &self.watch.is_some())
            .field("poll", &self.poll)
            .finish()
    }
}

impl Heads {
    /// Subscribes at `ws_url` when given and answering; falls back to
    /// polling every `poll` (logged) otherwise.
    pub async fn connect(ws_url: Option<&str>, poll: Duration) -> Self {
        let mut heads = Self { watch: None, reader: None, poll, polled: false };
        let Some(url) = ws_url else { return heads };
        let subscribed = async {
            let ws = ProviderBuilder::new().connect_ws(WsConnect::new(url)).await?.erased();
            let stream = ws.subscribe_blocks().await?.into_stream();
            // The head as the subscription starts, so it is known before
            // the next block (seconds away on a chain with block time).
            let now = ws.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await?;
            let now = now.map(|b| Head { number: b.header.number, timestamp: b.header.timestamp });
            Ok::<_, alloy::transports::TransportError>((ws, stream, now))
        };
        match subscribed.await {
            Ok((ws, mut stream, now)) => {
                tracing::info!(url, "following new blocks over websocket");
                let (tx, rx) = watch::channel(now);
                heads.reader = Some(tokio::spawn(async move {
                    // The provider lives as long as its stream is read.
                    let _ws = ws;
                    while let Some(h) = stream.next().await {
                        tx.send_replace(Some(Head { number: h.number, timestamp: h.timestamp }));
                    }
                    tracing::warn!("block subscription ended; polling instead");
                }));
                heads.watch = Some(rx);
            }
            Err(e) => tracing::warn!(url, error = %e, "no websocket; polling instead"),
        }
        heads
    }

    /// Without a live subscription, asks `provider` for the newest block
    /// every `poll` and announces each new one on the same watch channel,
    /// so whatever follows the heads (a runner's steps, the receipts its
    /// sender waits for) works as with a websocket: one request a poll,
    /// not one per waiting transaction every 250 ms. A failed poll is
    /// logged and tried again at the next.
    pub fn or_poll(mut self, provider: alloy::providers::DynProvider) -> Self {
        if self.watch.is_some() {
            return self;
        }
        let (tx, rx) = watch::channel(None);
        let poll = self.poll;
        self.reader = Some(tokio::spawn(async move {
            let mut last = None;
            loop {
                match provider.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await {
                    Ok(Some(b)) if last != Some(b.header.number) => {
                        last = Some(b.header.number);
                        tx.send_replace(Some(Head {
                            number: b.header.number,
                            timestamp: b.header.timestamp,
                        }));
                    }
                    Ok(_) => {}
                    Err(e) => tracing::debug!(error = %e, "polling the newest block failed"),
                }
                tokio::time::sleep(poll).await;
            }
        }));
        tracing::info!(every = ?poll, "following new blocks by polling");
        self.watch = Some(rx);
        self.polled = true;
        self
    }

    /// Whether a websocket subscription is live.
    pub fn subscribed(&self) -> bool {
        !self.polled && self.watch.as_ref().is_some_and(|w| w.has_changed().is_ok())
    }

    /// The newest block the subscription announced, while it is live: a
    /// pass can take the head from here instead of asking the node.
    pub fn head(&self) -> Option<Head> {
        self.watch.as_ref().filter(|w| w.has_changed().is_ok()).and_then(|w| *w.borrow())
    }

    /// A receiver of the announced heads, while the subscription is live.
    pub fn watch(&self) -> Option<HeadWatch> {
        self.watch.clone().filter(|w| w.has_changed().is_ok())
    }

    /// Waits for the next block, or the fallback timer, whichever comes
    /// first. A closed subscription falls back to polling every `poll`.
    pub async fn wait(&mut self) {
        match self.watch.as_mut() {
            Some(watch) => tokio::select! {
                changed = watch.changed() => if changed.is_err() {
                    self.watch = None;
                },
                () = tokio::time::sleep(SUBSCRIBED_FALLBACK.max(self.poll)) => {}
            },
            None => tokio::time::sleep(self.poll).await,
        }
    }
}

/// The one block-following loop of every service, turned inside out so a
/// pass may borrow its service mutably:
///
/// ```text
/// tokio::pin!(shutdown);
/// let mut follow = Follow::connect(ws_url, poll, "indexing pass").await;
/// while follow.next(self.sync_once().await, shutdown.as_mut()).await {}
/// ```
///
/// A pass runs at once, then on each new block (websocket at `ws_url`) and
/// at least every `poll`, until `shutdown` resolves. A failed pass is logged
/// and retried after a backoff of 100 ms per consecutive failure (at most
/// 2 s); the backoff, like the wait, ends early on shutdown.
#[derive(Debug)]
pub struct Follow {
    heads: Heads,
    what: &'static str,
    failures: u32,
}

impl Follow {
    /// Follows new blocks for passes called `what` in the logs.
    pub async fn connect(ws_url: Option<&str>, poll: Duration, what: &'static str) -> Self {
        Self { heads: Heads::connect(ws_url, poll).await, what, failures: 0 }
    }

    /// [`Self::connect`], and without a websocket, heads polled from
    /// `provider` (see [`Heads::or_poll`]).
    pub async fn connect_or_poll(
        ws_url: Option<&str>,
        poll: Duration,
        what: &'static str,
        provider: alloy::providers::DynProvider,
    ) -> Self {
        let heads = Heads::connect(ws_url, poll).await.or_poll(provider);
        Self { heads, what, failures: 0 }
    }

    /// The newest block announced over the websocket, while it is live.
    pub fn head(&self) -> Option<Head> {
        self.heads.head()
    }

    /// A receiver of the announced heads, while the subscription is live.
    pub fn watch(&self) -> Option<HeadWatch> {
        self.heads.watch()
    }

    /// Whether the heads come over a live websocket (not from polling).
    pub fn subscribed(&self) -> bool {
        self.heads.subscribed()
    }

    /// Consecutive failed passes so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Takes the outcome of a pass and waits for the next one: true when it
    /// is due, false once `shutdown` has resolved.
    pub async fn next<T, E: std::fmt::Display>(
        &mut self,
        outcome: Result<T, E>,
        shutdown: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> bool {
        self.next_or(outcome, shutdown, std::future::pending()).await
    }

    /// [`Self::next`], with the next pass also due when `wake` resolves
    /// (logs pushed by a subscription, say).
    pub async fn next_or<T, E: std::fmt::Display>(
        &mut self,
        outcome: Result<T, E>,
        shutdown: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
        wake: impl std::future::Future<Output = ()>,
    ) -> bool {
        let backoff = match outcome {
            Ok(_) => {
                self.failures = 0;
                Duration::ZERO
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                tracing::warn!(error = %e, failures = self.failures, "{} failed; retrying", self.what);
                Duration::from_millis(100 * u64::from(self.failures.min(20)))
            }
        };
        let heads = &mut self.heads;
        tokio::select! {
            () = shutdown => false,
            () = async {
                tokio::time::sleep(backoff).await;
                tokio::select! {
                    () = heads.wait() => {}
                    () = wake => {}
                }
            } => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    };

    use super::*;

    #[tokio::test]
    async fn follow_retries_failures_and_stops_on_shutdown() {
        let passes = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&passes);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                stopped.await.ok();
            };
            tokio::pin!(shutdown);
            let mut follow = Follow::connect(None, Duration::from_millis(10), "test pass").await;
            let pass = || {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                if n.is_multiple_of(2) { Err(format!("pass {n} failed")) } else { Ok(()) }
            };
            while follow.next(pass(), shutdown.as_mut()).await {}
        });
        tokio::time::sleep(Duration::from_millis(800)).await;
        let seen = passes.load(Ordering::SeqCst);
        assert!(seen >= 4, "a failing pass is retried and polling goes on: {seen} passes");
        stop.send(()).unwrap();
        task.await.unwrap();
        let after = passes.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(passes.load(Ordering::SeqCst), after, "no pass after shutdown");
    }
}
