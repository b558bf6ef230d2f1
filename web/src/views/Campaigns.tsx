import { useState } from 'preact/hooks';
import { formatAgo, formatClassification, formatNumber, formatTime } from '../format';
import { CAMPAIGNS, JA4_CAMPAIGNS, type CampaignsData, type Ja4CampaignsData, type TrapRef } from '../queries';
import { Badge, Empty, ErrorBox, Inert, Link, Loading, Pager, useQuery } from '../ui';

const PAGE = 20;

/** A trap by name and path; a deleted one by its id. */
export function TrapName({ t }: { t: TrapRef }) {
  if (t.deleted)
    return (
      <span class="muted">
        deleted trap <code>{t.id}</code>
      </span>
    );
  return (
    <span class="trap-name">
      <Inert text={t.name} /> {t.path ? <Inert text={t.path} /> : <span class="muted">({t.type})</span>}
    </span>
  );
}

/** The campaigns page: sessions grouped by the leaked prompt (the default) or by their TLS client (?by=ja4). */
export function CampaignsView({ search = '' }: { search?: string }) {
  const byJA4 = new URLSearchParams(search).get('by') === 'ja4';
  return (
    <section aria-labelledby="campaigns-title">
      <div class="page-head">
        <h1 id="campaigns-title">Campaigns</h1>
      </div>
      <nav class="group-by" aria-label="Group campaigns by">
        <Link href="/campaigns" aria-current={byJA4 ? undefined : 'page'}>
          By leaked prompt
        </Link>
        <Link href="/campaigns?by=ja4" aria-current={byJA4 ? 'page' : undefined}>
          By TLS client (JA4)
        </Link>
      </nav>
      {byJA4 ? <Ja4Campaigns /> : <PromptCampaigns />}
    </section>
  );
}

function PromptCampaigns() {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors[cursors.length - 1] ?? null;
  const q = useQuery<CampaignsData>(CAMPAIGNS, { first: PAGE, after }, String(after));
  const conn = q.data?.campaigns;
  return (
    <>
      <div class="page-head">
        <span />
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
          Refresh
        </button>
      </div>
      <p class="muted">
        Sessions that leaked the same system prompt (by its hash) with the same extracted operator and model: one agent fleet, however many
        addresses it uses. Most recently active first.
      </p>
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!conn && q.loading && <Loading />}
      {conn && conn.edges.length === 0 && <Empty>No campaigns yet: no visitor has leaked a prompt.</Empty>}
      {conn && conn.edges.length > 0 && (
        <ul class="trap-list" aria-label="Campaigns">
          {conn.edges.map(({ cursor, node: c }) => (
            <li key={cursor} class="card" data-testid="campaign">
              <div class="trap-head">
                <h2>
                  {c.operator ? <Inert text={c.operator} /> : <span class="muted">unknown operator</span>} ·{' '}
                  {c.model ? <Inert text={c.model} /> : <span class="muted">unknown model</span>}
                </h2>
              </div>
              <dl class="facts">
                <dt>Prompt hash</dt>
                <dd>
                  <code title={c.promptHash}>{c.promptHash.slice(0, 16)}…</code>
                </dd>
                <dt>Sessions</dt>
                <dd data-testid="campaign-sessions">
                  {formatNumber(c.sessionCount)} ({formatNumber(c.promptCount)} prompt{c.promptCount === 1 ? '' : 's'} captured)
                </dd>
                <dt>First seen</dt>
                <dd>{formatTime(c.firstSeen)}</dd>
                <dt>Last seen</dt>
                <dd>
                  {formatTime(c.lastSeen)} <span class="muted">({formatAgo(c.lastSeen)})</span>
                </dd>
                <dt>Addresses</dt>
                <dd>
                  {c.addresses.map((a) => (
                    <Inert key={a} text={a} />
                  ))}
                  {c.addresses.length >= 20 ? <span class="muted"> and more</span> : null}
                </dd>
                <dt>Traps</dt>
                <dd>{c.traps.length ? c.traps.map((t) => <TrapName key={t.id} t={t} />) : <span class="muted">none</span>}</dd>
              </dl>
              <h3 class="sub">Sessions{c.sessionCount > c.sessions.length ? ` (latest ${c.sessions.length})` : ''}</h3>
              <ul class="campaign-sessions">
                {c.sessions.map((s) => (
                  <li key={s.id}>
                    <Link href={`/sessions/${s.id}`}>
                      {formatClassification(s.classification)} from <Inert text={s.sourceIP} />
                    </Link>{' '}
                    <Badge kind={s.severity}>{s.severity}</Badge> <span class="muted">{formatAgo(s.lastSeen)}</span>
                  </li>
                ))}
              </ul>
            </li>
          ))}
        </ul>
      )}
      {conn && (cursors.length > 1 || conn.pageInfo.hasNextPage) && (
        <Pager cursors={cursors} setCursors={setCursors} pageInfo={conn.pageInfo} loading={q.loading} />
      )}
    </>
  );
}

