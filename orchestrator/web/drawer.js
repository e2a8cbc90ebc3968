// The sub-task drawer: transactions, why it was skipped, who declined it
// and why, envelope, result, dispute, the decisions applied to it
// (failures with their error and revert), and the decisions its phase allows.

import { usdc, parseJson, readable, decisionOutcome, rulingOf, eventNote, declineNote, short, LIVE } from './format.js';
import { $, h, act, errorBox } from './dom.js';
import { api, resolveUri } from './api.js';
import { nameOf, offersFor, offerLabel } from './agents.js';

export let drawerReturn = null;

export function closeDrawer() {
  const d = $('#drawer');
  if (!d || d.hidden) return;
  d.hidden = true;
  document.body.classList.remove('drawer-open');
  drawerReturn?.focus?.();
  drawerReturn = null;
}


/// Close on the button and on Escape.
export function setupDrawer() {
  $('#drawer-close')?.addEventListener('click', () => closeDrawer());
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') closeDrawer();
  });
}

/// The drawer of sub-task `index`: transactions, envelope, result, dispute,
/// and the decisions its phase allows.
export async function openSubtask(state, index, refresh, focus = true) {
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
    ['decline', lastOf(['subtask_declined'])],
    ['refund', lastOf(['subtask_refunded', 'subtask_cancelled', 'subtask_expired'])],
  ].filter(([, e]) => e?.tx_hash);
  const phase = r?.phase ?? 'waiting';
  const skipped = phase === 'skipped' ? [...mine].reverse().find((e) => e.kind === 'subtask_skipped') : null;
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
  if (['created', 'accepted', 'expired', 'cancelled', 'declined'].includes(phase) && live) {
    const retry = h('button', { type: 'button', id: 'retry' }, 'Retry (same executor, fresh deadline)');
    retry.addEventListener('click', () => decide(retry, `/subtasks/${index}/retry`));
    const pick = h('select', { id: 'new-executor', 'aria-label': 'New executor' },
      offersFor(state.list, t.capability).map((a) => h('option', { value: a.agent }, offerLabel(a, t.capability))));
    const change = h('button', { type: 'button', id: 'change-executor' }, 'Change executor');
    change.addEventListener('click', () => decide(change, `/subtasks/${index}/executor`, { executor: pick.value }));
    actions.append(h('h3', {}, 'Recover'), h('div', { class: 'actions' }, retry), pick, h('div', { class: 'actions' }, change));
  }

  // Decisions applied to this sub-task; a failed one says why (error, revert).
  const decisions = mine.filter((e) => e.kind === 'decision_applied');
  const decisionsBox = decisions.length
    ? h('div', { class: 'decisions', id: 'decisions' },
      h('h3', {}, 'Decisions'),
      h('ul', {}, decisions.map((e) => {
        const { ok, text } = decisionOutcome(e);
        return h('li', { class: ok ? 'decision-ok' : 'decision-failed', dataset: { ok: String(ok) }, role: ok ? null : 'alert' },
          h('span', { class: `badge ${ok ? 'decision-applied' : 'decision-failure'}` }, ok ? 'applied' : 'failed'), ' ', text);
      })))
    : null;

  // Every executor that said no to this sub-task, on chain, and why
  // (earlier attempts too: a reassigned sub-task keeps its history).
  const declines = mine.filter((e) => e.kind === 'subtask_declined');
  const name = (a) => {
    const known = nameOf(a, state.list);
    return known === short(a) ? known : `${known} (${short(a)})`;
  };
  const declinedBox = declines.length
    ? h('div', { class: 'declines', id: 'declines', role: 'note' },
      h('h3', {}, 'Declined'),
      h('ul', {}, declines.map((e) => h('li', { dataset: { attempt: String(e.attempt ?? '') } },
        declineNote(e, name),
        Number.isInteger(e.attempt) && e.attempt !== attempt ? h('span', { class: 'muted' }, ` (attempt ${e.attempt})`) : ''))))
    : null;

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
      // Numbered from 0, as the CLI and the API number attempts.
      h('dt', {}, 'Attempt'), h('dd', {}, String(attempt)),
      h('dt', {}, 'Task id'), h('dd', {}, r?.task_id ? h('code', { class: 'wrap' }, r.task_id) : '—'),
      h('dt', {}, 'Needs'), h('dd', {}, t.depends_on?.length ? t.depends_on.map((d) => `#${d}`).join(', ') : 'nothing')),
    h('h3', {}, 'Transactions'),
    txs.length
      ? h('ul', { class: 'txs' }, txs.map(([what, e]) => h('li', { dataset: { tx: what } },
        h('span', { class: 'tx-kind' }, what), ' ', h('code', { class: 'wrap', title: `block ${e.block}` }, e.tx_hash),
        ' ', h('button', { type: 'button', class: 'icon', 'aria-label': `Copy the ${what} transaction hash`, onclick: () => navigator.clipboard?.writeText(e.tx_hash) }, 'Copy'))))
      : h('p', { class: 'muted' }, 'none yet'),
    // Not null: replaceChildren writes null as the text "null".
    r?.task_id ? h('p', {}, h('a', { href: `/index/api/tasks/${r.task_id}`, target: '_blank', rel: 'noopener' }, 'Full task history (indexer)')) : '',
    skipped ? h('p', { class: 'muted skipped-why' }, eventNote(skipped)) : '',
    declinedBox ?? '',
    h('h3', {}, 'Envelope'), envelopeBox,
    h('h3', {}, 'Result'), resultBox,
    flagBox ?? '',
    decisionsBox ?? '',
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
        const { by, prose, flags } = rulingOf(text);
        rationale.replaceChildren(
          h('h4', {}, by ? `Rationale, by ${by}` : 'Rationale'),
          h('p', { class: 'rationale-text' }, prose),
          flags.length ? h('p', { class: 'muted' }, `Noted: ${flags.join(', ')}`) : '');
      }).catch((e) => rationale.replaceChildren(h('p', { class: 'error' }, `rationale: ${e.message}`)));
    }
  }
}
