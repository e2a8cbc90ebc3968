// Tessera's plan card: brief → classification → plan card (approve / edit /
// cancel) → live DAG with a drawer per sub-task; past plans and agents from
// the embedded indexer. Talks only to the orchestrator that serves it.

import { drawDag } from './dag.js';

// ---------------------------------------------------------------- helpers --

const $ = (sel, root = document) => root.querySelector(sel);

/// An element with attributes and children (strings become text nodes).
function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function usdc(units) {
  const n = BigInt(String(units ?? 0));
  const frac = (n % 1000000n).toString().padStart(6, '0');
  return `${n / 1000000n}.${frac}`;
}

const short = (a) => (a && a.length > 14 ? `${a.slice(0, 6)}…${a.slice(-4)}` : a ?? '—');

function duration(secs) {
  if (secs < 120) return `${secs} s`;
  if (secs < 7200) return `${Math.round(secs / 60)} min`;
  return `${(secs / 3600).toFixed(1)} h`;
}

const TOKEN_KEY = 'tessera.api-token';
const token = () => localStorage.getItem(TOKEN_KEY) ?? '';

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/// Calls the API; state changes carry the bearer token. Throws ApiError with
/// the server's own message.
async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET') {
    if (!token()) throw new ApiError(401, 'set the API token (top right) first: the value of TESSERA_API_TOKEN');
    headers.Authorization = `Bearer ${token()}`;
  }
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!resp.ok) throw new ApiError(resp.status, `${resp.status}: ${json?.error ?? (text || resp.statusText)}`);
  return json;
}

/// The indexer's API, when this orchestrator embeds one; null otherwise.
async function index(path) {
  try {
    return await api('GET', `/index/api${path}`);
  } catch (e) {
    if (e.status === 404 && path === '/agents') return null;
    throw e;
  }
}

