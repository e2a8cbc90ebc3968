// Pure formatting shared by the pages: amounts, addresses, durations, the
// text of data: URIs and results, how run events read, how a nested
// plan's lineage groups by step path, and a plan's strategy (checkpoints,
// conditions, recovery, why each executor was chosen). No DOM, no
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

/// Who ruled and why, from a published verdict (`{verdict,
/// executor_share_bps, rationale, judge, flags}`, the arbiter's document
/// behind a ruling's rationale URI): `by` names the judge in words (the
/// offline rubric, a council and its model, the fallback after a council
/// failed, or the appeal arbiter), `prose` is the rationale as written.
/// Text that is not such a document is shown as it is, by nobody named.
export function rulingOf(text) {
  const v = parseJson(text);
  if (!v || typeof v !== 'object' || typeof v.rationale !== 'string') {
    return { by: null, prose: readable(text), flags: [] };
  }
  const judge = String(v.judge ?? '');
  let by;
  if (judge === 'offline-rubric') by = 'the offline rubric';
  else if (judge.startsWith('council:')) by = `a council (${judge.slice('council:'.length)})`;
  else if (judge === 'fallback') by = 'the fallback rule, after the council failed';
  else if (judge === '') by = null;
  else by = judge.replace(/-/g, ' ');
  return { by, prose: v.rationale, flags: Array.isArray(v.flags) ? v.flags.map(String) : [] };
}

// The run states and event kinds, generated from the Rust source.
export { FINAL, LIVE, EVENT_KINDS } from './kinds.js';

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

const STEP_PATH = /^(0|[1-9][0-9]{0,9})(\.(0|[1-9][0-9]{0,9})){0,7}$/;

/// The segments of a step path (`1.1.0` → `[1, 1, 0]`) as an envelope may
/// write it: 1 to 8 decimal u32s separated by dots, no sign or leading
/// zeros, at most 64 characters. Anything else is `null`.
export function pathSegments(path) {
  if (typeof path !== 'string' || path.length > 64 || !STEP_PATH.test(path)) return null;
  const segments = path.split('.').map(Number);
  return segments.every((s) => s <= 4294967295) ? segments : null;
}

function compareSegments(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return a.length - b.length;
}

/// The sum of amounts in base units as a string of digits; `null` when one
/// is not a whole number of base units.
function sumUnits(amounts) {
  let sum = 0n;
  for (const a of amounts) {
    const text = String(a ?? '').trim();
    if (!/^[0-9]+$/.test(text)) return null;
    sum += BigInt(text);
  }
  return sum.toString();
}

/// One level of steps sharing their first `depth` segments: a step ending
/// here is `{ task }`, a run of deeper steps under one segment a nested
/// plan `{ group: { path, label, count, cost, entries } }`.
function nestLevel(steps, depth) {
  const out = [];
  let i = 0;
  while (i < steps.length) {
    const { task, segments } = steps[i];
    if (segments.length === depth + 1) {
      out.push({ task });
      i += 1;
      continue;
    }
    let j = i;
    while (j < steps.length && steps[j].segments.length > depth + 1
      && steps[j].segments[depth] === segments[depth]) j += 1;
    const run = steps.slice(i, j);
    out.push({
      group: {
        path: segments.slice(0, depth + 1).join('.'),
        // The first label given at this level.
        label: run.map((s) => s.task.groups?.[depth]).find((l) => typeof l === 'string') ?? null,
        count: run.length,
        cost: sumUnits(run.map((s) => s.task.amount)),
        entries: nestLevel(run, depth + 1),
      },
    });
    i = j;
  }
  return out;
}

