// The per-period side of a capability's usage (http-api.md, Spend policy): for each grant
// with a reset, the period that contains a given instant and its figures, read from the
// tree's folded events, so a replay answers the same for every past period.
import { committedOf, periodOf, periodUsageOf, previousPeriodOf } from '@tally/budget-domain';
import { rootOfCapability, type AuthorityContext } from './authority-context.js';

export interface GrantPeriodUsage {
  readonly grant_index: number;
  readonly period_start: string;
  /** Exclusive. */
  readonly period_end: string;
  readonly invocation_count: number;
  readonly exposed_cost_units: bigint;
  readonly realized_cost_units: bigint;
  readonly committed_cost_units: bigint;
  /** What providers billed beyond their holds, booked as spend (ADR 0043). */
  readonly overrun_cost_units: bigint;
  readonly currency: string | null;
}

/** Undefined when the capability is unknown; grants without a reset are left out. */
export async function periodUsage(
  ctx: AuthorityContext,
  capabilityId: string,
  atMs: number,
  /** The period before the one that contains `atMs`, for each grant. */
  previous = false,
): Promise<GrantPeriodUsage[] | undefined> {
  const state = await ctx.trees.read(rootOfCapability(capabilityId));
  const capability = state.capabilities.get(capabilityId);
  if (!capability) return undefined;
  const out: GrantPeriodUsage[] = [];
  for (const [index, grant] of capability.grants.entries()) {
    if (grant.reset === undefined) continue;
    const period = previous ? previousPeriodOf(grant.reset, atMs) : periodOf(grant.reset, atMs);
    const usage = periodUsageOf(state, { capability_id: capabilityId, grant_index: index }, period.start_ms);
    out.push({
      grant_index: index,
      period_start: new Date(period.start_ms).toISOString(),
      period_end: new Date(period.end_ms).toISOString(),
      ...usage,
      committed_cost_units: committedOf(usage),
      currency: grant.currency ?? null,
    });
  }
  return out;
}
