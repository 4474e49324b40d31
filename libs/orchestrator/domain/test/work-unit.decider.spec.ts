// Proves the work-unit decider's rules: retries by failure domain, the fail-closed dispatch
// ceiling, aborts, orphaned attempts, the settlement rule and idempotent submission.
import { describe, expect, it } from '@jest/globals';
import {
  decide,
  defaultDispatchCeiling,
  foldWorkEvents,
  planNext,
  receiptOf,
  resolveLimits,
  type AttemptOutcome,
  type WorkEvent,
  type WorkUnitState,
} from '../src/index.js';
import { PRICE, at, expectEvents, run, simulate, submit } from './fixtures.js';

const network: AttemptOutcome = { domain: 'network', settlement: 'unknown', latency_ms: 3, error: 'conn reset' };
const ok: AttemptOutcome = {
  domain: 'unknown',
  settlement: 'ok',
  latency_ms: 7,
  output: 'done',
  usage: { input_tokens: 5, output_tokens: 3 },
};
const rateLimited: AttemptOutcome = {
  domain: 'account',
  settlement: 'failed',
  latency_ms: 1,
  error: 'slow down',
  http_status: 429,
};
const zeroJitter = () => 0;
const submitted = (overrides = {}) => run({ status: 'absent', attempts: [] }, submit(overrides)).state;
const start = (ordinal: number, j = 0) => ({
  type: 'StartAttempt' as const,
  command_id: `start-${ordinal}`,
  at: at(ordinal),
  ordinal,
  jitter: j,
  hold_id: `h${ordinal}`,
  hold_cost_units: 10n,
  price: PRICE,
});
const foldAll = (events: readonly WorkEvent[], from: WorkUnitState = submitted()) => foldWorkEvents(events, from);

