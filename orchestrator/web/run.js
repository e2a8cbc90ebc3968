// The run page: state, live DAG and sub-task table, the checkpoints (an
// open one with approve and reject), the event log (from the run's event
// stream), and the drawer kept in step with every event.

import { drawDag } from './dag.js';
import {
  usdc, short, parseJson, readable, quadrantOf, decisionOutcome, FINAL, LIVE, EVENT_KINDS, checkpointsOf,
  gateStateText, conditionNote, eventNote, stepName,
} from './format.js';
import { $, h, act, banner, errorBox } from './dom.js';
import { api, health, operatorMode, runUrl, session } from './api.js';
import { openStream } from './sse.js';
import { grantControl } from './sponsor.js';
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
    main.append(h('section', { class: 'card' }, h('h1', {}, e.status === 401 ? 'Sign in to see this run' : 'Run not found'), h('p', { role: 'alert' }, e.message)));
    return;
  }
  if (!wanted && health) history.replaceState({}, '', runUrl(id));
  const state = { id, view, events: [], list: await agents(), selected: null };
  const head = h('div', { class: 'run-head' });
  const graph = h('div', { class: 'dag-wrap' });
  const checks = h('div', { class: 'checks' });
  const table = h('div', { class: 'table-wrap' });
  const log = h('ol', { class: 'events', 'aria-label': 'Run events', 'aria-live': 'polite' });
  const body = h('div', {});
  // Operator mode: the sponsor's grant and its revocation, drawn once (a
  // transaction's note survives the stream's redraws).
  const grant = operatorMode() && session() && view.state !== 'proposed' ? grantControl(id) : '';
  main.append(h('section', { class: 'card run', 'aria-labelledby': 'run-title', dataset: { run: id } },
    head, body, graph, checks, table, grant,
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
        // Not null: replaceChildren writes null as the text "null".
        : '',
      h('p', { class: 'share' }, 'Share: ', h('a', { href: runUrl(id), id: 'share-link' }, `${location.origin}${runUrl(id)}`)),
      h('div', { class: 'actions' }, cancel), err);
    if (v.state === 'proposed') {
      const cls = v.classification ? parseJson(v.classification) : null;
      planCard(v).then((card) => body.replaceChildren(
        cls ? classificationCard(cls, quadrantOf(cls), null) : h('div'), card));
      graph.replaceChildren();
      checks.replaceChildren();
      table.replaceChildren();
      return;
    }
    body.replaceChildren();
    const rows = new Map(v.subtasks.map((r) => [r.idx, r]));
    const cps = checkpointsOf(v.plan, v.gates);
    graph.replaceChildren(drawDag(v.plan.subtasks, {
      label: (t) => {
        const r = rows.get(t.index);
        return [v.plan.groups?.length ? `${t.path} ${t.capability}` : t.capability, nameOf(r?.executor ?? t.executor, state.list), `${usdc(t.cost)} USDC${r?.attempt ? ` · attempt ${r.attempt}` : ''}`];
      },
      phase: (t) => rows.get(t.index)?.phase ?? 'waiting',
      onOpen: (t) => openSubtask(state, t.index, refresh),
      selected: state.selected,
      checkpoints: cps,
      conditions: v.conditions,
      onGate: (cp) => focusCheckpoint(checks, cp.name),
    }));
    renderCheckpoints(cps, live);
    table.replaceChildren(h('table', { class: 'subtasks' },
      h('caption', {}, 'Sub-tasks'),
      h('thead', {}, h('tr', {}, ['#', 'Capability', 'Executor', 'Phase', 'Task id', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, v.plan.subtasks.map((t) => {
        const r = rows.get(t.index);
        return h('tr', { dataset: { index: t.index } },
          h('td', {}, v.plan.groups?.length ? `#${t.index} · ${t.path}` : `#${t.index}`),
          h('td', {}, t.capability, conditionNote(t, v.conditions) ? h('div', { class: 'muted cond' }, conditionNote(t, v.conditions)) : null),
          h('td', {}, nameOf(r?.executor ?? t.executor, state.list)),
          h('td', {}, h('span', { class: `badge phase-${r?.phase ?? 'waiting'}` }, r?.phase ?? 'waiting')),
          h('td', {}, r?.task_id ? h('code', { title: r.task_id }, short(r.task_id)) : '—'),
          h('td', {}, h('button', { type: 'button', 'aria-label': `Details of sub-task ${t.index}`, onclick: () => openSubtask(state, t.index, refresh) }, 'Details')));
      }))));
    if ($('#drawer').hidden) state.selected = null;
    else if (state.selected !== null) openSubtask(state, state.selected, refresh, false);
  };

  // The checkpoints section is rebuilt only when something in it changes,
  // so a reason being typed (and the focus) survives the stream's events.
  let shownCheckpoints = null;
  const renderCheckpoints = (cps, live) => {
    const ofKind = (kinds) => new Map(state.events.filter((e) => kinds.includes(e.kind)).map((e) => [e.name, e]));
    const reached = ofKind(['checkpoint_reached']);
    const decided = ofKind(['checkpoint_approved', 'checkpoint_rejected']);
    const failures = state.events.filter((e) => e.kind === 'decision_applied' && e.ok === false).length;
    const key = JSON.stringify([cps.map((c) => [c.name, c.state, c.by]), live, [...reached.keys()], [...decided.keys()], failures]);
    if (key === shownCheckpoints) return;
    shownCheckpoints = key;
    if (!cps.length) {
      checks.replaceChildren();
      return;
    }
    const plan = state.view.plan;
    const capability = (i) => `${stepName(plan, i)} ${plan.subtasks.find((t) => t.index === i)?.capability ?? ''}`.trim();
    checks.replaceChildren(h('section', { class: 'checkpoints', 'aria-labelledby': 'cp-title' },
      h('h2', { id: 'cp-title' }, 'Checkpoints'),
      h('ul', {}, cps.map((c) => checkpointRow(c, {
        live, capability, reached: reached.get(c.name), decided: decided.get(c.name),
        decide: (decision, reason) => api('POST', `/api/runs/${id}/checkpoints/${encodeURIComponent(c.name)}`,
          reason ? { decision, reason } : { decision }).then(refresh),
      })))));
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
  // In operator mode the stream needs the sponsor's session, which an
  // EventSource cannot send: it is read with fetch instead.
  const source = operatorMode()
    ? openStream(`/api/runs/${id}/events`, session()?.token ?? '', (msg) => onEvent(msg), {
      onError: (status) => banner(`The run's event stream was refused (${status}): sign in again to follow it live.`),
    })
    : new EventSource(`/api/runs/${id}/events`);
  const onEvent = (msg) => {
    const ev = parseJson(msg.data) ?? {};
    ev.kind = ev.kind ?? msg.type;
    ev.seq = Number(msg.lastEventId);
    if (state.events.some((e) => e.seq === ev.seq)) return;
    state.events.push(ev);
    log.append(h('li', { dataset: { kind: ev.kind } },
      h('code', {}, ev.kind), Number.isInteger(ev.index) ? ` #${ev.index}` : '',
      ev.tx_hash ? h('span', { class: 'muted' }, ` tx ${short(ev.tx_hash)}`) : '',
      ev.verdict ? ` verdict ${ev.verdict} (${ev.executor_share_bps} bps to the executor)` : '',
      ev.kind === 'output_flagged' ? h('span', { class: 'flag' }, ` ${(ev.rules ?? []).join(', ')}`) : '',
      ev.kind === 'decision_applied' ? decisionNote(ev) : '',
      eventNote(ev, state.view?.plan) ? h('span', { class: 'muted' }, ` ${eventNote(ev, state.view?.plan)}`) : ''));
    if (FINAL.has(ev.kind)) source.close();
    refresh();
  };
  if (source instanceof EventTarget) {
    for (const kind of EVENT_KINDS) source.addEventListener(kind, onEvent);
    source.onmessage = onEvent;
  }
  onLeave(() => source.close());
}

/// A decision in the event log: its outcome, marked as a failure when its
/// transaction failed.
function decisionNote(ev) {
  const { ok, text } = decisionOutcome(ev);
  return h('span', { class: ok ? 'muted' : 'error decision-failed' }, ` ${text}`);
}

/// A checkpoint's row: its state, what it follows and its timeout policy;
/// once reached, the outputs so far; while it waits on a live run, a
/// reason and the approve and reject buttons.
function checkpointRow(c, { live, capability, reached, decided, decide }) {
  const follows = c.after.map((i) => capability(i)).join(', ');
  const said = decided?.reason ? `: “${decided.reason}”` : '';
  const li = h('li', { dataset: { gate: c.name, state: c.state }, tabindex: -1, class: c.open ? 'open' : null },
    h('strong', {}, c.name), ' ', h('span', { class: `badge gate-${c.state}` }, c.state),
    h('div', {}, `${gateStateText(c)}${said}`),
    h('div', { class: 'muted' }, `After ${follows} · on timeout: ${c.timeout}`));
  if (c.open && reached?.outputs && Object.keys(reached.outputs).length) {
    li.append(h('details', { class: 'outputs', open: true },
      h('summary', {}, 'Outputs so far'),
      Object.entries(reached.outputs).flatMap(([i, text]) => [
        h('div', { class: 'muted' }, capability(Number(i))), h('pre', {}, readable(text))])));
  }
  if (c.open && live) {
    const reason = h('input', { id: `cp-reason-${c.name}`, autocomplete: 'off', placeholder: 'optional; kept with the decision' });
    const approve = h('button', { type: 'button', class: 'primary', id: `cp-approve-${c.name}` }, `Approve ${c.name}`);
    const reject = h('button', { type: 'button', class: 'danger', id: `cp-reject-${c.name}` }, `Reject ${c.name}`);
    const err = errorBox();
    const note = h('p', { class: 'ok', 'aria-live': 'polite' });
    const send = (button, decision) => act(err, button, async () => {
      await decide(decision, reason.value.trim());
      return true;
    }).then((ok) => {
      if (!ok) return;
      note.textContent = `${decision === 'approve' ? 'Approval' : 'Rejection'} queued; the runner applies it on the next block.`;
      approve.disabled = true;
      reject.disabled = true;
    });
    approve.addEventListener('click', () => send(approve, 'approve'));
    reject.addEventListener('click', () => send(reject, 'reject'));
    li.append(h('div', { class: 'cp-decide' },
      h('label', { for: `cp-reason-${c.name}` }, `Reason for checkpoint ${c.name}`), reason,
      h('div', { class: 'actions' }, approve, reject), note, err));
  }
  return li;
}

/// Focuses the approve button of checkpoint `name` when it waits, else its
/// row (names may start with a digit: no CSS id selectors).
function focusCheckpoint(root, name) {
  const approve = document.getElementById(`cp-approve-${name}`);
  if (approve && !approve.disabled) {
    approve.focus();
    return;
  }
  const row = [...root.querySelectorAll('li[data-gate]')].find((li) => li.dataset.gate === name);
  row?.scrollIntoView({ block: 'nearest' });
  row?.focus();
}
