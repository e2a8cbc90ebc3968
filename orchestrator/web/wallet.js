// The sponsor's wallet: an injected EIP-1193 provider (`window.ethereum`)
// asked for accounts, the chain, and signatures (EIP-4361 sign-in through
// `personal_sign`, the plan's grant and permit through
// `eth_signTypedData_v4`). Nothing here touches the DOM: each function
// takes the provider, so node tests drive them (wallet.test.mjs).

import { usdc } from './format.js';
import { rfc3339, utf8Hex } from './siwe.js';

/// A wallet's answer the page explains in words.
export class WalletError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

/// What the page says when there is no injected provider.
export const NO_WALLET = 'no wallet found in this browser: install or enable an Ethereum wallet extension (EIP-1193), then reload';

/// Whether `e` is the user refusing a request in the wallet (EIP-1193 4001).
export const isRefusal = (e) => e?.code === 4001 || e?.code === '4001';

/// A wallet error in the sponsor's words (EIP-1193 and JSON-RPC codes).
export function walletMessage(e) {
  if (isRefusal(e)) return 'signature refused in the wallet: nothing was signed, the plan stays proposed';
  switch (Number(e?.code)) {
    case 4100: return 'the wallet has not authorised this page: connect the wallet again';
    case 4200: return 'the wallet does not support this request';
    case 4900: return 'the wallet is disconnected from every chain';
    case 4901: return 'the wallet is not connected to this chain';
    case -32002: return 'the wallet already has a request open: finish or close it in the wallet';
    default: return `wallet: ${e?.message ?? String(e)}`;
  }
}

/// `0x1234…cdef`: the first 6 and last 4 characters of an address.
export const shortAddress = (a) => (typeof a === 'string' && a.length > 12 ? `${a.slice(0, 6)}…${a.slice(-4)}` : a ?? '');

/// A chain id as a wallet gives it (`0x7a69`, or a number) as a number.
export function chainNumber(id) {
  if (typeof id === 'number') return id;
  const text = String(id ?? '').trim();
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(text)) throw new WalletError(`the wallet gave no chain id (${text || 'nothing'})`);
  return Number(BigInt(text));
}

/// Refuses to sign typed data for another chain than the wallet's.
export function checkChain(walletChain, typedData) {
  const want = chainNumber(typedData?.domain?.chainId);
  const have = chainNumber(walletChain);
  if (have !== want) {
    throw new WalletError(`wrong chain: your wallet is on chain ${have}, this orchestrator settles on chain ${want}. Switch the wallet to chain ${want}, then sign again`);
  }
}

const same = (a, b) => typeof a === 'string' && typeof b === 'string' && a.toLowerCase() === b.toLowerCase();

/// What the sponsor is asked to sign for plan `runId`, in words, after the
/// checks a careful wallet owner makes: the grant names them as sponsor,
/// this plan, the server's operator, and a budget no higher than the plan's
/// cost. Throws a WalletError naming the first mismatch.
export function grantSummary(req, { sponsor, operator, runId, cost }) {
  const t = req?.terms;
  if (!t || !req.typed_data) throw new WalletError('the server sent no grant to sign');
  if (!same(t.sponsor, sponsor)) throw new WalletError(`the grant names sponsor ${t.sponsor}, not your address ${sponsor}: nothing signed`);
  if (!same(t.plan_id, runId)) throw new WalletError(`the grant is for plan ${t.plan_id}, not ${runId}: nothing signed`);
  if (operator && !same(t.operator, operator)) throw new WalletError(`the grant names operator ${t.operator}, not this orchestrator's ${operator}: nothing signed`);
  if (cost !== undefined && cost !== null && BigInt(t.budget) > BigInt(cost)) {
    throw new WalletError(`the grant asks a budget of ${usdc(t.budget)} USDC, over the plan's cost of ${usdc(cost)} USDC: nothing signed`);
  }
  const message = req.typed_data.message ?? {};
  if (!same(message.sponsor, t.sponsor) || !same(message.operator, t.operator) || String(message.budget) !== String(t.budget)) {
    throw new WalletError('the grant\'s typed data does not match its terms: nothing signed');
  }
  const permit = req.permit ? {
    amount: usdc(req.permit.value),
    spender: req.permit.typed_data?.message?.spender ?? '',
    deadline: rfc3339(req.permit.deadline),
  } : null;
  return {
    budget: usdc(t.budget),
    // As signed: the typed data spells it EIP-55.
    operator: message.operator,
    validUntil: rfc3339(t.valid_until),
    plan: t.plan_id,
    permit,
  };
}

