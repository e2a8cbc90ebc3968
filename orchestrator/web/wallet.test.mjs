// The sponsor's wallet, pure: error words, the chain check, what a grant
// request says in words and the checks made before signing, and the
// requests sent to an EIP-1193 provider (a fake one recording them).
// `make js-test` runs this with node's test runner.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  NO_WALLET, WalletError, chainNumber, checkChain, connect, grantSummary, isRefusal, shortAddress, signGrant, signText,
  walletMessage, revokeGrant, revokeGrantCalldata,
} from './wallet.js';

const SPONSOR = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const OPERATOR = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const ESCROW = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const PLAN = `0x${'ab'.repeat(32)}`;

function request({ permit = true, budget = '1200000' } = {}) {
  // The server's terms spell addresses in lower case, its typed data EIP-55.
  const terms = { sponsor: SPONSOR.toLowerCase(), plan_id: PLAN, operator: OPERATOR.toLowerCase(), budget, valid_until: 1_772_323_200, nonce: '7' };
  return {
    terms,
    typed_data: {
      primaryType: 'Grant',
      domain: { name: 'Tessera TaskEscrow', version: '1', chainId: 31337, verifyingContract: ESCROW },
      message: { sponsor: SPONSOR, planId: PLAN, operator: OPERATOR, budget, validUntil: '1772323200', nonce: '7' },
    },
    allowance: '0',
    needed: budget,
    permit: permit ? {
      value: '1200000', nonce: '0', deadline: 1_772_326_800,
      typed_data: { primaryType: 'Permit', domain: { chainId: 31337 }, message: { owner: SPONSOR, spender: ESCROW, value: '1200000' } },
    } : null,
  };
}

/// A provider answering `answers[method]` (a value, or a function of the
/// params), recording each request.
function fakeProvider(answers) {
  const calls = [];
  return {
    calls,
    request: async ({ method, params }) => {
      calls.push({ method, params });
      const a = answers[method];
      if (a === undefined) throw Object.assign(new Error(`${method} unsupported`), { code: 4200 });
      return typeof a === 'function' ? a(params) : a;
    },
  };
}

test('wallet errors read in words; a refusal is code 4001', () => {
  const refused = { code: 4001, message: 'User rejected the request.' };
  assert.ok(isRefusal(refused));
  assert.ok(!isRefusal({ code: -32603 }));
  assert.match(walletMessage(refused), /^signature refused/);
  assert.match(walletMessage({ code: -32002 }), /already has a request open/);
  assert.match(walletMessage({ code: 4100 }), /not authorised/);
  assert.equal(walletMessage(new Error('boom')), 'wallet: boom');
  assert.match(NO_WALLET, /^no wallet found in this browser/);
});

test('addresses shorten, chain ids read from hex or numbers', () => {
  assert.equal(shortAddress(SPONSOR), '0x7099…79C8');
  assert.equal(shortAddress(''), '');
  assert.equal(chainNumber('0x7a69'), 31337);
  assert.equal(chainNumber(31337), 31337);
  assert.equal(chainNumber('1'), 1);
  assert.throws(() => chainNumber(undefined), WalletError);
});

test('typed data for another chain than the wallet\'s is refused', () => {
  const { typed_data: td } = request();
  checkChain('0x7a69', td);
  assert.throws(() => checkChain('0x1', td), /wrong chain: your wallet is on chain 1, this orchestrator settles on chain 31337/);
});

test('a grant request reads as budget, operator, valid-until and permit', () => {
  const s = grantSummary(request(), { sponsor: SPONSOR.toLowerCase(), operator: OPERATOR, runId: PLAN, cost: '1200000' });
  assert.deepEqual(s, {
    budget: '1.200000', operator: OPERATOR, validUntil: '2026-03-01T00:00:00Z', plan: PLAN,
    permit: { amount: '1.200000', spender: ESCROW, deadline: '2026-03-01T01:00:00Z' },
  });
  assert.equal(grantSummary(request({ permit: false }), { sponsor: SPONSOR, operator: OPERATOR, runId: PLAN }).permit, null);
});

