import { InMemoryWebStorage, OidcClient, WebStorageStateStore } from 'oidc-client-ts';
import { describe, expect, it } from 'vitest';
import type { OidcConfig } from './config';
import { describeSignInError, isJWT, oidcSettings, pickToken, safeReturnPath, storedIdToken } from './oidc';

const JWT_A = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnYQ';
const JWT_I = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJpIn0.c2lnSQ';
const cfg: OidcConfig = { issuer: 'https://idp.example.com', client_id: 'flytrap-dashboard', scopes: 'openid profile email', audience: 'flytrap-api', token: 'access_token' };

describe('pickToken', () => {
  it('prefers the access token when it is a JWT', () => {
    expect(pickToken({ access_token: JWT_A, id_token: JWT_I })).toBe(JWT_A);
  });
  it('falls back to the id token when the access token is opaque', () => {
    expect(pickToken({ access_token: 'opaque-2YotnFZFEjr1zCsicMWpAA', id_token: JWT_I })).toBe(JWT_I);
  });
  it('uses the id token when configured so', () => {
    expect(pickToken({ access_token: JWT_A, id_token: JWT_I }, 'id_token')).toBe(JWT_I);
    expect(pickToken({ access_token: JWT_A }, 'id_token')).toBeNull();
  });
  it('returns null without any JWT', () => {
    expect(pickToken({ access_token: 'opaque' })).toBeNull();
    expect(pickToken({})).toBeNull();
  });
  it('recognises compact JWTs only', () => {
    expect(isJWT(JWT_A)).toBe(true);
    expect(isJWT('a.b.')).toBe(false);
    expect(isJWT('a.b.c.d')).toBe(false);
    expect(isJWT(42)).toBe(false);
  });
});

describe('safeReturnPath', () => {
  it('keeps paths of this app', () => {
    expect(safeReturnPath('/sessions?classification=BOT')).toBe('/sessions?classification=BOT');
    expect(safeReturnPath('/traps')).toBe('/traps');
  });
  it('refuses other origins, protocol-relative and odd paths, and the callback itself', () => {
    for (const p of ['https://evil.example', '//evil.example/x', '/\\evil.example', 'javascript:alert(1)', '/auth/callback?code=x', '/a b', '', null, 7]) {
      expect(safeReturnPath(p)).toBe('/');
    }
  });
});

describe('oidcSettings', () => {
  it('is Authorization Code with the callback route, no iframes, no background renewal', () => {
    const s = oidcSettings(cfg, 'https://flytrap.example.com');
    expect(s).toMatchObject({
      authority: 'https://idp.example.com',
      client_id: 'flytrap-dashboard',
      redirect_uri: 'https://flytrap.example.com/auth/callback',
      post_logout_redirect_uri: 'https://flytrap.example.com/',
      response_type: 'code',
      scope: 'openid profile email',
      extraQueryParams: { audience: 'flytrap-api' },
      automaticSilentRenew: false,
      monitorSession: false,
      loadUserInfo: false,
    });
    expect('client_secret' in s).toBe(false);
    expect('disablePKCE' in s).toBe(false);
    expect(oidcSettings({ ...cfg, audience: undefined }, 'https://f').extraQueryParams).toBeUndefined();
  });

  it('makes oidc-client-ts send an S256 code challenge and keep the verifier for the token request', async () => {
    const store = new InMemoryWebStorage();
    const client = new OidcClient({
      ...oidcSettings(cfg, 'https://flytrap.example.com'),
      stateStore: new WebStorageStateStore({ store, prefix: 'flytrap.oidc.' }),
      metadata: {
        issuer: cfg.issuer,
        authorization_endpoint: 'https://idp.example.com/authorize',
        token_endpoint: 'https://idp.example.com/token',
      },
    });
    const req = await client.createSigninRequest({ state: { returnTo: '/traps' } });
    const u = new URL(req.url);
    expect(u.origin + u.pathname).toBe('https://idp.example.com/authorize');
    expect(u.searchParams.get('response_type')).toBe('code');
    expect(u.searchParams.get('client_id')).toBe('flytrap-dashboard');
    expect(u.searchParams.get('redirect_uri')).toBe('https://flytrap.example.com/auth/callback');
    expect(u.searchParams.get('code_challenge_method')).toBe('S256');
    expect(u.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(u.searchParams.get('audience')).toBe('flytrap-api');
    // The verifier stays in the tab's store, keyed by state, and hashes to the challenge.
    const key = store.key(0)!;
    expect(key).toBe('flytrap.oidc.' + u.searchParams.get('state'));
    const verifier = JSON.parse(store.getItem(key)!).code_verifier as string;
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    const b64url = btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    expect(b64url).toBe(u.searchParams.get('code_challenge'));
  });
});

describe('storedIdToken', () => {
  it('finds the id token oidc-client-ts stored for the user', () => {
    const s = new InMemoryWebStorage();
    s.setItem('flytrap.oidc.user:https://idp:c', JSON.stringify({ id_token: JWT_I, access_token: JWT_A }));
    s.setItem('other', 'x');
    expect(storedIdToken(s)).toBe(JWT_I);
    expect(storedIdToken(new InMemoryWebStorage())).toBeNull();
  });
});

describe('describeSignInError', () => {
  it('shows OAuth error codes but not the provider’s free text', () => {
    expect(describeSignInError({ error: 'access_denied', error_description: '<b>call 555</b>' })).toBe('access denied');
    expect(describeSignInError({ error: '<script>' })).toBe('the identity provider’s answer was not usable');
    expect(describeSignInError(new Error('No matching state found in storage'))).toMatch(/not started in this tab/);
  });
});
