//! One adaptive block range for every `eth_getLogs` reader.
//!
//! Hosted providers cap `eth_getLogs`: by block range ("block range too
//! large", "exceed maximum block range: 5000"), by result count ("query
//! returned more than 10000 results", "Log response size exceeded") or
//! both, with codes that differ from one provider to the next (-32005,
//! -32602, -32614, -32000). A [`LogRange`] halves when a read is refused
//! for either reason and grows back, doubling after a few reads go through,
//! between a floor and a ceiling; [`read_chunk`] and [`read_all`] are the
//! two ways the services read with it (one chunk per pass, or a whole span).

use alloy::{
    providers::Provider,
    rpc::types::{Filter, Log},
    transports::{RpcError, TransportError},
};

/// JSON-RPC error codes providers answer a too-large log query with.
const RANGE_CODES: [i64; 2] = [-32005, -32614];

/// Words of the messages providers answer a too-large log query with
/// (lower case; any one is enough).
const RANGE_WORDS: [&str; 10] = [
    "block range",
    "range too large",
    "range is too",
    "more than",
    "too many",
    "response size",
    "max results",
    "limit exceeded",
    "query timeout",
    "exceed maximum",
];

/// Reads in a row at one size before the range doubles.
const GROW_AFTER: u32 = 4;

/// Whether `err` is a provider refusing a log query for its size (block
/// range or result count), as opposed to any other failure.
pub fn is_range_error(err: &TransportError) -> bool {
    let RpcError::ErrorResp(payload) = err else { return false };
    is_range_refusal(payload)
}

/// Whether a JSON-RPC error answer to `eth_getLogs` refuses the query for
/// its size (see [`is_range_error`]). Such an answer is not retried as it
/// is: some providers give it the code of their rate limit (-32005).
pub fn is_range_refusal(payload: &alloy::rpc::json_rpc::ErrorPayload) -> bool {
    let message = payload.message.to_lowercase();
    // A rate limit, whatever its code, is not about the query's size.
    if payload.code == 429 || RATE_WORDS.iter().any(|w| message.contains(w)) {
        return false;
    }
    RANGE_CODES.contains(&payload.code) || RANGE_WORDS.iter().any(|w| message.contains(w))
}

/// Words of a rate limit's message (lower case), which no size refusal has.
const RATE_WORDS: [&str; 3] = ["rate limit", "too many requests", "requests per"];

/// The size of the next `eth_getLogs` range: halved on a refusal, doubled
/// again after [`GROW_AFTER`] reads in a row go through, within `[min, max]`.
#[derive(Debug, Clone)]
pub struct LogRange {
    size: u64,
    min: u64,
    max: u64,
    streak: u32,
}

impl LogRange {
    /// A range starting at `initial` blocks, never under `min` (at least 1)
    /// nor over `max`.
    pub fn new(initial: u64, min: u64, max: u64) -> Self {
        let min = min.max(1);
        let max = max.max(min);
        Self { size: initial.clamp(min, max), min, max, streak: 0 }
    }

    /// Blocks the next read covers.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The last block of a read starting at `from`, no further than `head`.
    pub fn end(&self, from: u64, head: u64) -> u64 {
        head.min(from.saturating_add(self.size - 1))
    }

    /// A read of `span` blocks was refused for its size: the range becomes
    /// half of it (or of the range, when smaller). `false` when the span
    /// was already at the floor (the refusal stands).
    pub fn shrink(&mut self, span: u64) -> bool {
        self.streak = 0;
        if span <= self.min {
            return false;
        }
        self.size = (self.size.min(span) / 2).max(self.min);
        true
    }

    /// A read went through: after a few in a row the range doubles.
    pub fn succeeded(&mut self) {
        self.streak += 1;
        if self.streak >= GROW_AFTER {
            self.streak = 0;
            self.size = self.size.saturating_mul(2).min(self.max);
        }
    }
}

impl Default for LogRange {
    /// 1 000 blocks at first, between 1 and 10 000.
    fn default() -> Self {
        Self::new(1_000, 1, 10_000)
    }
}

