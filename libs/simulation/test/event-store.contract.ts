// The cases of the event-store contract: what Tally relies on from JetStream, written once
// and run against both the real JetStream adapter and the simulated store, so the
// simulator's store is held to the behaviour of the real one.
import { describe, expect, it } from '@jest/globals';
import { CommitTooLarge, EventRegistry } from '@tally/contracts';
import { ConcurrencyConflict, StreamFull, type EventStore } from '@tally/eventing';
import { IsInt, IsString } from 'class-validator';

export class ContractCounted {
  @IsInt() by!: number;
  @IsString() note!: string;
}

export const contractRegistry = () =>
  new EventRegistry([{ type: 'ContractCounted', version: 1, payload: ContractCounted }]);

export function contractEvent(id: string, by = 1, note = 'n') {
  return {
    eventId: id,
    type: 'ContractCounted',
    aggregateId: 'contract',
    occurredAt: '2026-01-01T00:00:00.000Z',
    payload: { by, note },
  };
}

export interface StreamLimits {
  readonly maxBytes: number;
  readonly maxMsgSizeBytes: number;
  readonly duplicateWindowMs: number;
}

export interface ContractStore {
  readonly store: EventStore;
  subject(aggregate: string): string;
  /** Lets `ms` pass on the server's clock: real time for a real server, virtual time for the simulator. */
  advance(ms: number): Promise<void>;
  dispose(): Promise<void>;
}

export type ContractStoreFactory = (limits: StreamLimits) => Promise<ContractStore>;

export const CONTRACT_LIMITS: StreamLimits = { maxBytes: -1, maxMsgSizeBytes: 64 * 1024, duplicateWindowMs: 1_000 };

const idsOf = async (s: ContractStore, subject: string) =>
  (await s.store.load(subject)).events.map((e) => e.event.eventId);

