// A small OpenID Connect provider for the end-to-end tests (node builtins only): discovery,
// JWKS, an authorization endpoint that consents at once (302 back with a code), a token
// endpoint that redeems each code once and only with the PKCE code_verifier whose S256 hash
// is the code_challenge of the authorization request, and an end_session endpoint. Tokens are
// RS256 JWTs: the access token for the API (aud = FAKE_IDP_AUDIENCE, org_id, scope), the id
// token for the client (aud = client id). CORS is answered for the dashboard's origin only.
//
// Run by scripts/dashboard-tests.sh before flytrap (whose --jwks-url points here):
//   FLYTRAP_URL=http://127.0.0.1:8080 node tests/dashboard/fake-idp.mjs
// It prints one JSON line {"issuer": "http://127.0.0.1:PORT"} once listening.
// Test hooks (not OIDC): POST /_test/user sets the signed-in user's claims (org_id, scope,
// sub); GET /_test/log lists the requests the provider saw (codes and tokens redacted).

import crypto from 'node:crypto';
import http from 'node:http';

const FLYTRAP_URL = (process.env.FLYTRAP_URL || '').replace(/\/+$/, '');
if (!FLYTRAP_URL) throw new Error('FLYTRAP_URL is not set');
const CLIENT_ID = process.env.FAKE_IDP_CLIENT_ID || 'flytrap-dashboard';
const AUDIENCE = process.env.FAKE_IDP_AUDIENCE || 'flytrap-api';
const REDIRECT_URI = `${FLYTRAP_URL}/auth/callback`;
const POST_LOGOUT_URI = `${FLYTRAP_URL}/`;
const ORIGIN = new URL(FLYTRAP_URL).origin;
const CODE_TTL_MS = 60_000;

const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const KID = crypto.randomBytes(8).toString('hex');
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' };

let issuer = '';
let user = { sub: 'user-1', org_id: '', scope: 'admin', email: 'ada@example.com', name: 'Ada' };
/** code → { client_id, redirect_uri, challenge, nonce, scope, expires } */
const codes = new Map();
const log = [];

const b64url = (buf) => Buffer.from(buf).toString('base64url');
const s256 = (verifier) => crypto.createHash('sha256').update(verifier).digest('base64url');

function sign(claims) {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: KID }));
  const body = b64url(JSON.stringify(claims));
  const sig = crypto.sign('sha256', Buffer.from(`${head}.${body}`), privateKey);
  return `${head}.${body}.${b64url(sig)}`;
}

function cors(req, res) {
  if (req.headers.origin === ORIGIN) {
    res.setHeader('Access-Control-Allow-Origin', ORIGIN);
    res.setHeader('Vary', 'Origin');
  }
}

function json(req, res, status, body) {
  cors(req, res);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}

function redirect(res, to) {
  res.writeHead(302, { Location: to, 'Cache-Control': 'no-store' });
  res.end();
}

async function readForm(req) {
  let raw = '';
  for await (const chunk of req) {
    raw += chunk;
    if (raw.length > 64 << 10) throw new Error('body too large');
  }
  return new URLSearchParams(raw);
}

function authorize(req, res, q) {
  const entry = {
    endpoint: 'authorize',
    response_type: q.get('response_type'),
    client_id: q.get('client_id'),
    redirect_uri: q.get('redirect_uri'),
    scope: q.get('scope'),
    audience: q.get('audience'),
    code_challenge: q.get('code_challenge'),
    code_challenge_method: q.get('code_challenge_method'),
    has_state: Boolean(q.get('state')),
  };
  log.push(entry);
  if (q.get('client_id') !== CLIENT_ID || q.get('redirect_uri') !== REDIRECT_URI) {
    // Never redirect to an unregistered URI.
    return json(req, res, 400, { error: 'invalid_request', error_description: 'unknown client or redirect_uri' });
  }
  const back = new URL(REDIRECT_URI);
  if (q.get('state')) back.searchParams.set('state', q.get('state'));
  const challenge = q.get('code_challenge') || '';
  if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
    back.searchParams.set('error', 'invalid_request');
    entry.result = 'refused: PKCE S256 and response_type=code are required';
    return redirect(res, back.toString());
  }
  const code = b64url(crypto.randomBytes(24));
  codes.set(code, {
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    challenge,
    nonce: q.get('nonce'),
    scope: q.get('scope') || 'openid',
    expires: Date.now() + CODE_TTL_MS,
  });
  back.searchParams.set('code', code);
  entry.result = 'code issued';
  return redirect(res, back.toString()); // consent is automatic
}

