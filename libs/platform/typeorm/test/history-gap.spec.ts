// Proves issue 9 item 1 for replays: a projection over a stream that no longer holds its first events refuses to run.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { ProjectionHalted } from '../src/index.js';
import { counterProjection } from './counter.projection.js';
import { counterRows, counterRunner, openTestDatabase, streamFixture, type StreamFixture } from './fixtures.js';

describe('projection replay over a stream that lost its head', () => {
  let nats: StreamFixture;
  beforeAll(async () => {
    nats = await streamFixture(sharedNatsUrl(), uniqueNamespace('gap'), true);
  });
  afterAll(async () => nats.dispose());

  it('issue 9 item 1: a rebuild halts with HistoryGap, applying nothing, once the stream no longer starts at 1', async () => {
    await nats.publish(20, 3, uniqueNamespace('g'));
    // What discard: old did when a stream filled up: the oldest messages are gone.
    await nats.jsm.streams.deleteMessage(nats.stream, 1, false);
    await nats.jsm.streams.deleteMessage(nats.stream, 2, false);
    const db = await openTestDatabase('sqlite', uniqueNamespace('gapdb'));
    try {
      const runner = counterRunner(nats.js, db.dataSource, counterProjection(nats.stream, nats.filterSubject));
      const rebuild = runner.rebuild();
      await expect(rebuild).rejects.toBeInstanceOf(ProjectionHalted);
      await expect(rebuild).rejects.toThrow(/starts at sequence 3 but this projection needs every event from 1 on/);
      expect(await counterRows(db.dataSource)).toEqual([]);
      expect(await runner.checkpoint()).toBe(0);
    } finally {
      await db.dispose();
    }
  });
});
