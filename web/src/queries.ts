// The GraphQL operations of the dashboard, and the shapes they return.
import { TRAP_KINDS } from './vocab.gen';

export interface Overview {
  totalHits24h: number;
  agentsDetected: number;
  tripwiresFired: number;
  promptsCaptured: number;
  activeTraps: number;
}
export interface SeverityCounts {
  critical: number;
  high: number;
  medium: number;
  low: number;
}
export interface TimelineBucket {
  hour: string;
  hits: number;
}
export interface AnalyticsData {
  analytics: { overview: Overview; severity: SeverityCounts; timeline: TimelineBucket[] };
}
export const ANALYTICS = `query Analytics { analytics {
  overview { totalHits24h agentsDetected tripwiresFired promptsCaptured activeTraps }
  severity { critical high medium low }
  timeline { hour hits } } }`;

export interface EventMessage {
  id: string;
  type: string;
  createdAt: string;
  data: Record<string, unknown>;
  cursor: string;
}
export const THREAT_EVENTS = `subscription ThreatEvents { events(types: ["threat.detected", "threat.escalated"]) { id type createdAt data cursor } }`;
export const RECENT_THREATS = `query RecentThreats { events(last: 20, where: {typeIn: ["threat.detected", "threat.escalated"]}, orderBy: {field: POSITION, direction: ASC}) {
  edges { cursor node { id type createdAt data } } } }`;

export interface SessionRow {
  id: string;
  sourceIP: string;
  userAgent: string;
  classification: string;
  score: number;
  confidence: number;
  severity: string;
  signalsFired: string[];
  firstSeen: string;
  lastSeen: string;
  hitCount: number;
  tripwiresFired: number;
  promptsCaptured: number;
  extractedModel: string;
  extractedOperator: string;
  trapsTriggered: string[];
  triageState: string;
  triagedBy: string;
  triagedByName: string;
  triagedAt: string | null;
}
const SESSION_FIELDS = `id sourceIP userAgent classification score confidence severity signalsFired firstSeen lastSeen
  hitCount tripwiresFired promptsCaptured extractedModel extractedOperator trapsTriggered triageState triagedBy triagedByName triagedAt`;

/** Sets the triage state of up to 100 sessions (read-write). */
export const TRIAGE_SESSIONS = `mutation TriageSessions($ids: [ID!]!, $state: TriageState!) {
  triageSessions(input: {ids: $ids, state: $state}) { changed sessions { id triageState triagedBy triagedByName triagedAt } } }`;

export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}
export interface SessionsData {
  sessions: { totalCount: number; totalCountExact: boolean; pageInfo: PageInfo; edges: { node: SessionRow }[] };
}
export const SESSIONS = `query Sessions($first: Int!, $after: Cursor, $where: SessionWhereInput) {
  sessions(first: $first, after: $after, where: $where, orderBy: {field: LAST_SEEN, direction: DESC}) {
    totalCount totalCountExact pageInfo { hasNextPage endCursor } edges { node { ${SESSION_FIELDS} } } } }`;

export interface Hit {
  id: string;
  trapID: string | null;
  method: string;
  path: string;
  query: string;
  headers: Record<string, unknown>;
  body: string;
  bodyTruncated: boolean;
  sourceIP: string;
  userAgent: string;
  receivedAt: string;
  kind: string;
  status: number;
  signals: string[];
}
export interface Signal {
  name: string;
  tripwire: boolean;
  placement: string;
  delayMs: number | null;
  detail: string;
  hitID: string;
  sourceHitID: string;
  createdAt: string;
  /** The placement in words, from the API ("lure in a page of your site: hidden link in …"). */
  placementLabel: string;
  /** The placement was a lure or snippet in the customer's own pages, not a decoy's. */
  lure: boolean;
}
export interface Prompt {
  text: string;
  model: string;
  operator: string;
  source: string;
  hitID: string;
  createdAt: string;
}
export interface SessionDetail extends SessionRow {
  /** The newest hits, oldest first, as REST's session detail has them (one resolver serves both). */
  hits: Hit[];
  hitsTruncated: boolean;
  signals: Signal[] | null;
  prompts: Prompt[] | null;
}
export interface SessionDetailData {
  session: SessionRow;
  hits: Hit[];
  hitsTruncated: boolean;
  signals: Signal[];
  prompts: Prompt[];
}
/** A session's detail from sessionDetail, the resolver REST's session detail calls too. */
export function sessionDetail(d: SessionDetailData): SessionDetail {
  return { ...d.session, hits: d.hits, hitsTruncated: d.hitsTruncated, signals: d.signals, prompts: d.prompts };
}
export const SESSION = `query Session($id: ID!) { sessionDetail(id: $id) { session { ${SESSION_FIELDS} } hitsTruncated
  hits { id trapID method path query headers body bodyTruncated sourceIP userAgent receivedAt kind status signals }
  signals { name tripwire placement delayMs detail hitID sourceHitID createdAt placementLabel lure }
  prompts { text model operator source hitID createdAt } } }`;