test('a grant naming someone else, another plan or operator, or over the cost is not signed', () => {
  const who = { sponsor: SPONSOR, operator: OPERATOR, runId: PLAN, cost: '1200000' };
  assert.throws(() => grantSummary(request(), { ...who, sponsor: OPERATOR }), /names sponsor .*not your address/);
  assert.throws(() => grantSummary(request(), { ...who, runId: `0x${'cd'.repeat(32)}` }), /is for plan/);
  assert.throws(() => grantSummary(request(), { ...who, operator: ESCROW }), /names operator/);
  assert.throws(() => grantSummary(request({ budget: '1200001' }), who), /over the plan's cost of 1\.200000 USDC/);
  const tampered = request();
  tampered.typed_data.message.budget = '9000000';
  assert.throws(() => grantSummary(tampered, who), /typed data does not match its terms/);
  assert.throws(() => grantSummary({}, who), /no grant/);
});

test('connect asks for accounts and the chain; no provider is a clear error', async () => {
  const p = fakeProvider({ eth_requestAccounts: [SPONSOR], eth_chainId: '0x7a69' });
  assert.deepEqual(await connect(p), { address: SPONSOR, chainId: 31337 });
  assert.deepEqual(p.calls.map((c) => c.method), ['eth_requestAccounts', 'eth_chainId']);
  await assert.rejects(connect(null), /no wallet found in this browser/);
  await assert.rejects(connect(fakeProvider({ eth_requestAccounts: [], eth_chainId: '0x1' })), /no account/);
});

test('sign-in text goes to personal_sign as UTF-8 hex, with the address second', async () => {
  const p = fakeProvider({ personal_sign: '0xsig' });
  assert.equal(await signText(p, SPONSOR, 'hi'), '0xsig');
  assert.deepEqual(p.calls, [{ method: 'personal_sign', params: ['0x6869', SPONSOR] }]);
});

test('the grant and its permit are signed as JSON strings into the approval body', async () => {
  const req = request();
  const p = fakeProvider({ eth_chainId: '0x7a69', eth_signTypedData_v4: ([, td]) => (JSON.parse(td).primaryType === 'Grant' ? '0xg' : '0xp') });
  const body = await signGrant(p, SPONSOR, req, 'conf');
  assert.deepEqual(body, {
    grant: { terms: req.terms, signature: '0xg' },
    permit: { value: '1200000', deadline: 1_772_326_800, signature: '0xp' },
    confirmation_token: 'conf',
  });
  const typed = p.calls.filter((c) => c.method === 'eth_signTypedData_v4');
  assert.equal(typed.length, 2);
  assert.equal(typed[0].params[0], SPONSOR);
  assert.deepEqual(JSON.parse(typed[0].params[1]), req.typed_data);
});

test('a refusal or a wrong chain stops before anything is signed or sent', async () => {
  const refusing = fakeProvider({ eth_chainId: '0x7a69', eth_signTypedData_v4: () => { throw { code: 4001, message: 'User rejected' }; } });
  await assert.rejects(signGrant(refusing, SPONSOR, request()), (e) => isRefusal(e));
  const elsewhere = fakeProvider({ eth_chainId: '0x1', eth_signTypedData_v4: '0xg' });
  await assert.rejects(signGrant(elsewhere, SPONSOR, request()), /wrong chain/);
  assert.ok(!elsewhere.calls.some((c) => c.method === 'eth_signTypedData_v4'), 'nothing signed on the wrong chain');
});

test('revokeGrant calldata is the ABI encoding of the grant (as cast calldata gives it)', () => {
  const { terms } = request();
  assert.equal(revokeGrantCalldata(terms), '0x07c6bccf'
    + '00000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c8'
    + 'abababababababababababababababababababababababababababababababab'
    + '0000000000000000000000003c44cdddb6a900fa2b585dd299e03d12fa4293bc'
    + '0000000000000000000000000000000000000000000000000000000000124f80'
    + '0000000000000000000000000000000000000000000000000000000069a38180'
    + '0000000000000000000000000000000000000000000000000000000000000007');
  assert.throws(() => revokeGrantCalldata({ ...terms, sponsor: '0x12' }), /sponsor is not an address/);
  assert.throws(() => revokeGrantCalldata({ ...terms, plan_id: '0x12' }), /names no plan/);
});

test('revoking sends one transaction from the sponsor to the escrow, on the grant\'s chain only', async () => {
  const { terms } = request();
  const p = fakeProvider({ eth_chainId: '0x7a69', eth_sendTransaction: '0xtx' });
  assert.equal(await revokeGrant(p, SPONSOR, ESCROW, 31337, terms), '0xtx');
  const [tx] = p.calls.filter((c) => c.method === 'eth_sendTransaction');
  assert.deepEqual(tx.params, [{ from: SPONSOR, to: ESCROW, data: revokeGrantCalldata(terms) }]);
  const elsewhere = fakeProvider({ eth_chainId: '0x1', eth_sendTransaction: '0xtx' });
  await assert.rejects(revokeGrant(elsewhere, SPONSOR, ESCROW, 31337, terms), /wrong chain/);
  assert.equal(elsewhere.calls.filter((c) => c.method === 'eth_sendTransaction').length, 0);
});
