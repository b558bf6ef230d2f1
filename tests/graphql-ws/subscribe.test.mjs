// The real JavaScript GraphQL-over-WebSocket client, `graphql-ws` from npm (createClient,
// the graphql-transport-ws protocol), against a running Flytrap; and a raw `ws` client on
// the legacy `graphql-ws` protocol (subscriptions-transport-ws), which gqlgen also serves.
//
// Needs FLYTRAP_URL (the API base, e.g. http://127.0.0.1:8080) and FLYTRAP_KEY (an admin
// or read-write API key of an organization nobody else writes to during the test).
// scripts/graphql-ws-tests.sh starts a server and sets both.
//
// 1. Subscribe to `events` after the newest event's cursor, create traps over POST /graphql,
//    receive each trap.created event once, in order of creation.
// 2. Dispose of the client, create traps while nobody listens, subscribe again with
//    `after:` the last received cursor: exactly the missed events arrive, then live ones,
//    nothing twice.
// 3. Subscribe without `after:`: delivery starts at the head of the log (no replay).
// 4. A bad key, and a revoked one, is refused: the client's `closed` event and the sink's
//    error carry 4401. Revoking a key ends its open subscriptions.
// 5. The legacy protocol: subprotocol 'graphql-ws', connection_init → connection_ack,
//    start → data, stop → complete; a bad key gets connection_error and close 4401.
// The whole file gives up after 60 s.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, CloseCode } from 'graphql-ws';
import WebSocket from 'ws';

const BASE = (process.env.FLYTRAP_URL ?? '').replace(/\/+$/, '');
const KEY = process.env.FLYTRAP_KEY ?? '';
const WS_URL = BASE.replace(/^http/, 'ws') + '/graphql';
const WAIT_MS = 15_000; // longest wait for any one step
const QUIET_MS = 500; // how long "nothing more arrives" is watched for

const EVENTS = `subscription($after: Cursor, $types: [String!]) {
  events(after: $after, types: $types) { id type apiVersion createdAt data cursor }
}`;

// Never hang CI: whatever happens, this file ends within 60 s.
const watchdog = setTimeout(() => {
  console.error('graphql-ws tests: gave up after 60 s');
  process.exit(1);
}, 60_000);
watchdog.unref();

