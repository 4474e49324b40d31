// The spend-policy side of evolve: rate windows and per-period usage follow the holds, so
// a replay of the events rebuilds them exactly. Paired assertions guard every limit.
import { assert } from './assert.js';
import { countedTokens } from './decide-policy.js';
import type { Hold, RateLimits, Usage } from './model.js';
import { ZERO_USAGE } from './model.js';
import { admitted, viewAt, EMPTY_WINDOW, type RateWindow } from './rate-window.js';
import { periodKey, usageKey, type TreeState } from './state.js';

/** A new hold enters the window of every rate-limited grant of its chain. */
export function enterWindows(state: TreeState, hold: Hold, atMs: number): { state: TreeState; hold: Hold } {
  if (hold.preflight) return { state, hold };
  let windows = state.windows;
  let any = false;
  const counted = countedTokens(state);
  const seqs = hold.chain.map((ref) => {
    const limits = state.capabilities.get(ref.capability_id)!.grants[ref.grant_index]!.rate_limits;
    if (limits === undefined) return null;
    any = true;
    const key = usageKey(ref);
    const before = windows.get(key) ?? EMPTY_WINDOW;
    const t = Math.max(atMs, before.last_at_ms);
    const next = admitted(before, t, hold.hold_id, hold.tokens ?? 0, counted);
    assertWindow(next.window, limits, t, counted, key);
    windows = windows.with(key, next.window);
    return next.seq;
  });
  if (!any) return { state, hold };
  return { state: { ...state, windows }, hold: { ...hold, rate_seqs: seqs, tokens_counted: hold.tokens ?? 0 } };
}

/** A hold closes: it no longer counts as open, and its tokens become the used ones (0 when nothing ran). */
export function leaveWindows(
  state: TreeState,
  hold: Hold,
  tokensNow: number | undefined,
): { state: TreeState; hold: Hold } {
  if (hold.rate_seqs === undefined) return { state, hold };
  const before = hold.tokens_counted ?? hold.tokens ?? 0;
  // Settlement only ever lowers the count: more tokens than were held is an overrun of the call, not of the window.
  const after = tokensNow === undefined ? before : Math.min(before, Math.max(0, tokensNow));
  let windows = state.windows;
  for (const [index, ref] of hold.chain.entries()) {
    const seq = hold.rate_seqs[index];
    if (seq === null || seq === undefined) continue;
    const key = usageKey(ref);
    const window = windows.get(key)!;
    assert(window.open > 0, `window ${key} closes a hold it does not count as open`);
    const live = seq >= window.head;
    windows = windows.with(key, {
      ...window,
      open: window.open - 1,
      tokens: live ? window.tokens - (before - after) : window.tokens,
    });
  }
  return { state: { ...state, windows }, hold: { ...hold, tokens_counted: after } };
}

/** An increase adds tokens to the hold's share of its live windows. */
export function growWindows(state: TreeState, hold: Hold, tokens: number): { state: TreeState; hold: Hold } {
  if (hold.rate_seqs === undefined || tokens === 0) return { state, hold };
  let windows = state.windows;
  for (const [index, ref] of hold.chain.entries()) {
    const seq = hold.rate_seqs[index];
    if (seq === null || seq === undefined) continue;
    const key = usageKey(ref);
    const window = windows.get(key)!;
    if (seq >= window.head) windows = windows.with(key, { ...window, tokens: window.tokens + tokens });
  }
  return {
    state: { ...state, windows },
    hold: { ...hold, tokens: (hold.tokens ?? 0) + tokens, tokens_counted: (hold.tokens_counted ?? 0) + tokens },
  };
}

function assertWindow(
  window: RateWindow,
  limits: RateLimits | undefined,
  t: number,
  counted: (holdId: string) => number,
  key: string,
): void {
  if (limits === undefined) return;
  const view = viewAt(window, t, counted);
  if (limits.requests_per_minute !== undefined)
    assert(view.count <= limits.requests_per_minute, `window ${key} holds ${view.count} admissions in 60 s`);
  if (limits.tokens_per_minute !== undefined)
    assert(view.tokens <= limits.tokens_per_minute, `window ${key} holds ${view.tokens} tokens in 60 s`);
  if (limits.max_concurrent !== undefined)
    assert(window.open <= limits.max_concurrent, `window ${key} has ${window.open} holds open`);
}

/** Adds a mutation's deltas to the period buckets of the hold's chain. */
export function addPeriodUsage(
  state: TreeState,
  hold: Hold,
  delta: { inv: number; exp: bigint; real: bigint; over?: bigint },
): TreeState['period_usage'] {
  let periodUsage = state.period_usage;
  if (hold.periods === undefined) return periodUsage;
  for (const [index, ref] of hold.chain.entries()) {
    const period = hold.periods[index];
    if (period === null || period === undefined) continue;
    const key = periodKey(ref, period.start_ms);
    const before: Usage = periodUsage.get(key) ?? ZERO_USAGE;
    periodUsage = periodUsage.with(key, {
      invocation_count: before.invocation_count + delta.inv,
      exposed_cost_units: before.exposed_cost_units + delta.exp,
      realized_cost_units: before.realized_cost_units + delta.real,
      overrun_cost_units: before.overrun_cost_units + (delta.over ?? 0n),
    });
  }
  return periodUsage;
}
