// Proves ADR 0043 on the decider, as given events / when command / then events: an overrun is booked in full and
// shuts its grant until the limit covers it, events from earlier releases replay as they did, and currencies never mix.
import { describe, expect, it } from '@jest/globals';
import {
  AssertionError,
  evolve,
  usageOf,
  type BudgetCommand,
  type Grant,
  type RecordedBudgetEvent,
} from '../src/index.js';
import { MONETARY, NOW, authorize, given, issue, run, when, type Given } from './tree.fixture.js';

const ROOT = { capability_id: 'root', grant_index: 0 };
const CHILD = { capability_id: 'child', grant_index: 0 };
const hold = (req: string, cap = 'root') => `budget-hold:${req}:${cap}:0`;

/** A hold taken, captured and admitted for dispatch, so it can be settled. */
function dispatched(g: Given, req: string, cap = 'root', cost = 100n): Given {
  return run(
    g,
    authorize(req, cap, { requested_cost: cost }),
    { type: 'CaptureInvocation', hold_id: hold(req, cap), now_ms: NOW },
    { type: 'AdmitInvocation', hold_id: hold(req, cap), now_ms: NOW },
  );
}

const settle = (req: string, cost: bigint, cap = 'root', currency?: string): BudgetCommand => ({
  type: 'SettleHold',
  hold_id: hold(req, cap),
  outcome: { kind: 'completed', cost_units: cost, ...(currency === undefined ? {} : { currency }) },
  now_ms: NOW,
});

/** root (limit 1000) with a child (limit 300) narrowing its grant. */
function tree(grant: Grant = MONETARY): Given {
  return run(
    given([]),
    issue('root', [grant]),
    issue('child', [{ ...grant, max_total_cost_units: 300n, parent_grant_index: 0 } as Grant], { parent_id: 'root' }),
  );
}

