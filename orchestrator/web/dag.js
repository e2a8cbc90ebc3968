// The plan as a drawn DAG: sub-tasks in columns by dependency depth, edges
// from each dependency to its dependant, checkpoints as gates in the gap
// after the sub-tasks they follow, conditional sub-tasks marked `if`. Pure
// layout plus an SVG builder; no network, no state.

import { conditionNote } from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
export const NODE_W = 200;
export const NODE_H = 74;
const GAP_X = 64;
/// A column gap holding a gate: room for its marker and its name.
export const GATE_GAP = 132;
/// Half the gate marker's diagonal.
export const GATE_R = 13;
/// A gate's marker, name and state lines, from its centre down.
const GATE_BELOW = 42;
const GATE_STEP = GATE_R + GATE_BELOW + 6;
const GAP_Y = 22;
const PAD = 12;
/// Longest gate name drawn in full (the aria-label always has it all).
const GATE_LABEL = 17;

/// Column of each sub-task: 0 for roots, else one past its deepest dependency.
export function layers(subtasks) {
  const byIndex = new Map(subtasks.map((t) => [t.index, t]));
  const memo = new Map();
  const depth = (i, seen = new Set()) => {
    if (memo.has(i)) return memo.get(i);
    if (seen.has(i)) return 0; // a cycle: the server refuses these; draw flat
    seen.add(i);
    const t = byIndex.get(i);
    const deps = (t?.depends_on ?? []).filter((d) => byIndex.has(d));
    const d = deps.length ? 1 + Math.max(...deps.map((x) => depth(x, seen))) : 0;
    memo.set(i, d);
    return d;
  };
  subtasks.forEach((t) => depth(t.index));
  return memo;
}

/// x/y of each node, the centre of each checkpoint's gate (by name), and
/// the drawing's size. A gate sits in the gap after the rightmost sub-task
/// it follows, level with the middle of those it follows; that gap widens
/// to GATE_GAP, and gates sharing a gap stack without overlapping.
/// Checkpoints following no drawn sub-task get no gate.
export function layout(subtasks, checkpoints = []) {
  const col = layers(subtasks);
  const rows = new Map();
  const ys = new Map();
  for (const t of subtasks) {
    const c = col.get(t.index) ?? 0;
    const r = rows.get(c) ?? 0;
    rows.set(c, r + 1);
    ys.set(t.index, PAD + r * (NODE_H + GAP_Y));
  }
  const cols = Math.max(1, ...[...col.values()].map((c) => c + 1));
  const placed = (checkpoints ?? [])
    .map((cp) => ({ cp, after: (cp.after ?? []).filter((i) => col.has(i)) }))
    .filter((g) => g.after.length)
    .map(({ cp, after }) => ({
      name: cp.name,
      c: Math.max(...after.map((i) => col.get(i))),
      y: after.reduce((sum, i) => sum + ys.get(i) + NODE_H / 2, 0) / after.length,
    }));
  const gated = new Set(placed.map((g) => g.c));
  const gap = (c) => (gated.has(c) ? GATE_GAP : GAP_X);
  const colX = [];
  let x = PAD;
  for (let c = 0; c < cols; c += 1) {
    colX.push(x);
    x += NODE_W + gap(c);
  }
  const pos = new Map();
  for (const t of subtasks) pos.set(t.index, { x: colX[col.get(t.index) ?? 0], y: ys.get(t.index) });
  const gates = new Map();
  for (let c = 0; c < cols; c += 1) {
    let floor = -Infinity;
    for (const g of placed.filter((p) => p.c === c).sort((a, b) => a.y - b.y)) {
      const y = Math.max(g.y, floor);
      floor = y + GATE_STEP;
      gates.set(g.name, { x: colX[c] + NODE_W + GATE_GAP / 2, y, after: [] });
    }
  }
  for (const cp of checkpoints ?? []) {
    if (gates.has(cp.name)) gates.get(cp.name).after = (cp.after ?? []).filter((i) => col.has(i));
  }
  const maxRows = Math.max(1, ...rows.values());
  const lowest = Math.max(0, ...[...gates.values()].map((g) => g.y + GATE_BELOW));
  return {
    pos,
    gates,
    width: colX[cols - 1] + NODE_W + (gated.has(cols - 1) ? GATE_GAP : 0) + PAD,
    height: Math.max(PAD * 2 + maxRows * NODE_H + (maxRows - 1) * GAP_Y, lowest + PAD),
  };
}

function el(name, attrs = {}, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

const GATE_GLYPH = { pending: '', reached: '‖', escalated: '!', approved: '✓', rejected: '✕' };
const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

/// Runs `fn` on click, Enter and Space.
function activate(g, fn) {
  g.addEventListener('click', () => fn());
  g.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      fn();
    }
  });
}

