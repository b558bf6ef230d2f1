// One story about a proxy catch, in a real browser (Debian's Chromium through playwright-core)
// against a flytrap of its own in front of a sample application (serve --upstream): an agent
// reads a page of the site and follows a lure. The session's signal table, its callbacks list
// and every hit agree: the callback is there, labelled as a lure, its placement named (not
// "–") with the page of the site that carried it. The trap's card says which of its texts
// visitors read. Run by scripts/dashboard-tests.sh (FLYTRAP_BIN is the flytrap it built).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const { FLYTRAP_BIN } = process.env;
if (!FLYTRAP_BIN) throw new Error('FLYTRAP_BIN is not set: run bash scripts/dashboard-tests.sh');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARTIFACTS = process.env.ARTIFACTS_DIR || path.join(path.dirname(fileURLToPath(import.meta.url)), 'artifacts');
fs.mkdirSync(ARTIFACTS, { recursive: true });

const TRAP_PATH = '/internal/wiki';
const AGENT_UA = 'python-httpx/0.27.0';

let tmp;
let upstream;
let server;
let serverErr = '';
let apiURL;
let trapURL;
let key;
let browser;
let page;
const pageErrors = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function poll(what, fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; flytrap stderr:\n${serverErr.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'flytrap-lurestory-'));
  upstream = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE html>\n<html><head><title>Shop</title></head>\n<body>\n<h1>Pricing</h1>\n<p>Plans.</p>\n</body>\n</html>\n');
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamURL = `http://127.0.0.1:${upstream.address().port}/`;
  const [apiPort, trapPort] = [await freePort(), await freePort()];
  assert.notEqual(apiPort, trapPort);
  apiURL = `http://127.0.0.1:${apiPort}`;
  trapURL = `http://127.0.0.1:${trapPort}`;
  server = spawn(
    FLYTRAP_BIN,
    ['serve', '--db', path.join(tmp, 'flytrap.db'), '--api-addr', `127.0.0.1:${apiPort}`, '--trap-addr', `127.0.0.1:${trapPort}`,
      '--upstream', upstreamURL, '--log-format', 'json'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  server.stdout.on('data', (d) => (out += d));
  server.stderr.on('data', (d) => (serverErr += d));
  // The admin key, printed once alone on an indented banner line.
  key = await poll('the admin key', async () => out.match(/^\s+(ftk_[A-Za-z0-9_]+)\s*$/m)?.[1]);
  await poll('readyz', async () => (await fetch(`${apiURL}/readyz`)).ok);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  page = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
});

after(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  upstream?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

async function gqlData(query, variables) {
  const res = await fetch(`${apiURL}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

async function goto(pathname) {
  await page.evaluate((p) => {
    history.pushState(null, '', p);
    dispatchEvent(new PopStateEvent('popstate'));
  }, pathname);
}

const card = (heading) => page.locator('.card').filter({ has: page.getByRole('heading', { name: heading }) });

test('a followed proxy lure reads the same in the signals, the callbacks and the hits', async () => {
  await gqlData(`mutation ($i: CreateTrapInput!) { createTrap(input: $i) { id } }`, {
    i: { name: 'Engineering wiki', description: 'only for us', type: 'page', path: TRAP_PATH },
  });
  // The agent reads a page of the site through the proxy, then follows its lure.
  const pageHTML = await poll('a page with a lure', async () => {
    const body = await (await fetch(`${trapURL}/pricing`, { headers: { 'User-Agent': AGENT_UA } })).text();
    return body.includes(`${TRAP_PATH}?ref=`) && body;
  });
  assert.ok(!pageHTML.includes('Engineering wiki'), 'the trap\'s name is in the proxied page');
  const link = pageHTML.match(/\/internal\/wiki\?ref=[a-z0-9]+/)[0];
  await (await fetch(`${trapURL}${link}`, { headers: { 'User-Agent': AGENT_UA } })).arrayBuffer();
  const session = await poll('the session', async () => {
    const d = await gqlData(`query ($w: SessionWhereInput) { sessions(first: 5, where: $w) { edges { node { id signalsFired } } } }`, { w: { userAgent: AGENT_UA } });
    return d.sessions.edges.map((e) => e.node).find((s) => s.signalsFired.includes('CALLBACK_HIT'));
  });

  await page.goto(apiURL, { waitUntil: 'load' });
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  await goto(`/sessions/${session.id}`);

  // The signal table: the callback, its placement named as a lure.
  const row = page.getByTestId('signal-group').filter({ hasText: 'Callback hit' });
  await row.waitFor();
  const placement = (await row.getByTestId('signal-placement').textContent()).trim();
  assert.notEqual(placement, '–', 'the lure placement is unnamed');
  assert.match(placement, /^lure in a page of your site: hidden link/);
  assert.match(await row.textContent(), /from a lure on \/pricing/);

  // The callbacks list agrees: the hit is there, labelled a lure, with the same placement and page.
  const callbacks = card(/^Callbacks/);
  assert.equal(await callbacks.getByText('No callback').count(), 0, 'the callbacks list says no callback');
  const hit = callbacks.getByTestId('hit');
  assert.equal(await hit.count(), 1);
  const summary = (await hit.locator('summary').textContent()).replace(/\s+/g, ' ');
  assert.match(summary, /lure followed/);
  assert.match(summary, /Callback hit/);
  assert.ok(summary.includes(placement), `the callbacks list names the placement otherwise: ${summary}`);
  assert.match(summary, /from a lure on \/pricing/);
  // Every hit says the same of that hit.
  const every = card(/^Every hit/).getByTestId('hit').filter({ hasText: 'lure followed' });
  assert.equal(await every.count(), 1);
  await page.screenshot({ path: path.join(ARTIFACTS, '50-proxy-catch.png'), fullPage: true });

  // The trap's card says which texts are private and what visitors read.
  await goto('/traps');
  const trap = page.getByTestId('trap').filter({ hasText: 'Engineering wiki' });
  await trap.waitFor();
  assert.match(await trap.getByTestId('trap-visibility').textContent(), /private/);
  assert.match(await trap.getByTestId('trap-public-title').textContent(), /generated/);
  await trap.getByTestId('trap-preview-toggle').click();
  const title = trap.getByTestId('trap-preview-title');
  await title.waitFor();
  assert.match(await title.textContent(), /\(generated\)/);
  assert.ok(!(await title.textContent()).includes('Engineering wiki'));
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(await page.evaluate(() => window.__csp), []);
});
