// Proves issue 9 item 1 against a real nats-server: the ledger streams cannot lose an event (a full one refuses the
// append, cleanly), a load over a history with a hole fails loudly, and old streams move to the policy in place.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { DiscardPolicy, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { HistoryGap, StreamFull } from '@tally/eventing';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { JetStreamEventStore } from '../src/event-store.js';
import { reconcileStream, StreamConfigConflict, toStreamConfig } from '../src/provisioning.js';
import { provisionTallyStreams, tallyStreamSpecs } from '../src/streams.js';
import { counterEvent, counterRegistry, natsFixture, testStreamLimits, type NatsFixture } from './fixtures.js';

const SECONDS_NS = 1_000_000_000;

describe('stream policy', () => {
  let f: NatsFixture;
  beforeEach(async () => {
    f = await natsFixture(sharedNatsUrl(), uniqueNamespace('pol'));
  });
  afterEach(async () => f.dispose());

  const storeOn = (stream: string, directReadEventsMax?: number) =>
    new JetStreamEventStore(f.js, f.jsm, {
      stream,
      registry: counterRegistry(),
      publishTimeoutMs: 5_000,
      loadEventsMax: 10_000,
      loadIdleTimeoutMs: 2_000,
      ...(directReadEventsMax === undefined ? {} : { directReadEventsMax }),
    });

  it('issue 9 item 1: event streams are discard new, unlimited by default, with no age or count limit and no delete or purge', async () => {
    await provisionTallyStreams(f.jsm, f.names, { ...testStreamLimits, eventMaxBytes: -1 });
    for (const name of [f.names.budgetEventsStream, f.names.workEventsStream]) {
      const { config } = await f.jsm.streams.info(name);
      expect(config).toMatchObject({
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.New,
        max_age: 0,
        max_bytes: -1,
        max_msgs: -1,
        max_msgs_per_subject: -1,
        deny_delete: true,
        deny_purge: true,
      });
    }
    await expect(f.jsm.streams.purge(f.names.budgetEventsStream)).rejects.toThrow(/purge not permitted/);
    const queue = (await f.jsm.streams.info(f.names.workQueueStream)).config;
    expect(queue).toMatchObject({ retention: RetentionPolicy.Workqueue, discard: DiscardPolicy.New });
    expect(queue.max_bytes).toBe(testStreamLimits.queueMaxBytes);
    const dlq = (await f.jsm.streams.info(f.names.deadLetterStream)).config;
    expect(dlq).toMatchObject({ discard: DiscardPolicy.Old, max_age: 86_400 * SECONDS_NS, deny_delete: false });
  });

  it('issue 9 item 1: a full event stream refuses the append with StreamFull, stores nothing, and keeps every earlier event', async () => {
    const events = tallyStreamSpecs(f.names, testStreamLimits).find((s) => s.kind === 'workEvents')!;
    await f.jsm.streams.add(toStreamConfig({ ...events, maxBytes: 8 * 1024 }));
    const store = storeOn(f.names.workEventsStream);
    const subject = f.names.workEventSubject('full');
    let expected = 0;
    let refusal: unknown;
    for (let i = 0; i < 200 && refusal === undefined; i++) {
      try {
        expected = (await store.append(subject, [counterEvent(`full-${i}`, 'full', 1, 'x'.repeat(300))], expected))
          .lastSequence;
      } catch (error) {
        refusal = error;
      }
    }
    expect(refusal).toBeInstanceOf(StreamFull);
    expect((refusal as StreamFull).message).toMatch(/is full \(maximum bytes exceeded\).*nothing was stored/);
    const info = await f.jsm.streams.info(f.names.workEventsStream);
    expect(info.state.first_seq).toBe(1);
    expect(info.state.last_seq).toBe(expected);
    const loaded = await store.load(subject);
    expect(loaded.events.map((e) => e.event.eventId)).toEqual(Array.from({ length: expected }, (_, i) => `full-${i}`));
  });

  it.each([
    ['direct gets', undefined],
    ['an ordered consumer', 0],
  ])(
    'issue 9 item 1: a load whose history lost its first or a middle commit fails with HistoryGap (%s)',
    async (_how, directReadEventsMax) => {
      // A stream without deny_delete stands for a ledger that an old limit has already cut.
      const events = tallyStreamSpecs(f.names, testStreamLimits).find((s) => s.kind === 'workEvents')!;
      await f.jsm.streams.add(toStreamConfig({ ...events, denyDelete: false, denyPurge: false }));
      const store = storeOn(f.names.workEventsStream, directReadEventsMax);
      const [head, middle] = [f.names.workEventSubject('head'), f.names.workEventSubject('middle')];
      let [h, m] = [0, 0];
      for (let i = 0; i < 4; i++) {
        h = (await store.append(head, [counterEvent(`h-${i}`, 'head', 1, 'w')], h)).lastSequence;
        m = (await store.append(middle, [counterEvent(`m-${i}`, 'middle', 1, 'w')], m)).lastSequence;
      }
      await f.jsm.streams.deleteMessage(f.names.workEventsStream, 1, false);
      await expect(store.load(head)).rejects.toBeInstanceOf(HistoryGap);
      await expect(store.load(head)).rejects.toThrow(
        /commit #3 follows #1, but the commit read before it is the start/,
      );
      await f.jsm.streams.deleteMessage(f.names.workEventsStream, 4, false);
      await expect(store.load(middle)).rejects.toThrow(/commit #6 follows #4, but the commit read before it is #2/);
      // A catch-up that starts past the hole still checks what it reads.
      expect((await store.load(middle, 6)).events.map((e) => e.event.eventId)).toEqual(['m-3']);
    },
  );

  it.each([
    ['direct gets', undefined],
    ['an ordered consumer', 0],
  ])(
    'Issue 9: a second commit on a predecessor that already has one (a fork) fails the catch-up and the full load with HistoryGap (%s)',
    async (_how, directReadEventsMax) => {
      const events = tallyStreamSpecs(f.names, testStreamLimits).find((s) => s.kind === 'workEvents')!;
      await f.jsm.streams.add(toStreamConfig(events));
      const store = storeOn(f.names.workEventsStream, directReadEventsMax);
      const subject = f.names.workEventSubject('forked');
      const first = (await store.append(subject, [counterEvent('f-0', 'forked', 1, 'w')], 0)).lastSequence;
      const held = (await store.append(subject, [counterEvent('f-1', 'forked', 1, 'w')], first)).lastSequence;
      // What a racing writer leaves on a server that let both expected-sequence checks pass
      // (nats-server#4320): a commit that claims the same predecessor as the one we hold.
      const twin = await f.jsm.streams.getMessage(f.names.workEventsStream, { seq: held });
      const forkHeaders = natsHeaders();
      forkHeaders.set('Tally-Previous-Subject-Sequence', String(first));
      forkHeaders.set('Nats-Msg-Id', 'fork-1');
      await f.js.publish(subject, twin!.data, { headers: forkHeaders });
      await expect(store.load(subject, held)).rejects.toThrow(/two commits claim the same predecessor \(a fork/);
      // A full load reads every commit up to the last, so it meets both commits on #first.
      await expect(store.load(subject)).rejects.toThrow(/#3 follows #1, but #2 already follows it/);
    },
  );

  it('issue 9 item 1: an old discard-old stream is moved to the policy in place, keeping its events', async () => {
    const spec = tallyStreamSpecs(f.names, { ...testStreamLimits, eventMaxBytes: -1 }).find(
      (s) => s.kind === 'budgetEvents',
    )!;
    await f.jsm.streams.add({
      name: spec.name,
      subjects: [...spec.subjects],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_bytes: 64 * 1024 * 1024,
      duplicate_window: 120 * SECONDS_NS,
      max_msg_size: spec.maxMsgSizeBytes,
      deny_delete: true,
      allow_direct: true,
    });
    const store = storeOn(spec.name);
    const subject = f.names.budgetEventSubject('tree');
    await store.append(subject, [counterEvent('t-0', 'tree', 1, 'w')], 0);
    const moved = await reconcileStream(f.jsm, spec);
    expect(moved.outcome).toBe('updated');
    expect(moved.changes).toEqual(
      expect.arrayContaining([
        'max_bytes is 67108864, expected -1',
        'discard is old, expected new',
        'deny_purge is false, expected true',
      ]),
    );
    expect(moved.warnings).toEqual([]);
    expect((await reconcileStream(f.jsm, spec)).outcome).toBe('verified');
    expect((await store.load(subject)).events.map((e) => e.event.eventId)).toEqual(['t-0']);
  });

  it('issue 9 item 1: a move that would make the server delete events is refused, and so is lifting deny_purge', async () => {
    const spec = tallyStreamSpecs(f.names, testStreamLimits).find((s) => s.kind === 'workEvents')!;
    await f.jsm.streams.add(toStreamConfig(spec));
    const store = storeOn(spec.name);
    const subject = f.names.workEventSubject('big');
    let last = 0;
    for (let i = 0; i < 8; i++)
      last = (await store.append(subject, [counterEvent(`b-${i}`, 'big', 1, 'x'.repeat(200_000))], last)).lastSequence;
    const smaller = { ...spec, maxBytes: 1024 * 1024 };
    await expect(reconcileStream(f.jsm, smaller)).rejects.toBeInstanceOf(StreamConfigConflict);
    await expect(reconcileStream(f.jsm, smaller)).rejects.toThrow(/would delete its oldest messages/);
    await expect(reconcileStream(f.jsm, { ...spec, denyPurge: false })).rejects.toThrow(
      /deny_purge cannot be lifted once set/,
    );
    expect((await f.jsm.streams.info(spec.name)).state.messages).toBe(8);
  });
});
