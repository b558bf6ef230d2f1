import { formatClassification, formatDelay, formatHeaders, formatNumber, formatSignal, formatTime } from '../format';
import { SESSION, type Hit, type SessionDetail } from '../queries';
import { Badge, Empty, ErrorBox, Inert, Link, Loading, useQuery } from '../ui';

export function SessionDetailView({ id }: { id: string }) {
  const q = useQuery<{ node: SessionDetail | null }>(SESSION, { id }, id);
  const s = q.data?.node;
  return (
    <section aria-labelledby="session-title">
      <p>
        <Link href="/sessions">← Sessions</Link>
      </p>
      <div class="page-head">
        <h1 id="session-title">
          Session <code>{id}</code>
        </h1>
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
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
              <dd>{formatClassification(s.classification)}</dd>
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
              <dd>{s.trapsTriggered.length ? s.trapsTriggered.map((t) => <Inert key={t} text={t} />) : <span class="muted">none</span>}</dd>
            </dl>
          </div>

          <div class="card">
            <h2>Signals ({s.signals?.length ?? 0})</h2>
            {!s.signals?.length ? (
              <Empty>No signal fired.</Empty>
            ) : (
              <div class="table-wrap">
                <table class="table" data-testid="signals-table">
                  <thead>
                    <tr>
                      <th scope="col">Signal</th>
                      <th scope="col">Tripwire</th>
                      <th scope="col">Placement</th>
                      <th scope="col">Delay</th>
                      <th scope="col">Evidence</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.signals.map((g, i) => (
                      <tr key={i}>
                        <td>
                          <span title={g.name}>{formatSignal(g.name)}</span>
                        </td>
                        <td>{g.tripwire ? <Badge kind="high">tripwire</Badge> : <span class="muted">behaviour</span>}</td>
                        <td>{g.placement ? <Inert text={g.placement} /> : <span class="muted">–</span>}</td>
                        <td>{formatDelay(g.delayMs)}</td>
                        <td>{g.detail ? <Inert text={g.detail} block /> : <span class="muted">–</span>}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </div>

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

          <HitList title="Callbacks" hits={s.hits.edges.map((e) => e.node).filter((h) => h.kind === 'callback')} empty="No callback: no hidden link was followed." />
          <HitList
            title={`Every hit${s.hits.totalCount > s.hits.edges.length ? ` (first ${s.hits.edges.length} of ${s.hits.totalCount})` : ''}`}
            hits={s.hits.edges.map((e) => e.node)}
            empty="No hit recorded."
          />
        </>
      )}
    </section>
  );
}

function HitList({ title, hits, empty }: { title: string; hits: Hit[]; empty: string }) {
  return (
    <div class="card">
      <h2>
        {title} ({hits.length})
      </h2>
      {hits.length === 0 ? (
        <Empty>{empty}</Empty>
      ) : (
        <ol class="hits">
          {hits.map((h) => (
            <li key={h.id} class="hit" data-testid="hit">
              <details>
                <summary>
                  <span class="hit-method">{h.method}</span> <Inert text={h.path + (h.query ? `?${h.query}` : '')} />{' '}
                  <span class="muted">
                    · {h.status} · {h.kind.replace('_', ' ')} · {formatTime(h.receivedAt)}
                  </span>
                  {h.signals.length ? <span class="muted"> · {h.signals.map(formatSignal).join(', ')}</span> : null}
                </summary>
                <dl class="facts">
                  <dt>Hit</dt>
                  <dd>
                    <code>{h.id}</code>
                  </dd>
                  <dt>Trap</dt>
                  <dd>{h.trapID ? <code>{h.trapID}</code> : <span class="muted">–</span>}</dd>
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
          ))}
        </ol>
      )}
    </div>
  );
}
