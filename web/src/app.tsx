import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, auth, describeError, onUnauthenticated } from './api';
import { issuerHost, loadConfig, type DashboardConfig, type OidcConfig } from './config';
import { CALLBACK_PATH, describeSignInError, endSession, finishSignIn, startSignIn, storedIdToken } from './oidc';
import { match, navigate, useRoute } from './router';
import { canWrite, identify, looksLikeToken, normaliseToken, type Identity } from './scope';
import { Inert, Link, Loading } from './ui';
import { ApiKeysView } from './views/ApiKeys';
import { CampaignsView } from './views/Campaigns';
import { OverviewView } from './views/Overview';
import { SessionDetailView } from './views/SessionDetail';
import { SessionsView } from './views/Sessions';
import { TrapsView } from './views/Traps';
import { WebhooksView } from './views/Webhooks';

type State =
  | { kind: 'checking' }
  | { kind: 'callback' }
  | { kind: 'signingOut' }
  | { kind: 'signedOut'; reason?: string }
  | { kind: 'signedIn'; id: Identity };

function initialState(): State {
  if (location.pathname === CALLBACK_PATH) return { kind: 'callback' };
  if (auth.get()) return { kind: 'checking' };
  auth.clear(); // leftovers of an abandoned OIDC round trip
  return { kind: 'signedOut' };
}

export function App() {
  const [state, setState] = useState<State>(initialState);
  // undefined while /dashboard/config.json loads; its failure yields the empty configuration.
  const [config, setConfig] = useState<DashboardConfig | undefined>(undefined);
  const callbackDone = useRef(false);

  useEffect(() => {
    loadConfig().then(setConfig);
  }, []);

  useEffect(
    () =>
      onUnauthenticated(() => {
        auth.clear();
        setState({ kind: 'signedOut', reason: 'Your key was refused (revoked, expired or unknown). Sign in again.' });
      }),
    [],
  );

  useEffect(() => {
    if (state.kind !== 'checking') return;
    const token = auth.get();
    if (!token) return setState({ kind: 'signedOut' });
    identify(token).then(
      (id) => setState({ kind: 'signedIn', id }),
      (e) => {
        if (e instanceof ApiError && e.code === 'UNAUTHENTICATED') auth.clear();
        setState({ kind: 'signedOut', reason: describeError(e) });
      },
    );
  }, [state.kind]);

  // Back from the identity provider at /auth/callback?code=…&state=…: redeem the code (once).
  useEffect(() => {
    if (state.kind !== 'callback' || !config || callbackDone.current) return;
    callbackDone.current = true;
    const oidc = config.oidc;
    const fail = (reason: string) => {
      auth.clear();
      navigate('/', true);
      setState({ kind: 'signedOut', reason });
    };
    if (!oidc) return fail('Sign-in with an identity provider is not configured on this Flytrap.');
    const host = issuerHost(oidc.issuer);
    finishSignIn(oidc, location.href).then(
      ({ token, returnTo }) =>
        identify(token).then(
          (id) => {
            auth.set(token, 'oidc');
            navigate(returnTo, true);
            setState({ kind: 'signedIn', id });
          },
          (e) =>
            fail(
              e instanceof ApiError && e.code === 'UNAUTHENTICATED'
                ? `Flytrap refused the token from ${host} (check --jwt-issuer, --jwt-audience and the organization and scope claims).`
                : describeError(e),
            ),
        ),
      (e) => fail(`Sign-in with ${host} did not complete: ${describeSignInError(e)}.`),
    );
  }, [state.kind, config]);

  const signOut = async () => {
    const oidc = config?.oidc;
    const viaOidc = auth.method() === 'oidc' && oidc;
    const hint = viaOidc ? storedIdToken(sessionStorage) : null;
    auth.clear();
    if (viaOidc) {
      setState({ kind: 'signingOut' });
      try {
        if (await endSession(oidc, hint)) return; // the browser leaves for the provider and comes back to /
      } catch {
        /* the tab is signed out either way */
      }
      auth.clear();
    }
    setState({ kind: 'signedOut', reason: 'Signed out.' });
  };

  if (state.kind === 'checking') return <Loading label="Checking your key…" />;
  if (state.kind === 'callback') return <Loading label="Finishing sign-in…" />;
  if (state.kind === 'signingOut') return <Loading label="Signing out…" />;
  if (state.kind === 'signedOut')
    return <SignIn reason={state.reason} oidc={config?.oidc ?? null} onSignedIn={(id) => setState({ kind: 'signedIn', id })} />;
  return <Shell id={state.id} trapURL={config?.trap_url ?? null} onSignOut={signOut} />;
}

