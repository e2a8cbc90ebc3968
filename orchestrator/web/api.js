// The orchestrator's API (bearer token for state changes; in operator
// mode a sponsor's session for every call), the embedded indexer's, the
// chain it settles on, and reading spec / result URIs.

import { short, decodeDataUri } from './format.js';
import { $ } from './dom.js';

export const TOKEN_KEY = 'tessera.api-token';
export const token = () => localStorage.getItem(TOKEN_KEY) ?? '';

/// Operator mode: the signed-in sponsor's session (`{ token, address,
/// expires_at }`), kept in this tab's sessionStorage.
export const SESSION_KEY = 'tessera.session';

/// The session, when one is kept and not expired.
export function session() {
  try {
    const s = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null');
    if (s?.token && Number(s.expires_at) * 1000 > Date.now()) return s;
  } catch {
    // Not JSON: no session.
  }
  return null;
}

export function setSession(s) {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
}

export function clearSession() {
  sessionStorage.removeItem(SESSION_KEY);
}

/// Whether this orchestrator serves many sponsors, each signed in with a wallet.
export const operatorMode = () => health?.mode === 'operator';

let sessionLost = () => {};

/// What to do when the server refuses the session (expired or ended).
export function onSessionLost(fn) {
  sessionLost = fn;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/// Calls the API; state changes carry the bearer token. Throws ApiError with
/// the server's own message.
export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const sponsor = operatorMode() ? session() : null;
  if (operatorMode()) {
    if (sponsor) headers.Authorization = `Bearer ${sponsor.token}`;
  } else if (method !== 'GET') {
    if (!token()) throw new ApiError(401, 'set the API token (top right) first: the value of TESSERA_API_TOKEN');
    headers.Authorization = `Bearer ${token()}`;
  }
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (resp.status === 401 && operatorMode()) {
    if (sponsor) {
      clearSession();
      sessionLost();
      throw new ApiError(401, '401: your session expired or ended: sign in again with your wallet (Sign in, top right)');
    }
    throw new ApiError(401, '401: sign in with your wallet to see and decide your plans (Connect wallet, then Sign in, top right)');
  }
  if (!resp.ok) throw new ApiError(resp.status, `${resp.status}: ${json?.error ?? (text || resp.statusText)}`);
  return json;
}

/// The indexer's API, when this orchestrator embeds one; null otherwise.
export async function index(path) {
  try {
    return await api('GET', `/index/api${path}`);
  } catch (e) {
    if (e.status === 404 && path === '/agents') return null;
    throw e;
  }
}

export async function sha256Hex(bytes) {
  if (!globalThis.crypto?.subtle) return null;
  const d = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/// The text behind a spec, result or rationale URI: inline `data:` or
/// content-addressed `sha256:<hex>`, with or without its writer's location
/// hint `?src=<base-url>` (fetched from the orchestrator, which keeps what
/// its runs read, and checked).
export async function resolveUri(uri) {
  if (!uri) return null;
  if (uri.startsWith('data:')) return decodeDataUri(uri);
  const m = /^sha256:([0-9a-fA-F]{64})(?:\?src=\S+)?$/i.exec(uri);
  if (m) {
    const resp = await fetch(`/api/blobs/${m[1]}`);
    if (!resp.ok) throw new Error(`blob ${short(m[1])}: ${resp.status}`);
    const bytes = await resp.arrayBuffer();
    const got = await sha256Hex(bytes);
    if (got && got !== m[1].toLowerCase()) throw new Error('blob does not match its hash');
    return new TextDecoder().decode(bytes);
  }
  return uri;
}

export let health = null;

export async function loadHealth() {
  try {
    health = await api('GET', '/api/health');
    $('#chain').textContent = health.mode === 'operator'
      ? `chain ${health.chain_id} · operator ${short(health.operator)}`
      : `chain ${health.chain_id} · sponsor ${short(health.sponsor)}`;
  } catch {
    $('#chain').textContent = 'orchestrator unreachable';
  }
}

/// The shareable URL of run `id` (names the chain once it is known).
export const runUrl = (id) => `/runs/${id}${health ? `?chain=${health.chain_id}` : ''}`;
