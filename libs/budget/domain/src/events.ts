// The facts of the delegation-tree aggregate. Each event id is deterministic (ids.ts),
// so a retried append dedupes on the stream instead of committing twice.
import type {
  AdmitContext,
  AmbiguityKind,
  Binding,
  GrantRef,
  MutationKind,
  NonceBinding,
  PaymentMode,
  StoredGrant,
  UnsettledCause,
} from './model.js';
import type { Period } from './periods.js';

interface Ev<T extends string, D> {
  readonly type: T;
  readonly event_id: string;
  readonly data: D;
}

export interface CapabilityIssuedData {
  readonly capability_id: string;
  readonly root_id: string;
  readonly parent_id?: string;
  /** The owning tenant; absent on capabilities issued before tenants existed, which belong to `default`. */
  readonly tenant_id?: string;
  readonly subject_public_key: string;
  /** Recorded so that a retried issue seals the same (bound) token again. */
  readonly bind?: 'subject_key';
  readonly issued_at_ms: number;
  readonly expires_at_ms: number;
  readonly grants: readonly StoredGrant[];
  readonly budget_units?: bigint;
  readonly depth: number;
}

export interface CapabilityRevokedData {
  readonly capability_id: string;
  /** The capability and every descendant that was not already revoked. */
  readonly revoked_ids: readonly string[];
  readonly at_ms: number;
}

export interface HoldAuthorizedData {
  readonly kind: Extract<MutationKind, 'authorize_exposure' | 'reserve_invocation'>;
  readonly hold_id: string;
  readonly request_id: string;
  /** The Admit command that took the hold (absent on holds recorded before it was kept). */
  readonly command_id?: string;
  readonly capability_id: string;
  readonly grant_index: number;
  readonly chain: readonly GrantRef[];
  readonly exposure_units: bigint;
  readonly currency?: string;
  readonly monetary: boolean;
  readonly preflight: boolean;
  readonly binding: Binding;
  readonly context: AdmitContext;
  readonly expires_at_ms: number;
  readonly at_ms: number;
  /**
   * The period of each chain entry, decided from the command's time and recorded, so a replay
   * (even with another time-zone database) counts the hold where it was counted.
   */
  readonly periods?: readonly (Period | null)[];
  /** Worst-case tokens held against tokens_per_minute. */
  readonly tokens?: number;
}

export interface HoldIncreasedData {
  readonly kind: 'increase_exposure';
  readonly hold_id: string;
  /** 1 for the first increase of the hold, and so on. */
  readonly increase: number;
  readonly command_id?: string;
  readonly amount_units: bigint;
  /** The hold's exposure after the increase. */
  readonly exposure_units: bigint;
  readonly tokens?: number;
  readonly at_ms: number;
}

/** A grant's committed cost first reached a share of its limit in a period (alert_at_percent). */
export interface BudgetThresholdCrossedData {
  readonly capability_id: string;
  readonly grant_index: number;
  readonly percent: number;
  readonly committed_units: bigint;
  readonly limit_units: bigint;
  readonly period_start_ms?: number;
  readonly period_end_ms?: number;
  readonly hold_id: string;
  readonly at_ms: number;
}

/** A grant's committed cost reached its limit in a period. */
export type BudgetExhaustedData = Omit<BudgetThresholdCrossedData, 'percent'>;

/**
 * A provider billed more than its hold (ADR 0043): the settlement in the same commit booked the
 * whole charge, and the hold's grant refuses admissions until its limit covers the spend.
 * Figures are of the hold's own grant, in the period the hold counts in.
 */
export interface BudgetOverrunData {
  readonly capability_id: string;
  readonly grant_index: number;
  readonly hold_id: string;
  /** The charge booked (the settlement's realized_units). */
  readonly realized_units: bigint;
  /** What the hold covered. */
  readonly exposure_units: bigint;
  /** realized_units − exposure_units. */
  readonly hold_overrun_units: bigint;
  readonly currency?: string;
  /** The grant's committed cost after the settlement. */
  readonly committed_units: bigint;
  readonly limit_units?: bigint;
  readonly period_start_ms?: number;
  readonly period_end_ms?: number;
  readonly at_ms: number;
}

