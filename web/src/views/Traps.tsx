import { useState } from 'preact/hooks';
import { describeError, gql } from '../api';
import { formatTime, trapURL } from '../format';
import { TRAP_KINDS } from '../vocab.gen';
import { CREATE_TRAP, DELETE_TRAP, TRAPS, TRAP_PREVIEW, TRAP_TYPES, UPDATE_TRAP, type Trap, type TrapPreview, type TrapsData } from '../queries';
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Inert, Link, Loading, useQuery } from '../ui';

const TYPE_HELP: Record<string, string> = Object.fromEntries(TRAP_KINDS.map((k) => [k.name, k.help]));

const BASE_KEY = 'flytrap.trapBase';
/**
 * The trap listener's base URL for previews: the user's own override (kept in localStorage),
 * else the server's (--trap-public-url, or http://<trap-addr>, from /dashboard/config.json),
 * else this host on port 8081.
 */
export function trapBase(configured: string | null, saved: string | null, loc: { protocol: string; hostname: string }): string {
  return saved || configured || `${loc.protocol}//${loc.hostname}:8081`;
}

function savedBase(): string | null {
  try {
    return localStorage.getItem(BASE_KEY);
  } catch {
    return null; /* storage unavailable */
  }
}

export function TrapsView({ canWrite, trapURL }: { canWrite: boolean; trapURL: string | null }) {
  const q = useQuery<TrapsData>(TRAPS, undefined, 'traps');
  const [override, setOverride] = useState<string | null>(savedBase);
  const base = trapBase(trapURL, override, location);
  // A success notice names the trap it is about and goes when that trap does.
  const [notice, setNotice] = useState<{ id: string; text: string } | null>(null);
  const traps = q.data?.traps.edges.map((e) => e.node) ?? [];
  return (
    <section aria-labelledby="traps-title">
      <div class="page-head">
        <h1 id="traps-title">Traps</h1>
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
          Refresh
        </button>
      </div>
      {canWrite ? (
        <CreateTrap
          onCreated={(t) => {
            setNotice({ id: t.id, text: `Trap “${t.name}” created at ${t.path ?? t.type}.` });
            q.reload();
          }}
        />
      ) : (
        <p class="muted">Your key is read-only: you can look at traps but not change them.</p>
      )}
      {notice && traps.some((t) => t.id === notice.id) && (
        <p class="state ok" role="status" data-testid="trap-notice">
          {notice.text}
        </p>
      )}
      <div class="card">
        <label class="inline">
          Trap listener URL (for previews)
          <input
            type="url"
            value={base}
            onInput={(e) => {
              const v = e.currentTarget.value.trim();
              // Empty, or the server's own value, drops the override.
              const next = v && v !== trapURL ? v : null;
              setOverride(next);
              try {
                if (next) localStorage.setItem(BASE_KEY, next);
                else localStorage.removeItem(BASE_KEY);
              } catch {
                /* storage unavailable */
              }
            }}
          />
        </label>
        <p class="muted small">
          Traps answer on the trap listener (<code>--trap-public-url</code>, else <code>--trap-addr</code>), not here. Opening a trap URL records a hit like any visitor’s;
          “Preview” shows the decoy’s raw response as text instead, recording nothing (its tokens are inert).
        </p>
      </div>
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!q.data && q.loading && <Loading />}
      {q.data && traps.length === 0 && <Empty>No traps yet{canWrite ? ': create one above.' : '.'}</Empty>}
      {traps.length > 0 && (
        <ul class="trap-list" data-testid="trap-list">
          {traps.map((t) => (
            <TrapItem key={t.id} trap={t} base={base} canWrite={canWrite} onChanged={q.reload} />
          ))}
        </ul>
      )}
    </section>
  );
}

