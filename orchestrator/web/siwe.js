// Sign-In with Ethereum (EIP-4361) for a sponsor in the page: the message
// the wallet signs, written exactly as the orchestrator reads it
// (orchestrator/src/auth.rs, the CLI's `sign_in_message`). Pure functions,
// unit-tested in node (siwe.test.mjs).

import { checksumAddress } from './keccak.js';

/// How long a session the page asks for (the server allows up to 24 h).
export const SESSION_SECS = 3600;

/// The statement the wallet shows above the fields.
export const STATEMENT = 'Sign in to the Tessera orchestrator to propose, fund and decide your plans.';

/// `secs` (unix) as RFC 3339 in UTC, to the second.
export function rfc3339(secs) {
  return new Date(Number(secs) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/// The authority (`host[:port]`) of `origin`, what the message's domain is.
export function authority(origin) {
  return new URL(origin).host;
}

/// The EIP-4361 text for `address` signing in at `origin` (the page's own
/// origin) on `chainId` with the server's `nonce`, issued at `now` (unix
/// seconds), expiring `ttl` seconds later. The address is written in its
/// EIP-55 checksummed form, as EIP-4361 asks, whatever case the wallet
/// gave it in.
export function signInMessage({ origin, address, chainId, nonce, now, ttl = SESSION_SECS }) {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address ?? '')) throw new Error(`${address} is not an address`);
  if (!/^[A-Za-z0-9]{8,}$/.test(nonce ?? '')) throw new Error('the server gave no usable nonce');
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new Error(`${chainId} is not a chain id`);
  return [
    `${authority(origin)} wants you to sign in with your Ethereum account:`,
    checksumAddress(address),
    '',
    STATEMENT,
    '',
    `URI: ${origin}`,
    'Version: 1',
    `Chain ID: ${chainId}`,
    `Nonce: ${nonce}`,
    `Issued At: ${rfc3339(now)}`,
    `Expiration Time: ${rfc3339(now + ttl)}`,
  ].join('\n');
}

/// `text` as `0x`-hex of its UTF-8 bytes: what `personal_sign` takes.
export function utf8Hex(text) {
  return `0x${[...new TextEncoder().encode(text)].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}
