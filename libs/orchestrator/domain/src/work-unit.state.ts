// The work unit's state and its fold. `evolve` asserts the invariants every event must
// keep (ordinals dense from 0, one open attempt at most, nothing after a terminal
// event): the decider only emits events that keep them, so a violation is a bug or a
// corrupted stream and must stop the worker loudly.
import type { HoldOutcomeKind, ModelPrice, OutputRef, WorkEvent, WorkSubmitted } from './work-unit.events.js';
import type { AttemptReason, FailureDomain, OpaqueJson, Settlement, Usage } from './work-unit.types.js';

export type WorkStatus = 'absent' | 'queued' | 'running' | 'completed' | 'failed' | 'aborted';

export interface AttemptSettlement {
  readonly domain: FailureDomain;
  readonly settlement: Settlement;
  readonly latency_ms: number;
  readonly usage?: Usage;
  readonly error?: string;
  readonly output?: string;
  readonly output_parts?: readonly OpaqueJson[];
  /** The whole reply's place when `output` is only its prefix (ADR 0019). */
  readonly output_ref?: OutputRef;
  readonly stop_reason?: string;
  readonly partial_output?: string;
  readonly retry_after_ms?: number;
  readonly http_status?: number;
  /** True when the attempt was found unsettled on redelivery and settled unknown. */
  readonly orphaned: boolean;
  readonly at: string;
}

export interface AttemptHold {
  readonly outcome: HoldOutcomeKind;
  readonly cost_units?: bigint;
  readonly at: string;
}

export interface AttemptState {
  readonly ordinal: number;
  readonly reason: AttemptReason;
  readonly leg_index: number;
  readonly provider: string;
  readonly model: string;
  readonly round: number;
  readonly hold_id: string;
  readonly hold_cost_units: bigint;
  readonly price: ModelPrice;
  readonly backoff_ms: number;
  readonly started_at: string;
  readonly settled?: AttemptSettlement;
  readonly hold?: AttemptHold;
}

export interface WorkUnitState {
  readonly status: WorkStatus;
  readonly work?: Omit<WorkSubmitted, 'type'>;
  readonly attempts: readonly AttemptState[];
  readonly abort?: { readonly reason: string; readonly at: string };
  readonly completion?: {
    readonly winning_attempt: number;
    readonly output: string;
    readonly output_parts?: readonly OpaqueJson[];
    readonly output_ref?: OutputRef;
    readonly stop_reason?: string;
    readonly at: string;
  };
  readonly failure?: {
    readonly code: string;
    readonly error: string;
    readonly reason?: string;
    readonly retry_after_ms?: number;
    readonly at: string;
  };
  readonly aborted?: { readonly reason: string; readonly partial_output?: string; readonly at: string };
}

export function initialState(): WorkUnitState {
  return { status: 'absent', attempts: [] };
}

export function isTerminal(state: WorkUnitState): boolean {
  return state.status === 'completed' || state.status === 'failed' || state.status === 'aborted';
}

/** The attempt that was started and not yet settled, if any; there is at most one. */
export function openAttempt(state: WorkUnitState): AttemptState | undefined {
  const last = state.attempts.at(-1);
  return last && !last.settled ? last : undefined;
}

export function assertInvariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`work unit invariant broken: ${message}`);
}

