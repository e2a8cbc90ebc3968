// Layout of the plan graph (pure functions of dag.js): `make test` runs this
// with node's test runner.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layers, layout, NODE_W, NODE_H } from './dag.js';

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
