import { useState } from 'preact/hooks';
import { ApiError, describeError, gql } from '../api';
import { formatAgo, formatTime } from '../format';
import { API_KEYS, API_KEY_SCOPES, CREATE_API_KEY, REVOKE_API_KEY, type ApiKey, type ApiKeysData } from '../queries';
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Inert, Loading, useQuery } from '../ui';

const SCOPE_HELP: Record<string, string> = {
  READ_ONLY: 'read traps, sessions, events and analytics',
  READ_WRITE: 'also create, change and delete traps',
  ADMIN: 'also manage API keys, the organization and its sites',
};

export function ApiKeysView({ scope }: { scope: string | null }) {
  const isAdmin = scope === 'ADMIN';
  const q = useQuery<ApiKeysData>(API_KEYS, undefined, 'keys');
  const [created, setCreated] = useState<{ key: string; apiKey: ApiKey } | null>(null);
  const forbidden = q.error instanceof ApiError && q.error.code === 'FORBIDDEN';
  const keys = q.data?.apiKeys.edges.map((e) => e.node) ?? [];
  return (
    <section aria-labelledby="keys-title">
      <p class="muted">Settings</p>
      <div class="page-head">
        <h1 id="keys-title">API keys</h1>
        {!forbidden && (
          <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
            Refresh
          </button>
        )}
      </div>
      {forbidden || !isAdmin ? (
        <div class="state empty" role="note">
          Managing API keys needs an <strong>admin</strong> key. Yours is {scope ? scope.toLowerCase().replace('_', '-') : 'not admin'}: ask an
          administrator, or use <code>flytrap keys create</code> on the server.
        </div>
      ) : (
        <>
          <CreateKey
            onCreated={(c) => {
              setCreated(c);
              q.reload();
            }}
          />
          {created && keys.some((k) => k.id === created.apiKey.id && !k.revokedAt) && (
            <div class="card new-key" role="alert" data-testid="new-key">
              <h2>Copy your new key now</h2>
              <p>
                <strong>This is the only time it is shown.</strong> Flytrap keeps only its hash and cannot show it again. Store it in a secret
                manager; anyone holding it can call the API with scope {created.apiKey.scope}.
              </p>
              <p class="key-line">
                <code class="secret" data-testid="new-key-value">
                  {created.key}
                </code>{' '}
                <CopyButton text={created.key} label="Copy key" />
              </p>
              <button type="button" class="secondary" onClick={() => setCreated(null)}>
                I have stored it
              </button>
            </div>
          )}
          {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
          {!q.data && q.loading && <Loading />}
          {q.data && keys.length === 0 && <Empty>No API keys.</Empty>}
          {keys.length > 0 && (
            <div class="table-wrap stack">
              <table class="table" data-testid="keys-table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Prefix</th>
                    <th scope="col">Scope</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">Status</th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {keys.map((k) => (
                    <KeyRow key={k.id} k={k} onChanged={q.reload} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

function KeyRow({ k, onChanged }: { k: ApiKey; onChanged: () => void }) {
  const [error, setError] = useState('');
  return (
    <tr data-testid="key-row" data-key-id={k.id}>
      <td data-label="Name">
        <Inert text={k.name} />
      </td>
      <td data-label="Prefix">
        <code>{k.prefix}…</code>
      </td>
      <td data-label="Scope">{k.scope.toLowerCase().replace('_', '-')}</td>
      <td data-label="Created">
        <time dateTime={k.createdAt}>{formatTime(k.createdAt)}</time>
      </td>
      <td data-label="Last used">{k.lastUsedAt ? <time dateTime={k.lastUsedAt} title={formatTime(k.lastUsedAt)}>{formatAgo(k.lastUsedAt)}</time> : 'never'}</td>
      <td data-label="Status">
        {k.revokedAt ? (
          <Badge kind="inactive">revoked {formatTime(k.revokedAt)}</Badge>
        ) : k.expiresAt && new Date(k.expiresAt).getTime() <= Date.now() ? (
          <Badge kind="inactive">expired {formatTime(k.expiresAt)}</Badge>
        ) : (
          <Badge kind="active">active</Badge>
        )}
        {!k.revokedAt && k.expiresAt && new Date(k.expiresAt).getTime() > Date.now() && (
          <span class="muted" data-testid="key-expires">
            {' '}
            until <time dateTime={k.expiresAt}>{formatTime(k.expiresAt)}</time>
          </span>
        )}
        {k.siteID && (
          <span class="muted" data-testid="key-site">
            {' '}
            deploy key of <code>{k.siteID}</code>
          </span>
        )}
      </td>
      <td data-label="">
        {!k.revokedAt && (
          <ConfirmButton
            label="Revoke"
            confirmLabel="Revoke key"
            question="Revoke this key? Requests with it fail at once."
            danger
            onConfirm={async () => {
              setError('');
              try {
                await gql(REVOKE_API_KEY, { id: k.id });
                onChanged();
              } catch (e) {
                setError(describeError(e));
              }
            }}
          />
        )}
        {error && (
          <span class="state error" role="alert">
            {error}
          </span>
        )}
      </td>
    </tr>
  );
}

function CreateKey({ onCreated }: { onCreated: (c: { key: string; apiKey: ApiKey }) => void }) {
  const [name, setName] = useState('');
  const [scope, setScope] = useState<string>('READ_ONLY');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  return (
    <form
      class="card form"
      aria-labelledby="create-key-title"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError('');
        try {
          const d = await gql<{ createApiKey: { key: string; apiKey: ApiKey } }>(CREATE_API_KEY, { input: { name: name.trim(), scope } });
          setName('');
          onCreated(d.createApiKey);
        } catch (err) {
          setError(describeError(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="create-key-title">New API key</h2>
      <div class="form-row">
        <label>
          Name
          <input required maxLength={200} value={name} name="key-name" onInput={(e) => setName(e.currentTarget.value)} placeholder="CI pipeline" />
        </label>
        <label>
          Scope
          <select value={scope} name="key-scope" onChange={(e) => setScope(e.currentTarget.value)}>
            {API_KEY_SCOPES.map((s) => (
              <option key={s} value={s}>
                {s.toLowerCase().replace('_', '-')} — {SCOPE_HELP[s]}
              </option>
            ))}
          </select>
        </label>
      </div>
      {error && (
        <p class="state error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy || !name.trim()}>
        {busy ? 'Creating…' : 'Create key'}
      </button>
    </form>
  );
}
