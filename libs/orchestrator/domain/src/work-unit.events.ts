// The facts of a work unit, appended to one subject per unit. Each event carries the
// time it was decided (`at`) so that a fold over the events alone rebuilds everything,
// receipts and session logs included, without reading envelope metadata.
import type {
  AttemptReason,
  ChatMessage,
  Entrypoint,
  FailureDomain,
  OpaqueJson,
  Purpose,
  RouteLeg,
  Settlement,
  Usage,
  WorkLimits,
} from './work-unit.types.js';

/** Prices are recorded on the attempt so a replay rates it with the price it was admitted at. */
export interface ModelPrice {
  readonly input_per_mtok_units: number;
  readonly output_per_mtok_units: number;
  readonly currency: string;
  /** A flat price per call (a tool server's tool); added to the token prices, which are 0 for tools. */
  readonly per_call_units?: number;
}

/**
 * Where a reply too large for its event is kept (ADR 0019): a blob, the UTF-8 JSON of
 * `{output, output_parts?}`, cut in `chunks` messages on `subject.0` … `subject.<chunks-1>`
 * of `stream`, written before the event that names it. The event's own `output` is then a
 * bounded prefix of the reply, for previews; readers that need the whole reply resolve this.
 */
export interface OutputRef {
  readonly stream: string;
  readonly subject: string;
  /** Size of the blob in bytes. */
  readonly bytes: number;
  /** SHA-256 of the blob, hex: a reader checks what it reassembled against it. */
  readonly sha256: string;
  readonly chunks: number;
  /** Size in bytes of the reply's text (`output`) alone. */
  readonly output_bytes: number;
}

export interface WorkSubmitted {
  readonly type: 'WorkSubmitted';
  readonly work_id: string;
  readonly session_id: string;
  readonly purpose: Purpose;
  /**
   * sha256 of the capability token, base64url: enough to tell which credential a unit was
   * submitted with, useless as a credential. The token itself is never recorded (ADR 0007).
   */
  readonly token_fingerprint: string;
  /** The tenant of the capability the unit was submitted with; absent on units from before tenants (default). */
  readonly tenant_id?: string;
  readonly route: readonly RouteLeg[];
  readonly messages: readonly ChatMessage[];
  readonly limits: WorkLimits;
  /** Version 3: the API the unit came in by (older units came in by the work API). */
  readonly entrypoint: Entrypoint;
  /**
   * What the call asks of the provider beyond its messages (tools, tool choice, sampling,
   * stop sequences, fields passed through), as the dialect translation's neutral options.
   */
  readonly options?: OpaqueJson;
  readonly at: string;
}

export interface AbortRequested {
  readonly type: 'AbortRequested';
  readonly work_id: string;
  readonly reason: string;
  readonly at: string;
}

export interface AttemptStarted {
  readonly type: 'AttemptStarted';
  readonly work_id: string;
  /** 0-based, like the reference suite's receipts: the second attempt has ordinal 1. */
  readonly ordinal: number;
  readonly reason: AttemptReason;
  readonly leg_index: number;
  readonly provider: string;
  readonly model: string;
  /** 0 for the first pass over the ladder, n for the n-th endurance round. */
  readonly round: number;
  /** The admission's hold: every attempt is admitted before it is started. */
  readonly hold_id: string;
  /** Worst-case cost the hold was requested for, in minor units, as a decimal string. */
  readonly hold_cost_units: string;
  readonly price: ModelPrice;
  /** The wait that preceded this attempt, for the audit of backoff and retry-after. */
  readonly backoff_ms: number;
  readonly at: string;
}

export interface AttemptSettled {
  readonly type: 'AttemptSettled';
  readonly work_id: string;
  readonly ordinal: number;
  readonly domain: FailureDomain;
  readonly settlement: Settlement;
  readonly latency_ms: number;
  readonly usage?: Usage;
  readonly error?: string;
  /** The reply, present exactly when the provider delivered a complete one. */
  readonly output?: string;
  /** The reply's structured parts (text and tool calls, in order) when it has more than text. */
  readonly output_parts?: readonly OpaqueJson[];
  /** Present when the reply was too large for this event: `output` is then its prefix (ADR 0019). */
  readonly output_ref?: OutputRef;
  /** Why the model stopped (neutral: end_turn, max_tokens, stop_sequence, tool_use, content_filter). */
  readonly stop_reason?: string;
  readonly partial_output?: string;
  readonly retry_after_ms?: number;
  /** The provider's HTTP status when it answered; it separates auth (401/403) from rate limits. */
  readonly http_status?: number;
  readonly at: string;
}

/** An attempt started but never settled: found on redelivery, it counts against the ceiling. */
export interface AttemptSettledUnknown {
  readonly type: 'AttemptSettledUnknown';
  readonly work_id: string;
  readonly ordinal: number;
  readonly latency_ms: number;
  readonly error: string;
  readonly at: string;
}

export const HOLD_OUTCOMES = ['completed', 'failed_after_dispatch', 'not_dispatched'] as const;
export type HoldOutcomeKind = (typeof HOLD_OUTCOMES)[number];

/** The budget authority settled the attempt's hold; the unit does not move on until it has. */
export interface HoldSettled {
  readonly type: 'HoldSettled';
  readonly work_id: string;
  readonly ordinal: number;
  readonly hold_id: string;
  readonly outcome: HoldOutcomeKind;
  /** Realized cost in minor units (decimal string), present for `completed`. */
  readonly cost_units?: string;
  readonly at: string;
}

export interface WorkCompleted {
  readonly type: 'WorkCompleted';
  readonly work_id: string;
  readonly winning_attempt: number;
  readonly output: string;
  readonly output_parts?: readonly OpaqueJson[];
  /** The winning attempt's reference, when its reply was kept by reference (ADR 0019). */
  readonly output_ref?: OutputRef;
  readonly stop_reason?: string;
  readonly at: string;
}

export const FAILURE_CODES = [
  'dispatch_ceiling',
  'retries_exhausted',
  'not_retryable',
  'admission_denied',
  'unpriced_model',
  'invalid_work',
  'credential_unavailable',
] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];

export interface WorkFailed {
  readonly type: 'WorkFailed';
  readonly work_id: string;
  readonly code: FailureCode;
  readonly error: string;
  /** The budget authority's deny reason, for `admission_denied` (e.g. total_cost_limit_reached, rate_limited). */
  readonly reason?: string;
  /** When the authority says when to try again (a rate limit). */
  readonly retry_after_ms?: number;
  readonly at: string;
}

export interface WorkAborted {
  readonly type: 'WorkAborted';
  readonly work_id: string;
  readonly reason: string;
  readonly partial_output?: string;
  readonly at: string;
}

export type WorkEvent =
  | WorkSubmitted
  | AbortRequested
  | AttemptStarted
  | AttemptSettled
  | AttemptSettledUnknown
  | HoldSettled
  | WorkCompleted
  | WorkFailed
  | WorkAborted;

export type WorkEventType = WorkEvent['type'];

export const WORK_EVENT_TYPES: readonly WorkEventType[] = [
  'WorkSubmitted',
  'AbortRequested',
  'AttemptStarted',
  'AttemptSettled',
  'AttemptSettledUnknown',
  'HoldSettled',
  'WorkCompleted',
  'WorkFailed',
  'WorkAborted',
];

/** An event as decide returns it: the id is derived from the command id, so a re-sent command dedupes. */
export interface DecidedEvent {
  readonly event_id: string;
  readonly event: WorkEvent;
}
