// Commands to the delegation-tree aggregate. Each is one durable step of a use case;
// time, ids and rail outcomes arrive on the command, because the decider does no I/O.
import type { CancelCause, DispatchFailure, PaymentStep } from './events.js';
import type { AdmitContext, AmbiguityKind, Grant, NonceBinding, PaymentMode } from './model.js';

export interface IssueCapability {
  readonly type: 'IssueCapability';
  readonly capability_id: string;
  readonly root_id: string;
  readonly parent_id?: string;
  /** The tenant a root capability belongs to; a delegation always belongs to its parent's. */
  readonly tenant_id?: string;
  readonly subject_public_key: string;
  /** `subject_key`: every spending call must also be signed with the subject's key (ADR 0011). */
  readonly bind?: 'subject_key';
  readonly expires_at_ms: number;
  readonly grants: readonly Grant[];
  readonly budget_units?: bigint;
  readonly now_ms: number;
  readonly delegation_depth_max: number;
  readonly grants_max: number;
}

export interface RevokeCapability {
  readonly type: 'RevokeCapability';
  readonly capability_id: string;
  readonly now_ms: number;
}

export interface AuthorizeHold {
  readonly type: 'AuthorizeHold';
  /** The command that takes the hold: a re-run of the same command resumes it instead of being a replay. */
  readonly command_id?: string;
  readonly request_id: string;
  readonly capability_id: string;
  readonly subject: string;
  readonly server_id: string;
  readonly tool_name: string;
  readonly parameters_hash: string;
  readonly requested_cost?: bigint;
  /** A nonce preflight takes a separate hold that is always rolled back (B13). */
  readonly preflight: boolean;
  readonly context: AdmitContext;
  readonly hold_ttl_ms: number;
  readonly now_ms: number;
  /** Worst-case tokens of the call, held against tokens_per_minute. */
  readonly requested_tokens?: number;
  /** The smallest exposure the caller can use: a hold that does not fit whole is fitted down to this. */
  readonly min_cost?: bigint;
  /** The retry-after a refusal for max_concurrent suggests (no window tells when a hold closes). */
  readonly concurrency_retry_after_ms?: number;
}

/** Raises an open hold within its grant (incremental authorization). */
export interface IncreaseHold {
  readonly type: 'IncreaseHold';
  readonly hold_id: string;
  readonly command_id?: string;
  readonly amount_units: bigint;
  /** The currency the caller counts the increase in; refused when it is not the hold's (ADR 0043). */
  readonly currency?: string;
  readonly tokens?: number;
  readonly increases_max: number;
  readonly now_ms: number;
}

export interface PaymentStepInput {
  readonly step: PaymentStep;
  readonly authorization_id?: string;
  readonly rail_reference?: string;
  readonly mode?: PaymentMode;
  readonly amount_units?: bigint;
  readonly currency?: string;
}

export type CaptureInvocation =
  | {
      readonly type: 'CaptureInvocation';
      readonly hold_id: string;
      /** The Admit command that captures (F1): only its re-runs may go on from this capture. */
      readonly command_id?: string;
      readonly now_ms: number;
      readonly same_commit?: never;
    }
  /**
   * The capture of the hold `request_id` was just authorized for, in the same commit (ADR
   * 0041): its id names that commit's index, which is known only once the commit is stored,
   * so the stored id leaves it out and every reader completes it from the commit it is in.
   */
  | {
      readonly type: 'CaptureInvocation';
      readonly request_id: string;
      readonly command_id?: string;
      readonly now_ms: number;
      readonly same_commit: true;
    };

export interface RollbackHold {
  readonly type: 'RollbackHold';
  readonly hold_id: string;
  readonly cause: 'nonce_preflight' | 'pre_dispatch_cleanup' | 'reconciled';
  readonly now_ms: number;
}

export interface CancelCaptured {
  readonly type: 'CancelCaptured';
  readonly hold_id: string;
  readonly cause: CancelCause;
  readonly now_ms: number;
}

export interface RecordPaymentStep {
  readonly type: 'RecordPaymentStep';
  readonly hold_id: string;
  readonly payment: PaymentStepInput;
  readonly now_ms: number;
}

