// What a work unit does next, decided from its state alone. Workers call `planNext` at
// the top of every loop, and `decide` calls it again to check a command against it, so
// a resumed or racing worker always lands on the same next step.
import type { FailureCode, HoldOutcomeKind, OutputRef } from './work-unit.events.js';
import { AMOUNT_MAX_UNITS, realizedCostUnits } from './pricing.js';
import {
  assertInvariant,
  isTerminal,
  openAttempt,
  type AttemptState,
  type WorkStatus,
  type WorkUnitState,
} from './work-unit.state.js';
import type { AttemptReason, OpaqueJson, RouteLeg, WorkLimits } from './work-unit.types.js';

export type NextStep =
  | { readonly kind: 'idle'; readonly status: WorkStatus }
  | { readonly kind: 'settle_orphan'; readonly ordinal: number }
  | {
      readonly kind: 'settle_hold';
      readonly ordinal: number;
      readonly hold_id: string;
      readonly outcome: HoldOutcomeKind;
      readonly cost_units?: bigint;
    }
  | {
      readonly kind: 'complete';
      readonly winning_attempt: number;
      readonly output: string;
      readonly output_parts?: readonly OpaqueJson[];
      readonly output_ref?: OutputRef;
      readonly stop_reason?: string;
    }
  | { readonly kind: 'abort'; readonly reason: string; readonly partial_output?: string }
  | { readonly kind: 'fail'; readonly code: FailureCode; readonly error: string }
  | DispatchStep;

export interface DispatchStep {
  readonly kind: 'dispatch';
  readonly ordinal: number;
  readonly reason: AttemptReason;
  readonly leg_index: number;
  readonly leg: RouteLeg;
  readonly round: number;
  /** How long to wait after `wait_from` (the last settlement) before dispatching. */
  readonly backoff_ms: number;
  readonly wait_from?: string;
}

/** The error text when the ceiling refuses a dispatch; the reference suite matches "dispatch ceiling of N". */
export function ceilingError(ceiling: number, lastError: string | undefined): string {
  return `dispatch ceiling of ${ceiling} reached: no further paid attempt is allowed${lastError ? `; last error: ${lastError}` : ''}`;
}

/**
 * The next step. `jitter` in [0, 1) only moves the backoff within its bound.
 * Order matters: an unsettled attempt is settled first (it counts against the ceiling),
 * holds are settled before anything else happens, a reply wins over a late abort, and
 * the ceiling is checked before any retry rule, so no rule can ever dispatch past it.
 */
export function planNext(state: WorkUnitState, jitter: number): NextStep {
  assertInvariant(jitter >= 0 && jitter < 1, `jitter must be in [0, 1), got ${jitter}`);
  if (!state.work || isTerminal(state)) return { kind: 'idle', status: state.status };
  const open = openAttempt(state);
  if (open) return { kind: 'settle_orphan', ordinal: open.ordinal };
  const last = state.attempts.at(-1);
  if (last?.settled && !last.hold) return holdStep(last);
  if (last?.settled?.output !== undefined)
    return {
      kind: 'complete',
      winning_attempt: last.ordinal,
      output: last.settled.output,
      ...(last.settled.output_parts === undefined ? {} : { output_parts: last.settled.output_parts }),
      ...(last.settled.output_ref === undefined ? {} : { output_ref: last.settled.output_ref }),
      ...(last.settled.stop_reason === undefined ? {} : { stop_reason: last.settled.stop_reason }),
    };
  if (last?.settled?.settlement === 'cancelled')
    return abortStep(last.settled.error ?? 'aborted mid-stream', last.settled.partial_output);
  if (state.abort) return abortStep(state.abort.reason, undefined);
  const ceiling = state.work.limits.dispatch_ceiling;
  if (state.attempts.length >= ceiling)
    return { kind: 'fail', code: 'dispatch_ceiling', error: ceilingError(ceiling, last?.settled?.error) };
  return nextAttempt(state.work.route, state.work.limits, state.attempts, jitter);
}

function abortStep(reason: string, partial: string | undefined): NextStep {
  return { kind: 'abort', reason, ...(partial === undefined ? {} : { partial_output: partial }) };
}

/**
 * How the attempt's hold is settled with the budget authority. Usage rates it; a definite
 * refusal (settlement failed) was never billed; anything else may have been billed and is
 * settled pessimistically, keeping the whole hold: absent is unknown, never zero.
 */
