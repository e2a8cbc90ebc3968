// The pure formatting of format.js: amounts (the same rule as the Rust
// `Usdc` type: six decimals), how decisions read, failures included, and
// how a nested plan's lineage groups by step path.
// `make js-test` runs this with node's test runner.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  usdc, decisionOutcome, decodeDataUri, readable, mergeNote, pathSegments, nestByPath, nestSummary,
  nestedHeaders, checkpointsOf, gateStateText, timeoutText, conditionNote, recoverySummary, choiceFor,
  choiceText, eventNote, stepName, afterText, declineNote, chosenByText, rulingOf, quietText, EVENT_KINDS,
} from './format.js';

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

test('step paths read as the envelope allows them, anything else as null', () => {
  assert.deepEqual(pathSegments('0'), [0]);
  assert.deepEqual(pathSegments('2.10.0'), [2, 10, 0]);
  assert.deepEqual(pathSegments('4294967295'), [4294967295]);
  assert.deepEqual(pathSegments('1.2.3.4.5.6.7.8'), [1, 2, 3, 4, 5, 6, 7, 8]);
  for (const bad of [undefined, null, 7, '', '.', '1.', '01', '1.00', '+1', '-1', ' 1', '1..2',
    '4294967296', '1.2.3.4.5.6.7.8.9', `${'1000000000.'.repeat(5)}1000000000`]) {
    assert.equal(pathSegments(bad), null, `${bad}`);
  }
});

const node = (id, path, groups = [], amount = `${id}0000`, extra = {}) =>
  ({ task_id: id, parent_id: '0', depth: 0, amount, path, groups, ...extra });

test('a flat plan has no nesting to draw', () => {
  assert.equal(nestByPath([]), null);
  assert.equal(nestByPath(undefined), null);
  assert.equal(nestByPath([node('10', null), node('11', undefined)]), null);
  assert.equal(nestByPath([node('10', '0'), node('11', '1'), node('12', '2')]), null);
});

test('a nested plan three levels deep is grouped by path, in numeric path order', () => {
  const outer = 'research the market';
  const inner = 'dig deeper';
  // In the indexer's order (depth, block), not the path's.
  const tasks = [
    node('14', '2', [], '140000', { parent_id: '13', depth: 3 }),
    node('11', '1.0', [outer]),
    node('10', '0'),
    node('12', '1.1.0', [outer, inner], '120000', { parent_id: '11', depth: 1 }),
    node('15', null, [], '150000', { parent_id: '12', depth: 2 }),
    node('13', '1.1.1', [outer, inner], '130000', { parent_id: '12', depth: 2 }),
    node('16', '10'),
  ];
  const nest = nestByPath(tasks);
  const ids = (entries) => entries.map((e) => (e.task ? e.task.task_id : `group ${e.group.path}`));
  assert.deepEqual(ids(nest.entries), ['10', 'group 1', '14', '16'], '2 before 10');
  const one = nest.entries[1].group;
  assert.deepEqual({ path: one.path, label: one.label, count: one.count, cost: one.cost },
    { path: '1', label: outer, count: 3, cost: '360000' });
  assert.deepEqual(ids(one.entries), ['11', 'group 1.1']);
  const deeper = one.entries[1].group;
  assert.deepEqual({ path: deeper.path, label: deeper.label, count: deeper.count, cost: deeper.cost },
    { path: '1.1', label: inner, count: 2, cost: '250000' });
  assert.deepEqual(ids(deeper.entries), ['12', '13']);
  assert.deepEqual(nest.unplaced.map((t) => t.task_id), ['15']);
  assert.equal(nestSummary(one), '1 nested plan “research the market” · 3 tasks · 0.360000 USDC');
  assert.equal(nestSummary(deeper), '1.1 nested plan “dig deeper” · 2 tasks · 0.250000 USDC');
});

test('a nested plan without labels or readable amounts still groups', () => {
  const nest = nestByPath([
    node('20', '3.0', [], 'x'),
    node('21', '3.1', ['late label']),
    node('22', 'not.a.path'),
  ]);
  const group = nest.entries[0].group;
  assert.equal(group.label, 'late label', 'the first label given at that level');
  assert.equal(group.cost, null);
  assert.equal(nestSummary(group), '3 nested plan “late label” · 2 tasks · — USDC');
  assert.equal(nestSummary({ ...group, label: null, count: 1, cost: '5' }), '3 nested plan · 1 task · 0.000005 USDC');
  assert.deepEqual(nest.unplaced.map((t) => t.task_id), ['22']);
});

