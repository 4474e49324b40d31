// Proves that republishing the same commit after an unknown outcome is safe against a
// real nats-server: inside the duplicate window, after it, and never completed in part.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ConcurrencyConflict } from '@tally/eventing';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { republishAfterUnknown } from '../src/append-with-redelivery.js';
import { counterEvent, sleep, storeFixture, type StoreFixture } from './fixtures.js';

const DUPLICATE_WINDOW_MS = 200;
const retry = { attemptsMax: 5, retryDelayMs: 20, retryDelayMaxMs: 100 };

describe('republishing after an unknown append outcome', () => {
  let f: StoreFixture;
  beforeAll(async () => {
    f = await storeFixture(sharedNatsUrl(), uniqueNamespace('rp'), { duplicateWindowMs: DUPLICATE_WINDOW_MS });
  });
  afterAll(async () => f.dispose());

  const ev = (id: string, agg: string) => counterEvent(id, agg, 1, 'w');

  it('inside the duplicate window, a re-sent commit that landed is stored once and returns its original sequence as duplicates', async () => {
    const subject = f.names.workEventSubject('inside');
    const first = await f.store.append(subject, [ev('in-1', 'inside'), ev('in-2', 'inside')], 0);
    const again = await republishAfterUnknown(f.store, subject, [ev('in-1', 'inside'), ev('in-2', 'inside')], 0, retry);
    expect(again.sequences).toEqual(first.sequences);
    expect(again.duplicates).toEqual([true, true]);
    expect((await f.store.load(subject)).events).toHaveLength(2);
  });

  it('after the duplicate window, the expected sequence still refuses a second copy, and a read finds the events that landed', async () => {
    const subject = f.names.workEventSubject('after');
    const first = await f.store.append(subject, [ev('af-1', 'after'), ev('af-2', 'after')], 0);
    await sleep(DUPLICATE_WINDOW_MS * 4);
    // Precondition: the server has forgotten the ids, so only the expected sequence protects us.
    await expect(f.store.append(subject, [ev('af-1', 'after')], 0)).rejects.toBeInstanceOf(ConcurrencyConflict);
    const again = await republishAfterUnknown(f.store, subject, [ev('af-1', 'after'), ev('af-2', 'after')], 0, retry);
    expect(again).toEqual({ sequences: first.sequences, duplicates: [true, true], lastSequence: first.lastSequence });
    expect((await f.store.load(subject)).events.map((e) => e.event.eventId)).toEqual(['af-1', 'af-2']);
  });

  it('a commit is never completed in part: a stream holding only some of its events is refused as a broken store', async () => {
    const subject = f.names.workEventSubject('partial');
    // Only an older, chained writer could leave this behind: one event of the commit alone.
    await f.store.append(subject, [ev('pa-1', 'partial')], 0);
    await sleep(DUPLICATE_WINDOW_MS * 4);
    await expect(
      republishAfterUnknown(f.store, subject, [ev('pa-1', 'partial'), ev('pa-2', 'partial')], 0, retry),
    ).rejects.toThrow(/only partly in the stream/);
    expect((await f.store.load(subject)).events.map((e) => e.event.eventId)).toEqual(['pa-1']);
  });

  it('when none landed and another writer moved the aggregate on, it is a genuine ConcurrencyConflict', async () => {
    const subject = f.names.workEventSubject('lost');
    await f.store.append(subject, [ev('other-1', 'lost')], 0);
    await expect(republishAfterUnknown(f.store, subject, [ev('mine-1', 'lost')], 0, retry)).rejects.toBeInstanceOf(
      ConcurrencyConflict,
    );
    expect((await f.store.load(subject)).events.map((e) => e.event.eventId)).toEqual(['other-1']);
  });
});
