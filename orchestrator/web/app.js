// Tessera's plan card: brief → classification → plan card (approve / edit /
// cancel) → live DAG with a drawer per sub-task; past plans and agents from
// the embedded indexer. Talks only to the orchestrator that serves it.
//
// Plain ES modules, no bundler: format.js (pure formatting), dom.js,
// api.js, agents.js, nav.js, siwe.js and wallet.js (the sponsor's wallet,
// pure), sse.js, sponsor.js (the wallet in the page), and one module per view — brief.js,
// plan-card.js, run.js, drawer.js, pages.js (history, agents); dag.js draws
// the graph. This file routes and starts.

import { $, banner } from './dom.js';
import { TOKEN_KEY, token, loadHealth, operatorMode } from './api.js';
import { setupWallet } from './sponsor.js';
import { go, leave, setRouter } from './nav.js';
import { briefPage } from './brief.js';
import { runPage } from './run.js';
import { closeDrawer, setupDrawer } from './drawer.js';
import { historyPage, agentsPage } from './pages.js';

async function route() {
  leave();
  closeDrawer();
  banner('');
  const main = $('#main');
  main.replaceChildren();
  const path = location.pathname;
  for (const a of document.querySelectorAll('nav a')) {
    const here = a.getAttribute('href') === path || (a.getAttribute('href') === '/history' && path.startsWith('/runs'));
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const run = /^\/runs\/(0x[0-9a-fA-F]{64})\/?$/.exec(path);
  if (run) return runPage(main, run[1].toLowerCase());
  if (path === '/history' || path === '/runs') return historyPage(main);
  if (path === '/agents') return agentsPage(main);
  return briefPage(main);
}

document.addEventListener('click', (ev) => {
  const a = ev.target.closest?.('a[data-nav]');
  if (!a || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) return;
  ev.preventDefault();
  go(a.getAttribute('href'));
});
window.addEventListener('popstate', route);

// ------------------------------------------------------------------- start --

function setupToken() {
  // A link may carry the token in its fragment (never sent to the server);
  // it is kept in this browser and removed from the address bar.
  const frag = new URLSearchParams(location.hash.slice(1));
  if (frag.get('token')) {
    localStorage.setItem(TOKEN_KEY, frag.get('token'));
    history.replaceState({}, '', location.pathname + location.search);
  }
  const input = $('#token');
  input.value = token();
  $('#token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    localStorage.setItem(TOKEN_KEY, input.value.trim());
    banner(input.value.trim() ? '' : 'Token cleared: state changes will be refused.');
  });
}

setupDrawer();
setRouter(route);
setupToken();
loadHealth().then(() => {
  // Operator mode: sponsors sign in with their wallets instead of a token.
  if (operatorMode()) setupWallet();
  return route();
});
