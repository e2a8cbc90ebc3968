// The history page (past plans with their on-chain lineage) and the agents
// table.

import { usdc, short, mergeNote, nestByPath, nestSummary, pathSegments } from './format.js';
import { h } from './dom.js';
import { api, index, runUrl } from './api.js';
import {
  agents, reliability, recordText, weighedText, identityText, feedbackSummary, feedbackValue, proofHref,
  capabilities, rankingPath, nameOf, catalogue, resultFields, fieldText, cheapestPrice, offererRecord, offeredText,
} from './agents.js';

export async function historyPage(main) {
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

/// A plan's lineage, children under their parents. A plan with nested
/// plans (step paths of more than one segment) is drawn as its nesting: its
/// steps in path order, each nested plan a collapsible group; tasks without
/// a path still hang under their parents.
export function lineage(tree) {
  const tasks = tree?.tasks ?? [];
  if (!tasks.length) return h('p', { class: 'muted' }, 'no tasks on chain');
  const nest = nestByPath(tasks);
  // In a nested plan, a task with a step path is placed by the nesting.
  const placed = (t) => nest !== null && pathSegments(t.path) !== null;
  const children = (parent) => tasks.filter((t) => !placed(t)
    && (parent === null ? t.depth === 0 : t.parent_id === parent && t.depth !== 0));
  const item = (t) => h('li', {},
    placed(t) ? [h('code', { class: 'path', title: 'step in the plan' }, t.path), ' '] : null,
    h('code', { title: t.task_id }, short(t.task_id)), ' ',
    h('span', { class: `badge phase-${String(t.status).toLowerCase()}` }, t.status), ' ',
    t.capability ?? '?', ' · ', short(t.executor), ' · ', `${usdc(t.amount)} USDC`,
    t.subtree_cost && t.subtree_cost !== t.amount ? h('span', { class: 'muted' }, ` · subtree ${usdc(t.subtree_cost)} USDC`) : null,
    mergeNote(t, short) ? h('span', { class: 'merge' }, ` ${mergeNote(t, short)}`) : null,
    t.flagged ? h('span', { class: 'warn' }, ` flagged: ${t.flagged}`) : null,
    walk(t.task_id));
  const walk = (parent) => {
    const kids = children(parent);
    if (!kids.length) return null;
    return h('ul', { class: 'tree' }, kids.map(item));
  };
  const entry = (e) => (e.task ? item(e.task) : h('li', { class: 'nested', dataset: { path: e.group.path } },
    h('details', { open: true }, h('summary', {}, nestSummary(e.group)),
      h('ul', { class: 'tree' }, e.group.entries.map(entry)))));
  const drawn = nest === null ? walk(null) : h('ul', { class: 'tree' }, nest.entries.map(entry), children(null).map(item));
  return h('div', {}, drawn, h('p', { class: 'muted' }, `as of block ${tree.block}`));
}

// ------------------------------------------------------------- agents page --

export async function agentsPage(main) {
  const section = h('section', { class: 'card', 'aria-labelledby': 'agents-title' }, h('h1', { id: 'agents-title' }, 'Agents'));
  main.append(section);
  const list = await agents(true);
  if (!list.length) {
    section.append(h('p', { class: 'muted' }, 'No agents indexed (is the orchestrator running with its indexer?).'));
    main.append(await cataloguePanel(list));
    return;
  }
  const cols = ['Agent', 'Status', 'Offers (USDC)', 'Record', 'Reliability', 'Weighed (funders)', 'ERC-8004', 'Feedback', 'Earnings (USDC)', 'Median accept / complete'];
  section.append(h('div', { class: 'table-wrap' }, h('table', { class: 'agents' },
    h('caption', {}, 'Registered agents: prices from the registry; reliability from settled tasks weighed by the money and the funders behind them; feedback counted only when it matches a settlement'),
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, list.map((a) => h('tr', { dataset: { agent: a.agent } },
      h('td', {}, h('strong', {}, a.name), h('div', {}, h('code', { class: 'wrap' }, a.agent))),
      h('td', {}, a.status),
      h('td', {}, Object.entries(a.offers ?? {}).map(([c, p]) => h('div', {}, `${c}: ${usdc(p)}`))),
      h('td', { class: 'record' }, recordText(a)),
      h('td', { class: 'reliability' }, reliability(a)),
      h('td', { class: 'weighed' }, weighedText(a)),
      h('td', { class: 'identity' }, identityText(a) ?? '—'),
      h('td', { class: 'feedback' }, feedbackCell(a)),
      h('td', { class: 'num' }, usdc(a.stats.earnings)),
      h('td', {}, `${a.stats.median_accept_secs ?? '—'} s / ${a.stats.median_completion_secs ?? '—'} s`)))))));
  section.append(rankingPicker(list));
  main.append(await cataloguePanel(list));
}

/// The capability catalogue plans are made from: each capability, what it
/// says of itself (description, phrasings, the fields of its result a
/// condition may read) and who offers it at what price with what record.
/// Everything here comes from cards anyone can publish: it is only ever
/// text nodes.
async function cataloguePanel(list) {
  const panel = h('section', { class: 'card catalogue', 'aria-labelledby': 'catalogue-title' }, h('h2', { id: 'catalogue-title' }, 'Capabilities'));
  let body;
  try {
    body = await catalogue();
  } catch (e) {
    panel.append(h('p', { role: 'alert' }, e.message));
    return panel;
  }
  panel.append(h('p', { class: 'muted' }, body.source === 'built-in'
    ? 'The built-in capabilities only: this orchestrator runs without an index, so it knows no registered capability.'
    : 'Every capability active agents offer on chain, described by their cards (a built-in capability by Tessera), with its offerers cheapest first. A plan\'s condition may read the result fields listed.'));
  const entries = Array.isArray(body.entries) ? body.entries : [];
  const cols = ['Capability', 'What it does', 'Result fields', 'Offered by (USDC · record)'];
  panel.append(h('div', { class: 'table-wrap' }, h('table', { class: 'capabilities' },
    h('caption', {}, 'The capability catalogue: descriptors from the cards, prices from the registry, records weighed by the money behind them'),
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, entries.map((e) => catalogueRow(e, list))))));
  return panel;
}

