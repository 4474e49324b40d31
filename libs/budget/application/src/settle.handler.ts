// Settle {hold_id, outcome}: completed records spend and captures the payment (B4);
// failed_after_dispatch keeps everything (B5); elicitation_required and not_dispatched
// release the payment and, only once the rail confirms it, the budget (B6, B9).
import { moneyToWire } from '@tally/contracts';
import { spendFor, type BudgetCommand, type Hold, type SettleOutcome } from '@tally/budget-domain';
import { rootOfCapability, UNVERIFIED_TREE, type AuthorityContext } from './authority-context.js';
import { correctable, correctLate } from './correct.handler.js';
import { CURRENCY_MISMATCH, currencyRefusalFor } from './currency-refusal.js';
import { mayActOnHold, type HoldAuthorization } from './hold-authorization.js';
import { answeredCommand, signedReceipt, type ReceiptMetadata, type SignedReceipt } from './receipts.js';
import { callRail, capturePayment, finishSettlement, releaseLease, type Plan } from './settlement-steps.js';

export { callRail } from './settlement-steps.js';

export interface SettleCommand {
  readonly command_id: string;
  readonly hold_id: string;
  readonly outcome: SettleOutcome;
  /** Tokens the call used: corrects its share of tokens_per_minute (spend policy). */
  readonly tokens_used?: number;
  /** Who asks (http-api.md, Credentials); without one that covers the hold, it is unknown to the caller. */
  readonly authorization: HoldAuthorization | undefined;
}

export interface SettleResult {
  readonly receipt: SignedReceipt;
}

/** budget-hold:{request_id}:{capability_id}:{grant_index}: capability ids hold no colon, request ids may. */
export function capabilityOfHold(holdId: string): string | undefined {
  const parts = holdId.split(':');
  return parts.length >= 4 && parts[0] === 'budget-hold' ? parts[parts.length - 2] : undefined;
}

export async function settle(ctx: AuthorityContext, cmd: SettleCommand): Promise<SettleResult> {
  const capabilityId = capabilityOfHold(cmd.hold_id);
  const rootId = capabilityId === undefined ? '_unverified' : rootOfCapability(capabilityId);
  const state = await ctx.trees.read(rootId);
  const hold = state.holds.get(cmd.hold_id);
  if (!hold || !mayActOnHold(ctx, state, hold, cmd.authorization)) return settleUnknown(ctx, cmd);
  const answered = answeredCommand(state, cmd.command_id);
  if (answered) return { receipt: signedReceipt(answered) };
  const meta: ReceiptMetadata = { budget_authority: { hold_id: cmd.hold_id }, financial: {} };
  const problem = refusalOf(hold, cmd.outcome, meta);
  if (problem)
    return finish(ctx, rootId, cmd, hold, {
      verdict: 'deny',
      reason: problem,
      settlement: 'rejected',
      meta,
      facts: [],
    });
  // A hold the sweep realized in full because this settlement was late: it corrects that (ADR 0047).
  if (correctable(hold)) return correctLate(ctx, rootId, cmd, hold, meta);
  const plan = await planSettlement(ctx, hold, cmd.outcome, meta);
  if (cmd.tokens_used !== undefined)
    plan.facts = plan.facts.map((f) => (f.type === 'SettleHold' ? { ...f, tokens_used: cmd.tokens_used } : f));
  plan.facts.push(...(await releaseLease(ctx, hold, meta)));
  return finish(ctx, rootId, cmd, hold, { ...plan, meta });
}

/**
 * Why the hold cannot be settled as asked: it is not open, or the outcome is in another
 * currency than the hold's, refused before the rail is called (ADR 0043).
 */
function refusalOf(hold: Hold, outcome: SettleOutcome, meta: ReceiptMetadata): string | undefined {
  if (!hold.admitted) return 'hold was never admitted for dispatch';
  if (hold.status !== 'captured' && !correctable(hold)) return `hold is already ${hold.status}`;
  const currency = outcome.kind === 'completed' && currencyRefusalFor(hold, outcome.currency, 'outcome.currency');
  if (!currency) return undefined;
  meta.budget_authority[CURRENCY_MISMATCH] = currency.section;
  return currency.reason;
}

/**
 * A hold that does not exist, or that this caller may not act on: a deny receipt kept in the
 * tree of unverified requests, never in the hold's own tree, so a refused caller can neither
 * pre-empt the command ids of the hold's owner nor tell a refusal from a missing hold.
 */
async function settleUnknown(ctx: AuthorityContext, cmd: SettleCommand): Promise<SettleResult> {
  const answered = answeredCommand(await ctx.trees.read(UNVERIFIED_TREE), cmd.command_id);
  if (answered) return { receipt: signedReceipt(answered) };
  const meta: ReceiptMetadata = { budget_authority: { hold_id: cmd.hold_id }, financial: {} };
  return finish(ctx, UNVERIFIED_TREE, cmd, undefined, {
    verdict: 'deny',
    reason: HOLD_UNKNOWN,
    settlement: 'rejected',
    meta,
    facts: [],
  });
}

/** The reason of a settlement or increase whose hold is unknown to the caller. */
export const HOLD_UNKNOWN = 'hold is unknown';

