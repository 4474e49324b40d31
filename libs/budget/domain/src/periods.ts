// Budget periods (http-api.md, Spend policy: `reset`). A period is a half-open interval
// [start_ms, end_ms) of epoch milliseconds. `period_seconds` periods are aligned to the Unix
// epoch; calendar periods are aligned to the wall clock of an IANA time zone (weeks start on
// Monday), through Intl.DateTimeFormat, so they follow every DST change and month length.
//
// A calendar period starts at the first instant whose local wall time is at or after the
// period's local start (midnight, the top of the hour, ...). That rule is monotone, so the
// periods of a zone tile the time line without gaps or overlaps, also when a DST change
// skips the local start (the period then starts when the clocks jump) or repeats it (the
// period starts at its first occurrence and so lasts longer).

export type ResetEvery = 'minute' | 'hour' | 'day' | 'week' | 'month';

export type BudgetReset =
  { readonly every: ResetEvery; readonly timezone?: string } | { readonly period_seconds: number };

export interface Period {
  readonly start_ms: number;
  readonly end_ms: number;
}

export const RESET_EVERY: readonly ResetEvery[] = ['minute', 'hour', 'day', 'week', 'month'];
/** A period of at most ten years: a longer one is a lifetime limit, and is written without a reset. */
export const PERIOD_SECONDS_MAX = 10 * 366 * 86_400;

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Zones are few; the bound only guards against a tree that names thousands of them. */
const FORMATTERS_MAX = 512;

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size >= FORMATTERS_MAX) formatters.clear();
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Whether Intl knows the zone (checked when a grant is issued, never later). */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatterOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

interface Wall {
  readonly year: number;
  readonly month: number; // 1..12
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
}

/** The local wall clock at an instant, to the minute (every zone's offset is whole minutes since 1972). */
function wallOf(instantMs: number, timeZone: string): Wall {
  const parts: Record<string, number> = {};
  for (const part of formatterOf(timeZone).formatToParts(instantMs))
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  return {
    year: parts['year']!,
    month: parts['month']!,
    day: parts['day']!,
    hour: parts['hour']!,
    minute: parts['minute']!,
  };
}

/** A wall time as if it were UTC: comparable, and Date.UTC normalises overflowing fields. */
const wallMs = (w: Wall): number => Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute);

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * The first instant (to the minute) whose local wall time is at or after `targetWallMs`.
 * "local ≥ target" is monotone over the bracket for period boundaries: local time only runs
 * backwards at a DST change, and the first instant after the change that reaches the
 * target again comes later than the one found (calendarPeriod walks past a fall-back
 * that crosses a boundary). (Minute periods never come here: whole-minute offsets keep them on the epoch.)
 */
function firstInstantAtOrAfter(targetWallMs: number, timeZone: string): number {
  const reached = (instantMs: number) => wallMs(wallOf(instantMs, timeZone)) >= targetWallMs;
  // Usually the offset at the target lands exactly: one check and its minute before.
  const guess = targetWallMs - offsetAt(targetWallMs - offsetAt(targetWallMs, timeZone), timeZone);
  if (reached(guess) && !reached(guess - MINUTE_MS)) return guess;
  // A skipped or repeated local time: bisect on minutes. Offsets lie within ±14 h.
  let low = targetWallMs - DAY_MS; // not reached
  let high = targetWallMs + DAY_MS; // reached
  for (let i = 0; i < 64 && high - low > MINUTE_MS; i++) {
    const mid = low + Math.floor((high - low) / 2 / MINUTE_MS) * MINUTE_MS;
    if (reached(mid)) high = mid;
    else low = mid;
  }
  return high;
}

/** Local wall time minus UTC at an instant, in milliseconds. */
const offsetAt = (instantMs: number, timeZone: string): number =>
  wallMs(wallOf(instantMs, timeZone)) - Math.floor(instantMs / MINUTE_MS) * MINUTE_MS;

