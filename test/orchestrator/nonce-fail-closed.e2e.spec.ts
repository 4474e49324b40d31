// Issue 8, the nonce fail-open: with the authority's require_execution_nonce on, an Admit
// without a nonce is a preflight (an allow with dispatch: false and no admission proof).
// The orchestrator must never treat it as an admission. Run end to end through the real
// authority and orchestrator: the unit succeeds only through the redeem of the nonce, its one
// paid call (counted at the real local provider server) made after the nonce was consumed;
// and a preflight given in answer to the redeem is refused, with no paid call and no spend.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { AuthorityLedger, firstAttemptOf, unitAdmit } from './authority-ledger.js';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'nonce8', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
let ledger: AuthorityLedger;
beforeAll(async () => {
  await h.startAuthority({ TALLY__AUTHORITY__REQUIRE_EXECUTION_NONCE: 'true' });
  await h.start(1);
  ledger = await AuthorityLedger.open(h.natsUrl, h.namespace);
}, 240_000);
afterAll(async () => {
  await ledger?.close();
  await h.dispose();
}, 60_000);

type Json = Record<string, unknown>;

const authority = (method: string, path: string, body?: unknown): Promise<Json> => h.authorityCall(method, path, body);

async function issue(): Promise<Json> {
  const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  return authority('POST', '/v1/capabilities', {
    subject_public_key: subject,
    ttl_seconds: 3600,
    grants: [
      {
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_invocations: 5,
        max_cost_per_invocation: 1_000,
        max_total_cost_units: 5_000,
        currency: 'USD',
      },
    ],
  });
}

const holdsOf = async (capId: unknown): Promise<Json[]> =>
  (await authority('GET', `/v1/capabilities/${capId}/holds`))['holds'] as Json[];

describe('Issue 8: the orchestrator dispatches only on a real admission', () => {
  it('Issue 8 / B13 O7 the preflight answer is never dispatched: the unit succeeds through the redeem, its one paid call made after the nonce was consumed, and the preflight hold is rolled back', async () => {
    const cap = await issue();
    h.provider().script('ok-model', [{ kind: 'stream', chunks: ['paid after the redeem'] }]);
    const body = workBody({ token: cap['token'] });
    const before = h.calls('ok-model');
    // Requests are held at the provider once recorded, so the ledger can be read while the one call is open.
    h.provider().holdResponses();
    try {
      expect((await h.post('/v1/work', body)).status).toBe(202);
      await h.eventually('the paid call', async () => (h.calls('ok-model') > before ? true : undefined));
      const types = (await ledger.events(cap['id'] as string)).map((e) => e.type);
      expect(types).toContain('NonceIssued');
      expect(types).toContain('NonceConsumed');
      expect(types.indexOf('NonceIssued')).toBeLessThan(types.indexOf('NonceConsumed'));
    } finally {
      h.provider().releaseResponses();
    }
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({ status: 'completed' });
    expect(h.calls('ok-model') - before).toBe(1);
    // The unit's first Admit, replayed by its command id, is the preflight: no dispatch, no proof.
    const first = await ledger.admit(firstAttemptOf(body).commandId, unitAdmit(body, cap['token'] as string));
    expect(first).toMatchObject({ verdict: 'allow', dispatch: false });
    expect(first['admission_proof']).toBeUndefined();
    const holds = await holdsOf(cap['id']);
    expect(holds.filter((hold) => hold['preflight'] === true).map((hold) => hold['status'])).toEqual(['reversed']);
    expect(holds.filter((hold) => hold['preflight'] !== true)).toHaveLength(1);
  });

  it('Issue 8 / B13 O7 a second preflight in answer to the redeem is refused: no paid call, the unit fails naming not_dispatchable, and leaves no spend', async () => {
    const cap = await issue();
    const token = cap['token'] as string;
    const body = workBody({ token });
    const { commandId } = firstAttemptOf(body);
    // Both of the unit's asks are answered before it runs: its first Admit and its redeem each get a preflight.
    await ledger.admit(commandId, unitAdmit(body, token));
    const second = await ledger.admit(`${commandId}:nonce`, unitAdmit(body, token, { request_id: 'another-request' }));
    expect(second).toMatchObject({ verdict: 'allow', dispatch: false });
    expect(typeof second['execution_nonce']).toBe('string');
    const before = h.calls('ok-model');
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const status = await h.terminal(body['work_id'] as string);
    expect(status['status']).toBe('failed');
    expect(String(status['error'])).toContain(
      'not_dispatchable: the redeem of the execution nonce did not say dispatch (another preflight)',
    );
    expect(h.calls('ok-model') - before).toBe(0);
    // Both preflights were rolled back: nothing is committed and nothing was invoked.
    const usage = await h.eventually('the preflight holds to be rolled back', async () => {
      const u = ((await authority('GET', `/v1/capabilities/${cap['id']}/usage`))['grants'] as Json[])[0]!;
      return u['committed_cost_units'] === 0 ? u : undefined;
    });
    expect(usage['invocation_count']).toBe(0);
    const holds = await holdsOf(cap['id']);
    expect(holds).toHaveLength(2);
    expect(holds.every((hold) => hold['preflight'] === true)).toBe(true);
  });
});