async function planSettlement(
  ctx: AuthorityContext,
  hold: Hold,
  outcome: SettleOutcome,
  meta: ReceiptMetadata,
): Promise<Plan> {
  const now = ctx.clock.nowMs();
  switch (outcome.kind) {
    case 'completed':
      return settleCompleted(ctx, hold, outcome, meta);
    case 'failed_after_dispatch':
      meta.budget_authority.terminal = { kind: 'retained', failure: outcome.failure };
      return {
        verdict: 'deny',
        reason: `failed after dispatch: ${outcome.failure}`,
        settlement: 'retained',
        facts: [{ type: 'SettleHold', hold_id: hold.hold_id, outcome, now_ms: now }],
      };
    case 'elicitation_required':
    case 'not_dispatched': {
      const reason = outcome.kind === 'elicitation_required' ? outcome.message : `not dispatched: ${outcome.reason}`;
      const released = await releasePayment(ctx, hold, meta);
      if (!released.confirmed)
        return { verdict: 'deny', reason, settlement: 'release_unconfirmed', facts: released.facts };
      const undo: BudgetCommand =
        outcome.kind === 'elicitation_required'
          ? { type: 'SettleHold', hold_id: hold.hold_id, outcome, now_ms: now }
          : { type: 'CancelCaptured', hold_id: hold.hold_id, cause: 'not_dispatched', now_ms: now };
      meta.budget_authority.terminal = {
        kind: outcome.kind === 'elicitation_required' ? 'release_exposure' : 'cancel_captured_before_dispatch',
      };
      return { verdict: 'deny', reason, settlement: 'released', facts: [...released.facts, undo] };
    }
  }
}

async function settleCompleted(
  ctx: AuthorityContext,
  hold: Hold,
  outcome: Extract<SettleOutcome, { kind: 'completed' }>,
  meta: ReceiptMetadata,
): Promise<Plan> {
  const now = ctx.clock.nowMs();
  // The figures the decider books (ADR 0043): the whole charge, and the part beyond the hold.
  const spend = spendFor(hold, outcome.cost_units);
  meta.budget_authority.terminal = {
    kind: spend.kind,
    realized_units: moneyToWire(spend.realized_units),
    overrun_units: moneyToWire(spend.hold_overrun_units),
  };
  if (spend.hold_overrun_units > 0n) meta.budget_authority.overrun_units = moneyToWire(spend.hold_overrun_units);
  const captured = await capturePayment(ctx, hold, spend.realized_units, meta);
  const facts: BudgetCommand[] = [...captured.facts];
  const settlement = captured.confirmed ? 'completed' : 'failed';
  facts.push({ type: 'SettleHold', hold_id: hold.hold_id, outcome, now_ms: now });
  return { verdict: 'allow', reason: 'completed', settlement, facts };
}

/** Releases (or refunds, for prepaid-final) the payment; confirmed only on Released or Refunded (B9). */
export async function releasePayment(
  ctx: AuthorityContext,
  hold: Hold,
  meta: ReceiptMetadata,
): Promise<{ confirmed: boolean; facts: BudgetCommand[] }> {
  const payment = hold.payment;
  if (payment.status !== 'authorized' || payment.authorization_id === undefined) return { confirmed: true, facts: [] };
  const reference = hold.request_id;
  const result = await callRail(() =>
    payment.mode === 'prepaid_final'
      ? ctx.rail.refund({
          transaction_id: payment.authorization_id!,
          amount_units: hold.exposure_units,
          currency: hold.currency ?? 'XXX',
          reference,
        })
      : ctx.rail.release({ authorization_id: payment.authorization_id!, reference }),
  );
  const now = ctx.clock.nowMs();
  meta.financial.payment_reference = payment.authorization_id;
  meta.financial.payment_release_attempt_reference = reference;
  if (result.outcome === 'released' || result.outcome === 'refunded') {
    Object.assign(meta.financial, {
      payment_release_confirmed: true,
      payment_release_status: result.outcome,
      payment_release_reference: result.rail_reference,
    });
    return {
      confirmed: true,
      facts: [
        {
          type: 'RecordPaymentStep',
          hold_id: hold.hold_id,
          payment: { step: result.outcome, rail_reference: result.rail_reference },
          now_ms: now,
        },
      ],
    };
  }
  const status = result.outcome === 'pending' ? 'pending' : result.outcome === 'failed' ? 'failed' : 'unknown';
  Object.assign(meta.financial, {
    payment_release_unconfirmed: true,
    payment_authorization_retained: true,
    payment_release_status: status,
  });
  if ('rail_reference' in result) meta.financial.payment_release_reference = result.rail_reference;
  const step = result.outcome === 'pending' ? 'release_pending' : 'release_failed';
  return {
    confirmed: false,
    facts: [
      {
        type: 'RecordPaymentStep',
        hold_id: hold.hold_id,
        payment: { step, ...('rail_reference' in result ? { rail_reference: result.rail_reference } : {}) },
        now_ms: now,
      },
      { type: 'RecordAmbiguity', kind: 'payment_release', hold_id: hold.hold_id, reference, now_ms: now },
    ],
  };
}

/** Another settlement that won the race is answered in this command's receipt, which then records nothing else. */
async function finish(
  ctx: AuthorityContext,
  rootId: string,
  cmd: SettleCommand,
  hold: Hold | undefined,
  plan: Plan & { meta: ReceiptMetadata },
): Promise<SettleResult> {
  return { receipt: await finishSettlement(ctx, rootId, cmd, hold, plan) };
}
