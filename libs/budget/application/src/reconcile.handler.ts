// B21: the reconciler resolves each recorded ambiguity from facts only: the stream's
// truth (is the event there?) and the rail's settlement state for the reference. Budget
// comes back only when no money is held; money is released only when the rail says it is
// held for a request that was denied. Anything still unknown stays open for the next run.
import type { Ambiguity, BudgetCommand, Hold, TreeState } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import { callRail } from './settle.handler.js';

export interface Resolution {
  readonly ambiguity_id: string;
  readonly resolution: string | undefined;
}

export async function reconcile(ctx: AuthorityContext, rootId: string): Promise<Resolution[]> {
  const state = await ctx.trees.read(rootId);
  const out: Resolution[] = [];
  for (const ambiguity of state.ambiguities.values()) {
    if (ambiguity.resolution !== undefined) continue;
    const hold = state.holds.get(ambiguity.hold_id);
    const plan = hold ? await resolve(ctx, ambiguity, hold) : { resolution: 'hold_unknown', facts: [] };
    if (!plan) {
      out.push({ ambiguity_id: ambiguity.ambiguity_id, resolution: undefined });
      continue;
    }
    const now = ctx.clock.nowMs();
    const step = await ctx.trees.step(rootId, () => [
      ...plan.facts,
      {
        type: 'ResolveAmbiguity',
        ambiguity_id: ambiguity.ambiguity_id,
        resolution: plan.resolution,
        ...(plan.rail ? { rail_state: plan.rail } : {}),
        now_ms: now,
      },
    ]);
    out.push({
      ambiguity_id: ambiguity.ambiguity_id,
      resolution: step.kind === 'committed' ? plan.resolution : undefined,
    });
  }
  return out;
}

interface Plan {
  readonly resolution: string;
  readonly facts: BudgetCommand[];
  readonly rail?: string;
}

async function resolve(ctx: AuthorityContext, ambiguity: Ambiguity, hold: Hold): Promise<Plan | undefined> {
  const now = ctx.clock.nowMs();
  const cancel: BudgetCommand = { type: 'CancelCaptured', hold_id: hold.hold_id, cause: 'reconciled', now_ms: now };
  const rollback: BudgetCommand = { type: 'RollbackHold', hold_id: hold.hold_id, cause: 'reconciled', now_ms: now };
  switch (ambiguity.kind) {
    case 'invocation_capture':
    case 'reverse':
      if (hold.status === 'authorized') return { resolution: `${ambiguity.kind}_absent_reversed`, facts: [rollback] };
      if (hold.status === 'captured' && !hold.admitted)
        return afterMoneyCheck(ctx, hold, 'capture_committed_cancelled', [cancel]);
      return { resolution: `${ambiguity.kind}_committed`, facts: [] };
    case 'cancellation':
      if (hold.status === 'captured') return { resolution: 'cancellation_reapplied', facts: [cancel] };
      return { resolution: 'cancellation_committed', facts: [] };
    case 'payment_authorization':
    case 'payment_release':
      if (hold.status !== 'captured') return { resolution: 'hold_already_terminal', facts: [] };
      return afterMoneyCheck(ctx, hold, 'payment_released_cancelled', [cancel]);
    case 'payment_capture': {
      const rail = await ctx.rail.settlementState(hold.request_id);
      if (rail.state === 'captured')
        return {
          resolution: 'payment_capture_confirmed',
          facts: [paymentStep(hold, 'captured', now)],
          rail: rail.state,
        };
      return undefined;
    }
    case 'settlement_missing':
      // The orchestrator's own record resolves it (ADR 0047): no fact the reconciler reads can.
      return undefined;
  }
}

/** Runs `facts` only once the rail shows no money held for the request, releasing it first when it is held. */
async function afterMoneyCheck(
  ctx: AuthorityContext,
  hold: Hold,
  resolution: string,
  facts: BudgetCommand[],
): Promise<Plan | undefined> {
  const rail = await ctx.rail.settlementState(hold.request_id);
  const now = ctx.clock.nowMs();
  if (rail.state === 'none' || rail.state === 'declined' || rail.state === 'released' || rail.state === 'refunded') {
    const known = rail.state === 'released' || rail.state === 'refunded' ? [paymentStep(hold, rail.state, now)] : [];
    return { resolution, facts: [...known, ...facts], rail: rail.state };
  }
  if (rail.state !== 'authorized' && rail.state !== 'captured') return undefined;
  const authorization = rail.authorization_id ?? hold.payment.authorization_id;
  if (authorization === undefined) return undefined;
  const result = await callRail(() =>
    rail.state === 'captured'
      ? ctx.rail.refund({
          transaction_id: authorization,
          amount_units: hold.exposure_units,
          currency: hold.currency ?? 'XXX',
          reference: hold.request_id,
        })
      : ctx.rail.release({ authorization_id: authorization, reference: hold.request_id }),
  );
  if (result.outcome !== 'released' && result.outcome !== 'refunded') return undefined;
  return { resolution, facts: [paymentStep(hold, result.outcome, now), ...facts], rail: rail.state };
}

function paymentStep(hold: Hold, step: 'captured' | 'released' | 'refunded', now: number): BudgetCommand {
  return { type: 'RecordPaymentStep', hold_id: hold.hold_id, payment: { step }, now_ms: now };
}

export function openAmbiguities(state: TreeState): Ambiguity[] {
  return [...state.ambiguities.values()].filter((a) => a.resolution === undefined);
}
