// Proves ADR 0047 on the decider, as given events / when command / then events: an admitted hold unsettled past its TTL and the grace is realized in full with a settlement_missing ambiguity, and a late outcome corrects it once by a further event.
import { describe, expect, it } from '@jest/globals';
import {
  AssertionError,
  evolve,
  fold,
  initialState,
  listMutations,
  spendOf,
  usageOf,
  type BudgetCommand,
  type Grant,
  type RecordedBudgetEvent,
  type SettleOutcome,
} from '../src/index.js';
import { MONETARY, NOW, authorize, given, issue, run, when, type Given } from './tree.fixture.js';

const ROOT = { capability_id: 'root', grant_index: 0 };
const CHILD = { capability_id: 'child', grant_index: 0 };
const TTL_MS = 30_000;
const GRACE_MS = 60_000;
const DUE = NOW + TTL_MS + GRACE_MS;
const hold = (req: string, cap = 'child') => `budget-hold:${req}:${cap}:0`;

/** root (limit 1000) with a child (limit 300, a per-call cap of 1000) narrowing its grant. */
function tree(): Given {
  const wide: Grant = { ...MONETARY, max_cost_per_invocation: 1000n };
  return run(
    given([]),
    issue('root', [wide]),
    issue('child', [{ ...wide, max_total_cost_units: 300n, parent_grant_index: 0 } as Grant], { parent_id: 'root' }),
  );
}

/** A hold of `cost` on the child, captured, paid on a reversible rail and admitted: the orchestrator then vanished. */
function admitted(g: Given, req: string, cost = 100n): Given {
  const holdId = hold(req);
  return run(
    g,
    authorize(req, 'child', { requested_cost: cost }),
    { type: 'CaptureInvocation', hold_id: holdId, now_ms: NOW },
    {
      type: 'RecordPaymentStep',
      hold_id: holdId,
      payment: { step: 'authorized', authorization_id: `auth_${req}`, mode: 'reversible_hold' },
      now_ms: NOW,
    },
    { type: 'AdmitInvocation', hold_id: holdId, now_ms: NOW },
  );
}

const sweep = (req: string, nowMs = DUE): BudgetCommand => ({
  type: 'SettleUnsettled',
  hold_id: hold(req),
  grace_ms: GRACE_MS,
  now_ms: nowMs,
});
const correct = (req: string, outcome: SettleOutcome): BudgetCommand => ({
  type: 'CorrectSpend',
  hold_id: hold(req),
  outcome,
  now_ms: DUE + 5_000,
});
const completed = (cost: bigint, currency?: string): Extract<SettleOutcome, { kind: 'completed' }> => ({
  kind: 'completed',
  cost_units: cost,
  ...(currency === undefined ? {} : { currency }),
});

describe('an unsettled admitted hold is realized in full (ADR 0047)', () => {
  it('B20 an admitted hold unsettled past its TTL and the grace is realized in full, by SpendSettled cause unsettled_expired and a settlement_missing ambiguity in one decision', () => {
    const g = admitted(tree(), 'r1');
    const decision = when(g, sweep('r1'));
    expect(decision.ok && decision.events.map((e) => [e.type, e.event_id])).toEqual([
      ['SpendSettled', `${hold('r1')}:unsettled-expired`],
      ['AmbiguityRecorded', `ambiguity:settlement_missing:${hold('r1')}:1:recorded`],
    ]);
    if (!decision.ok) return;
    expect(decision.events[0]!.data).toEqual({
      kind: 'reconcile_spend',
      hold_id: hold('r1'),
      actual_units: 100n,
      realized_units: 100n,
      overrun_units: 0n,
      hold_overrun_units: 0n,
      cause: 'unsettled_expired',
      at_ms: DUE,
    });
    expect(decision.events[1]!.data).toEqual({
      ambiguity_id: `ambiguity:settlement_missing:${hold('r1')}:1`,
      kind: 'settlement_missing',
      hold_id: hold('r1'),
      event_id: `${hold('r1')}:unsettled-expired`,
      at_ms: DUE,
    });
    const after = run(g, sweep('r1'));
    for (const ref of [CHILD, ROOT])
      expect(usageOf(after.state, ref)).toEqual({
        invocation_count: 1,
        exposed_cost_units: 0n,
        realized_cost_units: 100n,
        overrun_cost_units: 0n,
      });
    expect(after.state.holds.get(hold('r1'))).toMatchObject({
      status: 'settled',
      settlement_cause: 'unsettled_expired',
    });
    expect(listMutations(after.state, CHILD, 1)[0]).toMatchObject({
      kind: 'reconcile_spend',
      realized_delta_units: 100n,
    });
  });

  it('B20 the sweep refuses a hold within its TTL and the grace, one never admitted, and one already settled', () => {
    const g = admitted(tree(), 'r1');
    expect(when(g, sweep('r1', DUE - 1))).toMatchObject({ ok: false, rejection: { code: 'hold_not_overdue' } });
    const captured = run(tree(), authorize('r2', 'child', { requested_cost: 10n }), {
      type: 'CaptureInvocation',
      hold_id: hold('r2'),
      now_ms: NOW,
    });
    expect(when(captured, sweep('r2'))).toMatchObject({ ok: false, rejection: { code: 'hold_not_admitted' } });
    const settled = run(g, { type: 'SettleHold', hold_id: hold('r1'), outcome: completed(40n), now_ms: NOW });
    expect(when(settled, sweep('r1'))).toMatchObject({ ok: false, rejection: { code: 'hold_already_settled' } });
    expect(when(run(g, sweep('r1')), sweep('r1'))).toMatchObject({
      ok: false,
      rejection: { code: 'hold_already_settled' },
    });
  });
});

