// Proves ADR 0047 on a real authority over real NATS, SQLite or PostgreSQL and a real webhook receiver: an admitted hold never settled is realized in full after its TTL and the grace (usage, ambiguity, ambiguity.recorded webhook, metrics), and a late Settle corrects it by a further event seen by usage, events, receipts, `tally audit capability` and a replay.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runTally } from '../cli/support/run-cli.js';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { admitPayload, AuthorityStack, eventually, monetaryGrant, type Json } from './support/authority-stack.js';
import { compareWithLive, liveDatabase, rebuildIntoEmptyDatabase, waitForLiveCheckpoint } from './support/replay.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const HOLD_TTL_MS = 2_000;
const GRACE_MS = 1_500;
const ENV = {
  TALLY__AUTHORITY__HOLD_TTL_MS: String(HOLD_TTL_MS),
  TALLY__AUTHORITY__UNSETTLED_GRACE_MS: String(GRACE_MS),
  TALLY__AUTHORITY__EXPIRY_INTERVAL_MS: '250',
  TALLY__WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'true',
  TALLY__WEBHOOKS__RETRY_BASE_MS: '200',
};

let stack: AuthorityStack;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  stack = await AuthorityStack.create('bunsettled', { env: ENV });
  await stack.start();
  const hook = await stack.ok('POST', '/v1/tenants/default/webhooks', {
    url: `${receiver.url}/ambiguity`,
    events: ['ambiguity.recorded', 'ambiguity.resolved'],
  });
  receiver.secret('/ambiguity', hook['secret'] as string);
}, 240_000);
afterAll(async () => {
  await stack?.dispose();
  await receiver?.stop();
}, 120_000);

/** Admitted over NATS as the orchestrator does, at a cost of 80; then the orchestrator vanishes. */
async function admitted(cap: Json, requestId: string): Promise<{ holdId: string; admittedAtMs: number }> {
  const answer = await stack.admit(admitPayload(cap['token'], requestId, 'standalone', { requested_cost: 80 }));
  expect(answer['verdict']).toBe('allow');
  return { holdId: answer['hold_id'] as string, admittedAtMs: Date.now() };
}

const realizedInFull = (cap: Json) =>
  eventually(
    () => stack.usage(cap['id']),
    (u) => u['realized_cost_units'] === 80,
    60_000,
    'the hold realized in full',
  );

const ambiguities = async (cap: Json) =>
  (await stack.ok('GET', `/v1/capabilities/${cap['id']}/ambiguities`))['ambiguities'] as Json[];

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${stack.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ').at(-1));
}

const webhookOf = (type: string, holdId: string) =>
  eventually(
    async () =>
      receiver.callsTo('/ambiguity').find((c) => {
        const body = JSON.parse(c.body) as Json;
        return body['type'] === type && body['data']['hold_id'] === holdId;
      }),
    (c) => c !== undefined,
    60_000,
    `the ${type} webhook`,
  );

