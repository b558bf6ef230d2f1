// OIDC sign-in in a real browser against the fake identity provider (fake-idp.mjs) that
// scripts/dashboard-tests.sh starts before flytrap, which runs with --jwks-url, --jwt-issuer,
// --jwt-audience, --oidc-issuer and --oidc-client-id pointing at it. Checks the public
// /dashboard/config.json and the CSP's connect-src, that the provider refuses a code redeemed
// with the wrong PKCE code_verifier (so the dashboard's successful sign-in proves it used
// PKCE), then signs in with "Sign in with <issuer host>", lands on the overview with the
// provider's JWT (GraphQL over HTTP and the live WebSocket), reads data, and signs out
// (end_session at the provider, nothing left in the tab).
//
// Environment (set by scripts/dashboard-tests.sh): FLYTRAP_URL, FLYTRAP_KEY, FLYTRAP_ORG (the
// organization id of the first-start banner), TRAP_URL, IDP_URL, OIDC_CLIENT_ID, OIDC_AUDIENCE.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const { FLYTRAP_URL, FLYTRAP_KEY, FLYTRAP_ORG, TRAP_URL, IDP_URL, OIDC_CLIENT_ID, OIDC_AUDIENCE } = process.env;
for (const [name, value] of Object.entries({ FLYTRAP_URL, FLYTRAP_KEY, FLYTRAP_ORG, TRAP_URL, IDP_URL, OIDC_CLIENT_ID, OIDC_AUDIENCE })) {
  if (!value) throw new Error(`${name} is not set: run bash scripts/dashboard-tests.sh`);
}
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARTIFACTS = process.env.ARTIFACTS_DIR || path.join(path.dirname(fileURLToPath(import.meta.url)), 'artifacts');
fs.mkdirSync(ARTIFACTS, { recursive: true });
const IDP_HOST = new URL(IDP_URL).host;
const REDIRECT_URI = `${FLYTRAP_URL}/auth/callback`;
const s256 = (v) => crypto.createHash('sha256').update(v).digest('base64url');
const verifier = () => crypto.randomBytes(48).toString('base64url');

let browser;
let page;
const pageErrors = [];

before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  page = await context.newPage();
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  // The provider's user belongs to the organization flytrap created at first start.
  const res = await fetch(`${IDP_URL}/_test/user`, { method: 'POST', body: new URLSearchParams({ org_id: FLYTRAP_ORG, scope: 'admin', sub: 'ada' }) });
  assert.equal(res.status, 200);
});

after(async () => {
  await browser?.close();
});

async function gqlData(query, variables, token = FLYTRAP_KEY) {
  const res = await fetch(new URL('/graphql', FLYTRAP_URL), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

const idpLog = async () => (await fetch(`${IDP_URL}/_test/log`)).json();

/** Runs /authorize like a browser would (no redirect followed) and returns the code. */
async function authorizeCode(challenge) {
  const u = new URL(`${IDP_URL}/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: OIDC_CLIENT_ID, redirect_uri: REDIRECT_URI, scope: 'openid', state: 'st', code_challenge: challenge, code_challenge_method: 'S256' })) {
    u.searchParams.set(k, v);
  }
  const res = await fetch(u, { redirect: 'manual' });
  assert.equal(res.status, 302);
  const back = new URL(res.headers.get('location'));
  assert.equal(back.origin + back.pathname, REDIRECT_URI);
  return back.searchParams.get('code');
}

const redeem = (code, codeVerifier) =>
  fetch(`${IDP_URL}/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: OIDC_CLIENT_ID, ...(codeVerifier ? { code_verifier: codeVerifier } : {}) }),
  });

test('/dashboard/config.json is public, secret-free, and the CSP adds only the issuer origin', async () => {
  const res = await fetch(new URL('/dashboard/config.json', FLYTRAP_URL));
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^application\/json/);
  assert.equal(res.headers.get('cache-control'), 'no-cache');
  const text = await res.text();
  assert.deepEqual(JSON.parse(text), {
    trap_url: TRAP_URL,
    oidc: { issuer: IDP_URL, client_id: OIDC_CLIENT_ID, scopes: 'openid profile email', audience: OIDC_AUDIENCE, token: 'access_token' },
  });
  assert.doesNotMatch(text, /secret|ftk_/i);
  for (const method of ['POST', 'DELETE']) {
    assert.equal((await fetch(new URL('/dashboard/config.json', FLYTRAP_URL), { method })).status, 404, method);
  }

  const csp = (await fetch(FLYTRAP_URL)).headers.get('content-security-policy');
  const connect = csp.split(';').map((d) => d.trim()).find((d) => d.startsWith('connect-src'));
  assert.equal(connect, `connect-src 'self' ws: wss: ${new URL(IDP_URL).origin}`);
  assert.doesNotMatch(csp, /\*|unsafe-inline|unsafe-eval/);
  assert.match(csp, /script-src 'self';/);
  // The IdP's redirect back is a page of the app.
  const cb = await fetch(new URL('/auth/callback?code=x&state=y', FLYTRAP_URL));
  assert.equal(cb.status, 200);
  assert.match(cb.headers.get('content-type'), /^text\/html/);
});

