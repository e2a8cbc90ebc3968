//! New-block notifications for the services' loops: a websocket
//! subscription to new heads when one answers, else a timer.
//!
//! One background reader per subscription publishes each announced head on
//! a watch channel, so a loop waiting between passes and every transaction
//! waiting for its receipt (see [`crate::sender::Sender::mined`]) follow the
//! same stream: one subscription confirms many transactions.

use std::time::{Duration, Instant};

use alloy::{
    consensus::BlockHeader,
    primitives::Bloom,
    providers::{Provider, ProviderBuilder, WsConnect},
};
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
    /// The bloom of its logs, when known: a reader whose filter it rules
    /// out may skip asking for the block's logs.
    pub logs_bloom: Option<Bloom>,
}

impl Head {
    /// The head a block header describes.
    pub fn of(header: &impl BlockHeader) -> Self {
        Self {
            number: header.number(),
            timestamp: header.timestamp(),
            logs_bloom: Some(header.logs_bloom()),
        }
    }

    /// Whether this block may hold a log `filter` matches: `false` only
    /// when its bloom rules every one out (then its logs need not be read).
    pub fn may_match(&self, filter: &alloy::rpc::types::Filter) -> bool {
        self.logs_bloom.is_none_or(|bloom| filter.matches_bloom(bloom))
    }
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
            let now = now.map(|b| Head::of(&b.header));
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
                        tx.send_replace(Some(Head::of(&h)));
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
    /// about once a block ([`Pace`]: every `poll` until the chain's block
    /// time is known, then just after each block is due) and announces
    /// each new one on the same watch channel, so whatever follows the
    /// heads (a runner's steps, the receipts its sender waits for) works
    /// as with a websocket: one request a block, not one per waiting
    /// transaction every 250 ms. A failed poll is logged and tried again
    /// `poll` later.
    pub fn or_poll(mut self, provider: alloy::providers::DynProvider) -> Self {
        if self.watch.is_some() {
            return self;
        }
        let (tx, rx) = watch::channel(None);
        let poll = self.poll;
        self.reader = Some(tokio::spawn(async move {
            let mut last = None;
            let mut pace = Pace::new(poll);
            loop {
                let asked = Instant::now();
                let seen =
                    match provider.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await
                    {
                        Ok(Some(b)) => {
                            let head = Head::of(&b.header);
                            if last != Some(head.number) {
                                last = Some(head.number);
                                tx.send_replace(Some(head));
                            }
                            Some(head)
                        }
                        Ok(None) => None,
                        Err(e) => {
                            tracing::debug!(error = %e, "polling the newest block failed");
                            None
                        }
                    };
                let next = pace.after(asked, seen.map(|h| (h.number, h.timestamp)));
                tokio::time::sleep_until(next.into()).await;
            }
        }));
        tracing::info!(every = ?poll, "following new blocks by polling, paced to the block time");
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

/// Block times seen in a row, all equal, before a poller takes the
/// chain's block time as known.
const REGULAR_AFTER: u32 = 3;

/// Polls in a row that find a block past its window before the block time
/// is forgotten (a chain that stopped, or changed pace).
const OVERDUE_LIMIT: u32 = 4;

/// When a poller asks for the newest block next: about once a block, just
/// after each is due.
///
/// While the chain's block time is unknown (automine, irregular or
/// sub-second blocks), every `poll`. Once [`REGULAR_AFTER`] block times in a
/// row were the same (from the blocks' timestamps, at least a second), the
/// moment the next block appears lies in a window: a block appeared
/// between the last poll that did not see it and the first that did, so
/// the next appears one block time later, within the same span. While the
/// window is wider than `tight` (a sixteenth of the block time, between
/// 25 ms and `poll`) the poll goes to its middle, which halves it whether
/// or not the block is there; then to its end, which a regular chain has
/// always reached: one request a block, each block seen at most `tight`
/// after it appeared. A block later than its window is looked for every
/// `tight`; after [`OVERDUE_LIMIT`] such looks the block time is learnt
/// again.
#[derive(Debug, Clone)]
pub struct Pace {
    poll: Duration,
    /// The newest block seen: number and timestamp.
    last: Option<(u64, u64)>,
    /// When the poll before this one was asked (it saw less than the next
    /// block a poll sees).
    asked_before: Option<Instant>,
    /// The block time being learnt, ms, and how many times in a row it was
    /// seen.
    block_ms: Option<u64>,
    regular: u32,
    /// When the block after `last` appears, on a regular chain.
    window: Option<(Instant, Instant)>,
    overdue: u32,
}

impl Pace {
    /// A pace that polls every `poll` until it knows the block time.
    pub fn new(poll: Duration) -> Self {
        Self {
            poll,
            last: None,
            asked_before: None,
            block_ms: None,
            regular: 0,
            window: None,
            overdue: 0,
        }
    }

    /// The chain's block time, once known.
    pub fn block_time(&self) -> Option<Duration> {
        self.block_ms.filter(|_| self.regular >= REGULAR_AFTER).map(Duration::from_millis)
    }

    fn tight(&self, block: Duration) -> Duration {
        let floor = Duration::from_millis(25);
        (block / 16).clamp(floor, self.poll.max(floor))
    }

    /// Takes what a poll asked at `asked` saw (the newest block's number
    /// and timestamp; `None` when the poll failed) and says when to ask
    /// next.
    pub fn after(&mut self, asked: Instant, seen: Option<(u64, u64)>) -> Instant {
        let before = self.asked_before.replace(asked);
        let Some((number, timestamp)) = seen else {
            self.window = None;
            return asked + self.poll;
        };
        // Where the window said this block would appear, when it is the one
        // expected.
        let expected = match (self.last, self.window) {
            (Some((n, _)), Some((lo, _))) if number == n + 1 => Some(lo),
            _ => None,
        };
        match self.last {
            Some((n, _)) if number == n => return self.missed(asked),
            Some((n, ts)) if number > n => {
                let per = timestamp.saturating_sub(ts).saturating_mul(1000) / (number - n);
                if per >= 1000 && self.block_ms == Some(per) {
                    self.regular = self.regular.saturating_add(1);
                } else {
                    self.block_ms = (per >= 1000).then_some(per);
                    self.regular = u32::from(per >= 1000);
                }
            }
            // The first look, or a head lower than the last (a reorg):
            // where blocks fall is learnt again.
            _ => self.window = None,
        }
        self.last = Some((number, timestamp));
        self.overdue = 0;
        let Some(block) = self.block_time() else {
            self.window = None;
            return asked + self.poll;
        };
        // The newest block appeared after the last poll that did not see
        // it, within its window when it was the one expected, and (on a
        // regular chain) less than a block time ago.
        let mut lo = asked.checked_sub(block).unwrap_or(asked);
        for bound in [before, expected].into_iter().flatten() {
            lo = lo.max(bound);
        }
        self.window = Some((lo + block, asked + block));
        self.aim(block)
    }

    /// A poll found no new block.
    fn missed(&mut self, asked: Instant) -> Instant {
        let Some(block) = self.block_time() else { return asked + self.poll };
        match self.window {
            Some((_, hi)) if asked < hi => {
                self.window = Some((asked, hi));
                self.aim(block)
            }
            _ => {
                // Later than its window: looked for often, for a while.
                self.window = None;
                self.overdue += 1;
                if self.overdue > OVERDUE_LIMIT {
                    self.regular = 0;
                    self.overdue = 0;
                    return asked + self.poll;
                }
                asked + self.tight(block)
            }
        }
    }

    /// The next poll in the window: its middle while wider than `tight`,
    /// else its end.
    fn aim(&self, block: Duration) -> Instant {
        let Some((lo, hi)) = self.window else { return Instant::now() + self.poll };
        let width = hi.saturating_duration_since(lo);
        if width <= self.tight(block) { hi } else { lo + width / 2 }
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

    /// A node mining a block every `block` from `t0` on (timestamps in
    /// whole seconds from 1000), asked by a [`Pace`] from `start`: each
    /// block's delay from its appearance to its first sight, and the polls
    /// asked, from block `from` to block `to`.
    fn drive(
        pace: &mut Pace,
        block: Duration,
        start: Duration,
        from: u64,
        to: u64,
        stops_at: Option<u64>,
    ) -> (Vec<Duration>, usize) {
        let t0 = Instant::now();
        let head = |at: Duration| {
            let n = (at.as_millis() / block.as_millis()) as u64;
            let n = stops_at.map_or(n, |s| n.min(s));
            (n, 1000 + n * block.as_secs())
        };
        let mut at = start;
        let (mut delays, mut polls, mut seen) = (Vec::new(), 0, None);
        loop {
            let (n, ts) = head(at);
            if n > to || at > block * (to as u32 + 50) {
                return (delays, polls);
            }
            if n >= from {
                polls += 1;
                if seen != Some(n) {
                    delays.push(at - block * n as u32);
                }
            }
            seen = Some(n);
            at = pace.after(t0 + at, Some((n, ts))) - t0;
        }
    }

    #[test]
    fn a_regular_chain_is_asked_once_a_block_just_after_each_block() {
        let block = Duration::from_secs(2);
        let mut pace = Pace::new(Duration::from_secs(1));
        // Learning: every `poll`, then the window narrows.
        let (_, learning) = drive(&mut pace, block, Duration::from_millis(1_730), 0, 19, None);
        assert_eq!(pace.block_time(), Some(block));
        assert!(learning <= 30, "{learning} polls for the first 20 blocks");
        let mut again = pace.clone();
        let (delays, polls) =
            drive(&mut again, block, Duration::from_millis(40_010), 21, 120, None);
        assert_eq!(polls, 100, "one poll a block once the pace is known");
        assert_eq!(delays.len(), 100, "every block seen");
        let worst = delays.iter().max().copied().unwrap_or_default();
        assert!(worst <= block / 16, "each block seen within a sixteenth of it: {worst:?}");
    }

    #[test]
    fn without_a_known_block_time_the_poll_is_every_poll() {
        let poll = Duration::from_millis(200);
        let mut pace = Pace::new(poll);
        let t0 = Instant::now();
        // Automine: blocks when transactions come, timestamps irregular.
        for (i, (n, ts)) in
            [(1, 1000), (2, 1000), (3, 1007), (4, 1008), (5, 1008)].into_iter().enumerate()
        {
            let asked = t0 + Duration::from_secs(i as u64);
            assert_eq!(pace.after(asked, Some((n, ts))), asked + poll);
        }
        assert_eq!(pace.block_time(), None);
        // A failed poll is tried again a poll later.
        let asked = t0 + Duration::from_secs(9);
        assert_eq!(pace.after(asked, None), asked + poll);
    }

    #[test]
    fn a_chain_that_stops_is_polled_every_poll_again() {
        let (block, poll) = (Duration::from_secs(2), Duration::from_secs(1));
        let mut pace = Pace::new(poll);
        drive(&mut pace, block, Duration::from_millis(300), 0, 15, None);
        assert_eq!(pace.block_time(), Some(block));
        // The chain stops at block 20: a few quick looks past its window,
        // then every poll with the block time forgotten.
        let (_, polls) =
            drive(&mut pace, block, Duration::from_millis(32_500), 16, 1_000, Some(20));
        assert_eq!(pace.block_time(), None);
        let quiet_secs = (50 + 1_000 - 20) * 2;
        assert!(
            polls <= (quiet_secs as usize + 20) && polls >= quiet_secs as usize - 20,
            "{polls} polls over {quiet_secs} s of a stopped chain, polled every second"
        );
    }

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
