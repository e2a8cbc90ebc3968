//! What the worker reports: what it did with each task in a poll, and
//! what its registration did.

use alloy::primitives::{Address, U256};
use tessera_bindings::task::Status;

/// What the worker did with one task in a poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Accepted, ran and delivered; the result URI.
    Delivered {
        /// The task.
        task: U256,
        /// Where the result is.
        result_uri: String,
    },
    /// Left alone, off chain, with the reason: past its deadline (its
    /// funder takes the money back with `refundExpired`), deferred under
    /// the card's cap on delegated spend (looked at again once a child
    /// settles), or no longer this worker's to decline (moved meanwhile).
    Declined {
        /// The task.
        task: U256,
        /// Why.
        reason: String,
    },
    /// Declined on chain (`declineTask`): this worker cannot do it (an
    /// unreadable envelope, a capability it does not offer or the task was
    /// not funded for, a price not met, a failed run, or — for a task
    /// accepted to delegate part of it — that part failed). Its funder is
    /// refunded at once; the reason is published at `reason_uri`.
    DeclinedOnChain {
        /// The task.
        task: U256,
        /// Why, one line.
        reason: String,
        /// Where the reason is published (`{"reason": …}`).
        reason_uri: String,
    },
    /// Waiting, off chain, for the upstream tasks its envelope names to
    /// deliver (a pipeline funded up front): worked on once they have.
    Waiting {
        /// The task.
        task: U256,
        /// The upstream tasks not delivered yet.
        upstream: Vec<U256>,
    },
    /// Its envelope or an upstream's result is being fetched off the pass
    /// (see [`super::fetching`]); nothing sent: worked on once it is here.
    Fetching {
        /// The task.
        task: U256,
    },
    /// Its brain (a handler) is asked off the pass (see
    /// [`super::calls`]); nothing sent: delivered, declined or its children
    /// hired once the answer is in.
    Asking {
        /// The task.
        task: U256,
    },
    /// Claimed payment after the review window.
    Released {
        /// The task.
        task: U256,
    },
    /// Part of the task handed to another agent: a child task created and
    /// paid for from this worker's wallet, waited for before delivering.
    Delegated {
        /// The task.
        task: U256,
        /// The child task.
        child: U256,
        /// Its executor.
        executor: Address,
        /// What the child task costs this worker, base units.
        price: u128,
    },
    /// A child task this worker funded, stopped without paying it:
    /// cancelled before anyone accepted it, or its delivery disputed (its
    /// own task withdrawn meanwhile, or a result that is not what was
    /// bought). A disputed child is followed until it settles.
    ChildStopped {
        /// The own task.
        task: U256,
        /// The child task.
        child: U256,
        /// The child's status now: `Cancelled` or `Disputed`.
        status: Status,
        /// Why it was not paid.
        reason: String,
    },
}

/// What registration did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    /// Registered anew.
    Registered,
    /// Already registered; this many changes (prices, capabilities, card) were sent.
    Updated(usize),
}
