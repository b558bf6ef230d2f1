import { InMemoryWebStorage } from 'oidc-client-ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { auth, TOKEN_KEY } from './api';
import { trapBase } from './views/Traps';

describe('auth (the tab’s token store)', () => {
  let store: InMemoryWebStorage;
  beforeEach(() => {
    store = new InMemoryWebStorage();
    (globalThis as { sessionStorage?: Storage }).sessionStorage = store as unknown as Storage;
  });
  afterEach(() => {
    delete (globalThis as { sessionStorage?: Storage }).sessionStorage;
  });

  it('keeps the token and how it was obtained', () => {
    expect(auth.get()).toBeNull();
    expect(auth.method()).toBe('key');
    auth.set('ftk_abc');
    expect(store.getItem(TOKEN_KEY)).toBe('ftk_abc');
    expect(auth.method()).toBe('key');
    auth.set('a.b.c', 'oidc');
    expect(auth.get()).toBe('a.b.c');
    expect(auth.method()).toBe('oidc');
  });

  it('sign-out forgets the token and everything the OIDC client kept, nothing else', () => {
    auth.set('a.b.c', 'oidc');
    store.setItem('flytrap.oidc.user:https://idp:c', '{"id_token":"x"}');
    store.setItem('flytrap.oidc.8f3c', '{"code_verifier":"v"}');
    store.setItem('unrelated', '1');
    auth.clear();
    expect(auth.get()).toBeNull();
    expect(auth.method()).toBe('key');
    expect(store.length).toBe(1);
    expect(store.getItem('unrelated')).toBe('1');
  });

  it('survives a missing storage', () => {
    delete (globalThis as { sessionStorage?: Storage }).sessionStorage;
    expect(auth.get()).toBeNull();
    expect(() => auth.clear()).not.toThrow();
  });
});

describe('trapBase', () => {
  const loc = { protocol: 'https:', hostname: 'flytrap.example.com' };
  it('prefers the user’s override, then the server’s trap URL, then port 8081 here', () => {
    expect(trapBase('http://traps:8081', 'http://mine:9', loc)).toBe('http://mine:9');
    expect(trapBase('http://traps:8081', null, loc)).toBe('http://traps:8081');
    expect(trapBase(null, null, loc)).toBe('https://flytrap.example.com:8081');
  });
});
