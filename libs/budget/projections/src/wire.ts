// The budget events as the projections read them: wire payloads (money as a JSON number
// or a decimal string) from the TALLY_BUDGET_EVENTS stream. A platform library may not
// import the domain, so the few fields the projections use are declared here; the
// application's event registry validates every payload before it reaches a projection.
// Going the other way, the projected hold and ambiguity rows as the HTTP API answers them.
import { moneyFromWire, moneyToWire } from '@tally/contracts';
import type { AmbiguityRow, HoldRow } from './entities.js';

export type WireMoney = number | string;

export interface WireGrantRef {
  readonly capability_id: string;
  readonly grant_index: number;
}

export interface WireGrant {
  readonly server_id: string;
  readonly tool_name: string;
  readonly max_invocations?: number;
  readonly max_cost_per_invocation?: WireMoney;
  readonly max_total_cost_units?: WireMoney;
  readonly currency?: string;
  readonly parent_grant_index?: number;
}

export interface CapabilityIssuedWire {
  readonly capability_id: string;
  readonly root_id: string;
  readonly parent_id?: string;
  /** Absent on events from before tenants: the tenant `default`. */
  readonly tenant_id?: string;
  readonly subject_public_key: string;
  readonly issued_at_ms: number;
  readonly expires_at_ms: number;
  readonly grants: readonly WireGrant[];
  readonly budget_units?: WireMoney;
  readonly depth: number;
}

export interface CapabilityRevokedWire {
  readonly capability_id: string;
  readonly revoked_ids: readonly string[];
  readonly at_ms: number;
}

export interface HoldAuthorizedWire {
  readonly kind: string;
  readonly hold_id: string;
  readonly request_id: string;
  readonly capability_id: string;
  readonly grant_index: number;
  readonly chain: readonly WireGrantRef[];
  readonly exposure_units: WireMoney;
  readonly currency?: string;
  readonly monetary: boolean;
  readonly preflight: boolean;
  readonly expires_at_ms: number;
  readonly at_ms: number;
}

/** InvocationCaptured, HoldReversed, CaptureCancelled, ExposureReleased, SpendSettled, SpendCorrected. */
export interface HoldMutationWire {
  readonly kind: string;
  readonly hold_id: string;
  readonly cause?: string;
  readonly realized_units?: WireMoney;
  readonly actual_units?: WireMoney;
  /** SpendSettled: the charge beyond the hold (ADR 0043); absent on events from before it. */
  readonly hold_overrun_units?: WireMoney;
  /** HoldIncreased: the exposure added. */
  readonly amount_units?: WireMoney;
  /** SpendCorrected (ADR 0047): the spend the sweep booked, which realized_units replaces. */
  readonly previous_realized_units?: WireMoney;
  /** SpendCorrected: -1 when the call never ran and its invocation is given back. */
  readonly invocation_delta?: number;
  /** SpendCorrected: the outcome the orchestrator reported late, shown as the mutation's cause. */
  readonly outcome?: string;
  readonly at_ms: number;
}

export interface HoldStepWire {
  readonly hold_id: string;
  readonly at_ms: number;
  readonly failure?: string;
}

export interface AmbiguityRecordedWire {
  readonly ambiguity_id: string;
  readonly kind: string;
  readonly hold_id: string;
  readonly event_id?: string;
  readonly event_in_stream?: boolean;
  readonly reference?: string;
  readonly at_ms: number;
}

export interface AmbiguityResolvedWire {
  readonly ambiguity_id: string;
  readonly resolution: string;
  readonly rail_state?: string;
  readonly at_ms: number;
}

export interface ReceiptRecordedWire {
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

/** An amount that the registry already validated; anything else is a bug upstream. */
export function money(value: WireMoney | undefined): bigint {
  if (value === undefined) return 0n;
  const amount = moneyFromWire(value);
  if (amount === undefined) throw new Error(`not an amount of minor units: ${JSON.stringify(value)}`);
  return amount;
}

export function optionalMoney(value: WireMoney | undefined): bigint | null {
  return value === undefined ? null : money(value);
}

/** Plain JSON of a payload object (class instances from the registry become plain data). */
export function plainJson(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * Which list a row is answered in: one across capabilities (GET /v1/holds, GET /v1/ambiguities)
 * names each row's capability; one capability's own (GET /v1/capabilities/{id}/…) does not.
 */
export type RowList = 'across' | 'capability';

/**
 * A hold as the HTTP API answers it; one capability's list also gives the commit indexes of its
 * authorization and capture. The keys stay in this order: it is the answer's, byte for byte.
 */
export function holdToWire(h: HoldRow, list: RowList) {
  return {
    hold_id: h.holdId,
    ...(list === 'across' ? { capability_id: h.capabilityId } : {}),
    request_id: h.requestId,
    grant_index: h.grantIndex,
    status: h.status,
    preflight: h.preflight === 1,
    exposure_units: moneyToWire(h.exposureUnits),
    expires_at: new Date(h.expiresAtMs).toISOString(),
    ...(list === 'capability'
      ? { authorize_commit_index: h.authorizeCommitIndex, capture_commit_index: h.captureCommitIndex }
      : {}),
  };
}

/** A recorded ambiguity and how the reconciler resolved it, as the HTTP API answers it (keys in this order). */
export function ambiguityToWire(a: AmbiguityRow, list: RowList) {
  return {
    ambiguity_id: a.ambiguityId,
    ...(list === 'across' ? { capability_id: a.capabilityId } : {}),
    kind: a.kind,
    hold_id: a.holdId,
    event_id: a.eventId,
    reference: a.reference,
    resolution: a.resolution,
    rail_state: a.railState,
    recorded_sequence: a.recordedSequence,
    resolved_sequence: a.resolvedSequence,
  };
}