/// An SVG of the plan. `label(t)` gives a node's lines [title, line2, line3],
/// `phase(t)` its CSS phase, `onOpen(t)` runs on click / Enter / Space.
/// `checkpoints` (as `checkpointsOf` in format.js gives them: name, after,
/// state) are drawn as gates, each a focusable control running
/// `onGate(checkpoint)`; a sub-task with a condition (`when`) gets an `if`
/// badge and its condition in its label.
export function drawDag(subtasks, { label, phase, onOpen, selected, checkpoints = [], conditions, onGate = () => {} }) {
  const { pos, gates, width, height } = layout(subtasks, checkpoints);
  const svg = el('svg', {
    viewBox: `0 0 ${width} ${height}`,
    class: 'dag',
    role: 'group',
    'aria-label': `Plan graph: ${subtasks.length} sub-task(s)${gates.size ? `, ${gates.size} checkpoint(s)` : ''}`,
    preserveAspectRatio: 'xMinYMin meet',
  });
  svg.style.maxWidth = `${width}px`;
  const defs = el('defs');
  const marker = el('marker', {
    id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7,
    orient: 'auto-start-reverse',
  });
  marker.append(el('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }));
  defs.append(marker);
  svg.append(defs);
  for (const t of subtasks) {
    for (const d of t.depends_on ?? []) {
      const a = pos.get(d);
      const b = pos.get(t.index);
      if (!a || !b) continue;
      const x1 = a.x + NODE_W;
      const y1 = a.y + NODE_H / 2;
      const x2 = b.x - 2;
      const y2 = b.y + NODE_H / 2;
      const mid = (x1 + x2) / 2;
      svg.append(el('path', {
        d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
        class: 'edge', 'marker-end': 'url(#arrow)', 'data-from': d, 'data-to': t.index,
      }));
    }
  }
  // The links from the sub-tasks a gate follows to the gate, under the nodes.
  for (const [name, g] of gates) {
    for (const i of g.after) {
      const a = pos.get(i);
      const x1 = a.x + NODE_W;
      const y1 = a.y + NODE_H / 2;
      const x2 = g.x - GATE_R;
      const mid = (x1 + x2) / 2;
      svg.append(el('path', {
        d: `M${x1},${y1} C${mid},${y1} ${mid},${g.y} ${x2},${g.y}`,
        class: 'gate-link', 'data-gate': name, 'data-from': i,
      }));
    }
  }
  const gateOf = (cp) => {
    const at = gates.get(cp.name);
    const state = cp.state ?? 'pending';
    const g = el('g', {
      class: `gate state-${state}${cp.open ? ' open' : ''}`,
      transform: `translate(${at.x},${at.y})`,
      tabindex: 0,
      role: 'button',
      'data-gate': cp.name,
      'data-state': state,
      'aria-label': `Checkpoint ${cp.name}: ${state}`,
    });
    g.append(el('title', {}, `Checkpoint ${cp.name} after ${cp.afterText ?? at.after.map((i) => `#${i}`).join(', ')}: ${state}`));
    g.append(el('path', { d: `M0,${-GATE_R} L${GATE_R},0 L0,${GATE_R} L${-GATE_R},0 Z`, class: 'gate-mark' }));
    g.append(el('text', { x: 0, y: 4, class: 'gate-glyph', 'text-anchor': 'middle' }, GATE_GLYPH[state] ?? ''));
    g.append(el('text', { x: 0, y: GATE_R + 14, class: 'gate-name', 'text-anchor': 'middle' }, clip(cp.name, GATE_LABEL)));
    g.append(el('text', { x: 0, y: GATE_R + 27, class: 'gate-state', 'text-anchor': 'middle' }, state));
    activate(g, () => onGate(cp));
    return g;
  };
  // Each gate comes after the last node it follows, so Tab meets it there.
  const order = new Map(subtasks.map((t, n) => [t.index, n]));
  const drawn = (checkpoints ?? []).filter((cp) => gates.has(cp.name));
  const lastOf = (cp) => Math.max(...gates.get(cp.name).after.map((i) => order.get(i)));
  subtasks.forEach((t, n) => {
    const p = pos.get(t.index);
    const lines = label(t);
    const ph = phase(t);
    const cond = conditionNote(t, conditions);
    const g = el('g', {
      class: `node phase-${ph}${selected === t.index ? ' selected' : ''}${cond ? ' conditional' : ''}`,
      transform: `translate(${p.x},${p.y})`,
      tabindex: 0,
      role: 'button',
      'data-index': t.index,
      'data-phase': ph,
      'aria-label': `Sub-task ${t.index}: ${lines.join(', ')}; ${ph}${cond ? `; ${cond}` : ''}. Open details`,
    });
    g.append(el('rect', { width: NODE_W, height: NODE_H, rx: 8, ry: 8 }));
    // The title gives way to the phase at the right (whole in the label).
    const title = `#${t.index} ${lines[0]}`;
    const room = Math.floor((NODE_W - 32 - String(ph).length * 7.6) / 7.8);
    if (title.length > room) g.append(el('title', {}, title));
    g.append(el('text', { x: 10, y: 20, class: 'n-title' }, clip(title, room)));
    g.append(el('text', { x: 10, y: 40, class: 'n-line' }, lines[1] ?? ''));
    g.append(el('text', { x: 10, y: 60, class: 'n-line' }, lines[2] ?? ''));
    g.append(el('text', { x: NODE_W - 10, y: 20, class: 'n-phase', 'text-anchor': 'end' }, ph));
    if (cond) {
      const badge = el('g', { class: 'cond-badge', transform: `translate(${NODE_W - 32},${NODE_H - 24})`, 'aria-hidden': 'true' });
      badge.append(el('title', {}, cond));
      badge.append(el('rect', { width: 24, height: 16, rx: 4, ry: 4 }));
      badge.append(el('text', { x: 12, y: 12, 'text-anchor': 'middle' }, 'if'));
      g.append(badge);
    }
    activate(g, () => onOpen(t));
    svg.append(g);
    for (const cp of drawn.filter((c) => lastOf(c) === n)) svg.append(gateOf(cp));
  });
  return svg;
}
