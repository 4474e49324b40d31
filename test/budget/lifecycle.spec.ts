// Proves the hold lifecycle (B1-B9), receipts (B17) and mutation events (B18) on a running
// budget-authority, driven over JetStream as the orchestrator does, with the seed's
// payment, terminal-failure, elicitation, replay and concurrency scenarios in both contexts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { verifyWithPublicKey } from '@tally/budget-infrastructure';
import {
  admitPayload,
  AuthorityStack,
  CONTEXTS,
  eventually,
  holdIdOf,
  monetaryGrant,
  type Json,
} from './support/authority-stack.js';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('blife');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);
beforeEach(async () => {
  await stack.faults({ reset: true });
});

const rail = async () => (await stack.faults({}))[0]!['rail'] as Json;
const hook = async () => (await stack.faults({}))[0]!['hook'] as Json;
const usageIs = (capId: string, count: number, committed: number) =>
  eventually(
    () => stack.usage(capId),
    (u) => u['invocation_count'] === count && u['committed_cost_units'] === committed,
    30_000,
    `usage ${count}/${committed}`,
  );

/** The seed's assert_monetary_capture_receipt_metadata. */
function expectCaptureMetadata(receipt: Json, capabilityId: string, requestId: string): void {
  const hold = holdIdOf(requestId, capabilityId);
  const budget = receipt['metadata']['budget_authority'];
  expect(budget['hold_id']).toBe(hold);
  expect(budget['authorize']['event_id']).toBe(`${hold}:authorize`);
  const authorizeIndex = budget['authorize']['budget_commit_index'] as number;
  expect(Number.isSafeInteger(authorizeIndex)).toBe(true);
  expect(budget['invocation_capture']['event_id']).toBe(`${hold}:capture-invocation:${authorizeIndex}`);
  expect(Number.isSafeInteger(budget['invocation_capture']['budget_commit_index'])).toBe(true);
}

async function monetaryCapability(extra: Json = {}): Promise<Json> {
  return stack.issue([monetaryGrant(extra)]);
}

