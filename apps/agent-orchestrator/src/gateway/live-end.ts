// How a unit's end reads to a drop-in caller: its reply (parts, stop reason and the winning
// attempt's usage, which is the receipt's) or the error to answer with, in neutral terms.
// One pure function of the unit's state, used by the worker that publishes the end and by
// the HTTP side when it answers from the record instead (a retry, a lost notification).
import {
  kindOfDenyReason,
  reasonCode,
  type NeutralError,
  type NeutralReply,
  type Part,
  type StopReason,
} from '@tally/orchestrator-dialects';
import type { WorkUnitState } from '@tally/orchestrator-domain';

export type LiveEnd =
  | { readonly status: 'completed'; readonly reply: NeutralReply }
  | { readonly status: 'failed' | 'aborted'; readonly error: NeutralError };

const STOP_REASONS: readonly string[] = ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'content_filter'];

export function liveEndOf(state: WorkUnitState): LiveEnd | undefined {
  if (state.status === 'completed' && state.completion) {
    const c = state.completion;
    const usage = state.attempts[c.winning_attempt]?.settled?.usage;
    const parts: readonly Part[] = (c.output_parts as readonly Part[] | undefined) ?? [
      { type: 'text', text: c.output },
    ];
    const stop = (STOP_REASONS.includes(c.stop_reason ?? '') ? c.stop_reason : 'end_turn') as StopReason;
    return { status: 'completed', reply: { parts, stop_reason: stop, ...(usage ? { usage } : {}) } };
  }
  if (state.status === 'failed' && state.failure) return { status: 'failed', error: failureError(state) };
  if (state.status === 'aborted')
    return {
      status: 'aborted',
      error: { kind: 'conflict', code: 'aborted', message: state.aborted?.reason ?? 'aborted' },
    };
  return undefined;
}

/**
 * A refusal by the authority keeps its reason; a unit whose attempts all failed answers as its
 * last provider answered (a rate limit stays a 429, a refused request a 400), anything else
 * is the providers' failure (502), and only Tally's own faults are 500.
 */
function failureError(state: WorkUnitState): NeutralError {
  const f = state.failure!;
  switch (f.code) {
    case 'admission_denied': {
      const reason = reasonCode(f.reason ?? 'admission_denied');
      return {
        kind: kindOfDenyReason(reason),
        code: reason,
        message: f.error,
        ...(f.retry_after_ms === undefined ? {} : { retry_after_ms: f.retry_after_ms }),
      };
    }
    case 'unpriced_model':
      return { kind: 'not_found', code: 'model_not_found', field: 'model', message: f.error };
    case 'invalid_work':
      return { kind: 'invalid_request', message: f.error };
    case 'credential_unavailable':
      return { kind: 'internal', code: f.code, message: f.error };
    default:
      return lastAttemptError(state, f.code, f.error);
  }
}

function lastAttemptError(state: WorkUnitState, code: string, error: string): NeutralError {
  const last = [...state.attempts].reverse().find((a) => a.settled)?.settled;
  const status = last?.http_status;
  if (status === 429)
    return {
      kind: 'rate_limited',
      code: 'provider_rate_limited',
      message: error,
      ...(last?.retry_after_ms === undefined ? {} : { retry_after_ms: last.retry_after_ms }),
    };
  if (status === 400 || status === 404 || status === 422)
    return { kind: 'invalid_request', code: 'provider_refused_request', message: last?.error ?? error };
  if (status === 503 || status === 529) return { kind: 'overloaded', code, message: error };
  return { kind: 'upstream', code, message: error };
}
