//! One wave per head for every run: the approvals and creations the runs
//! find due at a head go out together, a `approvePayments` and a
//! `createTasks` call for all of them (in chunks of the escrow's
//! `MAX_BATCH`, read from the contract), not a pair per run.
//!
//! The first run to hand in its part of a wave leads it: it waits a short
//! window for the other runs woken by the same head (an eighth of the
//! block interval the chain shows, between [`MIN_WINDOW`] and
//! [`MAX_WINDOW`]; the minimum on a development chain that mines each
//! transaction at once), takes every part handed in meanwhile, sends, waits for
//! the transactions to be mined and hands each run its outcome. A part
//! handed in while a wave is being confirmed starts the next wave, so a
//! wave in flight never holds the next one back.
//!
//! A batch the node foresees reverting (one run's task was moved meanwhile,
//! say) is sent again run by run, so one run's refusal is its own. A leader
//! stopped before it sent (its driver dropped when the lane was lost) drops
//! the parts it held: each of their runs gets
//! [`RunError::WaveAbandoned`] and looks at the chain again at its next step.

use std::{ops::Range, sync::Arc, time::Duration};

use alloy::primitives::U256;
use tessera_bindings::{
    ITaskEscrow::CreateParams, client::ClientError, heads::Head, sender::Pending, task::TaskRecord,
};
use tokio::sync::oneshot;

use super::{Chain, RunError, chain::Sent, driver::lock};

/// The shortest wait for the other runs of a wave (a chain that mines every
/// transaction at once).
const MIN_WINDOW: Duration = Duration::from_millis(10);

/// The longest wait for the other runs of a wave.
const MAX_WINDOW: Duration = Duration::from_millis(250);

/// Block intervals remembered to size the window.
const INTERVALS: usize = 8;

/// One run's part of a wave.
#[derive(Debug, Default)]
pub(crate) struct Part {
    /// The run, for the logs.
    pub run: String,
    /// Tasks to approve.
    pub approvals: Vec<TaskRecord>,
    /// Tasks to create: the sub-task's index, the task id and parameters.
    pub creations: Vec<(u32, U256, CreateParams)>,
}

/// What came of one run's part.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The approvals mined, or why not (nothing asked: `Ok`).
    pub approved: Result<(), RunError>,
    /// The indices whose creation was mined (none when every one existed
    /// already, or was sent before and is still pending), or why not.
    pub created: Result<Vec<u32>, RunError>,
    /// The indices whose creation the escrow refused because it holds
    /// their reference already: sent before and still pending, or created
    /// outside this run (see the tick, which tells them apart).
    pub held: Vec<u32>,
}

impl Outcome {
    fn abandoned() -> Self {
        Self {
            approved: Err(RunError::WaveAbandoned),
            created: Err(RunError::WaveAbandoned),
            held: Vec::new(),
        }
    }

    fn nothing() -> Self {
        Self { approved: Ok(()), created: Ok(Vec::new()), held: Vec::new() }
    }
}

/// The parts handed in for the next wave, and the block intervals seen.
#[derive(Debug, Default)]
pub(super) struct Waves {
    queue: Vec<(Part, oneshot::Sender<Outcome>)>,
    /// A leader is waiting to take the queue.
    leading: bool,
    /// The last head seen and the intervals before it, chain seconds.
    last: Option<Head>,
    intervals: std::collections::VecDeque<u64>,
}

/// The lead of a wave, until its parts are taken: a leader dropped before
/// that drops the parts (their runs see [`RunError::WaveAbandoned`]) so none
/// waits for a wave that never goes out.
struct Lead<'a>(&'a std::sync::Mutex<Waves>);

impl Lead<'_> {
    fn take(self) -> Vec<(Part, oneshot::Sender<Outcome>)> {
        let mut waves = lock(self.0);
        waves.leading = false;
        let parts = std::mem::take(&mut waves.queue);
        drop(waves);
        std::mem::forget(self);
        parts
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        let mut waves = lock(self.0);
        waves.leading = false;
        waves.queue.clear();
    }
}

