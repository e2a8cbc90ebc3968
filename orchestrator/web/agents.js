// Registry agents from the embedded indexer: names from their cards (read by
// the indexer's one card decoder), offers, the record weighed by the money
// behind it (what selection reads), ERC-8004 identity and the feedback the
// indexer matched to settlements; the orchestrator's ranking of those
// offering a capability; and the capability catalogue plans are made from.
// The pure parts are tested in agents.test.mjs.

import { short, usdc } from './format.js';
import { api, index } from './api.js';

let agentsCache = null;

/// Registry agents with prices and records, from the embedded indexer.
export async function agents(refresh = false) {
  if (agentsCache && !refresh) return agentsCache;
  const body = await index('/agents').catch(() => null);
  agentsCache = (body?.agents ?? []).map((a) => ({ ...a, name: agentName(a) }));
  return agentsCache;
}

/// The agent's card id as the indexer read it, else its short address.
export function agentName(a) {
  return typeof a.name === 'string' && a.name ? a.name : short(a.agent);
}

/// Active agents offering `capability`, and how an offer reads in a picker.
export const offersFor = (list, capability) => list.filter((a) => a.status === 'active' && a.offers && capability in a.offers);
export const offerLabel = (a, capability) => `${a.name} · ${usdc(a.offers[capability])} USDC · ${reliability(a)}`;

/// The prior selection starts every agent from (Beta(2, 1)), as in select.rs.
export const PRIOR_SUCCESSES = 2;
export const PRIOR_FAILURES = 1;

/// R = (weighed completed + 2) / (weighed settled + 3): what selection
/// reads, not the raw success rate; null without the weighed record.
export function weighedReliability(a) {
  const ev = a?.stats?.evidence;
  if (!ev) return null;
  const done = Math.max(Number(ev.completed) || 0, 0);
  const failed = Math.max(Number(ev.failed) || 0, 0);
  return (done + PRIOR_SUCCESSES) / (done + failed + PRIOR_SUCCESSES + PRIOR_FAILURES);
}

export function reliability(a) {
  const r = weighedReliability(a);
  return r === null ? 'no record yet' : `${Math.round(r * 100)}% reliable`;
}

/// Completed over settled (paid or split; refunded and expired count
/// against), every task alike.
export function recordText(a) {
  const s = a?.stats ?? {};
  const settled = (Number(s.completed) || 0) + (Number(s.refunded) || 0) + (Number(s.expired) || 0);
  return settled ? `${s.completed ?? 0}/${settled} settled` : 'no settled tasks';
}

/// What the weighing made of the tasks: `4.0 from 3 funders · 1 paid by
/// the agent · 100 below the floor`.
export function weighedText(a) {
  const ev = a?.stats?.evidence;
  if (!ev) return '—';
  const weight = (Number(ev.completed) || 0) + (Number(ev.failed) || 0);
  const parts = [];
  if (ev.funders || weight) parts.push(`${weight.toFixed(1)} from ${ev.funders} funder${ev.funders === 1 ? '' : 's'}`);
  if (ev.linked_funders) parts.push(`${ev.linked_funders} paid by the agent`);
  if (ev.below_floor) parts.push(`${ev.below_floor} below the floor`);
  return parts.length ? parts.join(' · ') : 'nothing weighed yet';
}

/// The ERC-8004 agent id (`#12`), or null without an identity.
export function identityText(a) {
  const id = a?.identity?.agent_id;
  return id === undefined || id === null ? null : `#${id}`;
}

/// `2 of 3 matched · average 87.5`; null when the indexer serves no feedback.
export function feedbackSummary(a) {
  const f = a?.feedback;
  if (!f || typeof f !== 'object') return null;
  if (!f.count) return 'none yet';
  const avg = typeof f.average === 'number' ? ` · average ${+f.average.toFixed(2)}` : '';
  return `${f.matched ?? 0} of ${f.count} matched${avg}`;
}

