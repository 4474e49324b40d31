// Proves B13-B16: execution nonce preflight and cleanup, lease release failures, request binding, and consumed nonces with unconfirmed releases.
import { afterEach, describe, expect, it } from '@jest/globals';
import { AuthorityFixture, CONTEXTS, MONETARY, PLAIN } from './authority.fixture.js';

type Section = Record<string, unknown>;
const PREFLIGHT = { limits: { requireExecutionNonce: true } } as const;
const preflightHold = (request: string, capabilityId: string) =>
  `nonce-preflight-budget-hold:${request}:${capabilityId}:0`;

describe('execution nonces (B13-B16)', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  for (const [label, context] of CONTEXTS) {
    it(`B13 a preflight reserves then reverses, releases the lease, and only then allows with a nonce and no dispatch (${label})`, async () => {
      f = await AuthorityFixture.start(PREFLIGHT);
      const cap = await f.issue([{ ...PLAIN, max_invocations: 1 }]);
      const request = `req-preflight-${label}`;
      const preflight = await f.admit(request, cap, { context });
      expect(preflight).toMatchObject({ verdict: 'allow', dispatch: false, execution_nonce: expect.any(String) });
      expect(preflight.admission_proof).toBeUndefined();
      expect(await f.kinds(cap)).toEqual(['reverse_invocation', 'reserve_invocation']);
      expect(f.hook).toMatchObject({ reserves: 1, releases: 1 });
      const admitted = await f.admit(request, cap, { context, execution_nonce: preflight.execution_nonce! });
      expect(admitted).toMatchObject({ verdict: 'allow', dispatch: true });
      expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 0n });
    });

    it(`B13 an unconfirmed preflight cleanup denies with "execution nonce preflight cleanup could not be confirmed", issues no nonce, and a replay adds no events (${label})`, async () => {
      f = await AuthorityFixture.start({
        ...PREFLIGHT,
        lostAck: { kinds: ['reverse'], lossesMax: Number.POSITIVE_INFINITY },
      });
      const cap = await f.issue([{ ...PLAIN, max_invocations: 1 }]);
      const request = `req-preflight-cleanup-${label}`;
      const response = await f.admit(request, cap, { context });
      expect(response).toMatchObject({
        verdict: 'deny',
        reason: 'execution nonce preflight cleanup could not be confirmed',
      });
      expect(response.execution_nonce).toBeUndefined();
      expect(response.receipt.metadata.execution_nonce).toMatchObject({ cleanup_unconfirmed: true });
      const budget = response.receipt.metadata.budget_authority as Section;
      const hold = preflightHold(request, cap.id);
      expect(budget).toMatchObject({
        cleanup_mutation_kind: 'invocation',
        cleanup_hold_id: hold,
        cleanup_attempt_event_id_available: true,
      });
      const attempt = budget['cleanup_attempt_event_id'] as string;
      expect(attempt.startsWith(`${hold}:authorize:`) && attempt.includes(':rollback:')).toBe(true);
      const events = (await f.authority.events(cap.id, { grant_index: 0, limit: 10 }))!;
      expect(events.map((e) => [e.kind, e.hold_id])).toEqual([
        ['reverse_invocation', hold],
        ['reserve_invocation', hold],
      ]);
      const replay = await f.admit(request, cap, { context });
      expect(replay.verdict).toBe('deny');
      expect(replay.execution_nonce).toBeUndefined();
      expect(await f.authority.events(cap.id, { grant_index: 0, limit: 10 })).toHaveLength(events.length);
    });

    it(`B14 a failed preflight lease release denies for the same reason, marks the reservation retained and issues no nonce (${label})`, async () => {
      f = await AuthorityFixture.start(PREFLIGHT);
      f.hook.failReleases = true;
      const cap = await f.issue([{ ...PLAIN, max_invocations: 1 }]);
      const response = await f.admit(`req-preflight-runtime-release-${label}`, cap, { context });
      expect(response).toMatchObject({
        verdict: 'deny',
        reason: 'execution nonce preflight cleanup could not be confirmed',
      });
      expect(response.execution_nonce).toBeUndefined();
      expect(response.receipt.metadata.runtime).toMatchObject({
        reservation_release_failed: true,
        reservation_retained: true,
      });
      expect(response.receipt.metadata.runtime).not.toHaveProperty('reservation_release_failure_reason');
      expect(f.hook).toMatchObject({ reserves: 1, releases: 1 });
    });

    it(`B15 a nonce minted for another request id is caught before payment and capture; an unconfirmed cleanup says "pre-dispatch cleanup could not be confirmed" (${label})`, async () => {
      f = await AuthorityFixture.start({
        ...PREFLIGHT,
        lostAck: { kinds: ['reverse'], lossesMax: Number.POSITIVE_INFINITY },
      });
      const clean = f.newAuthority({ store: f.store });
      const cap = await f.issue([MONETARY]);
      const minted = await clean.admit(f.admitCommand('req-nonce-id-bound-original', cap, { context }));
      expect(minted.execution_nonce).toBeDefined();
      const response = await f.admit(`req-nonce-id-bound-${label}`, cap, {
        context,
        execution_nonce: minted.execution_nonce!,
      });
      expect(response).toMatchObject({ verdict: 'deny', reason: 'pre-dispatch cleanup could not be confirmed' });
      expect((response.receipt.metadata.budget_authority as Section)['pre_dispatch_cleanup_unconfirmed']).toBe(true);
      expect(f.rail.counters.authorize).toBe(0);
      expect(await f.kinds(cap)).not.toContain('capture_invocation');
      expect(await f.usage(cap)).toEqual({ invocations: 0, committed: 0n });
      const confirmed = await clean.admit(
        f.admitCommand(`req-nonce-id-bound-clean-${label}`, cap, { context, execution_nonce: minted.execution_nonce! }),
      );
      expect(confirmed).toMatchObject({ verdict: 'deny', reason: 'execution nonce does not match the request' });
    });

    for (const release of ['rail_error', 'pending'] as const) {
      it(`B16 a consumed nonce with an unconfirmed release (${release}) keeps payment, capture and usage and says so (${label})`, async () => {
        f = await AuthorityFixture.start({ ...PREFLIGHT, rail: { mode: 'reversible_hold', behaviour: { release } } });
        const cap = await f.issue([MONETARY]);
        const request = `req-nonce-release-unconfirmed-${label}`;
        const preflight = await f.admit(request, cap, { context });
        expect(await f.authority.redeemNonce(preflight.execution_nonce!)).toBe(true);
        const response = await f.admit(request, cap, { context, execution_nonce: preflight.execution_nonce! });
        expect(response.verdict).toBe('deny');
        const financial = response.receipt.metadata.financial;
        expect(financial).toMatchObject({
          payment_release_unconfirmed: true,
          payment_authorization_retained: true,
          payment_release_attempt_reference: request,
        });
        expect(
          (response.receipt.metadata.budget_authority as Record<string, Section>)['invocation_capture']![
            'admission_retained'
          ],
        ).toBe(true);
        if (release === 'pending')
          expect(financial).toMatchObject({
            payment_release_status: 'pending',
            payment_release_reference: 'release_pending_reference',
          });
        expect(await f.usage(cap)).toEqual({ invocations: 1, committed: 100n });
        expect(f.rail.counters).toMatchObject({ authorize: 1, release: 1 });
      });
    }
  }
});
