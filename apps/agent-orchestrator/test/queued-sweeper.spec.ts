// Proves the stuck-queued sweeper's selection rules: only units queued past the grace period,
// never while the queue may still hold their own (token-bearing) message, and a message id
// per grace period, so a re-publication passes the duplicate window but replicas dedupe.
import { describe, expect, it } from '@jest/globals';
import { requeueMessageId, unitsToRequeue } from '../src/work/queued-sweeper.js';

const o = { intervalMs: 1_000, graceMs: 60_000, batchMax: 10, publishTimeoutMs: 5_000 };
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const unit = (id: string, atMs: number) => ({ work_id: id, submitted_at: new Date(atMs).toISOString() });

describe('queued sweeper selection', () => {
  it('selects only units queued longer than the grace period', () => {
    const queued = [unit('old', T0), unit('young', T0 + 30_000)];
    expect(unitsToRequeue(queued, T0 + 61_000, Number.POSITIVE_INFINITY, o).map((u) => u.work_id)).toEqual(['old']);
  });

  it('leaves a unit alone while the queue still holds a message as old as its record plus the publish timeout', () => {
    const queued = [unit('a', T0), unit('b', T0 + 10_000)];
    expect(unitsToRequeue(queued, T0 + 120_000, T0 + 4_000, o)).toEqual([]);
    expect(unitsToRequeue(queued, T0 + 120_000, T0 + 6_000, o).map((u) => u.work_id)).toEqual(['a']);
  });

  it('the message id changes once per grace period and is the same within one', () => {
    expect(requeueMessageId('w', T0, T0 + 61_000, 60_000)).toBe('w:requeue:1');
    expect(requeueMessageId('w', T0, T0 + 119_000, 60_000)).toBe('w:requeue:1');
    expect(requeueMessageId('w', T0, T0 + 121_000, 60_000)).toBe('w:requeue:2');
    expect(requeueMessageId('w', T0, T0 + 61_000, 60_000)).not.toBe('w');
  });
});
