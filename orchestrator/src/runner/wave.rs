//! One wave per head for every run: the approvals and creations the runs
//! find due at a head go out together, a `approvePayments` and a
//! `createTasks` call for all of them (in chunks of the escrow's
//! `MAX_BATCH`, read from the contract), not a pair per run. The creations
//! of runs funded by a sponsor's grant go out in one `createWithGrants` call
//! instead (one `GrantedBatch` per run), the others' by `createTasks`.
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
//! One party's refusal stays its own. A batch the node foresees reverting
//! (one run's task was moved meanwhile, an executor stopped offering) is
//! sent again in halves, split further while a half would revert, until the
//! refused call is alone; a batch that reverts when mined (an executor
//! front-ran it: paused its offer or raised its price in the same block) is
//! sent again the same way, so the other calls land in the next block. A
//! creation refused alone goes back to its run as refused (the sub-task's
//! recovery policy answers it, see the tick), never sent again as it is.
//! The lane's fence is checked before every send, resends included. A leader
//! stopped before it sent (its driver dropped when the lane was lost) drops
//! the parts it held: each of their runs gets
//! [`RunError::WaveAbandoned`] and looks at the chain again at its next step.

use std::{ops::Range, sync::Arc, time::Duration};

use alloy::primitives::U256;
use tessera_bindings::{
    ITaskEscrow::{CreateParams, GrantedBatch},
    client::ClientError,
    heads::Head,
    sender::Pending,
    task::TaskRecord,
};
use tokio::sync::oneshot;

use super::{
    Chain, RunError,
    chain::{Funding, Sent},
    driver::lock,
};

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
    /// The sponsor's grant that funds the creations, when one does (they
    /// go out by `createWithGrants`, else by `createTasks`).
    pub grant: Option<Arc<Funding>>,
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
    /// The indices whose creation the escrow refused, each alone in its
    /// transaction (foreseen at estimation, or reverted when mined), with
    /// why: the sub-task's to answer (see the tick).
    pub refused: Vec<(u32, ClientError)>,
}

impl Outcome {
    fn abandoned() -> Self {
        Self {
            approved: Err(RunError::WaveAbandoned),
            created: Err(RunError::WaveAbandoned),
            held: Vec::new(),
            refused: Vec::new(),
        }
    }

    fn nothing() -> Self {
        Self { approved: Ok(()), created: Ok(Vec::new()), held: Vec::new(), refused: Vec::new() }
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

/// The calls of one transaction: per part (its place in the wave), the
/// range of its approvals or creations carried.
type Chunk = Vec<(usize, Range<usize>)>;

/// One transaction of a wave.
struct Batch {
    kind: Kind,
    chunk: Chunk,
    /// Sent, or refused or failed before it was; `None` when the fence
    /// stopped it (nothing sent).
    sent: Option<Result<Pending, Arc<ClientError>>>,
}

/// What came of one transaction of a wave.
struct Settled {
    kind: Kind,
    chunk: Chunk,
    /// Mined, or why not; `None` when the fence stopped it.
    result: Option<Result<(), Arc<ClientError>>>,
}

/// Approvals, creations funded by the key, or creations funded by
/// sponsors' grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Approve,
    Create,
    Grant,
}

impl Kind {
    /// How many calls of this kind `part` asks for.
    fn size(self, part: &Part) -> usize {
        match self {
            Self::Approve => part.approvals.len(),
            Self::Create if part.grant.is_none() => part.creations.len(),
            Self::Grant if part.grant.is_some() => part.creations.len(),
            Self::Create | Self::Grant => 0,
        }
    }
}

impl Chain {
    /// Hands in run `part` of the next wave and returns once its
    /// transactions are mined (or failed). `fence` is checked before every
    /// transaction of the wave is sent, the resends of a split batch
    /// included: nothing more goes out once it fails.
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
    /// waits for all of them to be mined (splitting a batch that reverted
    /// when mined, see [`Chain::settle`]), and answers each part.
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
                    refused: Vec::new(),
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
        let mut batches = Vec::new();
        for kind in [Kind::Approve, Kind::Create, Kind::Grant] {
            let sizes: Vec<usize> = parts.iter().map(|p| kind.size(p)).collect();
            for chunk in chunks(&sizes, self.max_batch) {
                batches.extend(self.send_split(&parts, chunk, kind, fence).await);
            }
        }
        drop(lane);
        let settled = self.settle(&parts, batches, fence).await;
        for (place, (reply, failed)) in replies.into_iter().zip(lookups).enumerate() {
            let mut outcome = answer(&parts, place, &settled, fence);
            if let Some(e) = failed {
                outcome.created = Err(e);
            }
            let _ = reply.send(outcome);
        }
    }