/// A plan's lineage nodes (the indexer's tree) grouped by their step
/// `path` and `groups`: `null` for a flat plan (no path of more than one
/// segment); otherwise `{ entries, unplaced }`, where `entries` are the
/// steps in path order (numeric, segment by segment) as `{ task }` or
/// `{ group }` (a nested plan: its `path`, `label` from the nodes'
/// `groups`, task `count`, `cost` in base units or `null`, and its own
/// `entries`), and `unplaced` the nodes without a well-formed path, which
/// hang under their parents as in a flat tree.
export function nestByPath(tasks) {
  const all = tasks ?? [];
  const steps = all.map((task) => ({ task, segments: pathSegments(task?.path) }))
    .filter((s) => s.segments);
  if (!steps.some((s) => s.segments.length > 1)) return null;
  // Stable: tasks of one path (retries) keep the indexer's order.
  steps.sort((a, b) => compareSegments(a.segments, b.segments));
  return { entries: nestLevel(steps, 0), unplaced: all.filter((t) => !pathSegments(t?.path)) };
}

/// The summary line of a nested plan from `nestByPath`: path, label, task
/// count and cost.
export function nestSummary(group) {
  const label = group.label === null ? '' : ` “${group.label}”`;
  const cost = group.cost === null ? '—' : usdc(group.cost);
  return `${group.path} nested plan${label} · ${group.count} task${group.count === 1 ? '' : 's'} · ${cost} USDC`;
}

/// The nested plans a proposed plan's table opens before each sub-task:
/// index → [{ path, spec, budget, level }], outermost first (the root plan
/// is level 1). Empty for a flat plan.
export function nestedHeaders(plan) {
  const groups = new Map((plan?.groups ?? []).map((g) => [g.path, g]));
  const out = new Map();
  if (!groups.size) return out;
  const opened = new Set();
  for (const t of plan.subtasks ?? []) {
    const segments = pathSegments(t.path);
    if (!segments) continue;
    const heads = [];
    for (let n = 1; n < segments.length; n += 1) {
      const path = segments.slice(0, n).join('.');
      if (opened.has(path)) continue;
      opened.add(path);
      const g = groups.get(path);
      heads.push({ path, spec: g?.spec ?? '', budget: g?.budget ?? null, level: n + 1 });
    }
    if (heads.length) out.set(t.index, heads);
  }
  return out;
}

// --- a plan's execution strategy: checkpoints, conditions, recovery, choices

const ON_TIMEOUT = { approve: 'approve', reject: 'reject', escalate: 'escalate to a person' };

/// What a checkpoint's timeout does, in words: `10 min, then approve`; a
/// checkpoint without its own timeout has the run's decision timeout.
export function timeoutText(cp) {
  const secs = Number(cp?.timeout_secs);
  const when = Number.isFinite(secs) && secs > 0 ? duration(secs) : "the run's decision timeout";
  const policy = cp?.on_timeout ?? 'escalate';
  return `${when}, then ${ON_TIMEOUT[policy] ?? policy}`;
}

/// How sub-task `i` of `plan` is named: `#3` in a flat plan; in a nested
/// plan (one with `groups`) its step path (`2`, `1.1`), the numbering its
/// author wrote references in.
export function stepName(plan, i) {
  if (plan?.groups?.length) {
    const path = (plan.subtasks ?? []).find((t) => t.index === Number(i))?.path;
    if (typeof path === 'string' && pathSegments(path)) return path;
  }
  return `#${i}`;
}

/// The sub-tasks a checkpoint follows: `#0, #2` (`2, 1.1` in a nested
/// `plan`).
export const afterText = (after, plan) => (after ?? []).map((i) => stepName(plan, i)).join(', ');

/// The checkpoints of `plan` with where the run stands at each (`gates`
/// of a run view, absent before one is reached): `{ name, after,
/// afterText, timeout, on_timeout, state, by, at, open }`, in plan order.
/// `state` is `pending` until the gate is reached, then `reached`,
/// `escalated`, `approved` or `rejected`; `open` when it waits for an
/// approver (reached or escalated).
export function checkpointsOf(plan, gates) {
  return (plan?.checkpoints ?? []).map((cp) => {
    const g = gates?.[cp.name];
    const state = g?.state ?? 'pending';
    return {
      name: cp.name,
      after: cp.after ?? [],
      afterText: afterText(cp.after, plan),
      timeout: timeoutText(cp),
      on_timeout: cp.on_timeout ?? 'escalate',
      state,
      by: g?.by ?? null,
      at: g?.at ?? null,
      open: state === 'reached' || state === 'escalated',
    };
  });
}