/// One transaction of a wave: whose calls it carries.
struct Batch {
    /// Per part (its place in the wave), the sub-task indices it creates
    /// (empty for approvals).
    parts: Vec<(usize, Vec<u32>)>,
    /// Sent, or why not.
    sent: Result<Pending, Arc<ClientError>>,
    /// Per part, creations refused because the escrow holds their
    /// reference already (nothing was sent for them).
    held: Vec<(usize, Vec<u32>)>,
}

/// Approvals or creations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Approve,
    Create,
}

impl Chain {
    /// Hands in run `part` of the next wave and returns once its
    /// transactions are mined (or failed). `fence` is checked before the
    /// wave is sent: nothing goes out once it fails.
    pub(crate) async fn wave(
        &self,
        part: Part,
        fence: &(dyn Fn() -> Result<(), RunError> + Sync),
    ) -> Outcome {
        if part.approvals.is_empty() && part.creations.is_empty() {
            return Outcome::nothing();
        }
        let (reply, outcome) = oneshot::channel();
        let leads = {
            let mut waves = lock(&self.waves);
            waves.queue.push((part, reply));
            !std::mem::replace(&mut waves.leading, true)
        };
        if leads {
            let lead = Lead(&self.waves);
            tokio::time::sleep(self.window()).await;
            let parts = lead.take();
            self.flush(parts, fence).await;
        }
        outcome.await.unwrap_or_else(|_| Outcome::abandoned())
    }

    /// Notes head `head` (from the subscription the runner follows): the
    /// intervals between blocks size the wave's window.
    pub(crate) fn saw_head(&self, head: Head) {
        let mut waves = lock(&self.waves);
        if let Some(last) = waves.last
            && head.number > last.number
        {
            let blocks = head.number - last.number;
            waves.intervals.push_back(head.timestamp.saturating_sub(last.timestamp) / blocks);
            if waves.intervals.len() > INTERVALS {
                waves.intervals.pop_front();
            }
        }
        waves.last = Some(head);
    }

    /// How long a wave's leader waits for the other runs: on a chain with
    /// block time, an eighth of the shortest recent block interval within
    /// [`MIN_WINDOW`, `MAX_WINDOW`] (the maximum until two heads are seen);
    /// the minimum on a chain that mines each transaction at once.
    pub fn window(&self) -> Duration {
        if self.automine {
            return MIN_WINDOW;
        }
        window_of(&lock(&self.waves).intervals)
    }

    /// Sends every part's approvals, then their creations, back to back,
    /// waits for all of them to be mined, and answers each part.
    async fn flush(
        &self,
        parts: Vec<(Part, oneshot::Sender<Outcome>)>,
        fence: &(dyn Fn() -> Result<(), RunError> + Sync),
    ) {
        let (mut parts, replies): (Vec<Part>, Vec<_>) = parts.into_iter().unzip();
        if fence().is_err() {
            for reply in replies {
                let _ = reply.send(Outcome {
                    approved: fence().map(drop),
                    created: fence().map(|()| Vec::new()),
                    held: Vec::new(),
                });
            }
            return;
        }
        let lane = self.lane.lock().await;
        // Another wake-up (or a previous life of this process) may have
        // created a task meanwhile: the chain decides.
        let mut lookups = Vec::with_capacity(parts.len());
        for part in &mut parts {
            let mut todo = Vec::with_capacity(part.creations.len());
            let mut failed = None;
            for c in std::mem::take(&mut part.creations) {
                match self.task(c.1).await {
                    Ok(None) => todo.push(c),
                    Ok(Some(_)) => {}
                    Err(e) => failed = Some(e),
                }
            }
            part.creations = todo;
            lookups.push(failed);
        }
        let approvals = self.send_batches(&parts, Kind::Approve).await;
        let creations = self.send_batches(&parts, Kind::Create).await;
        drop(lane);

        // Confirmed together: the receipts of one block serve them all.
        let confirm = |b: &Batch| {
            let sent = b.sent.clone();
            async move {
                match sent {
                    Ok(pending) => self.confirm(Sent(pending)).await.map(drop).map_err(Arc::new),
                    Err(e) => Err(e),
                }
            }
        };
        let approved = futures_util::future::join_all(approvals.iter().map(confirm)).await;
        let created = futures_util::future::join_all(creations.iter().map(confirm)).await;

        for (place, (reply, failed)) in replies.into_iter().zip(lookups).enumerate() {
            let mut outcome = Outcome::nothing();
            for batch in &creations {
                for (_, held) in batch.held.iter().filter(|(p, _)| *p == place) {
                    outcome.held.extend_from_slice(held);
                }
            }
            for (batch, result) in approvals.iter().zip(&approved) {
                if batch.parts.iter().any(|(p, _)| *p == place)
                    && let Err(e) = result
                {
                    outcome.approved = Err(RunError::Chain(e.share()));
                }
            }
            let mut indices = Vec::new();
            for (batch, result) in creations.iter().zip(&created) {
                let Some((_, mine)) = batch.parts.iter().find(|(p, _)| *p == place) else {
                    continue;
                };
                match result {
                    Ok(()) => indices.extend_from_slice(mine),
                    Err(e) if outcome.created.is_ok() => {
                        let index = mine.first().copied().unwrap_or_default();
                        outcome.created = Err(RunError::Create { index, source: e.share() });
                    }
                    Err(_) => {}
                }
            }
            if let Some(e) = failed {
                outcome.created = Err(e);
            } else if let Ok(created) = &mut outcome.created {
                *created = indices;
            }
            let _ = reply.send(outcome);
        }
    }

