// The plan card of a proposed run: DAG, sub-task table with edits (the
// brief's words that chose each capability, and why each executor was
// chosen), the plan's strategy (checkpoints,
// conditions, recovery), totals, the high-stakes confirmation, approve and
// cancel.

import { drawDag } from './dag.js';
import {
  usdc, short, duration, nestedHeaders, checkpointsOf, conditionNote, recoverySummary, choiceFor, choiceText, quietText, stepName,
  chosenByText,
} from './format.js';
import { $, h, act, errorBox } from './dom.js';
import { api, operatorMode, runUrl } from './api.js';
import { reviewGrant } from './sponsor.js';
import { agents, nameOf, offersFor, offerLabel } from './agents.js';
import { go } from './nav.js';

/// The plan card of a proposed run: DAG, sub-task table with edits,
/// totals, the high-stakes confirmation, approve and cancel.
export async function planCard(view, { unassigned = [] } = {}) {
  const list = await agents();
  const plan = view.plan;
  const id = view.id;
  const high = view.stakes === 'high';
  const err = errorBox();
  const card = h('section', { class: 'card plan-card', 'aria-labelledby': 'plan-title', dataset: { run: id, stakes: view.stakes } });
  const rerender = async (next) => card.replaceWith(await planCard(next, { unassigned }));
  const edit = (button, body) => act(err, button, async () => rerender(await api('POST', `/api/runs/${id}/edit`, body)));

  // A nested plan's leaves carry step paths; each nested plan gets a header
  // row (its goal and budget share) before its first leaf.
  const heads = nestedHeaders(plan);
  const nested = heads.size > 0;
  const cps = checkpointsOf(plan, view.gates);
  const dag = h('div', { class: 'dag-wrap' }, drawDag(plan.subtasks, {
    label: (t) => [nested ? `${t.path} ${t.capability}` : t.capability, t.executor ? nameOf(t.executor, list) : 'unassigned', `${usdc(t.cost)} USDC`],
    phase: () => 'proposed',
    onOpen: (t) => $(`#exec-${t.index}`, card)?.focus(),
    checkpoints: cps,
    conditions: view.conditions,
    // Names may start with a digit: no CSS id selector.
    onGate: (cp) => [...card.querySelectorAll('.strategy li[data-gate]')].find((li) => li.dataset.gate === cp.name)?.focus(),
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
    const opened = (heads.get(t.index) ?? []).map((g) => h('tr', { class: 'nest-row', dataset: { path: g.path } },
      h('td', { colspan: 6 }, h('strong', {}, `${'▸ '.repeat(g.level - 1)}${g.path} nested plan`),
        ` — ${g.spec} · share ${g.budget === null ? '—' : usdc(g.budget)} USDC`,
        view.conditions?.[g.path] ? h('div', { class: 'cond' }, h('span', { class: 'badge' }, 'if'), ` runs only if ${view.conditions[g.path]}; otherwise every step of it is skipped, never funded`) : null)));
    return [...opened, h('tr', { dataset: { index: t.index } },
      h('td', {}, nested ? `#${t.index} · ${t.path}` : `#${t.index}`),
      h('td', {}, h('strong', {}, t.capability), h('div', { class: 'muted spec' }, t.spec),
        chosenByText(t) ? h('div', { class: 'muted chosen-by' }, chosenByText(t)) : null,
        conditionNote(t, view.conditions) ? h('div', { class: 'cond' }, h('span', { class: 'badge' }, 'if'), ` ${conditionNote(t, view.conditions)}`) : null),
      h('td', {}, select, unassigned.includes(t.index) && !t.executor ? h('div', { class: 'warn' }, 'no active agent offers this: pick one') : null,
        choiceFor(plan, t) ? h('div', { class: 'muted choice' }, choiceText(choiceFor(plan, t), (a) => nameOf(a, list))) : null,
        choiceFor(plan, t)?.quiet ? h('div', { class: 'warn no-sign' }, quietText(plan)) : null),
      h('td', { class: 'num' }, `${usdc(t.cost)}`),
      h('td', {}, t.depends_on?.length ? t.depends_on.map((d) => stepName(plan, d)).join(', ') : '—'),
      h('td', { class: 'row-actions' }, up, down, drop))];
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
  // Operator mode: the sponsor sees the grant, then signs it in the wallet.
  const grantPanel = h('div', { class: 'grant-panel' });
  approve.addEventListener('click', () => act(err, approve, async () => {
    if (operatorMode()) {
      await reviewGrant(grantPanel, view, confirmation);
      return;
    }
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
      h('tbody', {}, rows.flat()))),
    strategy(plan, cps, view.conditions),
    h('dl', { class: 'totals' },
      h('dt', {}, 'Total cost'), h('dd', { id: 'total-cost' }, `${usdc(view.total_cost)} USDC`),
      h('dt', {}, 'Estimated duration'), h('dd', {}, duration(view.estimated_duration_secs)),
      h('dt', {}, 'Budget'), h('dd', {}, `${usdc(plan.budget)} USDC`)),
    high && view.confirmation ? h('p', { class: 'terms' }, 'To pay: ', h('strong', {}, `${view.confirmation.amount} USDC`), ' to ', view.confirmation.recipients.map((r) => h('code', {}, r)).reduce((acc, x, i) => (i ? [...acc, ', ', x] : [x]), []), view.confirmation.budget ? [', within a budget of ', h('strong', {}, `${view.confirmation.budget} USDC`)] : null) : null,
    h('div', { class: 'review-toggle' }, review, h('label', { for: 'review-mode' }, high ? 'Review each result before paying (required for high stakes)' : 'Review each result before paying (otherwise results are paid on delivery)')),
    confirmBox,
    h('div', { class: 'actions' }, approve, cancel),
    grantPanel,
    err,
  ].filter(Boolean));
  return card;
}

/// What the plan decides as it runs: its checkpoints (after which steps,
/// timeout and policy), the conditions of its conditional steps, the
/// recovery line and the selection policy.
function strategy(plan, cps, conditions) {
  const capability = (i) => plan.subtasks.find((t) => t.index === i)?.capability ?? '';
  const conditional = plan.subtasks.filter((t) => conditionNote(t, conditions));
  return h('section', { class: 'strategy', 'aria-labelledby': 'strategy-title' },
    h('h3', { id: 'strategy-title' }, 'How the plan runs'),
    cps.length ? [
      h('h4', {}, 'Checkpoints'),
      h('ul', { class: 'plan-checkpoints' }, cps.map((c) => h('li', { dataset: { gate: c.name }, tabindex: -1 },
        h('strong', {}, c.name), ` — waits for an approver after ${c.after.map((i) => `${stepName(plan, i)} ${capability(i)}`.trim()).join(', ')}; `,
        `on timeout: ${c.timeout}`))),
    ] : null,
    conditional.length ? [
      h('h4', {}, 'Conditions'),
      h('ul', { class: 'plan-conditions' }, conditional.map((t) => h('li', { dataset: { index: t.index } },
        h('strong', {}, `${stepName(plan, t.index)} ${t.capability}`), ` ${conditionNote(t, conditions)}; otherwise skipped, never funded`))),
    ] : null,
    h('p', { class: 'recovery' }, recoverySummary(plan)),
    h('p', { class: 'muted selection' }, `Executors the orchestrator picks are chosen by the ${plan.selection ?? 'balanced'} policy.`));
}
