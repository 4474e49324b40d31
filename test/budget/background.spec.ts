// Proves the background loops of a running budget-authority: B20 expiry reverses an
// uncaptured hold past its TTL with a durable event (and never a captured one), and B21
// the reconciler resolves recorded ambiguities from the stream and the rail's settlement
// state, with its resolutions visible as events of the capability.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { admitPayload, AuthorityStack, eventually, monetaryGrant, type Json } from './support/authority-stack.js';

const HOLD_TTL_MS = 2_000;
let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bbg', {
    env: {
      TALLY__AUTHORITY__HOLD_TTL_MS: String(HOLD_TTL_MS),
      TALLY__AUTHORITY__EXPIRY_INTERVAL_MS: '250',
      TALLY__AUTHORITY__RECONCILE_INTERVAL_MS: '250',
    },
  });
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);
beforeEach(async () => {
  await stack.faults({ reset: true });
});

const faults = async () => (await stack.faults({}))[0]!;
const usageIs = (capId: string, count: number, committed: number) =>
  eventually(
    () => stack.usage(capId),
    (u) => u['invocation_count'] === count && u['committed_cost_units'] === committed,
    60_000,
    `usage ${count}/${committed}`,
  );
const resolved = (capId: string) =>
  eventually(
    async () => (await stack.ok('GET', `/v1/capabilities/${capId}/ambiguities`))['ambiguities'] as Json[],
    (list) => list.length > 0 && list.every((a) => a['resolution'] !== null),
    60_000,
    'every ambiguity resolved',
  );

/** tally_holds_settlement_overdue as the authority's /metrics shows it. */
async function overdueHolds(): Promise<number> {
  const text = await (await fetch(`${stack.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tally_holds_settlement_overdue '));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

describe('background loops', () => {
  it('B20 an uncaptured hold past its TTL is reversed by a durable expiry event; the stalled Admit can no longer capture it', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    await stack.faults({ hook: { block: true } });
    const stalled = stack.admit(admitPayload(cap['token'], 'b20-stalled', 'standalone'));
    await eventually(
      faults,
      (f) => (f['hook'] as Json)['blocked'] === 1,
      30_000,
      'admit stalled at the admission hook',
    );
    const expiry = await eventually(
      () => stack.events(cap['id']),
      (events) => events.some((e) => e['kind'] === 'reverse_exposure' && e['cause'] === 'expired'),
      60_000,
      'expiry event',
    );
    const reversed = expiry.find((e) => e['kind'] === 'reverse_exposure')!;
    expect(reversed['event_id']).toMatch(/^budget-hold:b20-stalled:[^:]+:0:authorize:\d+:expire$/);
    await usageIs(cap['id'], 0, 0);
    await stack.faults({ hook: { block: false } });
    const answer = await stalled;
    expect(answer['verdict']).toBe('deny');
    expect(((await faults())['rail'] as Json)['authorize']).toBe(0);
    expect((await stack.events(cap['id'])).some((e) => e['kind'] === 'capture_invocation')).toBe(false);
  });

  it('B20 a captured, dispatched hold never expires into a release', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const admitted = await stack.admit(admitPayload(cap['token'], 'b20-dispatched', 'standalone'));
    expect(admitted['verdict']).toBe('allow');
    await new Promise((r) => setTimeout(r, HOLD_TTL_MS * 2));
    const kinds = (await stack.events(cap['id'])).map((e) => e['kind']);
    expect(kinds).toEqual(['capture_invocation', 'authorize_exposure']);
    await usageIs(cap['id'], 1, 100);
    // Kept, and shown to the operator as a settlement that is overdue.
    const overdue = await eventually(overdueHolds, (n) => n >= 1, 15_000, 'an overdue hold on /metrics');
    const settled = await stack.settle({
      hold_id: admitted['hold_id'],
      outcome: { kind: 'completed', cost_units: 60, currency: 'USD' },
    });
    expect(settled['receipt']['settlement']).toBe('completed');
    await usageIs(cap['id'], 1, 60);
    await eventually(overdueHolds, (n) => n === overdue - 1, 15_000, 'the settled hold no longer overdue');
  });

  it('B21 an ambiguous payment authorization the rail did commit is released and the capture cancelled by the reconciler, from the rail settlement state', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    await stack.faults({ references: { 'b21-rail-committed': { authorize: 'rail_error_after_commit' } } });
    const denied = await stack.admit(admitPayload(cap['token'], 'b21-rail-committed', 'standalone'));
    expect(denied['receipt']['metadata']['financial']['payment_authorization_ambiguous']).toBe(true);
    const ambiguities = await resolved(cap['id']);
    expect(ambiguities[0]).toMatchObject({ kind: 'payment_authorization', reference: 'b21-rail-committed' });
    await usageIs(cap['id'], 0, 0);
    const cancel = (await stack.events(cap['id'])).find((e) => e['kind'] === 'cancel_captured_before_dispatch')!;
    expect(cancel['cause']).toBe('reconciled');
    const rail = (await faults())['rail'] as Json;
    expect(rail['settlementState']).toBeGreaterThanOrEqual(1);
    expect(rail['release']).toBe(1);
  });

  it('B21 an ambiguous payment the rail never took moves no money: the reconciler only returns the budget', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    await stack.faults({ references: { 'b21-rail-none': { authorize: 'unavailable' } } });
    const denied = await stack.admit(admitPayload(cap['token'], 'b21-rail-none', 'standalone'));
    expect(denied['verdict']).toBe('deny');
    await resolved(cap['id']);
    await usageIs(cap['id'], 0, 0);
    const rail = (await faults())['rail'] as Json;
    expect([rail['release'], rail['refund'], rail['capture']]).toEqual([0, 0, 0]);
  });

  it('B21 a lost capture acknowledgement is resolved from the stream: the committed capture is cancelled and the budget returns', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    await stack.faults({ lost_acks: { kinds: ['capture'], losses_max: 1 } });
    const denied = await stack.admit(admitPayload(cap['token'], 'b21-capture', 'standalone'));
    expect(denied['reason']).toBe('budget invocation capture could not be confirmed');
    const ambiguities = await resolved(cap['id']);
    expect(ambiguities[0]!['kind']).toBe('invocation_capture');
    await usageIs(cap['id'], 0, 0);
    expect(((await faults())['rail'] as Json)['authorize']).toBe(0);
  });
});
