// One page load in headless Chromium, for TestClientStacks (server/clientstack_test.go):
// the trap listener over TLS fingerprints the real browser's TLS and HTTP/2 stack.
// Usage: node tests/browser/clientstack.mjs URL [USER_AGENT]
// Optional: CHROMIUM_PATH (default /usr/bin/chromium).
import { chromium } from 'playwright-core';

const [url, userAgent] = process.argv.slice(2);
if (!url) throw new Error('usage: node clientstack.mjs URL [USER_AGENT]');
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, ...(userAgent ? { userAgent } : {}) });
  const page = await context.newPage();
  const res = await page.goto(url, { waitUntil: 'load', timeout: 30000 });
  console.log(`${res.status()} ${await res.headerValue('server')}`);
} finally {
  await browser.close();
}
