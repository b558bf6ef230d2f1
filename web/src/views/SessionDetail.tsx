import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatClassification, formatDelay, formatHeaders, formatNumber, formatSignal, formatTime, identityBadges } from '../format';
import { hitListTitle, loadOlderHits, prependOlder } from '../olderhits';
import { SESSION, SESSION_INSIGHT, sessionDetail, type ClientStack, type Hit, type SessionDetailData, type SessionInsight, type Signal, type SignalGroup, type TrapRef, type VerdictExplanation } from '../queries';
import { Badge, Empty, ErrorBox, Inert, Link, Loading, useQuery } from '../ui';
import { TrapName } from './Campaigns';

export function SessionDetailView({ id }: { id: string }) {
  const q = useQuery<{ sessionDetail: SessionDetailData | null }>(SESSION, { id }, id);
  const s = q.data?.sessionDetail ? sessionDetail(q.data.sessionDetail) : null;
  const iq = useQuery<{ node: SessionInsight | null }>(SESSION_INSIGHT, { id }, `${id} ${q.data ? 'loaded' : ''}`);
  const insight = iq.data?.node ?? null;
  const older = useOlderHits(id, q.data?.sessionDetail ?? null);
  const reload = () => {
    q.reload();
    iq.reload();
  };
  return (
    <section aria-labelledby="session-title">
      <p>
        <Link href="/sessions">← Sessions</Link>
      </p>
      <div class="page-head">
        <h1 id="session-title">
          Session <code>{id}</code>
        </h1>
        <button type="button" class="secondary" onClick={reload} disabled={q.loading}>
          Refresh
        </button>
      </div>
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!q.data && q.loading && <Loading />}
      {q.data && !s && <Empty>No such session in your organization.</Empty>}
      {s && (
        <>
          <div class="card">
            <dl class="facts">
              <dt>Classification</dt>
              <dd data-testid="session-classification">
                {formatClassification(s.classification)}
                {identityBadges(s.signalsFired).map((b) => (
                  <span key={b.label} title={b.title} data-testid="identity-badge">
                    {' '}
                    <Badge kind={b.kind}>{b.label}</Badge>
                  </span>
                ))}
              </dd>
              <dt>Severity</dt>
              <dd>
                <Badge kind={s.severity}>{s.severity}</Badge>
              </dd>
              <dt>Score / confidence</dt>
              <dd>
                {s.score} / {s.confidence}%
              </dd>
              <dt>Source IP</dt>
              <dd>
                <Inert text={s.sourceIP} />
              </dd>
              <dt>User agent</dt>
              <dd>
                <Inert text={s.userAgent || '(none)'} block />
              </dd>
              <dt>First seen</dt>
              <dd>{formatTime(s.firstSeen)}</dd>
              <dt>Last seen</dt>
              <dd>{formatTime(s.lastSeen)}</dd>
              <dt>Hits</dt>
              <dd>{formatNumber(s.hitCount)}</dd>
              <dt>Tripwires fired</dt>
              <dd>{formatNumber(s.tripwiresFired)}</dd>
              <dt>Model</dt>
              <dd>{s.extractedModel ? <Inert text={s.extractedModel} /> : <span class="muted">not extracted</span>}</dd>
              <dt>Operator</dt>
              <dd>{s.extractedOperator ? <Inert text={s.extractedOperator} /> : <span class="muted">not extracted</span>}</dd>
              <dt>Traps triggered</dt>
              <dd data-testid="session-traps">
                {!s.trapsTriggered.length ? (
                  <span class="muted">none</span>
                ) : insight ? (
                  insight.traps.map((t) => <TrapName key={t.id} t={t} />)
                ) : (
                  <span class="muted">…</span>
                )}
              </dd>
            </dl>
          </div>

          {iq.error ? <ErrorBox error={iq.error} retry={iq.reload} /> : null}
          {insight && <WhyVerdict x={insight.explanation} signature={insight.signature} />}
          {insight && <ClientStacks stacks={insight.clientStacks} userAgent={s.userAgent} />}
          {insight && <SignalGroups groups={insight.signalGroups} />}

          <div class="card">
            <h2>Captured prompts ({s.prompts?.length ?? 0})</h2>
            {!s.prompts?.length ? (
              <Empty>No prompt captured.</Empty>
            ) : (
              s.prompts.map((p, i) => (
                <article class="prompt" key={i} data-testid="prompt">
                  <p class="muted">
                    {formatTime(p.createdAt)} · from {p.source || 'request'}
                    {p.model ? (
                      <>
                        {' '}
                        · model <Inert text={p.model} />
                      </>
                    ) : null}
                    {p.operator ? (
                      <>
                        {' '}
                        · operator <Inert text={p.operator} />
                      </>
                    ) : null}
                  </p>
                  <Inert text={p.text} block />
                </article>
              ))
            )}
          </div>

          <HitList
            title="Callbacks"
            traps={insight?.traps ?? []}
            signals={s.signals ?? []}
            hits={older.hits.filter(isCallback)}
            empty="No callback: no hidden link was followed."
            testid="callbacks"
          />
          <HitList
            traps={insight?.traps ?? []}
            signals={s.signals ?? []}
            title={hitListTitle(older.hits.length, s.hitCount, older.more)}
            hits={older.hits}
            empty="No hit recorded."
          >
            {older.more && (
              <div class="actions">
                <button type="button" class="secondary" onClick={older.showOlder} disabled={older.loading}>
                  Show older hits
                </button>
                {older.loading && <Loading label="Loading older hits…" />}
              </div>
            )}
            {older.error ? <ErrorBox error={older.error} /> : null}
          </HitList>
        </>
      )}
    </section>
  );
}

