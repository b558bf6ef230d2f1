// Session filters: the form's state, its mapping to the GraphQL SessionWhereInput, and
// its round trip through the URL's query string (so a filtered view can be bookmarked).

import { CLASSIFICATIONS } from './vocab.gen';

export { CLASSIFICATIONS };
export const SEVERITIES = ['critical', 'high', 'medium', 'low'] as const;
/** Triage states; "unresolved" in the filter means open or acknowledged. */
export const TRIAGE_STATES = ['open', 'acknowledged', 'resolved', 'ignored'] as const;
/** Time windows of the "seen in" filter, in hours. */
export const WINDOWS: Record<string, number> = { '1h': 1, '24h': 24, '7d': 24 * 7, '30d': 24 * 30 };

export interface SessionFilters {
  classification: string;
  severity: string;
  trapID: string;
  window: string;
  sourceIP: string;
  triage: string;
  /** A TLS client's JA4 (a JA4 campaign's sessions). */
  ja4: string;
}

export const emptyFilters: SessionFilters = { classification: '', severity: '', trapID: '', window: '', sourceIP: '', triage: '', ja4: '' };

/** JA4's shape (fingerprint.ValidJA4): t13d1516h2_8daaf6152771_e5627efa2ab1. */
export const JA4_SHAPE = /^[tqd][0-9a-z]{2}[di][0-9a-z]{6}_[0-9a-f]{12}_[0-9a-f]{12}$/;

/** The GraphQL `where` for the filters; unknown values are dropped rather than sent. */
export function filtersToWhere(f: SessionFilters, now: Date = new Date()): Record<string, unknown> | null {
  const where: Record<string, unknown> = {};
  if ((CLASSIFICATIONS as readonly string[]).includes(f.classification)) where.classification = f.classification;
  if ((SEVERITIES as readonly string[]).includes(f.severity)) where.severity = f.severity;
  // A trap and a JA4 together: a hit on the trap from that client (one hasHitsWith).
  const hit: Record<string, string> = {};
  if (/^trp_[A-Za-z0-9]+$/.test(f.trapID)) hit.trapID = f.trapID;
  if (JA4_SHAPE.test(f.ja4)) hit.ja4 = f.ja4;
  if (Object.keys(hit).length) where.hasHitsWith = [hit];
  const hours = WINDOWS[f.window];
  if (hours) where.lastSeenGTE = new Date(now.getTime() - hours * 3600_000).toISOString();
  const ip = f.sourceIP.trim();
  if (ip) where.sourceIPHasPrefix = ip;
  if (f.triage === 'unresolved') where.triageStateIn = ['open', 'acknowledged'];
  else if ((TRIAGE_STATES as readonly string[]).includes(f.triage)) where.triageState = f.triage;
  return Object.keys(where).length ? where : null;
}

/** Filters from a query string ("?severity=high&window=24h"). */
export function filtersFromSearch(search: string): SessionFilters {
  const p = new URLSearchParams(search);
  return {
    classification: p.get('classification') ?? '',
    severity: p.get('severity') ?? '',
    trapID: p.get('trap') ?? '',
    window: p.get('window') ?? '',
    sourceIP: p.get('ip') ?? '',
    triage: p.get('triage') ?? '',
    ja4: p.get('ja4') ?? '',
  };
}

/** The query string for filters ("" when none is set), in a fixed order. */
export function filtersToSearch(f: SessionFilters): string {
  const p = new URLSearchParams();
  if (f.classification) p.set('classification', f.classification);
  if (f.severity) p.set('severity', f.severity);
  if (f.trapID) p.set('trap', f.trapID);
  if (f.window) p.set('window', f.window);
  if (f.sourceIP) p.set('ip', f.sourceIP);
  if (f.triage) p.set('triage', f.triage);
  if (f.ja4) p.set('ja4', f.ja4);
  const s = p.toString();
  return s ? `?${s}` : '';
}
