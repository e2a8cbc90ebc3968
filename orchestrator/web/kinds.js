// Generated from the Rust source by the orchestrator's test
// `web::tests::kinds_js_is_generated_from_the_rust_lists`; do not edit:
// run it with TESSERA_BLESS=1 to rewrite this file.

/// Event kinds after which a run's stream ends (`EventKind::is_final`).
export const FINAL = new Set(['plan_completed', 'plan_failed']);

/// Run states a driver works on (`RunState::LIVE`).
export const LIVE = new Set(['running', 'paused', 'cancelling']);

/// Every run event kind (`EventKind::ALL`): the run page listens for each.
export const EVENT_KINDS = [
  'plan_proposed',
  'plan_edited',
  'plan_approved',
  'subtask_created',
  'subtask_accepted',
  'subtask_completed',
  'review_required',
  'output_flagged',
  'result_unreadable',
  'subtask_silent',
  'subtask_paid',
  'subtask_disputed',
  'dispute_opened',
  'dispute_ruled',
  'ruling_appealed',
  'appeal_ruled',
  'dispute_resolved',
  'subtask_reassigned',
  'subtask_refunded',
  'subtask_cancelled',
  'subtask_expired',
  'subtask_declined',
  'decision_applied',
  'plan_paused',
  'budget_exceeded',
  'cost_raised',
  'plan_resumed',
  'plan_cancelling',
  'plan_completed',
  'subtask_skipped',
  'checkpoint_reached',
  'checkpoint_approved',
  'checkpoint_rejected',
  'checkpoint_escalated',
  'recovery_applied',
  'subtask_reorged',
  'nested_completed',
  'plan_failed',
  'driver_restarted',
];
