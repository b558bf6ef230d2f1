// A session's hits older than its detail's window (the newest --session-detail-limit hits), a
// page at a time through the Session.hits connection, in the detail's order.
import { gql, type GqlOptions } from './api';
import { OLDER_HITS, type Hit, type OlderHitsData } from './queries';

export interface OlderHitsPage {
  /** Oldest first, every one older than the hit the page was asked before. */
  hits: Hit[];
  /** Whether hits older than these remain. */
  more: boolean;
}

/** The variables of OLDER_HITS for the page just older than oldest (the oldest hit shown). */
export function olderHitsVariables(session: string, oldest: Hit): Record<string, unknown> {
  return { session, before: oldest.receivedAt, beforeID: oldest.id };
}

/** Reads the page of session's hits just older than oldest. A missing session has none. */
export async function loadOlderHits(session: string, oldest: Hit, opts: GqlOptions = {}): Promise<OlderHitsPage> {
  const d = await gql<OlderHitsData>(OLDER_HITS, olderHitsVariables(session, oldest), opts);
  const conn = d.node?.hits;
  if (!conn) return { hits: [], more: false };
  const hits = conn.edges.map((e) => e.node);
  return { hits, more: hits.length > 0 && conn.pageInfo.hasPreviousPage };
}

/** shown with page's hits above it (both oldest first), leaving out any hit already shown. */
export function prependOlder(shown: Hit[], page: Hit[]): Hit[] {
  const ids = new Set(shown.map((h) => h.id));
  return [...page.filter((h) => !ids.has(h.id)), ...shown];
}

/** The hit list's title: which hits it shows while older ones remain unshown. */
export function hitListTitle(shown: number, hitCount: number, more: boolean): string {
  return `Every hit${more ? ` (the newest ${shown} of ${hitCount})` : ''}`;
}
