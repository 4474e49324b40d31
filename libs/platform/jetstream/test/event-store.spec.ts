// Proves the JetStream event store's guarantees against a real nats-server: optimistic
// concurrency, idempotent appends, and ordered replay.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ConcurrencyConflict, decideAndAppend, foldEvents } from '@tally/eventing';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { JetStreamEventStore } from '../src/event-store.js';
import { counterEvent, counterRegistry, storeFixture, type StoreFixture } from './fixtures.js';

describe('JetStream event store', () => {
  let f: StoreFixture;
  beforeAll(async () => {
    f = await storeFixture(sharedNatsUrl(), uniqueNamespace('es'));
  });
  afterAll(async () => f.dispose());

  it('two writers on one aggregate: exactly one wins, and the loser retries on fresh state', async () => {
    const subject = f.names.workEventSubject('agg-race');
    await f.store.append(subject, [counterEvent('seed', 'agg-race', 1, 'seed')], 0);
    const seen: number[][] = [];
    const writer = (name: string) =>
      decideAndAppend({
        store: f.store,
        subject,
        maxAttempts: 5,
        load: async () => {
          const { events, lastSequence } = await f.store.load(subject);
          return { state: foldEvents(0, events, (sum, e) => sum + (e.event.payload['by'] as number)), lastSequence };
        },
        decide: (total: number) => ({ events: [counterEvent(`${name}-${total}`, 'agg-race', 10, name)], result: total }),
      });
    const naive = await Promise.allSettled([
      f.store.append(subject, [counterEvent('a', 'agg-race', 1, 'a')], 1),
      f.store.append(subject, [counterEvent('b', 'agg-race', 1, 'b')], 1),
    ]);
    expect(naive.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = naive.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(ConcurrencyConflict);

    const results = await Promise.all([writer('x'), writer('y')]);
    seen.push(results.map((r) => r.result));
    // The states each writer decided on differ: the second saw the first's event.
    const decidedOn = results.map((r) => r.result).sort((a, b) => a - b);
    expect(decidedOn).toEqual([2, 12]);
    expect(results.some((r) => r.attempts > 1)).toBe(true);
    const { events } = await f.store.load(subject);
    expect(events.map((e) => e.event.payload['writer'])).toHaveLength(4);
  });

  it('a re-published event id is stored once', async () => {
    const subject = f.names.workEventSubject('agg-dedupe');
    const first = await f.store.append(subject, [counterEvent('dup-1', 'agg-dedupe', 5, 'w')], 0);
    const again = await f.store.append(subject, [counterEvent('dup-1', 'agg-dedupe', 5, 'w')], 0);
    expect(again.duplicates).toEqual([true]);
    expect(again.sequences).toEqual(first.sequences);
    const { events } = await f.store.load(subject);
    expect(events.map((e) => e.event.eventId)).toEqual(['dup-1']);
  });

  it('a replay comes back in order, and a load from a position returns only later events', async () => {
    const subject = f.names.workEventSubject('agg-order');
    let expected = 0;
    for (let i = 0; i < 300; i++) {
      const other = f.names.workEventSubject(`noise-${i % 7}`);
      await f.store.append(other, [counterEvent(`noise-${i}`, `noise-${i % 7}`, 1, 'n')], await f.store.lastSequence(other));
      expected = (await f.store.append(subject, [counterEvent(`ord-${i}`, 'agg-order', i, 'w')], expected)).lastSequence;
    }
    const { events, lastSequence } = await f.store.load(subject);
    expect(events.map((e) => e.event.payload['by'])).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(lastSequence).toBe(expected);
    const tail = await f.store.load(subject, events[249]!.sequence);
    expect(tail.events.map((e) => e.event.payload['by'])).toEqual(Array.from({ length: 50 }, (_, i) => 250 + i));
  });

  it('a load returns the same events whether it reads by direct get, by ordered consumer, or both', async () => {
    const subject = f.names.workEventSubject('agg-paths');
    let expected = 0;
    let firstSequence = 0;
    for (let i = 0; i < 40; i++) {
      const other = f.names.workEventSubject('paths-noise');
      await f.store.append(other, [counterEvent(`pn-${i}`, 'paths-noise', 1, 'n')], await f.store.lastSequence(other));
      expected = (await f.store.append(subject, [counterEvent(`p-${i}`, 'agg-paths', i, 'w')], expected)).lastSequence;
      if (i === 0) firstSequence = expected;
    }
    const loads = await Promise.all(
      [0, 5, 1000].map((directReadEventsMax) =>
        new JetStreamEventStore(f.js, f.jsm, { stream: f.names.workEventsStream, registry: counterRegistry(), publishTimeoutMs: 5000, loadEventsMax: 1000, loadIdleTimeoutMs: 5000, directReadEventsMax }).load(subject, firstSequence),
      ),
    );
    const ids = loads.map((l) => l.events.map((e) => e.event.eventId));
    // Loading after p-0's sequence starts at p-1, with noise events interleaved in the stream.
    expect(ids[0]).toEqual(Array.from({ length: 39 }, (_, i) => `p-${i + 1}`));
    expect(ids[1]).toEqual(ids[0]);
    expect(ids[2]).toEqual(ids[0]);
    expect(loads.map((l) => l.lastSequence)).toEqual([expected, expected, expected]);
  });
});
