// The steps every way of settling a hold shares: the orchestrator's Settle, the sweep of
// holds whose settlement never came, and the correction a late Settle makes (ADR 0047).
// Each captures the payment through the same rail call, releases the runtime lease, and
// ends in exactly one signed receipt written with its last facts in one step (B17).
import { moneyToWire } from '@tally/contracts';
import { minBig, type BudgetCommand, type Hold } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import type { PaymentResult } from './ports.js';
import type { ReceiptMetadata, SignedReceipt } from './receipts.js';
import { writeReceipt, type ReceiptFields } from './receipt-writer.js';

export interface Plan {
  verdict: 'allow' | 'deny';
  reason: string;
  settlement: string;
  facts: BudgetCommand[];
}

/** The command a settlement receipt answers: its id, and the hold it names. */
export interface SettlementCall {
  readonly command_id: string;
  readonly hold_id: string;
}

export async function callRail(call: () => Promise<PaymentResult>): Promise<PaymentResult> {
  try {
    return await call();
  } catch {
    return { outcome: 'rail_error', detail: 'rail threw' };
  }
}

/**
 * B4: a reversible hold's payment is captured for `realizedUnits` (never beyond what was
 * authorized), or released at 0; a capture the rail does not confirm is an ambiguity. A
 * prepaid-final payment is already final. The facts record what the rail answered.
 */
export async function capturePayment(
  ctx: AuthorityContext,
  hold: Hold,
  realizedUnits: bigint,
  meta: ReceiptMetadata,
): Promise<{ confirmed: boolean; facts: BudgetCommand[] }> {
  const payment = hold.payment;
  const now = ctx.clock.nowMs();
  if (payment.status === 'authorized' && payment.authorization_id !== undefined && payment.mode === 'reversible_hold') {
    const amount = minBig(realizedUnits, hold.exposure_units);
    const reference = hold.request_id;
    const currency = hold.currency ?? 'XXX';
    const result = await callRail(() =>
      amount === 0n
        ? ctx.rail.release({ authorization_id: payment.authorization_id!, reference })
        : ctx.rail.capture({ authorization_id: payment.authorization_id!, amount_units: amount, currency, reference }),
    );
    const ok = result.outcome === (amount === 0n ? 'released' : 'settled');
    meta.financial = {
      payment_reference: payment.authorization_id,
      payment_capture_amount_units: moneyToWire(amount),
      payment_capture_status: result.outcome,
    };
    const step = ok ? (amount === 0n ? 'released' : 'captured') : 'capture_failed';
    const facts: BudgetCommand[] = [
      {
        type: 'RecordPaymentStep',
        hold_id: hold.hold_id,
        payment: {
          step,
          amount_units: amount,
          ...('rail_reference' in result ? { rail_reference: result.rail_reference } : {}),
        },
        now_ms: now,
      },
    ];
    if (!ok)
      facts.push({ type: 'RecordAmbiguity', kind: 'payment_capture', hold_id: hold.hold_id, reference, now_ms: now });
    return { confirmed: ok, facts };
  }
  if (payment.mode === 'prepaid_final')
    meta.financial = {
      payment_reference: payment.authorization_id ?? null,
      payment_mode: 'prepaid_final',
      payment_capture_status: 'prepaid',
    };
  return { confirmed: true, facts: [] };
}

export async function releaseLease(ctx: AuthorityContext, hold: Hold, meta: ReceiptMetadata): Promise<BudgetCommand[]> {
  if (hold.lease_id === undefined || hold.lease_released) return [];
  const now = ctx.clock.nowMs();
  try {
    await ctx.hook.release({ lease_id: hold.lease_id, hold_id: hold.hold_id, request_id: hold.request_id });
    meta.runtime = { lease_id: hold.lease_id, reservation_released: true };
    return [{ type: 'RecordLease', hold_id: hold.hold_id, lease_id: hold.lease_id, outcome: 'released', now_ms: now }];
  } catch {
    meta.runtime = { lease_id: hold.lease_id, reservation_release_failed: true, reservation_retained: true };
    return [{ type: 'RecordLease', hold_id: hold.hold_id, lease_id: hold.lease_id, outcome: 'failed', now_ms: now }];
  }
}

/** Writes the settlement's receipt with its facts; when another settlement won the race, a deny that records nothing. */
export async function finishSettlement(
  ctx: AuthorityContext,
  rootId: string,
  cmd: SettlementCall,
  hold: Hold | undefined,
  plan: Plan & { meta: ReceiptMetadata },
): Promise<SignedReceipt> {
  const fields = (verdict: 'allow' | 'deny', reason: string, settlement: string): ReceiptFields => ({
    kind: 'settlement',
    verdict,
    reason,
    request_id: hold?.request_id ?? null,
    capability_id: hold?.capability_id ?? null,
    hold_id: cmd.hold_id,
    grant_index: hold?.grant_index ?? null,
    server_id: hold?.binding.server_id ?? null,
    tool_name: hold?.binding.tool_name ?? null,
    context: hold?.context ?? null,
    settlement,
    metadata: plan.meta,
  });
  let written = await writeReceipt(
    ctx,
    rootId,
    cmd.command_id,
    fields(plan.verdict, plan.reason, plan.settlement),
    plan.facts,
  );
  if (written.kind === 'rejected')
    written = await writeReceipt(
      ctx,
      rootId,
      cmd.command_id,
      fields('deny', written.rejection.message, 'rejected'),
      [],
    );
  if (written.kind === 'rejected')
    throw new Error(`receipt for ${cmd.command_id} was rejected: ${written.rejection.message}`);
  return written.receipt;
}
