//! One adaptive block range for every `eth_getLogs` reader.
//!
//! Hosted providers cap `eth_getLogs`: by block range ("block range too
//! large", "exceed maximum block range: 5000"), by result count ("query
//! returned more than 10000 results", "Log response size exceeded") or
//! both, with codes that differ from one provider to the next (-32005,
//! -32602, -32614, -32000). A [`LogRange`] halves when a read is refused
//! for either reason and grows back, doubling after a few reads go through,
//! between a floor and a ceiling. A [`LogScan`] is the one scanner the
//! services follow the chain with: a cursor and its [`LogRange`], read a
//! range at a time up to the head; [`read_all`] and [`find_back`] read a
//! whole span, forwards or backwards.

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

/// The logs of one range of blocks a [`LogScan`] read: `from..=to`.
#[derive(Debug, Clone, Default)]
pub struct Chunk {
    /// The first block read.
    pub from: u64,
    /// The last block read.
    pub to: u64,
    /// Their logs, in chain order.
    pub logs: Vec<Log>,
}

/// A reader of the chain's logs from a cursor on, a range at a time up to
/// the head: the next block to read, and the [`LogRange`] the provider
/// accepts, learnt from its refusals and kept from one read to the next.
///
/// A service far behind (restarted on a long chain) catches up a range per
/// read. [`LogScan::next`] moves the cursor past what it read;
/// [`LogScan::peek`] leaves it for the caller to [`LogScan::advance`] once
/// what was read is handled for good.
#[derive(Debug, Clone, Default)]
pub struct LogScan {
    next: u64,
    range: LogRange,
}

impl LogScan {
    /// A scan from block `from` on, with the default [`LogRange`].
    pub fn new(from: u64) -> Self {
        Self { next: from, range: LogRange::default() }
    }

    /// The next block to read.
    pub fn next_block(&self) -> u64 {
        self.next
    }

    /// Reads from block `block` on next (back or forward).
    pub fn seek(&mut self, block: u64) {
        self.next = block;
    }

    /// Moves the cursor past block `to` (read and handled).
    pub fn advance(&mut self, to: u64) {
        self.next = to.saturating_add(1);
    }

    /// Reads the logs of `filter` from the cursor on, one range no further
    /// than `head`, without moving the cursor; `None` when the cursor is
    /// past `head`.
    pub async fn peek<P: Provider + ?Sized>(
        &mut self,
        provider: &P,
        filter: &Filter,
        head: u64,
    ) -> Result<Option<Chunk>, TransportError> {
        if head < self.next {
            return Ok(None);
        }
        self.read(provider, filter, self.next, head).await.map(Some)
    }

    /// [`LogScan::peek`], then [`LogScan::advance`] past what was read.
    pub async fn next<P: Provider + ?Sized>(
        &mut self,
        provider: &P,
        filter: &Filter,
        head: u64,
    ) -> Result<Option<Chunk>, TransportError> {
        let chunk = self.peek(provider, filter, head).await?;
        if let Some(c) = &chunk {
            self.advance(c.to);
        }
        Ok(chunk)
    }

    /// Reads the logs of `filter` (this scan's, or another one over the
    /// same provider) from block `from` on, one range no further than
    /// `head`, with this scan's range; the cursor does not move.
    pub async fn read<P: Provider + ?Sized>(
        &mut self,
        provider: &P,
        filter: &Filter,
        from: u64,
        head: u64,
    ) -> Result<Chunk, TransportError> {
        let (to, logs) = read_chunk(provider, filter, from, head, &mut self.range).await?;
        Ok(Chunk { from, to, logs })
    }
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

    #[tokio::test]
    async fn a_scan_reads_a_range_at_a_time_from_its_cursor() {
        use alloy::{providers::ProviderBuilder, transports::mock::Asserter};
        let asserter = Asserter::new();
        let provider = ProviderBuilder::new()
            .disable_recommended_fillers()
            .connect_mocked_client(asserter.clone());
        let filter = Filter::new();
        let mut scan = LogScan { next: 10, range: LogRange::new(100, 1, 1_000) };
        // Refused for its size, the range halves and the read goes on.
        asserter.push_failure(ErrorPayload {
            code: -32005,
            message: "query returned more than 10000 results".into(),
            data: None,
        });
        asserter.push_success(&Vec::<Log>::new());
        let chunk = scan.peek(&provider, &filter, 1_000).await.unwrap().unwrap();
        assert_eq!((chunk.from, chunk.to), (10, 59));
        assert_eq!(scan.next_block(), 10, "a peek leaves the cursor");
        scan.advance(chunk.to);
        asserter.push_success(&Vec::<Log>::new());
        let chunk = scan.next(&provider, &filter, 80).await.unwrap().unwrap();
        assert_eq!((chunk.from, chunk.to), (60, 80), "no further than the head");
        assert_eq!(scan.next_block(), 81);
        // Past the head nothing is asked (the mock has no answer left).
        assert!(scan.next(&provider, &filter, 80).await.unwrap().is_none());
        // Any other failure is the caller's, the cursor where it was.
        asserter.push_failure_msg("header not found");
        assert!(scan.next(&provider, &filter, 200).await.is_err());
        assert_eq!(scan.next_block(), 81);
        scan.seek(5);
        asserter.push_success(&Vec::<Log>::new());
        let chunk = scan.read(&provider, &filter, 300, 400).await.unwrap();
        assert_eq!((chunk.from, chunk.to, scan.next_block()), (300, 349, 5), "a read elsewhere");
    }

    #[test]
    fn end_is_bounded_by_head_and_size() {
        let r = LogRange::new(5, 1, 100);
        assert_eq!(r.end(10, 100), 14);
        assert_eq!(r.end(10, 12), 12);
        assert_eq!(LogRange::new(0, 0, 0).size(), 1, "never empty");
    }
}