    /// Sends `chunk`; when the node foresees it reverting and it carries
    /// several calls, sends its halves instead, split further the same way.
    /// A refusal so ends alone with the one call it is about, and every
    /// other call goes out: one refused call among `n` costs at most
    /// `log2(n)` transactions more, not `n`, and no block. The fence is
    /// checked before each send; once it fails, nothing more is sent.
    async fn send_split(
        &self,
        parts: &[Part],
        chunk: Chunk,
        kind: Kind,
        fence: &(dyn Fn() -> Result<(), RunError> + Sync),
    ) -> Vec<Batch> {
        let mut out = Vec::new();
        let mut todo = vec![chunk];
        while let Some(chunk) = todo.pop() {
            if fence().is_err() {
                out.push(Batch { kind, chunk, sent: None });
                continue;
            }
            match self.send_chunk(parts, &chunk, kind).await {
                Err(e) if calls(&chunk) > 1 && e.revert().is_some() => {
                    tracing::info!(
                        ?kind,
                        calls = calls(&chunk),
                        error = %e,
                        "a wave's batch would revert; sending it in halves"
                    );
                    let (left, right) = halves(&chunk);
                    todo.push(right);
                    todo.push(left);
                }
                sent => out.push(Batch { kind, chunk, sent: Some(sent.map_err(Arc::new)) }),
            }
        }
        out
    }

    /// Waits for `batches` to be mined (the receipts of one block serve
    /// them all). A batch of several calls that reverted when mined —
    /// someone moved between its estimate and its block: an executor that
    /// paused its offer or raised its price, say — is sent again in halves
    /// (split further while the node foresees a half reverting), so the
    /// calls that can go through land in the next block and the one that
    /// cannot ends alone, its revert its own. Each round halves the calls
    /// of a batch that reverts, so this ends after at most
    /// `log2(MAX_BATCH) + 1` rounds whatever is done against it. A single
    /// creation's mined revert is read again at the newest block for its
    /// decoded reason.
    async fn settle(
        &self,
        parts: &[Part],
        mut batches: Vec<Batch>,
        fence: &(dyn Fn() -> Result<(), RunError> + Sync),
    ) -> Vec<Settled> {
        let mut out = Vec::new();
        while !batches.is_empty() {
            let confirm = |b: &Batch| {
                let sent = b.sent.clone();
                async move {
                    match sent? {
                        Ok(pending) => {
                            Some(self.confirm(Sent(pending)).await.map(drop).map_err(Arc::new))
                        }
                        Err(e) => Some(Err(e)),
                    }
                }
            };
            let results = futures_util::future::join_all(batches.iter().map(confirm)).await;
            let mut again = Vec::new();
            for (batch, result) in batches.into_iter().zip(results) {
                let Batch { kind, chunk, .. } = batch;
                let result = match result {
                    Some(Err(e)) if matches!(*e, ClientError::Reverted(_)) => {
                        if calls(&chunk) > 1 {
                            tracing::warn!(
                                ?kind,
                                calls = calls(&chunk),
                                error = %e,
                                "a wave's batch reverted when mined; sending it again in halves"
                            );
                            let (left, right) = halves(&chunk);
                            again.extend([(kind, left), (kind, right)]);
                            continue;
                        }
                        Some(Err(self.why_reverted(parts, kind, &chunk, e).await))
                    }
                    result => result,
                };
                out.push(Settled { kind, chunk, result });
            }
            batches = Vec::new();
            if again.is_empty() {
                break;
            }
            let lane = self.lane.lock().await;
            for (kind, chunk) in again {
                batches.extend(self.send_split(parts, chunk, kind, fence).await);
            }
            drop(lane);
        }
        out
    }

