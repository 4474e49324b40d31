// Proves the edge translations of one attempt: gateway outcomes into the spec's table
// (with the HTTP status recovered for the auth-versus-rate-limit rule) and hold steps into
// the budget authority's Settle outcomes, pessimistic whenever the cost is not rated.
import { describe, expect, it } from '@jest/globals';
import { attemptOutcomeOf, outcomeOfGatewayFault, settleOutcomeOf } from '@tally/orchestrator-application';
import { holdStep, type AttemptSettlement, type AttemptState } from '@tally/orchestrator-domain';

const attempt = (settled: Omit<AttemptSettlement, 'orphaned' | 'at'> & { orphaned?: boolean }): AttemptState => ({
  ordinal: 0,
  reason: 'initial',
  leg_index: 0,
  provider: 'p',
  model: 'm',
  round: 0,
  hold_id: 'h',
  hold_cost_units: 100n,
  price: { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'EUR' },
  backoff_ms: 0,
  started_at: '2026-01-01T00:00:00.000Z',
  settled: { orphaned: false, at: '2026-01-01T00:00:01.000Z', ...settled },
});
const settleOf = (a: AttemptState) => {
  const step = holdStep(a);
  if (step.kind !== 'settle_hold') throw new Error('expected a hold step');
  return settleOutcomeOf(a, step);
};

describe('attempt outcome mapping', () => {
  it('a reply is recorded as domain unknown, settlement ok, with the provider usage', () => {
    expect(
      attemptOutcomeOf({ kind: 'ok', output: 'hi', usage: { input_tokens: 1, output_tokens: 2 }, latency_ms: 12.6 }),
    ).toEqual({
      domain: 'unknown',
      settlement: 'ok',
      latency_ms: 13,
      output: 'hi',
      usage: { input_tokens: 1, output_tokens: 2 },
    });
  });

  it('O5 the HTTP status travels with the outcome so auth (401/403) is told apart from rate limits', () => {
    const auth = attemptOutcomeOf({
      kind: 'error',
      domain: 'account',
      settlement: 'failed',
      error: 'HTTP 401: bad key',
      http_status: 401,
      latency_ms: 1,
    });
    expect(auth.http_status).toBe(401);
    const network = attemptOutcomeOf({
      kind: 'error',
      domain: 'network',
      settlement: 'unknown',
      error: 'HTTP 401 mentioned in a reset message',
      latency_ms: 1,
    });
    expect(network.http_status).toBeUndefined();
    const limited = attemptOutcomeOf({
      kind: 'error',
      domain: 'account',
      settlement: 'failed',
      error: 'HTTP 429',
      http_status: 429,
      retry_after_ms: 500,
      latency_ms: 1,
    });
    expect(limited).toMatchObject({ http_status: 429, retry_after_ms: 500 });
  });

  it('a gateway that throws is recorded unknown: the call may have been sent', () => {
    expect(outcomeOfGatewayFault(new Error('bug'), 5)).toMatchObject({
      domain: 'unknown',
      settlement: 'unknown',
      error: 'gateway fault: bug',
    });
  });

  it('O7 holds settle at the realized cost on usage, release on a definite refusal, and are kept whole otherwise', () => {
    expect(
      settleOf(
        attempt({ domain: 'unknown', settlement: 'ok', latency_ms: 1, usage: { input_tokens: 5, output_tokens: 3 } }),
      ),
    ).toEqual({ kind: 'completed', cost_units: 11n, currency: 'EUR', tokens_used: 8 });
    expect(settleOf(attempt({ domain: 'account', settlement: 'failed', latency_ms: 1, error: 'HTTP 429' }))).toEqual({
      kind: 'not_dispatched',
      reason: 'HTTP 429',
    });
    expect(settleOf(attempt({ domain: 'unknown', settlement: 'cancelled', latency_ms: 1 }))).toEqual({
      kind: 'failed_after_dispatch',
      failure: 'cancellation',
    });
    expect(settleOf(attempt({ domain: 'deadline', settlement: 'unknown', latency_ms: 1 }))).toEqual({
      kind: 'failed_after_dispatch',
      failure: 'deadline',
    });
    expect(settleOf(attempt({ domain: 'network', settlement: 'unknown', latency_ms: 1 }))).toEqual({
      kind: 'failed_after_dispatch',
      failure: 'incomplete',
    });
    expect(settleOf(attempt({ domain: 'unknown', settlement: 'unknown', latency_ms: 1, orphaned: true }))).toEqual({
      kind: 'failed_after_dispatch',
      failure: 'incomplete',
    });
  });
});
