#!/usr/bin/env node
// Copies the parts of forge's build artifacts that the Rust bindings read (ABI
// and creation/runtime bytecode) into one committed JSON file per contract.
//
//   node tools/export-artifacts.mjs <forge out dir> <destination dir>
//
// The output is a pure function of the contract sources and compiler settings,
// so `make bindings-check` can rebuild and compare byte for byte.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const CONTRACTS = [
  ['TaskEscrow.sol', 'TaskEscrow'],
  ['AgentRegistry.sol', 'AgentRegistry'],
  ['MockUSDC.sol', 'MockUSDC'],
  ['IdentityRegistry.sol', 'IdentityRegistry'],
  ['ReputationRegistry.sol', 'ReputationRegistry'],
];

const [outDir, destDir] = process.argv.slice(2);
if (!outDir || !destDir) {
  console.error('usage: export-artifacts.mjs <forge out dir> <destination dir>');
  process.exit(2);
}
mkdirSync(destDir, { recursive: true });
for (const [file, name] of CONTRACTS) {
  const src = join(outDir, file, `${name}.json`);
  let artifact;
  try {
    artifact = JSON.parse(readFileSync(src, 'utf8'));
  } catch (err) {
    console.error(`cannot read ${src}: ${err.message} (run forge build first)`);
    process.exit(1);
  }
  const trimmed = {
    abi: artifact.abi,
    bytecode: { object: artifact.bytecode.object },
    deployedBytecode: { object: artifact.deployedBytecode.object },
  };
  writeFileSync(join(destDir, `${name}.json`), JSON.stringify(trimmed, null, 2) + '\n');
}
