import { describe, expect, it, vi } from 'vitest';
import { hitListTitle, loadOlderHits, olderHitsVariables, prependOlder } from './olderhits';
import { OLDER_HITS, SESSION, type Hit } from './queries';

function hit(id: string, receivedAt = '2026-11-27T18:16:05.953683082Z'): Hit {
  return {
    id,
    trapID: null,
    method: 'GET',
    path: '/wiki',
    query: '',
    headers: {},
    body: '',
    bodyTruncated: false,
    sourceIP: '127.0.0.1',
    userAgent: 'agent',
    receivedAt,
    kind: 'page',
    status: 200,
    signals: [],
  };
}

function fakeFetch(body: unknown) {
  return vi.fn(async () => new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } })) as unknown as typeof fetch;
}

const sent = (f: typeof fetch) => JSON.parse((f as unknown as { mock: { calls: [string, RequestInit][] } }).mock.calls[0]![1].body as string);

describe('OLDER_HITS', () => {
  it('selects every hit field the detail selects', () => {
    expect(OLDER_HITS).not.toContain('${'); // whole, as the server's tests read it
    const fields = (q: string, open: string) => q.slice(q.indexOf(open) + open.length, q.indexOf('}', q.indexOf(open))).trim().split(/\s+/);
    expect(fields(OLDER_HITS, 'edges { node {')).toEqual(fields(SESSION, 'hits {'));
  });
  it('pages back from a hit in the detail’s order, received then id', () => {
    expect(OLDER_HITS).toContain('last: 100, orderBy: {field: RECEIVED_AT, direction: ASC}'); // the API's largest page (server.MaxPageSize)
    expect(OLDER_HITS).toContain('where: {receivedAtLTE: $before, or: [{receivedAtLT: $before}, {idLT: $beforeID}]}');
    expect(OLDER_HITS).toContain('pageInfo { hasPreviousPage }');
  });
  it('takes the oldest shown hit as its bound', () => {
    expect(olderHitsVariables('ses_1', hit('hit_05', '2026-11-27T18:16:05.5Z'))).toEqual({
      session: 'ses_1',
      before: '2026-11-27T18:16:05.5Z',
      beforeID: 'hit_05',
    });
  });
});

describe('loadOlderHits', () => {
  it('returns the page oldest first and whether more remain', async () => {
    const f = fakeFetch({ data: { node: { hits: { edges: [{ node: hit('hit_03') }, { node: hit('hit_04') }], pageInfo: { hasPreviousPage: true } } } } });
    const page = await loadOlderHits('ses_1', hit('hit_05', 'T5'), { token: 't', fetch: f });
    expect(page.hits.map((h) => h.id)).toEqual(['hit_03', 'hit_04']);
    expect(page.more).toBe(true);
    expect(sent(f)).toEqual({ query: OLDER_HITS, variables: { session: 'ses_1', before: 'T5', beforeID: 'hit_05' } });
  });
  it('ends at the first page', async () => {
    const f = fakeFetch({ data: { node: { hits: { edges: [{ node: hit('hit_01') }], pageInfo: { hasPreviousPage: false } } } } });
    expect((await loadOlderHits('ses_1', hit('hit_02'), { token: 't', fetch: f })).more).toBe(false);
  });
  it('ends on an empty page or a session gone meanwhile', async () => {
    const empty = fakeFetch({ data: { node: { hits: { edges: [], pageInfo: { hasPreviousPage: true } } } } });
    expect(await loadOlderHits('ses_1', hit('hit_01'), { token: 't', fetch: empty })).toEqual({ hits: [], more: false });
    const gone = fakeFetch({ data: { node: null } });
    expect(await loadOlderHits('ses_1', hit('hit_01'), { token: 't', fetch: gone })).toEqual({ hits: [], more: false });
  });
  it('surfaces the API’s refusal', async () => {
    const f = fakeFetch({ errors: [{ message: 'operation has complexity 30000', extensions: { code: 'COMPLEXITY_LIMIT_EXCEEDED' } }], data: null });
    await expect(loadOlderHits('ses_1', hit('hit_01'), { token: 't', fetch: f })).rejects.toMatchObject({ code: 'COMPLEXITY_LIMIT_EXCEEDED' });
  });
});

describe('prependOlder', () => {
  it('puts the older page above the shown hits', () => {
    const shown = [hit('hit_04'), hit('hit_05')];
    expect(prependOlder(shown, [hit('hit_01'), hit('hit_02'), hit('hit_03')]).map((h) => h.id)).toEqual(['hit_01', 'hit_02', 'hit_03', 'hit_04', 'hit_05']);
  });
  it('never shows a hit twice', () => {
    const shown = [hit('hit_04'), hit('hit_05')];
    expect(prependOlder(shown, [hit('hit_03'), hit('hit_04')]).map((h) => h.id)).toEqual(['hit_03', 'hit_04', 'hit_05']);
  });
});

describe('hitListTitle', () => {
  it('says how many of the session’s hits are shown while older ones remain', () => {
    expect(hitListTitle(5, 12, true)).toBe('Every hit (the newest 5 of 12)');
    expect(hitListTitle(10, 12, true)).toBe('Every hit (the newest 10 of 12)');
  });
  it('is plain once every hit is shown', () => {
    expect(hitListTitle(12, 12, false)).toBe('Every hit');
  });
});
