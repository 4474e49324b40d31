// Spend policy on the tree's aggregate: the period each grant of a chain counts in, holds
// that fit (hold_cap_units, and a smaller hold when the caller accepts one), rate limits on
// sliding windows, and the alerts a change of committed cost crosses.
import { minBig } from './assert.js';
import type { Rejection } from './decision.js';
import type { BudgetEvent } from './events.js';
import { committedOf, type GrantRef, type Hold } from './model.js';
import { periodOf, type Period } from './periods.js';
import { retryAfterMs, viewAt, windowTime, EMPTY_WINDOW } from './rate-window.js';
import { alertKey, limitedUsageOf, spendOf, type TreeState } from './state.js';

/** The period of each chain entry at `atMs`; undefined when no grant of the chain resets. */
export function periodsFor(state: TreeState, chain: readonly GrantRef[], atMs: number): (Period | null)[] | undefined {
  let any = false;
  const periods = chain.map((ref) => {
    const reset = state.capabilities.get(ref.capability_id)!.grants[ref.grant_index]!.reset;
    if (reset === undefined) return null;
    any = true;
    return periodOf(reset, atMs);
  });
  return any ? periods : undefined;
}

const startOf = (periods: readonly (Period | null)[] | undefined, index: number): number | undefined =>
  periods?.[index]?.start_ms;

/**
 * The most one hold may expose on this chain now: every hold cap, and the free room of every
 * limit (per period where the grant resets). Undefined when nothing bounds it.
 */
export function roomOf(
  state: TreeState,
  chain: readonly GrantRef[],
  periods: readonly (Period | null)[] | undefined,
  exclude?: Hold,
): bigint | undefined {
  let room: bigint | undefined;
  const take = (value: bigint) => (room = room === undefined ? value : minBig(room, value));
  for (const [index, ref] of chain.entries()) {
    const capability = state.capabilities.get(ref.capability_id)!;
    const grant = capability.grants[ref.grant_index]!;
    const own = exclude?.exposure_units ?? 0n;
    if (grant.hold_cap_units !== undefined) take(grant.hold_cap_units);
    if (grant.max_total_cost_units !== undefined)
      take(grant.max_total_cost_units - committedOf(limitedUsageOf(state, ref, startOf(periods, index))) + own);
    if (capability.budget_units !== undefined)
      take(capability.budget_units - spendOf(state, capability.id).committed_units + own);
  }
  return room;
}

/**
 * The exposure a new hold takes: the requested one, or (when the caller accepts down to
 * `minCost`) as much of it as fits the chain's hold caps and free room.
 */
export function fitExposure(
  state: TreeState,
  chain: readonly GrantRef[],
  periods: readonly (Period | null)[] | undefined,
  exposure: bigint,
  minCost: bigint | undefined,
): bigint | Rejection {
  const room = roomOf(state, chain, periods);
  const capped = capOf(state, chain);
  if (capped !== undefined && exposure > capped && (minCost === undefined || minCost > capped))
    return { code: 'hold_cap_exceeded', message: `a single hold on this grant may expose at most ${capped}` };
  if (minCost === undefined || room === undefined || exposure <= room) return minBig(exposure, capped ?? exposure);
  return room >= minCost && room > 0n ? room : exposure;
}

function capOf(state: TreeState, chain: readonly GrantRef[]): bigint | undefined {
  let cap: bigint | undefined;
  for (const ref of chain) {
    const value = state.capabilities.get(ref.capability_id)!.grants[ref.grant_index]!.hold_cap_units;
    if (value !== undefined) cap = cap === undefined ? value : minBig(cap, value);
  }
  return cap;
}

/** A grant's tokens in its window now: held until settlement, then the used ones. */
export const countedTokens =
  (state: TreeState) =>
  (holdId: string): number => {
    const hold = state.holds.get(holdId);
    return hold?.tokens_counted ?? hold?.tokens ?? 0;
  };

