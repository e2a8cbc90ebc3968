// The sponsor's side of an operator-mode orchestrator in the page: the
// wallet in the header (connect, sign in with EIP-4361, sign out) and the
// grant a sponsor reviews and signs to approve a plan. The wallet calls
// and the checks are in wallet.js and siwe.js; this module draws them.

import { $, h, act, banner, errorBox } from './dom.js';
import { api, health, session, setSession, clearSession, onSessionLost, runUrl } from './api.js';
import { go, redraw } from './nav.js';
import { signInMessage } from './siwe.js';
import { checksumAddress } from './keccak.js';
import {
  NO_WALLET, WalletError, connect, grantSummary, isRefusal, revokeGrant, shortAddress, signGrant, signText, walletMessage,
} from './wallet.js';

/// The injected EIP-1193 provider, when the browser has one.
const provider = () => globalThis.ethereum ?? null;

/// The account the wallet connected, this page load.
let connected = null;

/// A wallet failure in words (an API error keeps its own).
const words = (e) => {
  if (e instanceof WalletError && e.code === undefined) return e.message;
  return e?.code !== undefined ? walletMessage(e) : e.message;
};

/// Draws the wallet controls in the header (operator mode only).
export function setupWallet() {
  $('#token-form').hidden = true;
  const box = $('#wallet');
  box.hidden = false;
  onSessionLost(() => {
    drawWallet();
    banner('Your session expired or ended: sign in again with your wallet.');
  });
  provider()?.on?.('accountsChanged', (accounts) => {
    const now = accounts?.[0];
    const s = session();
    connected = now ? { ...(connected ?? {}), address: now } : null;
    if (s && (!now || now.toLowerCase() !== s.address.toLowerCase())) {
      clearSession();
      banner('The wallet switched accounts: sign in again as the new account.');
      redraw();
    }
    drawWallet();
  });
  drawWallet();
}

function drawWallet() {
  const box = $('#wallet');
  const note = h('span', { id: 'wallet-note', class: 'wallet-note', role: 'status', 'aria-live': 'polite' });
  const fail = (e) => { note.textContent = words(e); };
  const s = session();
  // Shown checksummed (EIP-55), as the sign-in message writes it.
  const address = s?.address ?? connected?.address;
  const shown = address ? checksumAddress(address) : null;
  const who = shown ? h('code', { id: 'wallet-address', title: shown }, shortAddress(shown)) : null;
  if (s) {
    const out = h('button', { type: 'button', id: 'sign-out' }, 'Sign out');
    out.addEventListener('click', async () => {
      out.disabled = true;
      try {
        await api('POST', '/api/auth/logout');
      } catch {
        // Ended here either way.
      }
      clearSession();
      drawWallet();
      redraw();
    });
    box.replaceChildren(h('span', { class: 'muted' }, 'Signed in as '), who, out, note);
    return;
  }
  if (!connected) {
    const button = h('button', { type: 'button', id: 'connect-wallet' }, 'Connect wallet');
    button.addEventListener('click', async () => {
      note.textContent = '';
      if (!provider()) {
        note.textContent = NO_WALLET;
        return;
      }
      button.disabled = true;
      try {
        connected = await connect(provider());
        drawWallet();
      } catch (e) {
        fail(e);
      } finally {
        button.disabled = false;
      }
    });
    box.replaceChildren(button, note);
    return;
  }
  const signIn = h('button', { type: 'button', class: 'primary', id: 'sign-in' }, 'Sign in');
  signIn.addEventListener('click', async () => {
    note.textContent = '';
    signIn.disabled = true;
    try {
      await signInWithWallet();
      drawWallet();
      banner('');
      redraw();
    } catch (e) {
      fail(e);
      signIn.disabled = false;
    }
  });
  box.replaceChildren(h('span', { class: 'muted' }, 'Wallet '), who, signIn, note);
}

/// Signs in as the connected account: the server's nonce, the EIP-4361
/// message signed with `personal_sign`, the session kept in this tab.
async function signInWithWallet() {
  const { nonce } = await api('GET', '/api/auth/nonce');
  const text = signInMessage({
    origin: location.origin,
    address: connected.address,
    chainId: health.chain_id,
    nonce,
    now: Math.floor(Date.now() / 1000),
  });
  const signature = await signText(provider(), connected.address, text);
  const out = await api('POST', '/api/auth/login', { message: text, signature });
  // The address as the wallet spells it (what the message says).
  setSession({ token: out.token, address: connected.address, expires_at: out.expires_at });
}

