// The plan as a drawn DAG: sub-tasks in columns by dependency depth, edges
// from each dependency to its dependant. Pure layout plus an SVG builder; no
// network, no state.

const SVG = 'http://www.w3.org/2000/svg';
export const NODE_W = 200;
export const NODE_H = 74;
const GAP_X = 64;
const GAP_Y = 22;
const PAD = 12;

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

/// x/y of each node, and the drawing's size.
export function layout(subtasks) {
  const col = layers(subtasks);
  const rows = new Map();
  const pos = new Map();
  for (const t of subtasks) {
    const c = col.get(t.index) ?? 0;
    const r = rows.get(c) ?? 0;
    rows.set(c, r + 1);
    pos.set(t.index, { x: PAD + c * (NODE_W + GAP_X), y: PAD + r * (NODE_H + GAP_Y) });
  }
  const cols = Math.max(1, ...[...col.values()].map((c) => c + 1));
  const maxRows = Math.max(1, ...rows.values());
  return {
    pos,
    width: PAD * 2 + cols * NODE_W + (cols - 1) * GAP_X,
    height: PAD * 2 + maxRows * NODE_H + (maxRows - 1) * GAP_Y,
  };
}

function el(name, attrs = {}, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/// An SVG of the plan. `label(t)` gives a node's lines [title, line2, line3],
/// `phase(t)` its CSS phase, `onOpen(t)` runs on click / Enter / Space.
export function drawDag(subtasks, { label, phase, onOpen, selected }) {
  const { pos, width, height } = layout(subtasks);
  const svg = el('svg', {
    viewBox: `0 0 ${width} ${height}`,
    class: 'dag',
    role: 'group',
    'aria-label': `Plan graph: ${subtasks.length} sub-task(s)`,
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
  for (const t of subtasks) {
    const p = pos.get(t.index);
    const lines = label(t);
    const ph = phase(t);
    const g = el('g', {
      class: `node phase-${ph}${selected === t.index ? ' selected' : ''}`,
      transform: `translate(${p.x},${p.y})`,
      tabindex: 0,
      role: 'button',
      'data-index': t.index,
      'data-phase': ph,
      'aria-label': `Sub-task ${t.index}: ${lines.join(', ')}; ${ph}. Open details`,
    });
    g.append(el('rect', { width: NODE_W, height: NODE_H, rx: 8, ry: 8 }));
    g.append(el('text', { x: 10, y: 20, class: 'n-title' }, `#${t.index} ${lines[0]}`));
    g.append(el('text', { x: 10, y: 40, class: 'n-line' }, lines[1] ?? ''));
    g.append(el('text', { x: 10, y: 60, class: 'n-line' }, lines[2] ?? ''));
    g.append(el('text', { x: NODE_W - 10, y: 20, class: 'n-phase', 'text-anchor': 'end' }, ph));
    g.addEventListener('click', () => onOpen(t));
    g.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') {
        ev.preventDefault();
        onOpen(t);
      }
    });
    svg.append(g);
  }
  return svg;
}