/** Rate limits of every grant of the chain (a parent's limits cover its children's traffic). */
export function checkRateLimits(
  state: TreeState,
  chain: readonly GrantRef[],
  atMs: number,
  tokens: number | undefined,
  concurrencyRetryAfterMs: number,
): Rejection | undefined {
  const counted = countedTokens(state);
  for (const ref of chain) {
    const limits = state.capabilities.get(ref.capability_id)!.grants[ref.grant_index]!.rate_limits;
    if (limits === undefined) continue;
    const window = state.windows.get(`${ref.capability_id}#${ref.grant_index}`) ?? EMPTY_WINDOW;
    const t = windowTime(window, atMs);
    const rpm = limits.requests_per_minute;
    const tpm = limits.tokens_per_minute;
    if (tpm !== undefined && tokens === undefined)
      return { code: 'tokens_required', message: 'this grant limits tokens per minute: requested_tokens is required' };
    const need = tokens ?? 0;
    if (tpm !== undefined && need > tpm)
      return {
        code: 'requested_tokens_exceed_rate_limit',
        message: `requested_tokens ${need} exceed tokens_per_minute ${tpm}`,
      };
    if (limits.max_concurrent !== undefined && window.open + 1 > limits.max_concurrent)
      return rateLimited(`max_concurrent ${limits.max_concurrent} holds are open`, concurrencyRetryAfterMs);
    if (rpm === undefined && tpm === undefined) continue;
    const view = viewAt(window, t, counted);
    const overCount = rpm !== undefined && view.count + 1 > rpm;
    const overTokens = tpm !== undefined && view.tokens + need > tpm;
    if (!overCount && !overTokens) continue;
    const retry = retryAfterMs(window, view, t, counted, {
      ...(rpm === undefined ? {} : { countMax: rpm }),
      ...(tpm === undefined ? {} : { tokensMax: tpm }),
      needTokens: need,
    });
    return rateLimited(overCount ? `requests_per_minute ${rpm} reached` : `tokens_per_minute ${tpm} reached`, retry);
  }
  return undefined;
}

const rateLimited = (message: string, retryAfterMs: number): Rejection => ({
  code: 'rate_limited',
  message,
  retry_after_ms: retryAfterMs,
});

/**
 * The alerts a hold's change crossed on its chain: each share of alert_at_percent once per
 * period (budget.threshold_crossed), and the limit itself (budget.exhausted). `state` is the
 * state after the change.
 */
export function alertEvents(state: TreeState, hold: Hold, atMs: number): BudgetEvent[] {
  const events: BudgetEvent[] = [];
  for (const [index, ref] of hold.chain.entries()) {
    const grant = state.capabilities.get(ref.capability_id)!.grants[ref.grant_index]!;
    if (grant.max_total_cost_units === undefined || grant.alert_at_percent === undefined) continue;
    const period = hold.periods?.[index] ?? null;
    const committed = committedOf(limitedUsageOf(state, ref, period?.start_ms));
    const limit = grant.max_total_cost_units;
    const base = {
      capability_id: ref.capability_id,
      grant_index: ref.grant_index,
      committed_units: committed,
      limit_units: limit,
      ...(period === null ? {} : { period_start_ms: period.start_ms, period_end_ms: period.end_ms }),
      hold_id: hold.hold_id,
      at_ms: atMs,
    };
    for (const percent of grant.alert_at_percent) {
      const key = alertKey(ref, period?.start_ms, 'threshold', percent);
      // committed / limit ≥ percent / 100, in integers.
      if (committed * 100n < BigInt(percent) * limit || state.alerts.has(key)) continue;
      events.push({ type: 'BudgetThresholdCrossed', event_id: `alert:${key}`, data: { ...base, percent } });
    }
    const exhausted = alertKey(ref, period?.start_ms, 'exhausted', 100);
    if (limit > 0n && committed >= limit && !state.alerts.has(exhausted))
      events.push({ type: 'BudgetExhausted', event_id: `alert:${exhausted}`, data: base });
  }
  return events;
}