export function holdStep(attempt: AttemptState): NextStep {
  const settled = attempt.settled;
  assertInvariant(settled, `hold of unsettled attempt ${attempt.ordinal}`);
  const base = { kind: 'settle_hold', ordinal: attempt.ordinal, hold_id: attempt.hold_id } as const;
  if (settled.usage) {
    const cost = realizedCostUnits(attempt.price, settled.usage);
    // Usage priced past 2^63-1 cannot be booked (ADR 0044): it counts as unknown, keeping the whole hold.
    if (cost > AMOUNT_MAX_UNITS) return { ...base, outcome: 'failed_after_dispatch' };
    return { ...base, outcome: 'completed', cost_units: cost };
  }
  if (settled.settlement === 'failed') return { ...base, outcome: 'not_dispatched' };
  return { ...base, outcome: 'failed_after_dispatch' };
}

/** Auth (401/403) and invalid requests will fail again on the same leg; retrying them only burns the ceiling. */
export function isDefiniteRefusal(attempt: AttemptState): boolean {
  const s = attempt.settled;
  if (!s || s.settlement !== 'failed') return false;
  if (s.domain === 'request') return true;
  return s.domain === 'account' && (s.http_status === 401 || s.http_status === 403);
}

/** Exponential backoff with "equal jitter": a wait in [exp/2, exp], exp = min(max, base·2^(n-1)). */
export function backoffMs(retryNumber: number, baseMs: number, maxMs: number, jitter: number): number {
  assertInvariant(Number.isInteger(retryNumber) && retryNumber >= 1, `retry number must be >= 1, got ${retryNumber}`);
  const exp = Math.min(maxMs, baseMs * 2 ** Math.min(retryNumber - 1, 30));
  const half = Math.floor(exp / 2);
  return half + Math.floor(jitter * (exp - half + 1));
}

function nextAttempt(
  route: readonly RouteLeg[],
  limits: WorkLimits,
  attempts: readonly AttemptState[],
  jitter: number,
): NextStep {
  const last = attempts.at(-1);
  if (!last) return dispatch(attempts, 0, route, 'initial', 0, 0);
  const lastSettled = last.settled;
  assertInvariant(lastSettled, 'planning after an unsettled attempt');
  const retryAfter = lastSettled.retry_after_ms;
  // A provider asking for a longer pause than we may wait is treated as unavailable for now.
  const cooling = retryAfter !== undefined && retryAfter > limits.max_retry_after_ms;
  const dead = new Set(attempts.filter(isDefiniteRefusal).map((a) => a.leg_index));
  const usable = (i: number) => !dead.has(i) && !(cooling && route[i]?.provider === last.provider);
  // Waiting out retry-after applies to any leg on the provider that asked for it.
  const honour = (i: number, wait: number) =>
    retryAfter !== undefined && route[i]?.provider === last.provider ? Math.max(wait, retryAfter) : wait;

  const onLeg = attempts.filter((a) => a.round === last.round && a.leg_index === last.leg_index).length;
  if (usable(last.leg_index) && onLeg <= limits.max_retries) {
    const wait = backoffMs(onLeg, limits.retry_base_backoff_ms, limits.max_backoff_ms, jitter);
    return dispatch(attempts, last.leg_index, route, 'retry', last.round, honour(last.leg_index, wait), lastSettled.at);
  }
  const fallback = firstUsable(route.length, last.leg_index + 1, usable);
  if (fallback !== undefined)
    return dispatch(attempts, fallback, route, 'route_fallback', last.round, honour(fallback, 0), lastSettled.at);
  const restart = firstUsable(route.length, 0, usable);
  if (last.round < limits.run_retry_attempts && restart !== undefined) {
    const wait = backoffMs(last.round + 1, limits.run_retry_base_backoff_ms, limits.max_backoff_ms, jitter);
    return dispatch(attempts, restart, route, 'endurance_retry', last.round + 1, honour(restart, wait), lastSettled.at);
  }
  if (dead.size === route.length)
    return {
      kind: 'fail',
      code: 'not_retryable',
      error: `not retryable on any leg: ${lastSettled.error ?? lastSettled.domain}`,
    };
  return {
    kind: 'fail',
    code: 'retries_exhausted',
    error: `retries exhausted after ${attempts.length} attempts: ${lastSettled.error ?? lastSettled.domain}`,
  };
}

function firstUsable(length: number, from: number, usable: (i: number) => boolean): number | undefined {
  for (let i = from; i < length; i++) if (usable(i)) return i;
  return undefined;
}

function dispatch(
  attempts: readonly AttemptState[],
  legIndex: number,
  route: readonly RouteLeg[],
  reason: AttemptReason,
  round: number,
  backoff: number,
  waitFrom?: string,
): DispatchStep {
  const leg = route[legIndex];
  assertInvariant(leg, `route has no leg ${legIndex}`);
  return {
    kind: 'dispatch',
    ordinal: attempts.length,
    reason,
    leg_index: legIndex,
    leg,
    round,
    backoff_ms: backoff,
    ...(waitFrom === undefined ? {} : { wait_from: waitFrom }),
  };
}
