// The value types of the delegation-tree aggregate. Money is bigint minor units;
// time is epoch milliseconds that arrive on commands; commit indexes are stream sequences.
import type { BudgetReset, Period } from './periods.js';

/** Admission rates of a grant (http-api.md, Spend policy): exact, because the tree's aggregate decides them. */
export interface RateLimits {
  /** Admissions in any sliding 60 s. */
  readonly requests_per_minute?: number;
  /** Worst-case tokens held by admissions in any sliding 60 s, corrected to the used tokens at settlement. */
  readonly tokens_per_minute?: number;
  /** Holds open (authorized or captured, not yet settled or undone) at once. */
  readonly max_concurrent?: number;
}

export interface Grant {
  readonly server_id: string;
  /** A tool name, or "*" for every tool of the server. */
  readonly tool_name: string;
  readonly max_invocations?: number;
  readonly max_cost_per_invocation?: bigint;
  readonly max_total_cost_units?: bigint;
  readonly currency?: string;
  /** max_invocations and max_total_cost_units apply per period (periods.ts). */
  readonly reset?: BudgetReset;
  readonly rate_limits?: RateLimits;
  /** Shares of max_total_cost_units (per period) whose first crossing is recorded as an alert. */
  readonly alert_at_percent?: readonly number[];
  /** The most any single hold on this grant may expose, increases included. */
  readonly hold_cap_units?: bigint;
}

/** A grant as stored on a capability: delegated grants remember which parent grant they narrow. */
export interface StoredGrant extends Grant {
  readonly parent_grant_index?: number;
}

export interface GrantRef {
  readonly capability_id: string;
  readonly grant_index: number;
}

export interface Capability {
  readonly id: string;
  readonly root_id: string;
  readonly parent_id?: string;
  /** Absent on capabilities issued before tenants existed: they belong to DEFAULT_TENANT_ID. */
  readonly tenant_id?: string;
  readonly subject_public_key: string;
  /** Spending calls must carry an HTTP message signature by the subject key (ADR 0011). */
  readonly bind?: 'subject_key';
  readonly issued_at_ms: number;
  readonly expires_at_ms: number;
  readonly grants: readonly StoredGrant[];
  /** The capability's own budget across all its grants: a delegated share, or a root cap. */
  readonly budget_units?: bigint;
  readonly depth: number;
  readonly children: readonly string[];
  readonly revoked_at_ms?: number;
}

/** The tenant that always exists; every capability issued before tenants belongs to it. */
export const DEFAULT_TENANT_ID = 'default';

export function tenantOfCapability(capability: Pick<Capability, 'tenant_id'>): string {
  return capability.tenant_id ?? DEFAULT_TENANT_ID;
}

export interface Usage {
  readonly invocation_count: number;
  readonly exposed_cost_units: bigint;
  readonly realized_cost_units: bigint;
  /**
   * What providers billed beyond their holds, booked as realized spend (ADR 0043): committed
   * may pass the grant's limit by this much, and by nothing else.
   */
  readonly overrun_cost_units: bigint;
}

export const ZERO_USAGE: Usage = {
  invocation_count: 0,
  exposed_cost_units: 0n,
  realized_cost_units: 0n,
  overrun_cost_units: 0n,
};

export function committedOf(usage: Usage): bigint {
  return usage.exposed_cost_units + usage.realized_cost_units;
}

/**
 * Why a settlement or an increase in `currency` may not touch this hold, or undefined when it
 * may (ADR 0043): a hold counts in its grant's currency only. A hold whose grant names no
 * currency, or a call that names none, has nothing to compare.
 */
export function currencyMismatch(hold: Pick<Hold, 'currency'>, currency: string | undefined): string | undefined {
  if (currency === undefined || hold.currency === undefined || currency === hold.currency) return undefined;
  return `currency ${currency} differs from the hold's ${hold.currency}`;
}

/** What an execution nonce and a hold are bound to. */
export interface Binding {
  readonly subject: string;
  readonly server_id: string;
  readonly tool_name: string;
  readonly parameters_hash: string;
}

export type AdmitContext = { readonly kind: 'standalone' } | { readonly kind: 'session'; readonly session_id: string };

export type HoldStatus =
  | 'authorized' // budget reserved, not yet captured
  | 'captured' // invocation captured; dispatch may follow once admitted
  | 'reversed' // uncaptured hold undone (rollback, cleanup or expiry)
  | 'cancelled' // captured, then cancelled before dispatch
  | 'released' // dispatched, then released (elicitation)
  | 'settled' // dispatched and completed: spend recorded
  | 'retained'; // dispatched and failed: everything kept (B5)

export type PaymentStatus =
  | 'none'
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