test('FLYTRAP_URL and FLYTRAP_KEY are set', () => {
  assert.match(BASE, /^https?:\/\//, 'FLYTRAP_URL must be the API base URL');
  assert.match(KEY, /^ftk_/, 'FLYTRAP_KEY must be an API key');
});

async function graphql(query, variables) {
  const res = await fetch(`${BASE}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `POST /graphql: ${res.status} ${JSON.stringify(body)}`);
  assert.ok(!body.errors, `POST /graphql: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function createTrap(name) {
  const data = await graphql('mutation($in: CreateTrapInput!) { createTrap(input: $in) { id name } }', {
    in: { name, type: 'api' },
  });
  assert.equal(data.createTrap.name, name);
  return data.createTrap.id;
}

async function createTraps(prefix, n) {
  const ids = [];
  for (let i = 1; i <= n; i++) ids.push(await createTrap(`${prefix}-${i}`));
  return ids;
}

// The cursor of the newest event of the organization (of the events connection ordered by
// POSITION, which `after:` accepts as well as the subscription's own cursors).
async function newestCursor() {
  const data = await graphql('{ events(first: 1, orderBy: {field: POSITION, direction: DESC}) { edges { cursor } } }');
  const edge = data.events.edges[0];
  assert.ok(edge, 'the event log is empty: create something first');
  return edge.cursor;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Inbox collects messages and lets the test wait for a condition on them.
class Inbox {
  messages = [];
  #waiters = [];

  push(msg) {
    this.messages.push(msg);
    this.#waiters = this.#waiters.filter((w) => !w.check());
  }

  // until resolves once pred(messages) holds, or rejects after WAIT_MS naming what it waited for.
  until(pred, what, ms = WAIT_MS) {
    return new Promise((resolve, reject) => {
      const w = {
        check: () => {
          if (!pred(this.messages)) return false;
          clearTimeout(w.timer);
          resolve(this.messages);
          return true;
        },
      };
      if (w.check()) return;
      w.timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== w);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; got ${this.messages.length}: ${JSON.stringify(this.messages)}`));
      }, ms);
      this.#waiters.push(w);
    });
  }

  count(n, what) {
    return this.until((m) => m.length >= n, `${n} ${what}`);
  }
}

// A graphql-ws client that authenticates in connection_init, as the issue asks. It never
// retries, so a refusal reaches the sink instead of being retried away.
function newClient(key) {
  const closed = [];
  const client = createClient({
    url: WS_URL,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: 'Bearer ' + key },
    retryAttempts: 0,
    on: { closed: (e) => closed.push(e) },
  });
  return { client, closed };
}

// subscribe runs the events subscription; inbox gets each event, `ended` settles when the
// server completes it (resolve) or the client errors (reject).
function subscribeEvents(client, variables) {
  const inbox = new Inbox();
  let unsubscribe;
  const ended = new Promise((resolve, reject) => {
    unsubscribe = client.subscribe(
      { query: EVENTS, variables },
      {
        next: (result) => {
          if (result.errors) inbox.push({ errors: result.errors });
          else inbox.push(result.data.events);
        },
        error: reject,
        complete: resolve,
      },
    );
  });
  ended.catch(() => {}); // observed by the tests that expect it
  return { inbox, ended, unsubscribe };
}

function checkEvent(ev) {
  assert.ok(!ev.errors, `subscription error: ${JSON.stringify(ev.errors)}`);
  assert.equal(ev.type, 'trap.created');
  assert.match(ev.id, /\S/);
  assert.match(ev.apiVersion, /^\d{4}-\d{2}-\d{2}$/);
  assert.ok(!Number.isNaN(Date.parse(ev.createdAt)), `createdAt ${ev.createdAt}`);
  assert.equal(typeof ev.cursor, 'string');
  assert.equal(typeof ev.data, 'object');
}

const ids = (events) => events.map((ev) => ev.data.id);

test('events arrive in order, and after: resumes with exactly the missed ones', async () => {
  await createTrap('anchor'); // the log must have an event to start after
  const start = await newestCursor();

  // 1. Live: the first trap is awaited before the rest, so the subscription is up and
  //    the rest travel the live path, not the catch-up read.
  const first = newClient(KEY);
  const sub1 = subscribeEvents(first.client, { after: start, types: ['trap.created'] });
  const created = [await createTrap('live-first')];
  await sub1.inbox.count(1, 'the first live event');
  created.push(...(await createTraps('live', 4)));
  await sub1.inbox.count(created.length, 'live trap.created events');
  await sleep(QUIET_MS);
  sub1.inbox.messages.forEach(checkEvent);
  assert.deepEqual(ids(sub1.inbox.messages), created, 'each created trap once, in order of creation');
  assert.equal(new Set(sub1.inbox.messages.map((ev) => ev.id)).size, created.length, 'event ids are unique');
  const lastCursor = sub1.inbox.messages.at(-1).cursor;

  sub1.unsubscribe();
  await first.client.dispose();
  // dispose closes the socket; wait for it so the next traps are really "missed".
  await new Promise((r) => (first.closed.length ? r() : first.client.on('closed', r)));

  // 2. Missed while away, then resumed after the last received cursor.
  const missed = await createTraps('missed', 3);
  const second = newClient(KEY);
  const sub2 = subscribeEvents(second.client, { after: lastCursor, types: ['trap.created'] });
  await sub2.inbox.count(missed.length, 'the missed events');
  const live = await createTrap('after-resume');
  await sub2.inbox.count(missed.length + 1, 'the missed events and a live one');
  await sleep(QUIET_MS);
  sub2.inbox.messages.forEach(checkEvent);
  assert.deepEqual(ids(sub2.inbox.messages), [...missed, live], 'exactly the missed events, then the live one: no gap, no repeat');
  const seen = new Set(sub1.inbox.messages.map((ev) => ev.id));
  assert.ok(sub2.inbox.messages.every((ev) => !seen.has(ev.id)), 'no event of the first subscription is repeated');

  sub2.unsubscribe();
  await second.client.dispose();
});

test('without after: delivery starts at the head of the log, no replay', async () => {
  const before = await createTrap('before-subscribe');
  const { client } = newClient(KEY);
  const sub = subscribeEvents(client, { types: ['trap.created'] });
  // Nothing tells a client when the server has set a subscription up: create probes until
  // one arrives. Those created before that are not delivered; all after it are, in order.
  const probes = [];
  const deadline = Date.now() + WAIT_MS;
  while (sub.inbox.messages.length === 0) {
    assert.ok(Date.now() < deadline, `no live event within ${WAIT_MS} ms`);
    probes.push(await createTrap(`probe-${probes.length + 1}`));
    await sleep(100);
  }
  const tail = await createTraps('tail', 2);
  await sub.inbox.until((m) => m.length > 0 && m.at(-1).data?.id === tail.at(-1), 'the last tail event');
  await sleep(QUIET_MS);
  sub.inbox.messages.forEach(checkEvent);
  const got = ids(sub.inbox.messages);
  assert.ok(!got.includes(before), 'an event from before the subscription was replayed');
  const k = probes.indexOf(got[0]);
  assert.ok(k >= 0, `the first event ${got[0]} is none of the probes`);
  assert.deepEqual(got, [...probes.slice(k), ...tail], 'from the first received probe on: every event once, in order');
  sub.unsubscribe();
  await client.dispose();
});

// expectRefused subscribes with key and expects the server to close with 4401.
async function expectRefused(key, what) {
  const { client, closed } = newClient(key);
  const sub = subscribeEvents(client, {});
  const err = await sub.ended.then(
    () => assert.fail(`the subscription with ${what} completed instead of being refused`),
    (e) => e,
  );
  assert.equal(err?.code, CloseCode.Unauthorized, `sink error for ${what}: ${err?.code} ${err?.reason ?? err}`);
  await sleep(50);
  assert.ok(closed.length >= 1, `the client emitted no closed event for ${what}`);
  assert.equal(closed[0].code, 4401, `closed event for ${what}: ${closed[0].code} ${closed[0].reason}`);
  assert.equal(sub.inbox.messages.length, 0);
  await client.dispose();
}

test('a bad or revoked key is refused with close code 4401', async () => {
  assert.equal(CloseCode.Unauthorized, 4401);
  await expectRefused('ftk_' + 'x'.repeat(36), 'a key with a bad checksum');
  await expectRefused('not-a-key', 'a malformed key');
  const made = await graphql('mutation { createApiKey(input: {name: "graphql-ws revoked", scope: READ_ONLY}) { key apiKey { id } } }');
  await graphql('mutation($id: ID!) { revokeApiKey(id: $id) { id } }', { id: made.createApiKey.apiKey.id });
  await expectRefused(made.createApiKey.key, 'a revoked key');
});

test("revoking a key ends its open subscriptions", async () => {
  const made = await graphql('mutation { createApiKey(input: {name: "graphql-ws to revoke", scope: READ_ONLY}) { key apiKey { id } } }');
  const { client } = newClient(made.createApiKey.key);
  const sub = subscribeEvents(client, { types: ['trap.created'] });
  // Live once a probe arrives (as above), then revoke: the server completes the subscription.
  const deadline = Date.now() + WAIT_MS;
  while (sub.inbox.messages.length === 0) {
    assert.ok(Date.now() < deadline, `no live event within ${WAIT_MS} ms`);
    await createTrap('revoke-probe');
    await sleep(100);
  }
  await graphql('mutation($id: ID!) { revokeApiKey(id: $id) { id } }', { id: made.createApiKey.apiKey.id });
  const outcome = await Promise.race([
    sub.ended.then(
      () => 'complete',
      (e) => `error ${e?.code ?? ''} ${e?.reason ?? e}`,
    ),
    sleep(WAIT_MS).then(() => 'still open'),
  ]);
  assert.equal(outcome, 'complete', 'the server completes the subscription of a revoked key');
  await client.dispose();
});

// A raw client on the legacy protocol. Messages go to an inbox; close gives {code, reason}.
function legacySocket() {
  const ws = new WebSocket(WS_URL, 'graphql-ws');
  const inbox = new Inbox();
  const closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  ws.on('message', (raw) => {
    const msg = JSON.parse(String(raw));
    if (msg.type !== 'ka') inbox.push(msg); // keep-alives may come at any time
  });
  const open = new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const send = (msg) => ws.send(JSON.stringify(msg));
  return { ws, inbox, closed, open, send };
}

test('legacy graphql-ws protocol: connection_init → connection_ack, start → data, stop → complete', async () => {
  await createTrap('legacy-anchor');
  const start = await newestCursor();
  const s = legacySocket();
  await s.open;
  assert.equal(s.ws.protocol, 'graphql-ws', 'the server chose the legacy subprotocol');
  s.send({ type: 'connection_init', payload: { Authorization: 'Bearer ' + KEY } });
  await s.inbox.count(1, 'connection_ack');
  assert.equal(s.inbox.messages[0].type, 'connection_ack', JSON.stringify(s.inbox.messages[0]));

  s.send({ id: '1', type: 'start', payload: { query: EVENTS, variables: { after: start, types: ['trap.created'] } } });
  const made = await createTraps('legacy', 2);
  await s.inbox.count(3, 'two data messages');
  const data = s.inbox.messages.slice(1);
  for (const m of data) {
    assert.equal(m.type, 'data', JSON.stringify(m));
    assert.equal(m.id, '1');
    assert.ok(!m.payload.errors, JSON.stringify(m.payload.errors));
    checkEvent(m.payload.data.events);
  }
  assert.deepEqual(data.map((m) => m.payload.data.events.data.id), made);

  s.send({ id: '1', type: 'stop' });
  await s.inbox.until((m) => m.some((x) => x.type === 'complete' && x.id === '1'), 'complete after stop');
  s.send({ type: 'connection_terminate' });
  const { code } = await s.closed;
  assert.ok([1000, 1005].includes(code), `close after connection_terminate: ${code}`);
});

test('legacy graphql-ws protocol: a bad key gets connection_error and close 4401', async () => {
  const s = legacySocket();
  await s.open;
  s.send({ type: 'connection_init', payload: { Authorization: 'Bearer ftk_' + 'y'.repeat(36) } });
  const { code } = await Promise.race([
    s.closed,
    sleep(WAIT_MS).then(() => assert.fail('the server kept a connection with a bad key open')),
  ]);
  assert.equal(code, 4401);
  assert.ok(!s.inbox.messages.some((m) => m.type === 'connection_ack'), `acknowledged a bad key: ${JSON.stringify(s.inbox.messages)}`);
  assert.ok(s.inbox.messages.some((m) => m.type === 'connection_error'), `no connection_error: ${JSON.stringify(s.inbox.messages)}`);
});

after(() => clearTimeout(watchdog));