export interface OlderHitsData {
  node: { hits: { edges: { node: Hit }[]; pageInfo: { hasPreviousPage: boolean } } } | null;
}
/**
 * The page of a session's hits just older than a shown hit ($before, $beforeID), oldest first,
 * with the hit fields SESSION reads: 100, the API's largest page, priced 12,506 of the default
 * complexity limit of 20,000 (docs/security.md). In the detail's order, received then id: a
 * hit's id is minted once its request's body is read, so two hits received together can differ
 * in the two orders, and paging by id alone could skip or repeat a hit at the detail's edge.
 * (session_id, received_at, id) is an index of hits (ent/schema/hit.go). Written out whole, as
 * the server's tests read the dashboard's queries from this file.
 */
export const OLDER_HITS = `query OlderHits($session: ID!, $before: Time!, $beforeID: ID!) { node(id: $session) { ... on Session {
  hits(last: 100, orderBy: {field: RECEIVED_AT, direction: ASC}, where: {receivedAtLTE: $before, or: [{receivedAtLT: $before}, {idLT: $beforeID}]}) {
    edges { node { id trapID method path query headers body bodyTruncated sourceIP userAgent receivedAt kind status signals } }
    pageInfo { hasPreviousPage } } } } }`;

export interface Trap {
  id: string;
  name: string;
  path: string | null;
  type: string;
  description: string;
  /** What visitors read; empty: one generated for the trap's kind and site (see the preview). */
  publicTitle: string;
  active: boolean;
  createdAt: string;
  updatedAt: string;
  /** All-time hits; absent from mutations' answers. */
  hitCount?: number;
}
const TRAP_FIELDS = 'id name path type description publicTitle active createdAt updatedAt';
export const TRAP_TYPES = TRAP_KINDS.map((k) => k.name);
export interface TrapsData {
  traps: { totalCount: number; edges: { node: Trap }[] };
}
export const TRAPS = `query Traps { traps(first: 100, orderBy: {field: CREATED_AT, direction: DESC}) { totalCount edges { node { ${TRAP_FIELDS} hitCount } } } }`;
export const CREATE_TRAP = `mutation CreateTrap($input: CreateTrapInput!) { createTrap(input: $input) { ${TRAP_FIELDS} } }`;
export const UPDATE_TRAP = `mutation UpdateTrap($id: ID!, $input: UpdateTrapInput!) { updateTrap(id: $id, input: $input) { ${TRAP_FIELDS} } }`;
export const DELETE_TRAP = `mutation DeleteTrap($id: ID!) { deleteTrap(id: $id) { id deleted } }`;

/** A trap's decoy as the listener would send it; nothing is recorded and its tokens are inert. */
export interface TrapPreview {
  status: number;
  contentType: string;
  body: string;
  path: string;
  publicTitle: string;
  publicTitleGenerated: boolean;
}
export const TRAP_PREVIEW = `query TrapPreview($id: ID!) { trapPreview(id: $id) { status contentType body path publicTitle publicTitleGenerated } }`;

