// Browser scenarios for the web plan card, run by `cargo test -p tessera
// --test web` against a real stack on anvil (see cli/tests/web.rs, which
// sets the environment below). playwright-core drives Debian's Chromium.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through \`cargo test -p tessera --test web\``);
  return v;
};
const BASE = need('TESSERA_UI_URL');
const TOKEN = need('TESSERA_API_TOKEN');
const CHROMIUM = need('TESSERA_CHROMIUM');
const ARTIFACTS = need('TESSERA_WEB_ARTIFACTS');
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
const runs = {};

before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) {
      problems.push(`console: ${m.text()}`);
    }
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
  await page.locator('#drawer .rationale details').waitFor();
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
  await shot('agents.png');
});

test('every control has a label, and the run view fits a narrow screen', async () => {
  const unnamed = async () => page.$$eval('button, input, select, textarea, [role="button"], a[href]', (els) => els
    .filter((e) => e.offsetParent !== null || e.closest('svg'))
    .filter((e) => {
      const label = e.getAttribute('aria-label') || (e.labels && e.labels[0]?.textContent) || e.textContent.trim();
      return !label;
    })
    .map((e) => e.outerHTML.slice(0, 80)));
  for (const p of ['/', runs.settled.url.replace(BASE, ''), '/history', '/agents']) {
    await page.goto(`${BASE}${p}`);
    await page.waitForLoadState('networkidle');
    assert.deepEqual(await unnamed(), [], `unlabelled controls on ${p}`);
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(runs.settled.url);
  await waitRunState('completed');
  await openNode(1);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `no horizontal scrolling at 390 px (overflow ${overflow}px)`);
  await shot('run-narrow.png');
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual(problems, [], 'no script errors or policy violations');
});
