// Proves that the ledger answers a re-sent command id (issue 13): the recorded receipt is the answer on any replica, two replicas running one command at once converge on one receipt, and a run that stopped after its capture is finished by the retry.
import { afterEach, describe, expect, it } from '@jest/globals';
import { AuthorityFixture, DyingStore, MONETARY, holdOf } from './authority.fixture.js';

describe('the ledger answers re-sent commands', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('issue 13: a command id re-sent after its reply was lost gets the recorded answer from another replica, and nothing is appended', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const command = f.admitCommand('resend-1', cap);
    const first = await f.authority.admit(command);
    expect(first.verdict).toBe('allow');
    const before = (await f.store.load(f.names.budgetEventSubject(cap.root_id))).lastSequence;
    // Another replica, with nothing cached, answers the re-send from the tree's receipt for the command id.
    const again = await f.newAuthority().admit(command);
    expect(again).toEqual(first);
    const settle = {
      command_id: 'settle-resend-1',
      hold_id: first.hold_id!,
      outcome: { kind: 'not_dispatched' as const, reason: 'x' },
      authorization: { kind: 'admission_proof' as const, proof: first.admission_proof! },
    };
    const settled = await f.authority.settle(settle);
    expect(await f.newAuthority().settle(settle)).toEqual(settled);
    const after = (await f.store.load(f.names.budgetEventSubject(cap.root_id))).lastSequence;
    expect(after).toBeGreaterThan(before);
    expect(await f.newAuthority().admit(command)).toEqual(first);
    expect((await f.store.load(f.names.budgetEventSubject(cap.root_id))).lastSequence).toBe(after);
    expect(f.rail.counters.authorize).toBe(1);
  });

  it('issue 13: one command arriving at two replicas at once converges on one receipt, one capture and one payment authorization', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const command = f.admitCommand('twice-at-once', cap);
    // Both runs reach the hook before either captures, like a retry that overtakes a slow first run.
    f.hook.barrier = { size: 2, waiting: [] };
    const [a, b] = await Promise.all([f.newAuthority().admit(command), f.newAuthority().admit(command)]);
    expect(a.verdict).toBe('allow');
    expect(b).toEqual(a);
    const state = await f.newAuthority().treeState(cap.root_id);
    const hold = state.holds.get(holdOf('twice-at-once', cap))!;
    expect(hold).toMatchObject({ status: 'captured', admitted: true });
    expect(await f.kinds(cap)).toEqual(['capture_invocation', 'authorize_exposure']);
    expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
    // The rail is idempotent by request id: whichever run asked, there is one authorization, the admitted one.
    expect(await f.rail.settlementState('twice-at-once')).toMatchObject({ state: 'authorized' });
    expect(hold.payment.authorization_id).toBe(a.admission_proof!.claims.payment_authorization_id);
    // The run that lost released its own lease; the winner's stays with the hold until it settles.
    expect(f.hook.reserves - f.hook.releases).toBe(1);
  });

  for (const afterType of ['HoldAuthorized', 'InvocationCaptured']) {
    it(`issue 13: a replica killed after its ${afterType} append leaves a hold the retried command id finishes: one capture, one allow, retries agree`, async () => {
      f = await AuthorityFixture.start();
      const cap = await f.issue([MONETARY]);
      const command = f.admitCommand(`killed-${afterType}`, cap);
      const dying = f.newAuthority({ store: new DyingStore(f.store, afterType) });
      await expect(dying.admit(command)).rejects.toThrow(/killed/);
      expect(f.rail.counters.authorize).toBe(0);
      const restarted = f.newAuthority();
      const retried = await restarted.admit(command);
      expect(retried).toMatchObject({ verdict: 'allow', dispatch: true, hold_id: holdOf(`killed-${afterType}`, cap) });
      expect(restarted.verifyAdmissionProof(retried.admission_proof!)).toBe(true);
      expect(await f.newAuthority().admit(command)).toEqual(retried);
      expect(await f.kinds(cap)).toEqual(['capture_invocation', 'authorize_exposure']);
      expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
      expect(f.rail.counters.authorize).toBe(1);
      // A different command with the same request id is still a replay (B7), not a resumption.
      expect(await restarted.admit(f.admitCommand(`killed-${afterType}`, cap))).toMatchObject({
        verdict: 'deny',
        reason: 'monetary invocation was already dispatched',
      });
    });
  }
});