export interface ApiKey {
  id: string;
  name: string;
  scope: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** When the key stops working, if it was given an expiry. */
  expiresAt: string | null;
  /** The one site a deploy key may manage the traps of. */
  siteID: string | null;
}
export const API_KEY_SCOPES = ['READ_ONLY', 'READ_WRITE', 'ADMIN'] as const;
const KEY_FIELDS = 'id name scope prefix createdAt lastUsedAt revokedAt expiresAt siteID';
export interface ApiKeysData {
  apiKeys: { totalCount: number; edges: { node: ApiKey }[] };
}
export const API_KEYS = `query ApiKeys { apiKeys(first: 100, orderBy: {field: CREATED_AT, direction: DESC}) { totalCount edges { node { ${KEY_FIELDS} } } } }`;
export const CREATE_API_KEY = `mutation CreateApiKey($input: CreateApiKeyInput!) { createApiKey(input: $input) { key apiKey { ${KEY_FIELDS} } } }`;
export const REVOKE_API_KEY = `mutation RevokeApiKey($id: ID!) { revokeApiKey(id: $id) { ${KEY_FIELDS} } }`;

/** Who the token is: its organization and scope, in one request. */
export const IDENTIFY = `query Identify { organization { id name } viewer { scope } }`;

/** A trap as a session refers to it (name and path; a deleted trap has its id only). */
export interface TrapRef {
  id: string;
  name: string;
  path: string | null;
  type: string;
  deleted: boolean;
}
export interface ScorePart {
  signal: string;
  meaning: string;
  tripwire: boolean;
  weight: number;
  count: number;
  points: number;
  countsOnce: boolean;
  fromUserAgent: boolean;
}
/** How the engine reached the verdict, from its own tables (detect.Explain): nothing here is computed in TypeScript. */
export interface VerdictExplanation {
  classification: string;
  score: number;
  confidence: number;
  severity: string;
  matchesStored: boolean;
  rawScore: number;
  floor: number;
  ceiling: number;
  rule: number;
  ruleText: string;
  detectionThreshold: number;
  parts: ScorePart[];
}
export interface SignalGroup {
  signal: string;
  tripwire: boolean;
  placement: string;
  placementLabel: string;
  count: number;
  minDelayMs: number | null;
  maxDelayMs: number | null;
  evidence: string[];
}
/** What a session's connections proved of its client (fingerprints), and the stack family. */
export interface ClientStack {
  ja4: string | null;
  h2Fingerprint: string | null;
  headerOrder: string | null;
  family: string | null;
  hits: number;
}
export interface SessionInsight {
  traps: TrapRef[];
  clientStacks: ClientStack[];
  explanation: VerdictExplanation;
  signalGroups: SignalGroup[];
  /** What its signed requests proved (Web Bot Auth): "verified: <agent> (key <kid>)" or why not; null: none signed. */
  signature: string | null;
}
export const SESSION_INSIGHT = `query SessionInsight($id: ID!) { node(id: $id) { ... on Session {
  traps { id name path type deleted }
  clientStacks { ja4 h2Fingerprint headerOrder family hits }
  explanation { classification score confidence severity matchesStored rawScore floor ceiling rule ruleText detectionThreshold
    parts { signal meaning tripwire weight count points countsOnce fromUserAgent } }
  signalGroups { signal tripwire placement placementLabel count minDelayMs maxDelayMs evidence }
  signature } } }`;

export interface Campaign {
  promptHash: string;
  operator: string;
  model: string;
  sessionCount: number;
  promptCount: number;
  firstSeen: string;
  lastSeen: string;
  sessions: { id: string; sourceIP: string; userAgent: string; classification: string; severity: string; lastSeen: string }[];
  addresses: string[];
  traps: TrapRef[];
}
export interface CampaignsData {
  campaigns: { pageInfo: PageInfo; edges: { cursor: string; node: Campaign }[] };
}
export const CAMPAIGNS = `query Campaigns($first: Int!, $after: Cursor) { campaigns(first: $first, after: $after) {
  pageInfo { hasNextPage endCursor } edges { cursor node { promptHash operator model sessionCount promptCount firstSeen lastSeen
    sessions(first: 10) { id sourceIP userAgent classification severity lastSeen } addresses(first: 20) traps { id name path type deleted } } } } }`;