/// Reads the logs of `filter` from `from` on, one range of at most
/// `range.size()` blocks and no further than `head`, shrinking the range
/// while the provider refuses it. Returns the last block read and its logs.
pub async fn read_chunk<P: Provider + ?Sized>(
    provider: &P,
    filter: &Filter,
    from: u64,
    head: u64,
    range: &mut LogRange,
) -> Result<(u64, Vec<Log>), TransportError> {
    loop {
        let to = range.end(from, head);
        let query = filter.clone().from_block(from).to_block(to);
        match provider.get_logs(&query).await {
            Ok(logs) => {
                range.succeeded();
                return Ok((to, logs));
            }
            Err(e) if is_range_error(&e) && range.shrink(to - from + 1) => {
                tracing::debug!(from, to, size = range.size(), error = %e, "log range shrunk");
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads every log of `filter` from `from` to `to`, in ranges that adapt
/// as [`read_chunk`]'s do.
pub async fn read_all<P: Provider + ?Sized>(
    provider: &P,
    filter: &Filter,
    from: u64,
    to: u64,
    range: &mut LogRange,
) -> Result<Vec<Log>, TransportError> {
    let mut out = Vec::new();
    let mut next = from;
    while next <= to {
        let (end, logs) = read_chunk(provider, filter, next, to, range).await?;
        out.extend(logs);
        next = end + 1;
    }
    Ok(out)
}

/// Reads the logs of `filter` backwards, from `top` down to `floor`, a
/// range at a time (adapting as [`read_chunk`]'s do), until `pick` picks one
/// out: the newest log it picks, or `None` once `floor` is read. What a task
/// needs is found near where it was last seen, so the cost grows with its
/// age, not with the deployment's.
pub async fn find_back<P: Provider + ?Sized, T>(
    provider: &P,
    filter: &Filter,
    floor: u64,
    top: u64,
    range: &mut LogRange,
    pick: impl Fn(&Log) -> Option<T>,
) -> Result<Option<T>, TransportError> {
    let mut to = top;
    while to >= floor {
        let from = to.saturating_sub(range.size() - 1).max(floor);
        let query = filter.clone().from_block(from).to_block(to);
        match provider.get_logs(&query).await {
            Ok(logs) => {
                range.succeeded();
                if let Some(found) = logs.iter().rev().find_map(&pick) {
                    return Ok(Some(found));
                }
                if from == floor || from == 0 {
                    return Ok(None);
                }
                to = from - 1;
            }
            Err(e) if is_range_error(&e) && range.shrink(to - from + 1) => {
                tracing::debug!(from, to, size = range.size(), error = %e, "log range shrunk");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// A [`LogRange`] shared by clones of one client (kept between reads, so a
/// provider's cap is learnt once, not on every read).
#[derive(Debug, Clone, Default)]
pub struct SharedRange(std::sync::Arc<std::sync::Mutex<LogRange>>);

impl SharedRange {
    /// [`read_all`] with this range.
    pub async fn read_all<P: Provider + ?Sized>(
        &self,
        provider: &P,
        filter: &Filter,
        from: u64,
        to: u64,
    ) -> Result<Vec<Log>, TransportError> {
        let mut range = self.0.lock().map(|r| r.clone()).unwrap_or_default();
        let result = read_all(provider, filter, from, to, &mut range).await;
        if let Ok(mut shared) = self.0.lock() {
            *shared = range;
        }
        result
    }

    /// [`find_back`] with this range.
    pub async fn find_back<P: Provider + ?Sized, T>(
        &self,
        provider: &P,
        filter: &Filter,
        floor: u64,
        top: u64,
        pick: impl Fn(&Log) -> Option<T>,
    ) -> Result<Option<T>, TransportError> {
        let mut range = self.0.lock().map(|r| r.clone()).unwrap_or_default();
        let result = find_back(provider, filter, floor, top, &mut range, pick).await;
        if let Ok(mut shared) = self.0.lock() {
            *shared = range;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::rpc::json_rpc::ErrorPayload;

    fn refusal(code: i64, message: &str) -> TransportError {
        RpcError::ErrorResp(ErrorPayload { code, message: message.to_owned().into(), data: None })
    }

    #[test]
    fn recognises_the_providers_refusals() {
        for (code, message) in [
            (-32005, "query returned more than 10000 results"),
            (-32602, "block range too large"),
            (-32000, "exceed maximum block range: 5000"),
            (
                -32602,
                "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range",
            ),
            (-32614, "eth_getLogs is limited to a 10,000 range"),
            (-32000, "query timeout exceeded"),
            (-32600, "Block range is too large"),
        ] {
            assert!(is_range_error(&refusal(code, message)), "{code} {message}");
        }
    }

    #[test]
    fn other_failures_are_not_refusals() {
        assert!(!is_range_error(&refusal(-32601, "the method eth_getLogs does not exist")));
        assert!(!is_range_error(&refusal(-32000, "header not found")));
        assert!(!is_range_error(&refusal(3, "execution reverted")));
        // Rate limits, whatever their code, are the transport's to retry.
        assert!(!is_range_error(&refusal(-32005, "rate limit exceeded")));
        assert!(!is_range_error(&refusal(429, "Too many requests")));
        assert!(!is_range_error(&refusal(-32005, "exceeded 25 requests per second")));
        assert!(!is_range_error(&alloy::transports::TransportErrorKind::backend_gone()));
    }

    #[test]
    fn halves_to_the_floor_then_refuses() {
        let mut r = LogRange::new(100, 10, 1_000);
        assert!(r.shrink(100));
        assert_eq!(r.size(), 50);
        assert!(r.shrink(50) && r.shrink(25));
        assert_eq!(r.size(), 12);
        assert!(r.shrink(12));
        assert_eq!(r.size(), 10);
        assert!(!r.shrink(10), "at the floor a refusal stands");
        assert_eq!(r.size(), 10);
        // A shorter span refused (the head was near) halves that span.
        let mut r = LogRange::new(1_000, 1, 1_000);
        assert!(r.shrink(30));
        assert_eq!(r.size(), 15);
    }

    #[test]
    fn grows_back_after_successes_up_to_the_ceiling() {
        let mut r = LogRange::new(5, 1, 16);
        for _ in 0..GROW_AFTER - 1 {
            r.succeeded();
        }
        assert_eq!(r.size(), 5, "not yet");
        r.succeeded();
        assert_eq!(r.size(), 10);
        for _ in 0..GROW_AFTER * 3 {
            r.succeeded();
        }
        assert_eq!(r.size(), 16, "capped");
        // A refusal resets the streak.
        for _ in 0..GROW_AFTER - 1 {
            r.succeeded();
        }
        r.shrink(16);
        r.succeeded();
        assert_eq!(r.size(), 8);
    }

    #[test]
    fn end_is_bounded_by_head_and_size() {
        let r = LogRange::new(5, 1, 100);
        assert_eq!(r.end(10, 100), 14);
        assert_eq!(r.end(10, 12), 12);
        assert_eq!(LogRange::new(0, 0, 0).size(), 1, "never empty");
    }
}
