// Layout of the plan graph (pure functions of dag.js), and the SVG drawDag
// builds (over a minimal stand-in for the DOM: node has none): `make test`
// runs this with node's test runner.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layers, layout, drawDag, NODE_W, NODE_H, GATE_GAP, GATE_R } from './dag.js';
import { checkpointsOf } from './format.js';

const t = (index, depends_on = []) => ({ index, depends_on });

test('roots sit in column 0 and each step one past its deepest dependency', () => {
  // 0 → 1 → 3, 0 → 2 → 3, and 4 on its own.
  const col = layers([t(0), t(1, [0]), t(2, [0]), t(3, [1, 2]), t(4)]);
  assert.deepEqual([...col.entries()].sort(([a], [b]) => a - b), [[0, 0], [1, 1], [2, 1], [3, 2], [4, 0]]);
});

test('a long edge does not pull a node left of its deepest dependency', () => {
  // 3 needs 0 directly and 2 through 1: it goes after 2.
  const col = layers([t(0), t(1, [0]), t(2, [1]), t(3, [0, 2])]);
  assert.equal(col.get(3), 3);
});

test('nodes in one column stack without overlapping, and the drawing fits them', () => {
  const subtasks = [t(0), t(1), t(2), t(3, [0, 1, 2])];
  const { pos, width, height } = layout(subtasks);
  const ys = [0, 1, 2].map((i) => pos.get(i).y).sort((a, b) => a - b);
  for (let i = 1; i < ys.length; i += 1) assert.ok(ys[i] - ys[i - 1] >= NODE_H, 'rows do not overlap');
  assert.ok(pos.get(3).x >= pos.get(0).x + NODE_W, 'the dependant is to the right');
  for (const p of pos.values()) {
    assert.ok(p.x + NODE_W <= width && p.y + NODE_H <= height, 'inside the drawing');
  }
});

test('unknown dependencies and cycles do not hang the layout', () => {
  assert.equal(layers([t(0, [7])]).get(0), 0, 'a dependency outside the plan is ignored');
  const col = layers([t(0, [1]), t(1, [0])]);
  assert.equal(col.size, 2);
});

test('a gate sits in the widened gap after the sub-tasks it follows, inside the drawing', () => {
  // 0 → 1, 0 → 2; a gate after 0, another after 1 and 2 (the last column).
  const subtasks = [t(0), t(1, [0]), t(2, [0])];
  const plain = layout(subtasks);
  const { pos, gates, width, height } = layout(subtasks, [{ name: 'tone', after: [0] }, { name: 'end', after: [1, 2] }]);
  assert.equal(pos.get(1).x - (pos.get(0).x + NODE_W), GATE_GAP, 'the gap holding a gate is wider');
  const tone = gates.get('tone');
  assert.ok(tone.x - GATE_R > pos.get(0).x + NODE_W && tone.x + GATE_R < pos.get(1).x, 'between the columns');
  assert.equal(tone.y, pos.get(0).y + NODE_H / 2, 'level with what it follows');
  assert.deepEqual(tone.after, [0]);
  const end = gates.get('end');
  assert.ok(end.x > pos.get(1).x + NODE_W, 'after the last column');
  assert.equal(end.y, (pos.get(1).y + pos.get(2).y) / 2 + NODE_H / 2, 'level with the middle of both');
  assert.ok(end.x + GATE_GAP / 2 <= width && width === plain.width + 2 * (GATE_GAP - 64) + 64, 'the drawing widens for both gaps');
  for (const g of gates.values()) assert.ok(g.y + GATE_R < height, 'inside the drawing');
});

test('gates sharing a gap stack apart; a checkpoint after nothing drawn gets no gate', () => {
  const { gates, height } = layout([t(0), t(1, [0])], [
    { name: 'a', after: [0] }, { name: 'b', after: [0] }, { name: 'c', after: [0] }, { name: 'ghost', after: [9] },
  ]);
  const ys = ['a', 'b', 'c'].map((n) => gates.get(n).y);
  for (let i = 1; i < ys.length; i += 1) assert.ok(ys[i] - ys[i - 1] >= 2 * GATE_R + 28, 'no overlap');
  assert.ok(ys[2] + GATE_R + 28 <= height, 'the drawing grows to hold the last');
  assert.equal(gates.has('ghost'), false);
});

