// Assertions are for programmer errors (a broken invariant), never for expected
// outcomes: those are named rejections. A failed assertion crashes loudly, because a
// ledger that continues after its books stopped balancing does more harm than one that stops.

export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: boolean, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}

export function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

export function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/**
 * The largest amount the ledger books: 2^63-1 minor units (ADR 0044). The boundaries refuse
 * anything wider and the deciders refuse a sum that would pass it, so an amount beyond it
 * inside the domain is a bug. The domain imports nothing, so the wire's AMOUNT_MAX_UNITS is
 * restated here; a test holds the two equal.
 */
export const AMOUNT_MAX_UNITS = 9_223_372_036_854_775_807n;

export function isAmount(value: bigint): boolean {
  return value >= 0n && value <= AMOUNT_MAX_UNITS;
}

/** An amount of an event or of the state is in [0, 2^63-1]; `what` names it in the failure. */
export function assertAmount(value: bigint, what: string): void {
  assert(isAmount(value), `${what} ${value} is outside the amounts 0 to 2^63-1`);
}
