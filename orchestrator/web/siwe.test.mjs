import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authority, rfc3339, signInMessage, utf8Hex, STATEMENT } from './siwe.js';

const ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

test('the sign-in message is EIP-4361 as the orchestrator parses it', () => {
  const text = signInMessage({
    origin: 'http://127.0.0.1:8080', address: ADDRESS, chainId: 31337, nonce: 'AbCdEfGh12345678XyZ09876', now: 1_772_323_200,
  });
  assert.equal(text, [
    '127.0.0.1:8080 wants you to sign in with your Ethereum account:',
    ADDRESS,
    '',
    STATEMENT,
    '',
    'URI: http://127.0.0.1:8080',
    'Version: 1',
    'Chain ID: 31337',
    'Nonce: AbCdEfGh12345678XyZ09876',
    'Issued At: 2026-03-01T00:00:00Z',
    'Expiration Time: 2026-03-01T01:00:00Z',
  ].join('\n'));
  // No trailing newline: the server allows one, the CLI writes none.
  assert.ok(!text.endsWith('\n'));
  // A wallet's lower-case address is written checksummed (EIP-55).
  const lower = signInMessage({
    origin: 'http://127.0.0.1:8080', address: ADDRESS.toLowerCase(), chainId: 31337, nonce: 'AbCdEfGh12345678XyZ09876', now: 1_772_323_200,
  });
  assert.equal(lower, text);
  const longer = signInMessage({ origin: 'https://tessera.example', address: ADDRESS, chainId: 1, nonce: 'abcdefgh', now: 0, ttl: 60 });
  assert.match(longer, /^tessera\.example wants you/);
  assert.match(longer, /\nExpiration Time: 1970-01-01T00:01:00Z$/);
});

test('a message is refused for a bad address, nonce or chain', () => {
  const ok = { origin: 'http://127.0.0.1:1', address: ADDRESS, chainId: 31337, nonce: 'abcdefgh', now: 0 };
  assert.throws(() => signInMessage({ ...ok, address: '0x1234' }), /not an address/);
  assert.throws(() => signInMessage({ ...ok, nonce: 'short' }), /nonce/);
  assert.throws(() => signInMessage({ ...ok, nonce: 'has spaces in it' }), /nonce/);
  assert.throws(() => signInMessage({ ...ok, chainId: 0 }), /chain id/);
});

test('times are RFC 3339 to the second, and authority keeps the port', () => {
  assert.equal(rfc3339(0), '1970-01-01T00:00:00Z');
  assert.equal(rfc3339(1_772_323_199), '2026-02-28T23:59:59Z');
  assert.equal(authority('http://localhost:3000'), 'localhost:3000');
  assert.equal(authority('https://a.example'), 'a.example');
});

test('personal_sign takes the UTF-8 bytes as hex', () => {
  assert.equal(utf8Hex('hi'), '0x6869');
  assert.equal(utf8Hex('é\n'), '0xc3a90a');
  assert.equal(utf8Hex(''), '0x');
});
