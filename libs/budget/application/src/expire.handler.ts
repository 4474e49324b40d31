// B20: the expiry sweep. An uncaptured hold past its TTL is reversed by a durable event,
// so no reservation leaks; a captured hold is never touched here. A lease a crashed Admit
// left behind on an expired hold is released too.
import type { HoldReversedData } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import { releaseLeasesOf } from './lease-release.js';

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
    await releaseLeasesOf(ctx, rootId, step.state, ids);
    out.push({ root_id: rootId, expired_hold_ids: ids });
  }
  return out;
}