export interface Ja4Campaign {
  id: string;
  ja4: string;
  clientStack: string | null;
  sessionCount: number;
  hitCount: number;
  firstSeen: string;
  lastSeen: string;
  sessions: { id: string; sourceIP: string; userAgent: string; classification: string; severity: string; lastSeen: string }[];
  addresses: string[];
}
export interface Ja4CampaignsData {
  ja4Campaigns: { pageInfo: PageInfo; edges: { cursor: string; node: Ja4Campaign }[] };
}
export const JA4_CAMPAIGNS = `query Ja4Campaigns($first: Int!, $after: Cursor) { ja4Campaigns(first: $first, after: $after) {
  pageInfo { hasNextPage endCursor } edges { cursor node { id ja4 clientStack sessionCount hitCount firstSeen lastSeen
    sessions(first: 10) { id sourceIP userAgent classification severity lastSeen } addresses(first: 20) } } } }`;

export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string;
  eventTypes: string[];
  active: boolean;
  format: string;
  throttleMinutes: number;
  previousSecretExpiresAt: string | null;
  failingSince: string | null;
  disabledReason: string;
  createdAt: string;
  updatedAt: string;
}
const ENDPOINT_FIELDS = 'id url description eventTypes active format throttleMinutes previousSecretExpiresAt failingSince disabledReason createdAt updatedAt';
export interface WebhookEndpointsData {
  webhookEndpoints: { totalCount: number; edges: { node: WebhookEndpoint }[] };
}
export const WEBHOOK_ENDPOINTS = `query WebhookEndpoints { webhookEndpoints(first: 50, orderBy: {field: CREATED_AT, direction: DESC}) { totalCount edges { node { ${ENDPOINT_FIELDS} } } } }`;
export const CREATE_WEBHOOK = `mutation CreateWebhook($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret warning endpoint { ${ENDPOINT_FIELDS} } } }`;
export const UPDATE_WEBHOOK = `mutation UpdateWebhook($id: ID!, $input: UpdateWebhookEndpointInput!) { updateWebhookEndpoint(id: $id, input: $input) { ${ENDPOINT_FIELDS} } }`;
export const DELETE_WEBHOOK = `mutation DeleteWebhook($id: ID!) { deleteWebhookEndpoint(id: $id) { id deleted } }`;
export const ROTATE_WEBHOOK = `mutation RotateWebhook($id: ID!) { rotateWebhookSecret(id: $id) { secret endpoint { ${ENDPOINT_FIELDS} } } }`;
export const PING_WEBHOOK = `mutation PingWebhook($id: ID!) { pingWebhookEndpoint(id: $id) { id } }`;
export const REDELIVER_WEBHOOK = `mutation Redeliver($id: ID!) { redeliverWebhook(deliveryID: $id) { id } }`;

export interface WebhookAttempt {
  at: string;
  statusCode: number;
  latencyMs: number;
  error: string;
  response: string;
}
export interface WebhookDelivery {
  id: string;
  messageID: string;
  eventType: string;
  status: string;
  attemptCount: number;
  nextAttemptAt: string;
  deliveredAt: string | null;
  lastStatusCode: number | null;
  lastError: string;
  createdAt: string;
  attempts: WebhookAttempt[];
}
export interface WebhookDeliveriesData {
  webhookDeliveries: { totalCount: number; pageInfo: PageInfo; edges: { node: WebhookDelivery }[] };
}
export const WEBHOOK_DELIVERIES = `query WebhookDeliveries($id: ID!, $after: Cursor) { webhookDeliveries(endpointID: $id, first: 10, after: $after) {
  totalCount pageInfo { hasNextPage endCursor } edges { node { id messageID eventType status attemptCount nextAttemptAt deliveredAt lastStatusCode lastError createdAt
    attempts { at statusCode latencyMs error response } } } } }`;