export function eventStoreContract(name: string, open: ContractStoreFactory): void {
  describe(`event store contract: ${name}`, () => {
    const withStore = (limits: StreamLimits, body: (s: ContractStore) => Promise<void>) => async () => {
      const s = await open(limits);
      try {
        await body(s);
      } finally {
        await s.dispose();
      }
    };

    it(
      'a commit is one message: its events share one stream sequence and load back in order with their positions',
      withStore(CONTRACT_LIMITS, async (s) => {
        const subject = s.subject('one');
        const result = await s.store.append(
          subject,
          [contractEvent('c-1'), contractEvent('c-2'), contractEvent('c-3')],
          0,
        );
        expect(new Set(result.sequences).size).toBe(1);
        expect(result).toEqual({
          sequences: [result.lastSequence, result.lastSequence, result.lastSequence],
          duplicates: [false, false, false],
          lastSequence: result.lastSequence,
        });
        const { events, lastSequence } = await s.store.load(subject);
        expect(lastSequence).toBe(result.lastSequence);
        expect(events.map((e) => [e.event.eventId, e.sequence, e.position ?? 0])).toEqual([
          ['c-1', result.lastSequence, 0],
          ['c-2', result.lastSequence, 1],
          ['c-3', result.lastSequence, 2],
        ]);
      }),
    );

    it(
      'sequences are the stream’s, shared by every subject, and an expectation names the subject’s own last sequence',
      withStore(CONTRACT_LIMITS, async (s) => {
        const [a, b] = [s.subject('seq-a'), s.subject('seq-b')];
        const a1 = await s.store.append(a, [contractEvent('sa-1')], 0);
        const b1 = await s.store.append(b, [contractEvent('sb-1')], 0);
        expect(b1.lastSequence).toBe(a1.lastSequence + 1);
        const a2 = await s.store.append(a, [contractEvent('sa-2')], a1.lastSequence);
        expect(a2.lastSequence).toBe(b1.lastSequence + 1);
        expect((await s.store.load(a)).events.map((e) => e.sequence)).toEqual([a1.lastSequence, a2.lastSequence]);
      }),
    );

    it(
      'optimistic concurrency: an append whose expectation is not the subject’s last sequence is a ConcurrencyConflict and stores none of its events',
      withStore(CONTRACT_LIMITS, async (s) => {
        const subject = s.subject('occ');
        const first = await s.store.append(subject, [contractEvent('o-1')], 0);
        await expect(s.store.append(subject, [contractEvent('o-2'), contractEvent('o-3')], 0)).rejects.toBeInstanceOf(
          ConcurrencyConflict,
        );
        await expect(s.store.append(subject, [contractEvent('o-4')], first.lastSequence + 5)).rejects.toBeInstanceOf(
          ConcurrencyConflict,
        );
        expect(await idsOf(s, subject)).toEqual(['o-1']);
      }),
    );

    it(
      'a commit re-sent within the duplicate window is stored once and answered with its original sequence, flagged duplicate, even on a stale expectation',
      withStore(CONTRACT_LIMITS, async (s) => {
        const subject = s.subject('dup');
        const commit = [contractEvent('d-1'), contractEvent('d-2')];
        const first = await s.store.append(subject, commit, 0);
        const later = await s.store.append(subject, [contractEvent('d-3')], first.lastSequence);
        const again = await s.store.append(subject, commit, 0);
        expect(again).toEqual({
          sequences: first.sequences,
          duplicates: [true, true],
          lastSequence: first.lastSequence,
        });
        const single = await s.store.append(subject, [contractEvent('d-3')], first.lastSequence);
        expect(single).toEqual({ sequences: later.sequences, duplicates: [true], lastSequence: later.lastSequence });
        expect(await idsOf(s, subject)).toEqual(['d-1', 'd-2', 'd-3']);
      }),
    );

    it(
      'a different commit that starts with a stored event id is a ConcurrencyConflict, not a duplicate, and stores nothing',
      withStore(CONTRACT_LIMITS, async (s) => {
        const subject = s.subject('head');
        await s.store.append(subject, [contractEvent('h-1'), contractEvent('h-2')], 0);
        await expect(
          s.store.append(subject, [contractEvent('h-1'), contractEvent('h-other')], 0),
        ).rejects.toBeInstanceOf(ConcurrencyConflict);
        expect(await idsOf(s, subject)).toEqual(['h-1', 'h-2']);
      }),
    );

    it(
      'past the duplicate window an event id is forgotten: the re-sent commit conflicts on a stale expectation and is stored anew on the current one',
      withStore(CONTRACT_LIMITS, async (s) => {
        const subject = s.subject('window');
        const first = await s.store.append(subject, [contractEvent('w-1')], 0);
        await s.advance(CONTRACT_LIMITS.duplicateWindowMs + 1_500);
        await expect(s.store.append(subject, [contractEvent('w-1')], 0)).rejects.toBeInstanceOf(ConcurrencyConflict);
        const again = await s.store.append(subject, [contractEvent('w-1')], first.lastSequence);
        expect(again.duplicates).toEqual([false]);
        expect(again.lastSequence).toBeGreaterThan(first.lastSequence);
        expect(await idsOf(s, subject)).toEqual(['w-1', 'w-1']);
      }),
    );

    it(
      'a load after a sequence returns only the later commits; at or past the last it returns none and the larger of the two positions',
      withStore(CONTRACT_LIMITS, async (s) => {
        const subject = s.subject('after');
        const other = s.subject('after-noise');
        const seqs: number[] = [];
        let noise = 0;
        for (let i = 0; i < 5; i++) {
          noise = (await s.store.append(other, [contractEvent(`an-${i}`)], noise)).lastSequence;
          seqs.push((await s.store.append(subject, [contractEvent(`a-${i}`, i)], seqs.at(-1) ?? 0)).lastSequence);
        }
        const tail = await s.store.load(subject, seqs[2]);
        expect(tail.events.map((e) => e.event.eventId)).toEqual(['a-3', 'a-4']);
        expect(tail.lastSequence).toBe(seqs[4]);
        expect(await s.store.load(subject, seqs[4])).toEqual({ events: [], lastSequence: seqs[4] });
        expect(await s.store.load(subject, seqs[4]! + 100)).toEqual({ events: [], lastSequence: seqs[4]! + 100 });
        expect(await s.store.load(s.subject('after-empty'))).toEqual({ events: [], lastSequence: 0 });
      }),
    );

    it(
      'a commit larger than the stream’s message size allows is refused with CommitTooLarge before anything is stored',
      withStore({ ...CONTRACT_LIMITS, maxMsgSizeBytes: 8 * 1024 }, async (s) => {
        const subject = s.subject('size');
        const bulky = Array.from({ length: 8 }, (_, i) => contractEvent(`big-${i}`, i, 'x'.repeat(1024)));
        await expect(s.store.append(subject, bulky, 0)).rejects.toBeInstanceOf(CommitTooLarge);
        expect(await s.store.load(subject)).toEqual({ events: [], lastSequence: 0 });
        const fits = await s.store.append(subject, bulky.slice(0, 2), 0);
        expect(fits.duplicates).toEqual([false, false]);
      }),
    );

    it(
      'a full stream refuses every new commit with StreamFull, stores nothing, keeps every earlier event, and still answers a duplicate',
      withStore({ ...CONTRACT_LIMITS, maxBytes: 8 * 1024 }, async (s) => {
        const subject = s.subject('full');
        let expected = 0;
        let refusal: unknown;
        let stored = 0;
        for (let i = 0; i < 200 && refusal === undefined; i++) {
          try {
            expected = (await s.store.append(subject, [contractEvent(`f-${i}`, i, 'x'.repeat(300))], expected))
              .lastSequence;
            stored++;
          } catch (error) {
            refusal = error;
          }
        }
        expect(refusal).toBeInstanceOf(StreamFull);
        expect(stored).toBeGreaterThan(5);
        await expect(
          s.store.append(s.subject('full-other'), [contractEvent('g-0', 0, 'x'.repeat(300))], 0),
        ).rejects.toBeInstanceOf(StreamFull);
        const duplicate = await s.store.append(subject, [contractEvent('f-0', 0, 'x'.repeat(300))], 0);
        expect(duplicate.duplicates).toEqual([true]);
        expect(await idsOf(s, subject)).toEqual(Array.from({ length: stored }, (_, i) => `f-${i}`));
      }),
    );
  });
}
