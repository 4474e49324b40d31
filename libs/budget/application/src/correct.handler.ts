// B21 (ADR 0047): the orchestrator's late Settle of a hold the sweep realized in full. It
// corrects the books by a further event (SpendCorrected), never by an edit: realized spend
// moves from the whole exposure to what the call cost, and the settlement_missing ambiguity
// is resolved in the same commit. Money the sweep captured beyond that cost is refunded
// through the rail first; a refund the rail does not confirm corrects nothing (fail closed,
// as B9), so the spend stays booked in full and the ambiguity stays open.
import { moneyToWire } from '@tally/contracts';
import { correctionFor, minBig, type BudgetCommand, type Hold, type SettleOutcome } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import type { ReceiptMetadata, SignedReceipt } from './receipts.js';
import { callRail, finishSettlement, type SettlementCall } from './settlement-steps.js';

/** A hold the sweep realized in full that no late settlement has corrected yet. */
export function correctable(hold: Hold): boolean {
  return hold.status === 'settled' && hold.settlement_cause === 'unsettled_expired' && hold.corrected !== true;
}

/** The receipt's reason when the rail did not confirm the refund a correction needs. */
export const CORRECTION_REFUND_UNCONFIRMED = 'refund of the corrected settlement could not be confirmed';

export async function correctLate(
  ctx: AuthorityContext,
  rootId: string,
  cmd: SettlementCall & { readonly outcome: SettleOutcome },
  hold: Hold,
  meta: ReceiptMetadata,
): Promise<{ receipt: SignedReceipt }> {
  const figures = correctionFor(hold, cmd.outcome);
  meta.budget_authority.terminal = {
    kind: 'correct_spend',
    realized_units: moneyToWire(figures.realized_units),
    overrun_units: moneyToWire(figures.hold_overrun_units),
  };
  meta.budget_authority.correction = {
    cause: 'unsettled_expired',
    outcome: cmd.outcome.kind,
    previous_realized_units: moneyToWire(figures.previous_realized_units),
    realized_units: moneyToWire(figures.realized_units),
  };
  if (figures.hold_overrun_units > 0n) meta.budget_authority.overrun_units = moneyToWire(figures.hold_overrun_units);
  const refund = await refundBeyond(ctx, hold, figures.realized_units, meta);
  const plan = refund.confirmed
    ? {
        ...verdictOf(cmd.outcome),
        settlement: 'corrected',
        facts: [
          ...refund.facts,
          { type: 'CorrectSpend', hold_id: hold.hold_id, outcome: cmd.outcome, now_ms: ctx.clock.nowMs() } as const,
        ],
      }
    : { verdict: 'deny' as const, reason: CORRECTION_REFUND_UNCONFIRMED, settlement: 'refund_unconfirmed', facts: [] };
  return { receipt: await finishSettlement(ctx, rootId, cmd, hold, { ...plan, meta }) };
}

/** The answer a settlement with this outcome gets on time, so a late one reads the same. */
function verdictOf(outcome: SettleOutcome): { verdict: 'allow' | 'deny'; reason: string } {
  switch (outcome.kind) {
    case 'completed':
      return { verdict: 'allow', reason: 'completed' };
    case 'failed_after_dispatch':
      return { verdict: 'deny', reason: `failed after dispatch: ${outcome.failure}` };
    case 'elicitation_required':
      return { verdict: 'deny', reason: outcome.message };
    case 'not_dispatched':
      return { verdict: 'deny', reason: `not dispatched: ${outcome.reason}` };
  }
}

/**
 * What the rail took for the hold when the sweep realized it: its whole exposure, captured
 * (a reversible hold) or paid up front (prepaid-final); 0 without a payment. Undefined when
 * the rail's state is not known (a capture it never confirmed): no refund is guessed at.
 */
function takenByRail(hold: Hold): bigint | undefined {
  const p = hold.payment;
  if (p.authorization_id === undefined || p.status === 'none' || p.status === 'released') return 0n;
  if (p.mode === 'prepaid_final' && p.status === 'authorized') return hold.exposure_units;
  if (p.mode === 'reversible_hold' && p.status === 'captured') return hold.exposure_units;
  return undefined;
}

/** Refunds what the rail took beyond `realizedUnits`; confirmed only when the rail says Refunded (or nothing is due). */
async function refundBeyond(
  ctx: AuthorityContext,
  hold: Hold,
  realizedUnits: bigint,
  meta: ReceiptMetadata,
): Promise<{ confirmed: boolean; facts: BudgetCommand[] }> {
  const taken = takenByRail(hold);
  if (taken === undefined) {
    if (realizedUnits >= hold.exposure_units) return { confirmed: true, facts: [] };
    Object.assign(meta.financial, { payment_refund_unconfirmed: true, payment_refund_status: 'payment_state_unknown' });
    return { confirmed: false, facts: [] };
  }
  const due = taken - minBig(realizedUnits, taken);
  if (due === 0n) return { confirmed: true, facts: [] };
  const authorization = hold.payment.authorization_id!;
  const result = await callRail(() =>
    ctx.rail.refund({
      transaction_id: authorization,
      amount_units: due,
      currency: hold.currency ?? 'XXX',
      reference: hold.request_id,
    }),
  );
  Object.assign(meta.financial, {
    payment_reference: authorization,
    payment_refund_amount_units: moneyToWire(due),
    payment_refund_status: result.outcome,
  });
  if (result.outcome !== 'refunded') {
    meta.financial.payment_refund_unconfirmed = true;
    return { confirmed: false, facts: [] };
  }
  meta.financial.payment_refund_reference = result.rail_reference;
  const step = { step: 'refunded' as const, amount_units: due, rail_reference: result.rail_reference };
  return {
    confirmed: true,
    facts: [{ type: 'RecordPaymentStep', hold_id: hold.hold_id, payment: step, now_ms: ctx.clock.nowMs() }],
  };
}
