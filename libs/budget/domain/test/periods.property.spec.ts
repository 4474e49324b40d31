// Proves that budget periods tile time in every zone: each instant lies in exactly one period whose start is the
// zone's local boundary, across DST changes (skipped and repeated hours) and month ends, weeks starting on Monday.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { periodOf, previousPeriodOf, type BudgetReset, type ResetEvery } from '../src/index.js';

const ZONES = [
  'UTC',
  'America/New_York',
  'Europe/Berlin',
  'Europe/London',
  'Australia/Lord_Howe', // a 30-minute DST step
  'America/Santiago', // DST changes at local midnight
  'Asia/Kolkata', // +05:30, no DST
  'Pacific/Chatham', // +12:45 / +13:45
  'America/St_Johns', // -03:30 with DST
  'Asia/Kathmandu', // +05:45
] as const;
const EVERY: ResetEvery[] = ['minute', 'hour', 'day', 'week', 'month'];

const formatters = new Map<string, Intl.DateTimeFormat>();
function local(ms: number, timeZone: string) {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, x.value]));
  return {
    y: Number(p['year']),
    mo: Number(p['month']),
    d: Number(p['day']),
    h: Number(p['hour']),
    mi: Number(p['minute']),
    wd: p['weekday'],
  };
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const LENGTH: Record<ResetEvery, [number, number]> = {
  minute: [60_000, 60_000],
  hour: [HOUR / 2, 2 * HOUR],
  day: [DAY - 2 * HOUR, DAY + 2 * HOUR],
  week: [7 * DAY - 2 * HOUR, 7 * DAY + 2 * HOUR],
  month: [28 * DAY - 2 * HOUR, 31 * DAY + 2 * HOUR],
};

describe('budget periods (issue 11, reset)', () => {
  it('every instant lies in one period that starts on the local boundary and tiles with its neighbours, in every zone', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2060, 0, 1) }),
        fc.constantFrom(...ZONES),
        fc.constantFrom(...EVERY),
        (at, timezone, every) => {
          const reset: BudgetReset = { every, timezone };
          const p = periodOf(reset, at);
          expect(p.start_ms <= at && at < p.end_ms).toBe(true);
          const [min, max] = LENGTH[every];
          expect(p.end_ms - p.start_ms).toBeGreaterThanOrEqual(min);
          expect(p.end_ms - p.start_ms).toBeLessThanOrEqual(max);
          // Tiling: the next period starts where this one ends, the previous one ends where it starts.
          expect(periodOf(reset, p.end_ms).start_ms).toBe(p.end_ms);
          expect(previousPeriodOf(reset, at).end_ms).toBe(p.start_ms);
          expect(periodOf(reset, p.start_ms)).toEqual(p);
          expect(periodOf(reset, p.end_ms - 1)).toEqual(p);
          const s = local(p.start_ms, timezone);
          const before = local(p.start_ms - 60_000, timezone);
          if (every === 'month') expect(before.mo === s.mo && before.y === s.y).toBe(false);
          if (every === 'week') expect(s.wd === 'Mon' || before.wd === 'Sun').toBe(true);
          if (every === 'day' || every === 'week' || every === 'month')
            expect(before.d === s.d && before.mo === s.mo).toBe(false);
          if (every === 'hour') expect(before.h === s.h && before.d === s.d && before.mi < s.mi).toBe(false);
        },
      ),
      { numRuns: 1_500 },
    );
  });

  it("a fall-back across an hour boundary (St John's, 1994: 00:01 back to 23:01) puts the repeated minutes in the period after the boundary, the same answer with or without the memo", () => {
    const reset = { every: 'hour', timezone: 'America/St_Johns' } as const;
    // 02:31 UTC is 23:01 NST again, one minute after 00:00 NDT (02:30 UTC) began the new day.
    const inRepeat = Date.UTC(1994, 9, 30, 2, 31);
    const expected = { start_ms: Date.UTC(1994, 9, 30, 2, 30), end_ms: Date.UTC(1994, 9, 30, 4, 30) };
    periodOf(reset, Date.UTC(1994, 9, 29, 12)); // the memo holds another period first
    expect(periodOf(reset, inRepeat)).toEqual(expected);
    expect(periodOf(reset, Date.UTC(1994, 9, 30, 3, 15))).toEqual(expected);
    expect(previousPeriodOf(reset, inRepeat)).toEqual({
      start_ms: Date.UTC(1994, 9, 30, 1, 30),
      end_ms: Date.UTC(1994, 9, 30, 2, 30),
    });
  });

  it('a day across DST changes is 23 or 25 hours long, and months end on their last day (New York, Berlin)', () => {
    const ny = { every: 'day', timezone: 'America/New_York' } as const;
    const spring = periodOf(ny, Date.UTC(2024, 2, 10, 12));
    expect(spring).toEqual({ start_ms: Date.UTC(2024, 2, 10, 5), end_ms: Date.UTC(2024, 2, 11, 4) });
    const autumn = periodOf(ny, Date.UTC(2024, 10, 3, 12));
    expect(autumn.end_ms - autumn.start_ms).toBe(25 * HOUR);
    // The repeated 01:00-02:00 of the autumn change is one hour period of two hours.
    const repeated = periodOf({ every: 'hour', timezone: 'America/New_York' }, Date.UTC(2024, 10, 3, 6, 30));
    expect(repeated).toEqual({ start_ms: Date.UTC(2024, 10, 3, 5), end_ms: Date.UTC(2024, 10, 3, 7) });
    const feb = periodOf({ every: 'month', timezone: 'Europe/Berlin' }, Date.UTC(2024, 1, 29, 22, 59));
    expect(feb).toEqual({ start_ms: Date.UTC(2024, 0, 31, 23), end_ms: Date.UTC(2024, 1, 29, 23) });
    const march = periodOf({ every: 'month', timezone: 'Europe/Berlin' }, Date.UTC(2024, 1, 29, 23));
    expect(march.end_ms).toBe(Date.UTC(2024, 2, 31, 22)); // summer time began on March 31st
    // Santiago skips its local midnight at the September change: the day starts at 01:00.
    const skipped = periodOf({ every: 'day', timezone: 'America/Santiago' }, Date.UTC(2024, 8, 8, 12));
    expect(local(skipped.start_ms, 'America/Santiago')).toMatchObject({ d: 8, h: 1, mi: 0 });
  });

  it('weeks start on Monday and period_seconds periods are aligned to the epoch', () => {
    const week = periodOf({ every: 'week' }, Date.UTC(2024, 0, 7, 23)); // a Sunday
    expect(week).toEqual({ start_ms: Date.UTC(2024, 0, 1), end_ms: Date.UTC(2024, 0, 8) });
    expect(periodOf({ period_seconds: 3_600 }, Date.UTC(2024, 0, 1, 5, 59))).toEqual({
      start_ms: Date.UTC(2024, 0, 1, 5),
      end_ms: Date.UTC(2024, 0, 1, 6),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 * 86_400 }), fc.nat(4_000_000_000_000), (seconds, at) => {
        const p = periodOf({ period_seconds: seconds }, at);
        expect(p.start_ms % (seconds * 1000)).toBe(0);
        expect(p.start_ms <= at && at < p.end_ms && p.end_ms - p.start_ms === seconds * 1000).toBe(true);
      }),
    );
  });
});
