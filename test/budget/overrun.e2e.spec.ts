// Proves ADR 0043 on a real authority over real NATS, SQLite or PostgreSQL and a real webhook receiver: a charge
// beyond its hold is booked whole (usage, receipt, metric, budget.overrun webhook) and shuts its grant; a settlement
// or increase in another currency than its hold's is a 422 over HTTP and a rejection over NATS and books nothing;
// a capability whose grants name two currencies keeps them apart in usage and in GET /v1/spend.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UsageRow } from '@tally/budget-projections';
import { admitPayload, AuthorityStack, eventually, type Json } from './support/authority-stack.js';
import { compareWithLive, liveDatabase, rebuildIntoEmptyDatabase, waitForLiveCheckpoint } from './support/replay.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const USD = { server_id: 'cost-srv', tool_name: 'compute', currency: 'USD' };
const ENV = { TALLY__WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'true', TALLY__WEBHOOKS__RETRY_BASE_MS: '200' };

let stack: AuthorityStack;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  stack = await AuthorityStack.create('boverrun', { env: ENV });
  await stack.start();
  const hook = await stack.ok('POST', '/v1/tenants/default/webhooks', {
    url: `${receiver.url}/overrun`,
    events: ['budget.overrun'],
  });
  receiver.secret('/overrun', hook['secret'] as string);
}, 240_000);
afterAll(async () => {
  await stack?.dispose();
  await receiver?.stop();
}, 120_000);

const rail = async () => (await stack.faults({}))[0]!['rail'] as Json;

/** Admitted over NATS, as the orchestrator does; the hold id and its admission proof are kept by the stack. */
async function admitted(cap: Json, requestId: string, extra: Json = {}): Promise<string> {
  const answer = await stack.admit(admitPayload(cap['token'], requestId, 'standalone', extra));
  expect(answer['verdict']).toBe('allow');
  return answer['hold_id'] as string;
}

