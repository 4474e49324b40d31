// Proves B20 (expiry reverses uncaptured holds, never captured ones) and B21 (the reconciler resolves ambiguities from the stream and the rail, never on a guess).
import { afterEach, describe, expect, it } from '@jest/globals';
import { AuthorityFixture, LIMITS, MONETARY } from './authority.fixture.js';

describe('expiry and reconciliation (B20, B21)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('B20 an uncaptured hold past its TTL is reversed by a durable expiry event; a captured, dispatched hold never expires into a release', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const dispatched = await f.admit('r-dispatched', cap);
    expect(dispatched.verdict).toBe('allow');
    // An Admit whose process stops after authorizing: the admission hook never answers.
    f.hook.reserve = () => new Promise(() => undefined);
    void f.admit('r-crashed', cap);
    await waitFor(async () => (await f.usage(cap)).invocations === 2);
    f.nowMs += LIMITS.holdTtlMs;
    const sweeper = f.newAuthority();
    const expired = await sweeper.expireHolds([cap.root_id]);
    expect(expired).toEqual([{ root_id: cap.root_id, expired_hold_ids: [`budget-hold:r-crashed:${cap.id}:0`] }]);
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
    const events = (await f.authority.events(cap.id, { limit: 1 }))!;
    expect(events[0]).toMatchObject({ kind: 'reverse_exposure', hold_id: `budget-hold:r-crashed:${cap.id}:0` });
    expect(events[0]!.event_id).toContain(':expire');
    expect(await sweeper.expireHolds([cap.root_id])).toEqual([{ root_id: cap.root_id, expired_hold_ids: [] }]);
  });

  it('B21 a lost capture ack is resolved from the stream: the capture is there, no money was taken, so the budget comes back', async () => {
    f = await AuthorityFixture.start({ lostAck: { kinds: ['capture'], lossesMax: 1 } });
    const cap = await f.issue([MONETARY]);
    expect((await f.admit('r-lost-capture', cap)).reason).toBe('budget invocation capture could not be confirmed');
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
    const resolved = await f.authority.reconcile(cap.root_id);
    expect(resolved).toEqual([expect.objectContaining({ resolution: 'capture_committed_cancelled' })]);
    expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
    expect(f.rail.counters).toMatchObject({ authorize: 0, release: 0 });
    expect(await f.authority.reconcile(cap.root_id)).toEqual([]);
  });

  it('B21 an ambiguous payment authorization is resolved from the rail: money the rail did hold is released before the budget returns', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    f.rail.configureReference('r-held', { authorize: 'rail_error_after_commit' });
    f.rail.configureReference('r-nothing', { authorize: 'unavailable' });
    expect((await f.admit('r-held', cap)).receipt.metadata.financial['payment_authorization_ambiguous']).toBe(true);
    expect((await f.admit('r-nothing', cap)).receipt.metadata.financial['payment_authorization_ambiguous']).toBe(true);
    expect(await f.usage(cap)).toEqual({ invocations: 2, committed: 200n });
    const resolved = await f.authority.reconcile(cap.root_id);
    expect(resolved.map((r) => r.resolution)).toEqual(['payment_released_cancelled', 'payment_released_cancelled']);
    expect(f.rail.counters.release).toBe(1);
    expect(await f.rail.settlementState('r-held')).toMatchObject({ state: 'released' });
    expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
  });

  it('B21 a release the rail still reports as pending stays open: the reconciler never moves money or budget on a guess', async () => {
    f = await AuthorityFixture.start({ rail: { mode: 'reversible_hold', behaviour: { release: 'pending' } } });
    const cap = await f.issue([MONETARY]);
    const a = await f.admit('r-pending', cap);
    await f.settle(a.hold_id!, { kind: 'not_dispatched', reason: 'worker lost' });
    const before = f.rail.counters.release;
    expect(await f.authority.reconcile(cap.root_id)).toEqual([expect.objectContaining({ resolution: undefined })]);
    expect(f.rail.counters.release).toBe(before);
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
