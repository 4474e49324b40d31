// Proves issue 12 item 1's audit commands against a running stack (the budget-authority, a
// metered orchestrator, a scripted provider over HTTP): `tally audit work` shows a unit's
// submission, each attempt with its admission, hold, outcome and settlement, the receipts
// and the cost; a refused unit shows its refused admission; `tally audit capability` shows
// the capability's holds, receipts, usage and an intact chain (exit 0), and names the
// receipt an authority in the middle altered (exit 1). Both print tables and --json.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { issueCapability, meteredHarness } from '../gateway/gateway.support.js';
import { workBody } from '../orchestrator/orchestrator.harness.js';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { runTally } from './support/run-cli.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const h = meteredHarness('auditcli');
/** Each CLI run is its own process: seconds each on a loaded 2-core machine. */
const CLI_TEST_TIMEOUT_MS = 240_000;

let capability: { id: string; token: string };
let completed: string;
let refused: string;

const cli = (args: string[], authority = h.authority!.url) =>
  runTally(args, { TALLY_AUTHORITY_URL: authority, TALLY_ORCHESTRATOR_URL: h.url, TALLY_KEY: TEST_ADMIN_KEY }, 120_000);

beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
  capability = await issueCapability(h, [
    { server_id: 'scripted', tool_name: 'flaky-model', max_total_cost_units: 100_000 },
  ]);
  h.provider().script('flaky-model', [
    { kind: 'reset' },
    { kind: 'stream', chunks: ['audited'], usage: { input_tokens: 5, output_tokens: 3 } },
  ]);
  const ok = workBody({ token: capability.token, route: [{ provider: 'scripted', model: 'flaky-model' }] });
  expect((await h.post('/v1/work', ok)).status).toBe(202);
  completed = ok['work_id'] as string;
  const no = workBody({ token: capability.token, route: [{ provider: 'scripted', model: 'ok-model' }] });
  expect((await h.post('/v1/work', no)).status).toBe(202);
  refused = no['work_id'] as string;
  expect(await h.terminal(completed)).toMatchObject({ status: 'completed' });
  expect(await h.terminal(refused)).toMatchObject({ status: 'failed' });
}, 300_000);
afterAll(() => h.dispose(), 60_000);

