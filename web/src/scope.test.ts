import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { canWrite, identify, isScope, looksLikeToken, normaliseToken } from './scope';

const org = { id: 'org_1', name: 'Acme' };
type Call = { query: string; token?: string };
function runner(answer: unknown, calls: Call[] = []) {
  return async <T,>(query: string, _v?: unknown, opts?: { token?: string }): Promise<T> => {
    calls.push({ query, token: opts?.token });
    if (answer instanceof Error) throw answer;
    return answer as T;
  };
}

describe('identify', () => {
  it('asks the API once, with the given token, for the organization and viewer scope', async () => {
    const calls: Call[] = [];
    const id = await identify('tok', runner({ organization: org, viewer: { scope: 'ADMIN' } }, calls));
    expect(id).toEqual({ org, scope: 'ADMIN' });
    expect(calls).toHaveLength(1);
    expect(calls[0].token).toBe('tok');
    expect(calls[0].query).toMatch(/viewer\s*\{\s*scope\s*\}/);
    expect(calls[0].query).toMatch(/organization\s*\{\s*id name\s*\}/);
    expect(calls[0].query).not.toMatch(/mutation/);
  });
  it('takes each scope as the API says it', async () => {
    for (const scope of ['READ_ONLY', 'READ_WRITE', 'ADMIN'] as const) {
      const id = await identify('t', runner({ organization: org, viewer: { scope } }));
      expect(id.scope).toBe(scope);
      expect(canWrite(id.scope)).toBe(scope !== 'READ_ONLY');
    }
  });
  it('refuses a scope it does not know rather than guessing', async () => {
    await expect(identify('t', runner({ organization: org, viewer: { scope: 'SUPERUSER' } }))).rejects.toMatchObject({ code: 'INTERNAL' });
    await expect(identify('t', runner({ organization: org, viewer: null }))).rejects.toMatchObject({ code: 'INTERNAL' });
  });
  it('passes a refusal or a failure on', async () => {
    await expect(identify('t', runner(new ApiError('bad key', 'UNAUTHENTICATED', 401)))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(identify('t', runner(new ApiError('down', 'NETWORK', 0)))).rejects.toMatchObject({ code: 'NETWORK' });
  });
});

describe('isScope', () => {
  it('knows the three scopes only', () => {
    expect(['READ_ONLY', 'READ_WRITE', 'ADMIN'].every(isScope)).toBe(true);
    expect(isScope('read-only')).toBe(false);
    expect(isScope(undefined)).toBe(false);
  });
});

describe('tokens', () => {
  it('normalises pasted tokens', () => {
    expect(normaliseToken('  Bearer ftk_abc \n')).toBe('ftk_abc');
  });
  it('recognises keys and JWTs', () => {
    expect(looksLikeToken('ftk_c7VNBwaNlJfVvk46XkV8qy9goF28Rm3Jstpm')).toBe(true);
    expect(looksLikeToken('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).toBe(true);
    expect(looksLikeToken('hello')).toBe(false);
    expect(looksLikeToken('ftk_<script>')).toBe(false);
  });
});
