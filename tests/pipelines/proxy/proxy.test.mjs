// The proxy's rows of the pipeline survival matrix: pages of a sample site proxied by
// Flytrap (serve --upstream) go through the same text pipelines as the decoys
// (../survival.test.mjs: turndown, node-html-markdown, html-to-text, Readability on jsdom,
// Chromium's innerText and ARIA snapshot), and the test records which pipelines keep each
// lure placement. Following each kept lure reaches the trap.
//
// The build fails on an empty cell of the matrix's margins: a placement that no pipeline
// keeps (it would be dead weight in every page), or a pipeline that keeps no placement
// (agents using it would never meet a lure). The whole matrix must also equal the one in
// docs/detection.md between the proxy-matrix markers, so any cell that changes shows in
// review (UPDATE_MATRIX=1 rewrites the docs' copy).
//
// Run by TestProxyPipelines (proxy/browser_test.go), which starts the sample site and
// Flytrap in front of it with three lures a page, and sets APP_URL, PROXY_URL, API_URL,
// API_KEY. Needs tests/pipelines/node_modules (npm ci --prefix tests/pipelines) and Chromium.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import TurndownService from 'turndown';
import { NodeHtmlMarkdown } from 'node-html-markdown';
import { convert as htmlToText } from 'html-to-text';
import { Readability } from '@mozilla/readability';
import { JSDOM, VirtualConsole } from 'jsdom';
import { chromium } from 'playwright-core';

const { APP_URL, PROXY_URL, API_URL, API_KEY } = process.env;
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const HERE = path.dirname(fileURLToPath(import.meta.url));
const DOC = path.resolve(HERE, '../../../docs/detection.md');

for (const [name, value] of Object.entries({ APP_URL, PROXY_URL, API_URL, API_KEY })) {
  if (!value) throw new Error(`${name} is not set: run this through TestProxyPipelines (go test ./proxy/ -run TestProxyPipelines)`);
}

// The sample site's pages: a shop page whose <main> has one short paragraph, and an article.
const PAGES = ['/', '/journal/care'];

const PIPELINES = [
  { id: 'raw', label: 'raw body' },
  { id: 'turndown', label: 'turndown' },
  { id: 'nhm', label: 'node-html-markdown (for markdownify)' },
  { id: 'html-to-text', label: 'html-to-text (for html2text)' },
  { id: 'readability', label: 'Readability + jsdom' },
  { id: 'innerText', label: 'Chromium innerText' },
  { id: 'aria', label: 'Chromium ARIA snapshot' },
];

// The placements, in the order of their index (decoy.Lures).
const PLACEMENTS = [
  { id: 'challenge', label: 'lure 0: sentence in the first paragraph of `<main>` (challenge)' },
  { id: 'link', label: 'lure 1: `aria-hidden` link before `</body>` (callback)' },
  { id: 'comment', label: 'lure 2: HTML comment before `</body>` (callback)' },
];

const NUMBER_WORDS = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18,
  nineteen: 19, twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90,
};
function wordNumber(w) {
  let total = 0;
  for (const part of w.toLowerCase().split('-')) {
    if (!(part in NUMBER_WORDS)) return undefined;
    total += NUMBER_WORDS[part];
  }
  return total;
}

/** The lures of a raw proxied page, by placement: {placement, token, url, words?, code?}. */
function luresOf(raw) {
  const out = [];
  for (const m of raw.matchAll(/(\/[A-Za-z0-9._~\/-]*)\?ref=([a-z2-7]{48})/g)) {
    const [, p, token] = m;
    const before = raw.slice(Math.max(0, m.index - 120), m.index);
    const after = raw.slice(m.index + m[0].length, m.index + m[0].length + 200);
    const lure = { token, url: `${p}?ref=${token}` };
    if (/<!--[^>]*$/.test(before)) {
      lure.placement = 'comment';
    } else if (/<a href="$/.test(before)) {
      lure.placement = 'link';
    } else if (after.startsWith('&amp;code=N')) {
      const words = [...after.matchAll(/\b([a-z]+(?:-[a-z]+)?)\b/g)].map((w) => w[1]).filter((w) => wordNumber(w) !== undefined);
      lure.placement = 'challenge';
      lure.words = words.slice(0, 2);
      lure.code = wordNumber(words[0]) + wordNumber(words[1]);
    } else {
      throw new Error(`a lure token in no known placement: …${before}${m[0]}${after}…`);
    }
    out.push(lure);
  }
  return out;
}

/** Whether a pipeline's output keeps the lure (a challenge: its URL and both numbers). */
function survives(lure, output) {
  const i = output.indexOf(lure.token);
  if (i < 0) return false;
  if (lure.placement !== 'challenge') return true;
  const rest = output.slice(i, i + 300);
  return rest.includes('code=N') && lure.words.every((w) => rest.includes(w));
}

const turndown = new TurndownService();
const virtualConsole = new VirtualConsole();

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

