// Browser scenarios for a sponsor's wallet on an operator-mode
// orchestrator, run by `cargo test -p tessera --test web` (see
// cli/tests/web.rs, which starts `tessera serve` with only the operator's
// key and sets the environment below). playwright-core drives Debian's
// Chromium. The wallet is an injected EIP-1193 provider whose accounts and
// signatures come from anvil: anvil signs (`personal_sign`,
// `eth_signTypedData_v4`) for its unlocked dev accounts, so every signature
// the server checks is the sponsor's own key's.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through \`cargo test -p tessera --test web\``);
  return v;
};
const BASE = need('TESSERA_UI_URL');
const CHROMIUM = need('TESSERA_CHROMIUM');
const ARTIFACTS = need('TESSERA_WEB_ARTIFACTS');
const RPC = need('TESSERA_RPC_URL');
const SPONSOR = need('TESSERA_SPONSOR');
const OTHER = need('TESSERA_OTHER_WALLET');
const OPERATOR = need('TESSERA_OPERATOR');
const USDC = need('TESSERA_USDC');
const RUN_FILE = need('TESSERA_RUN_FILE');
const require = createRequire(path.join(need('TESSERA_TOOLS'), 'package.json'));
const { chromium } = require('playwright-core');

const ARTICLE = 'The harbour reopened on Tuesday after the storm closed it for two days. Ships queued outside '
  + 'the harbour while crews cleared debris. Traders said the closure cost them dearly and asked the port '
  + 'authority for compensation. The port authority promised new breakwaters before winter.';

let browser;
const problems = [];
const pages = [];
const state = {};

async function rpc(method, params) {
  const resp = await fetch(RPC, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return resp.json();
}

/// The USDC balance of `who` on chain, in base units.
async function usdcOf(who) {
  const data = `0x70a08231${who.slice(2).toLowerCase().padStart(64, '0')}`;
  const out = await rpc('eth_call', [{ to: USDC, data }, 'latest']);
  assert.ok(!out.error, JSON.stringify(out.error));
  return BigInt(out.result);
}

/// A browser context whose pages have a wallet for `address` (none when
/// null): `window.ethereum` forwards to anvil through `__walletRpc`, and
/// `window.__wallet` lets a scenario refuse the next signature or report
/// another chain. `signed` records each signing request the page made.
async function walletContext(address) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const signed = [];
  if (address) {
    await context.exposeFunction('__walletRpc', async (method, params) => {
      // In lower case, as wallets often give it: the page writes it checksummed where EIP-4361 asks.
      if (method === 'eth_requestAccounts' || method === 'eth_accounts') return { result: [address.toLowerCase()] };
      if (method === 'personal_sign' || method === 'eth_signTypedData_v4') {
        const who = method === 'personal_sign' ? params[1] : params[0];
        if (String(who).toLowerCase() !== address.toLowerCase()) {
          return { error: { code: 4100, message: `this wallet holds ${address}, not ${who}` } };
        }
        signed.push({ method, params });
      } else if (method === 'eth_sendTransaction') {
        if (String(params[0]?.from).toLowerCase() !== address.toLowerCase()) {
          return { error: { code: 4100, message: `this wallet holds ${address}, not ${params[0]?.from}` } };
        }
        signed.push({ method, params });
      } else if (method !== 'eth_chainId') {
        return { error: { code: 4200, message: `${method} is not supported by this wallet` } };
      }
      const out = await rpc(method, params);
      return out.error ? { error: { code: out.error.code, message: out.error.message } } : { result: out.result };
    });
    await context.addInitScript(() => {
      window.__wallet = { refuseNext: false, chain: null };
      window.ethereum = {
        async request({ method, params = [] }) {
          const signing = method === 'personal_sign' || method === 'eth_signTypedData_v4';
          if (signing && window.__wallet.refuseNext) {
            window.__wallet.refuseNext = false;
            throw Object.assign(new Error('User rejected the request.'), { code: 4001 });
          }
          if (method === 'eth_chainId' && window.__wallet.chain) return window.__wallet.chain;
          const out = await window.__walletRpc(method, params);
          if (out.error) throw Object.assign(new Error(out.error.message), { code: out.error.code });
          return out.result;
        },
        on() {},
        removeListener() {},
      };
    });
  }
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) {
      problems.push(`console: ${m.text()}`);
    }
  });
  pages.push(page);
  return { context, page, signed };
}

before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  state.sponsor = await walletContext(SPONSOR);
});

after(async () => {
  await browser?.close();
});

let scenario = 0;
afterEach(async () => {
  scenario += 1;
  await pages[0]?.screenshot({ path: path.join(ARTIFACTS, `wallet-after-scenario-${scenario}.png`), fullPage: true }).catch(() => {});
});

const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, name), fullPage: true });

async function waitRunState(page, s, timeout = 120_000) {
  await page.waitForFunction((want) => document.querySelector('#run-state')?.textContent === want, s, { timeout });
}

