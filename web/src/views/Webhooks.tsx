import { useEffect, useState } from 'preact/hooks';
import { ApiError, describeError, gql } from '../api';
import { formatAgo, formatNumber, formatTime } from '../format';
import {
  CREATE_WEBHOOK,
  DELETE_WEBHOOK,
  PING_WEBHOOK,
  REDELIVER_WEBHOOK,
  ROTATE_WEBHOOK,
  UPDATE_WEBHOOK,
  WEBHOOK_DELIVERIES,
  WEBHOOK_ENDPOINTS,
  type WebhookDeliveriesData,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointsData,
} from '../queries';
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Inert, Loading, useQuery } from '../ui';

const FORMATS = ['json', 'slack', 'teams', 'splunk_hec', 'ecs', 'cef'] as const;
const FORMAT_HELP: Record<string, string> = {
  json: 'signed JSON (Standard Webhooks)',
  slack: 'Slack incoming webhook',
  teams: 'Microsoft Teams',
  splunk_hec: 'Splunk HTTP Event Collector',
  ecs: 'Elastic Common Schema (NDJSON)',
  cef: 'CEF over syslog (a syslog+tcp:// or syslog+tls:// address)',
};

/** "threat.detected, trap.*" → ["threat.detected", "trap.*"]. */
export function parseEventTypes(s: string): string[] {
  return [...new Set(s.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean))];
}

/** A secret shown once, about the endpoint it belongs to. */
interface Shown {
  endpointID: string;
  secret: string;
  rotated: boolean;
  /** Why deliveries will fail (a private address) and how an operator allows it. */
  warning?: string;
}

