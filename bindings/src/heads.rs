//! New-block notifications for the services' loops: a websocket
//! subscription to new heads when one answers, else a timer.

use std::time::Duration;

use alloy::{
    providers::{DynProvider, Provider, ProviderBuilder, WsConnect},
    rpc::types::Header,
};
use futures_util::{StreamExt, stream::BoxStream};

/// Wakes a loop on each new block, and at least every `poll`.
pub struct Heads {
    /// Kept alive for as long as the stream is read.
    _ws: Option<DynProvider>,
    stream: Option<BoxStream<'static, Header>>,
    poll: Duration,
}

impl std::fmt::Debug for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heads")
            .field("websocket", &self.stream.is_some())
            .field("poll", &self.poll)
            .finish()
    }
}

impl Heads {
    /// Subscribes at `ws_url` when given and answering; falls back to
    /// polling every `poll` (logged) otherwise.
    pub async fn connect(ws_url: Option<&str>, poll: Duration) -> Self {
        let mut heads = Self { _ws: None, stream: None, poll };
        let Some(url) = ws_url else { return heads };
        let subscribed = async {
            let ws = ProviderBuilder::new().connect_ws(WsConnect::new(url)).await?.erased();
            let stream = ws.subscribe_blocks().await?.into_stream().boxed();
            Ok::<_, alloy::transports::TransportError>((ws, stream))
        };
        match subscribed.await {
            Ok((ws, stream)) => {
                tracing::info!(url, "following new blocks over websocket");
                heads._ws = Some(ws);
                heads.stream = Some(stream);
            }
            Err(e) => tracing::warn!(url, error = %e, "no websocket; polling instead"),
        }
        heads
    }

    /// Whether a websocket subscription is live.
    pub fn subscribed(&self) -> bool {
        self.stream.is_some()
    }

    /// Waits for the next block, or `poll`, whichever comes first. A closed
    /// subscription falls back to polling.
    pub async fn wait(&mut self) {
        match self.stream.as_mut() {
            Some(stream) => tokio::select! {
                next = stream.next() => if next.is_none() {
                    tracing::warn!("block subscription ended; polling instead");
                    self.stream = None;
                    self._ws = None;
                },
                () = tokio::time::sleep(self.poll) => {}
            },
            None => tokio::time::sleep(self.poll).await,
        }
    }
}
