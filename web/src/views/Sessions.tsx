import { useMemo, useState } from 'preact/hooks';
import { describeError, gql } from '../api';
import { CLASSIFICATIONS, SEVERITIES, TRIAGE_STATES, WINDOWS, filtersFromSearch, filtersToSearch, filtersToWhere, type SessionFilters } from '../filters';
import { formatAgo, formatClassification, formatNumber, formatTime, truncate } from '../format';
import { navigate } from '../router';
import { SESSIONS, TRAPS, TRIAGE_SESSIONS, type SessionsData, type TrapsData } from '../queries';
import { Badge, Empty, ErrorBox, Inert, Link, Loading, Pager, useQuery } from '../ui';

const PAGE = 25;

/** The bulk actions on selected sessions: the state each sets, and its button's label. */
const TRIAGE_ACTIONS: [string, string][] = [
  ['acknowledged', 'Acknowledge'],
  ['resolved', 'Resolve'],
  ['ignored', 'Ignore'],
  ['open', 'Reopen'],
];

export function SessionsView({ search, canWrite = false }: { search: string; canWrite?: boolean }) {
  const filters = useMemo(() => filtersFromSearch(search), [search]);
  // A stack of cursors: [null] is the first page; pushing endCursor goes forward.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [forSearch, setForSearch] = useState(search);
  if (forSearch !== search) {
    setForSearch(search);
    setCursors([null]);
  }
  const after = cursors[cursors.length - 1] ?? null;
  const where = useMemo(() => filtersToWhere(filters), [filters]);
  const q = useQuery<SessionsData>(SESSIONS, { first: PAGE, after, where }, JSON.stringify([search, after]));
  const traps = useQuery<TrapsData>(TRAPS, undefined, 'traps');
  const conn = q.data?.sessions;
  const set = (patch: Partial<SessionFilters>) => navigate(`/sessions${filtersToSearch({ ...filters, ...patch })}`, true);
  // Selected rows of the page shown, for the bulk triage actions.
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [forPage, setForPage] = useState(JSON.stringify([search, after]));
  if (forPage !== JSON.stringify([search, after])) {
    setForPage(JSON.stringify([search, after]));
    setSelected(new Set());
  }
  const [busy, setBusy] = useState(false);
  const [triageMsg, setTriageMsg] = useState<{ error: boolean; text: string } | null>(null);
  const ids = conn?.edges.map((e) => e.node.id) ?? [];
  const allSelected = ids.length > 0 && ids.every((id) => selected.has(id));
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const triage = async (state: string, label: string) => {
    setBusy(true);
    setTriageMsg(null);
    try {
      const d = await gql<{ triageSessions: { changed: number } }>(TRIAGE_SESSIONS, { ids: [...selected], state });
      const n = d.triageSessions.changed;
      setTriageMsg({ error: false, text: `${label}: ${n} session${n === 1 ? '' : 's'} changed.` });
      setSelected(new Set());
      q.reload();
    } catch (e) {
      setTriageMsg({ error: true, text: describeError(e) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="sessions-title">
      <div class="page-head">
        <h1 id="sessions-title">Sessions</h1>
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
          Refresh
        </button>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter sessions">
        <label>
          Classification
          <select value={filters.classification} onChange={(e) => set({ classification: e.currentTarget.value })}>
            <option value="">Any</option>
            {CLASSIFICATIONS.map((c) => (
              <option value={c} key={c}>
                {formatClassification(c)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Severity
          <select value={filters.severity} onChange={(e) => set({ severity: e.currentTarget.value })}>
            <option value="">Any</option>
            {SEVERITIES.map((s) => (
              <option value={s} key={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Trap
          <select value={filters.trapID} onChange={(e) => set({ trapID: e.currentTarget.value })}>
            <option value="">Any</option>
            {traps.data?.traps.edges.map(({ node: t }) => (
              <option value={t.id} key={t.id}>
                {truncate(t.name, 40)} ({t.path ?? t.type})
              </option>
            ))}
          </select>
        </label>
        <label>
          Last seen
          <select value={filters.window} onChange={(e) => set({ window: e.currentTarget.value })}>
            <option value="">Any time</option>
            {Object.keys(WINDOWS).map((w) => (
              <option value={w} key={w}>
                within {w}
              </option>
            ))}
          </select>
        </label>
        <label>
          Triage
          <select value={filters.triage} onChange={(e) => set({ triage: e.currentTarget.value })} data-testid="triage-filter">
            <option value="">Any</option>
            <option value="unresolved">unresolved (open or acknowledged)</option>
            {TRIAGE_STATES.map((s) => (
              <option value={s} key={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Source IP starts with
          <input
            type="search"
            inputMode="text"
            autoComplete="off"
            value={filters.sourceIP}
            onChange={(e) => set({ sourceIP: e.currentTarget.value })}
          />
        </label>
        {filters.ja4 && (
          <p class="filter-chip" data-testid="ja4-filter">
            From TLS client <code>{filters.ja4}</code>{' '}
            <button type="button" class="secondary" onClick={() => set({ ja4: '' })} aria-label="Remove the TLS client filter">
              ×
            </button>
          </p>
        )}
        {search && (
          <button type="button" class="secondary" onClick={() => navigate('/sessions', true)}>
            Clear filters
          </button>
        )}
      </form>
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!conn && q.loading && <Loading />}
      {conn && conn.edges.length === 0 && <Empty>{search ? 'No session matches these filters.' : 'No sessions yet: nobody has touched a trap.'}</Empty>}
      {conn && conn.edges.length > 0 && (
        <>
          <p class="muted" aria-live="polite">
            {conn.totalCountExact ? formatNumber(conn.totalCount) : `more than ${formatNumber(conn.totalCount - 1)}`} session{conn.totalCount === 1 ? '' : 's'}
            {q.loading ? ' (updating…)' : ''}
          </p>
          {canWrite && (
            <div class="bulk-actions" role="group" aria-label="Triage the selected sessions" data-testid="bulk-actions">
              <span class="muted">{selected.size} selected</span>
              {TRIAGE_ACTIONS.map(([state, label]) => (
                <button type="button" class="secondary" key={state} disabled={busy || selected.size === 0} onClick={() => triage(state, label)}>
                  {label}
                </button>
              ))}
            </div>
          )}
          {triageMsg && (
            <p class={triageMsg.error ? 'error' : 'muted'} role={triageMsg.error ? 'alert' : 'status'} data-testid="triage-result">
              {triageMsg.text}
            </p>
          )}
          <div class="table-wrap stack">
            <table class="table" data-testid="sessions-table">
              <thead>
                <tr>
                  {canWrite && (
                    <th scope="col" class="select">
                      <input
                        type="checkbox"
                        aria-label="Select every session of this page"
                        checked={allSelected}
                        onChange={() => setSelected(allSelected ? new Set() : new Set(ids))}
                      />
                    </th>
                  )}
                  <th scope="col">Last seen</th>
                  <th scope="col">Classification</th>
                  <th scope="col">Severity</th>
                  <th scope="col">Triage</th>
                  <th scope="col">Score</th>
                  <th scope="col">Source IP</th>
                  <th scope="col">User agent</th>
                  <th scope="col">Hits</th>
                  <th scope="col">Tripwires</th>
                  <th scope="col">Model</th>
                </tr>
              </thead>
              <tbody>
                {conn.edges.map(({ node: s }) => (
                  // The whole row opens the session: the first cell's link is the keyboard's way in.
                  <tr
                    key={s.id}
                    class="row-link"
                    data-testid="session-row"
                    onClick={(e) => {
                      if ((e.target as HTMLElement).closest('a, button, input, label') || getSelection()?.toString()) return;
                      navigate(`/sessions/${s.id}`);
                    }}
                  >
                    {canWrite && (
                      <td data-label="Select" class="select">
                        <input type="checkbox" aria-label={`Select the session from ${s.sourceIP}`} checked={selected.has(s.id)} onChange={() => toggle(s.id)} />
                      </td>
                    )}
                    <td data-label="Last seen">
                      <Link href={`/sessions/${s.id}`}>
                        <time dateTime={s.lastSeen} title={formatTime(s.lastSeen)}>
                          {formatAgo(s.lastSeen)}
                        </time>
                      </Link>
                    </td>
                    <td data-label="Classification">{formatClassification(s.classification)}</td>
                    <td data-label="Severity">
                      <Badge kind={s.severity}>{s.severity}</Badge>
                    </td>
                    <td data-label="Triage" data-testid="triage-state">
                      <Badge kind={`triage-${s.triageState}`}>{s.triageState}</Badge>
                      {s.triagedAt && (
                        <span class="muted" title={`${s.triagedByName || s.triagedBy} at ${formatTime(s.triagedAt)}`}>
                          {' '}
                          by <Inert text={truncate(s.triagedByName || s.triagedBy, 30)} />
                        </span>
                      )}
                    </td>
                    <td data-label="Score">
                      {s.score} <span class="muted">({s.confidence}%)</span>
                    </td>
                    <td data-label="Source IP">
                      <Inert text={s.sourceIP} />
                    </td>
                    <td data-label="User agent" class="ua" title={s.userAgent}>
                      <Inert text={truncate(s.userAgent || '(none)', 80)} />
                    </td>
                    <td data-label="Hits">{formatNumber(s.hitCount)}</td>
                    <td data-label="Tripwires">{formatNumber(s.tripwiresFired)}</td>
                    <td data-label="Model">{s.extractedModel ? <Inert text={s.extractedModel} /> : <span class="muted">–</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager cursors={cursors} setCursors={setCursors} pageInfo={conn.pageInfo} loading={q.loading} />
        </>
      )}
    </section>
  );
}
