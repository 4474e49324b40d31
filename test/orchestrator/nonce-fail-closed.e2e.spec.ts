// Issue 8, the nonce fail-open: with the authority's require_execution_nonce on, an Admit
// without a nonce is a preflight (an allow with dispatch: false and no admission proof).
// The orchestrator must never treat it as an admission: the unit run end to end through
// the real authority and orchestrator makes no paid call (counted at the real local
// provider server), fails naming why, and its preflight hold is rolled back.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'nonce8', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
beforeAll(async () => {
  await h.startAuthority({ TALLY__AUTHORITY__REQUIRE_EXECUTION_NONCE: 'true' });
  await h.start(1);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

type Json = Record<string, unknown>;

const authority = (method: string, path: string, body?: unknown): Promise<Json> => h.authorityCall(method, path, body);

describe('Issue 8: the orchestrator dispatches only on a real admission', () => {
  it('Issue 8 / O7: with require_execution_nonce=true a metered unit makes no paid call without a real admission, fails naming why, and leaves no spend', async () => {
    const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    const cap = await authority('POST', '/v1/capabilities', {
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
    h.provider().script('ok-model', [{ kind: 'stream', chunks: ['must never be paid for'] }]);
    const body = workBody({ token: cap['token'] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const status = await h.terminal(body['work_id'] as string);
    expect(status['status']).toBe('failed');
    expect(String(status['error'])).toContain('not_dispatchable');
    expect(h.calls('ok-model')).toBe(0);
    // The authority did answer a preflight (so the refusal is the orchestrator's, not a deny) and rolled it back.
    const usage = await h.eventually('the preflight hold to be rolled back', async () => {
      const u = ((await authority('GET', `/v1/capabilities/${cap['id']}/usage`))['grants'] as Json[])[0]!;
      return u['committed_cost_units'] === 0 ? u : undefined;
    });
    expect(usage['invocation_count']).toBe(0);
    const holds = (await authority('GET', `/v1/capabilities/${cap['id']}/holds`))['holds'] as Json[];
    expect(holds.length).toBeGreaterThan(0);
    expect(holds.every((hold) => hold['preflight'] === true)).toBe(true);
  });
});