describe('overruns are booked in full (ADR 0043)', () => {
  it('B4 B19 a charge beyond its hold is booked whole: realized is the charge, the part beyond the hold is the overrun, and a BudgetOverrun fact joins the settlement', () => {
    const wide: Grant = { ...MONETARY, max_cost_per_invocation: 1000n };
    const g = dispatched(run(dispatched(tree(wide), 'r1', 'root', 900n), settle('r1', 900n)), 'r2');
    const decision = when(g, settle('r2', 306n));
    expect(decision.ok && decision.events.map((e) => [e.type, e.event_id])).toEqual([
      ['SpendSettled', `${hold('r2')}:settle`],
      ['BudgetOverrun', `${hold('r2')}:overrun`],
    ]);
    if (!decision.ok) return;
    expect(decision.events[0]!.data).toEqual({
      kind: 'capture_spend',
      hold_id: hold('r2'),
      actual_units: 306n,
      realized_units: 306n,
      overrun_units: 0n,
      hold_overrun_units: 206n,
      at_ms: NOW,
    });
    expect(decision.events[1]!.data).toEqual({
      capability_id: 'root',
      grant_index: 0,
      hold_id: hold('r2'),
      realized_units: 306n,
      exposure_units: 100n,
      hold_overrun_units: 206n,
      currency: 'USD',
      committed_units: 1206n,
      limit_units: 1000n,
      at_ms: NOW,
    });
    const after = run(g, settle('r2', 306n));
    expect(usageOf(after.state, ROOT)).toEqual({
      invocation_count: 2,
      exposed_cost_units: 0n,
      realized_cost_units: 1206n,
      overrun_cost_units: 206n,
    });
    expect(after.state.spend.get('root')).toEqual({ invocation_count: 2, committed_units: 1206n, overrun_units: 206n });
  });

  it('B19 a settlement within its hold books min(actual, exposed) and no overrun; a prepaid-final one books at least its hold', () => {
    const g = dispatched(tree(), 'r1');
    const within = when(g, settle('r1', 40n));
    expect(within.ok && within.events.map((e) => e.type)).toEqual(['SpendSettled']);
    expect(within.ok && within.events[0]!.data).toMatchObject({ realized_units: 40n, hold_overrun_units: 0n });
    const prepaid = run(g, {
      type: 'RecordPaymentStep',
      hold_id: hold('r1'),
      payment: { step: 'authorized', mode: 'prepaid_final' },
      now_ms: NOW,
    });
    expect(when(prepaid, settle('r1', 40n))).toMatchObject({
      ok: true,
      events: [{ data: { kind: 'capture_spend', realized_units: 100n, hold_overrun_units: 0n } }],
    });
    expect(when(prepaid, settle('r1', 130n))).toMatchObject({
      ok: true,
      events: [{ data: { realized_units: 130n, hold_overrun_units: 30n } }, { type: 'BudgetOverrun' }],
    });
  });

  it('B19 a grant past its limit by an overrun refuses every admission and increase with budget_overrun, on its chain too, until its period resets', () => {
    const perMinute: Grant = { ...MONETARY, reset: { every: 'minute' } };
    let g = dispatched(tree(perMinute), 'open', 'root', 10n);
    g = run(dispatched(g, 'r1', 'root', 100n), settle('r1', 1500n));
    expect(usageOf(g.state, ROOT)).toMatchObject({ realized_cost_units: 1500n, overrun_cost_units: 1400n });
    const refused = {
      ok: false,
      rejection: { code: 'budget_overrun', message: 'budget overrun: spend is past the limit' },
    };
    expect(when(g, authorize('r2', 'root', { requested_cost: 1n }))).toMatchObject(refused);
    expect(when(g, authorize('r3', 'root', { requested_cost: 0n }))).toMatchObject(refused);
    expect(when(g, authorize('r4', 'root', { requested_cost: 50n, min_cost: 0n }))).toMatchObject(refused);
    // The child's own limit has room, but its spend also counts against the root's grant.
    expect(when(g, authorize('r5', 'child', { requested_cost: 1n }))).toMatchObject(refused);
    const increase: BudgetCommand = {
      type: 'IncreaseHold',
      hold_id: hold('open'),
      amount_units: 1n,
      increases_max: 4,
      now_ms: NOW,
    };
    expect(when(g, increase)).toMatchObject(refused);
    // The next period's limit covers its own spend: admissions resume there.
    expect(when(g, authorize('r6', 'root', { requested_cost: 1n, now_ms: NOW + 60_000 })).ok).toBe(true);
  });

  it('B19 an event that would admit past a limit is an assertion even when an overrun already passed it', () => {
    const g = run(dispatched(tree(), 'r1'), settle('r1', 1200n));
    const event = when(tree(), authorize('x', 'root', { requested_cost: 1n }));
    if (!event.ok) throw new Error('authorize rejected');
    const bogus = { ...event.events[0]!, commit_index: g.state.last_commit_index + 1 } as RecordedBudgetEvent;
    expect(() => evolve(g.state, bogus)).toThrow(AssertionError);
    expect(() => evolve(g.state, bogus)).toThrow('a hold took committed 1201 past limit 1000 on root#0');
  });

  it('B19 a SpendSettled from before ADR 0043 (no hold_overrun_units, realized = min(charge, room)) replays to the usage it always did', () => {
    const g = dispatched(tree(), 'r1');
    const legacy = {
      type: 'SpendSettled',
      event_id: `${hold('r1')}:settle`,
      commit_index: g.state.last_commit_index + 1,
      data: {
        kind: 'capture_spend',
        hold_id: hold('r1'),
        actual_units: 5000n,
        realized_units: 1000n,
        overrun_units: 4000n,
        at_ms: NOW,
      },
    } as RecordedBudgetEvent;
    const replayed = evolve(g.state, legacy);
    expect(usageOf(replayed, ROOT)).toEqual({
      invocation_count: 1,
      exposed_cost_units: 0n,
      realized_cost_units: 1000n,
      overrun_cost_units: 0n,
    });
    expect(usageOf(replayed, CHILD).realized_cost_units).toBe(0n);
  });
});

describe('currencies never mix (ADR 0043)', () => {
  it('ADR 0043 a settlement in another currency than its hold is refused with currency_mismatch and decides nothing; the same or no currency settles', () => {
    const g = dispatched(tree(), 'r1');
    expect(when(g, settle('r1', 40n, 'root', 'EUR'))).toEqual({
      ok: false,
      rejection: { code: 'currency_mismatch', message: "currency EUR differs from the hold's USD" },
    });
    expect(when(g, settle('r1', 40n, 'root', 'USD')).ok).toBe(true);
    expect(when(g, settle('r1', 40n)).ok).toBe(true);
  });

  it('ADR 0043 an increase in another currency than its hold is refused with currency_mismatch; the same currency raises it', () => {
    const g = run(tree(), authorize('r1', 'root', { requested_cost: 10n }));
    const increase = (currency: string): BudgetCommand => ({
      type: 'IncreaseHold',
      hold_id: hold('r1'),
      amount_units: 5n,
      currency,
      increases_max: 4,
      now_ms: NOW,
    });
    expect(when(g, increase('EUR'))).toMatchObject({ ok: false, rejection: { code: 'currency_mismatch' } });
    expect(when(g, increase('USD'))).toMatchObject({ ok: true, events: [{ data: { exposure_units: 15n } }] });
  });
});
