// B20 and B21 (ADR 0047): an admitted hold whose settlement never came is realized in full
// once its TTL and a grace have passed, because an absent settlement is unknown, never zero.
// The orchestrator's own record, when it comes late, corrects that by a further event, never
// by an edit, and resolves the ambiguity the sweep recorded. Both reuse spendFor's figures.
import { assert } from './assert.js';
import type { CorrectSpend, SettleOutcome, SettleUnsettled } from './commands.js';
import { decideAmbiguity, decideResolve, overrunEvent, spendFor } from './decide-settle.js';
import { accept, reject, type Decision } from './decision.js';
import type { BudgetEvent, SpendCorrectedData } from './events.js';
import { EventIds } from './ids.js';
import { currencyMismatch, type Hold } from './model.js';
import type { TreeState } from './state.js';

/** An admitted hold still unsettled once its TTL and the grace have passed. */
export function isUnsettledPast(hold: Hold, nowMs: number, graceMs: number): boolean {
  return hold.status === 'captured' && hold.admitted && !hold.preflight && hold.expires_at_ms + graceMs <= nowMs;
}

/** The holds the sweep realizes in full at `nowMs`, at most `holdsMax`, the earliest deadline first. */
export function unsettledHolds(state: TreeState, nowMs: number, graceMs: number, holdsMax: number): Hold[] {
  const due: Hold[] = [];
  for (const hold of state.holds.values()) if (isUnsettledPast(hold, nowMs, graceMs)) due.push(hold);
  return due.sort((a, b) => a.expires_at_ms - b.expires_at_ms).slice(0, holdsMax);
}

/** The hold is realized in full, and that its settlement is missing is recorded as an ambiguity. */
export function decideSettleUnsettled(command: SettleUnsettled, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  if (hold.status !== 'captured' && hold.status !== 'authorized')
    return reject('hold_already_settled', `hold ${hold.hold_id} is already ${hold.status}`);
  if (hold.status !== 'captured' || !hold.admitted)
    return reject('hold_not_admitted', `hold ${hold.hold_id} was never admitted for dispatch`);
  if (!isUnsettledPast(hold, command.now_ms, command.grace_ms))
    return reject('hold_not_overdue', `hold ${hold.hold_id} may still be settled until its TTL and the grace pass`);
  // Realized in full: the whole exposure is spent, as if the call had cost its worst case.
  const spend = spendFor(hold, hold.exposure_units);
  assert(spend.realized_units === hold.exposure_units, `hold ${hold.hold_id} is not realized in full`);
  const eventId = EventIds.settleUnsettled(hold.hold_id);
  const settled: BudgetEvent = {
    type: 'SpendSettled',
    event_id: eventId,
    data: { ...spend, hold_id: hold.hold_id, cause: 'unsettled_expired', at_ms: command.now_ms },
  };
  const missing = decideAmbiguity(
    {
      type: 'RecordAmbiguity',
      kind: 'settlement_missing',
      hold_id: hold.hold_id,
      event_id: eventId,
      now_ms: command.now_ms,
    },
    state,
  );
  assert(missing.ok, `the missing settlement of ${hold.hold_id} could not be recorded`);
  return accept(settled, ...missing.events);
}

/** The figures a late outcome books on a hold the sweep realized in full. */
export function correctionFor(
  hold: Hold,
  outcome: SettleOutcome,
): Omit<SpendCorrectedData, 'kind' | 'hold_id' | 'outcome' | 'at_ms'> {
  const previous = hold.realized_units;
  assert(previous !== undefined, `hold ${hold.hold_id} has no realized spend to correct`);
  switch (outcome.kind) {
    case 'completed': {
      const spend = spendFor(hold, outcome.cost_units);
      return {
        actual_units: outcome.cost_units,
        previous_realized_units: previous,
        realized_units: spend.realized_units,
        hold_overrun_units: spend.hold_overrun_units,
        invocation_delta: 0,
      };
    }
    case 'failed_after_dispatch':
      // What it used is unknown (B5): the whole exposure stays spent.
      return {
        previous_realized_units: previous,
        realized_units: previous,
        hold_overrun_units: 0n,
        invocation_delta: 0,
      };
    case 'elicitation_required':
    case 'not_dispatched':
      // Nothing ran to completion: as on time, nothing is spent and the invocation is given back (B6).
      return { previous_realized_units: previous, realized_units: 0n, hold_overrun_units: 0n, invocation_delta: -1 };
  }
}

/** A hold the sweep realized in full, corrected once by the outcome the orchestrator reported late. */
export function decideCorrect(command: CorrectSpend, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  if (hold.settlement_cause !== 'unsettled_expired')
    return hold.status === 'captured'
      ? reject('hold_not_overdue', `hold ${hold.hold_id} was not realized by the sweep; settle it`)
      : reject('hold_already_settled', `hold ${hold.hold_id} is already ${hold.status}`);
  if (hold.corrected) return reject('hold_already_settled', `hold ${hold.hold_id} is already settled and corrected`);
  const outcome = command.outcome;
  const mismatch = outcome.kind === 'completed' ? currencyMismatch(hold, outcome.currency) : undefined;
  if (mismatch) return reject('currency_mismatch', mismatch);
  const figures = correctionFor(hold, outcome);
  const events: BudgetEvent[] = [
    {
      type: 'SpendCorrected',
      event_id: EventIds.correctSpend(hold.hold_id),
      data: { kind: 'correct_spend', hold_id: hold.hold_id, outcome: outcome.kind, ...figures, at_ms: command.now_ms },
    },
  ];
  if (figures.hold_overrun_units > 0n) events.push(overrunEvent(state, hold, figures.realized_units, command.now_ms));
  for (const ambiguity of state.ambiguities.values()) {
    if (ambiguity.hold_id !== hold.hold_id || ambiguity.kind !== 'settlement_missing') continue;
    const resolved = decideResolve(
      {
        type: 'ResolveAmbiguity',
        ambiguity_id: ambiguity.ambiguity_id,
        resolution: `settlement_reported_${outcome.kind}`,
        now_ms: command.now_ms,
      },
      state,
    );
    // One an operator already resolved stays as it is: the correction still books the reported outcome.
    if (resolved.ok) events.push(...resolved.events);
  }
  return accept(...events);
}