async function sha256Hex(bytes) {
  if (!globalThis.crypto?.subtle) return null;
  const d = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/// The text of a `data:` URI (percent-encoded or base64).
function decodeDataUri(uri) {
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

/// The text behind a spec, result or rationale URI: inline `data:` or
/// content-addressed `sha256:` (fetched from the orchestrator and checked).
async function resolveUri(uri) {
  if (!uri) return null;
  if (uri.startsWith('data:')) return decodeDataUri(uri);
  const m = /^sha256:([0-9a-fA-F]{64})$/.exec(uri);
  if (m) {
    const resp = await fetch(`/api/blobs/${m[1]}`);
    if (!resp.ok) throw new Error(`blob ${short(m[1])}: ${resp.status}`);
    const bytes = await resp.arrayBuffer();
    const got = await sha256Hex(bytes);
    if (got && got !== m[1].toLowerCase()) throw new Error('blob does not match its hash');
    return new TextDecoder().decode(bytes);
  }
  return uri;
}

function parseJson(text) {
  try { return JSON.parse(text); } catch { return null; }
}

/// Readable text of a delivered result (`{"text": …}` or any JSON).
function readable(text) {
  const v = parseJson(text);
  if (v === null) return text ?? '';
  if (typeof v === 'string') return v;
  for (const k of ['text', 'summary', 'translation', 'output', 'result']) {
    if (typeof v?.[k] === 'string') return v[k];
  }
  return JSON.stringify(v, null, 2);
}

function banner(message) {
  const b = $('#banner');
  b.textContent = message ?? '';
  b.hidden = !message;
}

function errorBox() {
  return h('p', { class: 'error', role: 'alert', 'aria-live': 'assertive' });
}

/// Runs `work`, showing its error in `box`; disables `button` meanwhile.
async function act(box, button, work) {
  if (box) box.textContent = '';
  if (button) button.disabled = true;
  try {
    return await work();
  } catch (e) {
    if (box) box.textContent = e.message;
    else banner(e.message);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

// ------------------------------------------------------------ chain, agents --

let health = null;

async function loadHealth() {
  try {
    health = await api('GET', '/api/health');
    $('#chain').textContent = `chain ${health.chain_id} · sponsor ${short(health.sponsor)}`;
  } catch {
    $('#chain').textContent = 'orchestrator unreachable';
  }
}

let agentsCache = null;

/// Registry agents with prices and reliability, from the embedded indexer.
async function agents(refresh = false) {
  if (agentsCache && !refresh) return agentsCache;
  const body = await index('/agents').catch(() => null);
  agentsCache = (body?.agents ?? []).map((a) => ({ ...a, name: agentName(a) }));
  return agentsCache;
}

function agentName(a) {
  const uri = a.metadata_uri ?? '';
  if (uri.startsWith('data:')) {
    try {
      const card = JSON.parse(decodeDataUri(uri));
      if (typeof card?.id === 'string') return card.id;
    } catch { /* not a JSON card */ }
  }
  return short(a.agent);
}

/// Active agents offering `capability`, and how an offer reads in a picker.
const offersFor = (list, capability) => list.filter((a) => a.status === 'active' && a.offers && capability in a.offers);
const offerLabel = (a, capability) => `${a.name} · ${usdc(a.offers[capability])} USDC · ${reliability(a)}`;

function reliability(a) {
  const r = a?.stats?.success_rate;
  return r === null || r === undefined ? 'no record yet' : `${Math.round(r * 100)}% reliable`;
}

function nameOf(address, list) {
  const a = list.find((x) => x.agent.toLowerCase() === String(address).toLowerCase());
  return a ? a.name : short(address);
}

// ----------------------------------------------------------------- routing --

let leaving = () => {};

function go(path) {
  history.pushState({}, '', path);
  route();
}

async function route() {
  leaving();
  leaving = () => {};
  closeDrawer();
  banner('');
  const main = $('#main');
  main.replaceChildren();
  const path = location.pathname;
  for (const a of document.querySelectorAll('nav a')) {
    const here = a.getAttribute('href') === path || (a.getAttribute('href') === '/history' && path.startsWith('/runs'));
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const run = /^\/runs\/(0x[0-9a-fA-F]{64})\/?$/.exec(path);
  if (run) return runPage(main, run[1].toLowerCase());
  if (path === '/history' || path === '/runs') return historyPage(main);
  if (path === '/agents') return agentsPage(main);
  return briefPage(main);
}

document.addEventListener('click', (ev) => {
  const a = ev.target.closest?.('a[data-nav]');
  if (!a || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) return;
  ev.preventDefault();
  go(a.getAttribute('href'));
});
window.addEventListener('popstate', route);

const runUrl = (id) => `/runs/${id}${health ? `?chain=${health.chain_id}` : ''}`;

// -------------------------------------------------------------- brief page --

const EXAMPLES = [
  {
    label: 'Translate, then summarize',
    brief: 'Translate this article to French, then summarize it in three bullets',
    payload: 'The harbour reopened on Tuesday after the storm closed it for two days. Ships queued outside the harbour while crews cleared debris. Traders said the closure cost them dearly and asked the port authority for compensation. The port authority promised new breakwaters before winter.',
  },
  {
    label: 'Summarize, then translate',
    brief: 'Summarize the report and then translate the summary to Spanish',
    payload: 'The library will extend its opening hours from March. Visitors asked for evening access during exams. The council approved the budget for two extra staff. Volunteers will run a reading club on Saturdays.',
  },
  {
    label: 'Sentiment of reviews',
    brief: 'Classify the sentiment of these 4 reviews',
    payload: 'Great service and friendly staff.\nThe room was dirty and cold.\nNot bad, but the breakfast was late.\nI would happily come back.',
  },
  {
    label: 'Work plus a payment (high stakes)',
    brief: 'Summarize the invoice, then pay 40 USDC to 0x52908400098527886E0F7030069857D2E4169EE7',
    payload: 'Invoice 2291: design of the spring campaign, 40 USDC, due on receipt.',
  },
];

function briefPage(main) {
  const brief = h('textarea', { id: 'brief', rows: 3, required: true, placeholder: 'Translate this article to French, then summarize it in three bullets' });
  const payload = h('textarea', { id: 'payload', rows: 5, placeholder: 'Paste the article, document or reviews the sub-tasks work on' });
  const err = errorBox();
  const outcome = h('div', { id: 'outcome' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Classify and plan');
  const form = h('form', { class: 'card brief-form', 'aria-labelledby': 'brief-title' },
    h('h1', { id: 'brief-title' }, 'New plan'),
    h('p', { class: 'muted' }, 'Describe the work. Tessera classifies it, proposes sub-tasks with executors and costs from the registry, and moves no money until you approve.'),
    h('label', { for: 'brief' }, 'Brief'), brief,
    h('label', { for: 'payload' }, 'Material (optional)'), payload,
    h('div', { class: 'examples', role: 'group', 'aria-label': 'Example briefs' },
      h('span', { class: 'muted' }, 'Examples:'),
      EXAMPLES.map((x) => h('button', {
        type: 'button', class: 'chip',
        onclick: () => { brief.value = x.brief; payload.value = x.payload; brief.focus(); },
      }, x.label))),
    h('div', { class: 'actions' }, submit),
    err);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act(err, submit, async () => {
      const body = { brief: brief.value };
      if (payload.value.trim()) body.payload = payload.value;
      const out = await api('POST', '/api/classify', body);
      await showOutcome(outcome, out);
    });
  });
  main.append(form, outcome);
  brief.focus();
}

async function showOutcome(box, out) {
  box.replaceChildren(classificationCard(out.classification, out.quadrant, out.ceremony));
  if (out.refusal) {
    box.append(h('section', { class: 'card refusal', role: 'alert' },
      h('h2', {}, 'Not planned'), h('p', {}, out.refusal)));
    return;
  }
  if (!out.run) return;
  if (out.run.state !== 'proposed') {
    // Atomic, low stakes: it is already running.
    go(runUrl(out.run.id));
    return;
  }
  box.append(await planCard(out.run, { unassigned: out.unassigned }));
  box.querySelector('.plan-card h2')?.focus();
}

function classificationCard(c, quadrant, ceremony) {
  if (!c) return h('div');
  const axis = (name, a) => h('div', { class: 'axis' },
    h('span', { class: 'axis-name' }, name),
    h('strong', {}, a.value),
    h('meter', { min: 0, max: 1, value: a.confidence, 'aria-label': `${name} confidence` }),
    h('span', { class: 'muted' }, `${Math.round(a.confidence * 100)}%`));
  return h('section', { class: 'card classification', 'aria-labelledby': 'cls-title', dataset: { quadrant: quadrant ?? '' } },
    h('h2', { id: 'cls-title' }, 'Classification'),
    h('p', {},
      h('span', { class: `badge q-${quadrant}` }, (quadrant ?? '').replace('_', ' / ')),
      ' ', h('span', { class: 'muted' }, `ceremony: ${(ceremony ?? '').replace('_', ' ')} · engine: ${c.engine}`)),
    h('div', { class: 'axes' }, axis('Decomposability', c.decomposability), axis('Stakes', c.stakes)),
    h('h3', {}, 'Signals that fired'),
    c.signals?.length
      ? h('ul', { class: 'signals' }, c.signals.map((s) => h('li', {}, h('span', { class: `sig sig-${s.kind}` }, s.kind), ' ', h('code', {}, s.name), ' ', s.detail)))
      : h('p', { class: 'muted' }, 'none'),
    h('h3', {}, 'Reasoning'),
    h('p', {}, c.reasoning));
}

// --------------------------------------------------------------- plan card --

/// The plan card of a proposed run: DAG, sub-task table with edits,
/// totals, the high-stakes confirmation, approve and cancel.
async function planCard(view, { unassigned = [] } = {}) {
  const list = await agents();
  const plan = view.plan;
  const id = view.id;
  const high = view.stakes === 'high';
  const err = errorBox();
  const card = h('section', { class: 'card plan-card', 'aria-labelledby': 'plan-title', dataset: { run: id, stakes: view.stakes } });
  const rerender = async (next) => card.replaceWith(await planCard(next, { unassigned }));
  const edit = (button, body) => act(err, button, async () => rerender(await api('POST', `/api/runs/${id}/edit`, body)));

  const dag = h('div', { class: 'dag-wrap' }, drawDag(plan.subtasks, {
    label: (t) => [t.capability, t.executor ? nameOf(t.executor, list) : 'unassigned', `${usdc(t.cost)} USDC`],
    phase: () => 'proposed',
    onOpen: (t) => $(`#exec-${t.index}`, card)?.focus(),
  }));

  const order = plan.subtasks.map((t) => t.index);
  const rows = plan.subtasks.map((t, pos) => {
    const offers = offersFor(list, t.capability);
    const select = h('select', { id: `exec-${t.index}`, 'aria-label': `Executor of sub-task ${t.index} (${t.capability})` });
    if (!t.executor) select.append(h('option', { value: '' }, 'choose an executor…'));
    if (t.executor && !offers.some((a) => a.agent.toLowerCase() === t.executor.toLowerCase())) {
      select.append(h('option', { value: t.executor }, short(t.executor)));
    }
    for (const a of offers) {
      select.append(h('option', { value: a.agent }, offerLabel(a, t.capability)));
    }
    // Addresses may differ in checksum case between the plan and the index.
    const current = [...select.options].find((o) => o.value.toLowerCase() === (t.executor ?? '').toLowerCase());
    select.value = current ? current.value : '';
    select.addEventListener('change', () => {
      if (select.value) edit(select, { op: 'reassign', index: t.index, executor: select.value });
    });
    const move = (delta) => {
      const next = [...order];
      const j = pos + delta;
      [next[pos], next[j]] = [next[j], next[pos]];
      return next;
    };
    const up = h('button', { type: 'button', class: 'icon', 'aria-label': `Move sub-task ${t.index} up`, disabled: pos === 0 }, '↑');
    const down = h('button', { type: 'button', class: 'icon', 'aria-label': `Move sub-task ${t.index} down`, disabled: pos === order.length - 1 }, '↓');
    const drop = h('button', { type: 'button', class: 'icon danger', 'aria-label': `Drop sub-task ${t.index}`, disabled: order.length === 1 }, 'Drop');
    up.addEventListener('click', () => edit(up, { op: 'reorder', order: move(-1) }));
    down.addEventListener('click', () => edit(down, { op: 'reorder', order: move(1) }));
    drop.addEventListener('click', () => edit(drop, { op: 'drop', index: t.index }));
    return h('tr', { dataset: { index: t.index } },
      h('td', {}, `#${t.index}`),
      h('td', {}, h('strong', {}, t.capability), h('div', { class: 'muted spec' }, t.spec)),
      h('td', {}, select, unassigned.includes(t.index) && !t.executor ? h('div', { class: 'warn' }, 'no active agent offers this: pick one') : null),
      h('td', { class: 'num' }, `${usdc(t.cost)}`),
      h('td', {}, t.depends_on?.length ? t.depends_on.map((d) => `#${d}`).join(', ') : '—'),
      h('td', { class: 'row-actions' }, up, down, drop));
  });

  const review = h('input', { type: 'checkbox', id: 'review-mode', checked: plan.review === 'manual', disabled: high });
  review.addEventListener('change', () => edit(review, { op: 'review', review: review.checked ? 'manual' : 'auto' }));

  let confirmation = null;
  let confirmBox = null;
  if (high) {
    const amount = h('input', { id: 'confirm-amount', inputmode: 'decimal', autocomplete: 'off', placeholder: '0.000000' });
    const recipients = h('textarea', { id: 'confirm-recipients', rows: 2, spellcheck: 'false', placeholder: '0x…, one per line or comma-separated' });
    const cerr = errorBox();
    const ok = h('p', { class: 'ok', 'aria-live': 'polite' });
    const confirmBtn = h('button', { type: 'button' }, 'Confirm these terms');
    confirmBtn.addEventListener('click', () => act(cerr, confirmBtn, async () => {
      const rs = recipients.value.split(/[\s,]+/).filter(Boolean);
      const out = await api('POST', `/api/runs/${id}/confirm`, { amount: amount.value, recipients: rs });
      confirmation = out.confirmation_token;
      ok.textContent = 'Terms confirmed: approve now pays exactly these amounts to these recipients.';
    }));
    confirmBox = h('fieldset', { class: 'confirm' },
      h('legend', {}, 'High stakes: confirm deliberately'),
      h('p', {}, 'This plan moves money. Type the total amount and every recipient exactly as shown above; approval is refused without this confirmation.'),
      h('label', { for: 'confirm-amount' }, 'Total amount (USDC)'), amount,
      h('label', { for: 'confirm-recipients' }, 'Recipients'), recipients,
      h('div', { class: 'actions' }, confirmBtn), ok, cerr);
  }

  const approve = h('button', { type: 'button', class: 'primary', id: 'approve' }, 'Approve and fund');
  const cancel = h('button', { type: 'button', id: 'cancel' }, 'Cancel plan');
  approve.addEventListener('click', () => act(err, approve, async () => {
    const body = confirmation ? { confirmation_token: confirmation } : undefined;
    const next = await api('POST', `/api/runs/${id}/approve`, body);
    go(runUrl(next.id));
  }));
  cancel.addEventListener('click', () => act(err, cancel, async () => {
    await api('POST', `/api/runs/${id}/cancel`);
    go(runUrl(id));
  }));

  card.append(...[
    h('h2', { id: 'plan-title', tabindex: -1 }, 'Plan card ', h('span', { class: `badge stakes-${view.stakes}` }, `${view.stakes} stakes`)),
    h('p', { class: 'muted' }, `Run ${short(id)} · nothing is funded until you approve.`),
    dag,
    h('div', { class: 'table-wrap' }, h('table', { class: 'subtasks' },
      h('caption', {}, 'Sub-tasks: capability, executor, cost (USDC), dependencies'),
      h('thead', {}, h('tr', {}, ['#', 'Capability and instruction', 'Executor', 'Cost', 'Needs', 'Edit'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows))),
    h('dl', { class: 'totals' },
      h('dt', {}, 'Total cost'), h('dd', { id: 'total-cost' }, `${usdc(view.total_cost)} USDC`),
      h('dt', {}, 'Estimated duration'), h('dd', {}, duration(view.estimated_duration_secs)),
      h('dt', {}, 'Budget'), h('dd', {}, `${usdc(plan.budget)} USDC`)),
    high && view.confirmation ? h('p', { class: 'terms' }, 'To pay: ', h('strong', {}, `${view.confirmation.amount} USDC`), ' to ', view.confirmation.recipients.map((r) => h('code', {}, r)).reduce((acc, x, i) => (i ? [...acc, ', ', x] : [x]), [])) : null,
    h('div', { class: 'review-toggle' }, review, h('label', { for: 'review-mode' }, high ? 'Review each result before paying (required for high stakes)' : 'Review each result before paying (otherwise results are paid on delivery)')),
    confirmBox,
    h('div', { class: 'actions' }, approve, cancel),
    err,
  ].filter(Boolean));
  return card;
}

// ---------------------------------------------------------------- run page --

const FINAL = new Set(['plan_completed', 'plan_failed']);
const LIVE = new Set(['running', 'paused', 'cancelling']);

async function runPage(main, id) {
  const params = new URLSearchParams(location.search);
  const wanted = params.get('chain');
  if (wanted && health && String(health.chain_id) !== wanted) {
    banner(`This link is for chain ${wanted}; this orchestrator settles on chain ${health.chain_id}.`);
  }
  let view;
  try {
    view = await api('GET', `/api/runs/${id}`);
  } catch (e) {
    main.append(h('section', { class: 'card' }, h('h1', {}, 'Run not found'), h('p', { role: 'alert' }, e.message)));
    return;
  }
  if (!wanted && health) history.replaceState({}, '', runUrl(id));
  const state = { id, view, events: [], list: await agents(), selected: null };
  const head = h('div', { class: 'run-head' });
  const graph = h('div', { class: 'dag-wrap' });
  const table = h('div', { class: 'table-wrap' });
  const log = h('ol', { class: 'events', 'aria-label': 'Run events', 'aria-live': 'polite' });
  const body = h('div', {});
  main.append(h('section', { class: 'card run', 'aria-labelledby': 'run-title', dataset: { run: id } },
    head, body, graph, table,
    h('details', { class: 'log', open: true }, h('summary', {}, 'Events (live)'), log)));

  const render = () => {
    const v = state.view;
    const live = LIVE.has(v.state);
    const err = errorBox();
    const cancel = live ? h('button', { type: 'button', id: 'cancel-run' }, 'Cancel plan') : null;
    cancel?.addEventListener('click', () => act(err, cancel, () => api('POST', `/api/runs/${id}/cancel`).then(refresh)));
    head.replaceChildren(
      h('h1', { id: 'run-title' }, 'Run ', h('code', { title: id }, short(id))),
      h('p', {},
        h('span', { class: `badge state-${v.state}`, id: 'run-state' }, v.state),
        v.reason ? h('span', { class: 'muted' }, ` ${v.reason}`) : null,
        ` · ${usdc(v.total_cost)} USDC · ${v.subtasks.length || v.plan.subtasks.length} sub-task(s) · review ${v.plan.review}`),
      h('p', { class: 'share' }, 'Share: ', h('a', { href: runUrl(id), id: 'share-link' }, `${location.origin}${runUrl(id)}`)),
      h('div', { class: 'actions' }, cancel), err);
    if (v.state === 'proposed') {
      const cls = v.classification ? parseJson(v.classification) : null;
      planCard(v).then((card) => body.replaceChildren(
        cls ? classificationCard(cls, quadrantOf(cls), null) : h('div'), card));
      graph.replaceChildren();
      table.replaceChildren();
      return;
    }
    body.replaceChildren();
    const rows = new Map(v.subtasks.map((r) => [r.idx, r]));
    graph.replaceChildren(drawDag(v.plan.subtasks, {
      label: (t) => {
        const r = rows.get(t.index);
        return [t.capability, nameOf(r?.executor ?? t.executor, state.list), `${usdc(t.cost)} USDC${r?.attempt ? ` · try ${r.attempt + 1}` : ''}`];
      },
      phase: (t) => rows.get(t.index)?.phase ?? 'waiting',
      onOpen: (t) => openSubtask(state, t.index, refresh),
      selected: state.selected,
    }));
    table.replaceChildren(h('table', { class: 'subtasks' },
      h('caption', {}, 'Sub-tasks'),
      h('thead', {}, h('tr', {}, ['#', 'Capability', 'Executor', 'Phase', 'Task id', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, v.plan.subtasks.map((t) => {
        const r = rows.get(t.index);
        return h('tr', { dataset: { index: t.index } },
          h('td', {}, `#${t.index}`), h('td', {}, t.capability),
          h('td', {}, nameOf(r?.executor ?? t.executor, state.list)),
          h('td', {}, h('span', { class: `badge phase-${r?.phase ?? 'waiting'}` }, r?.phase ?? 'waiting')),
          h('td', {}, r?.task_id ? h('code', { title: r.task_id }, short(r.task_id)) : '—'),
          h('td', {}, h('button', { type: 'button', 'aria-label': `Details of sub-task ${t.index}`, onclick: () => openSubtask(state, t.index, refresh) }, 'Details')));
      }))));
    if ($('#drawer').hidden) state.selected = null;
    else if (state.selected !== null) openSubtask(state, state.selected, refresh, false);
  };

  // One fetch at a time; an event that lands meanwhile asks for one more, so
  // the last event (plan_completed) is always followed by a fresh view.
  let inflight = null;
  let again = false;
  const refresh = () => {
    if (inflight) {
      again = true;
      return inflight;
    }
    inflight = (async () => {
      do {
        again = false;
        state.view = await api('GET', `/api/runs/${id}`);
        render();
      } while (again);
    })().catch((e) => banner(e.message)).finally(() => { inflight = null; });
    return inflight;
  };

  render();
  // Every event from the start: the drawer's transactions and verdicts are
  // rebuilt from them, so a reload restores the whole view.
  const source = new EventSource(`/api/runs/${id}/events`);
  const onEvent = (msg) => {
    const ev = parseJson(msg.data) ?? {};
    ev.kind = ev.kind ?? msg.type;
    ev.seq = Number(msg.lastEventId);
    if (state.events.some((e) => e.seq === ev.seq)) return;
    state.events.push(ev);
    log.append(h('li', { dataset: { kind: ev.kind } },
      h('code', {}, ev.kind), ev.index !== undefined ? ` #${ev.index}` : '',
      ev.tx_hash ? h('span', { class: 'muted' }, ` tx ${short(ev.tx_hash)}`) : '',
      ev.verdict ? ` verdict ${ev.verdict} (${ev.executor_share_bps} bps to the executor)` : '',
      ev.kind === 'output_flagged' ? h('span', { class: 'flag' }, ` ${(ev.rules ?? []).join(', ')}`) : ''));
    if (FINAL.has(ev.kind)) source.close();
    refresh();
  };
  for (const kind of EVENT_KINDS) source.addEventListener(kind, onEvent);
  source.onmessage = onEvent;
  leaving = () => source.close();
}

const EVENT_KINDS = [
  'plan_proposed', 'plan_edited', 'plan_approved', 'subtask_created', 'subtask_accepted',
  'subtask_completed', 'review_required', 'output_flagged', 'subtask_paid', 'subtask_disputed', 'dispute_opened',
  'dispute_ruled', 'ruling_appealed', 'appeal_ruled', 'dispute_resolved', 'subtask_reassigned',
  'subtask_refunded', 'subtask_cancelled', 'subtask_expired', 'decision_applied', 'plan_paused',
  'plan_resumed', 'plan_cancelling', 'plan_completed', 'plan_failed',
];

function quadrantOf(c) {
  return `${c.decomposability?.value}_${c.stakes?.value}`;
}

// ------------------------------------------------------------------ drawer --

let drawerReturn = null;

function closeDrawer() {
  const d = $('#drawer');
  if (!d || d.hidden) return;
  d.hidden = true;
  document.body.classList.remove('drawer-open');
  drawerReturn?.focus?.();
  drawerReturn = null;
}

$('#drawer-close')?.addEventListener('click', () => closeDrawer());
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape') closeDrawer();
});

/// The drawer of sub-task `index`: transactions, envelope, result, dispute,
/// and the decisions its phase allows.
async function openSubtask(state, index, refresh, focus = true) {
  const drawer = $('#drawer');
  if (focus) drawerReturn = document.activeElement;
  state.selected = index;
  const v = state.view;
  const t = v.plan.subtasks.find((s) => s.index === index);
  const r = v.subtasks.find((s) => s.idx === index);
  if (!t) return;
  const mine = state.events.filter((e) => e.index === index);
  const attempt = r?.attempt ?? 0;
  const ofAttempt = mine.filter((e) => (e.attempt ?? attempt) === attempt);
  const lastOf = (kinds) => [...ofAttempt].reverse().find((e) => kinds.includes(e.kind));
  const txs = [
    ['create', lastOf(['subtask_created'])],
    ['accept', lastOf(['subtask_accepted'])],
    ['complete', lastOf(['subtask_completed'])],
    ['dispute', lastOf(['subtask_disputed'])],
    ['ruling', lastOf(['dispute_ruled', 'appeal_ruled'])],
    ['pay', lastOf(['subtask_paid'])],
    ['refund', lastOf(['subtask_refunded', 'subtask_cancelled', 'subtask_expired'])],
  ].filter(([, e]) => e?.tx_hash);
  const phase = r?.phase ?? 'waiting';
  const live = LIVE.has(v.state);
  const err = errorBox();
  const note = h('p', { class: 'ok', 'aria-live': 'polite' });
  const decide = (button, path, body) => act(err, button, async () => {
    await api('POST', `/api/runs/${v.id}${path}`, body);
    note.textContent = 'Decision queued; the runner applies it on the next block.';
    refresh();
  });

  const actions = h('div', { class: 'drawer-actions' });
  if (phase === 'completed' && v.plan.review === 'manual' && live) {
    const pay = h('button', { type: 'button', class: 'primary', id: 'approve-pay' }, 'Approve and pay');
    pay.addEventListener('click', () => decide(pay, `/subtasks/${index}/review`, { decision: 'approve' }));
    const reason = h('textarea', { id: 'dispute-reason', rows: 3, placeholder: 'What is wrong with this result?' });
    const dispute = h('button', { type: 'button', class: 'danger', id: 'dispute' }, 'Dispute');
    dispute.addEventListener('click', () => {
      if (!reason.value.trim()) { err.textContent = 'give a reason for the dispute'; reason.focus(); return; }
      decide(dispute, `/subtasks/${index}/review`, { decision: 'dispute', reason: reason.value });
    });
    actions.append(h('h3', {}, 'Review'), h('div', { class: 'actions' }, pay),
      h('label', { for: 'dispute-reason' }, 'Dispute reason'), reason, h('div', { class: 'actions' }, dispute));
  }
  if (phase === 'ruled' && live) {
    const reason = h('textarea', { id: 'appeal-reason', rows: 2 });
    const appeal = h('button', { type: 'button', id: 'appeal' }, 'Appeal the ruling');
    appeal.addEventListener('click', () => decide(appeal, '/appeal', { index, reason: reason.value }));
    actions.append(h('h3', {}, 'Appeal'), h('label', { for: 'appeal-reason' }, 'Appeal reason'), reason, h('div', { class: 'actions' }, appeal));
  }
  if (['created', 'accepted', 'expired', 'cancelled'].includes(phase) && live) {
    const retry = h('button', { type: 'button', id: 'retry' }, 'Retry (same executor, fresh deadline)');
    retry.addEventListener('click', () => decide(retry, `/subtasks/${index}/retry`));
    const pick = h('select', { id: 'new-executor', 'aria-label': 'New executor' },
      offersFor(state.list, t.capability).map((a) => h('option', { value: a.agent }, offerLabel(a, t.capability))));
    const change = h('button', { type: 'button', id: 'change-executor' }, 'Change executor');
    change.addEventListener('click', () => decide(change, `/subtasks/${index}/executor`, { executor: pick.value }));
    actions.append(h('h3', {}, 'Recover'), h('div', { class: 'actions' }, retry), pick, h('div', { class: 'actions' }, change));
  }

  const envelopeBox = h('div', { class: 'envelope' }, h('p', { class: 'muted' }, 'loading…'));
  const resultBox = h('div', { class: 'result' }, h('p', { class: 'muted' }, r?.result_uri ? 'loading…' : 'not delivered yet'));
  const disputeBox = h('div', { class: 'dispute' });
  // A result that speaks to a later agent or the judge: shown, not decided on.
  const flagged = lastOf(['output_flagged']);
  const flagBox = flagged
    ? h('div', { class: 'output-flag', id: 'output-flag', role: 'note' },
      h('h3', {}, 'Flagged result'),
      h('p', {}, flagged.note ?? 'The result contains text aimed at a later agent or the judge.'),
      h('ul', {}, (flagged.reasons ?? []).map((r) => h('li', {}, h('code', { class: 'wrap' }, String(r))))))
    : null;

  // A live update rebuilds the drawer: keep what the user was typing and
  // where the focus was.
  const body = $('#drawer-body');
  const typed = [...body.querySelectorAll('textarea[id], select[id], input[id]')].map((e) => [e.id, e.value]);
  const focused = body.contains(document.activeElement) ? document.activeElement.id : null;
  const sameTask = $('#drawer-title').textContent === `#${index} ${t.capability}`;
  $('#drawer-title').textContent = `#${index} ${t.capability}`;
  body.replaceChildren(
    h('dl', { class: 'facts' },
      h('dt', {}, 'Phase'), h('dd', {}, h('span', { class: `badge phase-${phase}`, id: 'drawer-phase' }, phase)),
      h('dt', {}, 'Executor'), h('dd', {}, nameOf(r?.executor ?? t.executor, state.list), ' ', h('code', { class: 'wrap' }, r?.executor ?? t.executor ?? '—')),
      h('dt', {}, 'Cost'), h('dd', {}, `${usdc(t.cost)} USDC`),
      h('dt', {}, 'Attempt'), h('dd', {}, String(attempt + 1)),
      h('dt', {}, 'Task id'), h('dd', {}, r?.task_id ? h('code', { class: 'wrap' }, r.task_id) : '—'),
      h('dt', {}, 'Needs'), h('dd', {}, t.depends_on?.length ? t.depends_on.map((d) => `#${d}`).join(', ') : 'nothing')),
    h('h3', {}, 'Transactions'),
    txs.length
      ? h('ul', { class: 'txs' }, txs.map(([what, e]) => h('li', { dataset: { tx: what } },
        h('span', { class: 'tx-kind' }, what), ' ', h('code', { class: 'wrap', title: `block ${e.block}` }, e.tx_hash),
        ' ', h('button', { type: 'button', class: 'icon', 'aria-label': `Copy the ${what} transaction hash`, onclick: () => navigator.clipboard?.writeText(e.tx_hash) }, 'Copy'))))
      : h('p', { class: 'muted' }, 'none yet'),
    r?.task_id ? h('p', {}, h('a', { href: `/index/api/tasks/${r.task_id}`, target: '_blank', rel: 'noopener' }, 'Full task history (indexer)')) : null,
    h('h3', {}, 'Envelope'), envelopeBox,
    h('h3', {}, 'Result'), resultBox,
    flagBox,
    disputeBox,
    actions, note, err);
  if (sameTask && !focus) {
    for (const [eid, value] of typed) {
      const e = document.getElementById(eid);
      if (e && body.contains(e) && value) e.value = value;
    }
    if (focused) document.getElementById(focused)?.focus();
  }
  if (drawer.hidden) {
    drawer.hidden = false;
    document.body.classList.add('drawer-open');
  }
  if (focus) $('#drawer-close').focus();

  const created = lastOf(['subtask_created']);
  resolveUri(created?.spec_uri).then((text) => {
    if (!text) { envelopeBox.replaceChildren(h('p', { class: 'muted' }, 'not created yet')); return; }
    const env = parseJson(text);
    if (!env) { envelopeBox.replaceChildren(h('pre', {}, text)); return; }
    envelopeBox.replaceChildren(h('dl', { class: 'facts' },
      h('dt', {}, 'Spec'), h('dd', { class: 'env-spec' }, env.spec),
      h('dt', {}, 'Parent'), h('dd', {}, h('code', { class: 'wrap' }, String(env.parent))),
      env.capability ? [h('dt', {}, 'Capability'), h('dd', {}, env.capability)] : null,
      env.inputs?.length ? [h('dt', {}, 'Inputs'), h('dd', { class: 'env-inputs' }, env.inputs.map((i) => h('details', {}, h('summary', {}, `from #${i.from ?? '?'}`), h('pre', {}, readable(i.output ?? JSON.stringify(i))))))] : null,
      env.source ? [h('dt', {}, 'Source'), h('dd', {}, h('details', {}, h('summary', {}, `${env.source.length} characters`), h('pre', {}, env.source)))] : null));
  }).catch((e) => envelopeBox.replaceChildren(h('p', { class: 'error' }, `envelope: ${e.message}`)));
  const resultUri = r?.result_uri ?? lastOf(['subtask_completed'])?.result_uri;
  if (resultUri) {
    resolveUri(resultUri).then((text) => resultBox.replaceChildren(h('pre', { class: 'result-text' }, readable(text))))
      .catch((e) => resultBox.replaceChildren(h('p', { class: 'error' }, `result: ${e.message}`)));
  }
  const ruled = [...mine].reverse().find((e) => e.kind === 'dispute_ruled' || e.kind === 'appeal_ruled');
  const resolved = [...mine].reverse().find((e) => e.kind === 'dispute_resolved');
  const disputed = [...mine].reverse().find((e) => e.kind === 'subtask_disputed' || e.kind === 'dispute_opened');
  if (disputed || ruled || resolved) {
    const verdict = h('p', { class: 'verdict', id: 'verdict' });
    if (resolved) {
      verdict.append(h('strong', {}, `Verdict: ${resolved.verdict}`), ` — ${(resolved.executor_share_bps / 100).toFixed(2)}% to the executor`);
    } else if (ruled) {
      verdict.append(h('strong', {}, 'Ruled'), ` — ${(ruled.executor_share_bps / 100).toFixed(2)}% to the executor; appeal window open`);
    } else {
      verdict.append('Disputed: waiting for the arbiter.');
    }
    const rationale = h('div', { class: 'rationale' });
    disputeBox.replaceChildren(h('h3', {}, 'Dispute'), verdict, rationale);
    if (ruled?.rationale_uri) {
      resolveUri(ruled.rationale_uri).then((text) => {
        rationale.replaceChildren(h('details', {}, h('summary', {}, 'Council rationale'), h('pre', {}, readable(text))));
      }).catch(() => {});
    }
  }
}

// ------------------------------------------------------------ history page --

async function historyPage(main) {
  const section = h('section', { class: 'card', 'aria-labelledby': 'hist-title' }, h('h1', { id: 'hist-title' }, 'Past plans'));
  main.append(section);
  let runs;
  try {
    runs = (await api('GET', '/api/runs')).runs;
  } catch (e) {
    section.append(h('p', { role: 'alert' }, e.message));
    return;
  }
  if (!runs.length) {
    section.append(h('p', { class: 'muted' }, 'No plans yet. ', h('a', { href: '/', 'data-nav': true }, 'Start one.')));
    return;
  }
  runs.sort((a, b) => b.created_at - a.created_at);
  const list = h('ul', { class: 'history' });
  section.append(h('p', { class: 'muted' }, 'Each tree is rebuilt by the indexer from chain events alone.'), list);
  for (const run of runs) {
    const tree = h('div', { class: 'lineage' });
    list.append(h('li', { dataset: { run: run.id } },
      h('a', { href: runUrl(run.id), 'data-nav': true }, h('code', {}, short(run.id))), ' ',
      h('span', { class: `badge state-${run.state}` }, run.state), ' ',
      h('span', { class: 'muted' }, new Date(run.created_at).toLocaleString()), tree));
    index(`/plans/${run.id}/tree`).then((t) => tree.replaceChildren(lineage(t))).catch((e) => {
      tree.replaceChildren(h('p', { class: 'muted' }, `lineage unavailable: ${e.message}`));
    });
  }
}

function lineage(tree) {
  const tasks = tree?.tasks ?? [];
  if (!tasks.length) return h('p', { class: 'muted' }, 'no tasks on chain');
  const children = (parent) => tasks.filter((t) => (parent === null ? t.depth === 0 : t.parent_id === parent && t.depth !== 0));
  const walk = (parent) => {
    const kids = children(parent);
    if (!kids.length) return null;
    return h('ul', { class: 'tree' }, kids.map((t) => h('li', {},
      h('code', { title: t.task_id }, short(t.task_id)), ' ',
      h('span', { class: `badge phase-${String(t.status).toLowerCase()}` }, t.status), ' ',
      t.capability ?? '?', ' · ', short(t.executor), ' · ', `${usdc(t.amount)} USDC`,
      t.flagged ? h('span', { class: 'warn' }, ` flagged: ${t.flagged}`) : null,
      walk(t.task_id))));
  };
  return h('div', {}, walk(null), h('p', { class: 'muted' }, `as of block ${tree.block}`));
}

// ------------------------------------------------------------- agents page --

async function agentsPage(main) {
  const section = h('section', { class: 'card', 'aria-labelledby': 'agents-title' }, h('h1', { id: 'agents-title' }, 'Agents'));
  main.append(section);
  const list = await agents(true);
  if (!list.length) {
    section.append(h('p', { class: 'muted' }, 'No agents indexed (is the orchestrator running with its indexer?).'));
    return;
  }
  section.append(h('div', { class: 'table-wrap' }, h('table', { class: 'agents' },
    h('caption', {}, 'Registered agents: prices from the registry, reliability from settled tasks'),
    h('thead', {}, h('tr', {}, ['Agent', 'Status', 'Offers (USDC)', 'Tasks', 'Completed', 'Disputed', 'Reliability', 'Earnings (USDC)', 'Median accept / complete'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, list.map((a) => h('tr', { dataset: { agent: a.agent } },
      h('td', {}, h('strong', {}, a.name), h('div', {}, h('code', { class: 'wrap' }, a.agent))),
      h('td', {}, a.status),
      h('td', {}, Object.entries(a.offers ?? {}).map(([c, p]) => h('div', {}, `${c}: ${usdc(p)}`))),
      h('td', { class: 'num' }, a.stats.tasks),
      h('td', { class: 'num' }, a.stats.completed),
      h('td', { class: 'num' }, a.stats.disputed),
      h('td', {}, reliability(a)),
      h('td', { class: 'num' }, usdc(a.stats.earnings)),
      h('td', {}, `${a.stats.median_accept_secs ?? '—'} s / ${a.stats.median_completion_secs ?? '—'} s`)))))));
}

// ------------------------------------------------------------------- start --

function setupToken() {
  // A link may carry the token in its fragment (never sent to the server);
  // it is kept in this browser and removed from the address bar.
  const frag = new URLSearchParams(location.hash.slice(1));
  if (frag.get('token')) {
    localStorage.setItem(TOKEN_KEY, frag.get('token'));
    history.replaceState({}, '', location.pathname + location.search);
  }
  const input = $('#token');
  input.value = token();
  $('#token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    localStorage.setItem(TOKEN_KEY, input.value.trim());
    banner(input.value.trim() ? '' : 'Token cleared: state changes will be refused.');
  });
}

setupToken();
loadHealth().then(route);
