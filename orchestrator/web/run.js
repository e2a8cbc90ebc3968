// The run page: state, live DAG and sub-task table, the event log (from the
// run's event stream), and the drawer kept in step with every event.

import { drawDag } from './dag.js';
import { usdc, short, parseJson, quadrantOf, decisionOutcome, FINAL, LIVE, EVENT_KINDS } from './format.js';
import { $, h, act, banner, errorBox } from './dom.js';
import { api, health, runUrl } from './api.js';
import { agents, nameOf } from './agents.js';
import { onLeave } from './nav.js';
import { classificationCard } from './brief.js';
import { planCard } from './plan-card.js';
import { openSubtask } from './drawer.js';

export async function runPage(main, id) {
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
      // Shown from approval on, zeros included, so the page does not shift
      // under the pointer when the first money moves.
      v.spend && v.state !== 'proposed'
        ? h('p', { id: 'run-spend' }, `Budget ${usdc(v.plan.budget)} USDC · funded ${usdc(v.spend.committed)} · paid ${usdc(v.spend.paid)} · refunded ${usdc(v.spend.refunded)} USDC`)
        : null,
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
      ev.kind === 'output_flagged' ? h('span', { class: 'flag' }, ` ${(ev.rules ?? []).join(', ')}`) : '',
      ev.kind === 'decision_applied' ? decisionNote(ev) : ''));
    if (FINAL.has(ev.kind)) source.close();
    refresh();
  };
  for (const kind of EVENT_KINDS) source.addEventListener(kind, onEvent);
  source.onmessage = onEvent;
  onLeave(() => source.close());
}

/// A decision in the event log: its outcome, marked as a failure when its
/// transaction failed.
function decisionNote(ev) {
  const { ok, text } = decisionOutcome(ev);
  return h('span', { class: ok ? 'muted' : 'error decision-failed' }, ` ${text}`);
}
