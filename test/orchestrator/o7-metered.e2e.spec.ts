// Proves O7 against the real budget-authority process: every paid dispatch is admitted
// first (server_id = provider name, tool_name = model) with a worst-case hold and settled
// with the realized cost; a refused admission means no dispatch and the authority's reason.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'o7', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

type Json = Record<string, unknown>;

const authority = (method: string, path: string, body?: unknown): Promise<Json> => h.authorityCall(method, path, body);

async function issue(grants: Json[]): Promise<Json> {
  const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  return authority('POST', '/v1/capabilities', { subject_public_key: subject, ttl_seconds: 3600, grants });
}

describe('agent-orchestrator O7 metered by the real budget-authority', () => {
  it('O7 a paid dispatch is admitted per provider and model, then settled at the realized cost from usage', async () => {
    const cap = await issue([
      {
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_invocations: 5,
        max_cost_per_invocation: 1_000,
        max_total_cost_units: 5_000,
        currency: 'USD',
      },
    ]);
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['metered reply'], usage: { input_tokens: 5, output_tokens: 3 } },
    ]);
    const body = workBody({ token: cap['token'] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({ status: 'completed', output: 'metered reply' });
    const receipt = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body;
    expect(receipt['metered']).toBe(true);
    const attempt = (receipt['attempts'] as Json[])[0]!;
    expect(String(attempt['hold_id'])).not.toMatch(/^unmetered:/);
    // 5 input tokens at 1,000,000/Mtok + 3 output tokens at 2,000,000/Mtok = 11 units.
    expect(attempt['usage']).toEqual({ input_tokens: 5, output_tokens: 3, cost_units: 11 });
    const usage = await h.eventually('the authority to record the realized cost', async () => {
      const u = ((await authority('GET', `/v1/capabilities/${cap['id']}/usage`))['grants'] as Json[])[0]!;
      return u['realized_cost_units'] === 11 ? u : undefined;
    });
    expect(usage['invocation_count']).toBe(1);
  });

  it('O7 a refused admission dispatches nothing and fails the work with the authority reason', async () => {
    const cap = await issue([
      {
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_invocations: 5,
        max_cost_per_invocation: 1_000,
        currency: 'USD',
      },
    ]);
    const body = workBody({ token: cap['token'], route: [{ provider: 'scripted', model: 'flaky-model' }] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const status = await h.terminal(body['work_id'] as string);
    expect(status['status']).toBe('failed');
    expect(status['error']).toContain('admission denied by the budget authority');
    expect(h.calls('flaky-model')).toBe(0);
    expect((await h.get(`/v1/work/${body['work_id']}/receipt`)).body['attempts']).toEqual([]);
  });

  it('O7 the hold is the worst case: a per-invocation cap below price × (prompt estimate + max_tokens) is refused before any call', async () => {
    // max_tokens 64 at 2,000,000/Mtok alone is 128 units; the cap is 100.
    const cap = await issue([
      {
        server_id: 'scripted',
        tool_name: 'slow-model',
        max_invocations: 5,
        max_cost_per_invocation: 100,
        currency: 'USD',
      },
    ]);
    const body = workBody({ token: cap['token'], route: [{ provider: 'scripted', model: 'slow-model' }] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    expect((await h.terminal(body['work_id'] as string))['status']).toBe('failed');
    expect(h.calls('slow-model')).toBe(0);
  });
});
