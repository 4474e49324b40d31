// Proves ADR 0047 with real processes: a metered orchestrator admits a call at the real authority and is SIGKILLed mid-dispatch, before it settles, and never comes back; its hold does not stay exposed, it is realized in full once its TTL and the grace pass, with a settlement_missing ambiguity.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { issueCapability } from '../gateway/gateway.support.js';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

type Json = Record<string, unknown>;

const HOLD_TTL_MS = 2_000;
const GRACE_MS = 2_000;
const h = new OrchestratorHarness({ prefix: 'okill', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
beforeAll(async () => {
  await h.startAuthority({
    TALLY__AUTHORITY__HOLD_TTL_MS: String(HOLD_TTL_MS),
    TALLY__AUTHORITY__UNSETTLED_GRACE_MS: String(GRACE_MS),
    TALLY__AUTHORITY__EXPIRY_INTERVAL_MS: '250',
  });
  await h.start(1);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

const authority = (path: string): Promise<Json> => h.authorityCall('GET', path);

describe('an orchestrator killed before it settles leaves no hold exposed (ADR 0047)', () => {
  it('B20 the orchestrator admits, is SIGKILLed mid-dispatch and never comes back: its hold ends realized in full after its TTL and the grace, not exposed for ever', async () => {
    const cap = await issueCapability(h, [{ server_id: 'scripted', tool_name: 'hang-model' }]);
    h.provider().always('hang-model', { kind: 'hang' });
    const body = workBody({
      token: cap.token,
      route: [{ provider: 'scripted', model: 'hang-model' }],
      limits: { max_retries: 0, run_retry_attempts: 0, max_tokens: 64, timeout_ms: 120_000 },
    });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    // The provider has the call, so the Admit was allowed and the hold admitted for dispatch.
    await h.eventually('the paid call to reach the provider', async () =>
      h.calls('hang-model') > 0 ? true : undefined,
    );
    await h.processes[0]!.stop('SIGKILL');
    const killedAtMs = Date.now();
    const [hold] = (await authority(`/v1/capabilities/${cap.id}/holds`))['holds'] as Json[];
    expect(hold).toMatchObject({ status: 'admitted' });
    const exposure = hold!['exposure_units'] as number;
    expect(exposure).toBeGreaterThan(0);

    const usage = await h.eventually('the hold realized in full', async () => {
      const grant = ((await authority(`/v1/capabilities/${cap.id}/usage`))['grants'] as Json[])[0]!;
      return grant['realized_cost_units'] === exposure ? grant : undefined;
    });
    expect(usage).toMatchObject({ invocation_count: 1, exposed_cost_units: 0, committed_cost_units: exposure });
    // Not before the hold's TTL and the grace: a settlement could still have come until then.
    const expiresAtMs = Date.parse(hold!['expires_at'] as string);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAtMs + GRACE_MS);
    expect(Date.now() - killedAtMs).toBeLessThan(60_000);
    const ambiguities = (await authority(`/v1/capabilities/${cap.id}/ambiguities`))['ambiguities'] as Json[];
    expect(ambiguities).toEqual([
      expect.objectContaining({ kind: 'settlement_missing', hold_id: hold!['hold_id'], resolution: null }),
    ]);
    const [after] = (await authority(`/v1/capabilities/${cap.id}/holds`))['holds'] as Json[];
    expect(after).toMatchObject({ hold_id: hold!['hold_id'], status: 'settled' });
    expect(h.calls('hang-model')).toBe(1);
  }, 240_000);
});