export interface HoldPayment {
  readonly status: PaymentStatus;
  readonly reference: string;
  readonly authorization_id?: string;
  readonly mode?: PaymentMode;
  readonly rail_reference?: string;
  readonly steps: number;
}

export type PaymentMode = 'reversible_hold' | 'prepaid_final';

export interface Hold {
  readonly hold_id: string;
  readonly request_id: string;
  /** The Admit command that took the hold, when recorded. */
  readonly command_id?: string;
  /** The Admit command that captured it, when recorded (a twin may capture a hold another authorized, B8). */
  readonly captured_by?: string;
  readonly capability_id: string;
  readonly grant_index: number;
  /** The grant and every ancestor grant it narrows, nearest first; spend counts against all. */
  readonly chain: readonly GrantRef[];
  readonly exposure_units: bigint;
  readonly currency?: string;
  readonly monetary: boolean;
  readonly preflight: boolean;
  readonly binding: Binding;
  readonly context: AdmitContext;
  readonly expires_at_ms: number;
  readonly status: HoldStatus;
  readonly authorize_commit_index: number;
  readonly capture_event_id?: string;
  readonly capture_commit_index?: number;
  readonly admitted: boolean;
  readonly payment: HoldPayment;
  readonly lease_id?: string;
  readonly lease_released: boolean;
  /** Set once a release of the lease was recorded as failed: that fact holds its event id, so no later one is recorded. */
  readonly lease_release_failed?: true;
  readonly realized_units?: bigint;
  /** The period the hold counts in, per chain entry (null: that grant has no reset). Absent: none has. */
  readonly periods?: readonly (Period | null)[];
  /** Worst-case tokens held against tokens_per_minute (absent: none declared). */
  readonly tokens?: number;
  /** The tokens the hold counts now in its windows: the held ones, then the used ones after settlement. */
  readonly tokens_counted?: number;
  /** Its place in each chain entry's rate window (null: that grant has no rate limits). */
  readonly rate_seqs?: readonly (number | null)[];
  /** Increases taken so far (POST /v1/holds/{id}/increase). */
  readonly increases?: number;
  /** Set when the sweep realized the hold in full because its settlement never came (ADR 0047). */
  readonly settlement_cause?: UnsettledCause;
  /** Set once the orchestrator's late record corrected that settlement: it is corrected only once. */
  readonly corrected?: true;
}

/** Why a hold was settled without its settlement: it was admitted, and none came within its TTL and the grace. */
export type UnsettledCause = 'unsettled_expired';

export interface NonceBinding extends Binding {
  readonly request_id: string;
  readonly capability_id: string;
}

export interface Nonce {
  readonly nonce_id: string;
  readonly binding: NonceBinding;
  readonly expires_at_ms: number;
  readonly consumed_by?: string;
}

export type AmbiguityKind =
  | 'invocation_capture'
  | 'cancellation'
  | 'reverse'
  | 'payment_authorization'
  | 'payment_release'
  | 'payment_capture'
  /** An admitted hold whose settlement never came; realized in full until the orchestrator's record corrects it. */
  | 'settlement_missing';

export interface Ambiguity {
  readonly ambiguity_id: string;
  readonly kind: AmbiguityKind;
  readonly hold_id: string;
  readonly event_id?: string;
  readonly event_in_stream?: boolean;
  readonly reference?: string;
  readonly resolution?: string;
}

export interface ReceiptRecord {
  readonly receipt_id: string;
  readonly command_id: string;
  readonly request_id?: string;
  readonly hold_id?: string;
  /** The signed body, exactly as signed: a replay re-signs it to the same signature. */
  readonly body: Readonly<Record<string, unknown>>;
  readonly signature: string;
  readonly key_id: string;
  /** Decision extras the caller saw with the receipt (nonce, admission proof), replayed on a retried command. */
  readonly decision?: Readonly<Record<string, unknown>>;
}

export type MutationKind =
  | 'increment_invocation'
  | 'reserve_invocation'
  | 'authorize_exposure'
  | 'capture_invocation'
  | 'reverse_invocation'
  | 'cancel_captured_before_dispatch'
  | 'reverse_exposure'
  | 'release_exposure'
  | 'reconcile_spend'
  | 'capture_spend'
  | 'increase_exposure'
  /** A late settlement's correction of a hold the sweep realized in full (ADR 0047). */
  | 'correct_spend';

export interface MutationRecord {
  readonly event_id: string;
  readonly kind: MutationKind;
  readonly hold_id: string;
  readonly request_id: string;
  readonly capability_id: string;
  readonly grant_index: number;
  readonly commit_index: number;
  readonly at_ms: number;
  readonly invocation_delta: number;
  readonly exposed_delta_units: bigint;
  readonly realized_delta_units: bigint;
}
