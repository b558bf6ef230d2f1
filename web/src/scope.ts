// What the signed-in token may do. The API has no "viewer { scope }" query, so the scope is
// probed: apiKeys answers only admins, and an update of a trap id that cannot exist is
// FORBIDDEN for read-only keys and NOT_FOUND (changing nothing) for read-write ones.
import { ApiError, gql, type GqlOptions } from './api';
import { ORGANIZATION, PROBE_ADMIN, PROBE_WRITE } from './queries';

export type Scope = 'READ_ONLY' | 'READ_WRITE' | 'ADMIN';

export interface Identity {
  org: { id: string; name: string };
  scope: Scope;
}

type Run = <T>(query: string, variables?: Record<string, unknown>, opts?: GqlOptions) => Promise<T>;

const isForbidden = (e: unknown) => e instanceof ApiError && e.code === 'FORBIDDEN';

/** Checks the token (throws ApiError UNAUTHENTICATED when refused) and finds its scope. */
export async function identify(token: string, run: Run = gql): Promise<Identity> {
  const { organization } = await run<{ organization: { id: string; name: string } }>(ORGANIZATION, undefined, { token });
  try {
    await run(PROBE_ADMIN, undefined, { token });
    return { org: organization, scope: 'ADMIN' };
  } catch (e) {
    if (!isForbidden(e)) throw e;
  }
  try {
    await run(PROBE_WRITE, undefined, { token });
    return { org: organization, scope: 'READ_WRITE' };
  } catch (e) {
    if (isForbidden(e)) return { org: organization, scope: 'READ_ONLY' };
    if (e instanceof ApiError && (e.code === 'NOT_FOUND' || e.code === 'BAD_USER_INPUT')) return { org: organization, scope: 'READ_WRITE' };
    throw e;
  }
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
