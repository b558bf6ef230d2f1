// Shared building blocks: data loading with loading/error states, links, confirmations, copy.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describeError, gql } from './api';
import { revealInvisible } from './format';
import { navigate } from './router';

export interface QueryState<T> {
  data: T | null;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs a GraphQL query when key changes; keeps the last data while reloading. */
export function useQuery<T>(query: string, variables: Record<string, unknown> | undefined, key: string): QueryState<T> {
  const [state, setState] = useState<{ data: T | null; error: unknown; loading: boolean }>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    gql<T>(query, variables, { signal: ctl.signal }).then(
      (data) => !ctl.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => !ctl.signal.aborted && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function Link(props: { href: string; class?: string; children: ComponentChildren; 'aria-current'?: 'page' | undefined }) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-current={props['aria-current']}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p class="state loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="state empty">{children}</p>;
}

export function ErrorBox({ error, retry }: { error: unknown; retry?: () => void }) {
  if (error instanceof ApiError && error.code === 'UNAUTHENTICATED') return null; // the app returns to sign-in
  return (
    <div class="state error" role="alert">
      <span>{describeError(error)}</span>
      {retry && (
        <button type="button" class="secondary" onClick={retry}>
          Retry
        </button>
      )}
    </div>
  );
}

/** A button that asks once more, inline, before running a destructive action. */
export function ConfirmButton(props: {
  label: string;
  confirmLabel: string;
  question: string;
  onConfirm: () => Promise<void> | void;
  danger?: boolean;
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class={props.danger ? 'danger' : 'secondary'} disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span class="confirm-question">{props.question}</span>
      <button
        type="button"
        ref={confirmRef}
        class="danger"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          try {
            await props.onConfirm();
          } finally {
            setBusy(false);
            setAsking(false);
          }
        }}
      >
        {props.confirmLabel}
      </button>
      <button type="button" class="secondary" onClick={() => setAsking(false)} onKeyDown={(e) => e.key === 'Escape' && setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState<'' | 'ok' | 'fail'>('');
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone('ok');
        } catch {
          setDone('fail');
        }
        setTimeout(() => setDone(''), 2500);
      }}
    >
      {done === 'ok' ? 'Copied' : done === 'fail' ? 'Copy failed: select and copy by hand' : label}
    </button>
  );
}

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge badge-${kind.toLowerCase().replace(/[^a-z0-9_-]/g, '')}`}>{children}</span>;
}

/** Attacker-controlled text, shown verbatim as text in a scrollable block. */
export function Inert({ text, block }: { text: string; block?: boolean }) {
  const shown = revealInvisible(text);
  return block ? <pre class="inert">{shown}</pre> : <code class="inert">{shown}</code>;
}

/**
 * Newer/Older buttons over a stack of cursors ([null] is the first page; pushing a page's
 * endCursor goes one page older).
 */
export function Pager(props: {
  cursors: (string | null)[];
  setCursors: (f: (c: (string | null)[]) => (string | null)[]) => void;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  loading: boolean;
}) {
  const { cursors, setCursors, pageInfo, loading } = props;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={cursors.length <= 1 || loading} onClick={() => setCursors((c) => c.slice(0, -1))}>
        ← Newer
      </button>
      <span class="muted">Page {cursors.length}</span>
      <button
        type="button"
        class="secondary"
        disabled={!pageInfo.hasNextPage || !pageInfo.endCursor || loading}
        onClick={() => setCursors((c) => [...c, pageInfo.endCursor])}
      >
        Older →
      </button>
    </nav>
  );
}