/// How a checkpoint's state reads: `approved by the approver`,
/// `rejected by its timeout`, `waiting for an approver`, `not reached yet`.
export function gateStateText(c) {
  switch (c?.state) {
    case 'pending': return 'not reached yet';
    case 'reached': return 'waiting for an approver';
    case 'escalated': return 'escalated: waiting for a person';
    case 'approved':
    case 'rejected':
      return `${c.state}${c.by ? ` by ${c.by === 'timeout' ? 'its timeout' : 'the approver'}` : ''}`;
    default: return String(c?.state ?? '');
  }
}

/// A sub-task's condition as a note: `runs only if out[0].score > 100`;
/// empty for an unconditional one. `conditions` (a run view's, for a
/// nested plan) writes it by step path, as the author numbered it.
export function conditionNote(t, conditions) {
  const byPath = typeof t?.path === 'string' ? conditions?.[t.path] : undefined;
  const raw = typeof byPath === 'string' ? byPath : t?.when;
  const w = typeof raw === 'string' ? raw.trim() : '';
  return w ? `runs only if ${w}` : '';
}

const RECOVERY_FIELDS = [
  ['on_decline', 'not accepted'],
  ['on_expiry', 'not delivered'],
  ['on_dispute_lost', 'dispute lost'],
];
const DISPUTE_POLICY = { retry_other: 'retry with another executor', fail: 'fail' };
const recoveryWord = (field, p) => (field === 'on_dispute_lost' ? DISPUTE_POLICY[p] ?? p : p);

/// One line on what the runner does by itself when work is not done or a
/// dispute is lost: `Recovery: not accepted → retry(2) · not delivered →
/// pause · dispute lost → fail`, then each sub-task's overrides (`#1: not
/// delivered → reassign`). Missing fields read as the server's defaults.
export function recoverySummary(plan) {
  const r = { on_decline: 'pause', on_expiry: 'pause', on_dispute_lost: 'fail', ...(plan?.recovery ?? {}) };
  const parts = RECOVERY_FIELDS.map(([f, label]) => `${label} → ${recoveryWord(f, r[f])}`);
  let line = `Recovery: ${parts.join(' · ')}`;
  for (const t of plan?.subtasks ?? []) {
    const o = t.recovery ?? {};
    const own = RECOVERY_FIELDS.filter(([f]) => o[f]).map(([f, label]) => `${label} → ${recoveryWord(f, o[f])}`);
    if (own.length) line += `; ${stepName(plan, t.index)}: ${own.join(', ')}`;
  }
  return line;
}

/// The choice behind sub-task `t`'s executor, if the plan records one and
/// the executor is still the one chosen (an edit may have changed it).
export function choiceFor(plan, t) {
  const c = (plan?.choices ?? []).find((x) => x.index === t?.index);
  if (!c) return null;
  if (t.executor && String(c.executor).toLowerCase() !== String(t.executor).toLowerCase()) return null;
  return c;
}

/// Why an executor was chosen, in one line: `chosen by balanced: <reason>;
/// runner-up <name> (0.420000 USDC): <why it lost>` (the reason without
/// the policy word the server opens it with). `name` writes an address.
export function choiceText(c, name = short) {
  if (!c) return '';
  const policy = c.policy ?? 'the selection policy';
  // The server's reasons open with the policy's word (`balanced: …`).
  let reason = String(c.reason ?? '');
  if (reason.startsWith(`${policy}: `)) reason = reason.slice(policy.length + 2);
  let text = `chosen by ${policy}: ${reason}`.trim();
  const ru = c.runner_up;
  if (ru) text += `; runner-up ${name(ru.executor)} (${usdc(ru.price)} USDC): ${ru.reason ?? ''}`.trimEnd();
  return text;
}

