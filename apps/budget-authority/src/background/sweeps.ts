// The authority's background sweeps, driven by the projection: B20 expiry reverses
// uncaptured holds past their TTL, B21 reconciliation resolves recorded ambiguities.
// The projection names the trees that need a visit (bounded by sweep_batch_max), so a
// replica also sweeps trees it never loaded, e.g. those of a replica that crashed.
import type { BudgetAuthority } from '@tally/budget-application';
import { AmbiguityRow, HoldRow } from '@tally/budget-projections';
import type { BackgroundTask, HostContext } from '@tally/platform-app';
import { IsNull, LessThanOrEqual } from 'typeorm';
import { SweepLoop } from './sweep-loop.js';

async function distinctRoots(rows: Promise<{ rootId: string }[]>): Promise<string[]> {
  return [...new Set((await rows).map((r) => r.rootId))];
}

export function expiryLoop(ctx: HostContext, authority: BudgetAuthority): BackgroundTask {
  const a = ctx.config.authority;
  return new SweepLoop(
    'hold-expiry',
    a.expiry_interval_ms,
    async () => {
      const roots = await distinctRoots(
        ctx.dataSource.manager.find(HoldRow, {
          where: { status: 'authorized', expiresAtMs: LessThanOrEqual(Date.now()) },
          select: { rootId: true },
          take: a.sweep_batch_max,
        }),
      );
      if (roots.length === 0) return;
      const expired = await authority.expireHolds(roots);
      const count = expired.reduce((n, e) => n + e.expired_hold_ids.length, 0);
      if (count > 0) ctx.logger.event('info', 'expired uncaptured holds', { holds: count, trees: roots.length });
    },
    ctx.logger,
  ).start();
}

export function reconcileLoop(ctx: HostContext, authority: BudgetAuthority): BackgroundTask {
  const a = ctx.config.authority;
  return new SweepLoop(
    'reconciler',
    a.reconcile_interval_ms,
    async () => {
      const roots = await distinctRoots(
        ctx.dataSource.manager.find(AmbiguityRow, {
          where: { resolution: IsNull() },
          select: { rootId: true },
          take: a.sweep_batch_max,
        }),
      );
      for (const root of roots) {
        const resolutions = await authority.reconcile(root);
        const resolved = resolutions.filter((r) => r.resolution !== undefined);
        if (resolved.length > 0)
          ctx.logger.event('info', 'reconciled ambiguities', {
            tree: root,
            resolved: resolved.map((r) => `${r.ambiguity_id}=${r.resolution}`),
          });
      }
    },
    ctx.logger,
  ).start();
}