/// Asks the wallet for its accounts and chain: `{ address, chainId }`.
export async function connect(provider) {
  if (!provider?.request) throw new WalletError(NO_WALLET);
  const accounts = await provider.request({ method: 'eth_requestAccounts' });
  if (!Array.isArray(accounts) || !accounts.length) throw new WalletError('the wallet gave no account');
  const chainId = chainNumber(await provider.request({ method: 'eth_chainId' }));
  return { address: accounts[0], chainId };
}

/// The wallet's chain now.
export async function walletChain(provider) {
  return chainNumber(await provider.request({ method: 'eth_chainId' }));
}

/// `address` signs `text` (EIP-191, `personal_sign` of its UTF-8 hex).
export function signText(provider, address, text) {
  return provider.request({ method: 'personal_sign', params: [utf8Hex(text), address] });
}

/// `address` signs EIP-712 `typedData` (`eth_signTypedData_v4`, the
/// payload as a JSON string, as wallets take it).
export function signTyped(provider, address, typedData) {
  return provider.request({ method: 'eth_signTypedData_v4', params: [address, JSON.stringify(typedData)] });
}

/// Signs the grant asked for in `req` (and its permit, when one is asked)
/// on the wallet's chain; returns the approval body for
/// `POST /api/runs/{id}/approve`. A refusal in the wallet rejects with
/// the wallet's error (code 4001), before anything is sent.
export async function signGrant(provider, address, req, confirmation) {
  checkChain(await walletChain(provider), req.typed_data);
  if (req.permit) checkChain(await walletChain(provider), req.permit.typed_data);
  const signature = await signTyped(provider, address, req.typed_data);
  const body = { grant: { terms: req.terms, signature } };
  if (req.permit) {
    const permitSig = await signTyped(provider, address, req.permit.typed_data);
    body.permit = { value: req.permit.value, deadline: req.permit.deadline, signature: permitSig };
  }
  if (confirmation) body.confirmation_token = confirmation;
  return body;
}

/// `TaskEscrow.revokeGrant((address,bytes32,address,uint128,uint40,uint256))`'s
/// selector (the orchestrator's test checks it against the bindings).
export const REVOKE_GRANT_SELECTOR = '0x07c6bccf';

/// One ABI word: `value` (a bigint-able number or hex) as 64 hex digits.
function word(value, what) {
  const n = BigInt(value);
  if (n < 0n || n >= 1n << 256n) throw new WalletError(`${what} does not fit a word`);
  return n.toString(16).padStart(64, '0');
}

/// The calldata of `revokeGrant(grant)` for the grant's `terms` (as the
/// server gives them: addresses and a plan id in hex, amounts as decimal
/// strings). Every field is static, so the struct is six words in order.
export function revokeGrantCalldata(t) {
  const address = (a, what) => {
    if (!/^0x[0-9a-fA-F]{40}$/.test(a ?? '')) throw new WalletError(`the grant's ${what} is not an address`);
    return word(a, what);
  };
  if (!/^0x[0-9a-fA-F]{64}$/.test(t?.plan_id ?? '')) throw new WalletError('the grant names no plan');
  return REVOKE_GRANT_SELECTOR + [
    address(t.sponsor, 'sponsor'), word(t.plan_id, 'plan'), address(t.operator, 'operator'),
    word(t.budget, 'budget'), word(t.valid_until, 'valid-until'), word(t.nonce, 'nonce'),
  ].join('');
}

/// The sponsor revokes the grant with `terms` at `escrow`, from its own
/// wallet (`eth_sendTransaction`); the transaction's hash.
export async function revokeGrant(provider, address, escrow, chainId, terms) {
  const have = await walletChain(provider);
  if (have !== chainNumber(chainId)) {
    throw new WalletError(`wrong chain: your wallet is on chain ${have}, the grant is on chain ${chainNumber(chainId)}. Switch the wallet to chain ${chainNumber(chainId)}, then revoke again`);
  }
  return provider.request({ method: 'eth_sendTransaction', params: [{ from: address, to: escrow, data: revokeGrantCalldata(terms) }] });
}