interface OlderHits {
  /** The detail's hits with the older pages shown above them, oldest first. */
  hits: Hit[];
  /** Whether older hits remain to show. */
  more: boolean;
  loading: boolean;
  error: unknown;
  showOlder: () => void;
}

/**
 * The detail's hits (its newest window) and the older pages "Show older hits" has added above
 * them. The pages belong to the detail they extend: a new detail (another session, Refresh)
 * starts again from its own window, and a page still loading for the old one is dropped.
 */
function useOlderHits(session: string, detail: SessionDetailData | null): OlderHits {
  const [state, setState] = useState<{ of: SessionDetailData; hits: Hit[]; more: boolean; loading: boolean; error: unknown } | null>(null);
  const inflight = useRef<AbortController | null>(null);
  useEffect(() => () => inflight.current?.abort(), [detail]);
  const cur = detail && (state?.of === detail ? state : { of: detail, hits: detail.hits, more: detail.hitsTruncated, loading: false, error: null });
  const showOlder = async () => {
    const oldest = cur?.hits[0];
    if (!cur || !oldest || cur.loading) return;
    inflight.current?.abort();
    const ctl = new AbortController();
    inflight.current = ctl;
    setState({ ...cur, loading: true, error: null });
    try {
      const page = await loadOlderHits(session, oldest, { signal: ctl.signal });
      if (!ctl.signal.aborted) setState({ ...cur, hits: prependOlder(cur.hits, page.hits), more: page.more, loading: false, error: null });
    } catch (error) {
      if (!ctl.signal.aborted) setState({ ...cur, loading: false, error });
    }
  };
  return { hits: cur?.hits ?? [], more: cur?.more ?? false, loading: cur?.loading ?? false, error: cur?.error ?? null, showOlder };
}

/**
 * A hit that brought back a token of hidden content: a callback URL (kind callback), or a
 * trap's own path reached through a lure in the customer's pages, whose hit served a decoy
 * and fired CALLBACK_HIT (the signal is what the signals table shows).
 */
function isCallback(h: Hit): boolean {
  return h.kind === 'callback' || h.signals.includes('CALLBACK_HIT');
}

/** The hit's firings that followed hidden content (CALLBACK_HIT), as the API names them. */
function followed(h: Hit, signals: Signal[]): Signal[] {
  return signals.filter((x) => x.hitID === h.id && x.name === 'CALLBACK_HIT');
}