function localStart(every: ResetEvery, w: Wall): { start: number; end: number } {
  switch (every) {
    case 'minute':
      return {
        start: Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute),
        end: Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute + 1),
      };
    case 'hour':
      return {
        start: Date.UTC(w.year, w.month - 1, w.day, w.hour),
        end: Date.UTC(w.year, w.month - 1, w.day, w.hour + 1),
      };
    case 'day':
      return { start: Date.UTC(w.year, w.month - 1, w.day), end: Date.UTC(w.year, w.month - 1, w.day + 1) };
    case 'week': {
      const weekday = new Date(Date.UTC(w.year, w.month - 1, w.day)).getUTCDay(); // 0 = Sunday
      const monday = w.day - ((weekday + 6) % 7);
      return { start: Date.UTC(w.year, w.month - 1, monday), end: Date.UTC(w.year, w.month - 1, monday + 7) };
    }
    case 'month':
      return { start: Date.UTC(w.year, w.month - 1, 1), end: Date.UTC(w.year, w.month, 1) };
  }
}

/** The last period asked for per reset: admissions of one grant keep landing in the same one. */
const recent = new Map<string, Period>();
const RECENT_MAX = 4_096;

/** The period that contains `atMs`. Pure: the memo only saves Intl calls for the same answer. */
export function periodOf(reset: BudgetReset, atMs: number): Period {
  if ('period_seconds' in reset) {
    const lengthMs = reset.period_seconds * 1000;
    const start = Math.floor(atMs / lengthMs) * lengthMs;
    return { start_ms: start, end_ms: start + lengthMs };
  }
  const timeZone = reset.timezone ?? 'UTC';
  const key = `${reset.every}|${timeZone}`;
  const cached = recent.get(key);
  if (cached !== undefined && cached.start_ms <= atMs && atMs < cached.end_ms) return cached;
  const period = calendarPeriod(reset.every, timeZone, atMs);
  if (recent.size >= RECENT_MAX) recent.clear();
  recent.set(key, period);
  return period;
}

function calendarPeriod(every: ResetEvery, timeZone: string, atMs: number): Period {
  // Every zone's offset is whole minutes, so minutes are the epoch's; UTC needs no Intl at all.
  if (every === 'minute' || timeZone === 'UTC' || timeZone === 'Etc/UTC') {
    const d = new Date(atMs);
    const { start, end } = localStart(every, {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
    });
    return { start_ms: start, end_ms: end };
  }
  let { start, end } = localStart(every, wallOf(atMs, timeZone));
  let startMs = firstInstantAtOrAfter(start, timeZone);
  let endMs = firstInstantAtOrAfter(end, timeZone);
  // A fall-back across a boundary (St John's went from 00:01 back to 23:01) repeats wall
  // times of the period before it: the instant then lies past the period its wall time
  // names, in one that starts at that boundary. Walk forward so the answer contains it.
  for (let i = 0; atMs >= endMs && i < 4; i++) {
    start = end;
    end = localStart(every, wallOfMs(end)).end;
    startMs = endMs;
    endMs = firstInstantAtOrAfter(end, timeZone);
  }
  return { start_ms: startMs, end_ms: endMs };
}

/** The fields of a wall time kept as if it were UTC (wallMs' inverse). */
function wallOfMs(wall: number): Wall {
  const d = new Date(wall);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
  };
}

/** The period before the one that contains `atMs`. */
export function previousPeriodOf(reset: BudgetReset, atMs: number): Period {
  return periodOf(reset, periodOf(reset, atMs).start_ms - 1);
}

/** Two resets that cut time the same way: a delegated grant may only repeat its parent's. */
export function sameReset(a: BudgetReset, b: BudgetReset): boolean {
  if ('period_seconds' in a || 'period_seconds' in b)
    return 'period_seconds' in a && 'period_seconds' in b && a.period_seconds === b.period_seconds;
  return a.every === b.every && (a.timezone ?? 'UTC') === (b.timezone ?? 'UTC');
}

/** Why a reset is not usable, or undefined when it is. */
export function invalidReset(reset: BudgetReset): string | undefined {
  if ('period_seconds' in reset) {
    const s = reset.period_seconds;
    return Number.isSafeInteger(s) && s >= 1 && s <= PERIOD_SECONDS_MAX
      ? undefined
      : `reset.period_seconds must be an integer from 1 to ${PERIOD_SECONDS_MAX}`;
  }
  if (!RESET_EVERY.includes(reset.every)) return `reset.every must be one of ${RESET_EVERY.join(', ')}`;
  if (reset.timezone !== undefined && !isTimeZone(reset.timezone))
    return `reset.timezone ${reset.timezone} is not an IANA time zone`;
  return undefined;
}
