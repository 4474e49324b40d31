// Proves B17-B18 and the command contract: one signed receipt per decision that a replay re-signs identically,
// idempotent command ids, usage and mutation listings, delegation through the facade, and fail-closed dispatch proofs.
import { afterEach, describe, expect, it } from '@jest/globals';
import { verifyWithPublicKey } from '@tally/budget-infrastructure';
import { AuthorityFixture, MONETARY } from './authority.fixture.js';

describe('receipts, usage and audit (B17, B18)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('B17 every decision on every path yields exactly one signed receipt, and replaying the stream re-signs each one identically', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_invocations: 3 }]);
    f.rail.configureReference('r-declined', { authorize: 'decline' });
    const decisions = [
      await f.admit('r-ok', cap),
      await f.admit('r-declined', cap),
      await f.admit('r-ok', cap),
      await f.admit('r-other-tool', cap, { tool_name: 'other' }),
    ];
    const settled = await f.settle(decisions[0]!.hold_id!, { kind: 'completed', cost_units: 10n });
    const receipts = await f.authority.receipts(cap.root_id);
    expect(receipts).toHaveLength(5);
    expect(new Set(receipts.map((r) => r.command_id)).size).toBe(5);
    for (const d of decisions) expect(receipts.find((r) => r.id === d.receipt.id)).toEqual(d.receipt);
    expect(receipts.at(-1)).toEqual(settled.receipt);
    const [key] = f.authority.keys();
    const replayed = await f.newAuthority().receipts(cap.root_id);
    expect(replayed).toEqual(receipts);
    for (const receipt of replayed) {
      const { signature, ...body } = receipt;
      expect(f.signer.sign(body)).toBe(signature);
      expect(verifyWithPublicKey(body, signature, key!.public_key)).toBe(true);
      expect(receipt.metadata).toHaveProperty('budget_authority');
      expect(receipt.metadata).toHaveProperty('financial');
    }
    expect(await f.authority.receipt(decisions[1]!.receipt.id)).toEqual(decisions[1]!.receipt);
  });

  it('a re-sent command id gets the original answer and changes nothing; a new command with an admitted request id is a replay', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const command = f.admitCommand('r-idem', cap);
    const first = await f.authority.admit(command);
    const sequence = (await f.authority.treeState(cap.root_id)).last_commit_index;
    const again = await f.newAuthority().admit(command);
    expect(again).toEqual(first);
    expect((await f.authority.treeState(cap.root_id)).last_commit_index).toBe(sequence);
    expect(f.rail.counters.authorize).toBe(1);
    expect((await f.admit('r-idem', cap)).verdict).toBe('deny');
  });

  it('a capability token that does not verify is denied with a receipt', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const forged = `${cap.token.slice(0, -4)}AAAA`;
    const decision = await f.admit('r-forged', cap, { token: forged });
    expect(decision).toMatchObject({ verdict: 'deny', reason: 'capability token is invalid' });
    expect(decision.receipt.signature).toEqual(expect.any(String));
  });

  it('B18 usage per (capability, grant) and mutation events newest first with a limit', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY, { server_id: 'srv-a', tool_name: 'read_file' }]);
    const a = await f.admit('r1', cap, { requested_cost: 30n });
    await f.settle(a.hold_id!, { kind: 'completed', cost_units: 20n });
    await f.admit('r2', cap, { server_id: 'srv-a', tool_name: 'read_file' });
    const usage = await f.authority.usage(cap.id);
    expect(usage!.grants).toEqual([
      {
        grant_index: 0,
        invocation_count: 1,
        exposed_cost_units: 0n,
        realized_cost_units: 20n,
        overrun_cost_units: 0n,
        committed_cost_units: 20n,
        currency: 'USD',
      },
      {
        grant_index: 1,
        invocation_count: 1,
        exposed_cost_units: 0n,
        realized_cost_units: 0n,
        overrun_cost_units: 0n,
        committed_cost_units: 0n,
        currency: null,
      },
    ]);
    const events = (await f.authority.events(cap.id, { grant_index: 0, limit: 2 }))!;
    expect(events.map((e) => e.kind)).toEqual(['reconcile_spend', 'capture_invocation']);
    expect(events[0]!.commit_index).toBeGreaterThan(events[1]!.commit_index);
    expect((await f.authority.events(cap.id, { limit: 10 }))!.map((e) => e.kind)).toEqual([
      'increment_invocation',
      'reserve_invocation',
      'reconcile_spend',
      'capture_invocation',
      'authorize_exposure',
    ]);
  });

  it('delegation only narrows, shares fit the parent, child spend counts against the parent, and revocation revokes descendants', async () => {
    f = await AuthorityFixture.start();
    const root = await f.issue([{ ...MONETARY, max_total_cost_units: 300n }]);
    const wider = await f.authority.issue({
      subject_public_key: 'k',
      ttl_seconds: 60,
      grants: [{ ...MONETARY, max_total_cost_units: 301n }],
      parent_id: root.id,
    });
    expect(wider).toMatchObject({ ok: false, rejection: { code: 'grant_not_narrowing' } });
    const later = await f.authority.issue({
      subject_public_key: 'k',
      ttl_seconds: 7200,
      grants: [MONETARY],
      parent_id: root.id,
    });
    expect(later).toMatchObject({ ok: false, rejection: { code: 'expiry_beyond_parent' } });
    const child = await f.issue([{ ...MONETARY, max_total_cost_units: 200n }], {
      parent_id: root.id,
      budget_share_units: 200n,
    });
    const grandchild = await f.issue([{ ...MONETARY, max_total_cost_units: 100n }], {
      parent_id: child.id,
      budget_share_units: 100n,
    });
    const tooMuch = await f.authority.issue({
      subject_public_key: 'k',
      ttl_seconds: 60,
      grants: [{ ...MONETARY, max_total_cost_units: 100n }],
      parent_id: root.id,
      budget_share_units: 101n,
    });
    expect(tooMuch).toMatchObject({ ok: false, rejection: { code: 'budget_share_exceeds_parent' } });
    expect((await f.admit('g1', grandchild)).verdict).toBe('allow');
    expect(await f.usage(root)).toEqual({ invocations: 1, committed: 100n });
    expect(await f.usage(child)).toEqual({ invocations: 1, committed: 100n });
    const revoked = await f.authority.revoke(child.id);
    expect(revoked).toMatchObject({ ok: true, value: { id: child.id, revoked_descendants: [grandchild.id] } });
    expect(await f.admit('g2', grandchild)).toMatchObject({ verdict: 'deny', reason: 'capability revoked' });
    expect((await f.admit('r1', root)).verdict).toBe('allow');
  });

  it('a monetary dispatch without a valid admission proof fails closed, whatever the caller claims', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const decision = await f.admit('r-proof', cap);
    const proof = decision.admission_proof!;
    expect(f.authority.verifyAdmissionProof(proof)).toBe(true);
    expect(f.authority.verifyAdmissionProof({ ...proof, claims: { ...proof.claims, request_id: 'r-other' } })).toBe(
      false,
    );
    expect(
      f.authority.verifyAdmissionProof({
        ...proof,
        signature: proof.signature.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')),
      }),
    ).toBe(false);
  });
});
