// Named results of decide: events to append, or one rejection per reason. A rejection
// is an expected outcome (it becomes a Deny with a reason), never an exception.
import type { BudgetEvent } from './events.js';

export type RejectionCode =
  | 'capability_exists'
  | 'capability_unknown'
  | 'capability_revoked'
  | 'capability_expired'
  | 'subject_mismatch'
  | 'parent_unknown'
  | 'wrong_tree'
  | 'grants_invalid'
  | 'grant_not_narrowing'
  | 'expiry_beyond_parent'
  | 'budget_share_exceeds_parent'
  | 'delegation_too_deep'
  | 'no_matching_grant'
  | 'cost_required'
  | 'requested_cost_exceeds_max_per_invocation'
  | 'max_invocations_reached'
  | 'total_cost_limit_reached'
  | 'budget_overrun'
  | 'capability_budget_exhausted'
  | 'already_dispatched'
  | 'request_replayed'
  | 'preflight_replayed'
  | 'hold_unknown'
  | 'hold_not_authorized'
  | 'hold_expired'
  | 'hold_not_captured'
  | 'hold_not_admitted'
  | 'already_admitted'
  | 'hold_already_settled'
  /** An admitted hold within its TTL and the grace: its settlement may still come (ADR 0047). */
  | 'hold_not_overdue'
  | 'nonce_already_consumed'
  | 'nonce_expired'
  | 'ambiguity_unknown'
  | 'command_already_answered'
  /** An Admit's deny while a capture of its own command stands unexplained (ADR 0058). */
  | 'capture_outstanding'
  | 'rate_limited'
  | 'tokens_required'
  | 'requested_tokens_exceed_rate_limit'
  | 'hold_cap_exceeded'
  | 'increase_limit_reached'
  | 'hold_not_open'
  /** A sum the command would book (usage, spend, exposure, siblings' shares) would pass 2^63-1 (ADR 0044). */
  | 'amount_out_of_range'
  | 'currency_mismatch';

export interface Rejection {
  readonly code: RejectionCode;
  readonly message: string;
  /** For rate_limited: when a retry can pass, as the window stands now. */
  readonly retry_after_ms?: number;
}

export type Decision =
  | { readonly ok: true; readonly events: readonly BudgetEvent[] }
  | { readonly ok: false; readonly rejection: Rejection };

export const accept = (...events: BudgetEvent[]): Decision => ({ ok: true, events });

export const reject = (code: RejectionCode, message: string): Decision => ({ ok: false, rejection: { code, message } });
