// Independent checks of the books for the B19 property test: committed and overruns recomputed from the holds
// alone, the fit of every new hold, and what each settlement, sweep (ADR 0047) and correction booked.
import { expect } from '@jest/globals';
import {
  assertTreeInvariants,
  committedOf,
  spendOf,
  usageKey,
  usageOf,
  type GrantRef,
  type RecordedBudgetEvent,
  type TreeState,
} from '../src/index.js';

/** The grace an admitted hold waits past its TTL before the sweep realizes it in full (ADR 0047). */
export const GRACE_MS = 10_000;

interface Books {
  committed: bigint;
  overrun: bigint;
}

/** Recomputes committed spend and overruns per grant from the holds alone: an independent check of the books. */
function booksFromHolds(state: TreeState): Map<string, Books> {
  const out = new Map<string, Books>();
  for (const hold of state.holds.values()) {
    const live = hold.status === 'authorized' || hold.status === 'captured' || hold.status === 'retained';
    const settled = hold.status === 'settled' ? hold.realized_units! : 0n;
    const amount = live ? hold.exposure_units : settled;
    const overrun = settled > hold.exposure_units ? settled - hold.exposure_units : 0n;
    for (const ref of hold.chain) {
      const books = out.get(usageKey(ref)) ?? { committed: 0n, overrun: 0n };
      out.set(usageKey(ref), { committed: books.committed + amount, overrun: books.overrun + overrun });
    }
  }
  return out;
}

/** B19 (ADR 0043): committed passes a limit only by the overruns settled on it; the books match the holds. */
export function checkBooks(state: TreeState): void {
  assertTreeInvariants(state);
  const independent = booksFromHolds(state);
  for (const [key, usage] of state.usage) {
    expect(committedOf(usage)).toBe(independent.get(key)?.committed ?? 0n);
    expect(usage.overrun_cost_units).toBe(independent.get(key)?.overrun ?? 0n);
  }
  for (const capability of state.capabilities.values()) {
    const spend = spendOf(state, capability.id);
    if (capability.budget_units !== undefined)
      expect(spend.committed_units <= capability.budget_units + spend.overrun_units).toBe(true);
    for (const [index, grant] of capability.grants.entries()) {
      const usage = state.usage.get(usageKey({ capability_id: capability.id, grant_index: index }));
      if (!usage) continue;
      if (grant.max_total_cost_units !== undefined)
        expect(committedOf(usage) <= grant.max_total_cost_units + usage.overrun_cost_units).toBe(true);
      if (grant.max_invocations !== undefined) expect(usage.invocation_count <= grant.max_invocations).toBe(true);
    }
  }
}

/** A hold taken or raised fits under every limit of its chain: an overrun never lets new spend in. */
export function checkFits(state: TreeState, chain: readonly GrantRef[]): void {
  for (const ref of chain) {
    const capability = state.capabilities.get(ref.capability_id)!;
    const limit = capability.grants[ref.grant_index]!.max_total_cost_units;
    if (limit !== undefined) expect(committedOf(usageOf(state, ref)) <= limit).toBe(true);
    if (capability.budget_units !== undefined)
      expect(spendOf(state, capability.id).committed_units <= capability.budget_units).toBe(true);
  }
}

/** B4 and B19: a settlement books what the provider billed (a prepaid-final one at least its hold), never less. */
export function checkSettlement(before: TreeState, event: RecordedBudgetEvent): void {
  if (event.type !== 'SpendSettled') return;
  const hold = before.holds.get(event.data.hold_id)!;
  const actual = event.data.actual_units;
  const prepaid = hold.payment.mode === 'prepaid_final';
  const charge = prepaid && actual < hold.exposure_units ? hold.exposure_units : actual;
  expect(event.data.realized_units).toBe(charge);
  expect(event.data.overrun_units).toBe(0n);
  expect(event.data.hold_overrun_units).toBe(charge > hold.exposure_units ? charge - hold.exposure_units : 0n);
  // ADR 0047: an unsettled hold is realized in full, only once its TTL and the grace have passed.
  if (event.data.cause !== undefined) {
    expect([actual, hold.status, hold.admitted]).toEqual([hold.exposure_units, 'captured', true]);
    expect(hold.expires_at_ms + GRACE_MS <= event.data.at_ms).toBe(true);
  }
}

/** ADR 0047: a late outcome corrects a swept hold once, to what it would have booked on time. */
export function checkCorrection(before: TreeState, event: RecordedBudgetEvent): void {
  if (event.type !== 'SpendCorrected') return;
  const hold = before.holds.get(event.data.hold_id)!;
  expect([hold.settlement_cause, hold.corrected, event.data.previous_realized_units]).toEqual([
    'unsettled_expired',
    undefined,
    hold.exposure_units,
  ]);
  const prepaid = hold.payment.mode === 'prepaid_final';
  const cost = event.data.actual_units ?? 0n;
  const charge = prepaid && cost < hold.exposure_units ? hold.exposure_units : cost;
  const expected = { completed: charge, failed_after_dispatch: hold.exposure_units }[event.data.outcome as string];
  expect(event.data.realized_units).toBe(expected ?? 0n);
}
