// Keccak-256 and EIP-55 against published vectors. `make js-test` runs it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keccak256, checksumAddress } from './keccak.js';

const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
const utf8 = (s) => new TextEncoder().encode(s);

test('keccak256 matches the Ethereum vectors, across the 136-byte block edge', () => {
  assert.equal(hex(keccak256(utf8(''))), 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
  assert.equal(hex(keccak256(utf8('abc'))), '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45');
  // The transfer selector: keccak256("transfer(address,uint256)")[..4].
  assert.equal(hex(keccak256(utf8('transfer(address,uint256)'))).slice(0, 8), 'a9059cbb');
  // 'a' repeated 135, 136, 137 and 300 times (values from `cast keccak`):
  // the padding byte shared, a whole padding block, and several blocks.
  const vectors = {
    135: '34367dc248bbd832f4e3e69dfaac2f92638bd0bbd18f2912ba4ef454919cf446',
    136: 'a6c4d403279fe3e0af03729caada8374b5ca54d8065329a3ebcaeb4b60aa386e',
    137: 'd869f639c7046b4929fc92a4d988a8b22c55fbadb802c0c66ebcd484f1915f39',
    300: '5b7e0e47a96f32a88b4f14ca177982790807c40e1a105742ba0fc1babe1ef826',
  };
  for (const [n, want] of Object.entries(vectors)) assert.equal(hex(keccak256(utf8('a'.repeat(Number(n))))), want, `${n} bytes`);
});

test('EIP-55 checksums as the EIP lists them, from any case', () => {
  for (const a of [
    '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
    '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
  ]) {
    assert.equal(checksumAddress(a.toLowerCase()), a);
    assert.equal(checksumAddress(a.toUpperCase().replace('0X', '0x')), a);
  }
  assert.throws(() => checksumAddress('0x1234'), /not an address/);
});
