// OIDC sign-in: Authorization Code + PKCE (S256) with oidc-client-ts, a certified-style,
// maintained client. The library is loaded only when the operator configured an identity
// provider and the user starts or finishes a sign-in, so API-key users never download it.
//
// Everything it keeps (the PKCE verifier and state during the round trip, then the user
// with its tokens) lives in sessionStorage under "flytrap.oidc.": this tab only, and
// auth.clear() forgets it with the token. The token given to the API is the access token
// when it is a JWT (preferred), else the id token, or the id token when configured so.
import type { User, UserManager, UserManagerSettings } from 'oidc-client-ts';
import { OIDC_PREFIX } from './api';
import type { OidcConfig, TokenChoice } from './config';

export { OIDC_PREFIX };
export const CALLBACK_PATH = '/auth/callback';

/** A compact JWS: three base64url parts. Nothing is decoded: the API verifies it. */
export function isJWT(t: unknown): t is string {
  return typeof t === 'string' && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(t);
}

/**
 * The JWT to send as Authorization: Bearer. With "access_token" (the default) the access
 * token, unless it is opaque (not a JWT), in which case the id token; with "id_token" the id
 * token. Null when no usable JWT was issued.
 */
export function pickToken(tokens: { access_token?: string; id_token?: string }, prefer: TokenChoice = 'access_token'): string | null {
  const order = prefer === 'id_token' ? [tokens.id_token] : [tokens.access_token, tokens.id_token];
  return order.find(isJWT) ?? null;
}

/** A path of this app to return to after sign-in; anything else (other origins, //host, the callback itself) is "/". */
export function safeReturnPath(p: unknown): string {
  if (typeof p !== 'string' || !p.startsWith('/') || p.startsWith('//') || p.startsWith('/\\')) return '/';
  if (p === CALLBACK_PATH || p.startsWith(CALLBACK_PATH + '?')) return '/';
  return /^[\x21-\x7e]*$/.test(p) ? p : '/';
}

/** The settings of the UserManager, stores aside (see createManager). */
export function oidcSettings(cfg: OidcConfig, origin: string): Omit<UserManagerSettings, 'userStore' | 'stateStore'> {
  return {
    authority: cfg.issuer,
    client_id: cfg.client_id,
    redirect_uri: origin + CALLBACK_PATH,
    post_logout_redirect_uri: origin + '/',
    response_type: 'code', // Authorization Code; oidc-client-ts adds PKCE (S256) to every code request
    response_mode: 'query',
    scope: cfg.scopes,
    ...(cfg.audience ? { extraQueryParams: { audience: cfg.audience } } : {}),
    loadUserInfo: false,
    // No hidden iframes (the CSP forbids framing other origins) and no background renewal:
    // an expired token gets a 401 and the user signs in again.
    automaticSilentRenew: false,
    monitorSession: false,
    includeIdTokenInSilentRenew: false,
    fetchRequestCredentials: 'omit',
  };
}

async function createManager(cfg: OidcConfig): Promise<UserManager> {
  const { UserManager, WebStorageStateStore } = await import('oidc-client-ts');
  const store = () => new WebStorageStateStore({ store: sessionStorage, prefix: OIDC_PREFIX });
  return new UserManager({ ...oidcSettings(cfg, location.origin), userStore: store(), stateStore: store() });
}

/** Leaves for the identity provider; it comes back to /auth/callback. */
export async function startSignIn(cfg: OidcConfig, returnTo: string): Promise<void> {
  const mgr = await createManager(cfg);
  await mgr.signinRedirect({ state: { returnTo: safeReturnPath(returnTo) } });
}

export interface SignInResult {
  token: string;
  returnTo: string;
}

/** Finishes the round trip at /auth/callback: checks state, redeems the code with the PKCE verifier. */
export async function finishSignIn(cfg: OidcConfig, url: string): Promise<SignInResult> {
  const mgr = await createManager(cfg);
  const user: User = await mgr.signinRedirectCallback(url);
  const token = pickToken(user, cfg.token);
  if (!token) {
    await mgr.removeUser();
    throw new Error('The identity provider issued no JWT to send to Flytrap.');
  }
  return { token, returnTo: safeReturnPath((user.state as { returnTo?: unknown } | undefined)?.returnTo) };
}

/**
 * Ends the provider's session too when it offers an end_session_endpoint (the browser then
 * leaves and comes back to "/"); returns false when there is none, the local sign-out being
 * all there is. The caller clears the tab's token first either way.
 */
export async function endSession(cfg: OidcConfig, idTokenHint: string | null): Promise<boolean> {
  const mgr = await createManager(cfg);
  let endpoint: string | undefined;
  try {
    endpoint = await mgr.metadataService.getEndSessionEndpoint();
  } catch {
    endpoint = undefined;
  }
  await mgr.removeUser();
  if (!endpoint) return false;
  await mgr.signoutRedirect(idTokenHint ? { id_token_hint: idTokenHint } : {});
  return true;
}

/** The id token of the stored user, for end_session's id_token_hint (read before clearing). */
export function storedIdToken(storage: Pick<Storage, 'length' | 'key' | 'getItem'>): string | null {
  for (let i = 0; i < storage.length; i++) {
    const k = storage.key(i);
    if (!k?.startsWith(OIDC_PREFIX + 'user:')) continue;
    try {
      const t = (JSON.parse(storage.getItem(k) ?? 'null') as { id_token?: unknown } | null)?.id_token;
      if (isJWT(t)) return t;
    } catch {
      /* not ours */
    }
  }
  return null;
}

/** A short reason for a failed round trip; the provider's free text (attacker-reachable via a crafted callback URL) is not shown. */
export function describeSignInError(e: unknown): string {
  const code = (e as { error?: unknown } | null)?.error;
  if (typeof code === 'string' && /^[a-z_]{1,40}$/.test(code)) return code.replace(/_/g, ' ');
  const msg = e instanceof Error ? e.message : '';
  if (/state/i.test(msg)) return 'the sign-in was not started in this tab, or it expired';
  if (/crypto|subtle/i.test(msg)) return 'this browser cannot do PKCE here (the dashboard must be served over HTTPS or from localhost)';
  if (msg === 'The identity provider issued no JWT to send to Flytrap.') return msg;
  return 'the identity provider’s answer was not usable';
}
