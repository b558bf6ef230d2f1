import { describe, expect, it } from 'vitest';
import {
  formatAgo,
  formatClassification,
  formatDelay,
  formatHeaders,
  formatHour,
  formatNumber,
  formatSignal,
  formatTime,
  identityBadges,
  revealInvisible,
  trapURL,
  truncate,
} from './format';

describe('format', () => {
  it('numbers', () => {
    expect(formatNumber(12345)).toBe('12,345');
    expect(formatNumber(0)).toBe('0');
    expect(formatNumber(NaN)).toBe('–');
    expect(formatNumber(undefined)).toBe('–');
  });
  it('times in UTC', () => {
    expect(formatTime('2026-11-22T09:15:02.123Z')).toBe('2026-11-22 09:15:02 UTC');
    expect(formatTime('2026-11-22T09:15:02Z')).toBe('2026-11-22 09:15:02 UTC');
    expect(formatTime('nonsense')).toBe('–');
    expect(formatTime(null)).toBe('–');
    expect(formatHour('2026-11-22T09:00:00Z')).toBe('09:00');
  });
  it('relative times', () => {
    const now = new Date('2026-11-22T12:00:00Z');
    expect(formatAgo('2026-11-22T11:59:50Z', now)).toBe('just now');
    expect(formatAgo('2026-11-22T11:55:00Z', now)).toBe('5 min ago');
    expect(formatAgo('2026-11-22T09:00:00Z', now)).toBe('3 h ago');
    expect(formatAgo('2026-11-19T12:00:00Z', now)).toBe('3 d ago');
    expect(formatAgo(null, now)).toBe('never');
  });
  it('classifications in either case', () => {
    expect(formatClassification('AI_AGENT_MALICIOUS')).toBe('AI agent (malicious)');
    expect(formatClassification('ai_crawler')).toBe('AI crawler');
    expect(formatClassification('SOMETHING_NEW')).toBe('SOMETHING_NEW');
  });
  it('signals and delays', () => {
    expect(formatSignal('CALLBACK_HIT')).toBe('Callback hit');
    expect(formatSignal('SYSTEM_PROMPT_LEAKED')).toBe('System prompt leaked');
    expect(formatSignal('LLM_SPEED_FOLLOWUP')).toBe('LLM speed followup');
    expect(formatSignal('KNOWN_AI_ASSISTANT_UA')).toBe('Known AI assistant UA');
    expect(formatSignal('EMPTY_UA')).toBe('Empty UA');
    expect(formatDelay(850)).toBe('850 ms');
    expect(formatDelay(2400)).toBe('2.4 s');
    expect(formatDelay(null)).toBe('–');
  });
  it('truncates by code point', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 4)).toBe('abc');
    expect(truncate('😀😀😀😀😀', 3)).toBe('😀😀…');
  });
  it('reveals invisible characters but keeps newlines', () => {
    expect(revealInvisible('a\u200bb\u202ec\n\td\u0007')).toBe('a⟨U+200B⟩b⟨U+202E⟩c\n\td⟨U+0007⟩');
    expect(revealInvisible('<script>alert(1)</script>')).toBe('<script>alert(1)</script>');
  });
  it('headers as sorted lines', () => {
    expect(formatHeaders({ 'User-Agent': ['x', 'y'], Accept: '*/*' })).toBe('Accept: */*\nUser-Agent: x\nUser-Agent: y');
    expect(formatHeaders(null)).toBe('');
  });
  it('trap URLs only over http(s)', () => {
    expect(trapURL('http://127.0.0.1:8081', '/internal/wiki')).toBe('http://127.0.0.1:8081/internal/wiki');
    expect(trapURL('http://h:1/', 'llms.txt')).toBe('http://h:1/llms.txt');
    expect(trapURL('javascript:alert(1)', '/x')).toBe('');
    expect(trapURL('not a url', '/x')).toBe('');
    expect(trapURL('http://h', null)).toBe('');
  });
  it('identity badges', () => {
    const labels = (s: string[]) => identityBadges(s).map((b) => b.label);
    expect(labels([])).toEqual([]);
    expect(labels(['SIGNED_AGENT_VERIFIED', 'UNVERIFIED_BOT_CLAIM'])).toEqual(['verified agent', 'unverified claim']);
    expect(labels(['SIGNED_AGENT_VERIFIED', 'CRAWLER_VERIFIED', 'UNVERIFIED_BOT_CLAIM'])).toEqual(['verified agent', 'verified crawler']);
    expect(labels(['CRAWLER_VERIFIED', 'UNVERIFIED_BOT_CLAIM'])).toEqual(['verified crawler']);
    expect(labels(['UNVERIFIED_BOT_CLAIM', 'CALLBACK_HIT'])).toEqual(['unverified claim']);
    expect(labels(['SIGNATURE_INVALID', 'CLIENT_STACK_MISMATCH'])).toEqual(['forged signature', 'stack mismatch']);
  });
});
