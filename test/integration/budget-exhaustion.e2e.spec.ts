// Proves O7 with B19 across the two real processes: a grant that allows only a few
// worst-case holds runs out mid-run; from the first refusal on nothing more is dispatched,
// each refused unit fails with the authority's own reason, and the authority's usage is
// exactly the sum of the realized costs on the orchestrator's receipts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';

type Json = Record<string, unknown>;

const MODEL = 'bench-model';
/** Every reply reports this usage: 7 input tokens at 1,000,000/Mtok + 60 output at 2,000,000/Mtok = 127 units. */
const USAGE = { input_tokens: 7, output_tokens: 60 };
const REALIZED_UNITS = 127;
/**
 * The hold (ADR 0042): the prompt's bound is its 9 UTF-8 bytes ("user" + "hello") + 8 framing tokens for the
 * message + 8 for the reply's priming = 25 prompt tokens → 25 units, + 64 max_tokens × 2 = 128 units.
 */
const WORST_CASE_UNITS = 153;
/** Room for three worst-case holds at once, no more. */
const GRANT_TOTAL_UNITS = 3 * WORST_CASE_UNITS;
/** Sequential units before the first refusal: admitted while 127·n + 153 ≤ 459, i.e. n = 0, 1, 2. */
const ADMITTED_UNITS = 3;
/** A bound on the run, well past the point where the grant must be exhausted. */
const UNITS_MAX = 10;

const h = new OrchestratorHarness({ prefix: 'bx', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

const authority = (method: string, path: string, body?: unknown): Promise<Json> => h.authorityCall(method, path, body);

async function submit(token: string): Promise<string> {
  const body = workBody({
    token,
    route: [{ provider: 'scripted', model: MODEL }],
    limits: { max_tokens: 64, timeout_ms: 10_000, max_retries: 0 },
  });
  const res = await h.post('/v1/work', body);
  expect(res.status).toBe(202);
  return body['work_id'] as string;
}

/** The reason on the authority's signed receipt for the unit's first admission. */
async function authorityReason(workId: string): Promise<string> {
  const { receipts } = (await authority(
    'GET',
    `/v1/receipts?request_id=${encodeURIComponent(`${workId}:attempt:0`)}`,
  )) as { receipts: Json[] };
  const deny = receipts.find((r) => r['verdict'] === 'deny');
  if (!deny) throw new Error(`no deny receipt for ${workId}: ${JSON.stringify(receipts)}`);
  return deny['reason'] as string;
}

describe('O7/B19 budget exhaustion across the real budget-authority and agent-orchestrator', () => {
  it('O7/B19 once the grant is exhausted nothing more is dispatched, refused units fail with the authority reason, and authority usage equals the receipts realized costs', async () => {
    const ready = await h.get('/readyz');
    expect(JSON.stringify(ready.body)).toContain('"mode":"metered"');
    h.provider().always(MODEL, { kind: 'stream', chunks: ['paid reply'], usage: USAGE });
    const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    const cap = await authority('POST', '/v1/capabilities', {
      subject_public_key: subject,
      ttl_seconds: 3600,
      grants: [{ server_id: 'scripted', tool_name: MODEL, max_total_cost_units: GRANT_TOTAL_UNITS, currency: 'USD' }],
    });
    const token = cap['token'] as string;

    // Submit one unit at a time until the authority refuses one.
    const completed: string[] = [];
    let refused: string | undefined;
    for (let i = 0; i < UNITS_MAX && refused === undefined; i++) {
      const workId = await submit(token);
      const status = await h.terminal(workId);
      if (status['status'] === 'completed') completed.push(workId);
      else refused = workId;
    }
    expect(completed).toHaveLength(ADMITTED_UNITS);
    expect(refused).toBeDefined();
    const callsAtExhaustion = h.calls(MODEL);
    expect(callsAtExhaustion).toBe(ADMITTED_UNITS);

    // More work after exhaustion, some of it at once: every unit is refused and no paid call is made.
    const late = await Promise.all([submit(token), submit(token), submit(token)]);
    const refusedUnits = [refused!, ...late];
    for (const workId of refusedUnits) {
      const status = await h.terminal(workId);
      expect(status['status']).toBe('failed');
      expect(status['error']).toBe(`admission denied by the budget authority: ${await authorityReason(workId)}`);
      expect((await h.get(`/v1/work/${workId}/receipt`)).body['attempts']).toEqual([]);
    }
    expect(h.calls(MODEL)).toBe(callsAtExhaustion);

    // The two ledgers agree: realized cost per receipt (usage × price) sums to the authority's usage.
    let receiptsTotal = 0;
    for (const workId of completed) {
      const receipt = (await h.get(`/v1/work/${workId}/receipt`)).body;
      expect(receipt['metered']).toBe(true);
      const attempts = receipt['attempts'] as Json[];
      expect(attempts).toHaveLength(1);
      expect(attempts[0]!['usage']).toEqual({ ...USAGE, cost_units: REALIZED_UNITS });
      receiptsTotal += (attempts[0]!['usage'] as Json)['cost_units'] as number;
    }
    expect(receiptsTotal).toBe(ADMITTED_UNITS * REALIZED_UNITS);
    const usage = await h.eventually('the authority usage to settle every hold', async () => {
      const grant = ((await authority('GET', `/v1/capabilities/${cap['id']}/usage`))['grants'] as Json[])[0]!;
      return grant['exposed_cost_units'] === 0 && grant['realized_cost_units'] === receiptsTotal ? grant : undefined;
    });
    expect(usage).toMatchObject({
      invocation_count: ADMITTED_UNITS,
      realized_cost_units: receiptsTotal,
      committed_cost_units: receiptsTotal,
    });
    expect(usage['committed_cost_units'] as number).toBeLessThanOrEqual(GRANT_TOTAL_UNITS);
  });
});