test('a proposed plan opens each nested plan once, before its first leaf', () => {
  const leaf = (index, path) => ({ index, path });
  const plan = {
    groups: [{ path: '1', spec: 'Digest', budget: 450000 }, { path: '1.1', spec: 'Judge', budget: 200000 }],
    subtasks: [leaf(0, '0'), leaf(1, '1.0'), leaf(2, '1.1.0'), leaf(3, '1.1.1'), leaf(4, '2')],
  };
  const heads = nestedHeaders(plan);
  assert.deepEqual([...heads.keys()], [1, 2]);
  assert.deepEqual(heads.get(1), [{ path: '1', spec: 'Digest', budget: 450000, level: 2 }]);
  assert.deepEqual(heads.get(2), [{ path: '1.1', spec: 'Judge', budget: 200000, level: 3 }]);
  // A leaf that opens two levels at once lists both, outermost first.
  const both = nestedHeaders({ groups: plan.groups, subtasks: [leaf(0, '1.1.0')] });
  assert.deepEqual(both.get(0).map((g) => g.path), ['1', '1.1']);
  assert.equal(nestedHeaders({ subtasks: [leaf(0, '0')] }).size, 0, 'a flat plan opens nothing');
});

// --- a plan's strategy

const strategyPlan = {
  subtasks: [
    { index: 0, capability: 'sentiment-classify', executor: '0xAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAa' },
    { index: 1, capability: 'summarize', when: 'out[0].score > 100', recovery: { on_expiry: 'reassign' } },
    { index: 2, capability: 'extract-entities', when: '  ', recovery: { on_decline: 'retry(2)', on_dispute_lost: 'retry_other' } },
  ],
  checkpoints: [
    { name: 'tone-check', after: [0] },
    { name: 'legal', after: [0, 2], timeout_secs: 600, on_timeout: 'approve' },
    { name: 'final', after: [1], timeout_secs: 30, on_timeout: 'reject' },
  ],
  recovery: { on_decline: 'retry(2)', on_expiry: 'pause', on_dispute_lost: 'fail' },
};

test('checkpoints read with their place, timeout policy and the state of their gate', () => {
  const before = checkpointsOf(strategyPlan, undefined);
  assert.deepEqual(before.map((c) => [c.name, c.state, c.open]),
    [['tone-check', 'pending', false], ['legal', 'pending', false], ['final', 'pending', false]]);
  assert.equal(before[0].afterText, '#0');
  assert.equal(before[0].timeout, "the run's decision timeout, then escalate to a person");
  assert.equal(before[0].on_timeout, 'escalate', 'escalate is the default policy');
  assert.equal(before[1].afterText, '#0, #2');
  assert.equal(before[1].timeout, '10 min, then approve');
  assert.equal(before[2].timeout, '30 s, then reject');

  const gates = {
    'tone-check': { state: 'approved', at: 5, by: 'approver' },
    legal: { state: 'escalated', at: 9 },
    final: { state: 'reached', at: 11 },
  };
  const now = checkpointsOf(strategyPlan, gates);
  assert.deepEqual(now.map((c) => [c.state, c.by, c.open]),
    [['approved', 'approver', false], ['escalated', null, true], ['reached', null, true]]);
  assert.equal(now[2].at, 11);
  assert.deepEqual(checkpointsOf({ subtasks: [] }, gates), [], 'a plan without checkpoints has none');
  assert.deepEqual(checkpointsOf(null, null), []);
});

test('a gate state reads in words, with who decided', () => {
  assert.equal(gateStateText({ state: 'pending' }), 'not reached yet');
  assert.equal(gateStateText({ state: 'reached' }), 'waiting for an approver');
  assert.equal(gateStateText({ state: 'escalated' }), 'escalated: waiting for a person');
  assert.equal(gateStateText({ state: 'approved', by: 'approver' }), 'approved by the approver');
  assert.equal(gateStateText({ state: 'rejected', by: 'timeout' }), 'rejected by its timeout');
  assert.equal(timeoutText({ timeout_secs: 7200, on_timeout: 'escalate' }), '2.0 h, then escalate to a person');
});

test('a conditional step says when it runs; others say nothing', () => {
  assert.equal(conditionNote(strategyPlan.subtasks[1]), 'runs only if out[0].score > 100');
  assert.equal(conditionNote(strategyPlan.subtasks[0]), '');
  assert.equal(conditionNote(strategyPlan.subtasks[2]), '', 'a blank condition is none');
});

test('the recovery line names each policy, then the sub-tasks that override it', () => {
  assert.equal(recoverySummary(strategyPlan),
    'Recovery: not accepted → retry(2) · not delivered → pause · dispute lost → fail'
    + '; #1: not delivered → reassign; #2: not accepted → retry(2), dispute lost → retry with another executor');
  assert.equal(recoverySummary({ subtasks: [] }),
    'Recovery: not accepted → pause · not delivered → pause · dispute lost → fail', 'the defaults');
});

