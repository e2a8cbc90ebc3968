//! How the runner behaves: intervals, timeouts, the spend cap, the
//! confirmation key, the confirmation depth, and (for tests only) a
//! fault-injection hook.

use std::time::Duration;

use alloy::primitives::{B256, keccak256};
use tessera_bindings::usdc::Usdc;

/// How the runner behaves.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Block polling interval when no websocket is available.
    pub poll_interval: Duration,
    /// A run paused for a recovery decision is cancelled after this long,
    /// in chain time (block timestamps; a limit near `u64::MAX` seconds
    /// never passes).
    pub decision_timeout: Duration,
    /// Longest wait between two looks at a run's state.
    pub idle_tick: Duration,
    /// Most one plan may spend, USDC base units (the third line of defence:
    /// money only goes to registered, active agents, within this cap).
    pub max_plan_spend: Usdc,
    /// Key of the confirmation tokens that bind a high-stakes approval to the
    /// plan's exact amounts and recipients. Services set it from their own
    /// secret; the default is derived per process.
    pub confirm_secret: B256,
    /// Levels a proposed plan may nest (the root plan is level 1); capped
    /// at [`crate::plan::MAX_NESTING_DEPTH`].
    pub max_nesting_depth: usize,
    /// Consecutive failed steps after which a driver gives up and is
    /// restarted by its supervisor (with a `driver_restarted` event).
    pub max_step_failures: u32,
    /// Blocks a step that moved money waits on top of its transaction
    /// before the run counts it done, on chains that reorganise: the escrow's
    /// logs of the newest `confirmations + 1` blocks are read again at every
    /// head, a sub-task whose creation or settlement vanished is sent again
    /// (a `subtask_reorged` event says so), and a run completes only once
    /// every settlement is this deep. 0 (the default) on a chain that
    /// does not reorganise.
    pub confirmations: u64,
    /// Settlement-backed ERC-8004 feedback for the sponsor (see
    /// [`crate::feedback`]): off unless asked (`tessera serve` asks for
    /// one per executor and run).
    pub feedback: crate::feedback::FeedbackMode,
    /// How long a delivered result may stay out of reach (its sources
    /// failing or silent), in chain seconds from its delivery, before the
    /// run treats it as unreadable: disputed under auto review, shown as
    /// such under manual review (see [`crate::runner::reach`]). Never more
    /// than half the task's review window, so a dispute still fits in it.
    pub result_wait: Duration,
    /// Operator mode: a plan is approved only with its sponsor's grant
    /// (stored with the run first, see [`crate::grants`]), and no brief
    /// runs at once without one.
    pub grants_required: bool,
    /// Called with the run id at the start of every step: tests inject
    /// faults (a panic) through it.
    #[cfg(feature = "test-utils")]
    pub fault: Option<FaultHook>,
}

/// A test hook called at the start of every step with the run id.
#[cfg(feature = "test-utils")]
#[derive(Clone)]
pub struct FaultHook(pub std::sync::Arc<dyn Fn(&str) + Send + Sync>);

#[cfg(feature = "test-utils")]
impl std::fmt::Debug for FaultHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FaultHook")
    }
}

/// How long a delivered result may stay out of reach by default: 30 s of
/// chain time.
pub const DEFAULT_RESULT_WAIT: Duration = Duration::from_secs(30);

/// Default per-plan spend cap: 50 USDC.
pub const DEFAULT_MAX_PLAN_SPEND: Usdc = Usdc::from_whole(50);

impl Default for RunnerConfig {
    fn default() -> Self {
        let seed = format!(
            "{}:{:?}:{:p}",
            std::process::id(),
            std::time::SystemTime::now(),
            &DEFAULT_MAX_PLAN_SPEND
        );
        Self {
            poll_interval: Duration::from_millis(200),
            decision_timeout: Duration::from_secs(120),
            idle_tick: Duration::from_secs(1),
            max_plan_spend: DEFAULT_MAX_PLAN_SPEND,
            confirm_secret: keccak256(seed.as_bytes()),
            max_nesting_depth: crate::plan::DEFAULT_MAX_NESTING_DEPTH,
            max_step_failures: 5,
            confirmations: 0,
            feedback: crate::feedback::FeedbackMode::Approval,
            result_wait: DEFAULT_RESULT_WAIT,
            grants_required: false,
            #[cfg(feature = "test-utils")]
            fault: None,
        }
    }
}

impl RunnerConfig {
    /// The chain seconds a result delivered on a task with review window
    /// `review_window` (seconds) may stay out of reach: the configured
    /// wait, at most half the window.
    pub fn result_wait_for(&self, review_window: u64) -> u64 {
        self.result_wait.as_secs().min(review_window / 2)
    }

    /// Runs the fault hook, when tests set one.
    pub(crate) fn inject_fault(&self, _run: &str) {
        #[cfg(feature = "test-utils")]
        if let Some(hook) = &self.fault {
            (hook.0)(_run);
        }
    }
}