/** Sessions grouped by the JA4 of their TLS ClientHello: one client stack behind many addresses and user agents. */
function Ja4Campaigns() {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors[cursors.length - 1] ?? null;
  const q = useQuery<Ja4CampaignsData>(JA4_CAMPAIGNS, { first: PAGE, after }, `ja4:${after}`);
  const conn = q.data?.ja4Campaigns;
  return (
    <>
      <div class="page-head">
        <span />
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
          Refresh
        </button>
      </div>
      <p class="muted">
        Sessions whose hits came from the same TLS client, by the JA4 fingerprint of its ClientHello: one tool or fleet, however many
        addresses and user agents it shows. Only hits over HTTPS (or passed by a CDN named with --trap-ja4-header) have one. Most
        recently active first.
      </p>
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!conn && q.loading && <Loading />}
      {conn && conn.edges.length === 0 && <Empty>No TLS clients yet: no hit has come over HTTPS.</Empty>}
      {conn && conn.edges.length > 0 && (
        <ul class="trap-list" aria-label="JA4 campaigns">
          {conn.edges.map(({ cursor, node: c }) => (
            <li key={cursor} class="card" data-testid="ja4-campaign">
              <div class="trap-head">
                <h2>
                  <code>{c.ja4}</code>
                </h2>
              </div>
              <dl class="facts">
                <dt>Client stack</dt>
                <dd data-testid="ja4-stack">{c.clientStack ? <strong>{c.clientStack}</strong> : <span class="muted">unknown</span>}</dd>
                <dt>Sessions</dt>
                <dd data-testid="ja4-campaign-sessions">
                  {formatNumber(c.sessionCount)} ({formatNumber(c.hitCount)} hit{c.hitCount === 1 ? '' : 's'})
                </dd>
                <dt>First seen</dt>
                <dd>{formatTime(c.firstSeen)}</dd>
                <dt>Last seen</dt>
                <dd>
                  {formatTime(c.lastSeen)} <span class="muted">({formatAgo(c.lastSeen)})</span>
                </dd>
                <dt>Addresses</dt>
                <dd>
                  {c.addresses.map((a) => (
                    <Inert key={a} text={a} />
                  ))}
                  {c.addresses.length >= 20 ? <span class="muted"> and more</span> : null}
                </dd>
              </dl>
              <h3 class="sub">Sessions{c.sessionCount > c.sessions.length ? ` (latest ${c.sessions.length})` : ''}</h3>
              <ul class="campaign-sessions">
                {c.sessions.map((s) => (
                  <li key={s.id}>
                    <Link href={`/sessions/${s.id}`}>
                      {formatClassification(s.classification)} from <Inert text={s.sourceIP} />
                    </Link>{' '}
                    as <Inert text={s.userAgent || 'no user agent'} /> <Badge kind={s.severity}>{s.severity}</Badge>{' '}
                    <span class="muted">{formatAgo(s.lastSeen)}</span>
                  </li>
                ))}
              </ul>
              <p>
                <Link href={`/sessions?ja4=${encodeURIComponent(c.ja4)}`}>All sessions from this client</Link>
              </p>
            </li>
          ))}
        </ul>
      )}
      {conn && (cursors.length > 1 || conn.pageInfo.hasNextPage) && (
        <Pager cursors={cursors} setCursors={setCursors} pageInfo={conn.pageInfo} loading={q.loading} />
      )}
    </>
  );
}
