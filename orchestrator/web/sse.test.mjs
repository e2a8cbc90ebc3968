import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSse, openStream } from './sse.js';

test('whole events are parsed and the unfinished rest kept', () => {
  const { events, rest } = parseSse('id: 1\nevent: plan_approved\ndata: {"a":1}\n\n: keep-alive\n\nid: 2\nevent: subtask_funded\ndata: {"b"');
  assert.deepEqual(events, [{ type: 'plan_approved', data: '{"a":1}', lastEventId: '1' }]);
  assert.equal(rest, 'id: 2\nevent: subtask_funded\ndata: {"b"');
  const more = parseSse(`${rest}:2}\n\n`);
  assert.deepEqual(more.events, [{ type: 'subtask_funded', data: '{"b":2}', lastEventId: '2' }]);
  assert.equal(more.rest, '');
});

test('multi-line data joins with newlines; CRLF and bare data are read', () => {
  const { events } = parseSse('data: one\r\ndata:two\r\n\r\ndata\n\n');
  assert.deepEqual(events, [
    { type: 'message', data: 'one\ntwo', lastEventId: '' },
    { type: 'message', data: '', lastEventId: '' },
  ]);
});

/// A fetch answering from `answers` in turn: a status, or SSE chunks.
function fakeFetch(answers, seen) {
  return async (url, init) => {
    seen.push({ url, headers: init.headers });
    const next = answers.shift();
    if (typeof next === 'number') return { ok: false, status: next };
    if (!next) return new Promise(() => {});
    const chunks = next.map((c) => new TextEncoder().encode(c));
    return { ok: true, status: 200, body: { getReader: () => ({ read: async () => (chunks.length ? { value: chunks.shift(), done: false } : { done: true }) }) } };
  };
}

test('the stream sends the session, resumes from the last id, and stops on a refusal', async () => {
  const seen = [];
  const got = [];
  let refused = null;
  const done = new Promise((resolve) => {
    openStream('/api/runs/x/events', 'tok', (ev) => got.push(ev), {
      fetchFn: fakeFetch([['id: 4\nevent: a\nda', 'ta: {}\n\n'], 401], seen),
      retryMs: 1,
      onError: (status) => { refused = status; resolve(); },
    });
  });
  await done;
  assert.deepEqual(got, [{ type: 'a', data: '{}', lastEventId: '4' }]);
  assert.equal(refused, 401);
  assert.equal(seen[0].headers.Authorization, 'Bearer tok');
  assert.equal(seen[0].headers['Last-Event-ID'], undefined);
  assert.equal(seen[1].headers['Last-Event-ID'], '4', 'a reconnection resumes after the last event');
});

test('close stops the stream before the next event is delivered', async () => {
  const seen = [];
  const got = [];
  const s = openStream('/e', 't', (ev) => { got.push(ev); s.close(); }, {
    fetchFn: fakeFetch([['data: 1\n\ndata: 2\n\n']], seen), retryMs: 1,
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(got.length, 1);
  assert.equal(seen.length, 1, 'no reconnection after close');
});