    /// Why the one call of `chunk` reverted when mined (`mined`): its
    /// revert at the newest block, decoded, when it still reverts there (a
    /// creation only); else `mined` (it was refused then and would not be
    /// now: someone moved before it and back after it).
    async fn why_reverted(
        &self,
        parts: &[Part],
        kind: Kind,
        chunk: &Chunk,
        mined: Arc<ClientError>,
    ) -> Arc<ClientError> {
        let Some((place, range)) = chunk.first() else { return mined };
        let part = &parts[*place];
        let Some(call) = part.creations.get(range.start) else { return mined };
        let simulated = match (kind, &part.grant) {
            (Kind::Create, _) => self.simulate_create(call.2.clone()).await,
            (Kind::Grant, Some(grant)) => {
                self.simulate_granted(grant.batch(vec![call.2.clone()])).await
            }
            _ => return mined,
        };
        match simulated {
            Err(e @ ClientError::Revert(_)) => {
                tracing::info!(index = call.0, error = %e, "a creation reverted when mined");
                Arc::new(e)
            }
            _ => mined,
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
            Kind::Grant => {
                self.create_with_grants(granted_batches(parts, chunk)).await.map(|s| s.0)
            }
        }
    }
}

/// Part `place`'s outcome, from every transaction of the wave. A creation
/// the escrow refuses as a reused reference is held: sent before (by a
/// previous life of this process, still pending; the logs tell once it is
/// mined), or created outside this run. A creation refused alone in its
/// transaction — foreseen, or reverted when mined — is refused: its
/// sub-task's to answer, not the step's. Anything else fails the step.
fn answer(
    parts: &[Part],
    place: usize,
    settled: &[Settled],
    fence: &(dyn Fn() -> Result<(), RunError> + Sync),
) -> Outcome {
    let fenced = || fence().err().unwrap_or(RunError::WaveAbandoned);
    let mut outcome = Outcome::nothing();
    let mut created = Vec::new();
    let mut failed = None;
    for s in settled {
        for (_, range) in s.chunk.iter().filter(|(p, _)| *p == place) {
            if s.kind == Kind::Approve {
                match &s.result {
                    Some(Ok(())) => {}
                    Some(Err(e)) => outcome.approved = Err(RunError::Chain(e.share())),
                    None => outcome.approved = Err(fenced()),
                }
                continue;
            }
            let indices: Vec<u32> =
                parts[place].creations[range.clone()].iter().map(|c| c.0).collect();
            match &s.result {
                Some(Ok(())) => created.extend_from_slice(&indices),
                Some(Err(e)) if e.revert().is_some_and(|r| r.is_duplicate_reference()) => {
                    tracing::info!(
                        plan = %parts[place].run,
                        ?indices,
                        "the escrow holds these references already"
                    );
                    outcome.held.extend_from_slice(&indices);
                }
                // Another transaction took its nonce: nothing was created,
                // and the next look sends what is still to do (a creation
                // mined after all is held by its reference then).
                Some(Err(e)) if e.is_dropped() => {
                    tracing::warn!(
                        plan = %parts[place].run,
                        ?indices,
                        error = %e,
                        "creations dropped; sent again at the next look"
                    );
                }
                Some(Err(e))
                    if calls(&s.chunk) == 1
                        && matches!(**e, ClientError::Revert(_) | ClientError::Reverted(_)) =>
                {
                    outcome.refused.extend(indices.iter().map(|&i| (i, e.share())));
                }
                // The sender's own fence: the lease went between the check
                // and the send.
                Some(Err(e)) if matches!(**e, ClientError::Fenced) => {
                    failed.get_or_insert_with(fenced);
                }
                Some(Err(e)) => {
                    let index = indices.first().copied().unwrap_or_default();
                    failed.get_or_insert(RunError::Create { index, source: e.share() });
                }
                None => {
                    failed.get_or_insert_with(fenced);
                }
            }
        }
    }
    outcome.created = match failed {
        Some(e) => Err(e),
        None => Ok(created),
    };
    outcome
}

/// The `createWithGrants` batches of `chunk`: one per run (its grant and
/// signature), its creations of the chunk in order. A part without a grant
/// has none (it goes out by `createTasks`).
fn granted_batches(parts: &[Part], chunk: &[(usize, Range<usize>)]) -> Vec<GrantedBatch> {
    chunk
        .iter()
        .filter_map(|(place, range)| {
            let part = &parts[*place];
            let params = part.creations[range.clone()].iter().map(|c| c.2.clone());
            Some(part.grant.as_ref()?.batch(params.collect()))
        })
        .collect()
}

