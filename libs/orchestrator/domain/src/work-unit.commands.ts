// Commands a work unit accepts. Each carries its own id (from which event ids derive, so a
// re-sent command dedupes in the stream) and the time it was issued: the domain reads no clock.
import type { FailureCode, ModelPrice, OutputRef } from './work-unit.events.js';
import type {
  ChatMessage,
  Entrypoint,
  FailureDomain,
  OpaqueJson,
  Purpose,
  RouteLeg,
  Settlement,
  Usage,
  WorkLimitsInput,
} from './work-unit.types.js';

interface CommandMeta {
  /** Unique per issued command; the same id means the same command re-sent. */
  readonly command_id: string;
  /** RFC 3339 time, from the caller's clock. */
  readonly at: string;
}

export interface SubmitWork extends CommandMeta {
  readonly type: 'SubmitWork';
  readonly work_id: string;
  readonly session_id: string;
  readonly purpose: Purpose;
  /** The capability token's fingerprint; the token travels only on the work-queue message. */
  readonly token_fingerprint: string;
  /** The capability's tenant, as the orchestrator verified it from the token. */
  readonly tenant_id?: string;
  readonly route: readonly RouteLeg[];
  readonly messages: readonly ChatMessage[];
  readonly limits?: WorkLimitsInput;
  /** Absent means the work API. */
  readonly entrypoint?: Entrypoint;
  readonly options?: OpaqueJson;
}

export interface RequestAbort extends CommandMeta {
  readonly type: 'RequestAbort';
  readonly reason: string;
}

/** Settles an attempt that a lost worker started and never settled. */
export interface SettleOrphanedAttempt extends CommandMeta {
  readonly type: 'SettleOrphanedAttempt';
  readonly ordinal: number;
}

/** Starts the planned attempt; rejected unless `ordinal` is exactly the one the plan allows. */
export interface StartAttempt extends CommandMeta {
  readonly type: 'StartAttempt';
  readonly ordinal: number;
  /** The same jitter the worker planned with, so decide recomputes the same backoff. */
  readonly jitter: number;
  readonly hold_id: string;
  readonly hold_cost_units: bigint;
  readonly price: ModelPrice;
}

/** A provider's classified answer to one attempt, as the gateway reports it. */
export interface AttemptOutcome {
  readonly domain: FailureDomain;
  readonly settlement: Settlement;
  readonly latency_ms: number;
  readonly usage?: Usage;
  readonly error?: string;
  readonly output?: string;
  readonly output_parts?: readonly OpaqueJson[];
  /** Set by the worker when it kept a large reply by reference; `output` is then its prefix. */
  readonly output_ref?: OutputRef;
  readonly stop_reason?: string;
  readonly partial_output?: string;
  readonly retry_after_ms?: number;
  readonly http_status?: number;
}

export interface SettleAttempt extends CommandMeta {
  readonly type: 'SettleAttempt';
  readonly ordinal: number;
  readonly outcome: AttemptOutcome;
}

/** Records that the budget authority settled the attempt's hold as the plan said. */
export interface RecordHoldSettled extends CommandMeta {
  readonly type: 'RecordHoldSettled';
  readonly ordinal: number;
  readonly hold_id: string;
}

/** Ends the unit as its plan says: completed, aborted or failed. */
export interface ConcludeWork extends CommandMeta {
  readonly type: 'ConcludeWork';
}

/**
 * A planned attempt that may not be dispatched: the authority denied it, the model has no
 * price, no hold can bound the prompt on that model (invalid_work, ADR 0042), or the
 * capability token needed to ask the authority did not reach the worker.
 */
export interface RefuseAttempt extends CommandMeta {
  readonly type: 'RefuseAttempt';
  readonly ordinal: number;
  readonly code: Extract<
    FailureCode,
    'admission_denied' | 'unpriced_model' | 'credential_unavailable' | 'invalid_work'
  >;
  readonly error: string;
  readonly reason?: string;
  readonly retry_after_ms?: number;
}

export type WorkCommand =
  | SubmitWork
  | RequestAbort
  | SettleOrphanedAttempt
  | StartAttempt
  | SettleAttempt
  | RecordHoldSettled
  | ConcludeWork
  | RefuseAttempt;
