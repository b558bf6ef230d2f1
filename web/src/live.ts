// Live events over the GraphQL WebSocket (graphql-transport-ws protocol, graphql-ws client).
// The token goes in connection_init, never in the URL. The client reconnects on its own and
// resumes after the last cursor seen, so no event is lost or repeated across a drop.
import { createClient, type Client } from 'graphql-ws';
import type { EventMessage } from './queries';

export type LiveStatus = 'connecting' | 'live' | 'reconnecting' | 'closed' | 'refused';

/** ws:// or wss:// URL of /graphql on the page's own origin. */
export function graphqlWebSocketURL(loc: { protocol: string; host: string }): string {
  return `${loc.protocol === 'https:' ? 'wss:' : 'ws:'}//${loc.host}/graphql`;
}

export interface LiveOptions {
  token: string;
  types: string[];
  after?: string | null;
  onEvent: (e: EventMessage) => void;
  onStatus: (s: LiveStatus) => void;
  onUnauthenticated: () => void;
}

/** Subscribes to events; returns a function that ends the subscription and closes the socket. */
export function subscribeEvents(opts: LiveOptions): () => void {
  let after = opts.after ?? null;
  let unsubscribe: (() => void) | null = null;
  let closed = false;
  const client: Client = createClient({
    url: graphqlWebSocketURL(location),
    connectionParams: { Authorization: `Bearer ${opts.token}` },
    lazy: false,
    retryAttempts: Infinity,
    shouldRetry: (e) => !isAuthClose(e),
    retryWait: async (n) => {
      await new Promise((r) => setTimeout(r, Math.min(30_000, 1000 * 2 ** Math.min(n, 5)) + Math.random() * 500));
    },
    on: {
      connecting: (isRetry) => opts.onStatus(isRetry ? 'reconnecting' : 'connecting'),
      connected: () => {
        opts.onStatus('live');
        // Resubscribe from the last cursor after every (re)connection.
        unsubscribe?.();
        unsubscribe = start();
      },
      closed: (e) => {
        if (closed) return;
        if (isAuthClose(e)) {
          opts.onStatus('refused');
          opts.onUnauthenticated();
        } else opts.onStatus('reconnecting');
      },
    },
  });
  const start = () =>
    client.subscribe<{ events: EventMessage }>(
      {
        query: `subscription Live($types: [String!], $after: Cursor) { events(types: $types, after: $after) { id type createdAt data cursor } }`,
        variables: { types: opts.types, after },
      },
      {
        next: (msg) => {
          const e = msg.data?.events;
          if (!e) return;
          after = e.cursor;
          opts.onEvent(e);
        },
        error: () => {
          /* the socket's closed handler reports the state */
        },
        complete: () => {},
      },
    );
  return () => {
    closed = true;
    unsubscribe?.();
    opts.onStatus('closed');
    void client.dispose();
  };
}

function isAuthClose(e: unknown): boolean {
  const code = (e as { code?: number } | null)?.code;
  return code === 4401 || code === 4403;
}