export function WebhooksView({ canWrite }: { canWrite: boolean }) {
  const q = useQuery<WebhookEndpointsData>(WEBHOOK_ENDPOINTS, undefined, 'webhooks');
  const [shown, setShown] = useState<Shown | null>(null);
  const endpoints = q.data?.webhookEndpoints.edges.map((e) => e.node) ?? [];
  // The secret banner describes one endpoint: it goes when that endpoint does.
  const secretFor = shown && endpoints.find((e) => e.id === shown.endpointID);
  return (
    <section aria-labelledby="webhooks-title">
      <p class="muted">Settings</p>
      <div class="page-head">
        <h1 id="webhooks-title">Webhooks</h1>
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
          Refresh
        </button>
      </div>
      {canWrite ? (
        <EndpointForm
          title="New endpoint"
          submitLabel="Create endpoint"
          onSubmit={async (input) => {
            const d = await gql<{ createWebhookEndpoint: { secret: string; warning: string | null; endpoint: WebhookEndpoint } }>(CREATE_WEBHOOK, { input });
            setShown({
              endpointID: d.createWebhookEndpoint.endpoint.id,
              secret: d.createWebhookEndpoint.secret,
              rotated: false,
              warning: d.createWebhookEndpoint.warning ?? undefined,
            });
            q.reload();
          }}
        />
      ) : (
        <p class="muted">Your key is read-only: you can look at endpoints and deliveries but not change them.</p>
      )}
      {shown && secretFor && (
        <div class="card new-key" role="alert" data-testid="new-secret">
          <h2>{shown.rotated ? 'Copy the new signing secret now' : 'Copy the signing secret now'}</h2>
          <p>
            <strong>This is the only time it is shown.</strong> Receivers verify each delivery's <code>webhook-signature</code> with it
            (Standard Webhooks).
            {shown.rotated ? ' The previous secret stays valid for 24 hours, so receivers can switch over.' : ''}
          </p>
          {shown.warning && (
            <p class="state error" data-testid="new-endpoint-warning">
              {shown.warning}
            </p>
          )}
          <p class="key-line">
            <code class="secret" data-testid="new-secret-value">
              {shown.secret}
            </code>{' '}
            <CopyButton text={shown.secret} label="Copy secret" />
          </p>
          <button type="button" class="secondary" onClick={() => setShown(null)}>
            I have stored it
          </button>
        </div>
      )}
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!q.data && q.loading && <Loading />}
      {q.data && endpoints.length === 0 && <Empty>No webhook endpoints yet. Create one to receive threat events as they happen.</Empty>}
      {endpoints.length > 0 && (
        <ul class="trap-list" aria-label="Webhook endpoints">
          {endpoints.map((ep) => (
            <EndpointItem
              key={ep.id}
              ep={ep}
              canWrite={canWrite}
              onChanged={q.reload}
              onSecret={(secret) => setShown({ endpointID: ep.id, secret, rotated: true })}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

interface EndpointInput {
  url: string;
  description: string;
  eventTypes: string[];
  format: string;
  throttleMinutes: number;
}

function EndpointForm(props: {
  title: string;
  submitLabel: string;
  initial?: WebhookEndpoint;
  onSubmit: (input: EndpointInput) => Promise<void>;
  onCancel?: () => void;
}) {
  const init = props.initial;
  const [url, setURL] = useState(init?.url ?? '');
  const [description, setDescription] = useState(init?.description ?? '');
  const [types, setTypes] = useState(init?.eventTypes.join(', ') ?? 'threat.detected, threat.escalated');
  const [format, setFormat] = useState(init?.format ?? 'json');
  const [throttle, setThrottle] = useState(String(init?.throttleMinutes ?? 0));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const id = init ? `edit-${init.id}` : 'create-webhook';
  return (
    <form
      class="card form"
      aria-labelledby={`${id}-title`}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError('');
        try {
          await props.onSubmit({
            url: url.trim(),
            description: description.trim(),
            eventTypes: parseEventTypes(types),
            format,
            throttleMinutes: Number.parseInt(throttle, 10) || 0,
          });
          if (!init) {
            setURL('');
            setDescription('');
          }
        } catch (err) {
          setError(describeError(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id={`${id}-title`}>{props.title}</h2>
      <div class="form-row">
        <label>
          URL
          <input type="url" required maxLength={2048} value={url} onInput={(e) => setURL(e.currentTarget.value)} placeholder="https://hooks.example.com/flytrap" />
        </label>
        <label>
          Description
          <input maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </label>
        <label>
          Event types
          <input value={types} onInput={(e) => setTypes(e.currentTarget.value)} aria-describedby={`${id}-types-help`} />
        </label>
        <label>
          Format
          <select value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
            {FORMATS.map((f) => (
              <option key={f} value={f}>
                {f} — {FORMAT_HELP[f]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Throttle (minutes)
          <input type="number" min={0} max={1440} value={throttle} onInput={(e) => setThrottle(e.currentTarget.value)} />
        </label>
      </div>
      <p class="muted small" id={`${id}-types-help`}>
        Comma-separated: <code>threat.detected</code>, <code>threat.escalated</code>, <code>trap.*</code>… Empty sends every event.
      </p>
      {error && (
        <p class="state error" role="alert">
          {error}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy || !url.trim()}>
          {busy ? 'Saving…' : props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" class="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** Seconds left of a rate limit, counting down to 0. */
function useCountdown(): [number, (s: number) => void] {
  const [until, setUntil] = useState(0);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (until <= now) return;
    const t = window.setTimeout(() => setNow(Date.now()), 1000);
    return () => clearTimeout(t);
  }, [until, now]);
  const left = Math.max(0, Math.ceil((until - now) / 1000));
  return [left, (s: number) => {
    setNow(Date.now());
    setUntil(Date.now() + s * 1000);
  }];
}

/** The outcome of a ping or redelivery: done, refused for a while, or failed. */
function ActionResult({ ok, error, wait }: { ok: string; error: unknown; wait: number }) {
  if (error instanceof ApiError && error.code === 'RATE_LIMITED') {
    return (
      <p class="state warn" role="alert" data-testid="rate-limited">
        Rate limited: this endpoint was pinged or redelivered to too often.{' '}
        {wait > 0 ? `Try again in ${wait} s.` : 'You can try again now.'}
      </p>
    );
  }
  if (error) return <ErrorBox error={error} />;
  if (ok)
    return (
      <p class="state ok" role="status">
        {ok}
      </p>
    );
  return null;
}

function EndpointItem(props: { ep: WebhookEndpoint; canWrite: boolean; onChanged: () => void; onSecret: (s: string) => void }) {
  const { ep, canWrite, onChanged } = props;
  const [editing, setEditing] = useState(false);
  const [showLog, setShowLog] = useState(false);
  const [logTick, setLogTick] = useState(0);
  const [ok, setOK] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [wait, startWait] = useCountdown();
  const run = async (what: () => Promise<string>) => {
    setOK('');
    setError(null);
    try {
      setOK(await what());
      setLogTick((t) => t + 1);
    } catch (e) {
      setError(e);
      if (e instanceof ApiError && e.code === 'RATE_LIMITED') startWait(e.retryAfter ?? 60);
    }
  };
  return (
    <li class="card" data-testid="webhook" data-webhook-id={ep.id}>
      <div class="trap-head">
        <h3>
          <Inert text={ep.url} />
        </h3>
        {ep.active ? <Badge kind="active">active</Badge> : <Badge kind="inactive">inactive</Badge>}
        {ep.failingSince && <Badge kind="high">failing since {formatTime(ep.failingSince)}</Badge>}
      </div>
      {ep.description && (
        <p>
          <Inert text={ep.description} />
        </p>
      )}
      <dl class="facts">
        <dt>Events</dt>
        <dd>{ep.eventTypes.length ? ep.eventTypes.map((t) => <Inert key={t} text={t} />) : 'every event'}</dd>
        <dt>Format</dt>
        <dd>{ep.format}</dd>
        <dt>Throttle</dt>
        <dd>{ep.throttleMinutes ? `${ep.throttleMinutes} min` : 'none'}</dd>
        <dt>Created</dt>
        <dd>{formatTime(ep.createdAt)}</dd>
        {ep.previousSecretExpiresAt && (
          <>
            <dt>Previous secret</dt>
            <dd>valid until {formatTime(ep.previousSecretExpiresAt)}</dd>
          </>
        )}
        {ep.disabledReason && (
          <>
            <dt>Disabled because</dt>
            <dd>
              <Inert text={ep.disabledReason} />
            </dd>
          </>
        )}
      </dl>
      {editing && canWrite ? (
        <EndpointForm
          title="Edit endpoint"
          submitLabel="Save"
          initial={ep}
          onCancel={() => setEditing(false)}
          onSubmit={async (input) => {
            await gql(UPDATE_WEBHOOK, { id: ep.id, input });
            setEditing(false);
            onChanged();
          }}
        />
      ) : null}
      <div class="actions">
        {canWrite && !editing && (
          <button type="button" class="secondary" onClick={() => setEditing(true)}>
            Edit
          </button>
        )}
        {canWrite && (
          <button type="button" class="secondary" disabled={wait > 0} onClick={() => run(async () => (await gql(PING_WEBHOOK, { id: ep.id }), 'Ping queued: see the delivery log.'))}>
            Send ping
          </button>
        )}
        {canWrite && (
          <button
            type="button"
            class="secondary"
            onClick={() =>
              run(async () => {
                await gql(UPDATE_WEBHOOK, { id: ep.id, input: { active: !ep.active } });
                onChanged();
                return ep.active ? 'Endpoint deactivated.' : 'Endpoint activated.';
              })
            }
          >
            {ep.active ? 'Deactivate' : 'Activate'}
          </button>
        )}
        {canWrite && (
          <ConfirmButton
            label="Rotate secret"
            confirmLabel="Rotate"
            question="Make a new signing secret? The old one stays valid for 24 hours."
            onConfirm={() =>
              run(async () => {
                const d = await gql<{ rotateWebhookSecret: { secret: string } }>(ROTATE_WEBHOOK, { id: ep.id });
                props.onSecret(d.rotateWebhookSecret.secret);
                onChanged();
                return '';
              })
            }
          />
        )}
        <button type="button" class="secondary" aria-expanded={showLog} onClick={() => setShowLog((v) => !v)}>
          {showLog ? 'Hide deliveries' : 'Deliveries'}
        </button>
        {canWrite && (
          <ConfirmButton
            label="Delete"
            confirmLabel="Delete endpoint"
            question="Delete this endpoint and its delivery log?"
            danger
            onConfirm={() =>
              run(async () => {
                await gql(DELETE_WEBHOOK, { id: ep.id });
                onChanged();
                return '';
              })
            }
          />
        )}
      </div>
      <ActionResult ok={ok} error={error} wait={wait} />
      {showLog && <DeliveryLog endpointID={ep.id} tick={logTick} canWrite={canWrite} onRedelivered={() => setLogTick((t) => t + 1)} />}
    </li>
  );
}

function DeliveryLog(props: { endpointID: string; tick: number; canWrite: boolean; onRedelivered: () => void }) {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors[cursors.length - 1] ?? null;
  const q = useQuery<WebhookDeliveriesData>(WEBHOOK_DELIVERIES, { id: props.endpointID, after }, `${props.endpointID} ${after} ${props.tick}`);
  const conn = q.data?.webhookDeliveries;
  return (
    <div class="deliveries" data-testid="delivery-log">
      <div class="page-head">
        <h4>Delivery log{conn ? ` (${formatNumber(conn.totalCount)})` : ''}</h4>
        <button type="button" class="secondary" onClick={q.reload} disabled={q.loading}>
          Refresh log
        </button>
      </div>
      {q.error ? <ErrorBox error={q.error} retry={q.reload} /> : null}
      {!conn && q.loading && <Loading />}
      {conn && conn.edges.length === 0 && <Empty>No deliveries yet. Send a ping to try the endpoint.</Empty>}
      {conn && conn.edges.length > 0 && (
        <ol class="hits">
          {conn.edges.map(({ node: d }) => (
            <DeliveryItem key={d.id} d={d} canWrite={props.canWrite} onRedelivered={props.onRedelivered} />
          ))}
        </ol>
      )}
      {conn && (cursors.length > 1 || conn.pageInfo.hasNextPage) && (
        <nav class="pager" aria-label="Delivery pages">
          <button type="button" class="secondary" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
            ← Newer
          </button>
          <button
            type="button"
            class="secondary"
            disabled={!conn.pageInfo.hasNextPage || !conn.pageInfo.endCursor}
            onClick={() => setCursors((c) => [...c, conn.pageInfo.endCursor])}
          >
            Older →
          </button>
        </nav>
      )}
    </div>
  );
}

const STATUS_KIND: Record<string, string> = { SUCCEEDED: 'active', FAILED: 'critical', PENDING: 'medium' };

function DeliveryItem({ d, canWrite, onRedelivered }: { d: WebhookDelivery; canWrite: boolean; onRedelivered: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [ok, setOK] = useState('');
  const [wait, startWait] = useCountdown();
  return (
    <li class="hit" data-testid="delivery">
      <details>
        <summary>
          <Badge kind={STATUS_KIND[d.status] ?? 'low'}>{d.status.toLowerCase()}</Badge> <Inert text={d.eventType} />{' '}
          <span class="muted">
            · {d.attemptCount} attempt{d.attemptCount === 1 ? '' : 's'}
            {d.lastStatusCode ? ` · HTTP ${d.lastStatusCode}` : ''} ·{' '}
            <time dateTime={d.createdAt} title={formatTime(d.createdAt)}>
              {formatAgo(d.createdAt)}
            </time>
          </span>
        </summary>
        <dl class="facts">
          <dt>Delivery</dt>
          <dd>
            <code>{d.id}</code> (webhook-id <code>{d.messageID}</code>)
          </dd>
          {d.status === 'PENDING' && (
            <>
              <dt>Next attempt</dt>
              <dd>{formatTime(d.nextAttemptAt)}</dd>
            </>
          )}
          {d.deliveredAt && (
            <>
              <dt>Delivered</dt>
              <dd>{formatTime(d.deliveredAt)}</dd>
            </>
          )}
        </dl>
        {d.attempts.length === 0 ? (
          <Empty>Not tried yet.</Empty>
        ) : (
          <ol class="attempts" aria-label="Attempts">
            {d.attempts.map((a, i) => (
              <li key={i} class="attempt" data-testid="attempt">
                <span class="attempt-head">
                  #{i + 1} · {formatTime(a.at)} · {a.statusCode ? `HTTP ${a.statusCode}` : 'no response'} · {formatNumber(a.latencyMs)} ms
                </span>
                {a.error && (
                  <span class="attempt-error">
                    Error: <Inert text={a.error} />
                  </span>
                )}
                {a.response && <Inert text={a.response} block />}
              </li>
            ))}
          </ol>
        )}
      </details>
      {canWrite && d.status === 'FAILED' && (
        <div class="actions">
          <button
            type="button"
            class="secondary"
            disabled={wait > 0}
            onClick={async () => {
              setError(null);
              setOK('');
              try {
                await gql(REDELIVER_WEBHOOK, { id: d.id });
                setOK('Redelivery queued.');
                onRedelivered();
              } catch (e) {
                setError(e);
                if (e instanceof ApiError && e.code === 'RATE_LIMITED') startWait(e.retryAfter ?? 60);
              }
            }}
          >
            Redeliver
          </button>
        </div>
      )}
      <ActionResult ok={ok} error={error} wait={wait} />
    </li>
  );
}