const settleBody = (holdId: string, cost: number, currency: string) => ({
  hold_id: holdId,
  outcome: { kind: 'completed', cost_units: cost, currency },
});

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${stack.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('overruns are booked in full (ADR 0043)', () => {
  it('B19 a settle whose cost exceeds its hold books the whole charge: usage shows realized = the provider charge with overrun_cost_units, the receipt and /metrics carry the overrun, budget.overrun is delivered, and the next admission is refused', async () => {
    const cap = await stack.issue([{ ...USD, max_cost_per_invocation: 1000, max_total_cost_units: 1000 }]);
    await stack.settle(settleBody(await admitted(cap, 'ov-1', { requested_cost: 900 }), 900, 'USD'));
    const holdId = await admitted(cap, 'ov-2', { requested_cost: 100 });
    const { receipt } = await stack.settle(settleBody(holdId, 306, 'USD'));
    expect(receipt['verdict']).toBe('allow');
    expect(receipt['metadata']['budget_authority']).toMatchObject({
      overrun_units: 206,
      terminal: { kind: 'capture_spend', realized_units: 306, overrun_units: 206 },
    });
    // The rail captures at most what it authorized; the ledger books what the provider billed.
    expect(receipt['metadata']['financial']).toMatchObject({ payment_capture_amount_units: 100 });

    const usage = await eventually(
      () => stack.usage(cap['id']),
      (u) => u['realized_cost_units'] === 1206,
      30_000,
      'the booked overrun',
    );
    expect(usage).toMatchObject({
      invocation_count: 2,
      exposed_cost_units: 0,
      realized_cost_units: 1206,
      committed_cost_units: 1206,
      overrun_cost_units: 206,
      currency: 'USD',
    });
    expect((await stack.events(cap['id'], 0, 1))[0]).toMatchObject({
      kind: 'capture_spend',
      realized_delta_units: 306,
      exposed_delta_units: -100,
    });
    // The receipt the projection keeps (and a replay rebuilds) is the one answered, overrun and all.
    expect(await stack.receipt(receipt['id'] as string)).toEqual(receipt);

    const next = await stack.admit(admitPayload(cap['token'], 'ov-3', 'standalone', { requested_cost: 1 }));
    expect(next).toMatchObject({ verdict: 'deny', reason: 'budget overrun: spend is past the limit' });
    expect((await stack.usage(cap['id']))['invocation_count']).toBe(2);

    const call = await eventually(
      async () => receiver.callsTo('/overrun').find((c) => JSON.parse(c.body)['data']['hold_id'] === holdId),
      (c) => c !== undefined,
      60_000,
      'the budget.overrun webhook',
    );
    expect(call!.verified).toBe(true);
    expect(JSON.parse(call!.body)).toMatchObject({
      type: 'budget.overrun',
      data: {
        tenant_id: 'default',
        capability_id: cap['id'],
        grant_index: 0,
        hold_id: holdId,
        overrun_units: 206,
        realized_units: 306,
        hold_units: 100,
        committed_units: 1206,
        limit_units: 1000,
        currency: 'USD',
      },
    });
    expect(await metric('tally_budget_overrun_units_total', 'currency="USD"')).toBe(206);
    expect(await metric('tally_admissions_total', 'verdict="deny",reason="budget_overrun"')).toBe(1);
  }, 180_000);
});

describe('currencies never mix (ADR 0043)', () => {
  it('ADR 0043 a settlement in EUR on a USD hold is a 422 currency_mismatch naming outcome.currency over HTTP, a rejection over NATS, and books nothing', async () => {
    const cap = await stack.issue([{ ...USD, max_cost_per_invocation: 100, max_total_cost_units: 1000 }]);
    const holdId = await admitted(cap, 'cur-settle', { requested_cost: 100 });
    const captures = (await rail())['capture'] as number;

    const http = await stack.http('POST', '/v1/settlements', settleBody(holdId, 40, 'EUR'));
    expect(http.status).toBe(422);
    expect(http.headers.get('content-type')).toContain('application/problem+json');
    expect(http.body).toMatchObject({
      type: 'currency_mismatch',
      status: 422,
      errors: [{ field: 'outcome.currency', message: "currency EUR differs from the hold's USD" }],
    });
    const nats = await stack.send('settle', stack.withProof(settleBody(holdId, 40, 'EUR')), stack.nextCommandId('eur'));
    expect(nats).toMatchObject({
      ok: false,
      error: {
        type: 'rejected',
        reason: 'currency_mismatch',
        detail: { errors: [{ field: 'outcome.currency' }] },
      },
    });
    expect((await rail())['capture']).toBe(captures);
    expect(await stack.usage(cap['id'])).toMatchObject({ exposed_cost_units: 100, realized_cost_units: 0 });
    expect((await stack.events(cap['id'])).map((e) => e['kind'])).not.toContain('reconcile_spend');

    // The hold is still open (a booked settlement would deny this one): its own currency settles it, once.
    expect((await stack.settle(settleBody(holdId, 40, 'USD')))['receipt']['verdict']).toBe('allow');
    await eventually(
      () => stack.usage(cap['id']),
      (u) => u['realized_cost_units'] === 40 && u['exposed_cost_units'] === 0,
      30_000,
      'the USD settlement',
    );
  }, 120_000);

  it('ADR 0043 an increase in EUR on a USD hold is a 422 currency_mismatch naming currency over HTTP, a rejection over NATS, and raises nothing', async () => {
    const cap = await stack.issue([{ ...USD, max_cost_per_invocation: 100, max_total_cost_units: 1000 }]);
    const holdId = await admitted(cap, 'cur-increase', { requested_cost: 10 });
    const path = `/v1/holds/${encodeURIComponent(holdId)}/increase`;
    const http = await stack.http('POST', path, { amount_units: 5, currency: 'EUR' });
    expect(http.status).toBe(422);
    expect(http.body).toMatchObject({ type: 'currency_mismatch', errors: [{ field: 'currency' }] });
    const body = stack.withProof({ hold_id: holdId, amount_units: 5, currency: 'EUR' });
    const nats = await stack.send('increase', body, stack.nextCommandId('eur'));
    expect(nats).toMatchObject({ ok: false, error: { type: 'rejected', reason: 'currency_mismatch' } });

    // Neither refusal raised the hold: the first increase in its own currency takes it from 10 to 15.
    const raised = await stack.http('POST', path, { amount_units: 5, currency: 'USD' });
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({ verdict: 'allow', hold_units: 15, increase: 1 });
    await eventually(
      () => stack.usage(cap['id']),
      (u) => u['exposed_cost_units'] === 15,
      30_000,
      'the USD increase',
    );
  }, 120_000);

  it('ADR 0043 a capability whose grants name USD and EUR keeps each apart in its usage and in GET /v1/spend', async () => {
    const eur = { server_id: 'cost-srv', tool_name: 'translate', currency: 'EUR', max_cost_per_invocation: 100 };
    const cap = await stack.issue([{ ...USD, max_cost_per_invocation: 100 }, eur]);
    await stack.settle(settleBody(await admitted(cap, 'two-usd', { requested_cost: 50 }), 30, 'USD'));
    const eurHold = await admitted(cap, 'two-eur', { requested_cost: 50, tool_name: 'translate' });
    await stack.settle(settleBody(eurHold, 7, 'EUR'));

    const grants = await eventually(
      async () => (await stack.ok('GET', `/v1/capabilities/${cap['id']}/usage`))['grants'] as Json[],
      (g) => g.every((x) => x['realized_cost_units'] > 0),
      30_000,
      'both settlements in usage',
    );
    expect(grants.map((g) => [g['currency'], g['realized_cost_units']])).toEqual([
      ['USD', 30],
      ['EUR', 7],
    ]);
    // Read with the capability's own token: the series holds this capability's spend only.
    const spend = await stack.http('GET', '/v1/spend?bucket=day', undefined, {
      authorization: `Bearer ${cap['token'] as string}`,
    });
    expect(spend.status).toBe(200);
    const byCurrency = new Map<string, number>();
    for (const b of spend.body['series'] as Json[])
      byCurrency.set(b['currency'], (byCurrency.get(b['currency']) ?? 0) + Number(b['realized_units']));
    expect(Object.fromEntries(byCurrency)).toEqual({ USD: 30, EUR: 7 });
  }, 120_000);
});

describe('audit is a replay (ADR 0043)', () => {
  it('B19 a replay of the stream rebuilds the same usage, overruns included, and the same signed receipts', async () => {
    const live = await liveDatabase(stack);
    const replayed = await rebuildIntoEmptyDatabase(stack);
    try {
      await waitForLiveCheckpoint(live, stack.names.budgetEventsStream, replayed.checkpoint, 60_000);
      const comparison = await compareWithLive(live, replayed.dataSource);
      expect(comparison).toMatchObject({ usageEqual: true, receiptsEqual: true, digestEqual: true });
      expect(comparison.resigned).toBe(comparison.receipts);
      // The one overrun of this stack (206 on the first capability's only grant), rebuilt from its event.
      const rows = await replayed.dataSource.manager.find(UsageRow);
      expect(rows.reduce((n, r) => n + r.overrunCostUnits, 0n)).toBe(206n);
    } finally {
      await replayed.dispose();
      await live.destroy();
    }
  }, 180_000);
});
