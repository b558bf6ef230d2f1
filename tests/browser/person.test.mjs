// A person in a real browser: headless Chromium opens a Flytrap trap page the way a
// person does (load, scroll, click a visible link) and must end HUMAN with no tripwire,
// while the page's hidden content stays invisible to them.
//
// Run by TestBrowserPerson (trap/corpus_test.go), which starts Flytrap, creates a page
// trap and sets:
//   TRAP_URL  the trap page on the trap listener
//   API_URL   the API listener
//   API_KEY   a read-only key of the trap's organization
// Optional: CHROMIUM_PATH (default /usr/bin/chromium), SCREENSHOT_DIR (default the OS
// temporary directory). Install with: bash scripts/install-chromium.sh

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const { TRAP_URL, API_URL, API_KEY } = process.env;
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const SHOTS = process.env.SCREENSHOT_DIR || os.tmpdir();

for (const [name, value] of Object.entries({ TRAP_URL, API_URL, API_KEY })) {
  if (!value) throw new Error(`${name} is not set: run this through TestBrowserPerson (go test ./trap/ -run TestBrowserPerson)`);
}

/** @type {import('playwright-core').Browser} */
let browser;

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
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

/** The sessions of one user agent, read through the API. */
async function sessionsOf(userAgent) {
  const data = await graphql(
    `query ($ua: String!) { sessions(where: { userAgent: $ua }) { edges { node {
       id classification score severity tripwiresFired hitCount signalsFired userAgent
       signals { name tripwire placement } } } } }`,
    { ua: userAgent },
  );
  return data.sessions.edges.map((e) => e.node);
}

/** Opens the trap page like a person: load, look, scroll to the end. */
async function visit(page) {
  const res = await page.goto(TRAP_URL, { waitUntil: 'load' });
  assert.equal(res.status(), 200, `GET ${TRAP_URL}`);
  await page.mouse.move(200, 200);
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, 400);
  await page.waitForFunction(() => window.scrollY > 0 || document.documentElement.scrollHeight <= window.innerHeight);
  await page.evaluate(() => window.scrollTo(0, 0));
}

/** The canary phrase the hidden content asks AI agents to repeat (two words and a token). */
function canaryPhrase(html) {
  const m = html.match(/\b[a-z]+-[a-z]+-[a-z2-7]{48}\b/);
  assert.ok(m, 'the trap page carries a canary phrase in its source');
  return m[0];
}

test('a person in Chromium is HUMAN and trips no wire', async () => {
  // The user agent this Chromium sends when it has a window: headless mode only adds
  // "Headless" to it. A person's browser is not headless.
  const probe = await browser.newPage();
  const headlessUA = await probe.evaluate(() => navigator.userAgent);
  await probe.close();
  const userAgent = headlessUA.replace('HeadlessChrome/', 'Chrome/');
  assert.doesNotMatch(userAgent, /Headless/);

  const context = await browser.newContext({ userAgent, viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  const page = await context.newPage();
  const requested = [];
  page.on('request', (r) => requested.push(r.url()));
  await visit(page);

  // The hidden content is there for machines and invisible to the person.
  const html = await page.content();
  const phrase = canaryPhrase(html);
  const canary = page.locator(`text=${phrase}`);
  assert.equal(await canary.count(), 1, 'the canary phrase is in the DOM');
  assert.equal(await canary.isVisible(), false, 'the canary phrase is not visible');
  const instruction = page.locator('[aria-hidden="true"]', { hasText: '?code=N' });
  assert.equal(await instruction.count(), 1, 'the challenge instruction is in the DOM');
  const box = await instruction.boundingBox();
  assert.ok(box === null || box.x + box.width <= 0 || box.y + box.height <= 0 || (box.width <= 1 && box.height <= 1),
    `the challenge instruction is off screen, not shown: ${JSON.stringify(box)}`);
  const shown = await page.evaluate(() => document.body.innerText);
  assert.ok(!shown.includes(phrase), 'the rendered text does not show the canary phrase');
  // innerText keeps off-screen text (agents that read innerText are meant to find the sink there), so
  // what a person sees is judged by where the text is drawn: nowhere on the page.
  const drawn = await page.evaluate(() => {
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const t = walker.currentNode;
      if (!/system.prompt|\?code=N/.test(t.data)) continue;
      // Clipped away (the screen-reader note: a 1×1 box, overflow hidden, clip rect(0 0 0 0)).
      let clipped = false;
      for (let el = t.parentElement; el && !clipped; el = el.parentElement) {
        const cs = getComputedStyle(el);
        const box = el.getBoundingClientRect();
        clipped = cs.clip === 'rect(0px, 0px, 0px, 0px)' || (cs.overflow === 'hidden' && box.width <= 1 && box.height <= 1);
      }
      if (clipped) continue;
      const range = document.createRange();
      range.selectNodeContents(t);
      for (const r of range.getClientRects()) {
        if (r.width > 1 && r.height > 1 && r.right > 0 && r.bottom > 0) out.push(`${t.data.slice(0, 60)} at ${r.x},${r.y} ${r.width}x${r.height}`);
      }
    }
    return out;
  });
  assert.deepEqual(drawn, [], 'no instruction is drawn where a person can see it');
  await page.screenshot({ path: path.join(SHOTS, 'flytrap-person.png'), fullPage: true });

  // Click a visible link, as a person would; a hidden one cannot be clicked.
  const links = page.locator('a[href]:visible');
  const count = await links.count();
  assert.ok(count >= 3, `the page shows links (${count})`);
  const link = links.nth(Math.min(2, count - 1));
  const href = await link.getAttribute('href');
  await Promise.all([page.waitForEvent('load'), link.click()]);
  assert.notEqual(page.url(), TRAP_URL, `clicking ${href} navigated`);
  await context.close();

  // Nothing the browser asked for by itself (sub-resources, favicon, the click) carried a token.
  assert.ok(requested.length >= 2, `the browser made requests: ${requested}`);
  for (const u of requested) assert.doesNotMatch(u, /\/(?:[a-z2-7]{48}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9a-f]{28}|[0-9a-f]{60}|[0-9A-Za-z]{41})\b/, `the browser requested a token URL: ${u}`);

  const sessions = await sessionsOf(userAgent);
  assert.equal(sessions.length, 1, `one session for ${userAgent}: ${JSON.stringify(sessions)}`);
  const s = sessions[0];
  assert.equal(s.classification, 'HUMAN', JSON.stringify(s));
  assert.equal(s.tripwiresFired, 0, JSON.stringify(s));
  assert.deepEqual(s.signals.filter((x) => x.tripwire), [], JSON.stringify(s));
  assert.ok(s.hitCount >= 2, `the page and the clicked link are hits: ${JSON.stringify(s)}`);
  assert.equal(s.severity, 'low');
});

test('a headless Chromium that says so is a BOT, still with no tripwire', async () => {
  const page = await browser.newPage();
  const userAgent = await page.evaluate(() => navigator.userAgent);
  assert.match(userAgent, /HeadlessChrome/);
  await visit(page);
  await page.close();

  const sessions = await sessionsOf(userAgent);
  assert.equal(sessions.length, 1, JSON.stringify(sessions));
  const s = sessions[0];
  assert.equal(s.classification, 'BOT', JSON.stringify(s));
  assert.ok(s.signalsFired.includes('HEADLESS_BROWSER_UA'), JSON.stringify(s));
  assert.equal(s.tripwiresFired, 0, JSON.stringify(s));
});