/// Connects the page's wallet and signs in; returns the session token.
async function signIn(page, address) {
  await page.goto(`${BASE}/`);
  await page.getByRole('button', { name: 'Connect wallet' }).click();
  await page.locator('#wallet-address').waitFor();
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  const s = JSON.parse(await page.evaluate(() => sessionStorage.getItem('tessera.session')));
  assert.equal(s.address.toLowerCase(), address.toLowerCase());
  return s.token;
}

/// GET `p` with `token` as the bearer: [status, body].
async function get(p, token) {
  const resp = await fetch(`${BASE}${p}`, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  return [resp.status, await resp.json()];
}

test('without a wallet the page says so, and the token field gives way to the wallet', async () => {
  const { context, page } = await walletContext(null);
  try {
    await page.goto(`${BASE}/`);
    await page.getByRole('button', { name: 'Connect wallet' }).click();
    assert.match(await page.locator('#wallet-note').textContent(), /^no wallet found in this browser/);
    assert.equal(await page.locator('#token-form').isVisible(), false, 'no API token field in operator mode');
    assert.match(await page.locator('#chain').textContent(), /operator 0x/);
    // Nothing to read before signing in.
    await page.goto(`${BASE}/history`);
    await page.getByText(/sign in with your wallet to see and decide your plans/).waitFor();
  } finally {
    await context.close();
  }
});

test('the sponsor connects and signs in with EIP-4361 through personal_sign', async () => {
  const { page, signed } = state.sponsor;
  await page.goto(`${BASE}/`);
  await page.getByRole('button', { name: 'Connect wallet' }).click();
  const shown = page.locator('#wallet-address');
  await shown.waitFor();
  assert.equal(await shown.getAttribute('title'), SPONSOR, 'the full address on hover');
  assert.equal(await shown.textContent(), `${SPONSOR.slice(0, 6)}…${SPONSOR.slice(-4)}`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  const [login] = signed.filter((s) => s.method === 'personal_sign');
  const text = Buffer.from(login.params[0].slice(2), 'hex').toString('utf8');
  const host = new URL(BASE).host;
  assert.match(text, new RegExp(`^${host.replace(/\./g, '\\.')} wants you to sign in with your Ethereum account:\\n${SPONSOR}\\n\\n`));
  assert.match(text, /\nChain ID: 31337\nNonce: [A-Za-z0-9]{24}\nIssued At: \S+Z\nExpiration Time: \S+Z$/);
  state.token = JSON.parse(await page.evaluate(() => sessionStorage.getItem('tessera.session'))).token;
  assert.equal(await page.evaluate(() => localStorage.getItem('tessera.session')), null, 'the session stays in this tab');
  const [status, runs] = await get('/api/runs', state.token);
  assert.equal(status, 200);
  assert.deepEqual(runs.runs, []);
  await shot(page, 'wallet-signed-in.png');
});

test('the sponsor plans from the brief, reads the grant before signing, and may refuse or be on the wrong chain', async () => {
  const { page, signed } = state.sponsor;
  await page.goto(`${BASE}/`);
  await page.getByLabel('Brief', { exact: true }).fill('Translate this article to French, then summarize it in three bullets');
  await page.getByLabel('Material (optional)').fill(ARTICLE);
  await page.getByRole('button', { name: 'Classify and plan' }).click();
  await page.locator('.plan-card').waitFor();
  const id = await page.locator('.plan-card').getAttribute('data-run');
  assert.match(id, /^0x[0-9a-f]{64}$/);
  state.id = id;
  assert.equal(await page.locator('#total-cost').textContent(), '1.200000 USDC');

  // What is signed is shown first, and nothing is signed by showing it.
  await page.getByRole('button', { name: 'Approve and fund' }).click();
  await page.locator('#grant-terms').waitFor();
  assert.equal(signed.filter((s) => s.method === 'eth_signTypedData_v4').length, 0, 'nothing signed before the sponsor asks');
  assert.equal(await page.locator('#grant-budget').textContent(), '1.200000 USDC');
  assert.equal(await page.locator('#grant-operator').textContent(), OPERATOR);
  assert.match(await page.locator('#grant-valid-until').textContent(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.match(await page.locator('#grant-permit').textContent(), /may pull up to 1\.200000 USDC of yours/);
  assert.doesNotMatch(await page.locator('main').innerText(), /\b(null|undefined|NaN)\b/);
  await shot(page, 'wallet-grant-terms.png');

  // The wallet on another chain: a clear error, nothing signed.
  await page.evaluate(() => { window.__wallet.chain = '0x1'; });
  await page.getByRole('button', { name: 'Sign and approve' }).click();
  await page.locator('#grant-terms .error').filter({ hasText: /wrong chain: your wallet is on chain 1, this orchestrator settles on chain 31337/ }).waitFor();
  assert.equal(signed.filter((s) => s.method === 'eth_signTypedData_v4').length, 0, 'nothing signed on the wrong chain');
  await page.evaluate(() => { window.__wallet.chain = null; });

  // The sponsor refuses in the wallet: the plan stays proposed.
  await page.evaluate(() => { window.__wallet.refuseNext = true; });
  await page.getByRole('button', { name: 'Sign and approve' }).click();
  await page.locator('#grant-terms .error').filter({ hasText: /signature refused/ }).waitFor();
  await shot(page, 'wallet-signature-refused.png');
  const [status, view] = await get(`/api/runs/${id}`, state.token);
  assert.equal(status, 200);
  assert.equal(view.state, 'proposed', 'a refused signature leaves the plan proposed');
  assert.equal(page.url(), `${BASE}/`, 'still on the card');
});

test('the sponsor signs the grant and the permit, the plan settles from the sponsor\'s USDC, and the sponsor revokes the grant', async () => {
  const { page, signed } = state.sponsor;
  assert.ok(state.id, 'needs the proposed plan');
  const before = await usdcOf(SPONSOR);
  await page.getByRole('button', { name: 'Sign and approve' }).click();
  await page.waitForURL(/\/runs\/0x[0-9a-f]{64}\?chain=31337$/);
  const typed = signed.filter((s) => s.method === 'eth_signTypedData_v4').map((s) => JSON.parse(s.params[1]));
  assert.deepEqual(typed.map((t) => t.primaryType), ['Grant', 'Permit'], 'the grant, then the permit');
  assert.equal(typed[0].message.sponsor, SPONSOR);
  assert.equal(typed[0].message.operator, OPERATOR);
  assert.equal(typed[0].message.planId, state.id);
  assert.equal(typed[1].message.owner.toLowerCase(), SPONSOR.toLowerCase());

  // The live stream reaches the page with the session (fetch, not EventSource).
  await waitRunState(page, 'completed');
  assert.deepEqual(await page.$$eval('.dag .node', (ns) => ns.map((n) => n.dataset.phase)), ['paid', 'paid']);
  await page.waitForFunction(() => document.querySelectorAll('.events li[data-kind="plan_completed"]').length === 1);
  const [, view] = await get(`/api/runs/${state.id}`, state.token);
  assert.equal(view.state, 'completed');
  assert.equal(before - await usdcOf(SPONSOR), 1_200_000n, 'the plan\'s cost left the sponsor');
  assert.equal(await usdcOf(OPERATOR), 0n, 'the operator paid nothing');
  const [, grant] = await get(`/api/runs/${state.id}/grant`, state.token);
  assert.equal(grant.granted.terms.sponsor.toLowerCase(), SPONSOR.toLowerCase(), 'the grant funding the run is the sponsor\'s');
  writeFileSync(RUN_FILE, state.id);
  await shot(page, 'wallet-settled.png');

  // The sponsor revokes the grant from the wallet (cli/tests/web.rs finds
  // the GrantRevoked event on chain).
  await page.getByRole('button', { name: 'Revoke grant' }).click();
  await page.locator('#revoke-note').filter({ hasText: /^Revoke sent in transaction 0x[0-9a-f]{64}:/ }).waitFor();
  const [sent] = signed.filter((s) => s.method === 'eth_sendTransaction');
  assert.equal(sent.params[0].from.toLowerCase(), SPONSOR.toLowerCase(), 'sent from the sponsor');
  assert.match(sent.params[0].data, /^0x07c6bccf[0-9a-f]{384}$/);
  const hash = (await page.locator('#revoke-note').textContent()).match(/0x[0-9a-f]{64}/)[0];
  const receipt = await rpc('eth_getTransactionReceipt', [hash]);
  assert.equal(receipt.result?.status, '0x1', 'revokeGrant succeeded');
});

test('a second wallet\'s session cannot see the sponsor\'s run', async () => {
  assert.ok(state.id, 'needs the settled run');
  const other = await walletContext(OTHER);
  try {
    const token = await signIn(other.page, OTHER);
    await other.page.goto(`${BASE}/runs/${state.id}`);
    await other.page.getByRole('heading', { name: 'Run not found' }).waitFor();
    assert.match(await other.page.locator('main [role="alert"]').textContent(), /^404: no run for plan 0x/);
    const [status] = await get(`/api/runs/${state.id}`, token);
    assert.equal(status, 404);
    const [, list] = await get('/api/runs', token);
    assert.deepEqual(list.runs, [], 'the other wallet lists none of it');
    await shot(other.page, 'wallet-other-404.png');
  } finally {
    await other.context.close();
  }
});

test('an ended session asks to sign in again, and sign-out ends it', async () => {
  const { page } = state.sponsor;
  // The server ends the session (as when it expires); the tab still holds it.
  const resp = await fetch(`${BASE}/api/auth/logout`, { method: 'POST', headers: { Authorization: `Bearer ${state.token}` } });
  assert.equal(resp.status, 204);
  await page.goto(`${BASE}/history`);
  await page.locator('#banner').filter({ hasText: /session expired or ended: sign in again/ }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('tessera.session')), null);
  await page.getByRole('button', { name: /^(Sign in|Connect wallet)$/ }).waitFor();

  const token = await signIn(page, SPONSOR);
  assert.equal((await get('/api/runs', token))[0], 200);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: /^(Sign in|Connect wallet)$/ }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('tessera.session')), null);
  assert.equal((await get('/api/runs', token))[0], 401, 'sign-out ended the session on the server');
  assert.deepEqual(problems, [], 'no script errors or policy violations');
});
