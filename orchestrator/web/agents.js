// Registry agents from the embedded indexer: names from their cards (read by
// the indexer's one card decoder), offers
// and reliability.

import { short, usdc } from './format.js';
import { index } from './api.js';

let agentsCache = null;

/// Registry agents with prices and reliability, from the embedded indexer.
export async function agents(refresh = false) {
  if (agentsCache && !refresh) return agentsCache;
  const body = await index('/agents').catch(() => null);
  agentsCache = (body?.agents ?? []).map((a) => ({ ...a, name: agentName(a) }));
  return agentsCache;
}

/// The agent's card id as the indexer read it, else its short address.
export function agentName(a) {
  return typeof a.name === 'string' && a.name ? a.name : short(a.agent);
}

/// Active agents offering `capability`, and how an offer reads in a picker.
export const offersFor = (list, capability) => list.filter((a) => a.status === 'active' && a.offers && capability in a.offers);
export const offerLabel = (a, capability) => `${a.name} · ${usdc(a.offers[capability])} USDC · ${reliability(a)}`;

export function reliability(a) {
  const r = a?.stats?.success_rate;
  return r === null || r === undefined ? 'no record yet' : `${Math.round(r * 100)}% reliable`;
}

export function nameOf(address, list) {
  const a = list.find((x) => x.agent.toLowerCase() === String(address).toLowerCase());
  return a ? a.name : short(address);
}
