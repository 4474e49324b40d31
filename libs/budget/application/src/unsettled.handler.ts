// B20 (ADR 0047): the sweep of admitted holds whose settlement never came (an orchestrator
// killed before it settled, a settlement lost past its re-send window). Once a hold's TTL
// and the grace have passed it is realized in full, because an absent settlement is unknown,
// never zero: the payment is captured for the whole exposure through the same rail call a
// Settle makes (an unconfirmed capture is an ambiguity, as then), the runtime lease is
// released, and the decider books the spend and records a settlement_missing ambiguity. Each
// hold gets one signed receipt under a command id of its own, so replicas sweeping the same
// hold at once commit it once and answer with the same receipt.
import { moneyToWire } from '@tally/contracts';
import { spendFor, unsettledHolds, type BudgetCommand, type Hold } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import type { ReceiptMetadata } from './receipts.js';
import { writeReceipt } from './receipt-writer.js';
import { capturePayment, releaseLease } from './settlement-steps.js';

export interface RealizedUnsettled {
  readonly root_id: string;
  readonly realized_hold_ids: readonly string[];
}

/** The command id of the sweep's settlement of a hold: one per hold, whichever replica sweeps it. */
export const unsettledCommandId = (holdId: string): string => `unsettled:${holdId}`;

/** The receipt's reason: the hold is realized in full because its settlement never came. */
export const SETTLEMENT_MISSING = 'settlement missing: realized in full';

export async function realizeUnsettled(
  ctx: AuthorityContext,
  rootIds: readonly string[],
): Promise<RealizedUnsettled[]> {
  const graceMs = ctx.limits.unsettledGraceMs;
  const out: RealizedUnsettled[] = [];
  for (const rootId of rootIds) {
    const state = await ctx.trees.read(rootId);
    const due = unsettledHolds(state, ctx.clock.nowMs(), graceMs, ctx.limits.expireHoldsPerStepMax);
    const realized: string[] = [];
    for (const hold of due) if (await realizeInFull(ctx, rootId, hold, graceMs)) realized.push(hold.hold_id);
    if (due.length > 0) out.push({ root_id: rootId, realized_hold_ids: realized });
  }
  return out;
}

async function realizeInFull(ctx: AuthorityContext, rootId: string, hold: Hold, graceMs: number): Promise<boolean> {
  const meta: ReceiptMetadata = { budget_authority: { hold_id: hold.hold_id }, financial: {} };
  const captured = await capturePayment(ctx, hold, hold.exposure_units, meta);
  const lease = await releaseLease(ctx, hold, meta);
  // The figures the decider books: the whole exposure, and no overrun.
  const spend = spendFor(hold, hold.exposure_units);
  meta.budget_authority.terminal = {
    kind: spend.kind,
    cause: 'unsettled_expired',
    realized_units: moneyToWire(spend.realized_units),
    overrun_units: moneyToWire(spend.hold_overrun_units),
  };
  meta.budget_authority.settlement_missing = {
    expired_at: new Date(hold.expires_at_ms).toISOString(),
    grace_ms: graceMs,
    ambiguity_recorded: true,
  };
  const facts: BudgetCommand[] = [
    ...captured.facts,
    { type: 'SettleUnsettled', hold_id: hold.hold_id, grace_ms: graceMs, now_ms: ctx.clock.nowMs() },
    ...lease,
  ];
  const commandId = unsettledCommandId(hold.hold_id);
  const written = await writeReceipt(
    ctx,
    rootId,
    commandId,
    {
      kind: 'settlement',
      verdict: 'allow',
      reason: SETTLEMENT_MISSING,
      request_id: hold.request_id,
      capability_id: hold.capability_id,
      hold_id: hold.hold_id,
      grant_index: hold.grant_index,
      server_id: hold.binding.server_id,
      tool_name: hold.binding.tool_name,
      context: hold.context,
      settlement: captured.confirmed ? 'unsettled_expired' : 'failed',
      metadata: meta,
    },
    facts,
  );
  // Rejected: the orchestrator's settlement arrived first; that one stands and this sweep records nothing.
  return written.kind === 'written';
}
