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
