// Proves issue 18 item 11 with two real budget-authority replicas on one JetStream stream and
// a real local HTTP payment rail: two Settles of one captured hold, sent to both replicas at
// once and held inside the rail's capture call together, capture the payment once (both calls
// carry the same Idempotency-Key, and the rail performs it once), leave one SpendSettled in the
// stream, and, sent under one Idempotency-Key, give both callers the same receipt.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentRailServer, type ServiceProcess } from '@tally/testing';
import { AuthorityLedger } from '../orchestrator/authority-ledger.js';
import { adminHeaders } from '../support/auth.js';
import {
  admitPayload,
  AuthorityStack,
  eventually,
  holdIdOf,
  monetaryGrant,
  type Json,
} from './support/authority-stack.js';

let rail: PaymentRailServer;
let stack: AuthorityStack;
let replicas: ServiceProcess[];
let ledger: AuthorityLedger;

beforeAll(async () => {
  rail = await PaymentRailServer.start();
  stack = await AuthorityStack.create('settlerace', {
    faultInjection: false,
    env: { TALLY_PAYMENT_RAIL: 'http', TALLY_PAYMENT_RAIL_URL: rail.url },
  });
  replicas = [await stack.start(), await stack.start()];
  ledger = await AuthorityLedger.open(stack.env['NATS_URL']!, stack.names.namespace);
}, 240_000);
afterAll(async () => {
  await ledger?.close();
  await stack?.dispose();
  await rail?.stop();
}, 60_000);

/** A monetary hold admitted (its payment authorized at the rail) and ready to settle. */
async function admittedHold(requestId: string): Promise<{ capabilityId: string; holdId: string; authKey: string }> {
  const cap = await stack.issue([monetaryGrant()]);
  const decision = await stack.admit(admitPayload(cap['token'], requestId, 'standalone', { requested_cost: 60 }));
  expect(decision['verdict']).toBe('allow');
  const holdId = holdIdOf(requestId, cap['id']);
  return { capabilityId: cap['id'], holdId, authKey: `capture:auth_${holdId.replace(/[^A-Za-z0-9_]/g, '_')}` };
}

/** A Settle over HTTP to one replica in particular, as the platform's admin. */
async function settleAt(replica: ServiceProcess, body: Json, key?: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${replica.url}/v1/settlements`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...adminHeaders(),
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const completed = (holdId: string) => ({
  hold_id: holdId,
  outcome: { kind: 'completed', cost_units: 40, currency: 'USD' },
});

async function settledEvents(capabilityId: string): Promise<number> {
  return (await ledger.events(capabilityId)).filter((e) => e.type === 'SpendSettled').length;
}

/** The grant's usage once the projection has folded the settlement. */
function realized(capabilityId: string): Promise<Json> {
  return eventually(
    () => stack.usage(capabilityId),
    (u) => u['exposed_cost_units'] === 0,
    30_000,
    'the settled usage',
  );
}

describe('Issue 18 item 11: two replicas settling the same hold', () => {
  it('Issue 18 item 11 two replicas racing one Settle (one Idempotency-Key) capture once at the rail, record one SpendSettled and answer both callers alike', async () => {
    const { capabilityId, holdId, authKey } = await admittedHold('race-same');
    // Neither replica's capture is answered until both are inside it: the race is forced, not hoped for.
    rail.holdAnswers('/captures', 2, 10_000);
    const [a, b] = await Promise.all([
      settleAt(replicas[0]!, completed(holdId), 'settle-race-same'),
      settleAt(replicas[1]!, completed(holdId), 'settle-race-same'),
    ]);
    expect(rail.gatedArrivals()).toBe(2);
    expect(rail.callsWith(authKey)).toBe(2);
    expect(rail.performedWith(authKey)).toBe(1);
    expect(rail.keysWith(authKey)).toEqual([authKey]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body['receipt']).toEqual(b.body['receipt']);
    expect(a.body['receipt']).toMatchObject({
      verdict: 'allow',
      settlement: 'completed',
      metadata: { financial: { payment_capture_status: 'settled', payment_capture_amount_units: 40 } },
    });
    expect(await settledEvents(capabilityId)).toBe(1);
    expect(await realized(capabilityId)).toMatchObject({ realized_cost_units: 40, invocation_count: 1 });
  });

  it('Issue 18 item 11 two different Settles of one hold racing on two replicas capture once: one completes, the other is refused as already settled', async () => {
    const { capabilityId, holdId, authKey } = await admittedHold('race-two');
    rail.holdAnswers('/captures', 2, 10_000);
    const answers = await Promise.all([
      settleAt(replicas[0]!, completed(holdId), 'settle-race-a'),
      settleAt(replicas[1]!, completed(holdId), 'settle-race-b'),
    ]);
    expect(rail.gatedArrivals()).toBe(2);
    expect(rail.callsWith(authKey)).toBe(2);
    expect(rail.performedWith(authKey)).toBe(1);
    expect(rail.keysWith(authKey)).toEqual([authKey]);
    const receipts = answers.map((r) => r.body['receipt'] as Json);
    expect(receipts.map((r) => r['verdict']).sort()).toEqual(['allow', 'deny']);
    expect(receipts.find((r) => r['verdict'] === 'deny')).toMatchObject({
      reason: expect.stringMatching(/is already settled$/),
    });
    expect(await settledEvents(capabilityId)).toBe(1);
    expect(await realized(capabilityId)).toMatchObject({ realized_cost_units: 40, invocation_count: 1 });
  });
});
