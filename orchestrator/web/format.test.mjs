// The pure formatting of format.js: amounts (the same rule as the Rust
// `Usdc` type: six decimals) and how decisions read, failures included.
// `make js-test` runs this with node's test runner.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usdc, decisionOutcome, decodeDataUri, readable, mergeNote } from './format.js';

test('usdc shows base units with exactly six decimals, like Usdc in Rust', () => {
  assert.equal(usdc('1200000'), '1.200000');
  assert.equal(usdc(250000), '0.250000');
  assert.equal(usdc('7'), '0.000007');
  assert.equal(usdc(0), '0.000000');
  assert.equal(usdc(undefined), '0.000000');
  // Beyond 2^53: the APIs write amounts as strings of base units.
  assert.equal(usdc('123456789012345678901234'), '123456789012345678.901234');
  for (const bad of ['1.5', '-3', 'abc', '']) assert.equal(usdc(bad), '—', `${bad}`);
});

test('a decision_applied event without ok, or with ok true, is a success', () => {
  assert.deepEqual(decisionOutcome({ kind: 'decision_applied', decision: 'approve', outcome: 'approved' }),
    { ok: true, text: 'approve: approved' });
  assert.deepEqual(decisionOutcome({ decision: 'reassign', outcome: 'reassigned', ok: true }),
    { ok: true, text: 'reassign: reassigned' });
});

test('a failed decision_applied event reads as a failure with its error and revert', () => {
  const failed = decisionOutcome({
    kind: 'decision_applied', index: 1, decision: 'approve', outcome: 'failed',
    ok: false, error: 'transaction reverted', revert: 'TaskEscrowWrongStatus(3, 2)',
  });
  assert.equal(failed.ok, false);
  assert.equal(failed.text, 'approve failed: transaction reverted (revert: TaskEscrowWrongStatus(3, 2))');
  const noRevert = decisionOutcome({ decision: 'retry', ok: false, error: 'nonce too low' });
  assert.deepEqual(noRevert, { ok: false, text: 'retry failed: nonce too low' });
  assert.equal(decisionOutcome({ ok: false }).text, 'decision failed: the transaction failed');
});

test('data URIs decode in both encodings the services write', () => {
  const json = '{"id":"summarizer-a","description":"Résumés, 50% off"}';
  const percent = `data:application/json,${encodeURIComponent(json)}`;
  assert.equal(decodeDataUri(percent), json);
  const b64 = `data:application/json;base64,${Buffer.from(json).toString('base64')}`;
  assert.equal(decodeDataUri(b64), json);
  assert.equal(readable('{"text":"hello"}'), 'hello');
});

test('a merge names its upstreams besides the parent it hangs under', () => {
  const merge = { task_id: '13', parent_id: '11', inputs: ['11', '12'], merge: true };
  assert.equal(mergeNote(merge), '⇐ merge, also from 12');
  assert.equal(mergeNote(merge, (id) => `#${id}`), '⇐ merge, also from #12');
  assert.equal(mergeNote({ parent_id: '11', inputs: ['11'], merge: false }), '');
  assert.equal(mergeNote({ parent_id: '0', inputs: ['11', '12'], merge: true }), '⇐ merge, also from 11, 12');
  assert.equal(mergeNote(undefined), '');
});
