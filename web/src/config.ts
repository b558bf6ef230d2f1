// The dashboard's public configuration, served without authentication at
// /dashboard/config.json (server/web.go): the trap listener's public URL and, when the
// operator configured one, the identity provider for OIDC sign-in. It holds no secret: the
// OIDC client is public and uses PKCE.

export type TokenChoice = 'access_token' | 'id_token';

export interface OidcConfig {
  issuer: string;
  client_id: string;
  scopes: string;
  audience?: string;
  /** Which token the API gets: the access token (when it is a JWT) or the id token. */
  token: TokenChoice;
}

export interface DashboardConfig {
  trap_url: string | null;
  oidc: OidcConfig | null;
}

export const CONFIG_PATH = '/dashboard/config.json';

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);

function httpURL(v: unknown): string | null {
  const s = str(v);
  if (!s) return null;
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? s.replace(/\/+$/, '') : null;
  } catch {
    return null;
  }
}

/** Validates the server's answer; anything unusable becomes null (the app then falls back). */
export function parseConfig(body: unknown): DashboardConfig {
  const b = (body ?? {}) as Record<string, unknown>;
  const o = b.oidc as Record<string, unknown> | null | undefined;
  let oidc: OidcConfig | null = null;
  const issuer = httpURL(o?.issuer);
  const clientID = str(o?.client_id);
  if (o && issuer && clientID) {
    oidc = {
      issuer,
      client_id: clientID,
      scopes: str(o.scopes) ?? 'openid profile email',
      token: o.token === 'id_token' ? 'id_token' : 'access_token',
    };
    const aud = str(o.audience);
    if (aud) oidc.audience = aud;
  }
  return { trap_url: httpURL(b.trap_url), oidc };
}

/** Fetches the configuration; a failure yields the empty one (API-key sign-in still works). */
export async function loadConfig(doFetch: typeof fetch = fetch): Promise<DashboardConfig> {
  try {
    const res = await doFetch(CONFIG_PATH, { headers: { Accept: 'application/json' }, credentials: 'omit', cache: 'no-cache' });
    if (!res.ok) return parseConfig(null);
    return parseConfig(await res.json());
  } catch {
    return parseConfig(null);
  }
}

/** "idp.example.com" (with a port when it has one): what the sign-in button names. */
export function issuerHost(issuer: string): string {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}
