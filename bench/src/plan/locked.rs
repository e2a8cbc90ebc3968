//! The money a plan keeps locked in the escrow, and for how long: for each
//! of its tasks, the amount funded times the chain seconds from the block
//! that created it to the block that settled it, summed (USDC·s). Funding
//! every step at approval (upfront) settles sooner but locks the later
//! steps' money from the start; this is what that costs the sponsor.

use std::collections::HashMap;

use alloy::{
    eips::BlockNumberOrTag,
    primitives::U256,
    providers::{DynProvider, Provider},
};
use tessera_stack::Error;

/// One task's funding: amount (base units), and the blocks that created
/// and settled it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Span {
    pub amount: u128,
    pub created: u64,
    pub settled: Option<u64>,
}

/// USDC·s locked by `spans` (a task not settled yet counts up to `head`),
/// from the timestamps of the blocks involved.
pub(super) async fn usdc_seconds(
    direct: &DynProvider,
    spans: &HashMap<U256, Span>,
    head: u64,
) -> Result<f64, Error> {
    let mut times: HashMap<u64, u64> = HashMap::new();
    let mut total = 0.0;
    for span in spans.values() {
        let end = span.settled.unwrap_or(head);
        let from = time_of(direct, &mut times, span.created).await?;
        let to = time_of(direct, &mut times, end).await?;
        total += span.amount as f64 / 1e6 * to.saturating_sub(from) as f64;
    }
    Ok(total)
}

/// Block `n`'s timestamp, asked once.
async fn time_of(
    direct: &DynProvider,
    times: &mut HashMap<u64, u64>,
    n: u64,
) -> Result<u64, Error> {
    if let Some(t) = times.get(&n) {
        return Ok(*t);
    }
    let block = direct.get_block_by_number(BlockNumberOrTag::Number(n)).await?;
    let t = block.map(|b| b.header.timestamp).unwrap_or_default();
    times.insert(n, t);
    Ok(t)
}
