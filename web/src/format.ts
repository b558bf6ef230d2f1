// Formatting of figures, times and attacker-supplied text for display. Everything here
// returns plain strings: views render them as text nodes, never as markup.

const numberFormat = new Intl.NumberFormat('en-US');

/** 12345 → "12,345"; non-finite → "–". */
export function formatNumber(n: number | null | undefined): string {
  return typeof n === 'number' && Number.isFinite(n) ? numberFormat.format(n) : '–';
}

/** An ISO time as "2026-11-22 09:15:02 UTC" (UTC, so every reader sees the same). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '–';
  return d.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC').replace(/Z$/, ' UTC');
}

/** How long ago iso was, relative to now: "just now", "5 min ago", "3 h ago", "2 d ago". */
export function formatAgo(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) return 'never';
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return '–';
  const s = Math.round((now.getTime() - t) / 1000);
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(h / 24)} d ago`;
}

/** An hour bucket as "09:00" (UTC). */
export function formatHour(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : `${String(d.getUTCHours()).padStart(2, '0')}:00`;
}

/** "AI_AGENT_MALICIOUS" or "ai_agent_malicious" → "AI agent (malicious)". */
export function formatClassification(c: string | null | undefined): string {
  switch ((c ?? '').toUpperCase()) {
    case 'HUMAN':
      return 'Human';
    case 'BOT':
      return 'Bot';
    case 'CRAWLER':
      return 'Crawler';
    case 'AI_CRAWLER':
      return 'AI crawler';
    case 'AI_ASSISTANT':
      return 'AI assistant';
    case 'AI_AGENT':
      return 'AI agent';
    case 'AI_AGENT_MALICIOUS':
      return 'AI agent (malicious)';
    case 'SCANNER':
      return 'Scanner';
    default:
      return c ? String(c) : '–';
  }
}

/** Words that stay in capitals in a signal's label. */
const ACRONYMS = new Set(['AI', 'UA', 'LLM', 'MCP', 'API', 'URL', 'IP', 'AWS', 'HTTP', 'TLS', 'JS', 'JSON', 'SQL', 'DNS', 'SSH']);

/** "CALLBACK_HIT" → "Callback hit"; acronyms stay: "LLM_SPEED_FOLLOWUP" → "LLM speed followup". */
export function formatSignal(name: string): string {
  const words = name.split('_').filter(Boolean);
  if (words.length === 0) return name;
  const s = words.map((w) => (ACRONYMS.has(w.toUpperCase()) ? w.toUpperCase() : w.toLowerCase())).join(' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A delay in ms as "850 ms" or "2.4 s". */
export function formatDelay(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Cuts s to at most n characters (code points), with an ellipsis. */
export function truncate(s: string, n: number): string {
  const chars = Array.from(s);
  return chars.length <= n ? s : chars.slice(0, Math.max(0, n - 1)).join('') + '…';
}

/**
 * Makes invisible and control characters of attacker text visible ("\u200b" → "⟨U+200B⟩"),
 * so zero-width tricks and terminal escapes cannot hide in what an analyst reads.
 * Newlines and tabs are kept.
 */
export function revealInvisible(s: string): string {
  return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/gu, (c) => {
    const cp = c.codePointAt(0) ?? 0;
    return `⟨U+${cp.toString(16).toUpperCase().padStart(4, '0')}⟩`;
  });
}

/** Headers map → sorted "Name: value" lines. Values may be strings or arrays of strings. */
export function formatHeaders(h: Record<string, unknown> | null | undefined): string {
  if (!h) return '';
  return Object.keys(h)
    .sort((a, b) => a.localeCompare(b))
    .map((k) => {
      const v = h[k];
      const vals = Array.isArray(v) ? v.map(String) : [typeof v === 'string' ? v : JSON.stringify(v)];
      return vals.map((x) => `${k}: ${x}`).join('\n');
    })
    .join('\n');
}

/** A trap listener base and a trap path joined into a URL string, or '' when either is missing or invalid. */
export function trapURL(base: string, path: string | null | undefined): string {
  if (!base || !path) return '';
  try {
    const u = new URL(base);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return '';
    return new URL(path.startsWith('/') ? path : `/${path}`, u).toString();
  } catch {
    return '';
  }
}

/** An identity badge of a session: what proved (or failed to prove) who the visitor claims to be. */
export interface IdentityBadge {
  label: string;
  kind: string; // Badge kind: its colour
  title: string;
}

/** The identity badges a session's signals earn: a verified signed agent (Web Bot Auth), a crawler its
 * operator verified (reverse DNS, published ranges or its own signature), or a claim nothing backed. A
 * verified crawler is never shown as an unverified claim, as the engine never judges it one; a signature
 * from another origin proves only its signer, so the claim beside it still shows. */
export function identityBadges(signals: readonly string[]): IdentityBadge[] {
  const has = (s: string) => signals.includes(s);
  const out: IdentityBadge[] = [];
  if (has('SIGNED_AGENT_VERIFIED')) {
    out.push({ label: 'verified agent', kind: 'active', title: 'Its requests carry an HTTP message signature that verifies with its own key directory (Web Bot Auth)' });
  }
  if (has('CRAWLER_VERIFIED')) {
    out.push({ label: 'verified crawler', kind: 'active', title: "Its operator's reverse DNS, published address ranges or signature back the crawler it claims to be" });
  }
  if (has('SIGNATURE_INVALID')) {
    out.push({ label: 'forged signature', kind: 'high', title: 'A signature that does not verify, is out of its time window or was replayed' });
  }
  if (has('UNVERIFIED_BOT_CLAIM') && !has('CRAWLER_VERIFIED')) {
    out.push({ label: 'unverified claim', kind: 'high', title: 'It claims a crawler that neither reverse DNS nor the published ranges back' });
  }
  if (has('CLIENT_STACK_MISMATCH')) {
    out.push({ label: 'stack mismatch', kind: 'medium', title: "The user agent claims a browser that the connection's TLS or HTTP/2 stack contradicts" });
  }
  return out;
}
