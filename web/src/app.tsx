import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, auth, describeError, onUnauthenticated } from './api';
import { match, useRoute } from './router';
import { canWrite, identify, looksLikeToken, normaliseToken, type Identity } from './scope';
import { Inert, Link, Loading } from './ui';
import { ApiKeysView } from './views/ApiKeys';
import { OverviewView } from './views/Overview';
import { SessionDetailView } from './views/SessionDetail';
import { SessionsView } from './views/Sessions';
import { TrapsView } from './views/Traps';

type State = { kind: 'checking' } | { kind: 'signedOut'; reason?: string } | { kind: 'signedIn'; id: Identity };

export function App() {
  const [state, setState] = useState<State>(() => (auth.get() ? { kind: 'checking' } : { kind: 'signedOut' }));

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

  if (state.kind === 'checking') return <Loading label="Checking your key…" />;
  if (state.kind === 'signedOut') return <SignIn reason={state.reason} onSignedIn={(id) => setState({ kind: 'signedIn', id })} />;
  return (
    <Shell
      id={state.id}
      onSignOut={() => {
        auth.clear();
        setState({ kind: 'signedOut', reason: 'Signed out.' });
      }}
    />
  );
}

function SignIn({ reason, onSignedIn }: { reason?: string; onSignedIn: (id: Identity) => void }) {
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
            auth.set(token);
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
  { href: '/traps', label: 'Traps', test: (p: string) => p.startsWith('/traps') },
  { href: '/settings/api-keys', label: 'Settings › API keys', test: (p: string) => p.startsWith('/settings') },
];

function Shell({ id, onSignOut }: { id: Identity; onSignOut: () => void }) {
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
  else if (route.path === '/sessions') view = <SessionsView search={route.search} />;
  else if ((params = match('/sessions/:id', route.path))) view = <SessionDetailView id={params.id!} />;
  else if (route.path === '/traps') view = <TrapsView canWrite={canWrite(id.scope)} />;
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

