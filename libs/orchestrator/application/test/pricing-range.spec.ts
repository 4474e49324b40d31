// Proves that the orchestrator's cost arithmetic stays within the ledger's amounts (ADR 0044): a worst case past 2^63-1 is never asked for, and usage priced past it is settled as unknown, keeping the hold.
import { describe, expect, it } from '@jest/globals';
import { AMOUNT_MAX_UNITS, TOKENS_MAX, moneyFromWire } from '@tally/contracts';
import { settleOutcomeOf } from '@tally/orchestrator-application';
import {
  holdStep,
  realizedCostUnits,
  worstCaseCostUnits,
  type AttemptState,
  type ModelPrice,
  type Usage,
} from '@tally/orchestrator-domain';

const HUGE: ModelPrice = {
  input_per_mtok_units: Number.MAX_SAFE_INTEGER,
  output_per_mtok_units: Number.MAX_SAFE_INTEGER,
  currency: 'USD',
};
const PRICE: ModelPrice = { input_per_mtok_units: 1_000_000_000_000, output_per_mtok_units: 1, currency: 'USD' };

const attempt = (usage: Usage, price = PRICE): AttemptState => ({
  ordinal: 0,
  reason: 'initial',
  leg_index: 0,
  provider: 'p',
  model: 'm',
  round: 0,
  hold_id: 'h',
  hold_cost_units: 100n,
  price,
  backoff_ms: 0,
  started_at: '2026-01-01T00:00:00.000Z',
  settled: {
    domain: 'unknown',
    settlement: 'ok',
    latency_ms: 1,
    orphaned: false,
    at: '2026-01-01T00:00:01.000Z',
    usage,
  },
});

function settleOf(a: AttemptState) {
  const step = holdStep(a);
  if (step.kind !== 'settle_hold') throw new Error('expected a hold step');
  return settleOutcomeOf(a, step);
}

describe('ADR 0044 pricing within the range of an amount', () => {
  it('O7 a worst-case hold past 2^63-1 is refused in pricing, never sent as a requested cost', () => {
    expect(() => worstCaseCostUnits(HUGE, 10, Number.MAX_SAFE_INTEGER)).toThrow(RangeError);
    expect(() => worstCaseCostUnits(HUGE, 10, Number.MAX_SAFE_INTEGER)).toThrow(
      /past the largest amount, 2\^63-1 minor units/,
    );
    const fits = worstCaseCostUnits(PRICE, 10, 1_000_000);
    expect(moneyFromWire(fits)).toBe(fits);
  });

  it('O7 usage the provider reports that prices past 2^63-1 settles as failed after dispatch, keeping the whole hold', () => {
    const absurd = { input_tokens: Number.MAX_SAFE_INTEGER, output_tokens: 0 };
    expect(realizedCostUnits(PRICE, absurd) > AMOUNT_MAX_UNITS).toBe(true);
    expect(settleOf(attempt(absurd))).toEqual({ kind: 'failed_after_dispatch', failure: 'generic' });
    // At the largest amount it is still a completed settlement of the realized cost.
    const most = { input_tokens: 9_223_372_036_854, output_tokens: 775_807 };
    expect(realizedCostUnits(PRICE, most)).toBe(9_223_372_036_854_000_001n);
    expect(settleOf(attempt(most))).toMatchObject({ kind: 'completed', cost_units: 9_223_372_036_854_000_001n });
  });

  it('O7 tokens_used above what a Settle carries is capped at TOKENS_MAX, so the settlement is not refused', () => {
    const many = { input_tokens: 3_000_000_000, output_tokens: 1 };
    expect(settleOf(attempt(many, { ...PRICE, input_per_mtok_units: 1 }))).toMatchObject({
      kind: 'completed',
      tokens_used: TOKENS_MAX,
    });
  });
});
