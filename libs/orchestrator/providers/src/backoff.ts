// Retry delays for O5: exponential growth, jitter inside a bound, Retry-After honoured, and a
// hard cap. The jitter draw is a parameter (not Math.random inside) so callers and tests can
// make the delay deterministic.

export type JitterMode = 'full' | 'equal';

export interface BackoffInput {
  /** Which retry this delay precedes: 1 for the first retry, 2 for the second, … */
  attempt: number;
  /** Ceiling of the first retry's delay. */
  baseMs: number;
  /** No delay ever exceeds this, including one asked for by Retry-After. */
  maxMs: number;
  /** A uniform draw in [0, 1). */
  jitter01: number;
  /** The provider's Retry-After, if it sent one; the delay is never shorter than this (up to maxMs). */
  retryAfterMs?: number | undefined;
  /**
   * 'full' draws from [0, ceiling]; 'equal' (the default) from [ceiling/2, ceiling], which
   * keeps a floor so a storm of retries cannot all fire immediately.
   */
  jitter?: JitterMode;
}

export function backoffCeilingMs(attempt: number, baseMs: number, maxMs: number): number {
  // Clamp the exponent so 2 ** n stays finite; the cap applies long before that anyway.
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 52));
}

export function backoffDelayMs(input: BackoffInput): number {
  const { attempt, baseMs, maxMs, jitter01, retryAfterMs } = input;
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new Error(`backoff: attempt must be an integer ≥ 1, got ${attempt}`);
  if (!(baseMs >= 0) || !(maxMs >= baseMs))
    throw new Error(`backoff: need 0 ≤ baseMs ≤ maxMs, got ${baseMs}, ${maxMs}`);
  if (!(jitter01 >= 0 && jitter01 < 1)) throw new Error(`backoff: jitter01 must be in [0, 1), got ${jitter01}`);
  const ceiling = backoffCeilingMs(attempt, baseMs, maxMs);
  const floor = (input.jitter ?? 'equal') === 'equal' ? ceiling / 2 : 0;
  const jittered = floor + jitter01 * (ceiling - floor);
  const honoured = retryAfterMs !== undefined && retryAfterMs > 0 ? Math.max(retryAfterMs, jittered) : jittered;
  return Math.round(Math.min(maxMs, honoured));
}