describe('lifecycle', () => {
  it('B1 authorize appends {hold_id}:authorize, reserves one invocation and the exposure (requested or max per invocation), stays within the limits and records its commit index', async () => {
    const cap = await stack.issue([monetaryGrant({ max_invocations: 3, max_total_cost_units: 200 })]);
    const first = await stack.admit(admitPayload(cap['token'], 'b1-requested', 'standalone', { requested_cost: 30 }));
    expect(first['verdict']).toBe('allow');
    await usageIs(cap['id'], 1, 30);
    const second = await stack.admit(admitPayload(cap['token'], 'b1-default', 'standalone'));
    expect(second['verdict']).toBe('allow');
    await usageIs(cap['id'], 2, 130);
    const tooBig = await stack.admit(admitPayload(cap['token'], 'b1-too-big', 'standalone', { requested_cost: 101 }));
    expect(tooBig['verdict']).toBe('deny');
    const overTotal = await stack.admit(admitPayload(cap['token'], 'b1-over-total', 'standalone'));
    expect(overTotal['verdict']).toBe('deny');
    await usageIs(cap['id'], 2, 130);
    const events = await stack.events(cap['id']);
    const authorize = events.find((e) => e['event_id'] === `${holdIdOf('b1-requested', cap['id'])}:authorize`)!;
    expect(authorize['kind']).toBe('authorize_exposure');
    expect(authorize['exposed_delta_units']).toBe(30);
    expect(authorize['commit_index']).toBe(
      first['receipt']['metadata']['budget_authority']['authorize']['budget_commit_index'],
    );
    const limited = await stack.issue([{ server_id: 'cost-srv', tool_name: 'compute', max_invocations: 1 }]);
    expect((await stack.admit(admitPayload(limited['token'], 'b1-inv-1', 'standalone')))['verdict']).toBe('allow');
    expect((await stack.admit(admitPayload(limited['token'], 'b1-inv-2', 'standalone')))['verdict']).toBe('deny');
  });

  it('B1 B2 with a passive hook and no nonce the capture goes in the authorizing commit (ADR 0041): one commit index for both, the capture id names it, it precedes payment and a replay is still denied', async () => {
    const cap = await monetaryCapability();
    const first = await stack.admit(admitPayload(cap['token'], 'b2-one-commit', 'session'));
    expect(first['verdict']).toBe('allow');
    expectCaptureMetadata(first['receipt'], cap['id'], 'b2-one-commit');
    const budget = first['receipt']['metadata']['budget_authority'];
    expect(budget['invocation_capture']['budget_commit_index']).toBe(budget['authorize']['budget_commit_index']);
    expect(first['admission_proof']['claims']['capture_event_id']).toBe(budget['invocation_capture']['event_id']);
    expect(first['admission_proof']['claims']['capture_commit_index']).toBe(budget['authorize']['budget_commit_index']);
    const events = await stack.events(cap['id']);
    const captured = events.find((e) => e['kind'] === 'capture_invocation')!;
    const authorized = events.find((e) => e['kind'] === 'authorize_exposure')!;
    expect(captured['event_id']).toBe(budget['invocation_capture']['event_id']);
    expect(captured['commit_index']).toBe(authorized['commit_index']);
    expect((await rail())['authorize']).toBe(1);
    const replay = await stack.admit(admitPayload(cap['token'], 'b2-one-commit', 'session'));
    expect(replay['verdict']).toBe('deny');
    expect(replay['reason']).toBe('monetary invocation was already dispatched');
    expect((await rail())['authorize']).toBe(1);
    await usageIs(cap['id'], 1, 100);
  });

  it('B2 capture {hold_id}:capture-invocation:{authorize_commit_index} precedes payment; a second request with the same id is denied as already dispatched and releases only its own lease', async () => {
    await stack.faults({ hook: { lease: true } });
    const cap = await monetaryCapability();
    const first = await stack.admit(admitPayload(cap['token'], 'b2-req', 'standalone'));
    expect(first['verdict']).toBe('allow');
    expectCaptureMetadata(first['receipt'], cap['id'], 'b2-req');
    const capture = first['receipt']['metadata']['budget_authority']['invocation_capture'];
    expect(capture['budget_commit_index']).toBeGreaterThan(
      first['receipt']['metadata']['budget_authority']['authorize']['budget_commit_index'],
    );
    expect(first['admission_proof']['claims']['capture_event_id']).toBe(capture['event_id']);
    const openBefore = (await hook())['open_leases'] as string[];
    const replay = await stack.admit(admitPayload(cap['token'], 'b2-req', 'standalone'));
    expect(replay['verdict']).toBe('deny');
    expect(replay['reason']).toBe('monetary invocation was already dispatched');
    // The replay is refused at the hold (step 3), before the hook (step 4): it takes no lease, so it releases none of the first one's.
    const h = await hook();
    expect(h['reserved']).toBe(1);
    expect(h['open_leases']).toEqual(openBefore);
    expect((await rail())['authorize']).toBe(1);
    const captures = (await stack.events(cap['id'])).filter((e) => e['kind'] === 'capture_invocation');
    expect(captures).toHaveLength(1);
  });

  it.each([
    ['decline', true],
    ['insufficient_funds', true],
    ['unavailable', false],
    ['rail_error', false],
  ])('B3 seed payment_authorization_errors_cancel_capture_only_for_definite_denials: %s', async (failure, definite) => {
    const cap = await monetaryCapability();
    const requestId = `b3-${failure}`;
    await stack.faults({ references: { [requestId]: { authorize: failure } } });
    const answer = await stack.admit(admitPayload(cap['token'], requestId, 'standalone'));
    expect(answer['verdict']).toBe('deny');
    expectCaptureMetadata(answer['receipt'], cap['id'], requestId);
    expect((await rail())['authorize']).toBe(1);
    if (definite) {
      await usageIs(cap['id'], 0, 0);
      expect((await stack.events(cap['id'])).some((e) => e['kind'] === 'cancel_captured_before_dispatch')).toBe(true);
    } else {
      await usageIs(cap['id'], 1, 100);
      expect(answer['receipt']['metadata']['financial']['payment_authorization_ambiguous']).toBe(true);
    }
  });

  it('B4 settle completed records reconcile = min(actual, exposed) and captures the actual amount; zero releases; an overrun records the full charge; a failed rail capture marks the settlement failed', async () => {
    const cap = await monetaryCapability();
    const settleWith = async (requestId: string, cost: number) => {
      const admitted = await stack.admit(admitPayload(cap['token'], requestId, 'standalone'));
      expect(admitted['verdict']).toBe('allow');
      return (
        await stack.settle({
          hold_id: admitted['hold_id'],
          outcome: { kind: 'completed', cost_units: cost, currency: 'USD' },
        })
      )['receipt'] as Json;
    };
    const partial = await settleWith('b4-partial', 40);
    expect(partial['settlement']).toBe('completed');
    await usageIs(cap['id'], 1, 40);
    expect((await stack.events(cap['id'], 0, 1))[0]).toMatchObject({
      kind: 'reconcile_spend',
      realized_delta_units: 40,
      exposed_delta_units: -100,
    });
    expect((await rail())['capture']).toBe(1);
    await settleWith('b4-zero', 0);
    expect((await rail())['release']).toBe(1);
    await usageIs(cap['id'], 2, 40);
    await settleWith('b4-overrun', 150);
    expect((await stack.events(cap['id'], 0, 1))[0]!['kind']).toBe('capture_spend');
    await stack.faults({ references: { 'b4-capture-fails': { capture: 'fail' } } });
    const failed = await settleWith('b4-capture-fails', 10);
    expect(failed['settlement']).toBe('failed');
  });

  describe.each(CONTEXTS)('B5 seed non_durable_monetary_terminal_failures_retain funds (%s)', (context) => {
    it.each(['cancellation', 'deadline', 'incomplete', 'generic', 'tool_not_registered'])(
      'B5 failed_after_dispatch %s keeps invocation, exposure and payment; a fresh request on max_invocations 1 is denied',
      async (failure) => {
        const cap = await monetaryCapability({ max_invocations: 1 });
        const requestId = `b5-${context}-${failure}`;
        const admitted = await stack.admit(admitPayload(cap['token'], requestId, context));
        expect(admitted['verdict']).toBe('allow');
        expectCaptureMetadata(admitted['receipt'], cap['id'], requestId);
        const settled = await stack.settle({
          hold_id: admitted['hold_id'],
          outcome: { kind: 'failed_after_dispatch', failure },
        });
        expect(settled['receipt']['verdict']).toBe('deny');
        await usageIs(cap['id'], 1, 100);
        const r = await rail();
        expect([r['authorize'], r['release'], r['refund']]).toEqual([1, 0, 0]);
        const fresh = await stack.admit(admitPayload(cap['token'], `${requestId}-fresh`, context));
        expect(fresh['verdict']).toBe('deny');
        await usageIs(cap['id'], 1, 100);
        expect((await rail())['authorize']).toBe(1);
      },
    );
  });

  it('B6 seed non_durable_monetary_url_elicitation_releases_admission_for_fresh_retry: release everything, one deny receipt with the message intact, replay denied without a new authorization, a fresh id runs again', async () => {
    const cap = await monetaryCapability({ max_invocations: 1 });
    const message = 'URL elicitation required before dispatch side effect';
    const admitted = await stack.admit(admitPayload(cap['token'], 'b6-req', 'standalone'));
    expect(admitted['verdict']).toBe('allow');
    const settled = (
      await stack.settle({ hold_id: admitted['hold_id'], outcome: { kind: 'elicitation_required', message } })
    )['receipt'] as Json;
    expect(settled['verdict']).toBe('deny');
    expect(settled['reason']).toBe(message);
    expectCaptureMetadata(admitted['receipt'], cap['id'], 'b6-req');
    await usageIs(cap['id'], 0, 0);
    expect(await rail()).toMatchObject({ authorize: 1, release: 1 });
    const receipts = (
      await eventually(
        () => stack.ok('GET', '/v1/receipts?request_id=b6-req'),
        (b) => (b['receipts'] as Json[]).length >= 2,
      )
    )['receipts'] as Json[];
    expect(receipts.filter((r) => r['verdict'] === 'deny')).toHaveLength(1);
    const replay = await stack.admit(admitPayload(cap['token'], 'b6-req', 'standalone'));
    expect(replay['verdict']).toBe('deny');
    expect((await rail())['authorize']).toBe(1);
    const fresh = await stack.admit(admitPayload(cap['token'], 'b6-req-fresh', 'standalone'));
    expect(fresh['verdict']).toBe('allow');
    await stack.settle({ hold_id: fresh['hold_id'], outcome: { kind: 'elicitation_required', message } });
    expect(await rail()).toMatchObject({ authorize: 2, release: 2 });
  });

  it('B7 seed captured_monetary_replay_cannot_fall_through_to_overlapping_unlimited_grant', async () => {
    const cap = await stack.issue([monetaryGrant(), { server_id: 'cost-srv', tool_name: 'compute' }]);
    expect((await stack.admit(admitPayload(cap['token'], 'b7-req', 'standalone')))['verdict']).toBe('allow');
    const replay = await stack.admit(admitPayload(cap['token'], 'b7-req', 'standalone'));
    expect(replay['verdict']).toBe('deny');
    expect((await rail())['authorize']).toBe(1);
    await usageIs(cap['id'], 1, 100);
    expect((await stack.usage(cap['id'], 1))['invocation_count']).toBe(0);
  });

  it('B8 seed concurrent_identical_monetary_requests_capture_before_payment_and_release_loser_leases: one allow, one payment, the loser releases its lease before the winner pays, and a sibling is admitted afterwards', async () => {
    const root = await stack.issue([monetaryGrant({ max_total_cost_units: 200 })]);
    const childA = await stack.issue([monetaryGrant({ max_total_cost_units: 100 })], {
      parent_id: root['id'],
      budget_share_units: 100,
      ttl_seconds: 3000,
    });
    const childB = await stack.issue([monetaryGrant({ max_total_cost_units: 100 })], {
      parent_id: root['id'],
      budget_share_units: 100,
      ttl_seconds: 3000,
    });
    // The hook holds both twins after their (shared) hold is authorized, like the seed's barrier; the rail holds the winner's payment.
    await stack.faults({ hook: { lease: true, block: true }, rail: { authorize: 'block_until_released' } });
    const payload = admitPayload(childA['token'], 'b8-req', 'standalone');
    const both = [stack.admit(payload), stack.admit(payload)];
    await eventually(hook, (h) => h['blocked'] === 2, 30_000, 'both twins at the admission hook');
    await stack.faults({ hook: { block: false } });
    await eventually(rail, (r) => r['authorize'] === 1, 30_000, 'first payment authorization started');
    await eventually(hook, (h) => h['released'] === 1, 30_000, 'loser released its runtime lease');
    await stack.faults({ release_blocked_authorizations: true });
    const answers = await Promise.all(both);
    expect(answers.map((a) => a['verdict']).sort()).toEqual(['allow', 'deny']);
    const h = await hook();
    expect([h['reserved'], (await rail())['authorize']]).toEqual([2, 1]);
    await stack.faults({ rail: { authorize: 'approve' } });
    const winner = answers.find((a) => a['verdict'] === 'allow')!;
    await stack.settle({
      hold_id: winner['hold_id'],
      outcome: { kind: 'completed', cost_units: 100, currency: 'USD' },
    });
    expect((await stack.admit(admitPayload(childB['token'], 'b8-sibling', 'standalone')))['verdict']).toBe('allow');
  });

  it('B9 seed predispatch_unwind_requires_confirmed_payment_release_status: a pending release keeps authorization and usage and writes no exposure reversal', async () => {
    const cap = await monetaryCapability();
    const admitted = await stack.admit(admitPayload(cap['token'], 'b9-pending', 'standalone'));
    await stack.faults({ references: { 'b9-pending': { release: 'pending' } } });
    const kept = (
      await stack.settle({
        hold_id: admitted['hold_id'],
        outcome: { kind: 'not_dispatched', reason: 'worker stopped' },
      })
    )['receipt'] as Json;
    expect(kept['verdict']).toBe('deny');
    await usageIs(cap['id'], 1, 100);
    const kinds = (await stack.events(cap['id'])).map((e) => e['kind']);
    expect(kinds).not.toContain('reverse_exposure');
    expect(kinds).not.toContain('cancel_captured_before_dispatch');
    const confirmed = await stack.admit(admitPayload(cap['token'], 'b9-confirmed', 'standalone'));
    await stack.settle({
      hold_id: confirmed['hold_id'],
      outcome: { kind: 'not_dispatched', reason: 'worker stopped' },
    });
    await usageIs(cap['id'], 1, 100);
    expect((await stack.events(cap['id'], 0, 1))[0]!['kind']).toBe('cancel_captured_before_dispatch');
  });

  it('seed direct_monetary_dispatch_without_capture_proof_fails_closed: only an Allow carries an admission proof signed by a published key, and settling a hold that was never admitted is denied', async () => {
    const cap = await monetaryCapability();
    await stack.faults({ references: { 'direct-denied': { authorize: 'decline' } } });
    const denied = await stack.admit(admitPayload(cap['token'], 'direct-denied', 'standalone'));
    expect(denied['verdict']).toBe('deny');
    expect(denied['admission_proof']).toBeUndefined();
    const settle = (
      await stack.settle({
        hold_id: denied['hold_id'],
        outcome: { kind: 'completed', cost_units: 10, currency: 'USD' },
      })
    )['receipt'] as Json;
    expect(settle['verdict']).toBe('deny');
    expect((await rail())['capture']).toBe(0);
    const allowed = await stack.admit(admitPayload(cap['token'], 'direct-allowed', 'standalone'));
    const key = ((await stack.ok('GET', '/v1/keys'))['keys'] as Json[])[0]!;
    const proof = allowed['admission_proof'];
    expect(verifyWithPublicKey(proof['claims'], proof['signature'], key['public_key'])).toBe(true);
    expect(verifyWithPublicKey({ ...proof['claims'], hold_id: 'forged' }, proof['signature'], key['public_key'])).toBe(
      false,
    );
  });

  it.each(CONTEXTS)(
    'B17 every decision yields exactly one signed receipt with budget_authority and financial sections, served by id and verifiable with GET /v1/keys (%s)',
    async (context) => {
      const cap = await monetaryCapability();
      const requestId = `b17-${context}`;
      const admitted = await stack.admit(admitPayload(cap['token'], requestId, context));
      const settled = (
        await stack.settle({
          hold_id: admitted['hold_id'],
          outcome: { kind: 'completed', cost_units: 25, currency: 'USD' },
        })
      )['receipt'] as Json;
      const key = ((await stack.ok('GET', '/v1/keys'))['keys'] as Json[])[0]!;
      expect(key['algorithm']).toBe('ed25519');
      for (const receipt of [admitted['receipt'] as Json, settled]) {
        expect(Object.keys(receipt['metadata'])).toEqual(expect.arrayContaining(['budget_authority', 'financial']));
        const { signature, ...body } = receipt;
        expect(verifyWithPublicKey(body, signature, key['public_key'])).toBe(true);
        expect(await stack.receipt(receipt['id'])).toEqual(receipt);
      }
      const receipts = (await stack.ok('GET', `/v1/receipts?request_id=${requestId}`))['receipts'] as Json[];
      expect(receipts.map((r) => r['id'])).toEqual([admitted['receipt']['id'], settled['id']]);
      expect(admitted['receipt']['context']['kind']).toBe(context);
    },
  );

  it('B18 usage per (capability, grant) and mutation events newest first with a limit, of the B18 kinds only', async () => {
    const cap = await stack.issue([monetaryGrant(), { server_id: 'other-srv', tool_name: '*' }]);
    for (const id of ['b18-a', 'b18-b', 'b18-c']) {
      const admitted = await stack.admit(admitPayload(cap['token'], id, 'standalone'));
      await stack.settle({
        hold_id: admitted['hold_id'],
        outcome: { kind: 'completed', cost_units: 10, currency: 'USD' },
      });
    }
    await stack.admit({
      ...admitPayload(cap['token'], 'b18-other', 'standalone'),
      server_id: 'other-srv',
      tool_name: 'anything',
    });
    const all = await stack.events(cap['id'], 0, 100);
    expect(all).toHaveLength(9);
    const indexes = all.map((e) => e['commit_index'] as number);
    expect([...indexes].sort((a, b) => b - a)).toEqual(indexes);
    const allowed = new Set([
      'increment_invocation',
      'reserve_invocation',
      'authorize_exposure',
      'capture_invocation',
      'reverse_invocation',
      'cancel_captured_before_dispatch',
      'reverse_exposure',
      'release_exposure',
      'reconcile_spend',
      'capture_spend',
    ]);
    for (const e of all) {
      expect(allowed.has(e['kind'])).toBe(true);
      expect(e).toMatchObject({ grant_index: 0, capability_id: cap['id'] });
      expect(typeof e['event_id']).toBe('string');
      expect(e['occurred_at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(await stack.events(cap['id'], 0, 2)).toEqual(all.slice(0, 2));
    const other = await stack.events(cap['id'], 1, 10);
    expect(other.map((e) => e['kind'])).toEqual(['increment_invocation', 'reserve_invocation']);
    expect(await stack.usage(cap['id'], 0)).toMatchObject({
      invocation_count: 3,
      exposed_cost_units: 0,
      realized_cost_units: 30,
      committed_cost_units: 30,
      currency: 'USD',
    });
  });
});
