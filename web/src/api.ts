// GraphQL over plain fetch: queries and mutations are small POSTs, so a client library
// would add weight without adding much. Errors are normalised into ApiError so every view
// handles them the same way; a 401 signs the tab out.

export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'BAD_USER_INPUT'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'INTERNAL'
  | 'NETWORK'
  | string;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly field?: string;
  /** Seconds until a RATE_LIMITED request may succeed (extensions.retryAfter). */
  readonly retryAfter?: number;
  constructor(message: string, code: ErrorCode, status: number, field?: string, retryAfter?: number) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.field = field;
    this.retryAfter = retryAfter;
  }
}

interface GraphQLErrorJSON {
  message?: unknown;
  extensions?: { code?: unknown; field?: unknown; retryAfter?: unknown };
}

/** Turns an HTTP status and a GraphQL response body into an ApiError, or null when the body has data and no error. */
export function toApiError(status: number, body: unknown): ApiError | null {
  const errors = (body as { errors?: GraphQLErrorJSON[] } | null)?.errors;
  if (Array.isArray(errors) && errors.length > 0) {
    const e = errors[0] ?? {};
    const code = typeof e.extensions?.code === 'string' ? e.extensions.code : statusCode(status);
    const field = typeof e.extensions?.field === 'string' ? e.extensions.field : undefined;
    const message = typeof e.message === 'string' && e.message ? e.message : defaultMessage(code);
    const ra = e.extensions?.retryAfter;
    const retryAfter = typeof ra === 'number' && Number.isFinite(ra) && ra > 0 ? Math.ceil(ra) : undefined;
    return new ApiError(message, status === 401 ? 'UNAUTHENTICATED' : code, status, field, retryAfter);
  }
  if (status < 200 || status >= 300) {
    const code = statusCode(status);
    return new ApiError(defaultMessage(code), code, status);
  }
  if (body === null || typeof body !== 'object' || !('data' in body)) {
    return new ApiError('The server sent an unreadable answer.', 'INTERNAL', status);
  }
  return null;
}

function statusCode(status: number): ErrorCode {
  switch (status) {
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'CONFLICT';
    case 413:
    case 400:
    case 422:
      return 'BAD_USER_INPUT';
    case 429:
      return 'RATE_LIMITED';
    default:
      return 'INTERNAL';
  }
}

function defaultMessage(code: ErrorCode): string {
  switch (code) {
    case 'UNAUTHENTICATED':
      return 'Your key was refused. Sign in again.';
    case 'FORBIDDEN':
      return 'Your key’s scope does not allow this.';
    case 'NOT_FOUND':
      return 'Not found.';
    case 'RATE_LIMITED':
      return 'Too many requests; try again in a moment.';
    default:
      return 'Something went wrong on the server.';
  }
}

/** A user-facing sentence for any error thrown by gql(). */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.code === 'FORBIDDEN') return 'Your API key’s scope does not allow this.';
    if (err.code === 'NETWORK') return 'Flytrap could not be reached. Check the connection and retry.';
    return err.field ? `${err.message} (${err.field})` : err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export const TOKEN_KEY = 'flytrap.token';
/** How the tab signed in: "key" (a pasted API key or JWT) or "oidc" (the identity provider). */
export const METHOD_KEY = 'flytrap.signin';
/** oidc-client-ts keeps its PKCE state and user under this prefix (src/oidc.ts). */
export const OIDC_PREFIX = 'flytrap.oidc.';

export type SignInMethod = 'key' | 'oidc';

function storage(): Storage | null {
  try {
    return sessionStorage;
  } catch {
    return null;
  }
}

/** The session-only store of the tab's token (sessionStorage: gone when the tab closes). */
export const auth = {
  get(): string | null {
    try {
      return storage()?.getItem(TOKEN_KEY) ?? null;
    } catch {
      return null;
    }
  },
  method(): SignInMethod {
    try {
      return storage()?.getItem(METHOD_KEY) === 'oidc' ? 'oidc' : 'key';
    } catch {
      return 'key';
    }
  },
  set(token: string, method: SignInMethod = 'key'): void {
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(METHOD_KEY, method);
  },
  /** Forgets the token and everything the OIDC client kept (tokens, PKCE state). */
  clear(): void {
    const s = storage();
    if (!s) return;
    try {
      s.removeItem(TOKEN_KEY);
      s.removeItem(METHOD_KEY);
      auth.clearOidc();
    } catch {
      /* storage unavailable */
    }
  },
  /** Forgets only the OIDC client's keys. */
  clearOidc(): void {
    const s = storage();
    if (!s) return;
    try {
      const stale: string[] = [];
      for (let i = 0; i < s.length; i++) {
        const k = s.key(i);
        if (k?.startsWith(OIDC_PREFIX)) stale.push(k);
      }
      stale.forEach((k) => s.removeItem(k));
    } catch {
      /* storage unavailable */
    }
  },
};

type Listener = () => void;
const unauthListeners = new Set<Listener>();
/** Calls fn whenever the server refuses the token; returns the unsubscriber. */
export function onUnauthenticated(fn: Listener): () => void {
  unauthListeners.add(fn);
  return () => unauthListeners.delete(fn);
}
export function signalUnauthenticated(): void {
  for (const fn of unauthListeners) fn();
}

export interface GqlOptions {
  token?: string;
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

/** Runs one GraphQL operation at /graphql and returns its data, or throws an ApiError. */
export async function gql<T>(query: string, variables?: Record<string, unknown>, opts: GqlOptions = {}): Promise<T> {
  const token = opts.token ?? auth.get();
  const doFetch = opts.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch('/graphql', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json',
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({ query, variables: variables ?? {} }),
      signal: opts.signal,
      credentials: 'omit',
    });
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    throw new ApiError('Flytrap could not be reached.', 'NETWORK', 0);
  }
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const err = toApiError(res.status, body);
  if (err) {
    if (err.code === 'UNAUTHENTICATED' && opts.token === undefined) signalUnauthenticated();
    throw err;
  }
  return (body as { data: T }).data;
}
