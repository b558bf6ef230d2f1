// Flytrap in front of an application (flytrap serve --upstream), in a real browser:
// a person browsing the proxied site sees exactly what the application serves (the
// screenshots through the proxy and straight from the application are byte-identical)
// and is never recorded; an agent that reads the page and follows its hidden
// instruction lands on a trap and is caught as an AI agent.
//
// Run by TestBrowserProxy (proxy/browser_test.go), which starts the application and
// Flytrap in front of it, and sets:
//   APP_URL    the application, straight
//   PROXY_URL  the same application through Flytrap's trap listener
//   API_URL    the API listener
//   API_KEY    a read-only key of the site's organization
// Optional: CHROMIUM_PATH (default /usr/bin/chromium), SCREENSHOT_DIR (default the OS
// temporary directory). Install with: bash scripts/install-chromium.sh

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const { APP_URL, PROXY_URL, API_URL, API_KEY } = process.env;
const HOSTILE_COUNT = Number(process.env.HOSTILE_COUNT ?? 0);
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const SHOTS = process.env.SCREENSHOT_DIR || os.tmpdir();

for (const [name, value] of Object.entries({ APP_URL, PROXY_URL, API_URL, API_KEY })) {
  if (!value) throw new Error(`${name} is not set: run this through TestBrowserProxy (go test ./proxy/ -run TestBrowserProxy)`);
}

/** @type {import('playwright-core').Browser} */
let browser;

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--font-render-hinting=none'],
  });
});

after(async () => {
  await browser?.close();
});

