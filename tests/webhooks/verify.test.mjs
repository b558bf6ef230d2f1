// Flytrap's webhook deliveries, received by a local HTTP server and verified with the
// Standard Webhooks reference library (npm `standardwebhooks`), independent of Flytrap's Go code.
// Needs FLYTRAP_URL and FLYTRAP_KEY (a read-write or admin key); flytrap must run with
// --webhook-allow-private so it may reach this test's loopback receiver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

const url = process.env.FLYTRAP_URL;
const key = process.env.FLYTRAP_KEY;

async function gql(query, variables) {
  const res = await fetch(url + '/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + key },
    body: JSON.stringify({ query, variables }),
  });
  const out = await res.json();
  assert.equal(out.errors, undefined, JSON.stringify(out.errors));
  return out.data;
}

// receiver collects deliveries and hands each to the waiting test.
function receiver() {
  const got = [];
  const waiters = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
      while (waiters.length && waiters[0].n <= got.length) waiters.shift().resolve();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}/hook`,
    got,
    waitFor: (n) => new Promise((r, j) => {
      if (got.length >= n) return r();
      waiters.push({ n, resolve: r });
      setTimeout(() => j(new Error(`timed out waiting for ${n} deliveries, have ${got.length}`)), 20000);
    }),
    close: () => server.close(),
  })));
}

test('deliveries verify with the standardwebhooks library, across a secret rotation', async () => {
  const rc = await receiver();
  try {
    const created = await gql(`mutation($in: CreateWebhookEndpointInput!) {
      createWebhookEndpoint(input: $in) { secret endpoint { id } } }`,
    { in: { url: rc.url, eventTypes: ['trap.created'] } });
    const { secret } = created.createWebhookEndpoint;
    const id = created.createWebhookEndpoint.endpoint.id;
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);

    await gql('mutation { createTrap(input: {name: "webhook probe", type: page}) { id } }');
    await rc.waitFor(1);
    const first = rc.got[0];
    const msg = new Webhook(secret).verify(first.body, first.headers);
    assert.equal(msg.type, 'trap.created');
    assert.equal(first.headers['webhook-id'], msg.id);
    assert.throws(() => new Webhook('whsec_' + Buffer.alloc(32, 7).toString('base64')).verify(first.body, first.headers));

    // After a rotation, both the new and the old secret verify the next delivery.
    const rotated = await gql('mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }', { id });
    const newer = rotated.rotateWebhookSecret.secret;
    assert.notEqual(newer, secret);
    await gql('mutation { createTrap(input: {name: "webhook probe 2", type: page}) { id } }');
    await rc.waitFor(2);
    const second = rc.got[1];
    assert.equal(second.headers['webhook-signature'].split(' ').length, 2);
    assert.equal(new Webhook(newer).verify(second.body, second.headers).type, 'trap.created');
    assert.equal(new Webhook(secret).verify(second.body, second.headers).type, 'trap.created');

    await gql('mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { deleted } }', { id });
  } finally {
    rc.close();
  }
});