test('a choice reads with its policy, its reason and the runner-up', () => {
  const c = {
    index: 0, policy: 'balanced', executor: '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', price: '200000', score_bps: 8100,
    reason: 'balanced: 81% reliable at 0.20 USDC',
    runner_up: { executor: '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', price: 250000, score_bps: 7000, reason: 'dearer: 0.25 USDC against 0.20 USDC' },
  };
  const names = { '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb': 'sentiment-b' };
  assert.equal(choiceText(c, (a) => names[a] ?? a),
    'chosen by balanced: 81% reliable at 0.20 USDC; runner-up sentiment-b (0.250000 USDC): dearer: 0.25 USDC against 0.20 USDC');
  assert.equal(choiceText({ ...c, runner_up: undefined, reason: 'the only offer' }), 'chosen by balanced: the only offer',
    'a reason not opening with the policy word is kept whole');
  assert.match(choiceText(c), /runner-up 0xbbbb…bbbb /, 'addresses are shortened by default');
  assert.equal(choiceText(null), '');

  const plan = { ...strategyPlan, choices: [c] };
  assert.equal(choiceFor(plan, plan.subtasks[0]), c, 'the chosen executor, whatever the address case');
  assert.equal(choiceFor(plan, { ...plan.subtasks[0], executor: '0xcccccccccccccccccccccccccccccccccccccccc' }), null,
    'an edit that changed the executor leaves the choice behind');
  assert.equal(choiceFor(plan, plan.subtasks[1]), null, 'no choice recorded');
});

test('the new events read in the log: checkpoints, skipped steps, recovery', () => {
  assert.equal(eventNote({ kind: 'checkpoint_reached', name: 'tone-check', after: [0], outputs: { 0: '{}' }, timeout_secs: 300, on_timeout: 'escalate' }),
    'tone-check reached after #0: waiting for an approver (5 min, then escalate to a person)');
  assert.equal(eventNote({ kind: 'checkpoint_approved', name: 'tone-check', by: 'approver' }), 'tone-check approved by the approver');
  assert.equal(eventNote({ kind: 'checkpoint_rejected', name: 'legal', by: 'approver', reason: 'names a client' }),
    'legal rejected by the approver: names a client');
  assert.equal(eventNote({ kind: 'checkpoint_approved', name: 'legal', by: 'timeout' }), 'legal approved by its timeout');
  assert.equal(eventNote({ kind: 'checkpoint_escalated', name: 'legal' }), 'legal escalated: waiting for a person');
  assert.equal(eventNote({ kind: 'subtask_skipped', index: 1, reason: 'its condition `out[0].score > 100` is false', condition: 'out[0].score > 100' }),
    'skipped: its condition `out[0].score > 100` is false');
  assert.equal(eventNote({ kind: 'subtask_skipped', index: 3, reason: 'everything it depends on was skipped' }),
    'skipped: everything it depends on was skipped');
  assert.equal(eventNote({ kind: 'subtask_skipped', index: 2, reason: 'false', condition: 'out[0].ok' }), 'skipped: false (condition out[0].ok)');
  assert.equal(eventNote({ kind: 'recovery_applied', index: 0, policy: 'retry(2)', attempt: 1, reason: 'sub-task 0 attempt 0: expired' }),
    'retry(2), attempt 1: sub-task 0 attempt 0: expired');
  assert.equal(eventNote({ kind: 'plan_paused', index: 0, reason: 'checkpoint tone-check: approve or reject' }),
    'checkpoint tone-check: approve or reject');
  assert.equal(eventNote({ kind: 'subtask_paid', index: 0 }), '');
});

test('a decline reads as who declined and why, in the drawer and the log', () => {
  const ev = {
    kind: 'subtask_declined', index: 1, task_id: '77',
    executor: '0x00000000000000000000000000000000000000e1',
    reason: 'unreadable envelope:\n  no blob stored for sha256:ab',
  };
  assert.equal(declineNote(ev), 'declined by 0x0000…00e1: unreadable envelope: no blob stored for sha256:ab');
  assert.equal(declineNote(ev, () => 'translator'), 'declined by translator: unreadable envelope: no blob stored for sha256:ab');
  assert.equal(declineNote({ ...ev, reason: '' }, () => 'translator'), 'declined by translator: no reason given');
  assert.equal(declineNote({ ...ev, reason: undefined }, () => 'translator'), 'declined by translator: no reason given');
  assert.equal(eventNote(ev), declineNote(ev), 'the log reads it the same way');
  assert.ok(EVENT_KINDS.includes('subtask_declined'), 'the run page listens for it');
});

