// Cost arithmetic for LLM dispatches, in integer minor units (bigint), rounding up:
// a hold must never be smaller than what the provider can bill.
import type { ModelPrice } from './work-unit.events.js';
import type { Usage } from './work-unit.types.js';

const TOKENS_PER_MTOK = 1_000_000n;

/** The largest amount the ledger books: 2^63-1 minor units (ADR 0044). No hold or settlement carries more. */
export const AMOUNT_MAX_UNITS = 9_223_372_036_854_775_807n;

/** A product of tokens and prices, checked: past 2^63-1 it is no amount a hold could carry. */
function checkedCost(cost: bigint, what: string): bigint {
  if (cost > AMOUNT_MAX_UNITS) throw new RangeError(`${what} ${cost} is past the largest amount, 2^63-1 minor units`);
  return cost;
}

function ceilDiv(numerator: bigint, denominator: bigint): bigint {
  return (numerator + denominator - 1n) / denominator;
}

function units(value: number, what: string): bigint {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${what} must be a non-negative safe integer, got ${value}`);
  return BigInt(value);
}

/**
 * The hold for one attempt: input price × the prompt's token bound (`promptTokenBound`, ADR
 * 0042) + output price × max_tokens.
 */
export function worstCaseCostUnits(price: ModelPrice, promptTokens: number, maxTokens: number): bigint {
  const input = units(promptTokens, 'prompt tokens') * units(price.input_per_mtok_units, 'input_per_mtok_units');
  const output = units(maxTokens, 'max_tokens') * units(price.output_per_mtok_units, 'output_per_mtok_units');
  return checkedCost(ceilDiv(input + output, TOKENS_PER_MTOK) + perCall(price), 'the worst-case cost');
}

function perCall(price: ModelPrice): bigint {
  return price.per_call_units === undefined ? 0n : units(price.per_call_units, 'per_call_units');
}

/** The realized cost from the provider's reported usage; the caller checks it against AMOUNT_MAX_UNITS. */
export function realizedCostUnits(price: ModelPrice, usage: Usage): bigint {
  const input = units(usage.input_tokens, 'input_tokens') * units(price.input_per_mtok_units, 'input_per_mtok_units');
  const output =
    units(usage.output_tokens, 'output_tokens') * units(price.output_per_mtok_units, 'output_per_mtok_units');
  return ceilDiv(input + output, TOKENS_PER_MTOK) + perCall(price);
}
