import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { canWrite, identify, looksLikeToken, normaliseToken } from './scope';

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
