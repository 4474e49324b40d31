// Proves B10-B12: an append that reached the stream but lost its acknowledgement is read back, recorded as an ambiguity, and denied.
import { afterEach, describe, expect, it } from '@jest/globals';
import { AuthorityFixture, CONTEXTS, MONETARY, holdOf } from './authority.fixture.js';

type Section = Record<string, unknown>;
const budgetOf = (receipt: { metadata: { budget_authority: Section } }) =>
  receipt.metadata.budget_authority as Record<string, Section>;

describe('lost acknowledgements (B10-B12)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  for (const [label, context] of CONTEXTS) {
    it(`B10 lost capture ack denies with "budget invocation capture could not be confirmed" and retains the admission (${label})`, async () => {
      f = await AuthorityFixture.start({ lostAck: { kinds: ['capture'], lossesMax: Number.POSITIVE_INFINITY } });
      const cap = await f.issue([MONETARY]);
      const request = `req-capture-lost-ack-${label}`;
      const first = await f.admit(request, cap, { context });
      expect(first).toMatchObject({ verdict: 'deny', reason: 'budget invocation capture could not be confirmed' });
      expect(first.reason).not.toContain('acknowledgement lost');
      const capture = budgetOf(first.receipt)['invocation_capture']!;
      expect(capture).toMatchObject({ invocation_capture_ambiguous: true, admission_retained: true });
      expect(capture).not.toHaveProperty('budget_commit_index');
      const events = (await f.authority.events(cap.id, { grant_index: 0, limit: 10 }))!;
      const durable = events.find((e) => e.kind === 'capture_invocation');
      expect(capture['event_id']).toBe(durable?.event_id);
      const state = await f.authority.treeState(cap.root_id);
      expect([...state.ambiguities.values()]).toEqual([
        expect.objectContaining({ kind: 'invocation_capture', event_id: durable?.event_id, event_in_stream: true }),
      ]);
      const replay = await f.admit(request, cap, { context });
      expect(replay.verdict).toBe('deny');
      expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
      expect(f.rail.counters.authorize).toBe(0);
      expect(f.hook.releases).toBe(f.hook.reserves);
    });

    it(`B11 lost cancellation ack after a decline denies with "captured budget cancellation could not be confirmed"; one payment attempt, usage 0/0 (${label})`, async () => {
      f = await AuthorityFixture.start({
        lostAck: { kinds: ['cancellation'], lossesMax: Number.POSITIVE_INFINITY },
        rail: { mode: 'reversible_hold', behaviour: { authorize: 'decline' } },
      });
      const cap = await f.issue([MONETARY]);
      const first = await f.admit(`req-cancellation-lost-ack-${label}`, cap, { context });
      expect(first).toMatchObject({ verdict: 'deny', reason: 'captured budget cancellation could not be confirmed' });
      const cancellation = budgetOf(first.receipt)['cancel_captured_before_dispatch']!;
      expect(cancellation['cancellation_ambiguous']).toBe(true);
      expect(cancellation).not.toHaveProperty('budget_commit_index');
      const durable = (await f.authority.events(cap.id, { grant_index: 0, limit: 10 }))!.find(
        (e) => e.kind === 'cancel_captured_before_dispatch',
      );
      expect(cancellation['event_id']).toBe(durable?.event_id);
      expect(f.rail.counters.authorize).toBe(1);
      expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
    });

    it(`B12 a confirmed release then a lost cancellation ack signs the release and the ambiguity (${label})`, async () => {
      f = await AuthorityFixture.start({
        lostAck: { kinds: ['cancellation'], lossesMax: Number.POSITIVE_INFINITY },
        limits: { requireExecutionNonce: true },
      });
      const cap = await f.issue([MONETARY]);
      const request = `req-nonce-cancel-unconfirmed-${label}`;
      const preflight = await f.admit(request, cap, { context });
      expect(await f.authority.redeemNonce(preflight.execution_nonce!)).toBe(true);
      const decision = await f.admit(request, cap, { context, execution_nonce: preflight.execution_nonce! });
      expect(decision.verdict).toBe('deny');
      expect(decision.receipt.metadata.financial).toMatchObject({
        payment_release_confirmed: true,
        payment_release_reference: expect.any(String),
      });
      const budget = budgetOf(decision.receipt);
      expect(budget['cancel_captured_before_dispatch']).toMatchObject({
        cancellation_ambiguous: true,
        event_id: `${holdOf(request, cap)}:cancel-captured-before-dispatch:${budget['invocation_capture']!['budget_commit_index']}`,
      });
      expect(budget['invocation_capture']!['admission_retained']).toBe(true);
      const durable = (await f.authority.events(cap.id, { grant_index: 0, limit: 20 }))!.find(
        (e) => e.kind === 'cancel_captured_before_dispatch',
      );
      expect(budget['cancel_captured_before_dispatch']!['event_id']).toBe(durable?.event_id);
    });
  }
});
