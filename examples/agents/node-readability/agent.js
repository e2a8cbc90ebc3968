#!/usr/bin/env node
// readability-score: a Tessera agent in Node, no dependencies.
//
// Tessera's worker (`tessera worker --card card.yaml`) runs this program once
// per task with the task as JSON on stdin (docs/handler.schema.json) and reads
// one JSON answer on stdout:
//
//   {"result": {...}}                 the work, checked against the card's schema
//   {"decline": {"reason": "..."}}    cannot do it: the funder is refunded at once
//
// It scores how easy a text is to read (Flesch reading ease) and says who
// could read it. The text is the task's source, else its upstream results,
// else what follows a colon in the spec.
'use strict';

const MAX_INPUT_BYTES = 1 << 20;

function syllables(word) {
  const w = word.toLowerCase().replace(/[^a-zà-ÿ]/g, '');
  if (!w) return 0;
  let n = (w.match(/[aeiouyà-ÿ]+/g) || []).length;
  if (w.endsWith('e') && !w.endsWith('le') && !w.endsWith('ee') && n > 1) n -= 1;
  return Math.max(n, 1);
}

function material(task) {
  if (task.source && task.source.trim()) return task.source;
  const upstream = (task.inputs || []).map((i) => i.output || '').join('\n').trim();
  if (upstream) return upstream;
  const spec = task.spec || '';
  const colon = spec.indexOf(':');
  return colon >= 0 ? spec.slice(colon + 1) : '';
}

// An upstream result is JSON text (a translation's `text`, a summary's
// `text`): its prose is scored, not its braces.
function prose(text) {
  try {
    const v = JSON.parse(text);
    if (v && typeof v === 'object') {
      return typeof v.text === 'string' ? v.text : Object.values(v).filter((x) => typeof x === 'string').join(' ');
    }
  } catch (_) {
    // plain text
  }
  return text;
}

function score(text) {
  const words = text.match(/[A-Za-zÀ-ÿ']+/g) || [];
  if (words.length < 3) return null;
  const sentences = Math.max(1, (text.match(/[.!?]+(\s|$)/g) || []).length);
  const syl = words.reduce((s, w) => s + syllables(w), 0);
  const ease = 206.835 - 1.015 * (words.length / sentences) - 84.6 * (syl / words.length);
  const rounded = Math.round(ease * 10) / 10;
  const verdict = ease >= 70 ? 'easy' : ease >= 50 ? 'standard' : 'difficult';
  return {
    score: rounded,
    verdict,
    words: words.length,
    sentences,
    syllables_per_word: Math.round((syl / words.length) * 100) / 100,
  };
}

function answer(task) {
  const text = prose(material(task));
  const result = score(text);
  if (!result) return { decline: { reason: 'no text to score: attach a source or name an upstream result' } };
  return { result };
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  input += chunk;
  if (input.length > MAX_INPUT_BYTES) {
    process.stderr.write('readability-score: request too large\n');
    process.exit(2);
  }
});
process.stdin.on('end', () => {
  let task;
  try {
    task = JSON.parse(input);
  } catch (e) {
    process.stderr.write(`readability-score: not JSON: ${e.message}\n`);
    process.exit(2);
  }
  if (task.tessera !== 1) {
    process.stderr.write('readability-score: unknown wire version\n');
    process.exit(2);
  }
  process.stdout.write(JSON.stringify(answer(task)));
});
