// decide(command, state) → events or a named rejection. Every command that moves an
// attempt is checked against `planNext`, so a stale or racing worker is rejected here
// instead of dispatching an ordinal twice or past the ceiling.
import { planNext, type NextStep } from './attempt.policy.js';
import type { AttemptOutcome, SubmitWork, WorkCommand } from './work-unit.commands.js';
import type { DecidedEvent, WorkEvent } from './work-unit.events.js';
import { isTerminal, openAttempt, type WorkUnitState } from './work-unit.state.js';
import { LIMIT_BOUNDS, PURPOSES, limitProblems, resolveLimits } from './work-unit.types.js';

export type RejectionCode = 'invalid_work' | 'not_submitted' | 'already_submitted' | 'terminal' | 'stale_step';

export interface Rejection {
  readonly code: RejectionCode;
  readonly message: string;
}

export type Decision =
  | { readonly ok: true; readonly events: readonly DecidedEvent[] }
  | { readonly ok: false; readonly rejection: Rejection };

/** Work ids become NATS subject tokens, so they obey the same rule as every subject token. */
const WORK_ID = /^[A-Za-z0-9_-]{1,64}$/;

const reject = (code: RejectionCode, message: string): Decision => ({ ok: false, rejection: { code, message } });

function accept(command: WorkCommand, events: readonly WorkEvent[]): Decision {
  return { ok: true, events: events.map((event, i) => ({ event_id: `${command.command_id}#${i}`, event })) };
}

export function decide(command: WorkCommand, state: WorkUnitState): Decision {
  if (command.type === 'SubmitWork') return decideSubmit(command, state);
  const work = state.work;
  if (!work) return reject('not_submitted', 'no work unit has been submitted under this id');
  if (isTerminal(state)) return reject('terminal', `the work unit already ended ${state.status}`);
  const base = { work_id: work.work_id, at: command.at };
  switch (command.type) {
    case 'RequestAbort':
      return state.abort
        ? accept(command, [])
        : accept(command, [{ type: 'AbortRequested', ...base, reason: command.reason }]);
    case 'SettleOrphanedAttempt': {
      const open = openAttempt(state);
      if (open?.ordinal !== command.ordinal) return reject('stale_step', `attempt ${command.ordinal} is not open`);
      const latency = Math.max(0, Date.parse(command.at) - Date.parse(open.started_at));
      const error = 'attempt started but never settled: its worker was lost; settled unknown on redelivery';
      return accept(command, [
        {
          type: 'AttemptSettledUnknown',
          ...base,
          ordinal: open.ordinal,
          latency_ms: Number.isFinite(latency) ? latency : 0,
          error,
        },
      ]);
    }
    case 'StartAttempt': {
      const step = planNext(state, command.jitter);
      if (step.kind !== 'dispatch' || step.ordinal !== command.ordinal)
        return reject('stale_step', staleMessage(command.ordinal, step));
      const { leg, ordinal, reason, leg_index, round, backoff_ms } = step;
      const hold = {
        hold_id: command.hold_id,
        hold_cost_units: command.hold_cost_units.toString(),
        price: command.price,
      };
      return accept(command, [
        {
          type: 'AttemptStarted',
          ...base,
          ordinal,
          reason,
          leg_index,
          round,
          provider: leg.provider,
          model: leg.model,
          ...hold,
          backoff_ms,
        },
      ]);
    }
    case 'SettleAttempt': {
      const open = openAttempt(state);
      if (open?.ordinal !== command.ordinal) return reject('stale_step', `attempt ${command.ordinal} is not open`);
      return accept(command, [
        { type: 'AttemptSettled', ...base, ordinal: command.ordinal, ...applySettlementRule(command.outcome) },
      ]);
    }
    case 'RecordHoldSettled': {
      const step = planNext(state, 0);
      if (step.kind !== 'settle_hold' || step.ordinal !== command.ordinal || step.hold_id !== command.hold_id)
        return reject('stale_step', staleMessage(command.ordinal, step));
      const cost = step.cost_units === undefined ? {} : { cost_units: step.cost_units.toString() };
      return accept(command, [
        { type: 'HoldSettled', ...base, ordinal: step.ordinal, hold_id: step.hold_id, outcome: step.outcome, ...cost },
      ]);
    }
    case 'ConcludeWork':
      return decideConclude(command, state, base);
    case 'RefuseAttempt': {
      const step = planNext(state, 0);
      if (step.kind !== 'dispatch' || step.ordinal !== command.ordinal)
        return reject('stale_step', staleMessage(command.ordinal, step));
      const why = {
        ...(command.reason === undefined ? {} : { reason: command.reason }),
        ...(command.retry_after_ms === undefined ? {} : { retry_after_ms: command.retry_after_ms }),
      };
      return accept(command, [{ type: 'WorkFailed', ...base, code: command.code, error: command.error, ...why }]);
    }
  }
}

