import { describe, expect, it } from 'vitest';
import { emptyFilters, filtersFromSearch, filtersToSearch, filtersToWhere } from './filters';

const now = new Date('2026-11-22T12:00:00.000Z');

describe('filtersToWhere', () => {
  it('is null with no filter', () => {
    expect(filtersToWhere(emptyFilters, now)).toBeNull();
  });
  it('maps every filter to SessionWhereInput', () => {
    expect(
      filtersToWhere(
        { classification: 'AI_AGENT', severity: 'high', trapID: 'trp_01abc', window: '24h', sourceIP: ' 10.0. ', triage: 'resolved', ja4: 't13d1516h2_8daaf6152771_e5627efa2ab1' },
        now,
      ),
    ).toEqual({
      classification: 'AI_AGENT',
      severity: 'high',
      hasHitsWith: [{ trapID: 'trp_01abc', ja4: 't13d1516h2_8daaf6152771_e5627efa2ab1' }],
      lastSeenGTE: '2026-11-21T12:00:00.000Z',
      sourceIPHasPrefix: '10.0.',
      triageState: 'resolved',
    });
  });
  it('filters by a JA4 alone', () => {
    expect(filtersToWhere({ ...emptyFilters, ja4: 't13d3112h2_e8f1e7e78f70_6bebaf5329ac' }, now)).toEqual({
      hasHitsWith: [{ ja4: 't13d3112h2_e8f1e7e78f70_6bebaf5329ac' }],
    });
  });
  it('maps unresolved to open or acknowledged', () => {
    expect(filtersToWhere({ ...emptyFilters, triage: 'unresolved' }, now)).toEqual({ triageStateIn: ['open', 'acknowledged'] });
  });
  it('drops values the API would refuse', () => {
    expect(
      filtersToWhere({ classification: 'ROBOT', severity: 'HIGH', trapID: 'x"}', window: '2y', sourceIP: '', triage: 'closed', ja4: 'curl"} }' }, now),
    ).toBeNull();
  });
});

describe('query string', () => {
  it('round-trips', () => {
    const f = { classification: 'BOT', severity: 'low', trapID: 'trp_1', window: '7d', sourceIP: '192.', triage: 'unresolved', ja4: 't13d1516h2_8daaf6152771_e5627efa2ab1' };
    const s = filtersToSearch(f);
    expect(s).toBe('?classification=BOT&severity=low&trap=trp_1&window=7d&ip=192.&triage=unresolved&ja4=t13d1516h2_8daaf6152771_e5627efa2ab1');
    expect(filtersFromSearch(s)).toEqual(f);
  });
  it('is empty for no filters', () => {
    expect(filtersToSearch(emptyFilters)).toBe('');
    expect(filtersFromSearch('')).toEqual(emptyFilters);
  });
});
