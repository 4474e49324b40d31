// Increase: raise an open hold within its grant (POST /v1/holds/{id}/increase and the core
// NATS twin <ns>.req.budget.increase), like an incremental authorization on a card. The
// increase and its receipt are one commit; a refused increase gets a deny receipt alone,
// and a re-sent command id gets the receipt its tree recorded.
import { moneyToWire } from '@tally/contracts';
import type { Hold } from '@tally/budget-domain';
import { Reasons, rootOfCapability, UNVERIFIED_TREE, type AuthorityContext } from './authority-context.js';
import { mayActOnHold, type HoldAuthorization } from './hold-authorization.js';
import { answeredCommand, signedReceipt, type SignedReceipt } from './receipts.js';
import { writeReceipt, type ReceiptFields } from './receipt-writer.js';
import { capabilityOfHold, HOLD_UNKNOWN } from './settle.handler.js';
import { CURRENCY_MISMATCH, currencyRefusalFor } from './currency-refusal.js';

export interface IncreaseCommand {
  readonly command_id: string;
  readonly hold_id: string;
  readonly amount_units: bigint;
  /** The currency the caller counts the increase in: refused when it is not the hold's (ADR 0043). */
  readonly currency?: string;
  /** More worst-case tokens for the call (tokens_per_minute). */
  readonly tokens?: number;
  /** Who asks (http-api.md, Credentials); without one that covers the hold, it is unknown to the caller. */
  readonly authorization: HoldAuthorization | undefined;
}

export interface IncreaseResult {
  readonly verdict: 'allow' | 'deny';
  readonly reason: string;
  readonly hold_id: string;
  /** The hold's exposure after the increase (wire money), when allowed. */
  readonly hold_units?: number | string;
  readonly increase?: number;
  readonly receipt: SignedReceipt;
}

/** Increases per hold when the configuration says nothing. */
export const HOLD_INCREASES_MAX_DEFAULT = 4;

export async function increaseHold(ctx: AuthorityContext, cmd: IncreaseCommand): Promise<IncreaseResult> {
  const capabilityId = capabilityOfHold(cmd.hold_id);
  const rootId = capabilityId === undefined ? UNVERIFIED_TREE : rootOfCapability(capabilityId);
  const state = await ctx.trees.read(rootId);
  const found = state.holds.get(cmd.hold_id);
  // A hold this caller may not act on is as unknown as a missing one, and its refusal is kept apart (see settle).
  const hold = found && mayActOnHold(ctx, state, found, cmd.authorization) ? found : undefined;
  const tree = hold ? rootId : UNVERIFIED_TREE;
  const answered = answeredCommand(hold ? state : await ctx.trees.read(UNVERIFIED_TREE), cmd.command_id);
  if (answered) return resultOf(cmd.hold_id, signedReceipt(answered), hold);
  const refusal = hold && currencyRefusalFor(hold, cmd.currency, 'currency');
  const fields = (verdict: 'allow' | 'deny', reason: string): ReceiptFields => ({
    kind: 'increase',
    verdict,
    reason,
    request_id: hold?.request_id ?? null,
    capability_id: hold?.capability_id ?? null,
    hold_id: cmd.hold_id,
    grant_index: hold?.grant_index ?? null,
    server_id: hold?.binding.server_id ?? null,
    tool_name: hold?.binding.tool_name ?? null,
    context: hold?.context ?? null,
    metadata: {
      budget_authority: {
        hold_id: cmd.hold_id,
        increase: {
          amount_units: moneyToWire(cmd.amount_units),
          ...(cmd.currency === undefined ? {} : { currency: cmd.currency }),
          ...(cmd.tokens === undefined ? {} : { tokens: cmd.tokens }),
          ordinal: (hold?.increases ?? 0) + 1,
        },
        ...(refusal ? { [CURRENCY_MISMATCH]: refusal.section } : {}),
      },
      financial: {},
    },
  });
  // An unknown hold, or another currency than the hold's (ADR 0043): a deny receipt, nothing else.
  if (!hold || refusal) {
    const written = await writeReceipt(ctx, tree, cmd.command_id, fields('deny', refusal?.reason ?? HOLD_UNKNOWN), []);
    if (written.kind === 'rejected')
      throw new Error(`receipt for ${cmd.command_id} was rejected: ${written.rejection.message}`);
    return resultOf(cmd.hold_id, written.receipt, hold);
  }
  const facts = [
    {
      type: 'IncreaseHold' as const,
      hold_id: cmd.hold_id,
      command_id: cmd.command_id,
      amount_units: cmd.amount_units,
      ...(cmd.currency === undefined ? {} : { currency: cmd.currency }),
      ...(cmd.tokens === undefined ? {} : { tokens: cmd.tokens }),
      increases_max: ctx.limits.holdIncreasesMax ?? HOLD_INCREASES_MAX_DEFAULT,
      now_ms: ctx.clock.nowMs(),
    },
  ];
  let written = await writeReceipt(ctx, rootId, cmd.command_id, fields('allow', Reasons.increased), facts);
  if (written.kind === 'rejected')
    written = await writeReceipt(ctx, rootId, cmd.command_id, fields('deny', written.rejection.message), []);
  if (written.kind === 'rejected')
    throw new Error(`receipt for ${cmd.command_id} was rejected: ${written.rejection.message}`);
  return resultOf(cmd.hold_id, written.receipt, written.state.holds.get(cmd.hold_id));
}

function resultOf(holdId: string, receipt: SignedReceipt, hold: Hold | undefined): IncreaseResult {
  const allowed = receipt.verdict === 'allow';
  return {
    verdict: receipt.verdict,
    reason: receipt.reason ?? '',
    hold_id: holdId,
    ...(allowed && hold ? { hold_units: moneyToWire(hold.exposure_units), increase: hold.increases ?? 0 } : {}),
    receipt,
  };
}