export function evolve(state: WorkUnitState, event: WorkEvent): WorkUnitState {
  if (event.type !== 'WorkSubmitted')
    assertInvariant(
      state.work?.work_id === event.work_id,
      `${event.type} for ${event.work_id} before its WorkSubmitted`,
    );
  if (event.type !== 'HoldSettled')
    assertInvariant(!isTerminal(state), `${event.type} after the unit ended ${state.status}`);
  switch (event.type) {
    case 'WorkSubmitted': {
      assertInvariant(state.status === 'absent', 'WorkSubmitted twice');
      const { type: _type, ...work } = event;
      return { ...state, status: 'queued', work };
    }
    case 'AbortRequested':
      return state.abort ? state : { ...state, abort: { reason: event.reason, at: event.at } };
    case 'AttemptStarted':
      return evolveStarted(state, event);
    case 'AttemptSettled': {
      const { type: _t, work_id: _w, ordinal, at, ...rest } = event;
      return settleOpen(state, ordinal, { ...rest, orphaned: false, at });
    }
    case 'AttemptSettledUnknown':
      return settleOpen(state, event.ordinal, {
        domain: 'unknown',
        settlement: 'unknown',
        latency_ms: event.latency_ms,
        error: event.error,
        orphaned: true,
        at: event.at,
      });
    case 'HoldSettled':
      return evolveHoldSettled(state, event);
    case 'WorkCompleted':
      assertInvariant(
        state.attempts[event.winning_attempt]?.settled?.output !== undefined,
        `winning attempt ${event.winning_attempt} has no reply`,
      );
      return {
        ...state,
        status: 'completed',
        completion: {
          winning_attempt: event.winning_attempt,
          output: event.output,
          ...(event.output_parts === undefined ? {} : { output_parts: event.output_parts }),
          ...(event.output_ref === undefined ? {} : { output_ref: event.output_ref }),
          ...(event.stop_reason === undefined ? {} : { stop_reason: event.stop_reason }),
          at: event.at,
        },
      };
    case 'WorkFailed':
      return {
        ...state,
        status: 'failed',
        failure: {
          code: event.code,
          error: event.error,
          ...(event.reason === undefined ? {} : { reason: event.reason }),
          ...(event.retry_after_ms === undefined ? {} : { retry_after_ms: event.retry_after_ms }),
          at: event.at,
        },
      };
    case 'WorkAborted':
      return {
        ...state,
        status: 'aborted',
        aborted: {
          reason: event.reason,
          ...(event.partial_output === undefined ? {} : { partial_output: event.partial_output }),
          at: event.at,
        },
      };
  }
}

function evolveStarted(state: WorkUnitState, event: Extract<WorkEvent, { type: 'AttemptStarted' }>): WorkUnitState {
  assertInvariant(
    event.ordinal === state.attempts.length,
    `attempt ordinal ${event.ordinal} is not the next one (${state.attempts.length})`,
  );
  assertInvariant(!openAttempt(state), `attempt ${event.ordinal} started while another is open`);
  assertInvariant(
    state.work && event.ordinal < state.work.limits.dispatch_ceiling,
    `attempt ${event.ordinal} is past the dispatch ceiling`,
  );
  const attempt: AttemptState = {
    ordinal: event.ordinal,
    reason: event.reason,
    leg_index: event.leg_index,
    provider: event.provider,
    model: event.model,
    round: event.round,
    hold_id: event.hold_id,
    hold_cost_units: BigInt(event.hold_cost_units),
    price: event.price,
    backoff_ms: event.backoff_ms,
    started_at: event.at,
  };
  return { ...state, status: 'running', attempts: [...state.attempts, attempt] };
}

function settleOpen(state: WorkUnitState, ordinal: number, settled: AttemptSettlement): WorkUnitState {
  const open = openAttempt(state);
  assertInvariant(
    open?.ordinal === ordinal,
    `attempt ${ordinal} settled but the open attempt is ${open?.ordinal ?? 'none'}`,
  );
  return { ...state, attempts: replaceAttempt(state.attempts, { ...open, settled }) };
}

function evolveHoldSettled(state: WorkUnitState, event: Extract<WorkEvent, { type: 'HoldSettled' }>): WorkUnitState {
  const attempt = state.attempts[event.ordinal];
  assertInvariant(
    attempt?.settled && !attempt.hold,
    `hold of attempt ${event.ordinal} settled twice or before the attempt`,
  );
  assertInvariant(attempt.hold_id === event.hold_id, `hold ${event.hold_id} is not attempt ${event.ordinal}'s`);
  const hold: AttemptHold = {
    outcome: event.outcome,
    ...(event.cost_units === undefined ? {} : { cost_units: BigInt(event.cost_units) }),
    at: event.at,
  };
  return { ...state, attempts: replaceAttempt(state.attempts, { ...attempt, hold }) };
}

function replaceAttempt(attempts: readonly AttemptState[], attempt: AttemptState): AttemptState[] {
  return attempts.map((a) => (a.ordinal === attempt.ordinal ? attempt : a));
}

/** Rebuilds state from the unit's events: the same function serves workers, projections and replay. */
export function foldWorkEvents(events: readonly WorkEvent[], from: WorkUnitState = initialState()): WorkUnitState {
  let state = from;
  for (const event of events) state = evolve(state, event);
  return state;
}