/// How many calls `chunk` carries.
fn calls(chunk: &[(usize, Range<usize>)]) -> usize {
    chunk.iter().map(|(_, r)| r.len()).sum()
}

/// `chunk` cut in two of half its calls each (the first the smaller when
/// odd), a part's range cut where the middle falls in it. A chunk of
/// several calls gives two non-empty halves.
fn halves(chunk: &[(usize, Range<usize>)]) -> (Chunk, Chunk) {
    let mut rest = calls(chunk) / 2;
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for (place, range) in chunk {
        let take = rest.min(range.len());
        rest -= take;
        if take > 0 {
            left.push((*place, range.start..range.start + take));
        }
        if take < range.len() {
            right.push((*place, range.start + take..range.end));
        }
    }
    (left, right)
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
    fn halves_split_the_calls_evenly_cutting_a_part_where_the_middle_falls() {
        assert_eq!(halves(&[(0, 0..1), (1, 0..1)]), (vec![(0, 0..1)], vec![(1, 0..1)]));
        assert_eq!(halves(&[(0, 0..1), (2, 0..1), (3, 0..1)]).0, vec![(0, 0..1)]);
        // One run's creations 2..7 and another's 0..3: eight calls, four each.
        let (left, right) = halves(&[(0, 2..7), (1, 0..3)]);
        assert_eq!((left, right), (vec![(0, 2..6)], vec![(0, 6..7), (1, 0..3)]));
        assert_eq!(halves(&[(4, 0..2)]), (vec![(4, 0..1)], vec![(4, 1..2)]));
    }

    #[test]
    fn bisection_isolates_any_call_in_at_most_log2_splits_and_covers_every_call() {
        // Splitting the half that holds call `bad` until it is alone: every
        // other call ends in a half sent whole, none twice, none lost.
        for (sizes, bad) in [(vec![256], 255), (vec![3, 1, 4, 1, 5], 7), (vec![1; 9], 0)] {
            let whole: Chunk = sizes.iter().enumerate().map(|(p, &n)| (p, 0..n)).collect();
            let total = calls(&whole);
            let mut chunk = whole;
            let (mut sent, mut splits) = (0, 0);
            let holds = |c: &Chunk| {
                c.iter().any(|(p, r)| {
                    let before: usize = sizes[..*p].iter().sum();
                    bad >= before && r.contains(&(bad - before))
                })
            };
            while calls(&chunk) > 1 {
                let (left, right) = halves(&chunk);
                assert!(!left.is_empty() && !right.is_empty());
                assert_eq!(calls(&left) + calls(&right), calls(&chunk));
                splits += 1;
                let (with, without) = if holds(&left) { (left, right) } else { (right, left) };
                sent += calls(&without);
                chunk = with;
            }
            assert!(holds(&chunk), "the refused call ends alone");
            assert_eq!(sent + 1, total, "every other call sent once");
            assert!(splits <= total.next_power_of_two().trailing_zeros(), "{splits} splits");
        }
    }

    #[test]
    fn a_call_refused_alone_is_its_sub_tasks_and_only_other_failures_fail_the_step() {
        use tessera_bindings::{
            TaskEscrow::{TaskEscrowErrors, TaskEscrowExecutorNotOffering},
            revert::ContractRevert,
        };
        let part = |run: &str, indices: &[u32]| Part {
            run: run.into(),
            approvals: Vec::new(),
            creations: indices.iter().map(|&i| (i, U256::from(i), Default::default())).collect(),
            grant: None,
        };
        let parts = [part("x", &[0, 1]), part("y", &[5]), part("z", &[7, 8])];
        let refusal = ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowExecutorNotOffering(
            TaskEscrowExecutorNotOffering {
                executor: Default::default(),
                capability: Default::default(),
                amount: 1,
            },
        ));
        let err = |e: ClientError| Some(Err(Arc::new(e)));
        let settled = |chunk: Chunk, result| Settled { kind: Kind::Create, chunk, result };
        let wave = [
            settled(vec![(0, 0..1)], err(ClientError::Revert(Box::new(refusal)))),
            settled(vec![(0, 1..2), (1, 0..1)], Some(Ok(()))),
            // A mined revert of a single call: refused too.
            settled(vec![(2, 0..1)], err(ClientError::Reverted(Default::default()))),
            // Not sent: the fence stopped it.
            settled(vec![(2, 1..2)], None),
        ];
        let lost = || Err(RunError::LeaseLost(alloy::primitives::Address::ZERO));
        let x = answer(&parts, 0, &wave, &lost);
        assert_eq!(x.created.unwrap(), [1]);
        assert_eq!(x.refused.iter().map(|r| r.0).collect::<Vec<_>>(), [0]);
        assert!(x.refused[0].1.revert().is_some_and(|r| r.is_executor_refusal()));
        assert_eq!(answer(&parts, 1, &wave, &lost).created.unwrap(), [5]);
        let z = answer(&parts, 2, &wave, &lost);
        assert_eq!(z.refused.iter().map(|r| r.0).collect::<Vec<_>>(), [7]);
        assert!(matches!(z.created, Err(RunError::LeaseLost(_))), "{:?}", z.created);
        // Dropped (its nonce taken): neither created nor failed; the next
        // look sends them again.
        let dropped = ClientError::Dropped { nonce: 3, hashes: vec![Default::default()] };
        let gone = [settled(vec![(0, 0..2)], err(dropped))];
        let x = answer(&parts, 0, &gone, &lost);
        assert_eq!(x.created.unwrap(), Vec::<u32>::new());
        assert!(x.refused.is_empty() && x.held.is_empty());
        // A failure that is no refusal (a node error) fails the step.
        let rpc = alloy::transports::TransportErrorKind::custom_str("down");
        let down = [settled(vec![(0, 0..2)], err(ClientError::Rpc(rpc)))];
        assert!(matches!(
            answer(&parts, 0, &down, &lost).created,
            Err(RunError::Create { index: 0, .. })
        ));
    }

    #[test]
    fn granted_runs_go_out_apart_from_the_others_one_batch_per_grant() {
        use alloy::primitives::{Address, B256, Bytes};
        use tessera_bindings::grant::{GrantTerms, SignedGrant};
        let funding = |sponsor: u8| {
            let terms = GrantTerms {
                sponsor: Address::repeat_byte(sponsor),
                plan_id: B256::repeat_byte(sponsor),
                operator: Address::repeat_byte(0xaa),
                budget: 9,
                valid_until: 1,
                nonce: U256::from(sponsor),
            };
            let grant = SignedGrant { terms, signature: Bytes::from(vec![sponsor; 65]) };
            Some(Arc::new(Funding::new(grant, None)))
        };
        let part = |indices: &[u32], grant| Part {
            run: String::new(),
            approvals: Vec::new(),
            creations: indices
                .iter()
                .map(|&i| {
                    let params = CreateParams { amount: i.into(), ..Default::default() };
                    (i, U256::from(i), params)
                })
                .collect(),
            grant,
        };
        // A run of the key's, two sponsors' runs, another of the key's.
        let parts = [
            part(&[0, 1], None),
            part(&[2, 3, 4], funding(1)),
            part(&[5], funding(2)),
            part(&[6], None),
        ];
        let sizes = |kind: Kind| parts.iter().map(|p| kind.size(p)).collect::<Vec<_>>();
        assert_eq!(sizes(Kind::Create), [2, 0, 0, 1]);
        assert_eq!(sizes(Kind::Grant), [0, 3, 1, 0]);
        // The granted creations share one call: a batch per run, in order.
        let granted = chunks(&sizes(Kind::Grant), 64);
        assert_eq!(granted, vec![vec![(1, 0..3), (2, 0..1)]]);
        let batches = granted_batches(&parts, &granted[0]);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].grant.sponsor, Address::repeat_byte(1));
        let amounts: Vec<u128> = batches[0].params.iter().map(|p| p.amount).collect();
        assert_eq!(amounts, [2, 3, 4]);
        assert_eq!(batches[1].grant.sponsor, Address::repeat_byte(2));
        assert_eq!(batches[1].signature, Bytes::from(vec![2; 65]));
        // Halved when the call would revert: each half still one batch per run.
        let (left, right) = halves(&granted[0]);
        assert_eq!(granted_batches(&parts, &left).len(), 1);
        let right = granted_batches(&parts, &right);
        assert_eq!(right.iter().map(|b| b.params.len()).collect::<Vec<_>>(), [1, 1]);
        // The key's own runs' creations are never in a grant's batch.
        assert!(granted_batches(&parts, &[(0, 0..2), (3, 0..1)]).is_empty());
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
