// The agents page's pure parts: reliability from the weighed record (not the
// raw success rate), the weighing and identity in words, feedback with its
// proof, and the ranking request. `make js-test` runs this with node's
// test runner.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  weighedReliability, reliability, recordText, weighedText, identityText, feedbackSummary, feedbackValue,
  proofHref, capabilities, rankingPath, resultFields, fieldText, cheapestPrice, offererRecord, offeredText,
} from './agents.js';

const agent = (evidence, extra = {}) => ({
  agent: '0x00000000000000000000000000000000000000b2',
  status: 'active',
  offers: { translate: '800000' },
  stats: { completed: 100, refunded: 0, expired: 0, success_rate: 1, evidence },
  ...extra,
});

test('reliability is read from the weighed record, as selection reads it', () => {
  // A hundred self-funded one-unit tasks: all below the floor, they weigh nothing.
  const sybil = agent({ completed: 0, failed: 0, funders: 0, linked_funders: 0, below_floor: 100, own: 0 });
  assert.equal(weighedReliability(sybil), 2 / 3);
  assert.equal(reliability(sybil), '67% reliable');
  const honest = agent({ completed: 2.5, failed: 1.5, funders: 3, linked_funders: 1, below_floor: 0, own: 0 });
  assert.equal(reliability(honest), '64% reliable');
  assert.equal(reliability({ stats: { success_rate: 1 } }), 'no record yet');
  assert.equal(recordText(sybil), '100/100 settled');
  assert.equal(recordText({ stats: { completed: 0, refunded: 0, expired: 0 } }), 'no settled tasks');
});

test('the weighing says its funders, those the agent paid, and what fell below the floor', () => {
  assert.equal(weighedText(agent({ completed: 2.5, failed: 1.5, funders: 3, linked_funders: 1, below_floor: 100 })),
    '4.0 from 3 funders · 1 paid by the agent · 100 below the floor');
  assert.equal(weighedText(agent({ completed: 1, failed: 0, funders: 1, linked_funders: 0, below_floor: 0 })), '1.0 from 1 funder');
  assert.equal(weighedText(agent({ completed: 0, failed: 0, funders: 0, linked_funders: 0, below_floor: 0 })), 'nothing weighed yet');
  assert.equal(weighedText({ stats: {} }), '—');
});

test('identity and feedback show when the indexer serves them, and are absent otherwise', () => {
  const bare = agent({ completed: 0, failed: 0, funders: 0 });
  assert.equal(identityText(bare), null);
  assert.equal(feedbackSummary(bare), null);
  assert.equal(identityText({ identity: null }), null);
  const known = agent({ completed: 0, failed: 0, funders: 0 }, {
    identity: { agent_id: '12', registry: '0xr', owner: '0xo', wallet: null, uri: 'ipfs://x' },
    feedback: { count: 3, matched: 2, average: 87.5, latest: [] },
  });
  assert.equal(identityText(known), '#12');
  assert.equal(feedbackSummary(known), '2 of 3 matched · average 87.5');
  assert.equal(feedbackSummary({ feedback: { count: 0, matched: 0, average: null, latest: [] } }), 'none yet');
  assert.equal(feedbackSummary({ feedback: { count: 1, matched: 0, average: null, latest: [] } }), '0 of 1 matched');
});

test('feedback values scale by their decimals, and only matched feedback links its task', () => {
  assert.equal(feedbackValue({ value: '950', value_decimals: 1 }), '95');
  assert.equal(feedbackValue({ value: 5, value_decimals: 2 }), '0.05');
  assert.equal(feedbackValue({ value: '-125', value_decimals: 2 }), '-1.25');
  assert.equal(feedbackValue({ value: 7, value_decimals: 0 }), '7');
  assert.equal(feedbackValue({ value: 'x' }), '?');
  const task = `0x${'ab'.repeat(32)}`;
  assert.equal(proofHref({ matched: true, task_id: task }), `/index/api/tasks/${task}`);
  assert.equal(proofHref({ matched: false, task_id: task, why: 'amount differs' }), null);
  assert.equal(proofHref({ matched: true, task_id: null }), null);
});

test('the picker offers what active agents offer, and asks the ranking for it', () => {
  const list = [
    { status: 'active', offers: { translate: '1', summarize: '2' } },
    { status: 'paused', offers: { extract: '3' } },
    { status: 'active', offers: { summarize: '4' } },
    { status: 'active', offers: null },
  ];
  assert.deepEqual(capabilities(list), ['summarize', 'translate']);
  assert.equal(rankingPath('translate', 'reliable'), '/api/agents/ranking?capability=translate&policy=reliable');
  assert.equal(rankingPath('a b', 'balanced'), '/api/agents/ranking?capability=a%20b&policy=balanced');
});

test('the catalogue reads result fields, the cheapest offer and each offerer\'s record', () => {
  const schema = {
    type: 'object',
    required: ['translation'],
    properties: {
      translation: { type: 'string' },
      summary: { type: 'object', properties: { bullets: { type: 'array', items: { type: 'string' } } } },
      dates: { type: 'array', items: { type: 'object', properties: { iso: { type: 'string' } } } },
    },
  };
  assert.deepEqual(resultFields(schema).map(fieldText), [
    'translation: string (always)', 'summary: object', 'summary.bullets[]: string', 'dates[]: object', 'dates[].iso: string',
  ]);
  assert.deepEqual(resultFields(undefined), []);
  assert.equal(resultFields(schema, 2).length, 2, 'bounded');
  // A hostile schema: wrong types read as `?`, nothing thrown.
  assert.deepEqual(resultFields({ properties: { x: { type: { evil: 1 } }, y: null } }).map(fieldText), ['x: ?', 'y: ?']);
  const entry = {
    offered_by: 3,
    offerers: [
      { agent: '0xa', price: '150000', record: { settled: 6, completed: 5, reliability: 0.7778 } },
      { agent: '0xb', price: '90000', record: { settled: 0, completed: 0, reliability: 2 / 3 } },
      { agent: '0xc', price: 'lots' },
    ],
  };
  assert.equal(cheapestPrice(entry), '90000');
  assert.equal(cheapestPrice({ offerers: [] }), null);
  assert.equal(offererRecord(entry.offerers[0]), '78% reliable · 5/6 settled');
  assert.equal(offererRecord(entry.offerers[1]), '67% reliable · no settled tasks');
  assert.equal(offererRecord(entry.offerers[2]), 'no record');
  assert.equal(offeredText(entry), 'offered by 3 active agents');
  assert.equal(offeredText({ offered_by: 40, offerers: new Array(32).fill({}) }), 'offered by 40 active agents (the 32 cheapest listed)');
  assert.equal(offeredText({ offered_by: 0, offerers: [] }), 'offered by nobody active');
});
