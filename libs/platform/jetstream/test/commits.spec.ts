// Proves that an append is one commit against a real nats-server: atomic (all events or
// none), stored once when re-sent, read back in order at one shared sequence, and bounded.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CommitTooLarge, Headers } from '@tally/contracts';
import { ConcurrencyConflict } from '@tally/eventing';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { JetStreamEventStore } from '../src/event-store.js';
import { counterEvent, counterRegistry, storeFixture, type StoreFixture } from './fixtures.js';

describe('JetStream event store commits', () => {
  let f: StoreFixture;
  beforeAll(async () => {
    f = await storeFixture(sharedNatsUrl(), uniqueNamespace('cm'));
  });
  afterAll(async () => f.dispose());

  const ev = (id: string, agg: string, by = 1) => counterEvent(id, agg, by, 'w');
  const ids = async (subject: string) => (await f.store.load(subject)).events.map((e) => e.event.eventId);

  it('a multi-event append is atomic: a conflicting append stores none of its events', async () => {
    const subject = f.names.workEventSubject('atomic');
    await f.store.append(subject, [ev('at-seed', 'atomic')], 0);
    await expect(
      f.store.append(subject, [ev('at-1', 'atomic'), ev('at-2', 'atomic'), ev('at-3', 'atomic')], 0),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect(await ids(subject)).toEqual(['at-seed']);
  });

  it('a multi-event append is one message: one round trip, one stream sequence for all its events', async () => {
    const subject = f.names.workEventSubject('one-msg');
    const before = (await f.jsm.streams.info(f.names.workEventsStream)).state.messages;
    const result = await f.store.append(
      subject,
      [ev('om-1', 'one-msg'), ev('om-2', 'one-msg'), ev('om-3', 'one-msg')],
      0,
    );
    expect((await f.jsm.streams.info(f.names.workEventsStream)).state.messages).toBe(before + 1);
    expect(new Set(result.sequences).size).toBe(1);
    expect(result).toEqual({
      sequences: [result.lastSequence, result.lastSequence, result.lastSequence],
      duplicates: [false, false, false],
      lastSequence: result.lastSequence,
    });
    const stored = await f.jsm.streams.getMessage(f.names.workEventsStream, { seq: result.lastSequence });
    expect(stored?.header.get(Headers.msgId)).toBe('om-1');
    expect(stored?.header.get(Headers.commitEvents)).toBe('3');
  });

  it('a re-sent commit is stored once, and answers with its original sequence flagged duplicate', async () => {
    const subject = f.names.workEventSubject('resent');
    const commit = [ev('rs-1', 'resent'), ev('rs-2', 'resent')];
    const first = await f.store.append(subject, commit, 0);
    const again = await f.store.append(subject, commit, 0);
    expect(again).toEqual({ sequences: first.sequences, duplicates: [true, true], lastSequence: first.lastSequence });
    expect(await ids(subject)).toEqual(['rs-1', 'rs-2']);
  });

  it('a different commit that starts with a stored event id is a conflict, not a duplicate, and stores nothing', async () => {
    const subject = f.names.workEventSubject('same-head');
    await f.store.append(subject, [ev('sh-1', 'same-head'), ev('sh-2', 'same-head')], 0);
    await expect(
      f.store.append(subject, [ev('sh-1', 'same-head'), ev('sh-other', 'same-head')], 0),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect(await ids(subject)).toEqual(['sh-1', 'sh-2']);
  });

  it.each([
    ['direct get', undefined],
    ['ordered consumer', 0],
  ])('load returns commit events in order with their shared sequence (%s)', async (_path, directReadEventsMax) => {
    const agg = `order-${directReadEventsMax ?? 'direct'}`;
    const subject = f.names.workEventSubject(agg);
    const store = new JetStreamEventStore(f.js, f.jsm, {
      stream: f.names.workEventsStream,
      registry: counterRegistry(),
      publishTimeoutMs: 5000,
      loadEventsMax: 100,
      loadIdleTimeoutMs: 5000,
      ...(directReadEventsMax === undefined ? {} : { directReadEventsMax }),
    });
    const a = await store.append(subject, [ev(`${agg}-1`, agg, 1), ev(`${agg}-2`, agg, 2), ev(`${agg}-3`, agg, 3)], 0);
    const b = await store.append(subject, [ev(`${agg}-4`, agg, 4)], a.lastSequence);
    const c = await store.append(subject, [ev(`${agg}-5`, agg, 5), ev(`${agg}-6`, agg, 6)], b.lastSequence);
    const { events, lastSequence } = await store.load(subject);
    expect(lastSequence).toBe(c.lastSequence);
    expect(events.map((e) => [e.event.payload['by'], e.sequence, e.position])).toEqual([
      [1, a.lastSequence, 0],
      [2, a.lastSequence, 1],
      [3, a.lastSequence, 2],
      [4, b.lastSequence, 0],
      [5, c.lastSequence, 0],
      [6, c.lastSequence, 1],
    ]);
    expect((await store.load(subject, a.lastSequence)).events.map((e) => e.event.payload['by'])).toEqual([4, 5, 6]);
  });

  it('a single-event message written before commits existed loads as a commit of one', async () => {
    const subject = f.names.workEventSubject('legacy');
    const ack = await f.js.publish(subject, counterRegistry().encode(ev('legacy-1', 'legacy', 7)), {
      msgID: 'legacy-1',
    });
    const { events } = await f.store.load(subject);
    expect(events).toEqual([
      {
        sequence: ack.seq,
        subject,
        position: 0,
        event: expect.objectContaining({ eventId: 'legacy-1', payload: { by: 7, writer: 'w' } }),
      },
    ]);
  });

  it('a commit above the events limit or the stream message size is refused before it is sent', async () => {
    const subject = f.names.workEventSubject('limits');
    const small = new JetStreamEventStore(f.js, f.jsm, {
      stream: f.names.workEventsStream,
      registry: counterRegistry(),
      publishTimeoutMs: 5000,
      loadEventsMax: 100,
      loadIdleTimeoutMs: 5000,
      commitEventsMax: 2,
    });
    await expect(
      small.append(subject, [ev('l-1', 'limits'), ev('l-2', 'limits'), ev('l-3', 'limits')], 0),
    ).rejects.toBeInstanceOf(CommitTooLarge);
    // The fixture's stream allows 1 MiB per message; a thousand 2 KiB events do not fit.
    const bulky = Array.from({ length: 1000 }, (_, i) => ({
      ...ev(`bulk-${i}`, 'limits'),
      payload: { by: i, writer: 'w'.repeat(2048) },
    }));
    await expect(f.store.append(subject, bulky, 0)).rejects.toBeInstanceOf(CommitTooLarge);
    expect(await f.store.lastSequence(subject)).toBe(0);
  });
});
