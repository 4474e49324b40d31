// Proves the retry policy: exponential backoff with jitter inside its bound, retry-after
// honoured, fallback legs as route_fallback, endurance rounds, and no same-leg retry of
// auth or invalid-request failures.
import { describe, expect, it } from '@jest/globals';
import { backoffMs, planNext, type AttemptOutcome, type WorkUnitState } from '../src/index.js';
import { PRICE, at, run, simulate, submit } from './fixtures.js';

const twoLegs = [
  { provider: 'alpha', model: 'a1' },
  { provider: 'beta', model: 'b1' },
];
const overloaded: AttemptOutcome = {
  domain: 'provider',
  settlement: 'failed',
  latency_ms: 1,
  error: 'overloaded',
  http_status: 529,
};

/** Runs attempts with the given outcomes and returns the state before the next decision. */
function after(outcomes: AttemptOutcome[], overrides = {}): WorkUnitState {
  let state = run({ status: 'absent', attempts: [] }, submit(overrides)).state;
  outcomes.forEach((outcome, ordinal) => {
    const plan = planNext(state, 0);
    if (plan.kind !== 'dispatch') throw new Error(`expected a dispatch, got ${plan.kind}`);
    state = run(state, {
      type: 'StartAttempt',
      command_id: `s${ordinal}`,
      at: at(ordinal * 10),
      ordinal,
      jitter: 0,
      hold_id: `h${ordinal}`,
      hold_cost_units: 1n,
      price: PRICE,
    }).state;
    state = run(state, {
      type: 'SettleAttempt',
      command_id: `x${ordinal}`,
      at: at(ordinal * 10 + 1),
      ordinal,
      outcome,
    }).state;
    state = run(state, {
      type: 'RecordHoldSettled',
      command_id: `h${ordinal}`,
      at: at(ordinal * 10 + 2),
      ordinal,
      hold_id: `h${ordinal}`,
    }).state;
  });
  return state;
}

describe('attempt policy', () => {
  it('O5 backoff grows exponentially, stays within [exp/2, exp] for any jitter, and never exceeds the bound', () => {
    for (const jitter of [0, 0.25, 0.5, 0.999999]) {
      for (let n = 1; n <= 12; n++) {
        const exp = Math.min(30_000, 500 * 2 ** (n - 1));
        const wait = backoffMs(n, 500, 30_000, jitter);
        expect(wait).toBeGreaterThanOrEqual(Math.floor(exp / 2));
        expect(wait).toBeLessThanOrEqual(exp);
      }
    }
    expect(backoffMs(1, 500, 30_000, 0)).toBe(250);
    expect(backoffMs(3, 500, 30_000, 0)).toBe(1000);
    expect(() => planNext(after([]), 1)).toThrow(/jitter/);
  });

  it('O5 a retry waits at least the provider retry-after', () => {
    const state = after([
      { domain: 'account', settlement: 'failed', latency_ms: 1, error: '429', http_status: 429, retry_after_ms: 7_000 },
    ]);
    expect(planNext(state, 0)).toMatchObject({
      kind: 'dispatch',
      reason: 'retry',
      ordinal: 1,
      backoff_ms: 7_000,
      wait_from: at(1),
    });
  });

  it('O5 a retry-after longer than max_retry_after_ms moves to the next leg instead of retrying early', () => {
    const state = after(
      [
        {
          domain: 'account',
          settlement: 'failed',
          latency_ms: 1,
          error: '429',
          http_status: 429,
          retry_after_ms: 600_000,
        },
      ],
      { route: twoLegs },
    );
    expect(planNext(state, 0)).toMatchObject({
      kind: 'dispatch',
      reason: 'route_fallback',
      leg: { provider: 'beta' },
      backoff_ms: 0,
    });
  });

  it('O5 fallback legs are attempts with reason route_fallback, then endurance rounds restart the ladder', () => {
    const state = after([overloaded, overloaded, overloaded, overloaded], {
      route: twoLegs,
      limits: { max_retries: 1, run_retry_attempts: 1, dispatch_ceiling: 8 },
    });
    expect(state.attempts.map((a) => [a.reason, a.leg_index, a.round])).toEqual([
      ['initial', 0, 0],
      ['retry', 0, 0],
      ['route_fallback', 1, 0],
      ['retry', 1, 0],
    ]);
    expect(planNext(state, 0)).toMatchObject({
      kind: 'dispatch',
      reason: 'endurance_retry',
      leg_index: 0,
      round: 1,
      backoff_ms: 1_000,
    });
  });

  it('O5 auth failures are not retried on the same leg; the ladder falls back', () => {
    const state = after(
      [{ domain: 'account', settlement: 'failed', latency_ms: 1, error: '401 unauthorized', http_status: 401 }],
      { route: twoLegs },
    );
    expect(planNext(state, 0)).toMatchObject({ kind: 'dispatch', reason: 'route_fallback', leg_index: 1 });
  });

  it('O5 an invalid request on the only leg fails at once as not retryable, spending no more of the ceiling', () => {
    const state = after([
      { domain: 'request', settlement: 'failed', latency_ms: 1, error: '400 bad request', http_status: 400 },
    ]);
    expect(planNext(state, 0)).toMatchObject({ kind: 'fail', code: 'not_retryable' });
  });

  it('O5 endurance rounds skip legs that refused definitively', () => {
    const auth: AttemptOutcome = {
      domain: 'account',
      settlement: 'failed',
      latency_ms: 1,
      error: 'forbidden',
      http_status: 403,
    };
    const state = after([auth, overloaded], {
      route: twoLegs,
      limits: { max_retries: 0, run_retry_attempts: 1, dispatch_ceiling: 4 },
    });
    expect(planNext(state, 0)).toMatchObject({ kind: 'dispatch', reason: 'endurance_retry', leg_index: 1 });
  });

  it('retries are exhausted before the ceiling when the ceiling is larger than the ladder', () => {
    const state = after([overloaded, overloaded], {
      limits: { max_retries: 1, run_retry_attempts: 0, dispatch_ceiling: 5 },
    });
    expect(planNext(state, 0)).toMatchObject({ kind: 'fail', code: 'retries_exhausted' });
  });

  it('an always-failing provider uses exactly the default ceiling of attempts', () => {
    const state = run(
      { status: 'absent', attempts: [] },
      submit({ limits: { max_retries: 2, run_retry_attempts: 2 } }),
    ).state;
    const events = simulate(
      state,
      () => overloaded,
      () => 0,
    );
    expect(events.filter((e) => e.type === 'AttemptStarted')).toHaveLength(9);
  });
});
