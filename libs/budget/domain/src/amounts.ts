// Amounts stay 63-bit (ADR 0044). Every boundary refuses a wider input, but sums are not
// bounded by their terms: two holds of 2^62 on a grant without a total add up past 2^63-1,
// which no projection column can store. Before an event is applied, amountOverflow says
// whether a sum it moves would leave the range: an operating outcome, which decideSequence
// answers with a rejection. assertEventAmounts checks the amounts an event carries itself,
// where a wider one can only be a bug.
import { AMOUNT_MAX_UNITS, assert, assertAmount, isAmount } from './assert.js';
import type { Rejection } from './decision.js';
import type { BudgetEvent } from './events.js';
import { committedOf, type GrantRef, type Usage } from './model.js';
import { spendOf, usageOf, type TreeState } from './state.js';

/** Payload fields that are opaque JSON (signed receipt bodies), not amounts of the ledger. */
const OPAQUE_FIELDS: ReadonlySet<string> = new Set(['receipt', 'decision']);
/** Number fields that are counts or token figures: integers a JSON number carries exactly. */
const COUNT_FIELDS: ReadonlySet<string> = new Set(['max_invocations', 'tokens', 'tokens_used']);

/** The rejection for an event that would take a usage, spend or exposure sum past 2^63-1; else undefined. */
export function amountOverflow(state: TreeState, event: BudgetEvent): Rejection | undefined {
  switch (event.type) {
    case 'HoldAuthorized':
      return chainOverflow(state, event.data.chain, event.data.exposure_units);
    case 'HoldIncreased': {
      if (!isAmount(event.data.exposure_units))
        return outOfRange(`hold ${event.data.hold_id} would expose ${event.data.exposure_units}`);
      const hold = state.holds.get(event.data.hold_id);
      return hold === undefined ? undefined : chainOverflow(state, hold.chain, event.data.amount_units);
    }
    case 'SpendSettled': {
      const hold = state.holds.get(event.data.hold_id);
      return hold === undefined
        ? undefined
        : chainOverflow(state, hold.chain, event.data.realized_units - hold.exposure_units);
    }
    case 'SpendCorrected': {
      const hold = state.holds.get(event.data.hold_id);
      const delta = event.data.realized_units - event.data.previous_realized_units;
      return hold === undefined ? undefined : chainOverflow(state, hold.chain, delta);
    }
    default:
      return undefined;
  }
}

/** Adding `delta` to the committed cost of every grant and capability of the chain must stay an amount. */
function chainOverflow(state: TreeState, chain: readonly GrantRef[], delta: bigint): Rejection | undefined {
  if (delta <= 0n) return undefined;
  for (const ref of chain) {
    // Lifetime usage bounds the usage of each period, so it is the one to check.
    const committed = committedOf(usageOf(state, ref)) + delta;
    if (committed > AMOUNT_MAX_UNITS)
      return outOfRange(`the committed cost of ${ref.capability_id} grant ${ref.grant_index} would reach ${committed}`);
  }
  for (const capabilityId of new Set(chain.map((ref) => ref.capability_id))) {
    const committed = spendOf(state, capabilityId).committed_units + delta;
    if (committed > AMOUNT_MAX_UNITS)
      return outOfRange(`the committed spend of ${capabilityId} would reach ${committed}`);
  }
  return undefined;
}

function outOfRange(what: string): Rejection {
  return { code: 'amount_out_of_range', message: `${what}, past the largest amount, 2^63-1 minor units` };
}

/** Every amount and count an event carries is in range: a decider that built a wider one has a bug. */
export function assertEventAmounts(event: BudgetEvent): void {
  const at = wideValueAt(event.data);
  assert(at === undefined, `${event.type} ${event.event_id}: ${at?.join('.')} is outside the range of an amount`);
}

/** The path to the first amount outside [0, 2^63-1] or count outside [0, 2^53-1]; undefined when none. */
function wideValueAt(value: unknown): string[] | undefined {
  if (typeof value === 'bigint') return isAmount(value) ? undefined : [];
  if (value === null || typeof value !== 'object') return undefined;
  for (const key of Object.keys(value)) {
    if (OPAQUE_FIELDS.has(key)) continue;
    const item = (value as Record<string, unknown>)[key];
    if (COUNT_FIELDS.has(key) && typeof item === 'number' && !(Number.isSafeInteger(item) && item >= 0)) return [key];
    const at = wideValueAt(item);
    if (at !== undefined) return [key, ...at];
  }
  return undefined;
}

/** A usage the tree holds after a change: each of its sums is an amount. */
export function assertUsageAmounts(usage: Usage, where: string): void {
  assertAmount(usage.exposed_cost_units, `exposed cost of ${where}`);
  assertAmount(usage.realized_cost_units, `realized cost of ${where}`);
  assertAmount(committedOf(usage), `committed cost of ${where}`);
  assertAmount(usage.overrun_cost_units, `overrun of ${where}`);
}