export interface InvocationCapturedData {
  readonly kind: Extract<MutationKind, 'capture_invocation' | 'increment_invocation'>;
  readonly hold_id: string;
  /** Absent when the capture is in the authorizing commit itself (`same_commit`): that commit's index. */
  readonly authorize_commit_index?: number;
  /** Stored in the commit that authorized the hold (ADR 0041). */
  readonly same_commit?: true;
  /** The Admit command that captured (ADR 0058); absent in commits stored before it was recorded. */
  readonly command_id?: string;
  readonly at_ms: number;
}

export type ReverseCause = 'nonce_preflight' | 'pre_dispatch_cleanup' | 'expired' | 'reconciled';

export interface HoldReversedData {
  readonly kind: Extract<MutationKind, 'reverse_exposure' | 'reverse_invocation'>;
  readonly hold_id: string;
  readonly cause: ReverseCause;
  readonly at_ms: number;
}

export type CancelCause = 'payment_declined' | 'payment_released' | 'not_dispatched' | 'reconciled';

export interface CaptureCancelledData {
  readonly kind: 'cancel_captured_before_dispatch';
  readonly hold_id: string;
  readonly cause: CancelCause;
  readonly at_ms: number;
}

export interface ExposureReleasedData {
  readonly kind: 'release_exposure';
  readonly hold_id: string;
  readonly at_ms: number;
}

export interface SpendSettledData {
  readonly kind: Extract<MutationKind, 'reconcile_spend' | 'capture_spend'>;
  readonly hold_id: string;
  readonly actual_units: bigint;
  /**
   * The spend booked: the whole charge (ADR 0043). Events from before ADR 0043 (those without
   * hold_overrun_units) booked min(charge, the room the limits had left), and replay as such.
   */
  readonly realized_units: bigint;
  /**
   * The charge the limits did not book. Only events from before ADR 0043 have more than 0;
   * since then the whole charge is booked and this is always 0.
   */
  readonly overrun_units: bigint;
  /**
   * The charge beyond the hold's exposure, booked in full (ADR 0043): the overrun usage shows.
   * Absent on events from before ADR 0043, which count no overrun.
   */
  readonly hold_overrun_units?: bigint;
  readonly at_ms: number;
  /** Tokens the call used: corrects the hold's tokens_per_minute share. */
  readonly tokens_used?: number;
  /**
   * Set when no settlement came (ADR 0047): the sweep booked the whole exposure. Absent on every
   * settlement the orchestrator reported, and on every event from before ADR 0047.
   */
  readonly cause?: UnsettledCause;
}

/**
 * The orchestrator's late record of a hold the sweep realized in full (ADR 0047): a further
 * fact that moves realized spend from the whole exposure to what the call really cost.
 */
export interface SpendCorrectedData {
  readonly kind: 'correct_spend';
  readonly hold_id: string;
  /** What the orchestrator reported, late. */
  readonly outcome: 'completed' | 'failed_after_dispatch' | 'elicitation_required' | 'not_dispatched';
  /** The cost a completed outcome reported. */
  readonly actual_units?: bigint;
  /** The spend booked before: the whole exposure the sweep realized. */
  readonly previous_realized_units: bigint;
  /** The spend booked now (spendFor of a completed outcome; 0 when the call never ran; kept when it failed). */
  readonly realized_units: bigint;
  /** The part of realized_units beyond the hold (ADR 0043). */
  readonly hold_overrun_units: bigint;
  /** -1 when the call never ran (not dispatched, or stopped for an elicitation): its invocation is given back. */
  readonly invocation_delta: 0 | -1;
  readonly at_ms: number;
}

export type DispatchFailure = 'cancellation' | 'deadline' | 'incomplete' | 'generic' | 'tool_not_registered';

export interface HoldRetainedData {
  readonly hold_id: string;
  readonly failure: DispatchFailure;
  readonly at_ms: number;
}

export interface InvocationAdmittedData {
  readonly hold_id: string;
  readonly at_ms: number;
}

export interface LeaseReservedData {
  readonly hold_id: string;
  readonly lease_id: string;
  readonly at_ms: number;
}

export interface LeaseReleasedData {
  readonly hold_id: string;
  readonly lease_id: string;
  readonly outcome: 'released' | 'failed';
  readonly at_ms: number;
}

export type PaymentStep =
  | 'authorized'
  | 'declined'
  | 'insufficient_funds'
  | 'ambiguous'
  | 'captured'
  | 'capture_failed'
  | 'released'
  | 'release_pending'
  | 'release_failed'
  | 'refunded';

