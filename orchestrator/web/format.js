// Pure formatting shared by the pages: amounts, addresses, durations, the
// text of data: URIs and results, and how run events read. No DOM, no
// network: `make js-test` runs format.test.mjs against it with node.

/// A USDC amount in base units (a JSON integer or a string of digits, as the
/// APIs write `tessera_bindings::usdc::Usdc`) with exactly six decimals, the
/// rule the Rust `Usdc` display follows: `1200000` → `1.200000`. Anything
/// that is not a whole number of base units reads `—`.
export function usdc(units) {
  const text = String(units ?? 0).trim();
  if (!/^[0-9]+$/.test(text)) return '—';
  const n = BigInt(text);
  const frac = (n % 1000000n).toString().padStart(6, '0');
  return `${n / 1000000n}.${frac}`;
}

export const short = (a) => (a && a.length > 14 ? `${a.slice(0, 6)}…${a.slice(-4)}` : a ?? '—');

export function duration(secs) {
  if (secs < 120) return `${secs} s`;
  if (secs < 7200) return `${Math.round(secs / 60)} min`;
  return `${(secs / 3600).toFixed(1)} h`;
}

/// The text of a `data:` URI (percent-encoded or base64).
export function decodeDataUri(uri) {
  const comma = uri.indexOf(',');
  if (comma < 0) throw new Error('malformed data: URI');
  const meta = uri.slice(5, comma);
  const payload = uri.slice(comma + 1);
  if (meta.endsWith(';base64')) {
    const bin = atob(payload);
    return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  }
  return decodeURIComponent(payload);
}

export function parseJson(text) {
  try { return JSON.parse(text); } catch { return null; }
}

/// Readable text of a delivered result (`{"text": …}` or any JSON).
export function readable(text) {
  const v = parseJson(text);
  if (v === null) return text ?? '';
  if (typeof v === 'string') return v;
  for (const k of ['text', 'summary', 'translation', 'output', 'result']) {
    if (typeof v?.[k] === 'string') return v[k];
  }
  return JSON.stringify(v, null, 2);
}

export const FINAL = new Set(['plan_completed', 'plan_failed']);
export const LIVE = new Set(['running', 'paused', 'cancelling']);

export const EVENT_KINDS = [
  'plan_proposed', 'plan_edited', 'plan_approved', 'subtask_created', 'subtask_accepted',
  'subtask_completed', 'review_required', 'output_flagged', 'subtask_paid', 'subtask_disputed', 'dispute_opened',
  'dispute_ruled', 'ruling_appealed', 'appeal_ruled', 'dispute_resolved', 'subtask_reassigned',
  'subtask_refunded', 'subtask_cancelled', 'subtask_expired', 'decision_applied', 'plan_paused', 'budget_exceeded',
  'plan_resumed', 'plan_cancelling', 'plan_completed', 'plan_failed',
];

export function quadrantOf(c) {
  return `${c.decomposability?.value}_${c.stakes?.value}`;
}


/// How an applied decision reads: `decision_applied` carries `ok: false`,
/// `error` and optionally the decoded `revert` when its transaction failed;
/// `ok` missing or true is a success, described by `outcome`.
export function decisionOutcome(ev) {
  const what = ev?.decision ?? 'decision';
  if (ev?.ok !== false) return { ok: true, text: `${what}: ${ev?.outcome ?? 'applied'}` };
  let text = `${what} failed: ${ev.error ?? 'the transaction failed'}`;
  if (ev.revert) text += ` (revert: ${ev.revert})`;
  return { ok: false, text };
}

/// What a lineage node says about its dependencies beyond the parent it
/// hangs under: `⇐ merge, also from …` for a merge (the indexer's `merge`
/// and `inputs`), nothing otherwise. `shorten` writes each id.
export function mergeNote(task, shorten = (id) => id) {
  if (!task?.merge) return '';
  const others = (task.inputs ?? []).filter((id) => id !== task.parent_id).map(shorten);
  return others.length ? `⇐ merge, also from ${others.join(', ')}` : '';
}