function CreateTrap({ onCreated }: { onCreated: (t: Trap) => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState<string>('page');
  const [path, setPath] = useState('');
  const [description, setDescription] = useState('');
  const [publicTitle, setPublicTitle] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  return (
    <form
      class="card form"
      aria-labelledby="create-trap-title"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError('');
        try {
          const input: Record<string, unknown> = { name: name.trim(), type };
          if (path.trim()) input.path = path.trim();
          if (description.trim()) input.description = description.trim();
          if (publicTitle.trim()) input.publicTitle = publicTitle.trim();
          const d = await gql<{ createTrap: Trap }>(CREATE_TRAP, { input });
          setName('');
          setPath('');
          setDescription('');
          setPublicTitle('');
          onCreated(d.createTrap);
        } catch (err) {
          setError(describeError(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="create-trap-title">New trap</h2>
      <p class="muted small" data-testid="trap-privacy-note">
        Name and description are private: only your organization sees them. Visitors read the public title.
      </p>
      <div class="form-row">
        <label>
          Name <span class="muted">(private)</span>
          <input required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} name="name" />
        </label>
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value)} name="type">
            {TRAP_TYPES.map((t) => (
              <option key={t} value={t}>
                {t} — {TYPE_HELP[t]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Path <span class="muted">(optional: Flytrap picks one)</span>
          <input value={path} placeholder="/internal/wiki" onInput={(e) => setPath(e.currentTarget.value)} name="path" />
        </label>
      </div>
      <label>
        Description <span class="muted">(optional, private)</span>
        <input value={description} maxLength={1000} onInput={(e) => setDescription(e.currentTarget.value)} name="description" />
      </label>
      <label>
        Public title <span class="muted">(optional, shown to visitors in the decoy and its lures; empty: Flytrap writes one that fits)</span>
        <input value={publicTitle} maxLength={120} onInput={(e) => setPublicTitle(e.currentTarget.value)} name="publicTitle" />
      </label>
      {error && (
        <p class="state error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy || !name.trim()}>
        {busy ? 'Creating…' : 'Create trap'}
      </button>
    </form>
  );
}

function TrapItem({ trap: t, base, canWrite, onChanged }: { trap: Trap; base: string; canWrite: boolean; onChanged: () => void }) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(t.name);
  const [description, setDescription] = useState(t.description);
  const [publicTitle, setPublicTitle] = useState(t.publicTitle);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const url = trapURL(base, t.path);
  const [preview, setPreview] = useState<PreviewState | null>(null);
  const togglePreview = async () => {
    if (preview !== null) {
      setPreview(null);
      return;
    }
    setPreview({ loading: true });
    try {
      const d = await gql<{ trapPreview: TrapPreview }>(TRAP_PREVIEW, { id: t.id });
      setPreview({ data: d.trapPreview });
    } catch (err) {
      setPreview({ error: describeError(err) });
    }
  };
  const run = async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError('');
    try {
      await fn();
      onChanged();
      return true;
    } catch (err) {
      setError(describeError(err));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return (
    <li class="card trap" data-testid="trap" data-trap-id={t.id}>
      <div class="trap-head">
        <h3>
          <Inert text={t.name} />
        </h3>
        <Badge kind={t.active ? 'active' : 'inactive'}>{t.active ? 'active' : 'inactive'}</Badge>
        <span class="muted">{t.type}</span>
      </div>
      <dl class="facts">
        <dt>Path</dt>
        <dd>{t.path ? <Inert text={t.path} /> : <span class="muted">none</span>}</dd>
        <dt>Description</dt>
        <dd>{t.description ? <Inert text={t.description} /> : <span class="muted">none</span>}</dd>
        <dt>Visibility</dt>
        <dd class="muted small" data-testid="trap-visibility">
          Name and description are private. Visitors read the public title, never these.
        </dd>
        <dt>Public title</dt>
        <dd data-testid="trap-public-title">
          {t.publicTitle ? <Inert text={t.publicTitle} /> : <span class="muted">generated for its kind and site (see the preview)</span>}
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(t.createdAt)}</dd>
        <dt>Preview</dt>
        <dd class="preview">
          <button type="button" class="secondary" aria-expanded={preview !== null} onClick={togglePreview} data-testid="trap-preview-toggle">
            {preview !== null ? 'Hide preview' : 'Preview'}
          </button>{' '}
          {url ? (
            <>
              <code data-testid="trap-url">{url}</code> <CopyButton text={url} label="Copy URL" />{' '}
              <a href={url} target="_blank" rel="noopener noreferrer">
                Open as a visitor
              </a>
            </>
          ) : (
            <span class="muted">Set the trap listener URL above.</span>
          )}
          {preview !== null && <PreviewPanel state={preview} />}
        </dd>
        <dt>Sessions</dt>
        <dd>
          <Link href={`/sessions?trap=${encodeURIComponent(t.id)}`}>Sessions that hit this trap</Link>
        </dd>
      </dl>
      {error && (
        <p class="state error" role="alert">
          {error}
        </p>
      )}
      {canWrite && !editing && (
        <div class="actions">
          <button type="button" class="secondary" disabled={busy} onClick={() => run(() => gql(UPDATE_TRAP, { id: t.id, input: { active: !t.active } }))}>
            {t.active ? 'Deactivate' : 'Activate'}
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setName(t.name);
              setDescription(t.description);
              setPublicTitle(t.publicTitle);
              setEditing(true);
            }}
          >
            Edit
          </button>
          <ConfirmButton
            label="Delete"
            confirmLabel="Delete trap"
            question={`Delete this trap? Its sessions are kept.`}
            danger
            onConfirm={async () => {
              await run(() => gql(DELETE_TRAP, { id: t.id }));
            }}
          />
        </div>
      )}
      {canWrite && editing && (
        <form
          class="form"
          aria-label={`Edit trap ${t.id}`}
          onSubmit={async (e) => {
            e.preventDefault();
            if (await run(() => gql(UPDATE_TRAP, { id: t.id, input: { name: name.trim(), description, publicTitle: publicTitle.trim() } }))) setEditing(false);
          }}
          onKeyDown={(e) => e.key === 'Escape' && setEditing(false)}
        >
          <label>
            Name <span class="muted">(private)</span>
            <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <label>
            Description <span class="muted">(private)</span>
            <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
          </label>
          <label>
            Public title <span class="muted">(shown to visitors; empty: generated)</span>
            <input value={publicTitle} maxLength={120} onInput={(e) => setPublicTitle(e.currentTarget.value)} />
          </label>
          <div class="actions">
            <button type="submit" disabled={busy || !name.trim()}>
              Save
            </button>
            <button type="button" class="secondary" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </li>
  );
}

type PreviewState = { loading: true } | { data: TrapPreview } | { error: string };

/**
 * The decoy as a visitor's browser would receive it, shown as inert text: its body is
 * visitor-facing bait (hidden instructions, planted tokens) and is never rendered as markup.
 * An iframe is not an option: the dashboard's Content-Security-Policy forbids frames.
 */
function PreviewPanel({ state }: { state: PreviewState }) {
  if ('loading' in state) return <Loading />;
  if ('error' in state)
    return (
      <p class="state error" role="alert">
        {state.error}
      </p>
    );
  const p = state.data;
  return (
    <div class="decoy-preview" data-testid="trap-preview">
      <p class="muted small">
        <span data-testid="trap-preview-status">HTTP {p.status}</span> · <code data-testid="trap-preview-type">{p.contentType}</code> · as served at{' '}
        <Inert text={p.path} /> — raw response, shown as text; nothing was recorded and its tokens are inert.
      </p>
      <p class="small" data-testid="trap-preview-title">
        Visitors read the title <Inert text={p.publicTitle} /> {p.publicTitleGenerated ? '(generated)' : '(set by you)'}.
      </p>
      <Inert text={p.body} block />
    </div>
  );
}