describe('work-unit decider', () => {
  it('O1 a network failure then success completes with two attempts and winning_attempt 1 (0-based ordinals)', () => {
    const outcomes = [network, ok];
    const events = simulate(submitted(), (n) => outcomes[n], zeroJitter);
    const receipt = receiptOf(foldAll(events));
    expect(receipt?.purpose).toBe('execute');
    expect(receipt?.attempts).toHaveLength(2);
    expect(receipt?.attempts[0]).toMatchObject({
      ordinal: 0,
      reason: 'initial',
      domain: 'network',
      settlement: 'unknown',
    });
    expect(receipt?.attempts[1]).toMatchObject({
      ordinal: 1,
      reason: 'retry',
      settlement: 'ok',
      usage: { input_tokens: 5, output_tokens: 3, cost_units: 11n },
    });
    expect(receipt?.winning_attempt).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'WorkCompleted', winning_attempt: 1, output: 'done' });
  });

  it('O2 the default ceiling is (max_retries + 1) × (run_retry_attempts + 1)', () => {
    expect(resolveLimits({ max_retries: 3, run_retry_attempts: 2 }).dispatch_ceiling).toBe(12);
    expect(defaultDispatchCeiling(0, 0)).toBe(1);
  });

  it('O2 an always-429 provider with ceiling 2 fails closed after 2 account/failed attempts and no winner', () => {
    const state = submitted({ limits: { max_retries: 1, run_retry_attempts: 0, dispatch_ceiling: 2 } });
    const events = simulate(state, () => rateLimited, zeroJitter);
    const final = foldAll(events, state);
    const receipt = receiptOf(final);
    expect(receipt?.attempts).toHaveLength(2);
    expect(receipt?.attempts.every((a) => a.domain === 'account' && a.settlement === 'failed')).toBe(true);
    expect(receipt?.winning_attempt).toBeNull();
    expect(final.failure?.error).toContain('dispatch ceiling of 2');
  });

  it('O2 a dispatch past the ceiling cannot be decided, even with retries left', () => {
    let state = submitted({ limits: { max_retries: 5, run_retry_attempts: 0, dispatch_ceiling: 1 } });
    state = run(state, start(0)).state;
    state = run(state, { type: 'SettleAttempt', command_id: 's0', at: at(1), ordinal: 0, outcome: network }).state;
    state = run(state, { type: 'RecordHoldSettled', command_id: 'h0', at: at(2), ordinal: 0, hold_id: 'h0' }).state;
    expect(planNext(state, 0)).toMatchObject({ kind: 'fail', code: 'dispatch_ceiling' });
    const decision = decide(start(1), state);
    expect(decision.ok).toBe(false);
  });

  it('O3 an abort mid-stream ends the work Aborted, the attempt cancelled, partial output kept, never retried', () => {
    const aborted: AttemptOutcome = {
      domain: 'unknown',
      settlement: 'cancelled',
      latency_ms: 2,
      error: 'aborted by caller',
      partial_output: 'partial answer',
    };
    const state = submitted();
    const events = simulate(state, () => aborted, zeroJitter);
    const final = foldAll(events, state);
    expect(final.status).toBe('aborted');
    expect(final.attempts).toHaveLength(1);
    expect(final.attempts[0]?.settled?.settlement).toBe('cancelled');
    expect(final.aborted?.partial_output).toBe('partial answer');
    expect(receiptOf(final)?.winning_attempt).toBeNull();
  });

  it('O3 an abort requested between attempts stops the unit before the next dispatch', () => {
    let state = submitted();
    state = run(state, start(0)).state;
    state = run(state, { type: 'SettleAttempt', command_id: 's0', at: at(1), ordinal: 0, outcome: network }).state;
    state = run(state, { type: 'RequestAbort', command_id: 'a', at: at(2), reason: 'user abort' }).state;
    state = run(state, { type: 'RecordHoldSettled', command_id: 'h0', at: at(3), ordinal: 0, hold_id: 'h0' }).state;
    expect(planNext(state, 0)).toMatchObject({ kind: 'abort', reason: 'user abort' });
    expect(decide(start(1), state).ok).toBe(false);
  });

  it('O6 an attempt found unsettled is settled unknown and counts against the ceiling', () => {
    let state = submitted({ limits: { max_retries: 1, run_retry_attempts: 0 } });
    state = run(state, start(0)).state;
    expect(planNext(state, 0)).toEqual({ kind: 'settle_orphan', ordinal: 0 });
    expectEvents(state, { type: 'SettleOrphanedAttempt', command_id: 'o', at: at(5000), ordinal: 0 }, [
      { type: 'AttemptSettledUnknown', ordinal: 0, latency_ms: 5000 },
    ]);
    state = run(state, { type: 'SettleOrphanedAttempt', command_id: 'o', at: at(5000), ordinal: 0 }).state;
    expect(planNext(state, 0)).toMatchObject({ kind: 'settle_hold', outcome: 'failed_after_dispatch' });
    const events = simulate(state, () => undefined, zeroJitter);
    const final = foldAll(events, state);
    expect(final.attempts).toHaveLength(2);
    expect(final.failure?.error).toContain('dispatch ceiling of 2');
  });

  it('O6 a worker holding a stale plan cannot start an ordinal twice', () => {
    let state = submitted();
    const first = start(0);
    state = run(state, first).state;
    expect(decide({ ...first, command_id: 'other-worker' }, state)).toMatchObject({
      ok: false,
      rejection: { code: 'stale_step' },
    });
  });

  it('a reply without usage completes the work but settles unknown and keeps the whole hold (absent is unknown)', () => {
    const state = submitted();
    const events = simulate(
      state,
      () => ({ domain: 'unknown', settlement: 'ok', latency_ms: 1, output: 'done' }),
      zeroJitter,
    );
    const final = foldAll(events, state);
    expect(final.status).toBe('completed');
    expect(final.attempts[0]?.settled?.settlement).toBe('unknown');
    expect(final.attempts[0]?.hold?.outcome).toBe('failed_after_dispatch');
  });

  it('a definite refusal settles the hold not_dispatched; usage settles it completed at the realized cost', () => {
    const state = submitted({ limits: { max_retries: 1, run_retry_attempts: 0 } });
    const final = foldAll(
      simulate(state, (n) => [rateLimited, ok][n], zeroJitter),
      state,
    );
    expect(final.attempts.map((a) => a.hold?.outcome)).toEqual(['not_dispatched', 'completed']);
    expect(final.attempts[1]?.hold?.cost_units).toBe(11n); // 5 in × 1 + 3 out × 2 units per token
  });

  it('submitting the same work again is idempotent; different content under the same id is refused', () => {
    const state = submitted();
    expect(decide(submit({ command_id: 'again', at: at(99) }), state)).toEqual({ ok: true, events: [] });
    expect(decide(submit({ purpose: 'plan' }), state)).toMatchObject({
      ok: false,
      rejection: { code: 'already_submitted' },
    });
  });

  it('invalid work is refused with every problem named', () => {
    const decision = decide(submit({ work_id: 'bad id', route: [], limits: { dispatch_ceiling: 0 } }), {
      status: 'absent',
      attempts: [],
    });
    expect(decision.ok).toBe(false);
    if (!decision.ok) {
      expect(decision.rejection.code).toBe('invalid_work');
      expect(decision.rejection.message).toMatch(/work_id.*route.*dispatch_ceiling/);
    }
  });

  it('O7 a refused attempt fails the work with the given reason and only for the planned ordinal', () => {
    const state = submitted();
    expect(
      decide(
        { type: 'RefuseAttempt', command_id: 'r', at: at(1), ordinal: 3, code: 'admission_denied', error: 'x' },
        state,
      ).ok,
    ).toBe(false);
    expectEvents(
      state,
      {
        type: 'RefuseAttempt',
        command_id: 'r',
        at: at(1),
        ordinal: 0,
        code: 'admission_denied',
        error: 'budget exhausted',
      },
      [{ type: 'WorkFailed', code: 'admission_denied', error: 'budget exhausted' }],
    );
  });

  it('commands after the unit ended are refused', () => {
    const state = submitted();
    const final = foldAll(
      simulate(state, () => ok, zeroJitter),
      state,
    );
    expect(decide({ type: 'RequestAbort', command_id: 'late', at: at(9), reason: 'late' }, final)).toMatchObject({
      ok: false,
      rejection: { code: 'terminal' },
    });
  });
});