test('the identity provider redeems a code only with the PKCE verifier of its challenge', async () => {
  const good = verifier();
  // Wrong verifier: refused (and the code is burnt).
  let code = await authorizeCode(s256(good));
  let res = await redeem(code, verifier());
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error, 'invalid_grant');
  assert.equal((await redeem(code, good)).status, 400, 'a code is redeemed once, even after a failure');
  // No verifier: refused.
  code = await authorizeCode(s256(good));
  res = await redeem(code, undefined);
  assert.equal(res.status, 400);
  // The right one: tokens whose access token Flytrap accepts.
  code = await authorizeCode(s256(good));
  res = await redeem(code, good);
  assert.equal(res.status, 200);
  const tokens = await res.json();
  const d = await gqlData('{ organization { id } }', undefined, tokens.access_token);
  assert.equal(d.organization.id, FLYTRAP_ORG);
  // An authorization request without S256 PKCE gets no code.
  const u = new URL(`${IDP_URL}/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: OIDC_CLIENT_ID, redirect_uri: REDIRECT_URI, state: 'st' })) u.searchParams.set(k, v);
  const plain = await fetch(u, { redirect: 'manual' });
  assert.equal(new URL(plain.headers.get('location')).searchParams.get('error'), 'invalid_request');
});

test('sign in with the identity provider, use its JWT, sign out', async () => {
  const trapName = `OIDC trap ${Date.now()}`;
  await gqlData(`mutation ($name: String!) { createTrap(input: {name: $name, type: api}) { id } }`, { name: trapName });
  const logStart = (await idpLog()).length;

  await page.goto(FLYTRAP_URL, { waitUntil: 'load' });
  const button = page.getByRole('button', { name: `Sign in with ${IDP_HOST}` });
  await button.waitFor();
  await page.getByLabel('API key').waitFor(); // the API-key form is always offered
  await page.screenshot({ path: path.join(ARTIFACTS, '20-sign-in-oidc.png'), fullPage: true });
  await button.click();

  // Out to the provider (automatic consent), back to /auth/callback, then the overview.
  await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 20000 });
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal(new URL(page.url()).search, '', 'the code and state are gone from the address bar');
  assert.equal(await page.getByTestId('scope').textContent(), 'admin');
  const stored = await page.evaluate(() => ({
    token: sessionStorage.getItem('flytrap.token'),
    method: sessionStorage.getItem('flytrap.signin'),
    keys: Object.keys(sessionStorage),
    local: localStorage.length,
  }));
  assert.match(stored.token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT, not an API key');
  assert.equal(stored.method, 'oidc');
  assert.equal(stored.local, 0, 'nothing kept beyond the tab');
  const claims = JSON.parse(Buffer.from(stored.token.split('.')[1], 'base64url').toString());
  assert.equal(claims.aud, OIDC_AUDIENCE, 'the access token (audience: the API) is what the dashboard sends');
  assert.equal(claims.org_id, FLYTRAP_ORG);

  // What the provider saw: S256 PKCE on the way out, the verifier (and no secret) on the token request.
  const seen = (await idpLog()).slice(logStart);
  const authz = seen.find((e) => e.endpoint === 'authorize');
  assert.equal(authz.code_challenge_method, 'S256');
  assert.match(authz.code_challenge, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(authz.redirect_uri, REDIRECT_URI);
  assert.equal(authz.scope, 'openid profile email');
  assert.equal(authz.audience, OIDC_AUDIENCE);
  const tok = seen.find((e) => e.endpoint === 'token');
  assert.equal(tok.result, 'tokens issued');
  assert.equal(tok.has_code_verifier, true);
  assert.equal(tok.has_client_secret, false);
  assert.equal(tok.origin, new URL(FLYTRAP_URL).origin, 'the browser redeemed the code itself');

  // The JWT works over the WebSocket (live feed) and over HTTP (figures, traps).
  await page.getByTestId('live-status').filter({ hasText: 'Live' }).waitFor({ timeout: 15000 });
  await page.getByTestId('figure-activeTraps').filter({ hasNotText: /^0$/ }).waitFor();
  await page.getByRole('link', { name: 'Traps' }).click();
  const item = page.getByTestId('trap').filter({ hasText: trapName });
  await item.waitFor();
  // The trap listener's URL comes from the server's configuration, not typed in.
  assert.equal(await page.getByLabel('Trap listener URL (for previews)').inputValue(), TRAP_URL);
  await page.screenshot({ path: path.join(ARTIFACTS, '21-traps-oidc.png'), fullPage: true });

  // Sign out: the provider's end_session, back to the sign-in page, nothing left in the tab.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: `Sign in with ${IDP_HOST}` }).waitFor({ timeout: 15000 });
  assert.equal(new URL(page.url()).pathname, '/');
  const end = (await idpLog()).slice(logStart).find((e) => e.endpoint === 'end_session');
  assert.ok(end, 'the provider’s end_session endpoint was called');
  assert.equal(end.has_id_token_hint, true);
  assert.equal(end.post_logout_redirect_uri, `${FLYTRAP_URL}/`);
  assert.deepEqual(await page.evaluate(() => Object.keys(sessionStorage)), [], 'no token, no OIDC state left');
  await page.screenshot({ path: path.join(ARTIFACTS, '22-signed-out-oidc.png'), fullPage: true });

  const r = await page.evaluate(() => ({ csp: window.__csp, scripts: [...document.scripts].map((s) => s.src) }));
  assert.deepEqual(r.csp, [], 'CSP violations');
  assert.equal(r.scripts.length, 1);
  assert.deepEqual(pageErrors, []);
});

test('a callback that was not started in this tab is refused without signing in', async () => {
  await page.goto(`${FLYTRAP_URL}/auth/callback?code=forged&state=forged`, { waitUntil: 'load' });
  await page.getByText(/did not complete/).waitFor();
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('flytrap.token')), null);
  assert.equal(await page.getByTestId('scope').count(), 0);
});
