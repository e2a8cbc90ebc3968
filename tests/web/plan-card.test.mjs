// Browser scenarios for the web plan card, run by `cargo test -p tessera
// --test web` against a real stack on anvil (see cli/tests/web.rs, which
// sets the environment below). playwright-core drives Debian's Chromium.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through \`cargo test -p tessera --test web\``);
  return v;
};
const BASE = need('TESSERA_UI_URL');
const TOKEN = need('TESSERA_API_TOKEN');
const CHROMIUM = need('TESSERA_CHROMIUM');
const ARTIFACTS = need('TESSERA_WEB_ARTIFACTS');
const RPC = need('TESSERA_RPC_URL');
const require = createRequire(path.join(need('TESSERA_TOOLS'), 'package.json'));
const { chromium } = require('playwright-core');

const ARTICLE = 'The harbour reopened on Tuesday after the storm closed it for two days. Ships queued outside '
  + 'the harbour while crews cleared debris. Traders said the closure cost them dearly and asked the port '
  + 'authority for compensation. The port authority promised new breakwaters before winter.';
const REPORT = 'The library will extend its opening hours from March. Visitors asked for evening access during '
  + 'exams. The council approved the budget for two extra staff. Volunteers will run a reading club on Saturdays.';
const HEX_TX = /^0x[0-9a-f]{64}$/;

let browser;
let page;
const problems = [];
// Refusals a scenario provokes on purpose: `{status, path}`, each expected
// once (see expectRefusal).
const refusals = [];
function expectRefusal(status, path) {
  refusals.push({ status, path, seen: false });
}
const runs = {};

before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // Any console error fails the scenarios, a failed load (a 404) included,
  // but for the refusals a scenario provokes on purpose (expectRefusal).
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = m.location()?.url ?? '';
    const load = /^Failed to load resource: the server responded with a status of (\d{3})/.exec(m.text());
    if (load && refusals.some((x) => x.status === Number(load[1]) && url.includes(x.path))) return;
    problems.push(`console: ${m.text()} (${url || '?'})`);
  });
  page.on('response', (r) => {
    if (r.status() < 400) return;
    const x = refusals.find((x) => x.status === r.status() && r.url().includes(x.path) && !x.seen);
    if (x) x.seen = true;
    else problems.push(`HTTP ${r.status()} for ${r.request().method()} ${r.url()}`);
  });
  // The token travels in the fragment once and stays in this browser.
  await page.goto(`${BASE}/#token=${TOKEN}`);
  await page.locator('#brief').waitFor();
});

after(async () => {
  await browser?.close();
});

// The page as each scenario left it, pass or fail.
let scenario = 0;
afterEach(async () => {
  scenario += 1;
  await page?.screenshot({ path: path.join(ARTIFACTS, `after-scenario-${scenario}.png`), fullPage: true }).catch(() => {});
});

const shot = (name) => page.screenshot({ path: path.join(ARTIFACTS, name), fullPage: true });

async function json(p) {
  const resp = await fetch(`${BASE}${p}`);
  assert.equal(resp.status, 200, `GET ${p}`);
  return resp.json();
}