describe('an unsettled admitted hold is realized in full (ADR 0047)', () => {
  it('B20 an admitted hold never settled is realized in full after its TTL and the grace: usage shows exposed 0 and realized = the exposure, a settlement_missing ambiguity is recorded and its webhook delivered', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const { holdId, admittedAtMs } = await admitted(cap, 'unsettled-1');
    const usage = await realizedInFull(cap);
    expect(Date.now() - admittedAtMs).toBeGreaterThanOrEqual(HOLD_TTL_MS + GRACE_MS);
    expect(usage).toMatchObject({ invocation_count: 1, exposed_cost_units: 0, realized_cost_units: 80 });
    const [swept] = await stack.events(cap['id'], 0, 1);
    expect(swept).toMatchObject({
      kind: 'reconcile_spend',
      cause: 'unsettled_expired',
      hold_id: holdId,
      event_id: `${holdId}:unsettled-expired`,
      exposed_delta_units: -80,
      realized_delta_units: 80,
    });
    const recorded = await eventually(
      () => ambiguities(cap),
      (list) => list.length === 1,
      30_000,
      'the ambiguity',
    );
    expect(recorded[0]).toMatchObject({ kind: 'settlement_missing', hold_id: holdId, resolution: null });
    const call = await webhookOf('ambiguity.recorded', holdId);
    expect(call!.verified).toBe(true);
    expect(JSON.parse(call!.body)['data']).toMatchObject({
      tenant_id: 'default',
      capability_id: cap['id'],
      hold_id: holdId,
      kind: 'settlement_missing',
      ambiguity_id: recorded[0]!['ambiguity_id'],
    });
    expect(await metric('tally_settlements_missing')).toBeGreaterThanOrEqual(1);
    expect(await metric('tally_holds_realized_unsettled_total')).toBeGreaterThanOrEqual(1);
    // Realized, no longer overdue: the exposure is gone, not held forever.
    expect(await metric('tally_holds_settlement_overdue')).toBe(0);
  }, 180_000);

  it('B21 a late settlement completed with a smaller cost corrects it by a further event: usage realized = the cost, the ambiguity resolved, the events list shows both, a second late settle is already settled, and the audit sees both', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const { holdId } = await admitted(cap, 'unsettled-late');
    await realizedInFull(cap);
    const { receipt } = await stack.settle({ hold_id: holdId, outcome: { kind: 'completed', cost_units: 30 } });
    expect([receipt['verdict'], receipt['settlement']]).toEqual(['allow', 'corrected']);
    expect(receipt['metadata']['budget_authority']['correction']).toMatchObject({
      previous_realized_units: 80,
      realized_units: 30,
    });
    const usage = await eventually(
      () => stack.usage(cap['id']),
      (u) => u['realized_cost_units'] === 30,
      30_000,
      'the corrected spend',
    );
    expect(usage).toMatchObject({ invocation_count: 1, exposed_cost_units: 0, committed_cost_units: 30 });
    const events = await stack.events(cap['id'], 0, 2);
    expect(events.map((e) => [e['kind'], e['cause'], e['realized_delta_units']])).toEqual([
      ['correct_spend', 'completed', -50],
      ['reconcile_spend', 'unsettled_expired', 80],
    ]);
    const resolved = await eventually(
      () => ambiguities(cap),
      (list) => list[0]?.['resolution'] !== null,
      30_000,
      'the resolved ambiguity',
    );
    expect(resolved[0]).toMatchObject({ kind: 'settlement_missing', resolution: 'settlement_reported_completed' });
    await webhookOf('ambiguity.resolved', holdId);
    const again = await stack.settle({ hold_id: holdId, outcome: { kind: 'completed', cost_units: 10 } });
    expect([again.receipt['verdict'], again.receipt['reason']]).toEqual(['deny', 'hold is already settled']);
    expect((await stack.usage(cap['id']))['realized_cost_units']).toBe(30);

    const run = await runTally(['--json', 'audit', 'capability', cap['id']], {
      TALLY_AUTHORITY_URL: stack.url,
      TALLY_KEY: TEST_ADMIN_KEY,
    });
    expect({ code: run.code, stderr: run.stderr }).toMatchObject({ code: 0 });
    const audit = JSON.parse(run.stdout) as Json;
    expect(audit['chain']).toMatchObject({ ok: true });
    expect((audit['receipts'] as Json[]).map((r) => [r['kind'], r['settlement'] ?? null])).toEqual([
      ['admission', null],
      ['settlement', 'unsettled_expired'],
      ['settlement', 'corrected'],
      ['settlement', 'rejected'],
    ]);
    const whats = (audit['timeline'] as Json[]).map((e) => e['what']);
    expect(whats).toEqual(expect.arrayContaining(['reconcile_spend', 'correct_spend', 'ambiguity resolved']));
  }, 240_000);
});

describe('audit is a replay (ADR 0047)', () => {
  it('B21 a replay of the stream rebuilds the same usage, events and signed receipts, the sweep and the correction included', async () => {
    const live = await liveDatabase(stack);
    const replayed = await rebuildIntoEmptyDatabase(stack);
    try {
      await waitForLiveCheckpoint(live, stack.names.budgetEventsStream, replayed.checkpoint, 60_000);
      const comparison = await compareWithLive(live, replayed.dataSource);
      expect(comparison).toMatchObject({ usageEqual: true, receiptsEqual: true, digestEqual: true });
      expect(comparison.resigned).toBe(comparison.receipts);
    } finally {
      await replayed.dispose();
      await live.destroy();
    }
  }, 180_000);
});