/// Operator mode's approval of run `id`: the grant the server asks for is
/// shown in `panel` (budget, operator, valid-until, the permit's amount)
/// before anything is signed; "Sign and approve" signs it (and the permit)
/// in the wallet and approves. A refusal leaves the plan proposed.
export async function reviewGrant(panel, view, confirmation) {
  const s = session();
  if (!s) throw new Error('sign in with your wallet first (Connect wallet, then Sign in, top right)');
  const req = await api('GET', `/api/runs/${view.id}/grant`);
  const terms = grantSummary(req, { sponsor: s.address, operator: health.operator, runId: view.id, cost: view.total_cost });
  const err = errorBox();
  const sign = h('button', { type: 'button', class: 'primary', id: 'sign-grant' }, 'Sign and approve');
  const back = h('button', { type: 'button', id: 'grant-back' }, 'Not now');
  sign.addEventListener('click', () => act(err, sign, async () => {
    try {
      if (!provider()) throw new WalletError(NO_WALLET);
      if (!connected) connected = await connect(provider());
      if (connected.address.toLowerCase() !== s.address.toLowerCase()) {
        throw new WalletError(`the wallet's account ${connected.address} is not the one signed in (${s.address}): switch accounts or sign in again`);
      }
      const body = await signGrant(provider(), s.address, req, confirmation);
      const next = await api('POST', `/api/runs/${view.id}/approve`, body);
      go(runUrl(next.id));
    } catch (e) {
      throw new Error(isRefusal(e) ? 'signature refused in the wallet: nothing was signed or sent, and the plan stays proposed' : words(e));
    }
  }));
  back.addEventListener('click', () => panel.replaceChildren());
  panel.replaceChildren(h('fieldset', { class: 'grant', id: 'grant-terms' },
    h('legend', {}, 'What you sign'),
    h('p', {}, 'Your wallet signs a grant: it lets this orchestrator\'s operator fund this plan\'s steps from your USDC, up to the budget, until the time shown. Nothing moves until a step starts; you can revoke the grant on chain.'),
    h('dl', { class: 'totals' },
      h('dt', {}, 'Budget'), h('dd', { id: 'grant-budget' }, `${terms.budget} USDC`),
      h('dt', {}, 'Operator'), h('dd', {}, h('code', { id: 'grant-operator' }, terms.operator)),
      h('dt', {}, 'Valid until'), h('dd', { id: 'grant-valid-until' }, terms.validUntil),
      h('dt', {}, 'Plan'), h('dd', {}, h('code', { title: terms.plan }, shortAddress(terms.plan))),
      h('dt', {}, 'Permit'), h('dd', { id: 'grant-permit' }, terms.permit
        ? `a second signature: the escrow ${shortAddress(terms.permit.spender)} may pull up to ${terms.permit.amount} USDC of yours (permit valid until ${terms.permit.deadline})`
        : 'none: your allowance to the escrow covers the plan')),
    h('div', { class: 'actions' }, sign, back),
    err));
  sign.focus();
}

/// Operator mode, a run past its proposal: the grant that funds it, and a
/// button with which the sponsor revokes it on chain from the wallet
/// (`revokeGrant`; steps already funded carry on, no new step is funded).
export function grantControl(id) {
  const box = h('section', { class: 'grant-control', 'aria-labelledby': 'grant-control-title' });
  const s = session();
  if (!s) return box;
  const err = errorBox();
  const note = h('p', { class: 'ok', id: 'revoke-note', 'aria-live': 'polite' });
  const revoke = h('button', { type: 'button', class: 'danger', id: 'revoke-grant' }, 'Revoke grant');
  revoke.addEventListener('click', () => act(err, revoke, async () => {
    try {
      const req = await api('GET', `/api/runs/${id}/grant`);
      if (!req.granted) throw new Error('this run was not approved with a grant: nothing to revoke');
      if (!provider()) throw new WalletError(NO_WALLET);
      if (!connected) connected = await connect(provider());
      if (connected.address.toLowerCase() !== s.address.toLowerCase()) {
        throw new WalletError(`the wallet's account ${connected.address} is not the one signed in (${s.address})`);
      }
      const tx = await revokeGrant(provider(), s.address, health.escrow, health.chain_id, req.granted.terms);
      note.textContent = `Revoke sent in transaction ${tx}: once mined, no further step of this plan is funded.`;
      revoke.remove();
    } catch (e) {
      throw new Error(isRefusal(e) ? 'transaction refused in the wallet: the grant stays live' : words(e));
    }
  }));
  box.append(h('h2', { id: 'grant-control-title' }, 'Your grant'),
    h('p', { class: 'muted' }, 'Your signed grant funds this plan\'s steps from your USDC. Revoking it (a transaction from your wallet) stops any further funding; steps already funded carry on.'),
    h('div', { class: 'actions' }, revoke), note, err);
  return box;
}