export interface RecordLease {
  readonly type: 'RecordLease';
  readonly hold_id: string;
  readonly lease_id: string;
  readonly outcome: 'reserved' | 'released' | 'failed';
  readonly now_ms: number;
}

export interface AdmitInvocation {
  readonly type: 'AdmitInvocation';
  readonly hold_id: string;
  readonly now_ms: number;
}

export interface PresentedNonce {
  readonly nonce_id: string;
  readonly binding: NonceBinding;
  readonly expires_at_ms: number;
}

export interface ConsumeNonce {
  readonly type: 'ConsumeNonce';
  readonly nonce: PresentedNonce;
  readonly now_ms: number;
}

export interface IssueNonce {
  readonly type: 'IssueNonce';
  readonly hold_id: string;
  readonly nonce: PresentedNonce;
  readonly now_ms: number;
}

export type SettleOutcome =
  | { readonly kind: 'completed'; readonly cost_units: bigint; readonly currency?: string }
  | { readonly kind: 'failed_after_dispatch'; readonly failure: DispatchFailure }
  | { readonly kind: 'elicitation_required'; readonly message: string }
  | { readonly kind: 'not_dispatched'; readonly reason: string };

export interface SettleHold {
  readonly type: 'SettleHold';
  readonly hold_id: string;
  /** Tokens the call used: corrects its share of tokens_per_minute. */
  readonly tokens_used?: number;
  /** not_dispatched settles through CancelCaptured; the other outcomes land here. */
  readonly outcome: Exclude<SettleOutcome, { kind: 'not_dispatched' }>;
  readonly now_ms: number;
}

export interface ExpireHolds {
  readonly type: 'ExpireHolds';
  readonly now_ms: number;
  readonly holds_max: number;
}

/**
 * B20 (ADR 0047): an admitted hold whose settlement has not come by its TTL plus `grace_ms`
 * is realized in full, because an absent settlement is unknown, never zero.
 */
export interface SettleUnsettled {
  readonly type: 'SettleUnsettled';
  readonly hold_id: string;
  /** How long past its TTL an admitted hold waits for its settlement (authority.unsettled_grace_ms). */
  readonly grace_ms: number;
  readonly now_ms: number;
}

/** B21 (ADR 0047): the orchestrator's late record of a hold the sweep realized in full corrects it. */
export interface CorrectSpend {
  readonly type: 'CorrectSpend';
  readonly hold_id: string;
  readonly outcome: SettleOutcome;
  readonly now_ms: number;
}

export interface RecordAmbiguity {
  readonly type: 'RecordAmbiguity';
  readonly kind: AmbiguityKind;
  readonly hold_id: string;
  readonly event_id?: string;
  readonly event_in_stream?: boolean;
  readonly reference?: string;
  readonly now_ms: number;
}

export interface ResolveAmbiguity {
  readonly type: 'ResolveAmbiguity';
  readonly ambiguity_id: string;
  readonly resolution: string;
  readonly rail_state?: string;
  readonly now_ms: number;
}

export interface RecordReceipt {
  readonly type: 'RecordReceipt';
  readonly receipt_id: string;
  readonly command_id: string;
  readonly request_id?: string;
  readonly hold_id?: string;
  readonly receipt: Readonly<Record<string, unknown>>;
  readonly signature: string;
  readonly key_id: string;
  readonly decision?: Readonly<Record<string, unknown>>;
  /**
   * An Admit whose re-run can go on from a capture of its own command (no execution nonce):
   * its deny is refused while such a capture stands unexplained (ADR 0058). Not stored.
   */
  readonly resumable?: true;
  readonly now_ms: number;
}

export type BudgetCommand =
  | IssueCapability
  | RevokeCapability
  | AuthorizeHold
  | CaptureInvocation
  | RollbackHold
  | CancelCaptured
  | RecordPaymentStep
  | RecordLease
  | AdmitInvocation
  | ConsumeNonce
  | IssueNonce
  | SettleHold
  | ExpireHolds
  | RecordAmbiguity
  | ResolveAmbiguity
  | RecordReceipt
  | IncreaseHold
  | SettleUnsettled
  | CorrectSpend;
