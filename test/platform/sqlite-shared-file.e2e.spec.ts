// Proves issue 9 item 5: the budget-authority and the agent-orchestrator can share one SQLite
// file. Under a storm of metered work both services' projections write to the same file at
// once, and neither ever halts with SQLITE_BUSY: every write transaction takes the write lock
// when it begins (BEGIN IMMEDIATE), so it waits its turn instead of failing.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';
import { adminHeaders } from '../support/auth.js';

type Json = Record<string, unknown>;

const MODEL = 'bench-model';
/** Enough concurrent units that both projections commit many small batches at the same time. */
const UNITS = 120;
const CONCURRENCY = 40;

let sqlite: Record<string, string>;
const h = new OrchestratorHarness({ prefix: 'sqls', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
beforeAll(async () => {
  // One file for both services, whatever DATABASE_URL says: this is the embedded default's layout.
  sqlite = { DATABASE_URL: '', TALLY_SQLITE_PATH: join(h.dir, 'shared.sqlite') };
  await h.startAuthority(sqlite);
  await h.start(1, sqlite);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

async function projections(url: string): Promise<Json> {
  const res = await fetch(`${url}/readyz`, { headers: adminHeaders() });
  const body = (await res.json()) as { checks: Record<string, { ok: boolean; details?: Json }> };
  return { ok: body.checks['projections']!.ok, ...body.checks['projections']!.details };
}

describe('issue 9 item 5: two services on one SQLite file', () => {
  it('9.5 under concurrent metered load both services project into one SQLite file with no SQLITE_BUSY halt', async () => {
    h.provider().always(MODEL, {
      kind: 'stream',
      chunks: ['paid reply'],
      usage: { input_tokens: 7, output_tokens: 9 },
    });
    const cap = await fetch(`${h.authority!.url}/v1/capabilities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...adminHeaders() },
      body: JSON.stringify({
        subject_public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!,
        ttl_seconds: 3600,
        grants: [{ server_id: 'scripted', tool_name: MODEL, max_total_cost_units: 10_000_000, currency: 'USD' }],
      }),
    }).then((r) => r.json() as Promise<Json>);
    const token = cap['token'] as string;

    const ids: string[] = [];
    for (let start = 0; start < UNITS; start += CONCURRENCY) {
      const batch = Array.from({ length: Math.min(CONCURRENCY, UNITS - start) }, () =>
        workBody({
          token,
          route: [{ provider: 'scripted', model: MODEL }],
          limits: { max_tokens: 16, max_retries: 0 },
        }),
      );
      const accepted = await Promise.all(batch.map((b) => h.post('/v1/work', b)));
      expect(accepted.map((a) => a.status)).toEqual(batch.map(() => 202));
      ids.push(...batch.map((b) => b['work_id'] as string));
    }
    const statuses = await Promise.all(ids.map((id) => h.terminal(id, 180_000)));
    expect(statuses.map((s) => s['status'])).toEqual(ids.map(() => 'completed'));

    // The authority's ledger projection saw every hold settle (its rows are in the same file).
    await h.eventually('the authority usage to show every unit', async () => {
      const res = await fetch(`${h.authority!.url}/v1/capabilities/${cap['id'] as string}/usage`, {
        headers: adminHeaders(),
      });
      const grant = ((await res.json()) as { grants: Json[] }).grants[0]!;
      return grant['invocation_count'] === UNITS && grant['exposed_cost_units'] === 0 ? grant : undefined;
    });

    for (const svc of [h.authority!, h.processes[0]!]) {
      expect({ service: svc.service, ...(await projections(svc.url)) }).toMatchObject({
        service: svc.service,
        ok: true,
        leader: true,
        restarts: 0,
        thread_restarts: 0,
      });
      expect(svc.logs()).not.toMatch(/SQLITE_BUSY|database is locked|projection halted/);
    }
  });
});