async function graphql(query, variables) {
  const res = await fetch(new URL('/graphql', API_URL), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

async function sessionsOf(userAgent) {
  const data = await graphql(
    `query ($ua: String!) { sessions(where: { userAgent: $ua }) { edges { node {
       id classification tripwiresFired signalsFired } } } }`,
    { ua: userAgent },
  );
  return data.sessions.edges.map((e) => e.node);
}

async function personUA() {
  const probe = await browser.newPage();
  const ua = await probe.evaluate(() => navigator.userAgent);
  await probe.close();
  return ua.replace('HeadlessChrome/', 'Chrome/');
}

/** Opens url as a person would, and returns a full-page screenshot. */
async function look(page, url) {
  const res = await page.goto(url, { waitUntil: 'load' });
  assert.equal(res.status(), 200, `GET ${url}`);
  await page.mouse.move(200, 200);
  for (let i = 0; i < 3; i++) await page.mouse.wheel(0, 300);
  await page.evaluate(() => window.scrollTo(0, 0));
  return page.screenshot({ fullPage: true, animations: 'disabled', caret: 'hide' });
}

test('a person sees the application unchanged and is not recorded', async () => {
  const userAgent = await personUA();
  const context = await browser.newContext({ userAgent, viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  const page = await context.newPage();

  const straight = await look(page, APP_URL + '/');
  const proxied = await look(page, PROXY_URL + '/');
  const dir = SHOTS;
  await import('node:fs/promises').then((fs) => Promise.all([
    fs.writeFile(path.join(dir, 'flytrap-proxy-straight.png'), straight),
    fs.writeFile(path.join(dir, 'flytrap-proxy-proxied.png'), proxied),
  ]));
  // Same pixels, same encoder: the same bytes. No tolerance: the lures render nothing.
  assert.ok(straight.equals(proxied), `the proxied page looks different (screenshots in ${dir}/flytrap-proxy-*.png)`);

  // The lures are in the page for machines, in what they read (innerText, the
  // accessibility tree), and nothing of them is drawn: the screenshots above are equal.
  const html = await page.content();
  assert.match(html, /\?ref=[a-z2-7]{48}/, 'the proxied page carries lures');
  const lures = page.locator('a[href*="?ref="]');
  assert.ok(await lures.count() >= 1, 'a lure link is in the DOM');
  const box = await lures.first().evaluate((a) => { const r = a.getBoundingClientRect(); return r.width * r.height; });
  assert.ok(box <= 1, `the lure link takes ${box} px²`);
  const shown = await page.evaluate(() => document.body.innerText);
  assert.match(shown, /\?ref=[a-z2-7]{48}&code=N/, 'innerText carries the instruction');
  const tree = await page.locator('body').ariaSnapshot();
  assert.match(tree, /\?ref=[a-z2-7]{48}&code=N/, 'the accessibility tree carries the instruction');
  assert.doesNotMatch(tree, /\/url: [^\n]*\?ref=/, 'no lure link in the accessibility tree: a screen reader offers none');

  // A person clicks what they see.
  await Promise.all([page.waitForEvent('load'), page.locator('nav a', { hasText: 'About us' }).click()]);
  assert.equal(new URL(page.url()).pathname, '/about');
  await look(page, PROXY_URL + '/');
  await context.close();

  assert.deepEqual(await sessionsOf(userAgent), [], 'browsing the application recorded nothing');
});

test('hostile author CSS and tricky markup never show a lure', async () => {
  assert.ok(HOSTILE_COUNT > 0, 'HOSTILE_COUNT is not set');
  const userAgent = await personUA();
  const context = await browser.newContext({ userAgent, viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  const page = await context.newPage();
  const fs = await import('node:fs/promises');
  const differ = [];
  for (const p of [...Array.from({ length: HOSTILE_COUNT }, (_, n) => `/hostile/${n}`), '/tricky', '/journal/care']) {
    const straight = await look(page, APP_URL + p);
    const shownStraight = await page.evaluate(() => document.body.innerText);
    const fields = await page.evaluate(() => [...document.querySelectorAll('textarea, input')].map((e) => e.value));
    const proxied = await look(page, PROXY_URL + p);
    assert.match(await page.content(), /\?ref=[a-z2-7]{48}/, `${p}: the proxied page carries lures`);
    // The page's own form fields keep their values: no lure went into an attribute or a textarea.
    assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('textarea, input')].map((e) => e.value)), fields, `${p}: form fields changed`);
    const shown = await page.evaluate(() => document.body.innerText);
    assert.ok(shown.length > shownStraight.length, `${p}: innerText carries no lure`);
    if (!straight.equals(proxied)) {
      const name = p.replaceAll('/', '_');
      await fs.writeFile(path.join(SHOTS, `flytrap-proxy${name}-straight.png`), straight);
      await fs.writeFile(path.join(SHOTS, `flytrap-proxy${name}-proxied.png`), proxied);
      differ.push(p);
    }
  }
  await context.close();
  assert.deepEqual(differ, [], `pages that look different through the proxy (screenshots in ${SHOTS}/flytrap-proxy_*.png)`);
});

test('a strict Content-Security-Policy: the lures pass by their hash, no violation', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.sample}`));
  });
  const page = await context.newPage();
  const console_ = [];
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) console_.push(m.text()); });
  const straight = await look(page, APP_URL + '/csp');
  const proxied = await look(page, PROXY_URL + '/csp');
  const violations = await page.evaluate(() => window.__violations);
  assert.deepEqual(violations, [], 'CSP violations reported through the proxy');
  assert.deepEqual(console_, [], 'CSP complaints in the console');
  assert.ok(straight.equals(proxied), 'the strict page looks different through the proxy');
  assert.match(await page.content(), /style="all:initial/, 'the lures are in the page');

  // The check can fail: the same proxied page under the application's own policy (the
  // hash taken out) is refused its lures' style, and that is reported.
  await page.route(PROXY_URL + '/csp', async (route) => {
    const res = await route.fetch();
    const headers = { ...res.headers(), 'content-security-policy': "default-src 'self'; style-src 'self'; script-src 'self'" };
    await route.fulfill({ response: res, headers });
  });
  await page.goto(PROXY_URL + '/csp', { waitUntil: 'load' });
  await page.waitForFunction(() => window.__violations.length > 0, null, { timeout: 15_000 }).catch(() => {});
  const refused = await page.evaluate(() => window.__violations);
  assert.ok(refused.some((v) => v.startsWith('style-src')), `no violation without the hash: ${JSON.stringify(refused)}`);
  await context.close();
});

test('a person who clicks a lure the page itself made visible is no threat', async () => {
  const userAgent = (await personUA()).replace(/Safari\/([\d.]+)$/, 'Safari/$1 Edg/141.0.0.0'); // another browser
  const context = await browser.newContext({ userAgent, viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  const page = await context.newPage();
  await page.goto(PROXY_URL + '/', { waitUntil: 'load' });
  // As a page's own script or style sheet might: the lure link shown as an ordinary link.
  const link = page.locator('a[href*="?ref="]').first();
  await link.evaluate((a) => { a.removeAttribute('style'); a.removeAttribute('aria-hidden'); a.textContent = 'Suppliers'; });
  await Promise.all([page.waitForEvent('load'), link.click()]);
  assert.match(page.url(), /\/internal\/docs\/suppliers\?ref=/);
  await context.close();

  const sessions = await sessionsOf(userAgent);
  assert.equal(sessions.length, 1, `one session for the click: ${JSON.stringify(sessions)}`);
  const s = sessions[0];
  assert.ok(s.signalsFired.includes('VISIBLE_LINK_OPENED'), `signals ${s.signalsFired}`);
  assert.ok(!s.signalsFired.includes('CALLBACK_HIT'), `signals ${s.signalsFired}`);
  assert.equal(s.classification, 'HUMAN');
});

/** Spells back the numbers 0–99 the challenge states in words. */
function wordsToNumber(w) {
  const units = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve',
    'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
  const tens = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
  const [t, u] = w.split('-');
  if (units.includes(t)) return units.indexOf(t);
  return tens.indexOf(t) * 10 + (u ? units.indexOf(u) : 0);
}

test('an agent that reads the page and follows its instruction is caught', async () => {
  const context = await browser.newContext(); // a driven headless browser, as agent tools use
  const page = await context.newPage();
  const userAgent = await page.evaluate(() => navigator.userAgent);
  await page.goto(PROXY_URL + '/', { waitUntil: 'load' });
  // What a model reads: the whole document, hidden parts included.
  const text = await page.evaluate(() => document.documentElement.textContent);
  // The instruction comes in several registers (decoy/render.go); each names the URL, then
  // the two numbers in words joined by "and" or "plus".
  const m = text.match(/(\S+)&code=N\b[^.]*?\b([a-z]+(?:-[a-z]+)?) (?:and|plus) ([a-z]+(?:-[a-z]+)?)\b/);
  assert.ok(m, `the page carries an instruction for agents:\n${text}`);
  const [, url, a, b] = m;
  const res = await page.goto(new URL(`${url}&code=${wordsToNumber(a) + wordsToNumber(b)}`, PROXY_URL).href);
  assert.equal(res.status(), 200);
  await context.close();

  const sessions = await sessionsOf(userAgent);
  assert.equal(sessions.length, 1, `one session for the agent: ${JSON.stringify(sessions)}`);
  const s = sessions[0];
  assert.ok(s.signalsFired.includes('INJECTION_FOLLOWED'), `signals ${s.signalsFired}`);
  assert.equal(s.classification, 'AI_AGENT');
});
