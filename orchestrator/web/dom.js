// DOM helpers: element building with text nodes only (the CSP forbids
// inline script, and nothing is parsed as HTML), the banner, error boxes and
// the busy-button pattern.

export const $ = (sel, root = document) => root.querySelector(sel);

/// An element with attributes and children (strings become text nodes).
export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function banner(message) {
  const b = $('#banner');
  b.textContent = message ?? '';
  b.hidden = !message;
}

export function errorBox() {
  return h('p', { class: 'error', role: 'alert', 'aria-live': 'assertive' });
}

/// Runs `work`, showing its error in `box`; disables `button` meanwhile.
export async function act(box, button, work) {
  if (box) box.textContent = '';
  if (button) button.disabled = true;
  try {
    return await work();
  } catch (e) {
    if (box) box.textContent = e.message;
    else banner(e.message);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}
