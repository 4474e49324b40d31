// Proves ADR 0047 on the BudgetAuthority over a real JetStream stream: an admitted hold unsettled past its TTL and the grace is captured and realized in full once, across sweepers, and a late Settle corrects it through the rail (refunds confirmed first, fail closed otherwise).
import { afterEach, describe, expect, it } from '@jest/globals';
import { CORRECTION_REFUND_UNCONFIRMED, SETTLEMENT_MISSING, type IssuedCapability } from '@tally/budget-application';
import { AuthorityFixture, LIMITS, MONETARY } from './authority.fixture.js';

const DUE_MS = LIMITS.holdTtlMs + LIMITS.unsettledGraceMs;

describe('an unsettled admitted hold is realized in full (ADR 0047)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  async function admitted(requestId: string, cap: IssuedCapability): Promise<string> {
    const answer = await f.admit(requestId, cap, { requested_cost: 100n });
    expect(answer.verdict).toBe('allow');
    return answer.hold_id!;
  }

  async function grant(cap: IssuedCapability) {
    const g = (await f.authority.usage(cap.id))!.grants[0]!;
    return [g.invocation_count, g.exposed_cost_units, g.realized_cost_units];
  }

  it('B20 an admitted hold is captured in full on the rail and realized in full only after its TTL and the grace, once, however many sweepers race for it', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const holdId = await admitted('r-lost', cap);
    f.nowMs += DUE_MS - 1;
    expect(await f.authority.realizeUnsettled([cap.root_id])).toEqual([]);
    f.nowMs += 1;
    const sweepers = [f.authority, f.newAuthority(), f.newAuthority()];
    const results = await Promise.all(sweepers.map((s) => s.realizeUnsettled([cap.root_id])));
    // A sweeper that read the tree after another's commit finds nothing; every one that found the hold answers it realized.
    expect(new Set(results.flat().flatMap((r) => r.realized_hold_ids))).toEqual(new Set([holdId]));
    expect((await f.kinds(cap)).filter((k) => k === 'reconcile_spend')).toHaveLength(1);
    expect(await grant(cap)).toEqual([1, 0n, 100n]);
    expect(f.rail.counters.capture).toBeGreaterThanOrEqual(1);
    expect(await f.rail.settlementState('r-lost')).toMatchObject({ state: 'captured' });
    const state = await f.authority.treeState(cap.root_id);
    const receipts = [...state.receipts.inOrder()].filter((r) => r.body['kind'] === 'settlement');
    expect(receipts.map((r) => [r.body['verdict'], r.body['reason'], r.body['settlement']])).toEqual([
      ['allow', SETTLEMENT_MISSING, 'unsettled_expired'],
    ]);
    expect(receipts[0]!.body['metadata']).toMatchObject({
      budget_authority: { terminal: { cause: 'unsettled_expired', realized_units: 100 } },
      financial: { payment_capture_amount_units: 100, payment_capture_status: 'settled' },
    });
    expect([...state.ambiguities.values()].map((a) => [a.kind, a.hold_id, a.resolution])).toEqual([
      ['settlement_missing', holdId, undefined],
    ]);
    expect(await f.authority.realizeUnsettled([cap.root_id])).toEqual([]);
  });

  it('B20 a capture the rail does not confirm is a payment_capture ambiguity as for a Settle, and the spend is still realized in full', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const holdId = await admitted('r-capture-fails', cap);
    f.rail.configureReference('r-capture-fails', { capture: 'rail_error' });
    f.nowMs += DUE_MS;
    await f.authority.realizeUnsettled([cap.root_id]);
    expect(await grant(cap)).toEqual([1, 0n, 100n]);
    const state = await f.authority.treeState(cap.root_id);
    expect([...state.ambiguities.values()].map((a) => a.kind).sort()).toEqual([
      'payment_capture',
      'settlement_missing',
    ]);
    expect(state.holds.get(holdId)!.payment.status).toBe('capture_failed');
  });

  it('B21 a late completed Settle with a smaller cost refunds the excess through the rail and corrects the spend; a second one is answered already settled', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const holdId = await admitted('r-late', cap);
    f.nowMs += DUE_MS;
    await f.authority.realizeUnsettled([cap.root_id]);
    const { receipt } = await f.settle(holdId, { kind: 'completed', cost_units: 30n, currency: 'USD' });
    expect([receipt.verdict, receipt.settlement]).toEqual(['allow', 'corrected']);
    expect(receipt.metadata.budget_authority['correction']).toEqual({
      cause: 'unsettled_expired',
      outcome: 'completed',
      previous_realized_units: 100,
      realized_units: 30,
    });
    expect(receipt.metadata.financial).toMatchObject({
      payment_refund_amount_units: 70,
      payment_refund_status: 'refunded',
    });
    expect(f.rail.counters.refund).toBe(1);
    expect(await grant(cap)).toEqual([1, 0n, 30n]);
    const ambiguity = [...(await f.authority.treeState(cap.root_id)).ambiguities.values()][0]!;
    expect(ambiguity.resolution).toBe('settlement_reported_completed');
    const again = await f.settle(holdId, { kind: 'completed', cost_units: 10n });
    expect([again.receipt.verdict, again.receipt.reason]).toEqual(['deny', 'hold is already settled']);
    expect(await grant(cap)).toEqual([1, 0n, 30n]);
    expect((await f.kinds(cap)).slice(0, 2)).toEqual(['correct_spend', 'reconcile_spend']);
  });

  it('B21 a late not_dispatched refunds the whole capture on a reversible rail and gives back the spend and the invocation', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const holdId = await admitted('r-never', cap);
    f.nowMs += DUE_MS;
    await f.authority.realizeUnsettled([cap.root_id]);
    const { receipt } = await f.settle(holdId, { kind: 'not_dispatched', reason: 'worker lost before the call' });
    expect([receipt.verdict, receipt.reason, receipt.settlement]).toEqual([
      'deny',
      'not dispatched: worker lost before the call',
      'corrected',
    ]);
    expect(await grant(cap)).toEqual([0, 0n, 0n]);
    expect(await f.rail.settlementState('r-never')).toMatchObject({ state: 'refunded' });
  });

  it('B21 fail closed: a refund the rail does not confirm corrects nothing, and a later Settle corrects once the rail refunds', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([MONETARY]);
    const holdId = await admitted('r-refund-fails', cap);
    f.nowMs += DUE_MS;
    await f.authority.realizeUnsettled([cap.root_id]);
    f.rail.configureReference('r-refund-fails', { release: 'fail' });
    const refused = await f.settle(holdId, { kind: 'completed', cost_units: 30n });
    expect([refused.receipt.verdict, refused.receipt.reason, refused.receipt.settlement]).toEqual([
      'deny',
      CORRECTION_REFUND_UNCONFIRMED,
      'refund_unconfirmed',
    ]);
    expect(refused.receipt.metadata.financial).toMatchObject({ payment_refund_unconfirmed: true });
    expect(await grant(cap)).toEqual([1, 0n, 100n]);
    const open = [...(await f.authority.treeState(cap.root_id)).ambiguities.values()];
    expect(open.map((a) => [a.kind, a.resolution])).toEqual([['settlement_missing', undefined]]);
    f.rail.configureReference('r-refund-fails', { release: 'release' });
    const retried = await f.settle(holdId, { kind: 'completed', cost_units: 30n });
    expect(retried.receipt.settlement).toBe('corrected');
    expect(await grant(cap)).toEqual([1, 0n, 30n]);
  });
});
