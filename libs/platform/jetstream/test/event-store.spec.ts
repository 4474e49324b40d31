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
        decide: (total: number) => ({
          events: [counterEvent(`${name}-${total}`, 'agg-race', 10, name)],
          result: total,
        }),
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
      await f.store.append(
        other,
        [counterEvent(`noise-${i}`, `noise-${i % 7}`, 1, 'n')],
        await f.store.lastSequence(other),
      );
      expected = (await f.store.append(subject, [counterEvent(`ord-${i}`, 'agg-order', i, 'w')], expected))
        .lastSequence;
    }
    const { events, lastSequence } = await f.store.load(subject);
    expect(events.map((e) => e.event.payload['by'])).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(lastSequence).toBe(expected);
    const tail = await f.store.load(subject, events[249]!.sequence);
    expect(tail.events.map((e) => e.event.payload['by'])).toEqual(Array.from({ length: 50 }, (_, i) => 250 + i));
  });

  it('a load returns the same events whether it reads by direct get or by ordered consumer', async () => {
    const subject = f.names.workEventSubject('agg-paths');
    const sequences: number[] = [];
    for (let i = 0; i < 40; i++) {
      const other = f.names.workEventSubject('paths-noise');
      await f.store.append(other, [counterEvent(`pn-${i}`, 'paths-noise', 1, 'n')], await f.store.lastSequence(other));
      sequences.push(
        (await f.store.append(subject, [counterEvent(`p-${i}`, 'agg-paths', i, 'w')], sequences.at(-1) ?? 0))
          .lastSequence,
      );
    }
    const store = (directReadEventsMax: number) =>
      new JetStreamEventStore(f.js, f.jsm, {
        stream: f.names.workEventsStream,
        registry: counterRegistry(),
        publishTimeoutMs: 5000,
        loadEventsMax: 1000,
        loadIdleTimeoutMs: 5000,
        directReadEventsMax,
      });
    const ids = (events: readonly { event: { eventId: string } }[]) => events.map((e) => e.event.eventId);
    // A long read with noise interleaved: all direct (the gap is under 1000) against all ordered.
    const [direct, ordered] = await Promise.all([
      store(1000).load(subject, sequences[0]),
      store(0).load(subject, sequences[0]),
    ]);
    expect(ids(direct.events)).toEqual(Array.from({ length: 39 }, (_, i) => `p-${i + 1}`));
    expect(ids(ordered.events)).toEqual(ids(direct.events));
    expect(direct.lastSequence).toBe(sequences[39]);
    // A small catch-up, as after one's own append: the default store reads it by direct get.
    const catchUp = await f.store.load(subject, sequences[37]);
    expect(ids(catchUp.events)).toEqual(['p-38', 'p-39']);
    expect(ids((await store(0).load(subject, sequences[37])).events)).toEqual(['p-38', 'p-39']);
  });

  it('a load one commit behind costs one read (a direct get): each commit links to the one before it on its subject', async () => {
    const subject = f.names.workEventSubject('agg-linked');
    const other = f.names.workEventSubject('linked-noise');
    const sequences: number[] = [];
    for (let i = 0; i < 5; i++) {
      await f.store.append(other, [counterEvent(`ln-${i}`, 'linked-noise', 1, 'n')], await f.store.lastSequence(other));
      sequences.push(
        (await f.store.append(subject, [counterEvent(`l-${i}`, 'agg-linked', i, 'w')], sequences.at(-1) ?? 0))
          .lastSequence,
      );
    }
    // A plain subscription sees every direct get sent to the stream (the server still answers them).
    let seen = 0;
    const count = { callback: () => void seen++ };
    const gets = f.nc.subscribe(`$JS.API.DIRECT.GET.${f.names.workEventsStream}.>`, count);
    const plainGets = f.nc.subscribe(`$JS.API.DIRECT.GET.${f.names.workEventsStream}`, count);
    const apiGets = f.nc.subscribe(`$JS.API.STREAM.MSG.GET.${f.names.workEventsStream}`, count);
    await f.nc.flush();
    const ids = (events: readonly { event: { eventId: string } }[]) => events.map((e) => e.event.eventId);
    const countGets = async (load: () => Promise<unknown>) => {
      const before = seen;
      await load();
      await f.nc.flush();
      return seen - before;
    };
    let caughtUp: Awaited<ReturnType<typeof f.store.load>> | undefined;
    expect(await countGets(async () => (caughtUp = await f.store.load(subject, sequences[3])))).toBe(1);
    expect(ids(caughtUp!.events)).toEqual(['l-4']);
    expect(await countGets(async () => (caughtUp = await f.store.load(subject, sequences[4])))).toBe(1);
    expect(caughtUp!.events).toEqual([]);
    // Further behind, the range up to the linked commit is read and nothing else.
    expect(ids((await f.store.load(subject, sequences[1])).events)).toEqual(['l-2', 'l-3', 'l-4']);
    expect(ids((await f.store.load(subject)).events)).toEqual(['l-0', 'l-1', 'l-2', 'l-3', 'l-4']);
    for (const sub of [gets, plainGets, apiGets]) sub.unsubscribe();
  });

  it('a commit without the link (published by another writer) still loads in order, by reading the range', async () => {
    const subject = f.names.workEventSubject('agg-unlinked');
    const first = await f.store.append(subject, [counterEvent('u-0', 'agg-unlinked', 1, 'w')], 0);
    await f.store.append(
      f.names.workEventSubject('unlinked-noise'),
      [counterEvent('un-0', 'unlinked-noise', 1, 'n')],
      0,
    );
    const middle = await f.store.append(subject, [counterEvent('u-1', 'agg-unlinked', 2, 'w')], first.lastSequence);
    const raw = counterRegistry().encodeCommit([counterEvent('u-2', 'agg-unlinked', 3, 'other')], {
      eventsMax: 10,
      bytesMax: 100_000,
    });
    await f.js.publish(subject, raw);
    const ids = (events: readonly { event: { eventId: string } }[]) => events.map((e) => e.event.eventId);
    expect(ids((await f.store.load(subject)).events)).toEqual(['u-0', 'u-1', 'u-2']);
    expect(ids((await f.store.load(subject, first.lastSequence)).events)).toEqual(['u-1', 'u-2']);
    expect(ids((await f.store.load(subject, middle.lastSequence)).events)).toEqual(['u-2']);
  });

  it('a stream without allow_direct still loads small catch-ups, through the ordered consumer', async () => {
    const stream = f.names.budgetEventsStream;
    await f.jsm.streams.add({ name: stream, subjects: [f.names.budgetEventsWildcard], allow_direct: false });
    try {
      const store = new JetStreamEventStore(f.js, f.jsm, {
        stream,
        registry: counterRegistry(),
        publishTimeoutMs: 5000,
        loadEventsMax: 100,
        loadIdleTimeoutMs: 5000,
      });
      const subject = f.names.budgetEventSubject('nodirect');
      const first = await store.append(subject, [counterEvent('nd-1', 'nodirect', 1, 'w')], 0);
      await store.append(subject, [counterEvent('nd-2', 'nodirect', 2, 'w')], first.lastSequence);
      const { events } = await store.load(subject, first.sequences[0]);
      expect(events.map((e) => e.event.eventId)).toEqual(['nd-2']);
    } finally {
      await f.jsm.streams.delete(stream);
    }
  });
});