// Just enough of the DOM for drawDag: elements with attributes, children,
// text, style and listeners.
class FakeElement {
  constructor(name) {
    this.name = name;
    this.attrs = {};
    this.children = [];
    this.listeners = {};
    this.style = {};
    this.textContent = '';
  }
  setAttribute(k, v) { this.attrs[k] = v; }
  getAttribute(k) { return this.attrs[k] ?? null; }
  append(...cs) { this.children.push(...cs); }
  addEventListener(kind, fn) { (this.listeners[kind] ??= []).push(fn); }
  fire(kind, ev = {}) { for (const fn of this.listeners[kind] ?? []) fn({ preventDefault() {}, ...ev }); }
  all(pred) {
    return this.children.flatMap((c) => [...(pred(c) ? [c] : []), ...c.all(pred)]);
  }
}

test('checkpoints are drawn as focusable gates with their state, and conditional nodes are marked', () => {
  globalThis.document = { createElementNS: (_ns, name) => new FakeElement(name) };
  try {
    const subtasks = [
      { index: 0, capability: 'sentiment-classify', depends_on: [] },
      { index: 1, capability: 'summarize', depends_on: [0], when: 'out[0].score > 100' },
      { index: 2, capability: 'extract-entities', depends_on: [0] },
    ];
    const plan = { subtasks, checkpoints: [{ name: 'tone-check', after: [0], timeout_secs: 60, on_timeout: 'reject' }] };
    const opened = [];
    const svg = drawDag(subtasks, {
      label: (s) => [s.capability, 'agent', '1 USDC'],
      phase: (s) => (s.index === 1 ? 'skipped' : 'paid'),
      onOpen: () => {},
      checkpoints: checkpointsOf(plan, { 'tone-check': { state: 'reached', at: 1 } }),
      onGate: (cp) => opened.push(cp.name),
    });
    const gates = svg.all((e) => e.attrs.class?.split(' ').includes('gate'));
    assert.equal(gates.length, 1);
    const g = gates[0];
    assert.equal(g.name, 'g');
    assert.equal(g.attrs['data-gate'], 'tone-check');
    assert.equal(g.attrs['data-state'], 'reached');
    assert.equal(g.attrs.role, 'button');
    assert.equal(g.attrs.tabindex, '0');
    assert.equal(g.attrs['aria-label'], 'Checkpoint tone-check: reached');
    assert.match(g.attrs.class, /\bopen\b/);
    assert.ok(g.all((e) => e.textContent === 'tone-check').length, 'its name is drawn');
    g.fire('keydown', { key: 'Enter' });
    g.fire('keydown', { key: 'x' });
    g.fire('click');
    assert.deepEqual(opened, ['tone-check', 'tone-check'], 'Enter and click activate it');
    // In tab order right after the node it follows.
    const order = svg.children.filter((e) => e.attrs.role === 'button').map((e) => e.attrs['data-index'] ?? e.attrs['data-gate']);
    assert.deepEqual(order, ['0', 'tone-check', '1', '2']);
    assert.equal(svg.all((e) => e.attrs.class === 'gate-link').length, 1, 'linked to what it follows');

    const nodes = svg.all((e) => e.attrs.class?.split(' ').includes('node'));
    const cond = nodes.find((n) => n.attrs['data-index'] === '1');
    assert.match(cond.attrs.class, /\bconditional\b/);
    assert.match(cond.attrs.class, /\bphase-skipped\b/);
    assert.equal(cond.attrs['aria-label'], 'Sub-task 1: summarize, agent, 1 USDC; skipped; runs only if out[0].score > 100. Open details');
    assert.equal(cond.all((e) => e.textContent === 'if').length, 1, 'an if badge');
    // A long title gives way to the phase; the whole of it stays in a tooltip.
    const long = nodes.find((n) => n.attrs['data-index'] === '0');
    const title = long.all((e) => e.attrs.class === 'n-title')[0].textContent;
    assert.ok(title.endsWith('…') && '#0 sentiment-classify'.startsWith(title.slice(0, -1)), title);
    assert.ok(long.children.some((e) => e.name === 'title' && e.textContent === '#0 sentiment-classify'));
    const plain = nodes.find((n) => n.attrs['data-index'] === '2');
    assert.equal(cond.all((e) => e.attrs.class === 'n-title')[0].textContent, '#1 summarize', 'a short one is whole');
    assert.equal(cond.children.filter((e) => e.name === 'title').length, 0);
    assert.doesNotMatch(plain.attrs.class, /conditional/);
    assert.equal(plain.all((e) => e.textContent === 'if').length, 0);
    assert.match(svg.attrs['aria-label'], /3 sub-task\(s\), 1 checkpoint\(s\)/);
  } finally {
    delete globalThis.document;
  }
});