/// A feedback value (an integer, number or decimal string) scaled by its
/// decimals: `950` with 1 → `95`.
export function feedbackValue(f) {
  const raw = String(f?.value ?? '');
  if (!/^-?\d+$/.test(raw)) return '?';
  const neg = raw.startsWith('-');
  const digits = neg ? raw.slice(1) : raw;
  const d = Number(f.value_decimals) || 0;
  if (!d) return `${neg ? '-' : ''}${digits}`;
  const padded = digits.padStart(d + 1, '0');
  const frac = padded.slice(-d).replace(/0+$/, '');
  return `${neg ? '-' : ''}${padded.slice(0, -d)}${frac ? `.${frac}` : ''}`;
}

/// The proof a feedback names: the settled task in the indexer, when it
/// matched one; null otherwise.
export function proofHref(f) {
  return f?.matched && f.task_id ? `/index/api/tasks/${f.task_id}` : null;
}

/// Every capability some active agent offers, sorted.
export function capabilities(list) {
  const names = new Set();
  for (const a of list) if (a.status === 'active') for (const c of Object.keys(a.offers ?? {})) names.add(c);
  return [...names].sort();
}

/// The orchestrator's ranking endpoint for `capability` under `policy`.
export const rankingPath = (capability, policy) =>
  `/api/agents/ranking?capability=${encodeURIComponent(capability)}&policy=${encodeURIComponent(policy)}`;

export function nameOf(address, list) {
  const a = list.find((x) => x.agent.toLowerCase() === String(address).toLowerCase());
  return a ? a.name : short(address);
}

// ------------------------------------------------------------- catalogue --

/// The orchestrator's capability catalogue: `{source, entries}`.
export const catalogue = () => api('GET', '/api/capabilities');

/// The fields of a result schema as `path: type` lines, nested ones dotted
/// (`summary.bullets[]: string`), those always present marked; at most
/// `max` (a schema holds at most 40).
export function resultFields(schema, max = 40) {
  const out = [];
  const walk = (node, prefix, depth) => {
    if (!node || typeof node !== 'object' || depth > 4) return;
    const required = Array.isArray(node.required) ? node.required : [];
    for (const [name, field] of Object.entries(node.properties ?? {})) {
      if (out.length >= max) return;
      const path = prefix ? `${prefix}.${name}` : name;
      const type = typeof field?.type === 'string' ? field.type : '?';
      const item = type === 'array' && typeof field.items?.type === 'string' ? field.items.type : null;
      out.push({ path: item ? `${path}[]` : path, type: item ?? type, required: required.includes(name) });
      if (type === 'object') walk(field, path, depth + 1);
      if (item === 'object') walk(field.items, `${path}[]`, depth + 1);
    }
  };
  walk(schema, '', 1);
  return out;
}

/// `lines[]: string` with ` (always)` for a field always present.
export const fieldText = (f) => `${f.path}: ${f.type}${f.required ? ' (always)' : ''}`;

/// The cheapest listed price of an entry, in base units as a string; null
/// when nobody offers it.
export function cheapestPrice(entry) {
  let best = null;
  for (const o of entry?.offerers ?? []) {
    if (!/^[0-9]+$/.test(String(o.price))) continue;
    if (best === null || BigInt(o.price) < BigInt(best)) best = String(o.price);
  }
  return best;
}

/// An offerer's record as the catalogue lists it: `83% reliable · 5/6
/// settled`, or `no record` when the index has none.
export function offererRecord(o) {
  const r = o?.record;
  if (!r || typeof r.reliability !== 'number') return 'no record';
  const settled = r.settled ? `${r.completed}/${r.settled} settled` : 'no settled tasks';
  return `${Math.round(r.reliability * 100)}% reliable · ${settled}`;
}

/// What an entry says of where it comes from and who offers it.
export function offeredText(entry) {
  const n = Number(entry?.offered_by) || 0;
  if (!n) return 'offered by nobody active';
  const listed = entry.offerers?.length ?? 0;
  return `offered by ${n} active agent${n === 1 ? '' : 's'}${listed < n ? ` (the ${listed} cheapest listed)` : ''}`;
}