describe('Issue 12: tally audit', () => {
  it(
    'Issue 12: tally audit work --json gives the timeline and each attempt with its admission, hold, outcome, settlement, receipts and cost',
    async () => {
      const run = await cli(['--json', 'audit', 'work', completed]);
      expect({ code: run.code, stderr: run.stderr }).toMatchObject({ code: 0 });
      const audit = JSON.parse(run.stdout) as Json;
      expect(audit).toMatchObject({ work_id: completed, status: 'completed', purpose: 'execute', metered: true });
      expect(audit['timeline'].map((e: Json) => e['type'])).toEqual([
        'WorkSubmitted',
        'AttemptStarted',
        'AttemptSettled',
        'HoldSettled',
        'AttemptStarted',
        'AttemptSettled',
        'HoldSettled',
        'WorkCompleted',
      ]);
      // The conversation stays out of the timeline.
      expect(JSON.stringify(audit['timeline'])).not.toContain('audited');
      const [first, second] = audit['attempts'] as Json[];
      expect(first).toMatchObject({
        ordinal: 0,
        reason: 'initial',
        provider: 'scripted',
        domain: 'network',
        settlement: 'unknown',
        hold_outcome: 'failed_after_dispatch',
        admission: { kind: 'admission', verdict: 'allow' },
        settlement_receipt: { kind: 'settlement' },
      });
      expect(second).toMatchObject({
        ordinal: 1,
        reason: 'retry',
        settlement: 'ok',
        hold_outcome: 'completed',
        input_tokens: 5,
        output_tokens: 3,
        cost_units: '11',
        admission: { verdict: 'allow' },
      });
      // The failed attempt keeps its whole hold (B5): the unit costs that worst case plus the realized 11.
      expect(audit['cost_units']).toBe(String(BigInt(first['hold_cost_units']) + 11n));
      expect(audit['currency']).toBe('USD');
      expect(audit['conclusion']).toMatchObject({ type: 'WorkCompleted', winning_attempt: 1 });
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 12: tally audit work prints tables, and a refused unit shows its refused admission with the reason',
    async () => {
      const table = await cli(['audit', 'work', completed]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/^status:\s+completed$/m);
      expect(table.stdout).toMatch(/^AT\s+EVENT\s+DETAIL$/m);
      expect(table.stdout).toMatch(/AttemptSettled\s+#0, network, unknown/);
      expect(table.stdout).toMatch(/^\s*1\s+retry\s+scripted\/flaky-model\s+allow/m);
      expect(table.stdout).toMatch(/^\s*0\s+admission\s+allow/m);
      const run = await cli(['--json', 'audit', 'work', refused]);
      expect(run.code).toBe(0);
      const audit = JSON.parse(run.stdout) as Json;
      expect(audit).toMatchObject({ status: 'failed', conclusion: { type: 'WorkFailed', code: 'admission_denied' } });
      expect(audit['attempts']).toEqual([
        expect.objectContaining({
          ordinal: 0,
          reason: 'refused',
          cost_units: '0',
          admission: expect.objectContaining({ verdict: 'deny', reason: expect.stringContaining('no grant covers') }),
        }),
      ]);
      const missing = await cli(['audit', 'work', 'no-such-unit']);
      expect(missing.code).toBe(5);
      expect(missing.stderr).not.toMatch(/\n\s+at /);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    "Issue 12: tally audit capability shows the holds, receipts, usage and timeline, and checks the receipts' signatures and chain (exit 0)",
    async () => {
      const run = await cli(['--json', 'audit', 'capability', capability.id]);
      expect({ code: run.code, stderr: run.stderr }).toMatchObject({ code: 0 });
      const audit = JSON.parse(run.stdout) as Json;
      // Three admissions (two allowed, one denied) and two settlements (the two units ran at once), chained 0..4.
      const receipts = audit['receipts'] as Json[];
      expect(receipts.map((r) => r['chain_index'])).toEqual([0, 1, 2, 3, 4]);
      expect(receipts.map((r) => `${r['kind']}:${r['verdict']}`).sort()).toEqual([
        'admission:allow',
        'admission:allow',
        'admission:deny',
        'settlement:allow',
        'settlement:deny',
      ]);
      expect(audit['chain']).toEqual({ ok: true, receipts: 5, unchained: 0, bad: [] });
      expect(audit['holds'].map((x: Json) => x['status']).sort()).toEqual(['retained', 'settled']);
      expect(audit['usage'][0]).toMatchObject({ grant_index: 0, invocation_count: 2, currency: 'USD' });
      const whats = audit['timeline'].map((e: Json) => e['what']);
      expect(whats[0]).toBe('issued');
      expect(whats.filter((w: string) => w.startsWith('receipt '))).toHaveLength(5);
      const table = await cli(['audit', 'capability', capability.id]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/^intact: 5 receipts/m);
      expect(table.stdout).toMatch(/^GRANT\s+INVOCATIONS\s+EXPOSED/m);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 12: tally audit capability names a receipt altered on its way and exits 1',
    async () => {
      const proxy = await tamperingProxy(h.authority!.url);
      try {
        const run = await cli(['--json', 'audit', 'capability', capability.id], proxy.url);
        expect(run.code).toBe(1);
        const audit = JSON.parse(run.stdout) as Json;
        expect(audit['chain']['ok']).toBe(false);
        expect(audit['chain']['bad']).toEqual([
          expect.objectContaining({ line: 2, reasons: [expect.stringContaining('signature does not verify')] }),
        ]);
        const table = await cli(['audit', 'capability', capability.id], proxy.url);
        expect(table.code).toBe(1);
        expect(table.stdout).toMatch(/^receipt 2 \(.+\): signature does not verify/m);
        expect(table.stdout).toMatch(/^BROKEN: 5 receipts/m);
      } finally {
        await proxy.close();
      }
    },
    CLI_TEST_TIMEOUT_MS,
  );
});

/** A real HTTP server in front of the authority that changes the second receipt's settlement in every receipts page. */
async function tamperingProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const upstream = await fetch(`${target}${req.url}`, {
        headers: { authorization: req.headers.authorization ?? '' },
      });
      let text = await upstream.text();
      if (req.url?.startsWith('/v1/receipts?') && upstream.ok) {
        const body = JSON.parse(text) as Json;
        if (body['receipts'][1]) body['receipts'][1]['settlement'] = 'tampered';
        text = JSON.stringify(body);
      }
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(text);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
