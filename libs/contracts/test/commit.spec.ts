// Proves the commit wire format: several events travel as one validated message, one event
// stays the plain envelope it always was, and a commit above its limits never leaves the writer.
import { describe, expect, it } from '@jest/globals';
import { IsInt, IsString, Min } from 'class-validator';
import { COMMIT_EVENTS_DECODE_MAX, CommitTooLarge } from '../src/commit.js';
import { EventRegistry } from '../src/envelope.js';

class Counted {
  @IsString() writer!: string;
  @IsInt() @Min(0) by!: number;
}

const registry = () => new EventRegistry([{ type: 'Counted', version: 1, payload: Counted }]);
const limits = { eventsMax: 8, bytesMax: 64 * 1024 };
const event = (id: string, by = 1) => ({
  eventId: id,
  type: 'Counted',
  aggregateId: 'agg-1',
  occurredAt: '2026-11-30T10:00:00.000Z',
  payload: { writer: 'w', by },
});
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');

describe('event commits', () => {
  it('a commit of several events decodes to the same events, in order', () => {
    const r = registry();
    const decoded = r.decodeCommit(r.encodeCommit([event('e1', 1), event('e2', 2), event('e3', 3)], limits));
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.value.map((e) => [e.eventId, e.payload['by'], e.schemaVersion])).toEqual([
      ['e1', 1, 1],
      ['e2', 2, 1],
      ['e3', 3, 1],
    ]);
  });

  it('a commit of one event is the plain envelope, and a plain envelope reads back as a commit of one', () => {
    const r = registry();
    const single = r.encodeCommit([event('only')], limits);
    expect(text(single)).toBe(text(r.encode(event('only'))));
    const decoded = r.decodeCommit(r.encode(event('old')));
    expect(decoded).toEqual({ ok: true, value: [expect.objectContaining({ eventId: 'old' })] });
  });

  it('every event of a commit is validated on decode, and a bad one is named by its place', () => {
    const r = registry();
    const wire = JSON.parse(text(r.encodeCommit([event('a'), event('b')], limits))) as {
      events: Record<string, unknown>[];
    };
    wire.events[1]!['payload'] = { writer: 'w', by: -1 };
    expect(r.decodeCommit(JSON.stringify(wire))).toMatchObject({
      ok: false,
      errors: [{ field: 'events[1].payload.by' }],
    });
    wire.events[1] = { ...wire.events[0], occurred_at: 'yesterday' };
    expect(r.decodeCommit(JSON.stringify(wire))).toMatchObject({
      ok: false,
      errors: [{ field: 'events[1].occurred_at' }],
    });
    expect(r.decodeCommit(JSON.stringify({ ...wire, commit_version: 2 }))).toMatchObject({
      ok: false,
      errors: [{ field: 'commit_version' }],
    });
    expect(r.decodeCommit(JSON.stringify({ ...wire, extra: 1 }))).toMatchObject({
      ok: false,
      errors: [{ field: 'extra' }],
    });
    expect(r.decodeCommit('{"commit_version":')).toMatchObject({ ok: false, errors: [{ field: '$' }] });
  });

  it('a reader refuses a commit above its own bound, whatever the writer allowed', () => {
    const r = registry();
    const one = JSON.parse(text(r.encode(event('x')))) as Record<string, unknown>;
    const huge = {
      commit_version: 1,
      events: Array.from({ length: COMMIT_EVENTS_DECODE_MAX + 1 }, (_, i) => ({ ...one, event_id: `x-${i}` })),
    };
    expect(r.decodeCommit(JSON.stringify(huge))).toMatchObject({ ok: false, errors: [{ field: 'events' }] });
  });

  it('a commit above eventsMax or bytesMax, or with an event id twice, is refused before it is sent', () => {
    const r = registry();
    expect(() =>
      r.encodeCommit(
        Array.from({ length: 9 }, (_, i) => event(`n-${i}`)),
        limits,
      ),
    ).toThrow(CommitTooLarge);
    expect(() => r.encodeCommit([event('big-1'), event('big-2')], { eventsMax: 8, bytesMax: 100 })).toThrow(
      CommitTooLarge,
    );
    expect(() => r.encodeCommit([event('same'), event('same')], limits)).toThrow(/twice/);
    expect(() => r.encodeCommit([], limits)).toThrow(/at least one/);
    expect(() => r.encodeCommit([event('bad', -5), event('ok')], limits)).toThrow(/refusing to encode invalid Counted/);
  });
});
