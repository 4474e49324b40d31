// The ports of the budget application layer. Adapters live in infrastructure (or in a
// test); a real payment-rail adapter is one file that implements PaymentRail.
import type { AdmitContext, PaymentMode } from '@tally/budget-domain';

export interface Clock {
  nowMs(): number;
}

export interface IdGenerator {
  /** A fresh id made of [A-Za-z0-9_] only (it becomes part of a subject token). */
  newId(): string;
}

export interface PaymentAuthorizeRequest {
  /** The idempotency reference the rail receives: the request id. */
  readonly reference: string;
  readonly hold_id: string;
  readonly amount_units: bigint;
  readonly currency: string;
}

/** authorized, declined and insufficient_funds are definite; unavailable and rail_error are ambiguous. */
export type PaymentAuthorizeResult =
  | { readonly outcome: 'authorized'; readonly authorization_id: string; readonly mode: PaymentMode }
  | { readonly outcome: 'declined'; readonly detail: string }
  | { readonly outcome: 'insufficient_funds' }
  | { readonly outcome: 'unavailable'; readonly detail: string }
  | { readonly outcome: 'rail_error'; readonly detail: string };

/** settled, released and refunded are confirmed; pending and failed are definite but unconfirmed; the rest ambiguous. */
export type PaymentResult =
  | { readonly outcome: 'settled' | 'released' | 'refunded' | 'pending'; readonly rail_reference: string }
  | { readonly outcome: 'failed' | 'unavailable' | 'rail_error'; readonly detail: string };

export type SettlementState =
  | {
      readonly state: 'none' | 'authorized' | 'captured' | 'released' | 'refunded' | 'pending' | 'declined';
      readonly authorization_id?: string;
    }
  | { readonly state: 'unknown'; readonly detail: string };

export interface PaymentRail {
  authorize(request: PaymentAuthorizeRequest): Promise<PaymentAuthorizeResult>;
  capture(request: {
    authorization_id: string;
    amount_units: bigint;
    currency: string;
    reference: string;
  }): Promise<PaymentResult>;
  release(request: { authorization_id: string; reference: string }): Promise<PaymentResult>;
  refund(request: {
    transaction_id: string;
    amount_units: bigint;
    currency: string;
    reference: string;
  }): Promise<PaymentResult>;
  /** What the rail knows about a reference: lets the reconciler resolve an ambiguity from facts. */
  settlementState(reference: string): Promise<SettlementState>;
}

export interface PublicKeyDescription {
  readonly key_id: string;
  readonly algorithm: 'ed25519';
  readonly public_key: string;
}

/**
 * Signs canonical JSON of a value. Deterministic, so a replayed receipt re-signs identically.
 * Keys rotate (ADR 0014): `keyId` is the key new signatures use now, and a body that names its
 * key_id is signed with `sign(body, body.key_id)`, so a rotation between reading the id and
 * signing never yields a body that names one key and a signature by another.
 */
export interface Signer {
  readonly keyId: string;
  sign(value: unknown, keyId?: string): string;
  verify(value: unknown, signature: string, keyId: string): boolean;
  /** Whether `keyId` is still accepted (published, not retired): a remembered verification ends with its key. */
  accepts?(keyId: string): boolean;
  publicKeys(): PublicKeyDescription[];
}

export interface AdmissionRequest {
  readonly request_id: string;
  readonly hold_id: string;
  readonly capability_id: string;
  readonly server_id: string;
  readonly tool_name: string;
  readonly context: AdmitContext;
}

export type AdmissionVerdict =
  { readonly outcome: 'allow'; readonly lease_id?: string } | { readonly outcome: 'deny'; readonly reason: string };

export interface LeaseRef {
  readonly lease_id: string;
  readonly hold_id: string;
  readonly request_id: string;
}

/** The pluggable admission policy. A lease it reserves is released on every path that does not dispatch. */
export interface AdmissionHook {
  readonly name: string;
  /**
   * True while the hook allows every request at once and reserves nothing: step 4 then
   * changes nothing, and the authority may capture in the authorizing commit (ADR 0041).
   */
  readonly passive?: boolean;
  reserve(request: AdmissionRequest): Promise<AdmissionVerdict>;
  /** Throws when the release cannot be confirmed. */
  release(lease: LeaseRef): Promise<void>;
}

export const allowAllAdmissionHook: AdmissionHook = {
  name: 'allow-all',
  passive: true,
  reserve: async () => ({ outcome: 'allow' }),
  release: async () => undefined,
};