/// Moves the chain `secs` seconds on and mines a block: timeouts run on
/// chain time, and the test chain mines only when sent a transaction.
async function advanceChain(secs) {
  for (const [method, params] of [['evm_increaseTime', [secs]], ['evm_mine', []]]) {
    const resp = await fetch(RPC, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = await resp.json();
    assert.ok(!body.error, `${method}: ${JSON.stringify(body.error)}`);
  }
}

/// POSTs JSON with the bearer token; returns the status and the body.
async function post(p, body) {
  const resp = await fetch(`${BASE}${p}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  return [resp.status, text ? JSON.parse(text) : null];
}

/// The address of the registry agent `name`.
async function agentNamed(name) {
  const { agents } = await json('/index/api/agents');
  const a = agents.find((x) => x.name === name);
  assert.ok(a, `agent ${name} in ${agents.map((x) => x.name)}`);
  return a.agent;
}

const step = (index, capability, executor, cost, depends_on, extra = {}) => ({
  index, capability, spec: `${capability} the article`, executor, cost, deadline_offset_secs: 3600, depends_on, ...extra,
});

/// Sentiment (0), then a checkpoint after it, then the steps in `rest`:
/// a plan as `/api/plans` takes it, under a fresh id.
async function gatedPlan(checkpoint, rest) {
  const sentiment = await agentNamed('sentiment');
  return {
    version: 1,
    id: `0x${randomBytes(32).toString('hex')}`,
    subtasks: [step(0, 'sentiment-classify', sentiment, 200000, []), ...rest],
    review: 'auto',
    budget: 10000000,
    source: ARTICLE,
    review_window_secs: 600,
    checkpoints: [checkpoint],
  };
}

/// Proposes `plan`; returns the run id.
async function propose(plan) {
  const [status, body] = await post('/api/plans', plan);
  assert.equal(status, 201, `propose: ${JSON.stringify(body)}`);
  return body.id;
}

async function waitGate(name, state, timeout = 90_000) {
  await page.waitForFunction(
    ([n, s]) => [...document.querySelectorAll('.dag .gate')].some((g) => g.dataset.gate === n && g.dataset.state === s),
    [name, state],
    { timeout },
  );
}

const logKinds = () => page.$$eval('.events li', (lis) => lis.map((li) => li.dataset.kind));

async function classify(brief, payload) {
  await page.goto(`${BASE}/`);
  await page.getByLabel('Brief', { exact: true }).fill(brief);
  await page.getByLabel('Material (optional)').fill(payload);
  await page.getByRole('button', { name: 'Classify and plan' }).click();
  await page.locator('.plan-card').waitFor();
  return page.locator('.plan-card').getAttribute('data-run');
}

async function waitRunState(state, timeout = 90_000) {
  await page.waitForFunction((s) => document.querySelector('#run-state')?.textContent === s, state, { timeout });
}

async function waitPhase(index, phase, timeout = 90_000) {
  await page.waitForFunction(
    ([i, p]) => document.querySelector(`.dag .node[data-index="${i}"]`)?.dataset.phase === p,
    [index, phase],
    { timeout },
  );
}

async function openNode(index) {
  const node = page.locator(`.dag .node[data-index="${index}"]`);
  // Every event re-renders the graph; a node replaced between the focus and
  // the key press loses the press, so the press is tried again.
  for (let attempt = 1; ; attempt++) {
    await node.focus();
    await page.keyboard.press('Enter');
    try {
      await page.locator('#drawer').waitFor({ state: 'visible', timeout: 5_000 });
      break;
    } catch (e) {
      if (attempt === 5) throw e;
    }
  }
  await page.waitForFunction((i) => document.querySelector('#drawer-title')?.textContent.startsWith(`#${i} `), index);
}

async function drawerTxs() {
  await page.locator('#drawer .txs').waitFor();
  return page.$$eval('#drawer .txs li', (lis) => lis.map((li) => [li.dataset.tx, li.querySelector('code').textContent]));
}

test('a composite plan is classified, shown as a card, approved and settled node by node', async () => {
  const id = await classify('Translate this article to French, then summarize it in three bullets', ARTICLE);
  assert.match(id, /^0x[0-9a-f]{64}$/);
  assert.equal(await page.locator('.classification .badge').first().textContent(), 'composite / low');
  assert.ok(await page.locator('.classification .signals li').count() >= 1, 'signals listed');
  assert.ok((await page.locator('.classification h3 + p').last().textContent()).length > 10, 'reasoning shown');
  assert.equal(await page.locator('.plan-card .dag .node').count(), 2);
  assert.equal(await page.locator('.plan-card .dag .edge').count(), 1, 'translate → summarize edge');
  const caps = await page.$$eval('.plan-card .dag .node .n-title', (ts) => ts.map((t) => t.textContent));
  assert.deepEqual(caps, ['#0 translate', '#1 summarize']);
  const chosen = await page.$$eval('.plan-card .subtasks .chosen-by', (ts) => ts.map((t) => t.textContent));
  assert.deepEqual(chosen, ['chosen by “Translate”', 'chosen by “summarize”'], 'the words that chose each capability');
  assert.equal(await page.locator('#total-cost').textContent(), '1.200000 USDC');
  assert.doesNotMatch(await page.locator('main').innerText(), /\b(null|undefined|NaN)\b/);
  await shot('plan-card.png');

  await page.getByRole('button', { name: 'Approve and fund' }).click();
  await page.waitForURL(/\/runs\/0x[0-9a-f]{64}\?chain=\d+$/);
  await waitRunState('completed');
  const phases = await page.$$eval('.dag .node', (ns) => ns.map((n) => n.dataset.phase));
  assert.deepEqual(phases, ['paid', 'paid']);
  // Read in one go in the page, after the last re-render has drawn them.
  const fills = await page.waitForFunction(() => {
    const rs = [...document.querySelectorAll('.dag .node rect')];
    const fs = rs.map((r) => getComputedStyle(r).fill);
    return fs.every((f) => f !== '') && fs;
  }).then((h) => h.jsonValue());
  assert.deepEqual(fills, ['rgb(215, 242, 223)', 'rgb(215, 242, 223)'], 'paid nodes are drawn green');
  runs.settled = { id, url: page.url() };

  await openNode(0);
  await page.locator('#drawer .result-text').waitFor();
  const translation = await page.locator('#drawer .result-text').textContent();
  assert.ok(translation.length > 20, 'the translation is shown');
  await openNode(1);
  const txs = await drawerTxs();
  // The worker delivers in one call (accept and complete together).
  assert.deepEqual(txs.map(([k]) => k), ['create', 'complete', 'pay']);
  for (const [, hash] of txs) assert.match(hash, HEX_TX);
  // The summary's envelope carries the translation forward as its input.
  await page.locator('#drawer .env-inputs pre').waitFor({ state: 'attached' });
  const input = await page.locator('#drawer .env-inputs pre').textContent();
  assert.equal(input.trim(), translation.trim());
  assert.ok((await page.locator('#drawer .env-spec').textContent()).length > 0);
  await page.locator('#drawer .result-text').waitFor();
  await shot('run-settled.png');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('#drawer').isVisible(), false, 'Escape closes the drawer');
});

test('reloading a shared run URL restores the view', async () => {
  assert.ok(runs.settled, 'needs the settled run');
  const fresh = await browser.newPage();
  try {
    await fresh.goto(runs.settled.url);
    await fresh.waitForFunction(() => document.querySelector('#run-state')?.textContent === 'completed');
    assert.equal(fresh.url(), runs.settled.url, 'the URL keeps the chain selector');
    assert.match(fresh.url(), /\?chain=31337$/);
    assert.deepEqual(await fresh.$$eval('.dag .node', (ns) => ns.map((n) => n.dataset.phase)), ['paid', 'paid']);
    await fresh.reload();
    await fresh.waitForFunction(() => document.querySelectorAll('.events li').length >= 8);
    await fresh.locator('.dag .node[data-index="1"]').click();
    await fresh.locator('#drawer .txs li').nth(2).waitFor();
    const kinds = await fresh.$$eval('#drawer .txs li', (lis) => lis.map((li) => li.dataset.tx));
    assert.deepEqual(kinds, ['create', 'complete', 'pay']);
    assert.equal(await fresh.locator('#run-state').textContent(), 'completed');
    await fresh.screenshot({ path: path.join(ARTIFACTS, 'run-reloaded.png'), fullPage: true });
  } finally {
    await fresh.close();
  }
});

test('an edit re-assigns an executor from the registry, and the plan runs with it', async () => {
  const id = await classify('Summarize the report and then translate the summary to Spanish', REPORT);
  const select = page.locator('#exec-0');
  const cheapest = await select.inputValue();
  const labels = await select.locator('option').allTextContents();
  const other = labels.find((l) => l.startsWith('summarizer-a'));
  assert.ok(other, `summarizer-a is offered: ${labels}`);
  assert.match(other, /0\.500000 USDC · /);
  assert.equal(await page.locator('#total-cost').textContent(), '1.200000 USDC');
  await select.selectOption({ label: other });
  await page.waitForFunction(() => document.querySelector('#total-cost')?.textContent === '1.300000 USDC');
  const chosen = await page.locator('#exec-0').inputValue();
  assert.notEqual(chosen.toLowerCase(), cheapest.toLowerCase());
  await shot('plan-edited.png');

  await page.getByRole('button', { name: 'Approve and fund' }).click();
  await page.waitForURL(/\/runs\//);
  await waitRunState('completed');
  const view = await json(`/api/runs/${id}`);
  assert.equal(view.subtasks[0].executor.toLowerCase(), chosen.toLowerCase(), 'the chain paid the chosen executor');
  await openNode(0);
  assert.match(await page.locator('#drawer .facts dd').nth(1).textContent(), /^summarizer-a /);
  // The indexer saw the same executor on chain.
  const indexed = await json(`/index/api/tasks?plan=${id}`);
  assert.ok(indexed.tasks.some((t) => t.executor.toLowerCase() === chosen.toLowerCase()), 'indexed with the new executor');
  await page.keyboard.press('Escape');
});

test('a disputed result goes to the arbiter and its verdict appears', async () => {
  await classify('Translate this article to French, then summarize it in three bullets', ARTICLE);
  await page.getByLabel(/Review each result before paying/).check();
  await page.waitForFunction(() => document.querySelector('#review-mode')?.checked && !document.querySelector('#review-mode').disabled);
  await page.getByRole('button', { name: 'Approve and fund' }).click();
  await page.waitForURL(/\/runs\//);
  await waitPhase(0, 'completed');
  await openNode(0);
  await page.getByLabel('Dispute reason').fill('Half of the article was left out of the translation.');
  await page.getByRole('button', { name: 'Dispute', exact: true }).click();
  await page.locator('#verdict', { hasText: 'Verdict:' }).waitFor({ timeout: 90_000 });
  const verdict = await page.locator('#verdict').textContent();
  assert.match(verdict, /^Verdict: (worker|client|split) — \d+\.\d\d% to the executor$/);
  // The rationale as prose, labelled by who ruled (offline here: no LLM key).
  await page.locator('#drawer .rationale .rationale-text').waitFor();
  assert.equal(await page.locator('#drawer .rationale h4').textContent(), 'Rationale, by the offline rubric');
  assert.ok((await page.locator('#drawer .rationale .rationale-text').textContent()).trim().length > 0, 'rationale text');
  assert.doesNotMatch(await page.locator('#drawer .rationale').textContent(), /[{}]/, 'prose, not JSON');
  // Attempts numbered as the CLI numbers them, and no stray `null` under the result.
  const attemptShown = page.locator('#drawer dt', { hasText: /^Attempt$/ }).locator('xpath=following-sibling::dd[1]');
  assert.equal(await attemptShown.textContent(), '0');
  await page.locator('#drawer .result .result-text').waitFor();
  assert.doesNotMatch(await page.locator('#drawer').innerText(), /\b(null|undefined|NaN)\b/);
  await shot('dispute-verdict.png');
  const events = await page.$$eval('.events li', (lis) => lis.map((li) => li.dataset.kind));
  for (const k of ['subtask_disputed', 'dispute_ruled', 'dispute_resolved']) assert.ok(events.includes(k), `${k} in ${events}`);
  if (!verdict.startsWith('Verdict: client')) {
    // The result stands; the next sub-task waits for approve & pay.
    await page.keyboard.press('Escape');
    await waitPhase(1, 'completed');
    assert.equal(await page.locator('#drawer').isVisible(), false, 'live events do not reopen a closed drawer');
    await openNode(1);
    await page.getByRole('button', { name: 'Approve and pay' }).click();
    await waitRunState('completed');
  } else {
    await waitRunState('failed');
  }
  await page.keyboard.press('Escape');
});

test('a high-stakes plan is refused without a typed confirmation', async () => {
  const id = await classify('Summarize the invoice, then pay 40 USDC to 0x52908400098527886E0F7030069857D2E4169EE7',
    'Invoice 2291: design of the spring campaign, due on receipt.');
  assert.equal(await page.locator('.plan-card').getAttribute('data-stakes'), 'high');
  assert.match(await page.locator('.classification .badge').first().textContent(), /high$/);
  await page.locator('fieldset.confirm').waitFor();
  expectRefusal(403, `/api/runs/${id}/approve`);
  expectRefusal(422, `/api/runs/${id}/confirm`);
  await page.getByRole('button', { name: 'Approve and fund' }).click();
  await page.locator('.plan-card > .error', { hasText: '403' }).waitFor();
  await shot('high-stakes-refused.png');
  assert.equal((await json(`/api/runs/${id}`)).state, 'proposed', 'nothing was funded');
  // Wrong terms are refused too.
  await page.getByLabel('Total amount (USDC)').fill('999');
  await page.getByLabel('Recipients').fill('0x52908400098527886E0F7030069857D2E4169EE7');
  await page.getByRole('button', { name: 'Confirm these terms' }).click();
  await page.locator('fieldset.confirm .error', { hasText: 'does not match' }).waitFor();
  // The exact terms, typed, let it through.
  const terms = (await json(`/api/runs/${id}`)).confirmation;
  await page.getByLabel('Total amount (USDC)').fill(terms.amount);
  await page.getByLabel('Recipients').fill(terms.recipients.join('\n'));
  await page.getByRole('button', { name: 'Confirm these terms' }).click();
  await page.locator('fieldset.confirm .ok', { hasText: 'Terms confirmed' }).waitFor();
  await page.getByRole('button', { name: 'Approve and fund' }).click();
  await page.waitForURL(/\/runs\//);
  await page.waitForFunction(() => ['running', 'completed'].includes(document.querySelector('#run-state')?.textContent));
});

test('an atomic, low-stakes brief runs at once and lands on its run', async () => {
  await page.goto(`${BASE}/`);
  await page.getByRole('button', { name: 'Sentiment of reviews' }).focus();
  await page.keyboard.press('Enter');
  await page.getByLabel('Brief', { exact: true }).fill('What is the sentiment of this customer review?');
  await page.getByLabel('Material (optional)').fill('The staff were friendly and the room was spotless. I would happily come back.');
  await page.getByRole('button', { name: 'Classify and plan' }).click();
  await page.waitForURL(/\/runs\/0x[0-9a-f]{64}\?chain=\d+$/);
  await waitRunState('completed');
  await openNode(0);
  await page.locator('#drawer .result-text').waitFor();
  assert.match(await page.locator('#drawer .result-text').textContent(), /positive/i);
  await page.keyboard.press('Escape');
});

test('history shows lineage trees from the indexer, and agents their prices and reliability', async () => {
  await page.goto(`${BASE}/history`);
  await page.locator(`.history li[data-run="${runs.settled.id}"] .tree li`).first().waitFor();
  const tree = await page.locator(`.history li[data-run="${runs.settled.id}"] .tree`).first().textContent();
  assert.match(tree, /translate/);
  assert.match(tree, /summarize/);
  // The translation's subtree costs it and the summary under it.
  assert.match(tree, /subtree 1\.200000 USDC/);
  await shot('history.png');
  await page.goto(`${BASE}/agents`);
  await page.locator('table.agents tbody tr').first().waitFor();
  assert.equal(await page.locator('table.agents tbody tr').count(), 5);
  const translator = await page.locator('table.agents tbody tr', { hasText: 'translator' }).textContent();
  assert.match(translator, /translate: 0\.800000/);
  assert.match(translator, /\d+% reliable/);
  const heads = await page.locator('table.agents thead th').allTextContents();
  for (const col of ['Record', 'Reliability', 'Weighed (funders)', 'ERC-8004', 'Feedback']) assert.ok(heads.includes(col), `${col} in ${heads}`);
  // The translator's settled tasks, weighed: the sponsor paid for them.
  const row = page.locator('table.agents tbody tr', { hasText: 'translator' });
  assert.match(await row.locator('td.record').textContent(), /^\d+\/\d+ settled$/);
  assert.match(await row.locator('td.weighed').textContent(), /^\d+\.\d from [1-9]\d* funders?/);
  // The orchestrator's ranking of the two summarizers, each with its reason:
  // the first why it would be chosen, the second why it lost to the first.
  await page.locator('#rank-capability').selectOption('summarize');
  await page.locator('#rank-policy').selectOption('reliable');
  const first = page.locator('ol.ranking li').first();
  await first.locator('.reason').filter({ hasText: /^reliable: \d+% reliable/ }).waitFor();
  assert.match(await first.textContent(), /USDC · score \d+\.\d\d · R \d+% · L 0\.\d\d · P [01]\.\d\d/);
  const offering = (await json('/index/api/agents')).agents.filter((a) => a.status === 'active' && a.offers && 'summarize' in a.offers);
  assert.equal(await page.locator('ol.ranking li').count(), offering.length);
  assert.equal(offering.length, 2);
  assert.match(await page.locator('ol.ranking li .reason').nth(1).textContent(), /^(less reliable|as reliable, dearer|tie, the higher address)/);
  // The capability catalogue: a capability with what it does, the fields
  // its result publishes, and its offerers with their prices and records.
  const capability = page.locator('table.capabilities tbody tr[data-capability="summarize"]');
  await capability.waitFor();
  assert.match(await capability.locator('.description').textContent(), /^Extractive summary of a text/);
  assert.match(await capability.locator('.fields').textContent(), /bullets\[\]: string \(always\)/);
  assert.match(await capability.locator('td.offerers > div').textContent(), /^offered by 2 active agents · from 0\.400000$/);
  assert.equal(await capability.locator('td.offerers li').count(), 2);
  assert.match(await capability.locator('td.offerers li').first().textContent(), /^summarizer-b · 0\.400000 · \d+% reliable · /);
  assert.ok(await page.locator('table.capabilities tbody tr[data-capability="brief"]').count(), 'built-ins nobody offers are listed');
  await shot('agents.png');
});

test('a checkpoint holds the run until the approver approves it, and a false condition skips its step', async () => {
  const [summarizer, extractor] = [await agentNamed('summarizer-b'), await agentNamed('extractor')];
  const plan = await gatedPlan({ name: 'tone-check', after: [0], timeout_secs: 900, on_timeout: 'escalate' }, [
    step(1, 'summarize', summarizer, 400000, [0], { when: 'out[0].score > 100' }),
    step(2, 'extract-entities', extractor, 250000, [0]),
  ]);
  // Why the extractor was chosen, as a plan may carry it.
  plan.selection = 'balanced';
  plan.choices = [{
    index: 2, policy: 'balanced', executor: extractor, price: 250000, score_bps: 6700,
    reason: 'balanced: 67% reliable (no settled tasks yet, prior 2:1), 0.25 USDC (the cheapest)',
    runner_up: { executor: await agentNamed('summarizer-a'), price: 300000, score_bps: 6500, reason: 'dearer: 0.30 USDC against 0.25 USDC' },
  }];
  const id = await propose(plan);
  await page.goto(`${BASE}/runs/${id}`);
  await page.locator('.plan-card').waitFor();
  // The executor cell says why, as the server keeps the choice.
  const kept = ((await json(`/api/runs/${id}`)).plan.choices ?? [])
    .find((c) => c.index === 2 && c.executor.toLowerCase() === extractor.toLowerCase());
  const why = await page.locator('.plan-card tr[data-index="2"] .choice').allTextContents();
  if (kept) {
    assert.equal(why.length, 1, 'the choice is shown');
    assert.match(why[0], /^chosen by balanced: /);
    assert.ok(why[0].includes(kept.reason.replace(/^balanced: /, '')), why[0]);
    if (kept.runner_up) assert.match(why[0], /; runner-up \S+ \(\d+\.\d{6} USDC\): /);
  } else {
    assert.deepEqual(why, [], 'no choice kept, none shown');
  }
  assert.equal(await page.locator('.plan-card tr[data-index="0"] .choice').count(), 0, 'no choice recorded for #0');

  // The card: the gate in the graph, the checkpoint, the condition, the recovery line.
  const gate = page.locator('.plan-card .dag .gate[data-gate="tone-check"]');
  assert.equal(await gate.getAttribute('data-state'), 'pending');
  assert.equal(await gate.getAttribute('aria-label'), 'Checkpoint tone-check: pending');
  const node1 = page.locator('.plan-card .dag .node[data-index="1"]');
  assert.match(await node1.getAttribute('class'), /\bconditional\b/);
  assert.match(await node1.getAttribute('aria-label'), /runs only if out\[0\]\.score > 100/);
  assert.equal(await page.locator('.plan-card .dag .node.conditional').count(), 1);
  const cp = await page.locator('.plan-card .strategy li[data-gate="tone-check"]').textContent();
  assert.match(cp, /after #0 sentiment-classify/);
  assert.match(cp, /15 min, then escalate to a person/);
  const cond = await page.locator('.plan-card .strategy .plan-conditions li').allTextContents();
  assert.deepEqual(cond.length, 1);
  assert.match(cond[0], /^#1 summarize runs only if out\[0\]\.score > 100/);
  assert.match(await page.locator('.plan-card tr[data-index="1"]').textContent(), /runs only if out\[0\]\.score > 100/);
  assert.match(await page.locator('.plan-card .strategy .recovery').textContent(),
    /^Recovery: not accepted → pause · not delivered → pause · dispute lost → fail$/);
  assert.doesNotMatch(await page.locator('main').innerText(), /\b(null|undefined|NaN)\b/);
  await shot('plan-card-checkpoint.png');

  await page.getByRole('button', { name: 'Approve and fund' }).click();
  await page.waitForURL(/\/runs\/0x[0-9a-f]{64}\?chain=\d+$/);
  await waitRunState('paused');
  await waitGate('tone-check', 'reached');
  assert.equal(await page.locator('.dag .node[data-index="0"]').getAttribute('data-phase'), 'paid');
  for (const i of [1, 2]) {
    assert.equal(await page.locator(`.dag .node[data-index="${i}"]`).getAttribute('data-phase'), 'waiting', `#${i} held at the gate`);
  }
  const row = page.locator('section.checkpoints li[data-gate="tone-check"]');
  assert.equal(await row.locator('.badge').textContent(), 'reached');
  assert.match(await row.textContent(), /After #0 sentiment-classify · on timeout: 15 min, then escalate to a person/);
  assert.ok((await row.locator('.outputs pre').textContent()).trim().length > 0, 'the outputs so far are shown');
  // The gate in the graph leads to its Approve button (every event redraws
  // the graph: the press is tried again if it lands on a replaced gate).
  for (let attempt = 1; ; attempt++) {
    await page.locator('.dag .gate[data-gate="tone-check"]').focus();
    await page.keyboard.press('Enter');
    if (await page.evaluate(() => document.activeElement?.id) === 'cp-approve-tone-check') break;
    assert.ok(attempt < 5, 'Enter on the gate focuses its Approve button');
  }
  await page.getByLabel('Reason for checkpoint tone-check').fill('The tone is neutral: go on.');
  await shot('checkpoint-reached.png');
  await page.getByRole('button', { name: 'Approve tone-check' }).click();

  await waitRunState('completed');
  await waitPhase(1, 'skipped');
  await waitPhase(2, 'paid');
  await waitGate('tone-check', 'approved');
  assert.equal(await page.locator('section.checkpoints li[data-gate="tone-check"] .badge').textContent(), 'approved');
  assert.match(await page.locator('section.checkpoints li[data-gate="tone-check"]').textContent(), /approved by the approver/);
  assert.equal(await page.locator('#cp-approve-tone-check').count(), 0, 'no buttons once decided');
  await page.waitForFunction(() => document.querySelectorAll('.events li[data-kind="plan_completed"]').length === 1);
  const kinds = await logKinds();
  for (const k of ['checkpoint_reached', 'plan_paused', 'checkpoint_approved', 'plan_resumed', 'subtask_skipped']) {
    assert.ok(kinds.includes(k), `${k} in ${kinds}`);
  }
  assert.match(await page.locator('.events li[data-kind="checkpoint_reached"]').textContent(), /tone-check reached after #0/);
  assert.match(await page.locator('.events li[data-kind="checkpoint_approved"]').textContent(), /tone-check approved by the approver/);
  assert.match(await page.locator('.events li[data-kind="subtask_skipped"]').textContent(), /#1 skipped: .*out\[0\]\.score > 100/);
  const view = await json(`/api/runs/${id}`);
  assert.deepEqual(view.subtasks.map((r) => r.phase), ['paid', 'skipped', 'paid']);
  assert.equal(view.gates['tone-check'].by, 'approver');
  await shot('checkpoint-approved.png');
  // The skipped step's drawer says why, and that nothing was sent.
  await openNode(1);
  await page.locator('#drawer .skipped-why').waitFor();
  assert.match(await page.locator('#drawer .skipped-why').textContent(), /^skipped: its condition `out\[0\]\.score > 100` is false$/);
  assert.equal(await page.locator('#drawer-phase').textContent(), 'skipped');
  assert.doesNotMatch(await page.locator('#drawer').innerText(), /\b(null|undefined|NaN)\b/);
  await page.keyboard.press('Escape');
  runs.gated = { id, url: page.url() };
});

test('an escalated checkpoint rejected with a reason stops the run', async () => {
  const extractor = await agentNamed('extractor');
  const plan = await gatedPlan({ name: 'publish-ok', after: [0], timeout_secs: 1, on_timeout: 'escalate' }, [
    step(1, 'extract-entities', extractor, 250000, [0]),
  ]);
  const id = await propose(plan);
  const [status, body] = await post(`/api/runs/${id}/approve`);
  assert.equal(status, 200, `approve: ${JSON.stringify(body)}`);
  await page.goto(`${BASE}/runs/${id}`);
  // The checkpoint's second passes on chain: blocks until it escalates.
  for (let tries = 1; ; tries += 1) {
    await advanceChain(2);
    try {
      await waitGate('publish-ok', 'escalated', 2_000);
      break;
    } catch (e) {
      if (tries >= 30) throw e;
    }
  }
  await waitRunState('paused');
  assert.match(await page.locator('section.checkpoints li[data-gate="publish-ok"]').textContent(), /escalated: waiting for a person/);
  await page.getByLabel('Reason for checkpoint publish-ok').fill('The entities name a client.');
  await page.getByRole('button', { name: 'Reject publish-ok' }).click();
  await waitRunState('failed');
  await waitGate('publish-ok', 'rejected');
  await waitPhase(1, 'skipped');
  assert.match(await page.locator('section.checkpoints li[data-gate="publish-ok"]').textContent(),
    /rejected by the approver: “The entities name a client\.”/);
  await page.locator('.events li[data-kind="checkpoint_rejected"]').waitFor();
  assert.match(await page.locator('.events li[data-kind="checkpoint_rejected"]').textContent(),
    /publish-ok rejected by the approver: The entities name a client\./);
  assert.ok((await logKinds()).includes('checkpoint_escalated'));
  assert.equal((await json(`/api/runs/${id}`)).reason, 'checkpoint publish-ok rejected');
  await shot('checkpoint-rejected.png');
});

test('every control has a label, and the run view fits a narrow screen', async () => {
  const unnamed = async () => page.$$eval('button, input, select, textarea, [role="button"], a[href]', (els) => els
    .filter((e) => e.offsetParent !== null || e.closest('svg'))
    .filter((e) => {
      const label = e.getAttribute('aria-label') || (e.labels && e.labels[0]?.textContent) || e.textContent.trim();
      return !label;
    })
    .map((e) => e.outerHTML.slice(0, 80)));
  assert.ok(runs.gated, 'needs the run that passed a checkpoint');
  const proposed = await propose(await gatedPlan({ name: 'look', after: [0] }, [
    step(1, 'extract-entities', await agentNamed('extractor'), 250000, [0], { when: 'out[0].label == "negative"' }),
  ]));
  for (const p of ['/', runs.settled.url.replace(BASE, ''), runs.gated.url.replace(BASE, ''), '/history', '/agents']) {
    await page.goto(`${BASE}${p}`);
    await page.waitForLoadState('networkidle');
    assert.deepEqual(await unnamed(), [], `unlabelled controls on ${p}`);
  }
  // Live runs keep their event stream open (never network-idle): wait for
  // what matters instead. A proposed plan with a checkpoint and a condition:
  await page.goto(`${BASE}/runs/${proposed}`);
  await page.locator('.plan-card .strategy li[data-gate="look"]').waitFor();
  await page.locator('.plan-card .dag .gate[data-gate="look"]').waitFor();
  assert.deepEqual(await unnamed(), [], 'unlabelled controls on a card with a checkpoint');
  // A run waiting at its gate: the gate, the reason and both decisions.
  const waiting = await propose(await gatedPlan({ name: 'hold', after: [0], timeout_secs: 900 }, []));
  assert.equal((await post(`/api/runs/${waiting}/approve`))[0], 200);
  await page.goto(`${BASE}/runs/${waiting}`);
  await page.locator('#cp-reject-hold').waitFor({ timeout: 90_000 });
  assert.deepEqual(await unnamed(), [], 'unlabelled controls at an open checkpoint');
  assert.equal(await page.getByLabel('Reason for checkpoint hold').count(), 1);
  assert.equal((await post(`/api/runs/${waiting}/cancel`))[0] < 300, true, 'the waiting run is cancelled');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(runs.settled.url);
  await waitRunState('completed');
  await openNode(1);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `no horizontal scrolling at 390 px (overflow ${overflow}px)`);
  await shot('run-narrow.png');
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual(problems, [], 'no script errors, policy violations or unexpected failed loads');
  assert.deepEqual(refusals.filter((x) => !x.seen), [], 'every provoked refusal happened');
});