function catalogueRow(e, list) {
  const d = e.describe ?? {};
  const fields = resultFields(d.result);
  const cheapest = cheapestPrice(e);
  return h('tr', { dataset: { capability: String(e.name) } },
    h('td', {}, h('strong', {}, String(e.name)), e.builtin ? h('div', { class: 'muted' }, 'built in') : null),
    h('td', {},
      h('div', { class: 'description' }, d.description ?? '—'),
      (d.phrasings ?? []).length
        ? h('ul', { class: 'phrasings', 'aria-label': 'phrasings' }, d.phrasings.map((p) => h('li', {}, `“${p}”`)))
        : null),
    h('td', {}, fields.length
      ? h('ul', { class: 'fields' }, fields.map((f) => h('li', {}, h('code', {}, fieldText(f)))))
      : h('span', { class: 'muted' }, 'no result schema published')),
    h('td', { class: 'offerers' },
      h('div', {}, offeredText(e), cheapest === null ? '' : ` · from ${usdc(cheapest)}`),
      (e.offerers ?? []).length
        ? h('ul', {}, e.offerers.map((o) => h('li', { dataset: { agent: String(o.agent) } },
          h('strong', {}, typeof o.card === 'string' && o.card ? o.card : nameOf(String(o.agent), list)),
          ` · ${usdc(o.price)} · ${offererRecord(o)}`,
          o.describe ? h('span', { class: 'muted' }, ' · describes it its own way') : null)))
        : null));
}

/// The feedback summary, and the latest entries each with its proof: the
/// settled task it names, or why it matches none.
function feedbackCell(a) {
  const summary = feedbackSummary(a);
  if (summary === null) return '—';
  const latest = a.feedback?.latest ?? [];
  if (!latest.length) return summary;
  return h('details', {}, h('summary', {}, summary), h('ul', { class: 'feedback-latest' }, latest.map((f) => h('li', {},
    `${feedbackValue(f)}${f.tag1 ? ` (${f.tag1})` : ''} by ${short(f.client)}`,
    f.revoked ? ' · revoked' : null, ' · ',
    proofHref(f)
      ? h('a', { href: proofHref(f), class: 'proof', title: `feedback tx ${f.tx}` }, `task ${short(f.task_id)}`)
      : h('span', { class: 'warn' }, `not matched: ${f.why ?? 'no settlement named'}`)))));
}

/// A capability and a policy, and the orchestrator's ranking of the agents
/// offering it, each with why it stands where it does.
function rankingPicker(list) {
  const caps = capabilities(list);
  const capability = h('select', { id: 'rank-capability' }, caps.map((c) => h('option', { value: c }, c)));
  const policy = h('select', { id: 'rank-policy' }, ['balanced', 'reliable', 'cheapest'].map((p) => h('option', { value: p }, p)));
  const out = h('div', { class: 'ranking', 'aria-live': 'polite' });
  let asked = 0;
  const show = async () => {
    if (!capability.value) return;
    const mine = ++asked;
    out.replaceChildren(h('p', { class: 'muted' }, 'ranking…'));
    try {
      const r = await api('GET', rankingPath(capability.value, policy.value));
      // A later choice's answer wins, whatever order they arrive in.
      if (mine !== asked) return;
      if (!r.agents.length) {
        out.replaceChildren(h('p', { class: 'muted' }, `No active agent offers ${r.capability}.`));
        return;
      }
      out.replaceChildren(h('p', { class: 'muted' }, 'The first is who the policy would choose, and why; every other says why it lost to the one just above it. Records are weighed for this orchestrator\'s sponsor, whose own tasks count double (the table above weighs them for no one).'),
        h('ol', { class: 'ranking' }, r.agents.map((x) => h('li', { dataset: { agent: x.agent } },
          h('strong', {}, nameOf(x.agent, list)), ` · ${usdc(x.price)} USDC · score ${(x.score_bps / 100).toFixed(2)}`,
          h('span', { class: 'muted' }, ` · R ${Math.round(x.reliability * 100)}% · L ${x.latency.toFixed(2)} · P ${x.price_factor.toFixed(2)}`),
          h('div', { class: 'reason' }, x.reason)))));
    } catch (e) {
      if (mine === asked) out.replaceChildren(h('p', { role: 'alert' }, e.message));
    }
  };
  capability.addEventListener('change', show);
  policy.addEventListener('change', show);
  const picker = h('section', { class: 'rank-picker', 'aria-labelledby': 'rank-title' }, h('h2', { id: 'rank-title' }, 'Who would be chosen'),
    caps.length
      ? h('p', {}, h('label', { for: 'rank-capability' }, 'Capability '), capability, ' ', h('label', { for: 'rank-policy' }, 'Policy '), policy)
      : h('p', { class: 'muted' }, 'No active agent offers anything.'),
    out);
  show();
  return picker;
}
