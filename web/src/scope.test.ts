import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { canWrite, identify, looksLikeToken, normaliseToken, probeScope } from './scope';

const org = { organization: { id: 'org_1', name: 'Acme' } };
function runner(answers: Record<string, unknown>) {
  return async <T,>(query: string): Promise<T> => {
    const key = Object.keys(answers).find((k) => query.includes(k))!;
    const a = answers[key];
    if (a instanceof Error) throw a;
    return a as T;
  };
}
const forbidden = new ApiError('no', 'FORBIDDEN', 200);

describe('identify', () => {
  it('finds an admin', async () => {
    expect((await identify('t', runner({ 'organization {': org, ProbeAdmin: {}, ProbeWrite: {} }))).scope).toBe('ADMIN');
  });
  it('finds read-write from NOT_FOUND on the write probe', async () => {
    const r = runner({ 'organization {': org, ProbeAdmin: forbidden, ProbeWrite: new ApiError('no such trap', 'NOT_FOUND', 200) });
    expect((await identify('t', r)).scope).toBe('READ_WRITE');
  });
  it('finds read-only from FORBIDDEN on both probes', async () => {
    const r = runner({ 'organization {': org, ProbeAdmin: forbidden, ProbeWrite: forbidden });
    const id = await identify('t', r);
    expect(id).toEqual({ org: org.organization, scope: 'READ_ONLY' });
    expect(canWrite(id.scope)).toBe(false);
  });
  it('passes a refusal on', async () => {
    const r = runner({ 'organization {': new ApiError('bad key', 'UNAUTHENTICATED', 401) });
    await expect(identify('t', r)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});

describe('probeScope', () => {
  const calls: string[] = [];
  const tracking = (answers: Record<string, unknown>) => {
    const r = runner(answers);
    return async <T,>(query: string, _v?: unknown, opts?: { token?: string }): Promise<T> => {
      calls.push(`${query.match(/(query|mutation) (\w+)/)?.[2]} ${opts?.token}`);
      return r<T>(query);
    };
  };
  it('asks only the admin probe of an admin, with the given token', async () => {
    calls.length = 0;
    expect(await probeScope('tok', tracking({ ProbeAdmin: {}, ProbeWrite: {} }))).toBe('ADMIN');
    expect(calls).toEqual(['ProbeAdmin tok']);
  });
  it('tells read-write from read-only by the write probe', async () => {
    expect(await probeScope('t', runner({ ProbeAdmin: forbidden, ProbeWrite: new ApiError('bad id', 'BAD_USER_INPUT', 200) }))).toBe('READ_WRITE');
    expect(await probeScope('t', runner({ ProbeAdmin: forbidden, ProbeWrite: forbidden }))).toBe('READ_ONLY');
  });
  it('passes other failures on rather than guessing a scope', async () => {
    await expect(probeScope('t', runner({ ProbeAdmin: new ApiError('down', 'NETWORK', 0) }))).rejects.toMatchObject({ code: 'NETWORK' });
    await expect(probeScope('t', runner({ ProbeAdmin: forbidden, ProbeWrite: new ApiError('x', 'INTERNAL', 500) }))).rejects.toMatchObject({ code: 'INTERNAL' });
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
