// A real SSE client (the `eventsource` package from npm) against a running Flytrap:
// it must resume the event stream after a dropped connection without losing,
// repeating or reordering an event.
//
// Needs FLYTRAP_URL (the API base, e.g. http://127.0.0.1:8080) and FLYTRAP_KEY
// (an admin or read-write API key of an organization nobody else writes to during
// the test). scripts/node-tests.sh starts a server and sets both.
//
// 1. Connect, create traps over GraphQL while connected, receive their events.
// 2. Drop the TCP connection under the client (a proxy between client and server
//    cuts it), create traps while the client is cut off, let it reconnect on its
//    own: EventSource sends Last-Event-ID, and the stream resumes right after it.
// 3. Close the client, create traps, open a new EventSource that sends the saved
//    last event id as Last-Event-ID: the stream resumes again.
// Every trap.created event must arrive exactly once, in the order of creation, and
// the whole sequence must equal the event log (GET /api/v1/events) over that span.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { EventSource } from 'eventsource';

const BASE = (process.env.FLYTRAP_URL ?? '').replace(/\/+$/, '');
const KEY = process.env.FLYTRAP_KEY ?? '';
const WAIT_MS = 15_000; // longest wait for any one step

function auth(headers = {}) {
  return { ...headers, Authorization: `Bearer ${KEY}` };
}

