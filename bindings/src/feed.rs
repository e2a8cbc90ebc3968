//! Logs pushed by a websocket subscription, for a service that would
//! otherwise ask for every block's logs: while the feed lives, a block with
//! nothing for the service costs it no request at all.
//!
//! The feed is bounded: a reader task moves the subscription's logs into a
//! channel of [`FEED_CAPACITY`]; a reader that falls that far behind, a
//! closed socket or an ended subscription ends the feed, and
//! [`LogFeed::drain`] says so once the logs that did arrive are taken, so the
//! service goes back to reading ranges from its cursor. A log a
//! reorganization removed arrives flagged `removed`; its replacement
//! arrives as a new log.

use std::sync::Arc;

use alloy::{
    providers::{Provider, ProviderBuilder, WsConnect},
    rpc::types::{Filter, Log},
    transports::TransportError,
};
use tokio::sync::{Notify, broadcast, mpsc};

/// The most logs waiting to be taken; a feed further behind ends.
pub const FEED_CAPACITY: usize = 4_096;

/// The feed ended: logs after the last one taken may be missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the log subscription ended; logs after the last one taken may be missing")]
pub struct FeedEnded;

/// The logs of one filter, as the node pushes them.
#[derive(Debug)]
pub struct LogFeed {
    rx: mpsc::Receiver<Log>,
    arrived: Arc<Notify>,
    /// Reads the subscription; aborted when the feed is dropped.
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for LogFeed {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl LogFeed {
    /// Subscribes at `ws_url` to the logs matching `filter` (its address and
    /// topics; a block range is ignored: logs come from the next block on).
    /// At most `capacity` logs wait to be taken ([`FEED_CAPACITY`] suits a
    /// service); one more ends the feed.
    pub async fn subscribe(
        ws_url: &str,
        filter: &Filter,
        capacity: usize,
    ) -> Result<Self, TransportError> {
        let ws = ProviderBuilder::new().connect_ws(WsConnect::new(ws_url)).await?.erased();
        // The client's own buffer between the socket and this reader holds
        // a service's worth of logs (its default, 16, is less than one busy
        // block), and a reader that lags behind it ends the feed rather
        // than skipping logs, as the client's plain stream would.
        let mut sub = ws.subscribe_logs(filter).channel_size(capacity.max(FEED_CAPACITY)).await?;
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let arrived = Arc::new(Notify::new());
        let notify = Arc::clone(&arrived);
        let reader = tokio::spawn(async move {
            // The provider lives as long as its subscription is read.
            let _ws = ws;
            loop {
                let log = match sub.recv().await {
                    Ok(log) => log,
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::warn!(skipped, "log subscription lagged; ending the feed");
                        break;
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                if tx.try_send(log).is_err() {
                    tracing::warn!(capacity, "log feed fell behind; ending it");
                    break;
                }
                notify.notify_one();
            }
            // Dropping the sender ends the feed once its logs are taken.
            drop(tx);
            notify.notify_one();
        });
        Ok(Self { rx, arrived, reader })
    }

    /// Takes up to `max` logs that arrived, in the order they came. Once the
    /// feed has ended and everything that arrived is taken: [`FeedEnded`].
    pub fn drain(&mut self, max: usize) -> Result<Vec<Log>, FeedEnded> {
        let mut logs = Vec::new();
        while logs.len() < max {
            match self.rx.try_recv() {
                Ok(log) => logs.push(log),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) if logs.is_empty() => {
                    return Err(FeedEnded);
                }
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            }
        }
        Ok(logs)
    }

    /// Resolves when a log arrives (or the feed ends) after the last call.
    pub async fn arrived(&self) {
        self.arrived.notified().await;
    }
}
