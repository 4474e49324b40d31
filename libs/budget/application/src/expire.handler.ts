// B20: the expiry sweep. An uncaptured hold past its TTL is reversed by a durable event,
// so no reservation leaks; a captured hold is never touched here. A lease a crashed Admit
// left behind on an expired hold is released too.
import type { BudgetCommand, HoldReversedData } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';

export interface Expired {
  readonly root_id: string;
  readonly expired_hold_ids: readonly string[];
}

export async function expireHolds(ctx: AuthorityContext, rootIds: readonly string[]): Promise<Expired[]> {
  const out: Expired[] = [];
  for (const rootId of rootIds) {
    const step = await ctx.trees.step(rootId, () => [
      { type: 'ExpireHolds', now_ms: ctx.clock.nowMs(), holds_max: ctx.limits.expireHoldsPerStepMax },
    ]);
    if (step.kind !== 'committed') continue;
    const ids = step.events.map((e) => (e.data as HoldReversedData).hold_id);
    const leases: BudgetCommand[] = [];
    for (const id of ids) {
      const hold = step.state.holds.get(id);
      if (hold?.lease_id === undefined || hold.lease_released) continue;
      let outcome: 'released' | 'failed' = 'released';
      await ctx.hook
        .release({ lease_id: hold.lease_id, hold_id: id, request_id: hold.request_id })
        .catch(() => (outcome = 'failed'));
      leases.push({ type: 'RecordLease', hold_id: id, lease_id: hold.lease_id, outcome, now_ms: ctx.clock.nowMs() });
    }
    if (leases.length > 0) await ctx.trees.step(rootId, () => leases);
    out.push({ root_id: rootId, expired_hold_ids: ids });
  }
  return out;
}