    /// Sends the approvals (or creations) of every part in as few calls as
    /// the escrow takes; a call of several parts the node foresees
    /// reverting is sent again part by part.
    async fn send_batches(&self, parts: &[Part], kind: Kind) -> Vec<Batch> {
        let size = |p: &Part| match kind {
            Kind::Approve => p.approvals.len(),
            Kind::Create => p.creations.len(),
        };
        let sizes: Vec<usize> = parts.iter().map(size).collect();
        let mut out = Vec::new();
        for chunk in chunks(&sizes, self.max_batch) {
            let sent = self.send_chunk(parts, &chunk, kind).await;
            match sent {
                Err(e) if chunk.len() > 1 && e.revert().is_some() => {
                    tracing::info!(
                        runs = chunk.len(),
                        error = %e,
                        "a wave's batch would revert; sending it run by run"
                    );
                    for one in &chunk {
                        let sent = self.send_chunk(parts, std::slice::from_ref(one), kind).await;
                        out.push(self.batch(parts, std::slice::from_ref(one), kind, sent));
                    }
                }
                sent => out.push(self.batch(parts, &chunk, kind, sent)),
            }
        }
        out
    }

    /// What one sent chunk carries, and how it went. A creation the escrow
    /// refuses as a reused reference is held: sent before (by a previous
    /// life of this process, still pending; the logs tell once it is
    /// mined), or created outside this run.
    fn batch(
        &self,
        parts: &[Part],
        chunk: &[(usize, Range<usize>)],
        kind: Kind,
        sent: Result<Pending, ClientError>,
    ) -> Batch {
        let indices = |(place, range): &(usize, Range<usize>)| match kind {
            Kind::Approve => (*place, Vec::new()),
            Kind::Create => {
                (*place, parts[*place].creations[range.clone()].iter().map(|c| c.0).collect())
            }
        };
        let carried: Vec<(usize, Vec<u32>)> = chunk.iter().map(indices).collect();
        match sent {
            Err(ClientError::Revert(r)) if kind == Kind::Create && r.is_duplicate_reference() => {
                for (place, indices) in &carried {
                    tracing::info!(
                        plan = %parts[*place].run,
                        ?indices,
                        "the escrow holds these references already"
                    );
                }
                // No part waits on it, and none fails because of it.
                let sent = Err(Arc::new(ClientError::Revert(r)));
                Batch { parts: Vec::new(), sent, held: carried }
            }
            sent => Batch { parts: carried, sent: sent.map_err(Arc::new), held: Vec::new() },
        }
    }

