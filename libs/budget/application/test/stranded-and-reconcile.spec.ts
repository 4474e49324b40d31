// Proves ADR 0059 on a real JetStream stream: every hold a run leaves behind is finished by the
// reconciler or the sweep of stranded holds (B20, B21): a settlement's unconfirmed capture or
// zero-amount release is completed from the rail's state, an admitted hold is never given back
// by the reconciler, a hold the reconciler closes has its lease released, a capture stranded
// under a command answered deny is unwound, and a lease left by a run that died is released.
import { afterEach, describe, expect, it } from '@jest/globals';
import type { BudgetCommand, TreeState } from '@tally/budget-domain';
import { TreeStore } from '@tally/budget-application';
import { AuthorityFixture, DyingStore, LIMITS, MONETARY, holdOf } from './authority.fixture.js';

/** The tree as the stream holds it, and a way to append a fact to it as another run would. */
function streamOf(f: AuthorityFixture) {
  const trees = new TreeStore(f.store, (root) => f.names.budgetEventSubject(root), { nowMs: () => f.nowMs }, LIMITS);
  return {
    read: (root: string): Promise<TreeState> => trees.read(root),
    append: (root: string, facts: BudgetCommand[]) => trees.step(root, () => facts),
  };
}

describe('ADR 0059: every hold left behind is finished (B20, B21)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('F3 B21 a completed settlement at cost 0 whose release failed is resolved: the reconciler releases the authorization the rail still holds', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const admitted = await f.admit('r-zero', cap);
    f.rail.configureReference('r-zero', { release: 'fail' });
    const settled = await f.settle(admitted.hold_id!, { kind: 'completed', cost_units: 0n, currency: 'USD' });
    expect(settled.receipt.metadata.financial['payment_capture_status']).toBe('failed');
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 0n });
    expect(await f.rail.settlementState('r-zero')).toMatchObject({ state: 'authorized' });
    // While the rail still refuses, the ambiguity stays open; once it releases, the reconciler resolves it.
    expect(await f.authority.reconcile(cap.root_id)).toEqual([expect.objectContaining({ resolution: undefined })]);
    f.rail.configureReference('r-zero', { release: 'release' });
    expect(await f.authority.reconcile(cap.root_id)).toEqual([
      expect.objectContaining({ resolution: 'payment_capture_released' }),
    ]);
    expect(await f.rail.settlementState('r-zero')).toMatchObject({ state: 'released' });
    const hold = (await streamOf(f).read(cap.root_id)).holds.get(admitted.hold_id!)!;
    expect(hold.payment.status).toBe('released');
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 0n });
    expect(await f.authority.reconcile(cap.root_id)).toEqual([]);
  });

  it('B4 B21 a settlement whose capture did not happen is captured by the reconciler for the amount the ledger booked, once', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const admitted = await f.admit('r-capture', cap);
    f.rail.configureReference('r-capture', { capture: 'fail' });
    await f.settle(admitted.hold_id!, { kind: 'completed', cost_units: 40n, currency: 'USD' });
    expect(await f.rail.settlementState('r-capture')).toMatchObject({ state: 'authorized' });
    f.rail.configureReference('r-capture', { capture: 'settle' });
    const captures = f.rail.counters.capture;
    expect(await f.authority.reconcile(cap.root_id)).toEqual([
      expect.objectContaining({ resolution: 'payment_capture_completed' }),
    ]);
    expect(f.rail.counters.capture).toBe(captures + 1);
    expect(await f.rail.settlementState('r-capture')).toMatchObject({ state: 'captured' });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 40n });
    expect(await f.authority.reconcile(cap.root_id)).toEqual([]);
  });

  it('F1 B20 B21 the reconciler never gives back an admitted hold: a payment ambiguity a losing run recorded on it leaves the dispatched hold and its payment alone', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const admitted = await f.admit('r-admitted', cap);
    expect(admitted.verdict).toBe('allow');
    // What a second run of the same request records when its own payment answer is lost (the model's F1 and F2 shapes).
    const stream = streamOf(f);
    const ambiguity = { type: 'RecordAmbiguity', kind: 'payment_authorization', hold_id: admitted.hold_id! } as const;
    await stream.append(cap.root_id, [{ ...ambiguity, reference: 'r-admitted', now_ms: f.nowMs }]);
    expect(await f.authority.reconcile(cap.root_id)).toEqual([
      expect.objectContaining({ resolution: 'payment_authorization_hold_admitted' }),
    ]);
    expect(f.rail.counters.release).toBe(0);
    expect(await f.rail.settlementState('r-admitted')).toMatchObject({ state: 'authorized' });
    expect((await stream.read(cap.root_id)).holds.get(admitted.hold_id!)).toMatchObject({
      status: 'captured',
      admitted: true,
    });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
    // Its settlement still captures the payment.
    await f.settle(admitted.hold_id!, { kind: 'completed', cost_units: 30n, currency: 'USD' });
    expect(await f.rail.settlementState('r-admitted')).toMatchObject({ state: 'captured' });
  });

  it('ADR 0059 a hold the reconciler cancels has its runtime lease released, as the expiry sweep releases an expired hold’s', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const command = f.admitCommand('r-leased', cap);
    const dying = f.newAuthority({ store: new DyingStore(f.store, 'InvocationCaptured') });
    await expect(dying.admit(command)).rejects.toThrow(/killed/);
    const holdId = holdOf('r-leased', cap);
    const stream = streamOf(f);
    expect((await stream.read(cap.root_id)).holds.get(holdId)).toMatchObject({
      status: 'captured',
      lease_released: false,
    });
    // The run's capture acknowledgement was lost and it recorded the ambiguity before it died.
    await stream.append(cap.root_id, [
      { type: 'RecordAmbiguity', kind: 'invocation_capture', hold_id: holdId, reference: 'r-leased', now_ms: f.nowMs },
    ]);
    const releases = f.hook.releases;
    expect(await f.authority.reconcile(cap.root_id)).toEqual([
      expect.objectContaining({ resolution: 'capture_committed_cancelled' }),
    ]);
    expect(f.hook.releases).toBe(releases + 1);
    expect((await stream.read(cap.root_id)).holds.get(holdId)).toMatchObject({
      status: 'cancelled',
      lease_released: true,
    });
  });

  it("B20 ADR 0058 a re-sent Admit on a replica whose cache predates its command's deny takes no hold: it answers that deny", async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_invocations: 1 }]);
    const first = await f.admit('r-first', cap);
    const command = f.admitCommand('r-late', cap);
    const stale = f.newAuthority({ store: new DyingStore(f.store, 'InvocationCaptured') });
    await stale.usage(cap.id);
    const denied = await f.authority.admit(command);
    expect(denied).toMatchObject({ verdict: 'deny' });
    await f.settle(first.hold_id!, { kind: 'not_dispatched', reason: 'worker moved on' });
    expect(await stale.admit(command)).toMatchObject({ verdict: 'deny', reason: denied.reason });
    expect((await streamOf(f).read(cap.root_id)).requests.has('r-late')).toBe(false);
    expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
  });

  it('B20 ADR 0059 a hold captured by a run that died, under a command another run answered deny (as a release before ADR 0058 could leave it, the deny written raw), is unwound by the sweep of stranded holds: capture cancelled, lease released', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_invocations: 1 }]);
    const command = f.admitCommand('r-late', cap);
    // A run captures, then dies before its answer.
    const dying = f.newAuthority({ store: new DyingStore(f.store, 'InvocationCaptured') });
    await expect(dying.admit(command)).rejects.toThrow(/killed/);
    // Its command answered deny regardless, as a release before ADR 0058 could record it (that
    // release did not refuse a deny while the command's own capture stood): the raw fact.
    await streamOf(f).append(cap.root_id, [
      {
        type: 'RecordReceipt',
        receipt_id: `receipt:${cap.id}:${command.command_id}`,
        command_id: command.command_id,
        request_id: 'r-late',
        receipt: { kind: 'admission', verdict: 'deny', reason: 'authorize unconfirmed', request_id: 'r-late' },
        signature: 'not-checked-by-the-ledger',
        key_id: 'ed25519-test',
        now_ms: f.nowMs,
      },
    ]);
    const holdId = holdOf('r-late', cap);
    const stream = streamOf(f);
    expect((await stream.read(cap.root_id)).holds.get(holdId)).toMatchObject({ status: 'captured', admitted: false });
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
    const sweeper = f.newAuthority();
    // Not before its TTL: a live run may still be unwinding it.
    expect(await sweeper.unwindStranded([cap.root_id])).toEqual([]);
    f.nowMs += LIMITS.holdTtlMs;
    // Neither the expiry sweep nor the reconciler ends a captured hold with no ambiguity.
    await sweeper.expireHolds([cap.root_id]);
    expect(await sweeper.reconcile(cap.root_id)).toEqual([]);
    const releases = f.hook.releases;
    expect(await sweeper.unwindStranded([cap.root_id])).toEqual([
      { root_id: cap.root_id, cancelled_hold_ids: [holdId], leases_released: 1 },
    ]);
    expect(f.hook.releases).toBe(releases + 1);
    expect((await stream.read(cap.root_id)).holds.get(holdId)).toMatchObject({
      status: 'cancelled',
      lease_released: true,
    });
    expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
    expect(await sweeper.unwindStranded([cap.root_id])).toEqual([]);
  });

  it('B20 ADR 0059 a lease left reserved by a run that died between rolling back its hold and releasing the lease is released by the sweep', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    f.rail.configureReference('r-declined', { authorize: 'decline' });
    const dying = f.newAuthority({ store: new DyingStore(f.store, 'CaptureCancelled') });
    await expect(dying.admit(f.admitCommand('r-declined', cap))).rejects.toThrow(/killed/);
    const holdId = holdOf('r-declined', cap);
    const stream = streamOf(f);
    expect((await stream.read(cap.root_id)).holds.get(holdId)).toMatchObject({
      status: 'cancelled',
      lease_released: false,
    });
    const sweeper = f.newAuthority();
    expect(await sweeper.unwindStranded([cap.root_id])).toEqual([]);
    f.nowMs += LIMITS.holdTtlMs;
    const releases = f.hook.releases;
    expect(await sweeper.unwindStranded([cap.root_id])).toEqual([
      { root_id: cap.root_id, cancelled_hold_ids: [], leases_released: 1 },
    ]);
    expect(f.hook.releases).toBe(releases + 1);
    expect((await stream.read(cap.root_id)).holds.get(holdId)).toMatchObject({ lease_released: true });
    expect(await sweeper.unwindStranded([cap.root_id])).toEqual([]);
  });
});
