// The brief page: brief and material in, classification and the plan card
// (or the refusal) out.

import { h, act, errorBox } from './dom.js';
import { api, runUrl } from './api.js';
import { go } from './nav.js';
import { planCard } from './plan-card.js';

export const EXAMPLES = [
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

export function briefPage(main) {
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

export async function showOutcome(box, out) {
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

export function classificationCard(c, quadrant, ceremony) {
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
