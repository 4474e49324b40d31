// B20, B21 (ADR 0059): the sweep of holds no run will finish. A hold captured and never
// admitted whose Admit command is answered with a denial (its run died before its unwind
// committed) is unwound as that run would have: what the rail holds released (the rail is
// asked, as the reconciler asks it), the capture cancelled, the lease released. A closed hold whose lease was never released (its run
// died between the undo and the release) gets the release. The cancel is decided again on
// the tree as it is when it is appended: a run that admitted the hold meanwhile wins.
import { isStrandedCapture, strandedHolds, type BudgetCommand, type Hold } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import { releaseLeasesOf } from './lease-release.js';
import { afterMoneyCheck } from './reconcile.handler.js';

export interface Unstranded {
  readonly root_id: string;
  readonly cancelled_hold_ids: readonly string[];
  readonly leases_released: number;
}

export async function unwindStranded(ctx: AuthorityContext, rootIds: readonly string[]): Promise<Unstranded[]> {
  const out: Unstranded[] = [];
  for (const rootId of rootIds) {
    const state = await ctx.trees.read(rootId);
    const due = strandedHolds(state, ctx.clock.nowMs(), ctx.limits.expireHoldsPerStepMax);
    const cancelled: string[] = [];
    for (const hold of due.captures) if (await unwind(ctx, rootId, hold)) cancelled.push(hold.hold_id);
    const closed = await ctx.trees.read(rootId);
    const leases = await releaseLeasesOf(ctx, rootId, closed, [...cancelled, ...due.leases.map((h) => h.hold_id)]);
    if (cancelled.length > 0 || due.leases.length > 0)
      out.push({ root_id: rootId, cancelled_hold_ids: cancelled, leases_released: leases });
  }
  return out;
}

/** Gives back what the rail holds and cancels the capture; true once the cancel committed. */
async function unwind(ctx: AuthorityContext, rootId: string, hold: Hold): Promise<boolean> {
  const cancel: BudgetCommand = {
    type: 'CancelCaptured',
    hold_id: hold.hold_id,
    cause: 'reconciled',
    now_ms: ctx.clock.nowMs(),
  };
  // Undefined: the rail's state is unknown, or its release is pending or unconfirmed; the next visit asks again.
  const plan = await afterMoneyCheck(ctx, hold, 'stranded_capture_cancelled', [cancel]);
  if (!plan) return false;
  const step = await ctx.trees.step(rootId, (truth) => {
    const now = truth.holds.get(hold.hold_id);
    const still =
      now !== undefined &&
      now.payment.status === hold.payment.status &&
      isStrandedCapture(truth, now, ctx.clock.nowMs());
    return still ? plan.facts : plan.facts.filter((f) => f.type === 'RecordPaymentStep');
  });
  return step.kind === 'committed' && step.events.some((e) => e.type === 'CaptureCancelled');
}
