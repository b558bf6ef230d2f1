// What the signed-in token may do. The API has no "viewer { scope }" query, so the scope is
// probed by one function, probeScope (see there).
import { ApiError, gql, type GqlOptions } from './api';
import { ORGANIZATION, PROBE_ADMIN, PROBE_WRITE } from './queries';

export type Scope = 'READ_ONLY' | 'READ_WRITE' | 'ADMIN';

export interface Identity {
  org: { id: string; name: string };
  scope: Scope;
}

type Run = <T>(query: string, variables?: Record<string, unknown>, opts?: GqlOptions) => Promise<T>;

const isForbidden = (e: unknown) => e instanceof ApiError && e.code === 'FORBIDDEN';

/**
 * The scope of a token, from the existing queries only (nothing is decoded: a JWT's claims
 * are the API's to interpret). apiKeys answers only admins; an update of a trap id that
 * cannot exist is FORBIDDEN for read-only tokens and NOT_FOUND (changing nothing) for
 * read-write ones. Other errors (refused token, network) are thrown.
 * Replace with a `viewer { scope }` query when the API has one.
 */
export async function probeScope(token: string, run: Run = gql): Promise<Scope> {
  try {
    await run(PROBE_ADMIN, undefined, { token });
    return 'ADMIN';
  } catch (e) {
    if (!isForbidden(e)) throw e;
  }
  try {
    await run(PROBE_WRITE, undefined, { token });
    return 'READ_WRITE';
  } catch (e) {
    if (isForbidden(e)) return 'READ_ONLY';
    if (e instanceof ApiError && (e.code === 'NOT_FOUND' || e.code === 'BAD_USER_INPUT')) return 'READ_WRITE';
    throw e;
  }
}

/** Checks the token (throws ApiError UNAUTHENTICATED when refused) and finds its organization and scope. */
export async function identify(token: string, run: Run = gql): Promise<Identity> {
  const { organization } = await run<{ organization: { id: string; name: string } }>(ORGANIZATION, undefined, { token });
  return { org: organization, scope: await probeScope(token, run) };
}

export const canWrite = (s: Scope | null | undefined) => s === 'READ_WRITE' || s === 'ADMIN';

/** A token as pasted: trimmed, an optional "Bearer " dropped. */
export function normaliseToken(raw: string): string {
  return raw.trim().replace(/^bearer\s+/i, '').trim();
}

/** Whether a pasted token looks like an API key (ftk_ + base62) or a JWT (three base64url parts). */
export function looksLikeToken(t: string): boolean {
  return /^ftk_[A-Za-z0-9]{20,}$/.test(t) || /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(t);
}
