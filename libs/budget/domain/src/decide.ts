// decide(command, state) -> events | rejection, and a sequence of commands decided as
// one atomic step (one append), each on the state the previous ones produced.
import { amountOverflow } from './amounts.js';
import type { BudgetCommand } from './commands.js';
import { decideIssue, decideRevoke } from './decide-capability.js';
import { decideAuthorize, decideCancel, decideCapture, decideExpire, decideRollback } from './decide-hold.js';
import {
  decideAdmit,
  decideAmbiguity,
  decideConsumeNonce,
  decideIssueNonce,
  decideLease,
  decidePaymentStep,
  decideReceipt,
  decideResolve,
  decideSettle,
} from './decide-settle.js';
import { decideIncrease } from './decide-increase.js';
import { decideCorrect, decideSettleUnsettled } from './decide-unsettled.js';
import { alertEvents } from './decide-policy.js';
import type { Decision, Rejection } from './decision.js';
import type { BudgetEvent, RecordedBudgetEvent } from './events.js';
import { evolve } from './evolve.js';
import type { TreeState } from './state.js';

export function decide(command: BudgetCommand, state: TreeState): Decision {
  switch (command.type) {
    case 'IssueCapability':
      return decideIssue(command, state);
    case 'RevokeCapability':
      return decideRevoke(command, state);
    case 'AuthorizeHold':
      return decideAuthorize(command, state);
    case 'CaptureInvocation':
      return decideCapture(command, state);
    case 'RollbackHold':
      return decideRollback(command, state);
    case 'CancelCaptured':
      return decideCancel(command, state);
    case 'RecordPaymentStep':
      return decidePaymentStep(command, state);
    case 'RecordLease':
      return decideLease(command, state);
    case 'AdmitInvocation':
      return decideAdmit(command, state);
    case 'ConsumeNonce':
      return decideConsumeNonce(command, state);
    case 'IssueNonce':
      return decideIssueNonce(command, state);
    case 'SettleHold':
      return decideSettle(command, state);
    case 'ExpireHolds':
      return decideExpire(command, state);
    case 'RecordAmbiguity':
      return decideAmbiguity(command, state);
    case 'ResolveAmbiguity':
      return decideResolve(command, state);
    case 'RecordReceipt':
      return decideReceipt(command, state);
    case 'IncreaseHold':
      return decideIncrease(command, state);
    case 'SettleUnsettled':
      return decideSettleUnsettled(command, state);
    case 'CorrectSpend':
      return decideCorrect(command, state);
  }
}

export type SequenceDecision =
  | { readonly ok: true; readonly events: readonly BudgetEvent[]; readonly state: TreeState }
  | { readonly ok: false; readonly rejection: Rejection; readonly index: number };

/**
 * Decides commands in order, each on the state left by the ones before, so that one
 * append can carry a whole step. Commit indexes are provisional here (last + n); the
 * real ones arrive when the events are read back or acknowledged.
 */
export function decideSequence(commands: readonly BudgetCommand[], state: TreeState): SequenceDecision {
  const events: BudgetEvent[] = [];
  let current = state;
  for (const [index, command] of commands.entries()) {
    const decision = decide(command, current);
    if (!decision.ok) return { ok: false, rejection: decision.rejection, index };
    for (const event of decision.events) {
      // A sum past 2^63-1 is refused here, for every decider at once, before evolve would assert on it.
      const overflow = amountOverflow(current, event);
      if (overflow) return { ok: false, rejection: overflow, index };
      current = evolve(current, { ...event, commit_index: current.last_commit_index + 1 });
      events.push(event);
    }
    // A change of committed cost may cross an alert threshold: the alert is a fact of the same commit.
    for (const event of alertsAfter(command, current)) {
      current = evolve(current, { ...event, commit_index: current.last_commit_index + 1 });
      events.push(event);
    }
  }
  return { ok: true, events, state: current };
}

function alertsAfter(command: BudgetCommand, state: TreeState): BudgetEvent[] {
  const holdId =
    command.type === 'SettleHold' || command.type === 'IncreaseHold' || command.type === 'CorrectSpend'
      ? command.hold_id
      : command.type === 'AuthorizeHold'
        ? state.requests.get(command.request_id)
        : undefined;
  const hold = holdId === undefined ? undefined : state.holds.get(holdId);
  return hold === undefined || hold.preflight ? [] : alertEvents(state, hold, command.now_ms);
}

/** Folds recorded events into state. */
export function fold(events: Iterable<RecordedBudgetEvent>, state: TreeState): TreeState {
  let current = state;
  for (const event of events) current = evolve(current, event);
  return current;
}