/** Every pipeline's output for one proxied page (the same bytes through each). */
async function pipelines(url, raw) {
  const out = { raw };
  out.turndown = turndown.turndown(raw);
  out.nhm = NodeHtmlMarkdown.translate(raw);
  out['html-to-text'] = htmlToText(raw, { wordwrap: false });
  const article = new Readability(new JSDOM(raw, { url, virtualConsole }).window.document).parse();
  assert.ok(article?.content, `${url}: Readability found no article`);
  out.readability = turndown.turndown(article.content);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    await page.route('**/*', (route) =>
      route.request().url() === url
        ? route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: raw })
        : route.continue(),
    );
    await page.goto(url, { waitUntil: 'load' });
    out.innerText = await page.evaluate(() => document.body.innerText);
    out.aria = await page.locator('body').ariaSnapshot();
  } finally {
    await context.close();
  }
  return out;
}

// placement → pipeline → kept on every page
const kept = new Map(PLACEMENTS.map((p) => [p.id, new Map(PIPELINES.map((q) => [q.id, true]))]));
let pagesDone = 0;

for (const p of PAGES) {
  test(`proxied ${p}: each lure placement through each pipeline, each kept lure followed`, async () => {
    const url = PROXY_URL + p;
    const readerUA = `pipeline-matrix/1.0 (proxy reader of ${p})`;
    const res = await fetch(url, { headers: { 'User-Agent': readerUA } });
    const raw = await res.text();
    assert.equal(res.status, 200);
    const lures = luresOf(raw);
    assert.deepEqual(lures.map((l) => l.placement).sort(), PLACEMENTS.map((q) => q.id).sort(), `${p}: one lure per placement in\n${raw}`);
    const out = await pipelines(url, raw);
    for (const lure of lures) {
      for (const q of PIPELINES) {
        if (!survives(lure, out[q.id])) kept.get(lure.placement).set(q.id, false);
      }
    }
    fs.mkdirSync(path.join(HERE, '..', 'artifacts'), { recursive: true });
    fs.writeFileSync(path.join(HERE, '..', 'artifacts', `proxy${p.replaceAll('/', '_')}.txt`),
      PIPELINES.map((q) => `===== ${q.id}\n${out[q.id]}\n`).join('\n'));

    // Following each lure, as an agent would, reaches the trap in the reader's session.
    for (const lure of lures) {
      const target = lure.placement === 'challenge' ? `${lure.url}&code=${lure.code}` : lure.url;
      const r = await fetch(new URL(target, PROXY_URL), { headers: { 'User-Agent': readerUA }, redirect: 'manual' });
      await r.arrayBuffer();
      assert.equal(r.status, 200, `following ${target}`);
    }
    const data = await graphql(
      `query ($ua: String!) { sessions(where: { userAgent: $ua }) { edges { node { signals { name placement } } } } }`,
      { ua: readerUA },
    );
    const sessions = data.sessions.edges.map((e) => e.node);
    assert.equal(sessions.length, 1, `${p}: the reader's sessions ${JSON.stringify(sessions)}`);
    const fired = sessions[0].signals.map((s) => `${s.name} ${s.placement}`);
    for (const want of ['INJECTION_FOLLOWED lure_challenge#0', 'CALLBACK_HIT lure_callback#1', 'CALLBACK_HIT lure_callback#2']) {
      assert.ok(fired.includes(want), `${p}: ${want} not among ${JSON.stringify(fired)}`);
    }
    pagesDone++;
  });
}

const START = '<!-- proxy-matrix:start (generated by tests/pipelines/proxy; UPDATE_MATRIX=1 go test ./proxy/ -run TestProxyPipelines) -->\n';
const END = '<!-- proxy-matrix:end -->';

test('every proxy lure placement reaches a pipeline, every pipeline a placement; docs/detection.md has the matrix', () => {
  assert.equal(pagesDone, PAGES.length, 'a page failed before its results were counted');
  const head = `| proxy lure placement | ${PIPELINES.map((q) => q.label).join(' | ')} |`;
  const rule = `| --- | ${PIPELINES.map(() => '---').join(' | ')} |`;
  const rows = PLACEMENTS.map((pl) => `| ${pl.label} | ${PIPELINES.map((q) => (kept.get(pl.id).get(q.id) ? 'kept' : '–')).join(' | ')} |`);
  const table = [head, rule, ...rows].join('\n') + '\n';
  console.log(`\nproxy lure matrix:\n${table}`);

  const empty = [];
  for (const pl of PLACEMENTS) if (PIPELINES.every((q) => !kept.get(pl.id).get(q.id))) empty.push(`placement ${pl.id} reaches no pipeline`);
  for (const q of PIPELINES) if (PLACEMENTS.every((pl) => !kept.get(pl.id).get(q.id))) empty.push(`pipeline ${q.label} keeps no placement`);
  assert.deepEqual(empty, [], 'empty rows or columns in the proxy lure matrix');

  const doc = fs.readFileSync(DOC, 'utf8');
  const i = doc.indexOf(START.trim());
  const j = doc.indexOf(END);
  assert.ok(i >= 0 && j > i, `docs/detection.md has no proxy-matrix markers (${START.trim()} … ${END})`);
  const committed = doc.slice(doc.indexOf('\n', i) + 1, j);
  if (committed !== table && process.env.UPDATE_MATRIX === '1') {
    fs.writeFileSync(DOC, doc.slice(0, i) + START + table + doc.slice(j));
    console.log('docs/detection.md: proxy lure matrix updated');
  } else {
    assert.equal(committed, table, 'the proxy lure matrix in docs/detection.md is out of date: UPDATE_MATRIX=1 go test ./proxy/ -run TestProxyPipelines');
  }
});
