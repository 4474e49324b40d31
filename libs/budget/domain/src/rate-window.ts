// Sliding 60 s windows of admissions per grant (rate_limits), folded from HoldAuthorized.
// They live in the tree's state, so every replica decides on the same window at the same
// commit index: a limit is exact across replicas because optimistic concurrency already
// orders every admission of the tree.
//
// A window's entries are kept in an append-only log shared by the versions of the state
// (evolve stays pure: group commit decides on tentative states and drops them). A version
// appends in place only when it is the log's newest; an older version that appends copies
// its live entries first. Pruning moves the head. So admitting costs O(1) amortized,
// whatever the rate.

/** The window of every limit: "per minute". */
export const RATE_WINDOW_MS = 60_000;

class WindowLog {
  readonly at: number[] = [];
  readonly holds: string[] = [];
  /** The sequence number of the log's first element. */
  constructor(readonly offset: number) {}
}

export interface RateWindow {
  readonly log: WindowLog;
  /** First live entry (sequence number), and one past the last. */
  readonly head: number;
  readonly tail: number;
  /** Tokens counted by the live entries. */
  readonly tokens: number;
  /** Holds of the grant that are open now. */
  readonly open: number;
  /** The window's clock: the latest admission time, so time never runs backwards across replicas' clocks. */
  readonly last_at_ms: number;
}

export const EMPTY_WINDOW: RateWindow = { log: new WindowLog(0), head: 0, tail: 0, tokens: 0, open: 0, last_at_ms: 0 };

/** The window's time for an admission at `atMs`. */
export const windowTime = (window: RateWindow, atMs: number): number => Math.max(atMs, window.last_at_ms);

export const entryAt = (window: RateWindow, seq: number): number => window.log.at[seq - window.log.offset]!;
export const entryHold = (window: RateWindow, seq: number): string => window.log.holds[seq - window.log.offset]!;

export interface WindowView {
  /** First entry still inside (t - 60 s, t]. */
  readonly first: number;
  readonly count: number;
  readonly tokens: number;
}

/** What the window holds at time t. `countedOf` gives an entry's tokens now (they change at settlement). */
export function viewAt(window: RateWindow, t: number, countedOf: (holdId: string) => number): WindowView {
  let first = window.head;
  let tokens = window.tokens;
  while (first < window.tail && entryAt(window, first) <= t - RATE_WINDOW_MS) {
    tokens -= countedOf(entryHold(window, first));
    first++;
  }
  return { first, count: window.tail - first, tokens };
}

/** The window after an admission at t: expired entries pruned, the new one appended. Returns its sequence too. */
export function admitted(
  window: RateWindow,
  t: number,
  holdId: string,
  tokens: number,
  countedOf: (holdId: string) => number,
): { window: RateWindow; seq: number } {
  const view = viewAt(window, t, countedOf);
  let log = window.log;
  if (window.tail - log.offset !== log.at.length) {
    // An older version appends: copy its live entries into a log of its own.
    const copy = new WindowLog(view.first);
    for (let seq = view.first; seq < window.tail; seq++) {
      copy.at.push(entryAt(window, seq));
      copy.holds.push(entryHold(window, seq));
    }
    log = copy;
  } else if (view.first - log.offset > 1024 && view.first - log.offset > log.at.length / 2) {
    // Compact now and then, so a long-lived window does not keep every admission it ever saw.
    const copy = new WindowLog(view.first);
    for (let seq = view.first; seq < window.tail; seq++) {
      copy.at.push(entryAt(window, seq));
      copy.holds.push(entryHold(window, seq));
    }
    log = copy;
  }
  log.at.push(t);
  log.holds.push(holdId);
  const seq = window.tail;
  return {
    window: {
      log,
      head: view.first,
      tail: seq + 1,
      tokens: view.tokens + tokens,
      open: window.open + 1,
      last_at_ms: t,
    },
    seq,
  };
}

/**
 * Retry-after for a refused admission at t: when enough entries will have left the window
 * for `needCount` more admissions within `countMax`, and `needTokens` more within `tokensMax`.
 */
export function retryAfterMs(
  window: RateWindow,
  view: WindowView,
  t: number,
  countedOf: (holdId: string) => number,
  limits: { countMax?: number; tokensMax?: number; needTokens: number },
): number {
  let seq = view.first;
  let count = view.count;
  let tokens = view.tokens;
  const fits = () =>
    (limits.countMax === undefined || count + 1 <= limits.countMax) &&
    (limits.tokensMax === undefined || tokens + limits.needTokens <= limits.tokensMax);
  while (!fits() && seq < window.tail) {
    count--;
    tokens -= countedOf(entryHold(window, seq));
    seq++;
  }
  // The entry at seq - 1 is the last that must leave; it leaves RATE_WINDOW_MS after it came.
  const leavesAt = seq > view.first ? entryAt(window, seq - 1) + RATE_WINDOW_MS : t + 1;
  return Math.max(1, leavesAt - t);
}