function staleMessage(ordinal: number, step: NextStep): string {
  return `attempt ${ordinal} is not the planned step (plan: ${step.kind}${'ordinal' in step ? ` ${step.ordinal}` : ''})`;
}

function decideConclude(command: WorkCommand, state: WorkUnitState, base: { work_id: string; at: string }): Decision {
  const step = planNext(state, 0);
  switch (step.kind) {
    case 'complete':
      return accept(command, [
        {
          type: 'WorkCompleted',
          ...base,
          winning_attempt: step.winning_attempt,
          output: step.output,
          ...(step.output_parts === undefined ? {} : { output_parts: step.output_parts }),
          ...(step.output_ref === undefined ? {} : { output_ref: step.output_ref }),
          ...(step.stop_reason === undefined ? {} : { stop_reason: step.stop_reason }),
        },
      ]);
    case 'abort':
      return accept(command, [
        {
          type: 'WorkAborted',
          ...base,
          reason: step.reason,
          ...(step.partial_output === undefined ? {} : { partial_output: step.partial_output }),
        },
      ]);
    case 'fail':
      return accept(command, [{ type: 'WorkFailed', ...base, code: step.code, error: step.error }]);
    default:
      return reject('stale_step', `the work unit cannot conclude yet (plan: ${step.kind})`);
  }
}

/**
 * Absent is unknown, never zero: a reply without usage was delivered but not rated, so its
 * settlement is 'unknown' (the reply still completes the work; the hold is kept whole).
 */
export function applySettlementRule(outcome: AttemptOutcome): AttemptOutcome {
  if (outcome.settlement === 'ok' && !outcome.usage) return { ...outcome, settlement: 'unknown' };
  if (outcome.settlement !== 'ok' && outcome.output !== undefined) {
    // Only a completed reply may carry `output`; anything else keeps it as partial output.
    const { output, output_parts: _parts, output_ref: _ref, ...rest } = outcome;
    return { ...rest, partial_output: rest.partial_output ?? output };
  }
  return outcome;
}

function decideSubmit(command: SubmitWork, state: WorkUnitState): Decision {
  const limits = resolveLimits(command.limits);
  const submitted: WorkEvent = {
    type: 'WorkSubmitted',
    work_id: command.work_id,
    session_id: command.session_id,
    purpose: command.purpose,
    token_fingerprint: command.token_fingerprint,
    // Recorded only outside the default tenant, so units from before tenants compare equal on a re-send.
    ...(command.tenant_id === undefined || command.tenant_id === 'default' ? {} : { tenant_id: command.tenant_id }),
    route: command.route.map((l) => ({ provider: l.provider, model: l.model })),
    messages: command.messages.map((m) => ({
      role: m.role,
      content: m.content,
      ...(m.parts === undefined ? {} : { parts: m.parts }),
    })),
    limits,
    entrypoint: command.entrypoint ?? 'work',
    ...(command.options === undefined ? {} : { options: command.options }),
    at: command.at,
  };
  if (state.work) {
    // Submitting the same work id again is idempotent; a different unit under that id is refused.
    const { at: _a, type: _t, ...again } = submitted;
    const { at: _b, ...existing } = state.work;
    return JSON.stringify(again) === JSON.stringify(existing)
      ? accept(command, [])
      : reject('already_submitted', `work ${command.work_id} exists with different content`);
  }
  const problems = submitProblems(command);
  problems.push(...limitProblems(limits));
  return problems.length > 0 ? reject('invalid_work', problems.join('; ')) : accept(command, [submitted]);
}

function submitProblems(command: SubmitWork): string[] {
  const problems: string[] = [];
  if (!WORK_ID.test(command.work_id)) problems.push(`work_id must match ${WORK_ID.source}`);
  if (command.session_id.length === 0 || command.session_id.length > 256)
    problems.push('session_id must be 1..256 characters');
  if (!(PURPOSES as readonly string[]).includes(command.purpose))
    problems.push(`purpose must be one of ${PURPOSES.join(', ')}`);
  if (command.token_fingerprint.length === 0 || command.token_fingerprint.length > 128)
    problems.push('token must have a fingerprint of 1..128 characters');
  if (command.route.length === 0 || command.route.length > LIMIT_BOUNDS.route_legs)
    problems.push(`route must have 1..${LIMIT_BOUNDS.route_legs} legs`);
  if (command.route.some((l) => l.provider.length === 0 || l.model.length === 0))
    problems.push('every route leg needs a provider and a model');
  if (command.messages.length === 0 || command.messages.length > LIMIT_BOUNDS.messages)
    problems.push(`messages must have 1..${LIMIT_BOUNDS.messages} entries`);
  return problems;
}
