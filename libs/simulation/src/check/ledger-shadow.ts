// An independent recomputation of the ledger's limits from the budget stream, commit by
// commit: it folds the stored events with its own arithmetic (not the domain's evolve) and
// checks B19 after each one: invocations and committed cost within every grant of a hold's
// chain (per period for a grant that resets), capability budgets, requests per minute and
// holds open at once; and that a hold is captured at most once and closes at most once.
import type { RecordedBudgetEvent } from '@tally/budget-domain';
import type { Grant, GrantRef, Period } from '@tally/budget-domain';

export interface ShadowHold {
  readonly hold_id: string;
  readonly request_id: string;
  readonly root_id: string;
  readonly chain: readonly GrantRef[];
  readonly periods: readonly (Period | null)[] | undefined;
  readonly preflight: boolean;
  readonly monetary: boolean;
  /** Chain entries whose grant has rate limits: the hold counts in their windows. */
  readonly windowed: readonly boolean[];
  readonly expires_at_ms: number;
  exposure: bigint;
  status: 'authorized' | 'captured' | 'reversed' | 'cancelled' | 'released' | 'settled' | 'retained';
  admitted: boolean;
  captures: number;
  closes: number;
}

interface Figures {
  invocations: number;
  exposed: bigint;
  realized: bigint;
  overrun: bigint;
}

interface Window {
  readonly at: number[];
  head: number;
  last: number;
  open: number;
}

const zero = (): Figures => ({ invocations: 0, exposed: 0n, realized: 0n, overrun: 0n });
const RATE_WINDOW_MS = 60_000;

export class LedgerShadow {
  readonly holds = new Map<string, ShadowHold>();
  /** Holds authorized and not yet captured or reversed: what the expiry sweep looks for. */
  readonly authorized = new Set<ShadowHold>();
  private readonly grants = new Map<string, Grant>();
  private readonly budgets = new Map<string, bigint>();
  private readonly usage = new Map<string, Figures>();
  private readonly spend = new Map<string, Figures>();
  private readonly windows = new Map<string, Window>();

  constructor(private readonly violation: (detail: string) => void) {}

  apply(rootId: string, event: RecordedBudgetEvent): void {
    switch (event.type) {
      case 'CapabilityIssued':
        event.data.grants.forEach((grant, index) => this.grants.set(key(event.data.capability_id, index), grant));
        if (event.data.budget_units !== undefined) this.budgets.set(event.data.capability_id, event.data.budget_units);
        return;
      case 'HoldAuthorized':
        return this.authorize(rootId, event.data, event.event_id);
      case 'InvocationCaptured': {
        const hold = this.hold(event.data.hold_id, event.type);
        if (!hold) return;
        if (hold.status !== 'authorized' || ++hold.captures > 1)
          this.violation(`hold ${hold.hold_id} captured in status ${hold.status} (capture ${hold.captures})`);
        hold.status = 'captured';
        this.authorized.delete(hold);
        return;
      }
      case 'InvocationAdmitted': {
        const hold = this.hold(event.data.hold_id, event.type);
        if (hold && (hold.status !== 'captured' || hold.admitted))
          this.violation(`hold ${hold.hold_id} admitted in status ${hold.status}, admitted ${hold.admitted}`);
        if (hold) hold.admitted = true;
        return;
      }
      case 'HoldReversed':
        return this.close(event.data.hold_id, 'reversed', ['authorized'], { inv: -1, realized: 0n, overrun: 0n });
      case 'CaptureCancelled':
        return this.close(event.data.hold_id, 'cancelled', ['captured'], { inv: -1, realized: 0n, overrun: 0n });
      case 'ExposureReleased':
        return this.close(event.data.hold_id, 'released', ['captured'], { inv: -1, realized: 0n, overrun: 0n });
      case 'SpendSettled':
        return this.close(event.data.hold_id, 'settled', ['captured'], {
          inv: 0,
          realized: event.data.realized_units,
          overrun: event.data.hold_overrun_units ?? 0n,
        });
      case 'HoldRetained':
        return this.close(event.data.hold_id, 'retained', ['captured'], undefined);
      case 'HoldIncreased': {
        const hold = this.hold(event.data.hold_id, event.type);
        if (!hold) return;
        hold.exposure += event.data.amount_units;
        this.move(hold, { invocations: 0, exposed: event.data.amount_units, realized: 0n, overrun: 0n });
        this.checkLimits(hold, true);
        return;
      }
      default:
        return;
    }
  }