async function token(req, res) {
  const f = await readForm(req);
  const entry = {
    endpoint: 'token',
    grant_type: f.get('grant_type'),
    client_id: f.get('client_id'),
    redirect_uri: f.get('redirect_uri'),
    has_code_verifier: Boolean(f.get('code_verifier')),
    has_client_secret: Boolean(f.get('client_secret')) || Boolean(req.headers.authorization),
    origin: req.headers.origin ?? null,
  };
  log.push(entry);
  const refuse = (error, why) => {
    entry.result = `refused: ${why}`;
    return json(req, res, 400, { error, error_description: why });
  };
  if (f.get('grant_type') !== 'authorization_code') return refuse('unsupported_grant_type', 'only authorization_code');
  const code = f.get('code') || '';
  const grant = codes.get(code);
  codes.delete(code); // a code is redeemed once, whatever happens
  if (!grant || grant.expires < Date.now()) return refuse('invalid_grant', 'unknown, used or expired code');
  if (f.get('client_id') !== grant.client_id) return refuse('invalid_client', 'client_id differs');
  if (f.get('redirect_uri') !== grant.redirect_uri) return refuse('invalid_grant', 'redirect_uri differs');
  const verifier = f.get('code_verifier') || '';
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return refuse('invalid_grant', 'code_verifier missing or malformed');
  if (!crypto.timingSafeEqual(Buffer.from(s256(verifier)), Buffer.from(grant.challenge))) {
    return refuse('invalid_grant', 'code_verifier does not match the code_challenge');
  }
  const now = Math.floor(Date.now() / 1000);
  const common = { iss: issuer, sub: user.sub, iat: now, exp: now + 600, org_id: user.org_id };
  const access = sign({ ...common, aud: AUDIENCE, scope: user.scope, client_id: CLIENT_ID, jti: b64url(crypto.randomBytes(9)) });
  const id = sign({ ...common, aud: CLIENT_ID, ...(grant.nonce ? { nonce: grant.nonce } : {}), email: user.email, name: user.name });
  entry.result = 'tokens issued';
  return json(req, res, 200, { access_token: access, id_token: id, token_type: 'Bearer', expires_in: 600, scope: grant.scope });
}

function endSession(req, res, q) {
  const hint = q.get('id_token_hint');
  const entry = {
    endpoint: 'end_session',
    has_id_token_hint: Boolean(hint),
    post_logout_redirect_uri: q.get('post_logout_redirect_uri'),
    client_id: q.get('client_id'),
  };
  log.push(entry);
  const to = q.get('post_logout_redirect_uri');
  if (to !== POST_LOGOUT_URI) return json(req, res, 400, { error: 'invalid_request', error_description: 'unregistered post_logout_redirect_uri' });
  const back = new URL(to);
  if (q.get('state')) back.searchParams.set('state', q.get('state'));
  entry.result = 'signed out';
  return redirect(res, back.toString());
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (req.method === 'OPTIONS') {
      cors(req, res);
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST');
      res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] || '');
      res.writeHead(204);
      return res.end();
    }
    switch (`${req.method} ${url.pathname}`) {
      case 'GET /.well-known/openid-configuration':
        return json(req, res, 200, {
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          end_session_endpoint: `${issuer}/logout`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code'],
          code_challenge_methods_supported: ['S256'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          token_endpoint_auth_methods_supported: ['none'],
          scopes_supported: ['openid', 'profile', 'email'],
        });
      case 'GET /jwks':
        return json(req, res, 200, { keys: [jwk] });
      case 'GET /authorize':
        return authorize(req, res, url.searchParams);
      case 'POST /token':
        return await token(req, res);
      case 'GET /logout':
        return endSession(req, res, url.searchParams);
      case 'POST /_test/user': {
        const f = await readForm(req);
        user = { ...user, ...Object.fromEntries(f) };
        return json(req, res, 200, { sub: user.sub, org_id: user.org_id, scope: user.scope });
      }
      case 'GET /_test/log':
        return json(req, res, 200, log);
      default:
        return json(req, res, 404, { error: 'not_found' });
    }
  } catch (e) {
    return json(req, res, 500, { error: 'server_error', error_description: String(e?.message ?? e) });
  }
});

server.listen(0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  console.log(JSON.stringify({ issuer }));
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)));
