// Releases the runtime leases of holds a background task closed (the expiry sweep, the
// reconciler, the sweep of stranded holds), after the undo committed: a lease is given back
// only once its hold can no longer be dispatched. Each outcome is recorded, in one step.
import type { BudgetCommand, TreeState } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';

/** Releases the unreleased lease of each of `holdIds` in `state`; returns how many releases were confirmed. */
export async function releaseLeasesOf(
  ctx: AuthorityContext,
  rootId: string,
  state: TreeState,
  holdIds: readonly string[],
): Promise<number> {
  const facts: BudgetCommand[] = [];
  let released = 0;
  for (const id of holdIds) {
    const hold = state.holds.get(id);
    if (hold?.lease_id === undefined || hold.lease_released || hold.lease_release_failed) continue;
    let outcome: 'released' | 'failed' = 'released';
    await ctx.hook
      .release({ lease_id: hold.lease_id, hold_id: id, request_id: hold.request_id })
      .catch(() => (outcome = 'failed'));
    if (outcome === 'released') released++;
    facts.push({ type: 'RecordLease', hold_id: id, lease_id: hold.lease_id, outcome, now_ms: ctx.clock.nowMs() });
  }
  if (facts.length > 0) await ctx.trees.step(rootId, () => facts);
  return released;
}