export interface PaymentStepRecordedData {
  readonly hold_id: string;
  readonly step: PaymentStep;
  /** The idempotency reference the rail received: the request id. */
  readonly reference: string;
  readonly authorization_id?: string;
  readonly rail_reference?: string;
  readonly mode?: PaymentMode;
  readonly amount_units?: bigint;
  readonly currency?: string;
  readonly at_ms: number;
}

export interface NonceIssuedData {
  readonly nonce_id: string;
  readonly hold_id: string;
  readonly binding: NonceBinding;
  readonly expires_at_ms: number;
  readonly at_ms: number;
}

export interface NonceConsumedData {
  readonly nonce_id: string;
  readonly binding: NonceBinding;
  readonly expires_at_ms: number;
  readonly at_ms: number;
}

export interface AmbiguityRecordedData {
  readonly ambiguity_id: string;
  readonly kind: AmbiguityKind;
  readonly hold_id: string;
  readonly event_id?: string;
  /** What a read of the stream showed right after the lost acknowledgement. */
  readonly event_in_stream?: boolean;
  readonly reference?: string;
  readonly at_ms: number;
}

export interface AmbiguityResolvedData {
  readonly ambiguity_id: string;
  readonly resolution: string;
  readonly rail_state?: string;
  readonly at_ms: number;
}

export interface ReceiptRecordedData {
  readonly receipt_id: string;
  readonly command_id: string;
  readonly request_id?: string;
  readonly hold_id?: string;
  readonly receipt: Readonly<Record<string, unknown>>;
  readonly signature: string;
  readonly key_id: string;
  readonly decision?: Readonly<Record<string, unknown>>;
  readonly at_ms: number;
}

export type BudgetEvent =
  | Ev<'CapabilityIssued', CapabilityIssuedData>
  | Ev<'CapabilityRevoked', CapabilityRevokedData>
  | Ev<'HoldAuthorized', HoldAuthorizedData>
  | Ev<'InvocationCaptured', InvocationCapturedData>
  | Ev<'HoldReversed', HoldReversedData>
  | Ev<'CaptureCancelled', CaptureCancelledData>
  | Ev<'ExposureReleased', ExposureReleasedData>
  | Ev<'SpendSettled', SpendSettledData>
  | Ev<'HoldRetained', HoldRetainedData>
  | Ev<'InvocationAdmitted', InvocationAdmittedData>
  | Ev<'LeaseReserved', LeaseReservedData>
  | Ev<'LeaseReleased', LeaseReleasedData>
  | Ev<'PaymentStepRecorded', PaymentStepRecordedData>
  | Ev<'NonceIssued', NonceIssuedData>
  | Ev<'NonceConsumed', NonceConsumedData>
  | Ev<'AmbiguityRecorded', AmbiguityRecordedData>
  | Ev<'AmbiguityResolved', AmbiguityResolvedData>
  | Ev<'ReceiptRecorded', ReceiptRecordedData>
  | Ev<'HoldIncreased', HoldIncreasedData>
  | Ev<'BudgetThresholdCrossed', BudgetThresholdCrossedData>
  | Ev<'BudgetExhausted', BudgetExhaustedData>
  | Ev<'BudgetOverrun', BudgetOverrunData>
  | Ev<'SpendCorrected', SpendCorrectedData>;

export type BudgetEventType = BudgetEvent['type'];

export const BUDGET_EVENT_TYPES: readonly BudgetEventType[] = [
  'CapabilityIssued',
  'CapabilityRevoked',
  'HoldAuthorized',
  'InvocationCaptured',
  'HoldReversed',
  'CaptureCancelled',
  'ExposureReleased',
  'SpendSettled',
  'HoldRetained',
  'InvocationAdmitted',
  'LeaseReserved',
  'LeaseReleased',
  'PaymentStepRecorded',
  'NonceIssued',
  'NonceConsumed',
  'AmbiguityRecorded',
  'AmbiguityResolved',
  'ReceiptRecorded',
  'HoldIncreased',
  'BudgetThresholdCrossed',
  'BudgetExhausted',
  'BudgetOverrun',
  'SpendCorrected',
];

/**
 * An event as it sits in the stream: its commit index is the stream sequence, shared by
 * every event of one append; its position (absent: 0) is its place in that commit.
 */
export type RecordedBudgetEvent = BudgetEvent & { readonly commit_index: number; readonly commit_position?: number };

export type EventOf<T extends BudgetEventType> = Extract<BudgetEvent, { type: T }>;
