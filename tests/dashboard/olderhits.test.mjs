// "Show older hits" on a session's page, in a real browser (Debian's Chromium through
// playwright-core) against a flytrap of its own whose session detail holds the newest 5 hits
// (--session-detail-limit 5): a session of 12 hits shows 5, then every hit in the order it was
// received, once each, and the button goes; one of 108 hits needs two older pages of 100 and 3.
// The hits carry markup in their user agent and headers, which must stay inert. Run by
// scripts/dashboard-tests.sh (FLYTRAP_BIN is the flytrap it built).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
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

const DETAIL_LIMIT = 5;
const XSS_UA = 'older-<img src=x onerror=window.__xss=11>/1.0';
const XSS_HEADER = '<script>window.__xss=12</script><svg onload=window.__xss=13>';
const TRAP_PATH = '/internal/old-wiki';

let tmp;
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
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'flytrap-olderhits-'));
  const [apiPort, trapPort] = [await freePort(), await freePort()];
  assert.notEqual(apiPort, trapPort);
  apiURL = `http://127.0.0.1:${apiPort}`;
  trapURL = `http://127.0.0.1:${trapPort}`;
  server = spawn(
    FLYTRAP_BIN,
    ['serve', '--db', path.join(tmp, 'flytrap.db'), '--api-addr', `127.0.0.1:${apiPort}`, '--trap-addr', `127.0.0.1:${trapPort}`,
      '--session-detail-limit', String(DETAIL_LIMIT), '--log-format', 'json'],
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

/** One session of n hits, received one after another: ?n=1 … ?n=n. */
async function sessionOf(n, ua) {
  for (let i = 1; i <= n; i++) {
    const res = await fetch(`${trapURL}${TRAP_PATH}?n=${i}`, { headers: { 'User-Agent': ua, 'X-Note': XSS_HEADER } });
    await res.arrayBuffer();
  }
  return poll(`a session of ${n} hits`, async () => {
    const d = await gqlData(`query ($w: SessionWhereInput) { sessions(first: 5, where: $w) { edges { node { id hitCount } } } }`, { w: { userAgent: ua } });
    return d.sessions.edges.map((e) => e.node).find((s) => s.hitCount === n);
  });
}

async function assertInert(view) {
  const r = await page.evaluate(() => ({
    xss: window.__xss,
    injected: document.querySelectorAll('main img, main iframe, main svg:not([aria-hidden]), [onerror], [onload], [srcdoc], main script, main b').length,
    csp: window.__csp,
  }));
  assert.equal(r.xss, undefined, `${view}: attacker script ran`);
  assert.equal(r.injected, 0, `${view}: an attacker element was injected`);
  assert.deepEqual(r.csp, [], `${view}: CSP violations`);
  assert.deepEqual(pageErrors, [], `${view}: page errors`);
}

async function goto(pathname) {
  await page.evaluate((p) => {
    history.pushState(null, '', p);
    dispatchEvent(new PopStateEvent('popstate'));
  }, pathname);
}

const everyHit = () => page.locator('.card').filter({ has: page.getByRole('heading', { name: /^Every hit/ }) });
const olderButton = () => everyHit().getByRole('button', { name: 'Show older hits' });
/** The n of each hit in the list, top to bottom (their paths are TRAP_PATH?n=…). */
const shownNs = async () =>
  (await everyHit().getByTestId('hit').locator('summary').allTextContents()).map((t) => Number(t.match(/\?n=(\d+)/)?.[1] ?? NaN));
const range = (n) => Array.from({ length: n }, (_, i) => i + 1);

/** Opens the session, checks its newest window, then shows older hits until none remain. */
async function showEveryHit(session, n, pages, shotName) {
  await goto(`/sessions/${session.id}`);
  const heading = everyHit().getByRole('heading');
  await heading.filter({ hasText: `Every hit (the newest ${DETAIL_LIMIT} of ${n}) (${DETAIL_LIMIT})` }).waitFor();
  assert.deepEqual(await shownNs(), range(n).slice(n - DETAIL_LIMIT), 'the detail shows the newest hits, oldest first');
  if (shotName) await page.screenshot({ path: path.join(ARTIFACTS, `${shotName}.png`), fullPage: true });
  let clicks = 0;
  while ((await olderButton().count()) > 0) {
    const shown = (await shownNs()).length;
    await olderButton().click();
    clicks++;
    assert.ok(clicks <= pages, `more than ${pages} older pages`);
    await page.waitForFunction(
      ([shown]) => {
        const card = [...document.querySelectorAll('.card')].find((c) => /^Every hit/.test(c.querySelector('h2')?.textContent ?? ''));
        return card && card.querySelectorAll('[data-testid="hit"]').length > shown && !card.querySelector('button[disabled]');
      },
      [shown],
    );
    const ns = await shownNs();
    assert.deepEqual(ns, range(n).slice(n - ns.length), `after ${clicks} click(s): the newest ${ns.length} hits in the order received, once each`);
    if ((await olderButton().count()) > 0) {
      assert.equal(await heading.textContent(), `Every hit (the newest ${ns.length} of ${n}) (${ns.length})`, 'the title counts what is shown');
    }
  }
  assert.equal(clicks, pages, `${pages} older page(s)`);
  assert.deepEqual(await shownNs(), range(n), 'every hit, in the order received, once each');
  assert.equal(await heading.textContent(), `Every hit (${n})`);
  assert.equal(await olderButton().count(), 0, 'the button is gone once every hit is shown');
}

test('Show older hits pages back to the first hit of a session past the detail limit', async () => {
  await gqlData(`mutation ($i: CreateTrapInput!) { createTrap(input: $i) { id } }`, { i: { name: 'Old wiki', type: 'page', path: TRAP_PATH } });
  const twelve = await sessionOf(12, XSS_UA);
  const many = await sessionOf(108, `${XSS_UA} many`);

  await page.goto(apiURL, { waitUntil: 'load' });
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();

  await showEveryHit(twelve, 12, 1, '40-session-newest-hits');
  await everyHit().getByTestId('hit').first().locator('summary').click(); // the oldest hit's details, attacker text included
  await everyHit().getByTestId('hit').first().getByText('X-Note').waitFor();
  await page.screenshot({ path: path.join(ARTIFACTS, '41-session-older-hits.png'), fullPage: true });
  await assertInert('older hits');

  // Refresh starts again from the newest window.
  await page.getByRole('button', { name: 'Refresh' }).click();
  await everyHit().getByRole('heading').filter({ hasText: `Every hit (the newest ${DETAIL_LIMIT} of 12)` }).waitFor();
  assert.deepEqual(await shownNs(), range(12).slice(12 - DETAIL_LIMIT));
  assert.equal(await olderButton().count(), 1);

  await showEveryHit(many, 108, 2);
  await assertInert('older hits, two pages');
});
