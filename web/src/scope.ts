// What the signed-in token may do: the API's viewer { scope } says so (nothing is decoded:
// a JWT's claims are the API's to interpret).
import { ApiError, gql, type GqlOptions } from './api';
import { IDENTIFY } from './queries';

export type Scope = 'READ_ONLY' | 'READ_WRITE' | 'ADMIN';

export interface Identity {
  org: { id: string; name: string };
  scope: Scope;
}

type Run = <T>(query: string, variables?: Record<string, unknown>, opts?: GqlOptions) => Promise<T>;

const SCOPES: readonly string[] = ['READ_ONLY', 'READ_WRITE', 'ADMIN'];
export const isScope = (s: unknown): s is Scope => typeof s === 'string' && SCOPES.includes(s);

/**
 * Checks the token (throws ApiError UNAUTHENTICATED when refused) and finds its organization
 * and scope, in one request. A scope this dashboard does not know is an error, never a guess.
 */
export async function identify(token: string, run: Run = gql): Promise<Identity> {
  const d = await run<{ organization: { id: string; name: string }; viewer: { scope: unknown } }>(IDENTIFY, undefined, { token });
  if (!isScope(d.viewer?.scope)) throw new ApiError(`unknown scope ${JSON.stringify(d.viewer?.scope)}`, 'INTERNAL', 200);
  return { org: d.organization, scope: d.viewer.scope };
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
