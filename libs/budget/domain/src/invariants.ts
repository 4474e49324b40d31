// The ledger's invariants (B19), checked on both sides of every state change.
// A violation is a bug, so it throws an AssertionError instead of returning a rejection.
import { assert } from './assert.js';
import { committedOf, type Capability, type GrantRef, type Usage } from './model.js';
import type { Period } from './periods.js';
import { periodUsageOf, spendOf, usageOf, type TreeState } from './state.js';

/** What a capability may commit in total: its own budget, or the sum of its grants' totals when all are capped. */
export function capabilityCapacity(capability: Capability): bigint | undefined {
  if (capability.budget_units !== undefined) return capability.budget_units;
  let sum = 0n;
  for (const grant of capability.grants) {
    if (grant.max_total_cost_units === undefined) return undefined;
    sum += grant.max_total_cost_units;
  }
  return capability.grants.length > 0 ? sum : undefined;
}

/**
 * B19 (ADR 0043) on every grant of the chain (in the given period, for a grant with a reset:
 * its lifetime usage may sum many periods) and every capability on it: invocations ≤ max, and
 * committed ≤ limit + the overruns settled on it. A settlement books the whole charge, so only
 * what providers billed beyond their holds may take committed past a limit. With `adds` (the
 * change took a hold or raised one) committed ≤ limit itself: nothing new is admitted past it.
 */
export function assertChainWithinLimits(
  state: TreeState,
  chain: readonly GrantRef[],
  periods?: readonly (Period | null)[],
  adds = false,
): void {
  for (const [index, ref] of chain.entries()) {
    const capability = state.capabilities.get(ref.capability_id);
    assert(capability !== undefined, `usage for unknown capability ${ref.capability_id}`);
    const grant = capability.grants[ref.grant_index];
    assert(grant !== undefined, `usage for unknown grant ${ref.capability_id}#${ref.grant_index}`);
    const period = periods?.[index];
    const where = `${ref.capability_id}#${ref.grant_index}`;
    if (grant.reset === undefined) assertUsageWithin(usageOf(state, ref), grant, where, adds);
    else if (period)
      assertUsageWithin(periodUsageOf(state, ref, period.start_ms), grant, `${where}@${period.start_ms}`, adds);
    assertCapabilityWithinBudget(state, capability, adds);
  }
}

function assertUsageWithin(
  usage: Usage,
  grant: { max_invocations?: number; max_total_cost_units?: bigint },
  where: string,
  adds = false,
): void {
  assert(
    usage.invocation_count >= 0 &&
      usage.exposed_cost_units >= 0n &&
      usage.realized_cost_units >= 0n &&
      usage.overrun_cost_units >= 0n,
    `negative usage on ${where}`,
  );
  assert(usage.overrun_cost_units <= usage.realized_cost_units, `overrun beyond the realized spend on ${where}`);
  if (grant.max_invocations !== undefined)
    assert(
      usage.invocation_count <= grant.max_invocations,
      `invocations ${usage.invocation_count} exceed max ${grant.max_invocations} on ${where}`,
    );
  if (grant.max_total_cost_units === undefined) return;
  const committed = committedOf(usage);
  assert(
    committed <= grant.max_total_cost_units + usage.overrun_cost_units,
    `committed ${committed} exceeds limit ${grant.max_total_cost_units} plus overruns ${usage.overrun_cost_units} on ${where}`,
  );
  assert(
    !adds || committed <= grant.max_total_cost_units,
    `a hold took committed ${committed} past limit ${grant.max_total_cost_units} on ${where}`,
  );
}

export function assertCapabilityWithinBudget(state: TreeState, capability: Capability, adds = false): void {
  const spend = spendOf(state, capability.id);
  assert(
    spend.committed_units >= 0n && spend.invocation_count >= 0 && spend.overrun_units >= 0n,
    `negative spend on ${capability.id}`,
  );
  if (capability.budget_units !== undefined) {
    assert(
      spend.committed_units <= capability.budget_units + spend.overrun_units,
      `capability ${capability.id} committed ${spend.committed_units} beyond its budget ${capability.budget_units} plus overruns ${spend.overrun_units}`,
    );
    assert(
      !adds || spend.committed_units <= capability.budget_units,
      `a hold took capability ${capability.id} to ${spend.committed_units}, past its budget ${capability.budget_units}`,
    );
  }
  let childrenCommitted = 0n;
  for (const child of capability.children) childrenCommitted += spendOf(state, child).committed_units;
  assert(
    childrenCommitted <= spend.committed_units,
    `children of ${capability.id} committed ${childrenCommitted}, more than the parent's ${spend.committed_units}`,
  );
}

/** Siblings' shares never add up to more than the parent's capacity. */
export function assertSiblingShares(state: TreeState, parentId: string): void {
  const parent = state.capabilities.get(parentId);
  assert(parent !== undefined, `unknown parent ${parentId}`);
  const capacity = capabilityCapacity(parent);
  if (capacity === undefined) return;
  let shares = 0n;
  for (const child of parent.children) shares += state.capabilities.get(child)?.budget_units ?? 0n;
  assert(shares <= capacity, `children of ${parentId} hold shares ${shares} beyond its capacity ${capacity}`);
}

/** Every invariant of the whole tree: used by property tests and after a full replay. */
export function assertTreeInvariants(state: TreeState): void {
  for (const capability of state.capabilities.values()) {
    for (let index = 0; index < capability.grants.length; index++)
      assertChainWithinLimits(state, [{ capability_id: capability.id, grant_index: index }]);
    assertSiblingShares(state, capability.id);
  }
  // Every period of every grant with a reset stays within the grant's limits.
  for (const [key, usage] of state.period_usage.entries()) {
    const [capabilityId, rest] = key.split('#') as [string, string];
    const grant = state.capabilities.get(capabilityId)?.grants[Number(rest.split('@')[0])];
    assert(grant !== undefined, `period usage ${key} of an unknown grant`);
    assertUsageWithin(usage, grant, key);
  }
}
