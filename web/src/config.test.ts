import { describe, expect, it } from 'vitest';
import { issuerHost, loadConfig, parseConfig } from './config';

describe('parseConfig', () => {
  it('reads the trap URL and the OIDC settings', () => {
    const c = parseConfig({
      trap_url: 'https://traps.example.com/',
      oidc: { issuer: 'https://idp.example.com/realms/x', client_id: 'flytrap', scopes: 'openid profile', audience: 'flytrap-api', token: 'access_token' },
    });
    expect(c).toEqual({
      trap_url: 'https://traps.example.com',
      oidc: { issuer: 'https://idp.example.com/realms/x', client_id: 'flytrap', scopes: 'openid profile', audience: 'flytrap-api', token: 'access_token' },
    });
  });
  it('turns off OIDC without an http(s) issuer or a client id', () => {
    expect(parseConfig({ trap_url: 'http://h:8081', oidc: null }).oidc).toBeNull();
    expect(parseConfig({ oidc: { issuer: 'javascript:alert(1)', client_id: 'x' } }).oidc).toBeNull();
    expect(parseConfig({ oidc: { issuer: 'https://idp', client_id: '' } }).oidc).toBeNull();
    expect(parseConfig(null)).toEqual({ trap_url: null, oidc: null });
  });
  it('defaults scopes and the token choice', () => {
    const o = parseConfig({ oidc: { issuer: 'https://idp', client_id: 'c', token: 'bogus' } }).oidc!;
    expect(o.scopes).toBe('openid profile email');
    expect(o.token).toBe('access_token');
    expect(o.audience).toBeUndefined();
    expect(parseConfig({ oidc: { issuer: 'https://idp', client_id: 'c', token: 'id_token' } }).oidc!.token).toBe('id_token');
  });
  it('refuses a non-http trap URL', () => {
    expect(parseConfig({ trap_url: 'data:text/html,x' }).trap_url).toBeNull();
  });
});

describe('loadConfig', () => {
  it('fetches /dashboard/config.json without credentials', async () => {
    let seen: [string, RequestInit | undefined] | null = null;
    const f = (async (url: string, init?: RequestInit) => {
      seen = [url, init];
      return new Response(JSON.stringify({ trap_url: 'http://127.0.0.1:8081', oidc: null }), { status: 200 });
    }) as unknown as typeof fetch;
    expect(await loadConfig(f)).toEqual({ trap_url: 'http://127.0.0.1:8081', oidc: null });
    expect(seen![0]).toBe('/dashboard/config.json');
    expect(seen![1]!.credentials).toBe('omit');
  });
  it('falls back to the empty configuration on failure', async () => {
    const down = (async () => {
      throw new TypeError('network');
    }) as unknown as typeof fetch;
    expect(await loadConfig(down)).toEqual({ trap_url: null, oidc: null });
    const notFound = (async () => new Response('{}', { status: 404 })) as unknown as typeof fetch;
    expect(await loadConfig(notFound)).toEqual({ trap_url: null, oidc: null });
  });
});

describe('issuerHost', () => {
  it('names the issuer by host and port', () => {
    expect(issuerHost('https://login.example.com/realms/acme')).toBe('login.example.com');
    expect(issuerHost('http://127.0.0.1:9999')).toBe('127.0.0.1:9999');
  });
});