  private authorize(
    rootId: string,
    data: Extract<RecordedBudgetEvent, { type: 'HoldAuthorized' }>['data'],
    id: string,
  ) {
    if (this.holds.has(data.hold_id)) return this.violation(`hold ${data.hold_id} authorized twice (${id})`);
    const windowed = data.chain.map(
      (ref) => this.grants.get(key(ref.capability_id, ref.grant_index))?.rate_limits !== undefined,
    );
    const hold: ShadowHold = {
      hold_id: data.hold_id,
      request_id: data.request_id,
      root_id: rootId,
      chain: data.chain,
      periods: data.periods,
      preflight: data.preflight,
      monetary: data.monetary,
      windowed: data.preflight ? windowed.map(() => false) : windowed,
      expires_at_ms: data.expires_at_ms,
      exposure: data.exposure_units,
      status: 'authorized',
      admitted: false,
      captures: 0,
      closes: 0,
    };
    this.holds.set(hold.hold_id, hold);
    this.authorized.add(hold);
    this.checkPeriods(hold, data.at_ms);
    this.move(hold, { invocations: 1, exposed: data.exposure_units, realized: 0n, overrun: 0n });
    this.checkLimits(hold, true);
    hold.chain.forEach((ref, i) => hold.windowed[i] && this.enterWindow(ref, data.at_ms));
  }

  private close(
    holdId: string,
    status: ShadowHold['status'],
    from: readonly ShadowHold['status'][],
    delta: { inv: number; realized: bigint; overrun: bigint } | undefined,
  ): void {
    const hold = this.hold(holdId, status);
    if (!hold) return;
    if (!from.includes(hold.status) || ++hold.closes > 1)
      this.violation(`hold ${holdId} ${status} from status ${hold.status} (close ${hold.closes})`);
    if (status !== 'reversed' && status !== 'cancelled' && !hold.admitted && hold.status === 'captured')
      this.violation(`hold ${holdId} ${status} though it was never admitted`);
    hold.status = status;
    this.authorized.delete(hold);
    hold.chain.forEach((ref, i) => hold.windowed[i] && this.leaveWindow(ref));
    if (!delta) return;
    if (delta.overrun > 0n && delta.realized !== hold.exposure + delta.overrun)
      this.violation(
        `hold ${holdId} settles ${delta.realized} with an overrun of ${delta.overrun} on ${hold.exposure}`,
      );
    this.move(hold, {
      invocations: delta.inv,
      exposed: -hold.exposure,
      realized: delta.realized,
      overrun: delta.overrun,
    });
    this.checkLimits(hold, false);
  }

  /** Adds a change to every grant of the hold's chain (lifetime and period) and every capability on it. */
  private move(hold: ShadowHold, d: Figures): void {
    const add = (map: Map<string, Figures>, k: string) => {
      const f = map.get(k) ?? zero();
      map.set(k, {
        invocations: f.invocations + d.invocations,
        exposed: f.exposed + d.exposed,
        realized: f.realized + d.realized,
        overrun: f.overrun + d.overrun,
      });
    };
    hold.chain.forEach((ref, i) => {
      add(this.usage, key(ref.capability_id, ref.grant_index));
      const period = hold.periods?.[i];
      if (period) add(this.usage, `${key(ref.capability_id, ref.grant_index)}@${period.start_ms}`);
    });
    for (const capability of new Set(hold.chain.map((ref) => ref.capability_id))) add(this.spend, capability);
  }