/// What the plan card says under a chosen agent that showed no sign of
/// life in the last day (`choice.quiet`): what happens if it stays silent.
export function quietText(plan) {
  const blocks = plan?.accept_window_blocks;
  const after = Number.isInteger(blocks) && blocks > 0
    ? `if it neither accepts nor delivers within ${blocks} blocks, its task is cancelled at full refund and the step goes to its recovery policy`
    : 'nothing cancels it before its deadline (no accept window)';
  return `No sign of life from this agent in the last day (no task accepted, delivered or declined): ${after}.`;
}

/// The brief's words that chose sub-task `t`'s capability, as the plan
/// card shows them: `chosen by “Write”, “haiku”` (at most eight words,
/// each cut to 24 characters); empty when the plan records none.
export function chosenByText(t) {
  const words = Array.isArray(t?.chosen_by) ? t.chosen_by : [];
  const shown = words.slice(0, 8).map((w) => {
    const s = String(w).replace(/\s+/g, ' ').trim();
    return `“${s.length > 24 ? `${s.slice(0, 24)}…` : s}”`;
  });
  return shown.length ? `chosen by ${shown.join(', ')}` : '';
}

/// A decline read in words: `declined by <executor>: <reason>`, the
/// executor named by `name` (an address cut short by default), the reason
/// on one line; a decline without one says so.
export function declineNote(ev, name = short) {
  const reason = String(ev?.reason ?? '').replace(/\s+/g, ' ').trim();
  return `declined by ${name(ev?.executor)}: ${reason || 'no reason given'}`;
}

/// The readable part of a run event for the log, beyond its kind and
/// index: the checkpoint and what became of it, why a step was skipped, the
/// recovery applied, why the run paused. Empty for other kinds. `plan`
/// names the sub-tasks of a nested plan by step path.
export function eventNote(ev, plan) {
  switch (ev?.kind) {
    case 'checkpoint_reached': {
      const cp = { timeout_secs: ev.timeout_secs, on_timeout: ev.on_timeout };
      return `${ev.name} reached after ${afterText(ev.after, plan)}: waiting for an approver (${timeoutText(cp)})`;
    }
    case 'checkpoint_approved':
    case 'checkpoint_rejected': {
      const verb = ev.kind === 'checkpoint_approved' ? 'approved' : 'rejected';
      const by = ev.by === 'timeout' ? 'by its timeout' : 'by the approver';
      return `${ev.name} ${verb} ${by}${ev.reason ? `: ${ev.reason}` : ''}`;
    }
    case 'checkpoint_escalated': return `${ev.name} escalated: waiting for a person`;
    case 'subtask_declined': return declineNote(ev);
    case 'subtask_silent': return `no sign of its executor: ${ev.reason ?? `${short(ev.executor)} stayed silent`}; it goes to its on_decline policy`;
    case 'result_unreadable': return `result unreadable: ${ev.reason ?? 'unknown'}; under auto review it is disputed, never paid`;
    case 'subtask_skipped':
      return `skipped: ${ev.reason ?? 'by the plan'}${ev.condition && !String(ev.reason ?? '').includes(ev.condition) ? ` (condition ${ev.condition})` : ''}`;
    case 'recovery_applied':
      // Attempts count from 0 everywhere: the CLI, the API and the page.
      return `${ev.policy}${Number.isInteger(ev.attempt) ? `, attempt ${ev.attempt}` : ''}: ${ev.reason ?? ''}`.trimEnd();
    case 'subtask_reorged':
      return `reorganised out of the chain: was ${ev.was ?? '?'}, now ${ev.now ?? '?'}; sent again`;
    case 'cost_raised':
      return `cost raised from ${usdc(ev.from)} to ${usdc(ev.to)} USDC for ${short(ev.executor)} by decision ${ev.decision}`;
    case 'plan_paused':
    case 'plan_cancelling':
    case 'budget_exceeded':
      return ev.reason ?? '';
    default: return '';
  }
}
