// Proves B10-B12 on a running budget-authority: appends that reach the stream but whose
// acknowledgement is lost (the lost-ack decorator, switched on through the test-only
// faults endpoint) fail closed, record the ambiguity with the event id in the stream, and
// block replays, standalone and inside a session.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  admitPayload,
  AuthorityStack,
  CONTEXTS,
  eventually,
  monetaryGrant,
  type Json,
} from './support/authority-stack.js';

let stack: AuthorityStack;
beforeAll(async () => {
  // A long reconcile interval keeps the reconciler from resolving the ambiguities under test.
  stack = await AuthorityStack.create('black', { env: { TALLY__AUTHORITY__RECONCILE_INTERVAL_MS: '3600000' } });
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);
beforeEach(async () => {
  await stack.faults({ reset: true });
});

const rail = async () => (await stack.faults({}))[0]!['rail'] as Json;
const usageIs = (capId: string, count: number, committed: number) =>
  eventually(
    () => stack.usage(capId),
    (u) => u['invocation_count'] === count && u['committed_cost_units'] === committed,
    30_000,
    `usage ${count}/${committed}`,
  );

describe.each(CONTEXTS)('lost acknowledgements (%s)', (context) => {
  it('B10 seed lost_capture_acknowledgement_records_ambiguity_and_blocks_replay: exact reason, invocation_capture ambiguous and retained with the event id in the stream, replay denied, no payment', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const requestId = `req-capture-lost-ack-${context}`;
    await stack.faults({ lost_acks: { kinds: ['capture'], losses_max: 1 } });
    const first = await stack.admit(admitPayload(cap['token'], requestId, context));
    expect(first['verdict']).toBe('deny');
    expect(first['reason']).toBe('budget invocation capture could not be confirmed');
    expect(JSON.stringify(first)).not.toContain('acknowledgement lost');
    const capture = first['receipt']['metadata']['budget_authority']['invocation_capture'] as Json;
    expect(capture['invocation_capture_ambiguous']).toBe(true);
    expect(capture['admission_retained']).toBe(true);
    expect(capture).not.toHaveProperty('budget_commit_index');
    const events = await stack.events(cap['id']);
    const captured = events.find((e) => e['kind'] === 'capture_invocation')!;
    expect(capture['event_id']).toBe(captured['event_id']);
    const replay = await stack.admit(admitPayload(cap['token'], requestId, context));
    expect(replay['verdict']).toBe('deny');
    await usageIs(cap['id'], 1, 100);
    expect((await rail())['authorize']).toBe(0);
  });

  it('B11 seed lost_cancellation_acknowledgement_records_ambiguity_and_blocks_dispatch: decline then lost cancellation ack denies with the exact reason, cancellation_ambiguous with its event id, one payment attempt, usage 0/0', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const requestId = `req-cancellation-lost-ack-${context}`;
    await stack.faults({ rail: { authorize: 'decline' }, lost_acks: { kinds: ['cancellation'], losses_max: 1 } });
    const first = await stack.admit(admitPayload(cap['token'], requestId, context));
    expect(first['verdict']).toBe('deny');
    expect(first['reason']).toBe('captured budget cancellation could not be confirmed');
    expect(first['dispatch']).toBe(false);
    const cancellation = first['receipt']['metadata']['budget_authority']['cancel_captured_before_dispatch'] as Json;
    expect(cancellation['cancellation_ambiguous']).toBe(true);
    expect(cancellation).not.toHaveProperty('budget_commit_index');
    const durable = (await stack.events(cap['id'])).find((e) => e['kind'] === 'cancel_captured_before_dispatch')!;
    expect(cancellation['event_id']).toBe(durable['event_id']);
    expect((await rail())['authorize']).toBe(1);
    await usageIs(cap['id'], 0, 0);
  });

  it('B12 settle path: the release is confirmed and the cancellation commits in the same append as the receipt, so a lost acknowledgement is resolved by reading the stream: usage 0/0', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const admitted = await stack.admit(admitPayload(cap['token'], `req-settle-cancel-lost-ack-${context}`, context));
    expect(admitted['verdict']).toBe('allow');
    await stack.faults({ lost_acks: { kinds: ['cancellation'], losses_max: 1 } });
    const receipt = (
      await stack.settle({
        hold_id: admitted['hold_id'],
        outcome: { kind: 'not_dispatched', reason: 'worker stopped' },
      })
    )['receipt'] as Json;
    expect(receipt['metadata']['financial']['payment_release_confirmed']).toBe(true);
    expect(typeof receipt['metadata']['financial']['payment_release_reference']).toBe('string');
    expect(receipt['metadata']['budget_authority']['terminal']['kind']).toBe('cancel_captured_before_dispatch');
    expect(((await stack.faults({}))[0]!['lost_acks'] as string[]).length).toBeGreaterThan(0);
    expect((await stack.events(cap['id'])).some((e) => e['kind'] === 'cancel_captured_before_dispatch')).toBe(true);
    await usageIs(cap['id'], 0, 0);
  });
});
