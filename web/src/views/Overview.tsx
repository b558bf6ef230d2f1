import { useEffect, useRef, useState } from 'preact/hooks';
import { auth, gql, signalUnauthenticated } from '../api';
import { SeverityChart, TimelineChart } from '../charts';
import { formatAgo, formatClassification, formatNumber, formatTime } from '../format';
import { subscribeEvents, type LiveStatus } from '../live';
import { ANALYTICS, RECENT_THREATS, type AnalyticsData, type EventMessage } from '../queries';
import { Badge, Empty, ErrorBox, Inert, Link, Loading, useQuery } from '../ui';

const FIGURES: { key: keyof AnalyticsData['analytics']['overview']; label: string; hint: string }[] = [
  { key: 'totalHits24h', label: 'Hits (24 h)', hint: 'Requests to traps in the last 24 hours' },
  { key: 'agentsDetected', label: 'AI agents detected', hint: 'Sessions classified AI assistant, AI agent or malicious AI agent' },
  { key: 'tripwiresFired', label: 'Tripwires fired', hint: 'Callback hits, followed injections, leaked prompts and other bait' },
  { key: 'promptsCaptured', label: 'Prompts captured', hint: 'System prompts sent back by visitors' },
  { key: 'activeTraps', label: 'Active traps', hint: 'Traps currently answering' },
];

export function OverviewView() {
  const q = useQuery<AnalyticsData>(ANALYTICS, undefined, 'analytics');
  const a = q.data?.analytics;
  // Live: every threat or trap event refetches the figures and charts, debounced (1 s after
  // the last event, at most 5 s after the first of a burst), so a flood costs a few queries.
  const timer = useRef<number | null>(null);
  const burst = useRef(0);
  const refresh = () => {
    const now = Date.now();
    if (timer.current === null) burst.current = now;
    else clearTimeout(timer.current);
    const wait = Math.max(0, Math.min(1000, burst.current + 5000 - now));
    timer.current = window.setTimeout(() => {
      timer.current = null;
      q.reload();
    }, wait);
  };
  useEffect(() => () => void (timer.current !== null && clearTimeout(timer.current)), []);
  return (
    <section aria-labelledby="overview-title">
      <div class="page-head">
        <h1 id="overview-title">Overview</h1>
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
          Refresh
        </button>
      </div>
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!a && q.loading && <Loading />}
      {a && (
        <>
          <ul class="figures" aria-label="Key figures">
            {FIGURES.map((f) => (
              <li class="figure" key={f.key} title={f.hint} data-testid={`figure-${f.key}`}>
                <span class="figure-value">{formatNumber(a.overview[f.key])}</span>
                <span class="figure-label">{f.label}</span>
              </li>
            ))}
          </ul>
          <div class="grid-2">
            <div class="card">
              <h2>Sessions by severity</h2>
              <SeverityChart counts={a.severity} />
            </div>
            <div class="card">
              <h2>Hits per hour</h2>
              {a.timeline.length ? <TimelineChart buckets={a.timeline} /> : <Empty>No hits yet.</Empty>}
            </div>
          </div>
        </>
      )}
      <LiveFeed onChange={refresh} />
    </section>
  );
}

interface FeedItem {
  id: string;
  type: string;
  createdAt: string;
  data: Record<string, unknown>;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

const THREATS = ['threat.detected', 'threat.escalated'];
const LIVE_TYPES = [...THREATS, 'trap.created', 'trap.updated', 'trap.deleted'];

function LiveFeed({ onChange }: { onChange: () => void }) {
  const [items, setItems] = useState<FeedItem[] | null>(null);
  const [status, setStatus] = useState<LiveStatus>('connecting');
  const [error, setError] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    const token = auth.get();
    if (!token) return;
    let stop: (() => void) | null = null;
    let cancelled = false;
    setError(null);
    gql<{ events: { edges: { cursor: string; node: FeedItem }[] } }>(RECENT_THREATS).then(
      (d) => {
        if (cancelled) return;
        const edges = d.events.edges;
        setItems(edges.map((e) => e.node).reverse());
        const after = edges.length ? edges[edges.length - 1]!.cursor : null;
        stop = subscribeEvents({
          token,
          types: LIVE_TYPES,
          after,
          onStatus: setStatus,
          onUnauthenticated: signalUnauthenticated,
          onEvent: (e: EventMessage) => {
            if (THREATS.includes(e.type)) setItems((prev) => [e, ...(prev ?? []).filter((p) => p.id !== e.id)].slice(0, 100));
            onChange();
          },
        });
      },
      (e) => !cancelled && setError(e),
    );
    return () => {
      cancelled = true;
      stop?.();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [attempt]);
  const statusText: Record<LiveStatus, string> = {
    connecting: 'Connecting…',
    live: 'Live',
    reconnecting: 'Reconnecting…',
    closed: 'Closed',
    refused: 'Refused',
  };
  return (
    <div class="card">
      <div class="page-head">
        <h2>Live threats</h2>
        <span class={`live-status live-${status}`} role="status" data-testid="live-status">
          <span class="dot" aria-hidden="true" />
          {statusText[status]}
        </span>
      </div>
      {error ? <ErrorBox error={error} retry={() => setAttempt((n) => n + 1)} /> : null}
      {!items && !error && <Loading label="Loading recent threats…" />}
      {items && items.length === 0 && <Empty>No threats yet. New ones appear here as they are detected, without reloading.</Empty>}
      {items && items.length > 0 && (
        <ol class="feed" aria-live="polite" data-testid="live-feed">
          {items.map((e) => {
            const d = e.data;
            const sid = str(d.session_id);
            return (
              <li key={e.id} class="feed-item">
                <Badge kind={str(d.severity) || 'low'}>{str(d.severity) || '–'}</Badge>
                <span class="feed-type">{e.type === 'threat.escalated' ? 'Escalated' : 'Detected'}</span>
                <span class="feed-what">
                  {formatClassification(str(d.classification))} from <Inert text={str(d.source_ip)} />
                  {str(d.extracted_model) ? (
                    <>
                      {' '}
                      (model <Inert text={str(d.extracted_model)} />)
                    </>
                  ) : null}
                  , score {str(d.score)}
                </span>
                <time dateTime={e.createdAt} title={formatTime(e.createdAt)}>
                  {formatAgo(e.createdAt)}
                </time>
                {/^ses_[A-Za-z0-9]+$/.test(sid) ? <Link href={`/sessions/${sid}`}>View session</Link> : null}
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}