async function graphql(query, variables) {
  const res = await fetch(`${BASE}/graphql`, {
    method: 'POST',
    headers: auth({ 'Content-Type': 'application/json' }),
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `POST /graphql: ${res.status} ${JSON.stringify(body)}`);
  assert.ok(!body.errors, `POST /graphql: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function createTrap(name) {
  const data = await graphql('mutation($in: CreateTrapInput!) { createTrap(input: $in) { id } }', {
    in: { name, type: 'api' },
  });
  return data.createTrap.id;
}

async function listEvents(cursor) {
  const q = new URLSearchParams({ limit: '100' });
  if (cursor) q.set('cursor', cursor);
  const res = await fetch(`${BASE}/api/v1/events?${q}`, { headers: auth(), signal: AbortSignal.timeout(WAIT_MS) });
  const body = await res.json();
  assert.equal(res.status, 200, `GET /api/v1/events: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

// The event log after cursor, all pages; and the cursor at its end.
async function readLog(cursor) {
  const events = [];
  for (;;) {
    const page = await listEvents(cursor);
    events.push(...page.events);
    assert.ok(page.next_cursor, 'next_cursor must always be present');
    cursor = page.next_cursor;
    if (!page.has_more) return { events, cursor };
  }
}

// Inbox collects the stream's messages and lets the test wait for a condition on them.
class Inbox {
  messages = [];
  #waiters = [];

  push(msg) {
    this.messages.push(msg);
    this.#waiters = this.#waiters.filter((w) => !w.check());
  }

  // until resolves once pred(messages) holds, or rejects after WAIT_MS naming what it waited for.
  until(pred, what) {
    return new Promise((resolve, reject) => {
      const w = {
        check: () => {
          if (!pred(this.messages)) return false;
          clearTimeout(w.timer);
          resolve();
          return true;
        },
      };
      if (w.check()) return;
      w.timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== w);
        reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${what}; got ${this.messages.length} messages`));
      }, WAIT_MS);
      this.#waiters.push(w);
    });
  }
}

// A TCP proxy in front of the API, so the test can cut the client's connection the way a
// network failure does, and hold a reconnection until the test lets it through.
async function startProxy(target) {
  const { hostname, port } = new URL(target);
  const sockets = new Set();
  let gate = Promise.resolve();
  let openGate = () => {};
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    client.pause();
    gate.then(() => {
      if (client.destroyed) return;
      const upstream = net.connect(Number(port), hostname);
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    get accepted() {
      return accepted;
    },
    // cut destroys every open connection and holds new ones until release.
    cut() {
      gate = new Promise((resolve) => {
        openGate = resolve;
      });
      for (const s of sockets) s.destroy();
    },
    release() {
      openGate();
    },
    close() {
      for (const s of sockets) s.destroy();
      openGate();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

// connect opens an EventSource on base's stream, sending the key (and lastEventId, if
// given) in headers through the package's fetch option; it records each request's headers.
function connect(base, inbox, { lastEventId } = {}) {
  const requests = [];
  const es = new EventSource(`${base}/api/v1/events/stream`, {
    fetch: (input, init) => {
      const headers = new Headers(init.headers);
      headers.set('Authorization', `Bearer ${KEY}`);
      if (lastEventId && !headers.has('Last-Event-ID')) headers.set('Last-Event-ID', lastEventId);
      requests.push(headers);
      return fetch(input, { ...init, headers });
    },
  });
  const errors = [];
  es.addEventListener('error', (e) => errors.push(e));
  es.addEventListener('message', (e) => {
    inbox.push({ cursor: e.lastEventId, event: JSON.parse(e.data) });
  });
  const opened = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stream did not open within ${WAIT_MS} ms: ${errors.map((e) => e.message)}`)), WAIT_MS);
    es.addEventListener('open', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
  return { es, requests, errors, opened };
}

const trapCreated = (msgs) => msgs.filter((m) => m.event.type === 'trap.created').map((m) => m.event.data.id);

test('the eventsource client resumes the stream after a dropped connection: every event once, in order', { timeout: 60_000 }, async (t) => {
  assert.ok(BASE && KEY, 'set FLYTRAP_URL and FLYTRAP_KEY (scripts/node-tests.sh does both)');
  const { cursor: start } = await readLog(''); // the end of the log before the test writes anything
  const run = Date.now().toString(36);
  const created = [];
  const inbox = new Inbox();
  const proxy = await startProxy(BASE);
  t.after(() => proxy.close());

  // 1. Live.
  const first = connect(proxy.url, inbox);
  t.after(() => first.es.close());
  await first.opened;
  for (let i = 1; i <= 3; i++) created.push(await createTrap(`sse-${run}-live-${i}`));
  await inbox.until((m) => trapCreated(m).length >= 3, 'the 3 live trap events');

  // 2. The connection drops under the client; traps are created while it is cut off.
  const lastBeforeDrop = inbox.messages.at(-1).cursor;
  const reconnected = new Promise((resolve) => first.es.addEventListener('open', resolve, { once: true }));
  proxy.cut();
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the client did not notice the dropped connection')), WAIT_MS);
    first.es.addEventListener('error', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
  assert.equal(first.es.readyState, EventSource.CONNECTING, 'after a dropped connection the client reconnects by itself');
  for (let i = 1; i <= 3; i++) created.push(await createTrap(`sse-${run}-dropped-${i}`));
  proxy.release();
  await reconnected;
  assert.equal(first.requests.length, 2, 'one reconnection');
  assert.equal(first.requests[1].get('Last-Event-ID'), lastBeforeDrop, 'the reconnection sends the last event id');
  await inbox.until((m) => trapCreated(m).length >= 6, 'the 3 trap events written while disconnected');
  created.push(await createTrap(`sse-${run}-after-reconnect`));
  await inbox.until((m) => trapCreated(m).length >= 7, 'a live trap event after the reconnection');

  // 3. The client closes; a new one resumes from the saved id.
  first.es.close();
  const saved = inbox.messages.at(-1).cursor;
  for (let i = 1; i <= 3; i++) created.push(await createTrap(`sse-${run}-closed-${i}`));
  const second = connect(proxy.url, inbox, { lastEventId: saved });
  t.after(() => second.es.close());
  await second.opened;
  assert.equal(second.requests[0].get('Last-Event-ID'), saved);
  await inbox.until((m) => trapCreated(m).length >= 10, 'the 3 trap events written while closed');
  created.push(await createTrap(`sse-${run}-final`));
  await inbox.until((m) => trapCreated(m).length >= 11, 'the final live trap event');
  second.es.close();

  // Exactly once, in order, no gap: the traps in creation order, and the log over the span.
  assert.deepEqual(trapCreated(inbox.messages), created, 'trap.created events: each once, in creation order');
  const ids = inbox.messages.map((m) => m.event.id);
  assert.equal(new Set(ids).size, ids.length, `an event arrived twice: ${ids}`);
  const { events: log } = await readLog(start);
  assert.deepEqual(ids, log.map((e) => e.id), 'the stream carried exactly the event log, in order');
  for (const m of inbox.messages) {
    assert.match(m.event.id, /^evt_/);
    assert.match(m.event.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.match(m.event.api_version, /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(m.cursor, 'every message carries an id');
  }
  assert.ok(proxy.accepted >= 3, 'the client connected, reconnected, and a new client connected');
});