function OidcSignIn({ oidc }: { oidc: OidcConfig }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const host = issuerHost(oidc.issuer);
  return (
    <div class="oidc">
      <button
        type="button"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError('');
          try {
            const here = location.pathname + location.search;
            await startSignIn(oidc, here); // leaves the page
          } catch (e) {
            setError(`Could not reach ${host}: ${describeSignInError(e)}.`);
            setBusy(false);
          }
        }}
      >
        {busy ? `Going to ${host}…` : `Sign in with ${host}`}
      </button>
      {error && (
        <p class="state error" role="alert">
          {error}
        </p>
      )}
      <p class="or muted small">or with an API key</p>
    </div>
  );
}

function SignIn({ reason, oidc, onSignedIn }: { reason?: string; oidc: OidcConfig | null; onSignedIn: (id: Identity) => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <main class="signin" id="main">
      <form
        class="card form"
        aria-labelledby="signin-title"
        onSubmit={async (e) => {
          e.preventDefault();
          const token = normaliseToken(value);
          if (!looksLikeToken(token)) {
            setError('That does not look like a Flytrap API key (ftk_…) or a JWT.');
            return;
          }
          setBusy(true);
          setError('');
          try {
            const id = await identify(token);
            auth.set(token, 'key');
            setValue('');
            onSignedIn(id);
          } catch (err) {
            setError(err instanceof ApiError && err.code === 'UNAUTHENTICATED' ? 'This key was refused: it is unknown, revoked or expired.' : describeError(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1 id="signin-title">
          <span class="logo" aria-hidden="true">
            ◉
          </span>{' '}
          Flytrap
        </h1>
        {reason && (
          <p class="state" role="status">
            {reason}
          </p>
        )}
        {oidc && <OidcSignIn oidc={oidc} />}
        <label>
          API key
          <input
            ref={input}
            type="password"
            name="api-key"
            autoComplete="off"
            spellcheck={false}
            placeholder="ftk_…"
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
            required
          />
        </label>
        <p class="muted small">
          Paste an API key (or a JWT from your identity provider). It is kept for this tab only and forgotten when the tab closes. The first
          start of <code>flytrap</code> prints an admin key.
        </p>
        {error && (
          <p class="state error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || !value.trim()}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

const NAV = [
  { href: '/', label: 'Overview', test: (p: string) => p === '/' },
  { href: '/sessions', label: 'Sessions', test: (p: string) => p.startsWith('/sessions') },
  { href: '/campaigns', label: 'Campaigns', test: (p: string) => p.startsWith('/campaigns') },
  { href: '/traps', label: 'Traps', test: (p: string) => p.startsWith('/traps') },
  { href: '/settings/webhooks', label: 'Webhooks', test: (p: string) => p.startsWith('/settings/webhooks') },
  { href: '/settings/api-keys', label: 'API keys', test: (p: string) => p === '/settings' || p.startsWith('/settings/api-keys') },
];

function Shell({ id, trapURL, onSignOut }: { id: Identity; trapURL: string | null; onSignOut: () => void }) {
  const route = useRoute();
  const mainRef = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    // Move focus to the new page for keyboard and screen-reader users (not on first load).
    if (first.current) {
      first.current = false;
      return;
    }
    mainRef.current?.focus();
  }, [route.path]);
  let view;
  let params: Record<string, string> | null;
  if (route.path === '/' || route.path === '/index.html') view = <OverviewView />;
  else if (route.path === '/sessions') view = <SessionsView search={route.search} canWrite={canWrite(id.scope)} />;
  else if ((params = match('/sessions/:id', route.path))) view = <SessionDetailView id={params.id!} />;
  else if (route.path === '/traps') view = <TrapsView canWrite={canWrite(id.scope)} trapURL={trapURL} />;
  else if (route.path === '/campaigns') view = <CampaignsView search={route.search} />;
  else if (route.path === '/settings/webhooks') view = <WebhooksView canWrite={canWrite(id.scope)} />;
  else if (route.path === '/settings' || route.path === '/settings/api-keys') view = <ApiKeysView scope={id.scope} />;
  else
    view = (
      <section>
        <h1>Not found</h1>
        <p>
          There is no page at <Inert text={route.path} />. <Link href="/">Go to the overview</Link>.
        </p>
      </section>
    );
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">
          <span class="logo" aria-hidden="true">
            ◉
          </span>{' '}
          Flytrap
        </span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.href}>
                <Link href={n.href} aria-current={n.test(route.path) ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          <Inert text={id.org.name} /> · <span data-testid="scope">{id.scope.toLowerCase().replace('_', '-')}</span>
        </span>
        <button type="button" class="secondary" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main" ref={mainRef} tabIndex={-1}>
        {view}
      </main>
    </>
  );
}