function HitList({
  title,
  hits,
  empty,
  traps,
  signals,
  testid,
  children,
}: {
  title: string;
  hits: Hit[];
  empty: string;
  traps: TrapRef[];
  signals: Signal[];
  testid?: string;
  children?: ComponentChildren;
}) {
  return (
    <div class="card" data-testid={testid}>
      <h2>
        {title} ({hits.length})
      </h2>
      {hits.length === 0 ? (
        <Empty>{empty}</Empty>
      ) : (
        <ol class="hits">
          {hits.map((h) => {
            const via = followed(h, signals);
            const lure = via.some((x) => x.lure);
            return (
              <li key={h.id} class="hit" data-testid="hit">
                <details>
                  <summary>
                    <span class="hit-method">{h.method}</span> <Inert text={h.path + (h.query ? `?${h.query}` : '')} />{' '}
                    {lure ? <Badge kind="high">lure</Badge> : null}
                    <span class="muted">
                      {' '}· {h.status} · {lure ? 'lure followed' : h.kind.replace('_', ' ')} · {formatTime(h.receivedAt)}
                    </span>
                    {h.signals.length ? <span class="muted"> · {h.signals.map(formatSignal).join(', ')}</span> : null}
                    {via.map((x, i) => (
                      <span class="hit-via" data-testid="hit-via" key={i}>
                        <br />
                        {x.placementLabel || x.placement} — <Inert text={x.detail} />
                      </span>
                    ))}
                  </summary>
                  <dl class="facts">
                    <dt>Hit</dt>
                    <dd>
                      <code>{h.id}</code>
                    </dd>
                    <dt>Trap</dt>
                    <dd>{h.trapID ? <HitTrap id={h.trapID} traps={traps} /> : <span class="muted">–</span>}</dd>
                    <dt>Source IP</dt>
                    <dd>
                      <Inert text={h.sourceIP} />
                    </dd>
                    <dt>User agent</dt>
                    <dd>
                      <Inert text={h.userAgent || '(none)'} block />
                    </dd>
                    <dt>Headers</dt>
                    <dd>
                      <Inert text={formatHeaders(h.headers)} block />
                    </dd>
                    <dt>Body{h.bodyTruncated ? ' (truncated)' : ''}</dt>
                    <dd>{h.body ? <Inert text={h.body} block /> : <span class="muted">empty</span>}</dd>
                  </dl>
                </details>
              </li>
            );
          })}
        </ol>
      )}
      {children}
    </div>
  );
}

function HitTrap({ id, traps }: { id: string; traps: TrapRef[] }) {
  const t = traps.find((x) => x.id === id);
  return t ? <TrapName t={t} /> : <code>{id}</code>;
}

/** What the connections proved of the client beside what it claimed (its user agent): JA4, HTTP/2 and
 * header-order fingerprints and the stack family. A claimed browser on a library's stack fires
 * CLIENT_STACK_MISMATCH, shown with its detail among the signals. Every value is shown as text. */
