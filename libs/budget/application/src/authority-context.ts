// What every handler needs: the ports, the tree store and the explicit limits.
import type { TreeStore, TreeStoreLimits } from './tree-store.js';
import type { AdmissionHook, Clock, IdGenerator, PaymentRail, Signer } from './ports.js';

export interface BudgetAuthorityLimits extends TreeStoreLimits {
  /** How long an uncaptured hold lives before the expiry sweep reverses it (B20). */
  readonly holdTtlMs: number;
  /**
   * How long past its TTL an admitted hold waits for its settlement before the sweep realizes
   * it in full (B20, ADR 0047): long enough for every re-send of a Settle.
   */
  readonly unsettledGraceMs: number;
  readonly nonceTtlMs: number;
  /** When true, a request without an execution nonce gets a preflight and a nonce instead of a dispatch (B13). */
  readonly requireExecutionNonce: boolean;
  readonly delegationDepthMax: number;
  readonly grantsPerCapabilityMax: number;
  readonly capabilityTtlMaxMs: number;
  readonly expireHoldsPerStepMax: number;
  readonly mutationListLimitMax: number;
  /** Appends of a receipt retried after a lost acknowledgement that the stream does not show. */
  readonly receiptAppendAttemptsMax: number;
  /** The retry-after of a max_concurrent refusal (no window says when a hold closes). Default 1000. */
  readonly concurrencyRetryAfterMs?: number;
  /** How often one hold may be increased (POST /v1/holds/{id}/increase). Default 4. */
  readonly holdIncreasesMax?: number;
  /**
   * Capture in the authorizing commit when nothing has to run between the two (a passive
   * admission hook, no nonce): one commit fewer per Admit (ADR 0041). Default true.
   */
  readonly captureWithAuthorize?: boolean;
}

export interface AuthorityContext {
  readonly trees: TreeStore;
  readonly signer: Signer;
  readonly rail: PaymentRail;
  readonly hook: AdmissionHook;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly limits: BudgetAuthorityLimits;
}

/** Receipts of Admits whose capability token does not verify are kept on their own subject. */
export const UNVERIFIED_TREE = '_unverified';

/** Child capability ids are `{root}--{id}`: the tree (subject) of any capability follows from its id. */
export const rootOfCapability = (capabilityId: string): string => capabilityId.split('--')[0]!;

export const Reasons = {
  captureUnconfirmed: 'budget invocation capture could not be confirmed',
  cancellationUnconfirmed: 'captured budget cancellation could not be confirmed',
  preflightCleanupUnconfirmed: 'execution nonce preflight cleanup could not be confirmed',
  preDispatchCleanupUnconfirmed: 'pre-dispatch cleanup could not be confirmed',
  authorizeUnconfirmed: 'budget hold authorization could not be confirmed',
  paymentDeclined: 'payment declined',
  insufficientFunds: 'insufficient funds',
  paymentAmbiguous: 'payment authorization could not be confirmed',
  paymentReleaseUnconfirmed: 'pre-dispatch payment release could not be confirmed',
  nonceConsumed: 'execution nonce was already consumed',
  nonceMismatch: 'execution nonce does not match the request',
  nonceInvalid: 'execution nonce is invalid',
  nonceExpired: 'execution nonce expired',
  nonceIssued: 'execution nonce issued; present it to dispatch',
  capabilityInvalid: 'capability token is invalid',
  runtimeDenied: 'runtime admission denied',
  admitted: 'admitted',
  rateLimited: 'rate_limited',
  increased: 'increased',
} as const;
