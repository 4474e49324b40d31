// Proves the incremental SSE parser yields the same events however the bytes are split, and stays bounded.
import { describe, expect, it } from '@jest/globals';
import { SseOverflowError, SseParser, type SseEvent } from '../src/index.js';

const STREAM = [
  ': heartbeat',
  'event: content_block_delta',
  'data: {"text":"Grüße 🎉"}',
  '',
  'data: first line',
  'data: second line',
  'id: 7',
  '',
  'data:no-space',
  'retry: 1000',
  'unknown: field',
  '',
  'data',
  '',
  'event: ignored because it has no data',
  '',
].join('\n');

const EXPECTED: SseEvent[] = [
  { event: 'content_block_delta', data: '{"text":"Grüße 🎉"}' },
  { event: 'message', data: 'first line\nsecond line', id: '7' },
  { event: 'message', data: 'no-space', id: '7' },
  { event: 'message', data: '', id: '7' },
];

function parseInPieces(bytes: Uint8Array, cuts: number[]): SseEvent[] {
  const parser = new SseParser({ eventMaxChars: 1_000 });
  const events: SseEvent[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    events.push(...parser.push(bytes.subarray(at, cut)));
    at = cut;
  }
  return [...events, ...parser.end()];
}

describe('SseParser', () => {
  it.each([
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ])('O8 yields the same events when a %s stream is split at any single byte', (_name, eol) => {
    const bytes = new TextEncoder().encode(STREAM.replaceAll('\n', eol));
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(parseInPieces(bytes, [cut])).toEqual(EXPECTED);
    }
  });

  it('O8 yields the same events when fed one byte at a time, including a CRLF split between chunks', () => {
    const bytes = new TextEncoder().encode(STREAM.replaceAll('\n', '\r\n'));
    const cuts = Array.from({ length: bytes.length }, (_, i) => i);
    expect(parseInPieces(bytes, cuts)).toEqual(EXPECTED);
  });

  it('drops an unterminated final event, as the SSE rules require', () => {
    const parser = new SseParser({ eventMaxChars: 100 });
    expect(parser.push('data: complete\n\ndata: cut off')).toEqual([{ event: 'message', data: 'complete' }]);
    expect(parser.end()).toEqual([]);
  });

  it('refuses an event larger than eventMaxChars instead of buffering without bound', () => {
    const parser = new SseParser({ eventMaxChars: 64 });
    expect(() => parser.push(`data: ${'x'.repeat(100)}`)).toThrow(SseOverflowError);
    const multiLine = new SseParser({ eventMaxChars: 64 });
    expect(() => multiLine.push('data: 0123456789\n'.repeat(10))).toThrow(SseOverflowError);
  });
});
