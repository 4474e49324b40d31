// Proves the hold lifecycle of the delegation-tree decider, as given events / when command / then events.
import { describe, expect, it } from '@jest/globals';
import { AssertionError, evolve, listMutations, usageOf, type BudgetCommand } from '../src/index.js';
import {
  HOUR,
  MONETARY,
  NOW,
  UNLIMITED,
  authorize,
  given,
  issue,
  run,
  standardTree,
  types,
  when,
} from './tree.fixture.js';

const hold = (req: string, cap = 'root', grant = 0) => `budget-hold:${req}:${cap}:${grant}`;
const capture = (holdId: string): BudgetCommand => ({ type: 'CaptureInvocation', hold_id: holdId, now_ms: NOW });
const root = () => run(given([]), issue('root', [MONETARY, UNLIMITED]));

describe('hold decider', () => {
  it('B1 authorize appends {hold_id}:authorize and reserves one invocation and max_cost_per_invocation when no cost is requested', () => {
    const decision = when(root(), authorize('r1', 'root'));
    expect(decision.ok && decision.events[0]).toMatchObject({
      type: 'HoldAuthorized',
      event_id: `${hold('r1')}:authorize`,
      data: { kind: 'authorize_exposure', exposure_units: 100n },
    });
    const g = run(root(), authorize('r1', 'root'));
    expect(usageOf(g.state, { capability_id: 'root', grant_index: 0 })).toEqual({
      invocation_count: 1,
      exposed_cost_units: 100n,
      realized_cost_units: 0n,
      overrun_cost_units: 0n,
    });
    expect(g.state.holds.get(hold('r1'))?.authorize_commit_index).toBe(2);
  });

  it('B1 a requested cost within max_cost_per_invocation is the exposure; above it the request is refused', () => {
    const g = run(root(), authorize('r1', 'root', { requested_cost: 40n }));
    expect(g.state.holds.get(hold('r1'))?.exposure_units).toBe(40n);
    const over = when(root(), authorize('r2', 'root', { requested_cost: 101n, tool_name: 'compute' }));
    // The monetary grant refuses 101; the request falls to the unlimited grant of the same tool.
    expect(over.ok && over.events[0]?.data).toMatchObject({ grant_index: 1, exposure_units: 0n });
  });

  it('B1 authorize stays within max_invocations and max_total_cost_units', () => {
    let g = run(given([]), issue('root', [{ ...MONETARY, max_invocations: 2, max_total_cost_units: 150n }]));
    g = run(g, authorize('r1', 'root', { requested_cost: 100n }));
    expect(when(g, authorize('r2', 'root', { requested_cost: 60n }))).toMatchObject({
      ok: false,
      rejection: { code: 'total_cost_limit_reached' },
    });
    g = run(g, authorize('r2', 'root', { requested_cost: 50n }));
    expect(when(g, authorize('r3', 'root', { requested_cost: 0n }))).toMatchObject({
      ok: false,
      rejection: { code: 'max_invocations_reached' },
    });
  });

  it('B2 capture is {hold}:capture-invocation:{authorize_commit_index} and happens at most once per hold', () => {
    const g = run(root(), authorize('r1', 'root'));
    const decision = when(g, capture(hold('r1')));
    expect(decision.ok && decision.events[0]?.event_id).toBe(`${hold('r1')}:capture-invocation:2`);
    const captured = run(g, capture(hold('r1')));
    expect(when(captured, capture(hold('r1')))).toMatchObject({
      ok: false,
      rejection: { code: 'already_dispatched', message: 'monetary invocation was already dispatched' },
    });
  });

  it('B7 an exact replay of a captured request is denied and never falls through to the unlimited grant', () => {
    const g = run(root(), authorize('r1', 'root'), capture(hold('r1')));
    expect(when(g, authorize('r1', 'root'))).toMatchObject({ ok: false, rejection: { code: 'already_dispatched' } });
  });

  it('B8 a concurrent identical request sees the same authorized hold and adds nothing', () => {
    const g = run(root(), authorize('r1', 'root'));
    expect(when(g, authorize('r1', 'root'))).toEqual({ ok: true, events: [] });
  });

  it('B3 a cancellation before dispatch returns usage to 0/0 with kind cancel_captured_before_dispatch', () => {
    const g = run(root(), authorize('r1', 'root'), capture(hold('r1')), {
      type: 'CancelCaptured',
      hold_id: hold('r1'),
      cause: 'payment_declined',
      now_ms: NOW,
    });
    expect(usageOf(g.state, { capability_id: 'root', grant_index: 0 })).toEqual({
      invocation_count: 0,
      exposed_cost_units: 0n,
      realized_cost_units: 0n,
      overrun_cost_units: 0n,
    });
    expect(listMutations(g.state, { capability_id: 'root', grant_index: 0 }, 10).map((m) => m.kind)).toEqual([
      'cancel_captured_before_dispatch',
      'capture_invocation',
      'authorize_exposure',
    ]);
    expect(g.recorded.at(-1)?.event_id).toBe(`${hold('r1')}:cancel-captured-before-dispatch:3`);
  });

  it('B13 a preflight reserves then reverses with a rollback event id and never increments', () => {
    const pre = `nonce-preflight-budget-hold:r1:root:0`;
    const g = run(root(), authorize('r1', 'root', { preflight: true }), {
      type: 'RollbackHold',
      hold_id: pre,
      cause: 'nonce_preflight',
      now_ms: NOW,
    });
    const kinds = listMutations(g.state, { capability_id: 'root', grant_index: 0 }, 10).map((m) => m.kind);
    expect(kinds).toEqual(['reverse_invocation', 'reserve_invocation']);
    const rollbackId = g.recorded.at(-1)!.event_id;
    expect(rollbackId.startsWith(`${pre}:authorize:`) && rollbackId.includes(':rollback:')).toBe(true);
    expect(when(g, authorize('r1', 'root', { preflight: true }))).toMatchObject({
      ok: false,
      rejection: { code: 'preflight_replayed' },
    });
    expect(when(g, authorize('r1', 'root')).ok).toBe(true);
  });

  it('B20 an uncaptured hold past its TTL is reversed; a captured one never expires', () => {
    const g = run(root(), authorize('r1', 'root'), authorize('r2', 'root'), capture(hold('r2')));
    const decision = when(g, { type: 'ExpireHolds', now_ms: NOW + 30_000, holds_max: 100 });
    expect(decision.ok && decision.events.map((e) => [e.type, (e.data as { hold_id: string }).hold_id])).toEqual([
      ['HoldReversed', hold('r1')],
    ]);
    expect(when(g, { type: 'ExpireHolds', now_ms: NOW + 29_999, holds_max: 100 })).toEqual({ ok: true, events: [] });
    expect(when(g, capture(hold('r1')))).toBeDefined();
    expect(when(run(g), { type: 'CaptureInvocation', hold_id: hold('r1'), now_ms: NOW + 30_000 })).toMatchObject({
      ok: false,
      rejection: { code: 'hold_expired' },
    });
  });

  it('B4 completed settles reconcile = min(actual, exposed); an overrun books the whole charge as capture_spend', () => {
    const admitted = (g: ReturnType<typeof root>, req: string) =>
      run(g, authorize(req, 'root'), capture(hold(req)), { type: 'AdmitInvocation', hold_id: hold(req), now_ms: NOW });
    let g = admitted(root(), 'r1');
    g = run(g, {
      type: 'SettleHold',
      hold_id: hold('r1'),
      outcome: { kind: 'completed', cost_units: 30n },
      now_ms: NOW,
    });
    expect(g.recorded.at(-1)?.data).toMatchObject({ kind: 'reconcile_spend', realized_units: 30n });
    g = admitted(g, 'r2');
    expect(
      types(
        when(g, {
          type: 'SettleHold',
          hold_id: hold('r2'),
          outcome: { kind: 'completed', cost_units: 5000n },
          now_ms: NOW,
        }),
      ),
    ).toEqual(['SpendSettled', 'BudgetOverrun']);
    g = run(g, {
      type: 'SettleHold',
      hold_id: hold('r2'),
      outcome: { kind: 'completed', cost_units: 5000n },
      now_ms: NOW,
    });
    expect(g.recorded.find((e) => e.type === 'SpendSettled' && e.data.hold_id === hold('r2'))?.data).toMatchObject({
      kind: 'capture_spend',
      realized_units: 5000n,
      overrun_units: 0n,
      hold_overrun_units: 4900n,
    });
    expect(usageOf(g.state, { capability_id: 'root', grant_index: 0 })).toEqual({
      invocation_count: 2,
      exposed_cost_units: 0n,
      realized_cost_units: 5030n,
      overrun_cost_units: 4900n,
    });
  });

  it('B5 failed_after_dispatch keeps everything; B6 elicitation releases everything', () => {
    const base = run(root(), authorize('r1', 'root'), capture(hold('r1')), {
      type: 'AdmitInvocation',
      hold_id: hold('r1'),
      now_ms: NOW,
    });
    const kept = run(base, {
      type: 'SettleHold',
      hold_id: hold('r1'),
      outcome: { kind: 'failed_after_dispatch', failure: 'deadline' },
      now_ms: NOW,
    });
    expect(usageOf(kept.state, { capability_id: 'root', grant_index: 0 })).toEqual({
      invocation_count: 1,
      exposed_cost_units: 100n,
      realized_cost_units: 0n,
      overrun_cost_units: 0n,
    });
    const released = run(base, {
      type: 'SettleHold',
      hold_id: hold('r1'),
      outcome: { kind: 'elicitation_required', message: 'm' },
      now_ms: NOW,
    });
    expect(usageOf(released.state, { capability_id: 'root', grant_index: 0 })).toEqual({
      invocation_count: 0,
      exposed_cost_units: 0n,
      realized_cost_units: 0n,
      overrun_cost_units: 0n,
    });
    expect(when(released, authorize('r1', 'root'))).toMatchObject({
      ok: false,
      rejection: { code: 'already_dispatched' },
    });
  });

  it('B19 a child spend counts against every ancestor and its delegated share', () => {
    let g = standardTree();
    g = run(g, authorize('a1-1', 'child-a1'), authorize('a1-2', 'child-a1'));
    expect(when(g, authorize('a1-3', 'child-a1', { requested_cost: 1n }))).toMatchObject({
      ok: false,
      rejection: { code: 'capability_budget_exhausted' },
    });
    expect(usageOf(g.state, { capability_id: 'root', grant_index: 0 }).exposed_cost_units).toBe(200n);
    expect(g.state.spend.get('child-a')?.committed_units).toBe(200n);
  });

  it('an invariant broken by a recorded event is an assertion, not a rejection', () => {
    const g = run(given([]), issue('root', [{ ...MONETARY, max_total_cost_units: 50n }]));
    const bogus = {
      type: 'HoldAuthorized' as const,
      event_id: 'x:authorize',
      commit_index: 2,
      data: {
        ...(
          when(run(given([]), issue('root', [MONETARY])), authorize('x', 'root')) as unknown as {
            events: [{ data: object }];
          }
        ).events[0].data,
        exposure_units: 100n,
      },
    };
    expect(() => evolve(g.state, bogus as never)).toThrow(AssertionError);
    expect(() => evolve(g.state, { ...bogus, commit_index: 1 } as never)).toThrow(AssertionError);
  });

  it('the events of one commit share its index and ascend by position; applying one twice is an assertion', () => {
    const g = root();
    const commit = g.state.last_commit_index + 1;
    const authorized = when(g, authorize('r1', 'root'));
    if (!authorized.ok) throw new Error('authorize rejected');
    const once = evolve(g.state, { ...authorized.events[0]!, commit_index: commit, commit_position: 0 });
    const captured = when({ state: once, recorded: [] }, capture(hold('r1')));
    if (!captured.ok) throw new Error('capture rejected');
    const both = evolve(once, { ...captured.events[0]!, commit_index: commit, commit_position: 1 });
    expect(both.holds.get(hold('r1'))).toMatchObject({
      status: 'captured',
      authorize_commit_index: commit,
      capture_commit_index: commit,
    });
    expect(() => evolve(both, { ...captured.events[0]!, commit_index: commit, commit_position: 1 })).toThrow(
      AssertionError,
    );
  });

  it('an expired or revoked capability cannot authorize', () => {
    const g = root();
    expect(when(g, authorize('r1', 'root', { now_ms: NOW + HOUR }))).toMatchObject({
      ok: false,
      rejection: { code: 'capability_expired' },
    });
    const revoked = run(g, { type: 'RevokeCapability', capability_id: 'root', now_ms: NOW });
    expect(when(revoked, authorize('r1', 'root'))).toMatchObject({
      ok: false,
      rejection: { code: 'capability_revoked' },
    });
  });
});
