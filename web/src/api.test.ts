import { describe, expect, it, vi } from 'vitest';
import { ApiError, describeError, gql, onUnauthenticated, toApiError } from './api';

describe('toApiError', () => {
  it('returns null for data without errors', () => {
    expect(toApiError(200, { data: { a: 1 } })).toBeNull();
  });
  it('takes code, message and field from the first GraphQL error', () => {
    const e = toApiError(200, { errors: [{ message: 'name must not be empty', extensions: { code: 'BAD_USER_INPUT', field: 'name' } }], data: null });
    expect(e).toBeInstanceOf(ApiError);
    expect(e!.code).toBe('BAD_USER_INPUT');
    expect(e!.field).toBe('name');
    expect(describeError(e)).toBe('name must not be empty (name)');
  });
  it('treats HTTP 401 as UNAUTHENTICATED whatever the body says', () => {
    expect(toApiError(401, { errors: [{ message: 'revoked', extensions: { code: 'X' } }] })!.code).toBe('UNAUTHENTICATED');
    expect(toApiError(401, null)!.code).toBe('UNAUTHENTICATED');
  });
  it('maps statuses without a GraphQL body', () => {
    expect(toApiError(429, null)!.code).toBe('RATE_LIMITED');
    expect(toApiError(500, 'x')!.code).toBe('INTERNAL');
    expect(toApiError(413, {})!.code).toBe('BAD_USER_INPUT');
  });
  it('refuses a 200 without data', () => {
    expect(toApiError(200, { hello: 1 })!.code).toBe('INTERNAL');
  });
  it('describes FORBIDDEN in plain words', () => {
    expect(describeError(new ApiError('forbidden', 'FORBIDDEN', 200))).toMatch(/scope/);
  });
});

function fakeFetch(status: number, body: unknown) {
  return vi.fn(async () => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } })) as unknown as typeof fetch;
}

describe('gql', () => {
  it('posts the query with the bearer token and returns data', async () => {
    const f = fakeFetch(200, { data: { organization: { id: 'org_1' } } });
    const d = await gql<{ organization: { id: string } }>('{ organization { id } }', { a: 1 }, { token: 'ftk_x', fetch: f });
    expect(d.organization.id).toBe('org_1');
    const [url, init] = (f as unknown as { mock: { calls: [string, RequestInit][] } }).mock.calls[0]!;
    expect(url).toBe('/graphql');
    expect((init.headers as Record<string, string>).Authorization).toBe('Bearer ftk_x');
    expect(JSON.parse(init.body as string)).toEqual({ query: '{ organization { id } }', variables: { a: 1 } });
  });
  it('signals sign-out on 401 when using the stored token', async () => {
    const seen = vi.fn();
    const off = onUnauthenticated(seen);
    vi.stubGlobal('sessionStorage', { getItem: () => 'ftk_stored', setItem() {}, removeItem() {} });
    await expect(gql('{ a }', undefined, { fetch: fakeFetch(401, { errors: [{ message: 'no' }] }) })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(seen).toHaveBeenCalledTimes(1);
    // An explicit token (sign-in check) does not sign the tab out.
    await expect(gql('{ a }', undefined, { token: 'ftk_try', fetch: fakeFetch(401, {}) })).rejects.toBeInstanceOf(ApiError);
    expect(seen).toHaveBeenCalledTimes(1);
    off();
    vi.unstubAllGlobals();
  });
  it('reports a network failure as NETWORK', async () => {
    const f = vi.fn(async () => {
      throw new TypeError('Failed to fetch');
    }) as unknown as typeof fetch;
    await expect(gql('{ a }', undefined, { token: 't', fetch: f })).rejects.toMatchObject({ code: 'NETWORK' });
  });
  it('surfaces FORBIDDEN from a 200 answer', async () => {
    const f = fakeFetch(200, { errors: [{ message: 'needs admin', extensions: { code: 'FORBIDDEN' } }], data: null });
    await expect(gql('{ apiKeys { totalCount } }', undefined, { token: 't', fetch: f })).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});

describe('rate limits', () => {
  it('keeps extensions.retryAfter', () => {
    const e = toApiError(200, { errors: [{ message: 'slow down', extensions: { code: 'RATE_LIMITED', retryAfter: 42 } }], data: null });
    expect(e?.code).toBe('RATE_LIMITED');
    expect(e?.retryAfter).toBe(42);
    expect(toApiError(200, { errors: [{ message: 'x', extensions: { code: 'RATE_LIMITED', retryAfter: 'soon' } }] })?.retryAfter).toBeUndefined();
  });
});