  /** B19 on every grant and capability of the chain; `adds`: the change took or raised a hold, so no overrun allowance. */
  private checkLimits(hold: ShadowHold, adds: boolean): void {
    hold.chain.forEach((ref, i) => {
      const grant = this.grants.get(key(ref.capability_id, ref.grant_index));
      if (!grant)
        return this.violation(
          `hold ${hold.hold_id} counts on unknown grant ${key(ref.capability_id, ref.grant_index)}`,
        );
      const period = hold.periods?.[i];
      if (grant.reset !== undefined && !period)
        this.violation(`hold ${hold.hold_id} has no period on a resetting grant`);
      const where = period
        ? `${key(ref.capability_id, ref.grant_index)}@${period.start_ms}`
        : key(ref.capability_id, ref.grant_index);
      this.within(this.usage.get(where) ?? zero(), grant.max_invocations, grant.max_total_cost_units, where, adds);
    });
    for (const capability of new Set(hold.chain.map((ref) => ref.capability_id))) {
      const budget = this.budgets.get(capability);
      if (budget !== undefined) this.within(this.spend.get(capability) ?? zero(), undefined, budget, capability, adds);
    }
  }

  private within(
    f: Figures,
    invocationsMax: number | undefined,
    limit: bigint | undefined,
    where: string,
    adds: boolean,
  ) {
    if (f.invocations < 0 || f.exposed < 0n || f.realized < 0n) this.violation(`negative usage on ${where}`);
    if (invocationsMax !== undefined && f.invocations > invocationsMax)
      this.violation(`${f.invocations} invocations on ${where}, max ${invocationsMax}`);
    if (limit === undefined) return;
    const committed = f.exposed + f.realized;
    if (committed > limit + f.overrun)
      this.violation(`committed ${committed} on ${where} past ${limit} + overrun ${f.overrun}`);
    if (adds && committed > limit) this.violation(`a hold took committed ${committed} on ${where} past ${limit}`);
  }

  /** A period is the epoch-aligned one of its grant's period_seconds that contains the hold's time. */
  private checkPeriods(hold: ShadowHold, atMs: number): void {
    hold.chain.forEach((ref, i) => {
      const reset = this.grants.get(key(ref.capability_id, ref.grant_index))?.reset;
      const period = hold.periods?.[i];
      if (!reset || !('period_seconds' in reset) || !period) return;
      const lengthMs = reset.period_seconds * 1000;
      const start = Math.floor(atMs / lengthMs) * lengthMs;
      if (period.start_ms !== start || period.end_ms !== start + lengthMs)
        this.violation(
          `hold ${hold.hold_id} at ${atMs} counts in [${period.start_ms}, ${period.end_ms}), not [${start}, ${start + lengthMs})`,
        );
    });
  }

  private enterWindow(ref: GrantRef, atMs: number): void {
    const k = key(ref.capability_id, ref.grant_index);
    const limits = this.grants.get(k)?.rate_limits;
    const w = this.windows.get(k) ?? { at: [], head: 0, last: 0, open: 0 };
    this.windows.set(k, w);
    const t = Math.max(atMs, w.last);
    w.last = t;
    w.at.push(t);
    w.open++;
    while (w.head < w.at.length && w.at[w.head]! <= t - RATE_WINDOW_MS) w.head++;
    const count = w.at.length - w.head;
    if (limits?.requests_per_minute !== undefined && count > limits.requests_per_minute)
      this.violation(`${count} admissions within 60 s on ${k}, requests_per_minute ${limits.requests_per_minute}`);
    if (limits?.max_concurrent !== undefined && w.open > limits.max_concurrent)
      this.violation(`${w.open} holds open on ${k}, max_concurrent ${limits.max_concurrent}`);
  }

  private leaveWindow(ref: GrantRef): void {
    const w = this.windows.get(key(ref.capability_id, ref.grant_index));
    if (!w || --w.open < 0)
      this.violation(`window ${key(ref.capability_id, ref.grant_index)} closes a hold it never opened`);
  }

  private hold(holdId: string, what: string): ShadowHold | undefined {
    const hold = this.holds.get(holdId);
    if (!hold) this.violation(`${what} of unknown hold ${holdId}`);
    return hold;
  }
}

const key = (capabilityId: string, grantIndex: number) => `${capabilityId}#${grantIndex}`;