test('a reorganised sub-task reads as where it was and where it is now', () => {
  assert.ok(EVENT_KINDS.includes('subtask_reorged'), 'the run page listens for it');
  assert.equal(
    eventNote({ kind: 'subtask_reorged', index: 0, was: 'paid', now: 'completed' }),
    'reorganised out of the chain: was paid, now completed; sent again',
  );
});

// Issue 28's plan as the server flattens it: root step 2 (sentiment) is
// sub-task 3, and the checkpoint and condition the author wrote against
// step 2 read sub-task 3.
const nestedPlan = {
  groups: [{ path: '1', spec: 'Digest', budget: 200 }],
  subtasks: [
    { index: 0, path: '0', capability: 'translate' },
    { index: 1, path: '1.0', capability: 'entities', depends_on: [0] },
    { index: 2, path: '1.1', capability: 'sentiment', depends_on: [0] },
    { index: 3, path: '2', capability: 'sentiment', depends_on: [0], recovery: { on_expiry: 'reassign' } },
    { index: 4, path: '3', capability: 'summarize', depends_on: [1, 2, 3], when: 'out[3].score >= -1' },
  ],
  checkpoints: [{ name: 'tone', after: [3] }],
};

test('a nested plan names its steps by path, as its author numbered them', () => {
  assert.equal(stepName(nestedPlan, 3), '2');
  assert.equal(stepName(nestedPlan, 2), '1.1');
  assert.equal(stepName(strategyPlan, 2), '#2', 'a flat plan keeps its indexes');
  assert.equal(afterText([3], nestedPlan), '2');
  assert.equal(checkpointsOf(nestedPlan, undefined)[0].afterText, '2');
  assert.equal(afterText([0, 2], strategyPlan), '#0, #2');
  // The run view writes a nested plan's conditions by path.
  const conditions = { 3: 'out[2].score >= -1' };
  assert.equal(conditionNote(nestedPlan.subtasks[4], conditions), 'runs only if out[2].score >= -1');
  assert.equal(conditionNote(strategyPlan.subtasks[1], conditions), 'runs only if out[0].score > 100');
  assert.equal(eventNote({ kind: 'checkpoint_reached', name: 'tone', after: [3] }, nestedPlan),
    "tone reached after 2: waiting for an approver (the run's decision timeout, then escalate to a person)");
  assert.match(recoverySummary(nestedPlan), /; 2: not delivered → reassign$/);
});


test('the words of the brief that chose a capability read as a short quoted list', () => {
  assert.equal(chosenByText({ chosen_by: ['Write', 'haiku'] }), 'chosen by “Write”, “haiku”');
  assert.equal(chosenByText({ chosen_by: [] }), '');
  assert.equal(chosenByText({}), '');
  assert.equal(chosenByText(null), '');
  const many = chosenByText({ chosen_by: Array.from({ length: 12 }, (_, i) => `w${i}`) });
  assert.equal(many.split(', ').length, 8, 'at most eight words');
  assert.equal(chosenByText({ chosen_by: ['x'.repeat(30), 'two\nlines'] }),
    `chosen by “${'x'.repeat(24)}…”, “two lines”`);
});

test('a ruling reads as prose, labelled by who ruled', () => {
  const doc = (judge, flags) => JSON.stringify({ verdict: 'split', executor_share_bps: 5000, rationale: 'Half the points are missing.', judge, flags });
  assert.deepEqual(rulingOf(doc('offline-rubric')), { by: 'the offline rubric', prose: 'Half the points are missing.', flags: [] });
  assert.equal(rulingOf(doc('council:gpt-4o-mini')).by, 'a council (gpt-4o-mini)');
  assert.equal(rulingOf(doc('fallback', ['council_failed'])).by, 'the fallback rule, after the council failed');
  assert.deepEqual(rulingOf(doc('fallback', ['council_failed'])).flags, ['council_failed']);
  assert.equal(rulingOf(doc('appeal-arbiter')).by, 'appeal arbiter');
  // Not a verdict document: shown as it is, by nobody named.
  assert.deepEqual(rulingOf('plain words'), { by: null, prose: 'plain words', flags: [] });
});

test('a quiet chosen agent and a silent executor read as what happens next', () => {
  assert.match(quietText({ accept_window_blocks: 5 }), /No sign of life .* within 5 blocks, its task is cancelled at full refund/);
  assert.match(quietText({ accept_window_blocks: 0 }), /nothing cancels it before its deadline/);
  const ev = { kind: 'subtask_silent', index: 0, executor: '0x00000000000000000000000000000000000000a1', reason: '0xa1 neither accepted nor delivered in 6 blocks (accept window 5): cancelled at full refund' };
  assert.equal(eventNote(ev), `no sign of its executor: ${ev.reason}; it goes to its on_decline policy`);
  assert.ok(EVENT_KINDS.includes('subtask_silent'));
});