describe('a late settlement corrects it by a further event (ADR 0047)', () => {
  it('B21 a late completed outcome with a smaller cost moves realized spend to the cost by SpendCorrected and resolves the ambiguity; the sweep event stays', () => {
    const g = run(admitted(tree(), 'r1'), sweep('r1'));
    const decision = when(g, correct('r1', completed(30n)));
    expect(decision.ok && decision.events.map((e) => [e.type, e.event_id])).toEqual([
      ['SpendCorrected', `${hold('r1')}:correct-spend`],
      ['AmbiguityResolved', `ambiguity:settlement_missing:${hold('r1')}:1:resolved`],
    ]);
    if (!decision.ok) return;
    expect(decision.events[0]!.data).toEqual({
      kind: 'correct_spend',
      hold_id: hold('r1'),
      outcome: 'completed',
      actual_units: 30n,
      previous_realized_units: 100n,
      realized_units: 30n,
      hold_overrun_units: 0n,
      invocation_delta: 0,
      at_ms: DUE + 5_000,
    });
    expect(decision.events[1]!.data).toMatchObject({ resolution: 'settlement_reported_completed' });
    const after = run(g, correct('r1', completed(30n)));
    for (const ref of [CHILD, ROOT]) expect(usageOf(after.state, ref)).toMatchObject({ realized_cost_units: 30n });
    expect(listMutations(after.state, CHILD, 2).map((m) => [m.kind, m.realized_delta_units])).toEqual([
      ['correct_spend', -70n],
      ['reconcile_spend', 100n],
    ]);
    expect([...after.state.ambiguities.values()][0]!.resolution).toBe('settlement_reported_completed');
    expect(when(after, correct('r1', completed(10n)))).toMatchObject({
      ok: false,
      rejection: { code: 'hold_already_settled' },
    });
  });

  it('B21 a late not_dispatched gives back the spend and the invocation; a late failed_after_dispatch keeps the whole exposure spent (B5)', () => {
    const g = run(admitted(tree(), 'r1'), sweep('r1'));
    const never = run(g, correct('r1', { kind: 'not_dispatched', reason: 'lost' }));
    expect(usageOf(never.state, CHILD)).toEqual({
      invocation_count: 0,
      exposed_cost_units: 0n,
      realized_cost_units: 0n,
      overrun_cost_units: 0n,
    });
    expect(spendOf(never.state, 'root')).toEqual({ invocation_count: 0, committed_units: 0n, overrun_units: 0n });
    const failed = when(g, correct('r1', { kind: 'failed_after_dispatch', failure: 'deadline' }));
    expect(failed).toMatchObject({
      ok: true,
      events: [{ data: { outcome: 'failed_after_dispatch', realized_units: 100n, invocation_delta: 0 } }, {}],
    });
    expect(
      usageOf(run(g, correct('r1', { kind: 'failed_after_dispatch', failure: 'deadline' })).state, CHILD),
    ).toMatchObject({ invocation_count: 1, realized_cost_units: 100n });
  });

  it('B19 a late cost beyond the hold is booked whole as an overrun with its BudgetOverrun fact; a cost in another currency is refused', () => {
    const g = run(admitted(tree(), 'r1'), sweep('r1'));
    const decision = when(g, correct('r1', completed(350n)));
    expect(decision.ok && decision.events.map((e) => e.type)).toEqual([
      'SpendCorrected',
      'BudgetOverrun',
      'AmbiguityResolved',
    ]);
    expect(decision.ok && decision.events[1]!.data).toMatchObject({
      capability_id: 'child',
      realized_units: 350n,
      hold_overrun_units: 250n,
      committed_units: 350n,
      limit_units: 300n,
    });
    const after = run(g, correct('r1', completed(350n)));
    expect(usageOf(after.state, CHILD)).toMatchObject({ realized_cost_units: 350n, overrun_cost_units: 250n });
    expect(when(after, authorize('r2', 'child', { requested_cost: 1n }))).toMatchObject({
      ok: false,
      rejection: { code: 'budget_overrun' },
    });
    expect(when(g, correct('r1', completed(30n, 'EUR')))).toMatchObject({
      ok: false,
      rejection: { code: 'currency_mismatch' },
    });
  });

  it('B21 a hold the orchestrator settled on time is never corrected, and a correction of a hold the sweep did not settle is an assertion in evolve', () => {
    const g = admitted(tree(), 'r1');
    expect(when(g, correct('r1', completed(30n)))).toMatchObject({
      ok: false,
      rejection: { code: 'hold_not_overdue' },
    });
    const onTime = run(g, { type: 'SettleHold', hold_id: hold('r1'), outcome: completed(40n), now_ms: NOW });
    expect(when(onTime, correct('r1', completed(30n)))).toMatchObject({
      ok: false,
      rejection: { code: 'hold_already_settled' },
    });
    const swept = run(g, sweep('r1'));
    const decided = when(swept, correct('r1', completed(30n)));
    if (!decided.ok) throw new Error('correction rejected');
    const bogus = { ...decided.events[0]!, commit_index: onTime.state.last_commit_index + 1 } as RecordedBudgetEvent;
    expect(() => evolve(onTime.state, bogus)).toThrow(AssertionError);
  });

  it('B21 a replay of the sweep and the correction rebuilds the same state', () => {
    const g = run(run(admitted(tree(), 'r1'), sweep('r1')), correct('r1', completed(30n)));
    expect(fold(g.recorded, initialState())).toEqual(g.state);
  });
});
