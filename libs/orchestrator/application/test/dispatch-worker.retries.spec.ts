// Proves retry timing and scale-out against real JetStream and a real HTTP provider: O5
// backoff within its bound, retry-after honoured, fallback legs; O6 racing workers and
// redelivery after a lost worker never run an ordinal twice nor pass the ceiling.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { budgetCommandIds } from '@tally/orchestrator-application';
import type { AttemptSettled, AttemptStarted, WorkEvent } from '@tally/orchestrator-domain';
import { PRICES, workFixture, type WorkFixture } from './work.fixture.js';

const started = (events: readonly WorkEvent[]) =>
  events.filter((e): e is AttemptStarted => e.type === 'AttemptStarted');
const settled = (events: readonly WorkEvent[]) =>
  events.filter((e): e is AttemptSettled => e.type === 'AttemptSettled');
const gapMs = (from: string, to: string) => Date.parse(to) - Date.parse(from);

describe('dispatch worker retries and scale-out', () => {
  let f: WorkFixture;
  beforeEach(async () => {
    f = await workFixture('orchr');
  });
  afterEach(async () => {
    await f.dispose();
  });

  it('O5 retries back off exponentially with jitter inside the bound, and wait at least that long', async () => {
    f.provider.script('flaky-model', [
      { kind: 'status', status: 503 },
      { kind: 'status', status: 503 },
      { kind: 'stream', chunks: ['ok'] },
    ]);
    await f.submit('o5a', {
      route: [{ provider: 'scripted', model: 'flaky-model' }],
      limits: { max_retries: 2, retry_base_backoff_ms: 200, max_backoff_ms: 1_000 },
    });
    await f.worker({ jitter: () => 0.5 }).process('o5a');
    const { events } = await f.repository.load('o5a');
    const [, first, second] = started(events);
    const settlements = settled(events);
    expect(first?.backoff_ms).toBeGreaterThanOrEqual(100);
    expect(first?.backoff_ms).toBeLessThanOrEqual(200);
    expect(second?.backoff_ms).toBeGreaterThanOrEqual(200);
    expect(second?.backoff_ms).toBeLessThanOrEqual(400);
    expect(gapMs(settlements[0]?.at ?? '', first?.at ?? '')).toBeGreaterThanOrEqual(first?.backoff_ms ?? Infinity);
    expect(gapMs(settlements[1]?.at ?? '', second?.at ?? '')).toBeGreaterThanOrEqual(second?.backoff_ms ?? Infinity);
  });

  it('O5 a retry honours the provider retry-after', async () => {
    f.provider.script('limited-model', [
      { kind: 'status', status: 429, retryAfter: '1' },
      { kind: 'stream', chunks: ['ok'] },
    ]);
    await f.submit('o5b', { route: [{ provider: 'scripted', model: 'limited-model' }] });
    const result = await f.worker().process('o5b');
    expect(result).toMatchObject({ status: 'completed' });
    const { events } = await f.repository.load('o5b');
    const retry = started(events)[1];
    expect(retry).toMatchObject({ reason: 'retry', backoff_ms: 1_000 });
    expect(gapMs(settled(events)[0]?.at ?? '', retry?.at ?? '')).toBeGreaterThanOrEqual(1_000);
  });

  it('O5 fallback legs of the route ladder are attempts with reason route_fallback', async () => {
    f.provider.always('bad-model', { kind: 'status', status: 400 });
    await f.submit('o5c', {
      route: [
        { provider: 'scripted', model: 'bad-model' },
        { provider: 'scripted', model: 'ok-model' },
      ],
    });
    const result = await f.worker().process('o5c');
    expect(result).toMatchObject({ status: 'completed' });
    const receipt = await f.units.receipt('o5c');
    expect(receipt?.attempts.map((a) => [a.reason, a.model, a.domain, a.settlement])).toEqual([
      ['initial', 'bad-model', 'request', 'failed'],
      ['route_fallback', 'ok-model', 'unknown', 'ok'],
    ]);
    expect(receipt).toMatchObject({ provider: 'scripted', model: 'ok-model', winning_attempt: 1 });
    expect(f.provider.calls('bad-model')).toBe(1);
  });

  it('O6 workers racing the same unit never run one ordinal twice nor pass the ceiling', async () => {
    f.provider.always('limited-model', { kind: 'status', status: 503, latencyMs: 20 });
    await f.submit('o6a', {
      route: [{ provider: 'scripted', model: 'limited-model' }],
      limits: { max_retries: 10, dispatch_ceiling: 3 },
    });
    const others = await Promise.all([f.reopen(), f.reopen(), f.reopen()]);
    try {
      const workers = [f.worker(), ...others.map((o) => f.worker({ repository: o.repository }))];
      const results = await Promise.all(workers.map((w) => w.process('o6a')));
      expect(results.some((r) => r.kind === 'ended' && r.status === 'failed')).toBe(true);
      const { events, state } = await f.repository.load('o6a');
      expect(started(events).map((e) => e.ordinal)).toEqual([0, 1, 2]);
      expect(state.failure?.error).toContain('dispatch ceiling of 3');
      // Every paid call is an attempt that won its conditional append.
      expect(f.provider.calls('limited-model')).toBeLessThanOrEqual(3);
      // Racing workers shared one hold per ordinal through the admit command id.
      expect(new Set(started(events).map((e) => e.hold_id)).size).toBe(3);
    } finally {
      await Promise.all(others.map((o) => o.close()));
    }
  });

  it('O6 an attempt left unsettled by a killed worker is settled unknown on redelivery and counts against the ceiling', async () => {
    await f.submit('o6b', { limits: { dispatch_ceiling: 1 } });
    // What a worker killed right after starting attempt 0 leaves behind: an admitted hold and an open attempt.
    const ids = budgetCommandIds('o6b', 0);
    const admission = await f.budget.admit({
      command_id: ids.admit,
      request_id: ids.request_id,
      token: 't',
      server_id: 'scripted',
      tool_name: 'ok-model',
      parameters_hash: '0'.repeat(64),
      requested_cost_units: 10n,
      context: { kind: 'work_unit', work_id: 'o6b', session_id: 's', purpose: 'execute', ordinal: 0 },
    });
    await f.repository.execute(
      'o6b',
      {
        type: 'StartAttempt',
        command_id: 'killed-worker',
        at: new Date().toISOString(),
        ordinal: 0,
        jitter: 0,
        hold_id: admission.hold_id ?? '',
        hold_cost_units: 10n,
        price: PRICES['ok-model'],
      },
      3,
    );

    const result = await f.worker().process('o6b');
    expect(result).toMatchObject({ kind: 'ended', status: 'failed' });
    expect(result.kind === 'ended' && result.error).toContain('dispatch ceiling of 1');
    const { events } = await f.repository.load('o6b');
    expect(events.map((e) => e.type)).toEqual([
      'WorkSubmitted',
      'AttemptStarted',
      'AttemptSettledUnknown',
      'HoldSettled',
      'WorkFailed',
    ]);
    expect((await f.units.receipt('o6b'))?.attempts[0]).toMatchObject({ domain: 'unknown', settlement: 'unknown' });
    expect(f.provider.calls()).toBe(0);
    expect(f.budget.effectiveSettles().map((s) => s.outcome)).toEqual([
      { kind: 'failed_after_dispatch', failure: 'incomplete' },
    ]);
  });

  it('O6 a stalled worker whose attempt was taken over is superseded and records nothing', async () => {
    f.provider.script('slow-model', [{ kind: 'hang' }, { kind: 'stream', chunks: ['done'] }]);
    await f.submit('o6c', {
      route: [{ provider: 'scripted', model: 'slow-model' }],
      limits: { timeout_ms: 1_500, dispatch_ceiling: 2 },
    });
    const stalled = f.worker().process('o6c');
    while (f.provider.calls('slow-model') === 0) await new Promise((r) => setTimeout(r, 10));
    const other = await f.reopen();
    try {
      const takeover = await f.worker({ repository: other.repository }).process('o6c');
      expect(takeover).toMatchObject({ kind: 'ended', status: 'completed', output: 'done' });
      expect(await stalled).toMatchObject({ kind: 'superseded' });
      const receipt = await f.units.receipt('o6c');
      expect(receipt?.attempts.map((a) => [a.ordinal, a.settlement])).toEqual([
        [0, 'unknown'],
        [1, 'ok'],
      ]);
      expect(receipt?.winning_attempt).toBe(1);
    } finally {
      await other.close();
    }
  });
});
