// The authority's background sweeps, driven by the projection: B20 expiry reverses
// uncaptured holds past their TTL and realizes in full the admitted ones whose settlement
// never came (ADR 0047), the sweep of stranded holds unwinds captures no run will finish and
// releases leases a dead run left (ADR 0059), B21 reconciliation resolves recorded ambiguities.
// The projection names the trees that need a visit (bounded by sweep_batch_max), so a
// replica also sweeps trees it never loaded, e.g. those of a replica that crashed.
import type { BudgetAuthority } from '@tally/budget-application';
import { AmbiguityRow, HoldRow } from '@tally/budget-projections';
import type { BackgroundTask, HostContext } from '@tally/platform-app';
import { Between, In, IsNull, LessThanOrEqual, Not } from 'typeorm';
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

/** B20 (ADR 0047): admitted holds past their TTL and the grace with no settlement are realized in full. */
export function unsettledLoop(ctx: HostContext, authority: BudgetAuthority): BackgroundTask {
  const a = ctx.config.authority;
  return new SweepLoop(
    'unsettled-holds',
    a.expiry_interval_ms,
    async () => {
      const roots = await distinctRoots(
        ctx.dataSource.manager.find(HoldRow, {
          where: { status: 'admitted', expiresAtMs: LessThanOrEqual(Date.now() - a.unsettled_grace_ms) },
          select: { rootId: true },
          take: a.sweep_batch_max,
        }),
      );
      if (roots.length === 0) return;
      const realized = await authority.realizeUnsettled(roots);
      const count = realized.reduce((n, r) => n + r.realized_hold_ids.length, 0);
      if (count > 0)
        ctx.logger.event('warn', 'realized in full admitted holds whose settlement never came', {
          holds: count,
          trees: roots.length,
        });
    },
    ctx.logger,
  ).start();
}

/**
 * ADR 0059: trees with a hold captured and never admitted past its TTL (the domain unwinds it
 * only when its command is answered deny), or a hold undone whose TTL passed within the grace
 * (its run may have died before releasing the lease).
 */
export function strandedLoop(ctx: HostContext, authority: BudgetAuthority): BackgroundTask {
  const a = ctx.config.authority;
  return new SweepLoop(
    'stranded-holds',
    a.expiry_interval_ms,
    async () => {
      const now = Date.now();
      const select = { rootId: true } as const;
      const roots = await distinctRoots(
        Promise.all([
          ctx.dataSource.manager.find(HoldRow, {
            where: { status: 'captured', expiresAtMs: LessThanOrEqual(now) },
            // Newest first: a capture no sweep may end (its command unanswered) never crowds out a recent one.
            order: { expiresAtMs: 'DESC' },
            select,
            take: a.sweep_batch_max,
          }),
          ctx.dataSource.manager.find(HoldRow, {
            where: { status: In(['reversed', 'cancelled']), expiresAtMs: Between(now - a.unsettled_grace_ms, now) },
            select,
            take: a.sweep_batch_max,
          }),
        ]).then(([captured, closed]) => [...captured, ...closed].slice(0, a.sweep_batch_max)),
      );
      if (roots.length === 0) return;
      const swept = await authority.unwindStranded(roots);
      const cancelled = swept.reduce((n, s) => n + s.cancelled_hold_ids.length, 0);
      const leases = swept.reduce((n, s) => n + s.leases_released, 0);
      if (cancelled + leases > 0)
        ctx.logger.event('warn', 'finished holds no run would finish', { cancelled, leases, trees: roots.length });
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
          // A missing settlement waits for the orchestrator's record, not the rail: left out, it never crowds the batch.
          where: { resolution: IsNull(), kind: Not('settlement_missing') },
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