function ClientStacks({ stacks, userAgent }: { stacks: ClientStack[]; userAgent: string }) {
  return (
    <div class="card" data-testid="client-stacks">
      <h2>Claimed vs real client</h2>
      <p>
        Claims: {userAgent ? <Inert text={userAgent} /> : <span class="muted">no user agent</span>}
      </p>
      {stacks.length === 0 ? (
        <Empty>No fingerprint: the hits came over plain HTTP, or through a proxy that passed none.</Empty>
      ) : (
        <div class="table-wrap stack">
          <table class="table" data-testid="client-stack-table">
            <caption class="sr-only">Fingerprints of the session's connections</caption>
            <thead>
              <tr>
                <th scope="col">Stack</th>
                <th scope="col">JA4</th>
                <th scope="col">HTTP/2</th>
                <th scope="col">Header order</th>
                <th scope="col">Hits</th>
              </tr>
            </thead>
            <tbody>
              {stacks.map((c, i) => (
                <tr key={i} data-testid="client-stack">
                  <td data-label="Stack">{c.family ? <strong>{c.family}</strong> : <span class="muted">unknown</span>}</td>
                  <td data-label="JA4">
                    {c.ja4 ? (
                      <Link href={`/sessions?ja4=${encodeURIComponent(c.ja4)}`}>
                        <code>{c.ja4}</code>
                      </Link>
                    ) : (
                      <span class="muted">none</span>
                    )}
                  </td>
                  <td data-label="HTTP/2">{c.h2Fingerprint ? <code>{c.h2Fingerprint}</code> : <span class="muted">none</span>}</td>
                  <td data-label="Header order">{c.headerOrder ? <code>{c.headerOrder}</code> : <span class="muted">none</span>}</td>
                  <td data-label="Hits">{formatNumber(c.hits)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

/** How the engine reached the verdict: every figure comes from the API (detect.Explain). */
function WhyVerdict({ x, signature }: { x: VerdictExplanation; signature: string | null }) {
  const capped = Math.min(x.rawScore, 100);
  return (
    <div class="card" data-testid="why-verdict">
      <h2>Why this verdict</h2>
      <p data-testid="verdict-rule">
        <strong>Rule {x.rule}:</strong> {x.ruleText}
      </p>
      {signature !== null && (
        <p data-testid="verdict-signature">
          <strong>Signature:</strong> <Inert text={signature} />
        </p>
      )}
      <p>
        Signals add up to <strong>{x.rawScore}</strong> point{x.rawScore === 1 ? '' : 's'}
        {x.rawScore > 100 ? ', capped at 100' : ''}. {formatClassification(x.classification)} scores between {x.floor} and {x.ceiling}
        {capped < x.floor || capped > x.ceiling ? `, so the score is held at ${x.score}` : ''}: score <strong>{x.score}</strong>, severity{' '}
        <Badge kind={x.severity}>{x.severity}</Badge>, confidence <strong>{x.confidence}%</strong>. From {x.detectionThreshold} a
        non-human session counts as detected.
      </p>
      {!x.matchesStored && (
        <p class="state warn" role="note">
          The engine's current rules give this verdict; the stored one differs (it was judged by an earlier version).
        </p>
      )}
      {x.parts.length === 0 ? (
        <Empty>No signal counts toward the score.</Empty>
      ) : (
        <div class="table-wrap stack">
          <table class="table" data-testid="score-table">
            <caption class="sr-only">Each signal's part of the score</caption>
            <thead>
              <tr>
                <th scope="col">Signal</th>
                <th scope="col">Weight</th>
                <th scope="col">Fired</th>
                <th scope="col">Points</th>
                <th scope="col">Meaning</th>
              </tr>
            </thead>
            <tbody>
              {x.parts.map((p) => (
                <tr key={p.signal} data-testid="score-part">
                  <td data-label="Signal">
                    <span title={p.signal}>{formatSignal(p.signal)}</span> {p.tripwire ? <Badge kind="high">tripwire</Badge> : null}
                  </td>
                  <td data-label="Weight">{p.weight}</td>
                  <td data-label="Fired">
                    {p.fromUserAgent ? 'from the user agent' : `${formatNumber(p.count)}×`}
                    {p.countsOnce && p.count > 1 ? <span class="muted"> (counts once)</span> : null}
                  </td>
                  <td data-label="Points">
                    <strong>{p.points}</strong>
                  </td>
                  <td data-label="Meaning" class="muted">
                    {p.meaning}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class="muted small">Repeats add half of the previous repeat (weight, then ½, ¼, …); identity signals count once.</p>
    </div>
  );
}

function delayRange(g: SignalGroup): string {
  if (g.minDelayMs === null) return '–';
  if (g.maxDelayMs === null || g.maxDelayMs === g.minDelayMs) return formatDelay(g.minDelayMs);
  return `${formatDelay(g.minDelayMs)} – ${formatDelay(g.maxDelayMs)}`;
}

/** Signals grouped by signal and placement (in words, from the API), with counts. */
function SignalGroups({ groups }: { groups: SignalGroup[] }) {
  const total = groups.reduce((n, g) => n + g.count, 0);
  return (
    <div class="card">
      <h2>
        Signals ({formatNumber(total)} firing{total === 1 ? '' : 's'}, {groups.length} kind{groups.length === 1 ? '' : 's'})
      </h2>
      {groups.length === 0 ? (
        <Empty>No signal fired.</Empty>
      ) : (
        <div class="table-wrap stack">
          <table class="table" data-testid="signals-table">
            <thead>
              <tr>
                <th scope="col">Signal</th>
                <th scope="col">Times</th>
                <th scope="col">Placement</th>
                <th scope="col">Delay</th>
                <th scope="col">Evidence</th>
              </tr>
            </thead>
            <tbody>
              {groups.map((g, i) => (
                <tr key={i} data-testid="signal-group">
                  <td data-label="Signal">
                    <span title={g.signal}>{formatSignal(g.signal)}</span> {g.tripwire ? <Badge kind="high">tripwire</Badge> : null}
                  </td>
                  <td data-label="Times" data-testid="signal-count">
                    {formatNumber(g.count)}×
                  </td>
                  <td data-label="Placement" data-testid="signal-placement">
                    {g.placementLabel || <span class="muted">–</span>}
                  </td>
                  <td data-label="Delay">{delayRange(g)}</td>
                  <td data-label="Evidence">
                    {g.evidence.length ? g.evidence.map((e, j) => <Inert key={j} text={e} block />) : <span class="muted">–</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
