// Proves a projection batch never splits a commit: the checkpoint is a stream sequence, so
// every batch the reader hands out, and every batch the runner applies, holds whole commits.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { StoredEvent } from '@tally/eventing';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { EventBatchReader } from '../src/index.js';
import { counterProjection, counterRegistry } from './counter.projection.js';
import {
  counterRows,
  counterRunner,
  databasesUnderTest,
  openTestDatabase,
  runnerLimits,
  streamFixture,
  type DatabaseKindUnderTest,
  type StreamFixture,
  type TestDatabase,
} from './fixtures.js';

/** Commit sizes chosen to straddle a batch limit of 4 events: 3+1, then 4, then 2, then a 5 bigger than the limit. */
const COMMIT_SIZES = [3, 1, 4, 2, 5, 1, 3];
const BATCH_EVENTS_MAX = 4;

describe.each(databasesUnderTest())('projection batches of commits on %s', (kind: DatabaseKindUnderTest) => {
  let nats: StreamFixture;
  let commits: Map<number, number>;
  const databases: TestDatabase[] = [];

  beforeAll(async () => {
    nats = await streamFixture(sharedNatsUrl(), uniqueNamespace('cb'));
    commits = await publishCommits(nats, COMMIT_SIZES);
  });
  afterEach(async () => {
    for (const db of databases.splice(0)) await db.dispose();
  });
  afterAll(async () => nats.dispose());

  it('a projection batch never splits a commit (reader, batch limit below some commit sizes)', async () => {
    const reader = await EventBatchReader.open(nats.js, {
      stream: nats.stream,
      filterSubject: nats.filterSubject,
      startSequence: 1,
      registry: counterRegistry(),
      ...runnerLimits,
    });
    const batches: StoredEvent[][] = [];
    try {
      while (!(batches.length > 0 && reader.reachedEnd)) {
        batches.push(
          await reader.read({
            limit: BATCH_EVENTS_MAX,
            batchWaitMs: 500,
            firstWaitMs: 5000,
            stop: new Promise(() => undefined),
            stopAtEnd: true,
          }),
        );
      }
    } finally {
      await reader.close();
    }
    expectWholeCommits(batches, commits);
    // Only a lone commit bigger than the limit may exceed it.
    for (const batch of batches)
      expect(batch.length <= BATCH_EVENTS_MAX || new Set(batch.map((e) => e.sequence)).size === 1).toBe(true);
    expect(batches.flat().map((e) => e.event.payload['writer'])).toEqual(
      COMMIT_SIZES.flatMap((size, c) => Array.from({ length: size }, (_, p) => `c${c}p${p}`)),
    );
  });

  it('a projection batch never splits a commit (runner catch-up commits whole commits with their checkpoint)', async () => {
    const db = await openTestDatabase(kind, uniqueNamespace('cb-db'));
    databases.push(db);
    const applied: StoredEvent[][] = [];
    const projection = counterProjection(nats.stream, nats.filterSubject, {
      afterWrite: async (events) => void applied.push([...events]),
    });
    const result = await counterRunner(nats.js, db.dataSource, projection, {
      batchSizeMax: BATCH_EVENTS_MAX,
    }).catchUp();
    expectWholeCommits(applied, commits);
    const total = COMMIT_SIZES.reduce((a, b) => a + b, 0);
    expect(result).toMatchObject({ events: total, checkpoint: Math.max(...commits.keys()) });
    expect((await counterRows(db.dataSource)).reduce((sum, row) => sum + row.events, 0)).toBe(total);
  });
});

/** Publishes one commit per size on one subject; returns sequence -> number of events. */
async function publishCommits(nats: StreamFixture, sizes: readonly number[]): Promise<Map<number, number>> {
  const registry = counterRegistry();
  const commits = new Map<number, number>();
  for (const [c, size] of sizes.entries()) {
    const events = Array.from({ length: size }, (_, p) => ({
      eventId: `c${c}p${p}`,
      type: 'AmountRecorded',
      aggregateId: 'agg-0',
      occurredAt: '2026-01-01T00:00:00.000Z',
      payload: { amountMinor: 1, writer: `c${c}p${p}` },
    }));
    const ack = await nats.js.publish(
      nats.subject('agg-0'),
      registry.encodeCommit(events, { eventsMax: 16, bytesMax: 64 * 1024 }),
      { msgID: `c${c}p0` },
    );
    commits.set(ack.seq, size);
  }
  return commits;
}

function expectWholeCommits(batches: readonly (readonly StoredEvent[])[], commits: ReadonlyMap<number, number>): void {
  const seenIn = new Map<number, number>();
  for (const [index, batch] of batches.entries()) {
    for (const event of batch) {
      expect(seenIn.get(event.sequence) ?? index).toBe(index);
      seenIn.set(event.sequence, index);
    }
    for (const sequence of new Set(batch.map((e) => e.sequence)))
      expect(batch.filter((e) => e.sequence === sequence)).toHaveLength(commits.get(sequence)!);
  }
  expect([...seenIn.keys()].sort((a, b) => a - b)).toEqual([...commits.keys()].sort((a, b) => a - b));
}
