// Proves the hold lifecycle of B1-B9 by driving the BudgetAuthority facade against a real JetStream stream.
import { afterEach, describe, expect, it } from '@jest/globals';
import { AuthorityFixture, CONTEXTS, MONETARY, holdOf } from './authority.fixture.js';

describe('budget authority lifecycle (B1-B9)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('B1 B2 authorize appends {hold}:authorize, capture {hold}:capture-invocation:{index} precedes payment, and both commit indexes are signed', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const decision = await f.admit('req-happy', cap);
    expect(decision).toMatchObject({
      verdict: 'allow',
      dispatch: true,
      hold_id: holdOf('req-happy', cap),
      grant_index: 0,
    });
    const budget = decision.receipt.metadata.budget_authority as Record<string, Record<string, unknown>>;
    const authorizeIndex = budget['authorize']!['budget_commit_index'] as number;
    expect(budget['authorize']!['event_id']).toBe(`${holdOf('req-happy', cap)}:authorize`);
    expect(budget['invocation_capture']).toMatchObject({
      event_id: `${holdOf('req-happy', cap)}:capture-invocation:${authorizeIndex}`,
      budget_commit_index: expect.any(Number),
    });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
    expect(f.rail.counters.authorize).toBe(1);
    expect(await f.kinds(cap)).toEqual(['capture_invocation', 'authorize_exposure']);
    expect(f.authority.verifyAdmissionProof(decision.admission_proof!)).toBe(true);
  });

  it('B1 a requested cost becomes the exposure and the limits hold: max_invocations and max_total_cost_units', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_invocations: 2, max_total_cost_units: 150n }]);
    expect((await f.admit('r1', cap, { requested_cost: 100n })).verdict).toBe('allow');
    expect(await f.admit('r2', cap, { requested_cost: 60n })).toMatchObject({
      verdict: 'deny',
      reason: 'budget exhausted',
    });
    expect((await f.admit('r3', cap, { requested_cost: 50n })).verdict).toBe('allow');
    expect(await f.admit('r4', cap, { requested_cost: 0n })).toMatchObject({
      verdict: 'deny',
      reason: 'max invocations reached',
    });
    expect(await f.usage(cap)).toEqual({ invocations: 2, committed: 150n });
  });

  it('B2 B7 an exact replay of a captured request is denied as already dispatched and never falls through to an unlimited grant', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY, { server_id: 'cost-srv', tool_name: 'compute' }]);
    expect((await f.admit('req-replay', cap)).verdict).toBe('allow');
    const replay = await f.admit('req-replay', cap);
    expect(replay).toMatchObject({ verdict: 'deny', reason: 'monetary invocation was already dispatched' });
    expect(f.rail.counters.authorize).toBe(1);
    expect(await f.usage(cap, 1)).toEqual({ invocations: 0, committed: 0n });
  });

  it('B3 Declined and InsufficientFunds cancel the capture before dispatch; Unavailable and a lost rail ack retain it and are ambiguous', async () => {
    f = await AuthorityFixture.start();
    for (const behaviour of ['decline', 'insufficient_funds', 'unavailable', 'rail_error'] as const) {
      const cap = await f.issue([MONETARY]);
      const request = `req-payment-${behaviour}`;
      f.rail.configureReference(request, { authorize: behaviour });
      const before = f.rail.counters.authorize;
      const decision = await f.admit(request, cap);
      expect(decision.verdict).toBe('deny');
      expect(f.rail.counters.authorize - before).toBe(1);
      const budget = decision.receipt.metadata.budget_authority as Record<string, Record<string, unknown>>;
      expect(budget['invocation_capture']!['event_id']).toBe(
        `${holdOf(request, cap)}:capture-invocation:${budget['authorize']!['budget_commit_index']}`,
      );
      if (behaviour === 'decline' || behaviour === 'insufficient_funds') {
        expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
        expect(await f.kinds(cap)).toContain('cancel_captured_before_dispatch');
      } else {
        expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
        expect(decision.receipt.metadata.financial['payment_authorization_ambiguous']).toBe(true);
      }
    }
  });

  it('B4 completed settles reconcile = min(actual, exposed) and captures the actual amount; zero releases; a failed rail capture says failed', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const a = await f.admit('req-settle-a', cap);
    const settled = await f.settle(a.hold_id!, { kind: 'completed', cost_units: 40n });
    expect(settled.receipt).toMatchObject({
      verdict: 'allow',
      settlement: 'completed',
      metadata: { budget_authority: { terminal: { kind: 'reconcile_spend', realized_units: 40 } } },
    });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 40n });
    expect(f.rail.counters.capture).toBe(1);
    const b = await f.admit('req-settle-b', cap);
    await f.settle(b.hold_id!, { kind: 'completed', cost_units: 0n });
    expect(f.rail.counters.release).toBe(1);
    const c = await f.admit('req-settle-c', cap);
    f.rail.configureReference('req-settle-c', { capture: 'fail' });
    expect((await f.settle(c.hold_id!, { kind: 'completed', cost_units: 10n })).receipt.settlement).toBe('failed');
    expect(await f.kinds(cap)).toEqual(expect.arrayContaining(['reconcile_spend']));
  });

  it('B4 a prepaid-final payment records the full charge (capture_spend)', async () => {
    f = await AuthorityFixture.start({ rail: { mode: 'prepaid_final' } });
    const cap = await f.issue([MONETARY]);
    const a = await f.admit('req-prepaid', cap);
    const settled = await f.settle(a.hold_id!, { kind: 'completed', cost_units: 30n });
    expect(settled.receipt.metadata.budget_authority).toMatchObject({
      terminal: { kind: 'capture_spend', realized_units: 100 },
    });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
  });

  for (const [label, context] of CONTEXTS) {
    it(`B5 every failed_after_dispatch kind keeps invocation, exposure and payment, and a fresh request id is then denied (${label})`, async () => {
      f = await AuthorityFixture.start();
      for (const failure of ['cancellation', 'deadline', 'incomplete', 'generic', 'tool_not_registered'] as const) {
        const cap = await f.issue([{ ...MONETARY, max_invocations: 1 }]);
        const request = `req-monetary-${label}-${failure}`;
        const first = await f.admit(request, cap, { context });
        expect(first.verdict).toBe('allow');
        const settled = await f.settle(first.hold_id!, { kind: 'failed_after_dispatch', failure });
        expect(settled.receipt).toMatchObject({ verdict: 'deny', settlement: 'retained' });
        const fresh = await f.admit(`${request}-fresh`, cap, { context });
        expect(fresh.verdict).toBe('deny');
        expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
      }
      expect(f.rail.counters).toMatchObject({ authorize: 5, release: 0, refund: 0 });
    });
  }

  it('B6 elicitation_required after the side effect releases everything; one deny receipt keeps the message; a replay adds no authorization; a fresh id runs again', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_invocations: 1 }]);
    const first = await f.admit('req-url', cap);
    const message = 'URL elicitation required before dispatch side effect';
    const settled = await f.settle(first.hold_id!, { kind: 'elicitation_required', message });
    expect(settled.receipt).toMatchObject({ verdict: 'deny', reason: message, settlement: 'released' });
    expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
    expect(f.rail.counters).toMatchObject({ authorize: 1, release: 1 });
    const denies = (await f.authority.receipts(cap.root_id)).filter((r) => r.verdict === 'deny');
    expect(denies).toHaveLength(1);
    expect((await f.admit('req-url', cap)).verdict).toBe('deny');
    expect(f.rail.counters.authorize).toBe(1);
    const fresh = await f.admit('req-url-fresh', cap);
    expect(fresh.verdict).toBe('allow');
    await f.settle(fresh.hold_id!, { kind: 'elicitation_required', message });
    expect(f.rail.counters).toMatchObject({ authorize: 2, release: 2 });
  });

  it('B8 two identical requests at once: one allow, one payment, the loser releases its lease before the payment completes, and a sibling is admitted after', async () => {
    f = await AuthorityFixture.start({
      rail: { mode: 'reversible_hold', behaviour: { authorize: 'block_until_released' } },
    });
    const root = await f.issue([{ ...MONETARY, max_total_cost_units: 200n }]);
    const childA = await f.issue([{ ...MONETARY, max_total_cost_units: 100n }], {
      parent_id: root.id,
      budget_share_units: 100n,
    });
    const childB = await f.issue([{ ...MONETARY, max_total_cost_units: 100n }], {
      parent_id: root.id,
      budget_share_units: 100n,
    });
    f.hook.barrier = { size: 2, waiting: [] };
    const both = [f.admit('req-concurrent', childA), f.admit('req-concurrent', childA)];
    await waitFor(() => f.rail.counters.authorize === 1 && f.hook.releases === 1);
    expect(f.hook.releases).toBe(1);
    f.rail.releaseBlockedAuthorizations();
    const verdicts = (await Promise.all(both)).map((d) => d.verdict).sort();
    expect(verdicts).toEqual(['allow', 'deny']);
    expect(f.rail.counters.authorize).toBe(1);
    expect(f.hook).toMatchObject({ reserves: 2, releases: 1 });
    f.hook.barrier = undefined;
    expect((await f.admit('req-sibling', childB)).verdict).toBe('allow');
  });

  it('B9 pre-dispatch unwind needs Released or Refunded: a pending release keeps the authorization and usage and writes no exposure reversal', async () => {
    f = await AuthorityFixture.start({ rail: { mode: 'reversible_hold', behaviour: { release: 'pending' } } });
    const cap = await f.issue([MONETARY]);
    const a = await f.admit('req-predispatch-unwind-pending', cap);
    const settled = await f.settle(a.hold_id!, { kind: 'not_dispatched', reason: 'worker lost' });
    expect(settled.receipt.metadata.financial).toMatchObject({
      payment_release_unconfirmed: true,
      payment_authorization_retained: true,
      payment_release_status: 'pending',
    });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
    expect(await f.kinds(cap)).not.toContain('reverse_exposure');
    expect(await f.kinds(cap)).not.toContain('cancel_captured_before_dispatch');
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}
