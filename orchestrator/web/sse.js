// A run's event stream read with fetch, so it can carry a sponsor's
// session token (EventSource sends no Authorization header). The parser is
// pure and unit-tested in node (sse.test.mjs).

/// Splits server-sent-event text into whole events and the unfinished
/// rest: `{ events: [{ type, data, lastEventId }], rest }`. Comments and
/// unknown fields are skipped; `type` is `message` without an `event:`.
export function parseSse(text) {
  const events = [];
  const blocks = text.replace(/\r\n?/g, '\n').split('\n\n');
  const rest = blocks.pop();
  for (const block of blocks) {
    let type = 'message';
    let id = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (!line || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') type = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (!data.length && id === null) continue;
    events.push({ type, data: data.join('\n'), lastEventId: id ?? '' });
  }
  return { events, rest };
}

/// Reads `url`'s event stream with `token` as the bearer, calling
/// `onEvent` for each event; reconnects from the last event id when the
/// connection drops, until `close()`. `onError` hears a refused stream
/// (its status), after which it stops.
export function openStream(url, token, onEvent, { onError = () => {}, fetchFn = globalThis.fetch, retryMs = 1000 } = {}) {
  let closed = false;
  let last = null;
  const controller = new AbortController();
  const run = async () => {
    while (!closed) {
      try {
        const headers = { Accept: 'text/event-stream', Authorization: `Bearer ${token}` };
        if (last !== null) headers['Last-Event-ID'] = last;
        const resp = await fetchFn(url, { headers, signal: controller.signal });
        if (!resp.ok) {
          onError(resp.status);
          return;
        }
        const reader = resp.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          const { events, rest } = parseSse(buffer);
          buffer = rest;
          for (const ev of events) {
            if (ev.lastEventId) last = ev.lastEventId;
            if (!closed) onEvent(ev);
          }
        }
      } catch (e) {
        if (closed) return;
      }
      if (!closed) await new Promise((r) => setTimeout(r, retryMs));
    }
  };
  run();
  return { close: () => { closed = true; controller.abort(); } };
}