    /// Sends one chunk: the approvals or creations of the parts' ranges.
    async fn send_chunk(
        &self,
        parts: &[Part],
        chunk: &[(usize, Range<usize>)],
        kind: Kind,
    ) -> Result<Pending, ClientError> {
        match kind {
            Kind::Approve => {
                let recs: Vec<&TaskRecord> = chunk
                    .iter()
                    .flat_map(|(place, range)| parts[*place].approvals[range.clone()].iter())
                    .collect();
                self.approve_all(&recs).await.map(|s| s.0)
            }
            Kind::Create => {
                let params: Vec<CreateParams> = chunk
                    .iter()
                    .flat_map(|(place, range)| parts[*place].creations[range.clone()].iter())
                    .map(|c| c.2.clone())
                    .collect();
                self.create_all(params).await.map(|s| s.0)
            }
        }
    }
}

/// Parts of `sizes` calls, cut into chunks of at most `max` calls: whole
/// parts while they fit, a part cut only when it is larger than a chunk.
/// Each chunk lists its parts' places and the ranges of their calls.
fn chunks(sizes: &[usize], max: usize) -> Vec<Vec<(usize, Range<usize>)>> {
    let mut chunks: Vec<Vec<(usize, Range<usize>)>> = vec![Vec::new()];
    let mut filled = 0;
    for (place, &size) in sizes.iter().enumerate() {
        let mut start = 0;
        while start < size {
            let room = max - filled;
            // A part that fits in a chunk of its own is not cut.
            if room == 0 || (start == 0 && size > room && size <= max && filled > 0) {
                chunks.push(Vec::new());
                filled = 0;
                continue;
            }
            let end = size.min(start + room);
            chunks.last_mut().expect("a chunk").push((place, start..end));
            filled += end - start;
            start = end;
        }
    }
    chunks.retain(|c| !c.is_empty());
    chunks
}

/// The wave's window for recent block `intervals` (chain seconds): an
/// eighth of the shortest, within [`MIN_WINDOW`, `MAX_WINDOW`].
fn window_of(intervals: &std::collections::VecDeque<u64>) -> Duration {
    let Some(&secs) = intervals.iter().min() else { return MAX_WINDOW };
    (Duration::from_secs(secs) / 8).clamp(MIN_WINDOW, MAX_WINDOW)
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    #[test]
    fn whole_parts_share_a_chunk_while_they_fit() {
        assert_eq!(chunks(&[2, 0, 3], 64), vec![vec![(0, 0..2), (2, 0..3)]]);
        // The third part would straddle: it starts the next chunk whole.
        assert_eq!(chunks(&[3, 2, 4], 6), vec![vec![(0, 0..3), (1, 0..2)], vec![(2, 0..4)]]);
        assert!(chunks(&[0, 0], 64).is_empty());
    }

    #[test]
    fn a_part_larger_than_a_chunk_is_cut_and_nothing_exceeds_the_batch() {
        let cut = chunks(&[1, 10, 2], 4);
        // The last part fits a chunk of its own: it is not cut.
        assert_eq!(
            cut,
            vec![vec![(0, 0..1), (1, 0..3)], vec![(1, 3..7)], vec![(1, 7..10)], vec![(2, 0..2)]]
        );
        for sizes in [[64, 64, 1], [63, 2, 64], [130, 0, 5]] {
            let all = chunks(&sizes, 64);
            for c in &all {
                assert!(c.iter().map(|(_, r)| r.len()).sum::<usize>() <= 64, "{all:?}");
            }
            for (place, &size) in sizes.iter().enumerate() {
                let covered: usize =
                    all.iter().flatten().filter(|(p, _)| *p == place).map(|(_, r)| r.len()).sum();
                assert_eq!(covered, size, "every call of part {place} sent once: {all:?}");
            }
        }
    }

    #[test]
    fn the_window_follows_the_shortest_recent_block_interval() {
        assert_eq!(window_of(&VecDeque::new()), MAX_WINDOW, "not known yet");
        assert_eq!(window_of(&VecDeque::from([0, 1, 0])), MIN_WINDOW, "sub-second blocks");
        assert_eq!(window_of(&VecDeque::from([2, 2, 3])), MAX_WINDOW, "2 s blocks");
        assert_eq!(window_of(&VecDeque::from([1, 1])), Duration::from_millis(125));
        assert_eq!(window_of(&VecDeque::from([12])), MAX_WINDOW, "capped");
    }
}
