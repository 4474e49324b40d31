// Proves tenant webhooks (issue 11, http-api.md Spend policy) on two real authority replicas and
// a real local receiver that verifies every call with standardwebhooks: registration by an admin
// or an issuer of the tenant with the secret shown once and never stored; a threshold alert
// delivered through the durable outbox to a receiver that fails, hangs and restarts, under one
// webhook-id, each attempt recorded and made by one replica; and messages that never get a 2xx
// (a failing endpoint, a redirect that is not followed) dead-lettered where the tenant lists them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { sharedNatsUrl } from '@tally/testing';
import { admitPayload, AuthorityStack, eventually, holdIdOf, type Json } from './support/authority-stack.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const GRANT = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: 100, currency: 'USD' };
const ENV = {
  TALLY__WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'true',
  TALLY__WEBHOOKS__TIMEOUT_MS: '1500',
  TALLY__WEBHOOKS__ATTEMPTS_MAX: '5',
  TALLY__WEBHOOKS__RETRY_BASE_MS: '200',
  TALLY__WEBHOOKS__RETRY_MAX_MS: '1000',
  // Holds expire within seconds, so an uncaptured hold becomes hold.expired during the run.
  TALLY__AUTHORITY__HOLD_TTL_MS: '2000',
  TALLY__AUTHORITY__EXPIRY_INTERVAL_MS: '500',
  LOG_LEVEL: 'debug',
};

let stack: AuthorityStack;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  stack = await AuthorityStack.create('bhooks', { env: ENV });
  await Promise.all([stack.start(), stack.start()]);
}, 240_000);
afterAll(async () => {
  await stack?.dispose();
  await receiver?.stop();
}, 120_000);

async function register(path: string, events: string[], tenant = 'default'): Promise<Json> {
  const created = await stack.ok('POST', `/v1/tenants/${tenant}/webhooks`, { url: `${receiver.url}${path}`, events });
  receiver.secret(path, created['secret'] as string);
  return created;
}

async function as(key: string, method: string, path: string, body?: unknown) {
  return stack.http(method, path, body, { authorization: `Bearer ${key}` });
}

async function keyOf(tenant: string, role: string): Promise<string> {
  return (await stack.ok('POST', `/v1/tenants/${tenant}/keys`, { role }))['key'] as string;
}

async function attempts(webhookId: string): Promise<Json[]> {
  const body = await stack.ok('GET', `/v1/tenants/default/webhooks/attempts?webhook_id=${webhookId}`);
  return body['attempts'] as Json[];
}

describe('tenant webhooks (issue 11)', () => {
  it('Issue 11: an admin or an issuer of the tenant registers a webhook and sees its secret once; it is never stored or logged; bad urls and events are refused by field; another tenant gets a 404', async () => {
    await stack.ok('POST', '/v1/tenants', { id: 'acme' });
    await stack.ok('POST', '/v1/tenants', { id: 'rival' });
    const issuer = await keyOf('acme', 'issuer');
    const reader = await keyOf('acme', 'reader');
    const rival = await keyOf('rival', 'issuer');
    const body = { url: 'https://hooks.example.com/tally', events: ['budget.threshold_crossed', 'capability.revoked'] };
    const created = await as(issuer, 'POST', '/v1/tenants/acme/webhooks', body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ url: body.url, events: body.events });
    expect(created.body['id']).toMatch(/^wh_[0-9a-f]{16}$/);
    const secret = created.body['secret'] as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const listed = await as(reader, 'GET', '/v1/tenants/acme/webhooks');
    expect(listed.status).toBe(200);
    expect(listed.body['webhooks']).toEqual([expect.objectContaining({ id: created.body['id'], url: body.url })]);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect((await as(reader, 'POST', '/v1/tenants/acme/webhooks', body)).status).toBe(403);
    expect((await as(rival, 'POST', '/v1/tenants/acme/webhooks', body)).status).toBe(404);
    expect((await as(rival, 'GET', '/v1/tenants/acme/webhooks')).status).toBe(404);
    expect((await stack.http('POST', '/v1/tenants/nobody/webhooks', body)).status).toBe(404);

    const plain = await as(issuer, 'POST', '/v1/tenants/acme/webhooks', { ...body, url: 'http://hooks.example.com/x' });
    expect(plain.status).toBe(400);
    expect(plain.body['errors']).toEqual([expect.objectContaining({ field: 'url' })]);
    const creds = await as(issuer, 'POST', '/v1/tenants/acme/webhooks', {
      ...body,
      url: 'https://u:p@hooks.example.com',
    });
    expect(creds.body['errors']).toEqual([expect.objectContaining({ field: 'url' })]);
    const unknown = await as(issuer, 'POST', '/v1/tenants/acme/webhooks', { ...body, events: ['budget.spent'] });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body['errors'])).toContain('events');

    // The secret is derived, never recorded: not in any stream message, not in any log line.
    expect(await streamText(`${stack.names.namespace.toUpperCase().replace(/-/g, '_')}_WEBHOOK_EVENTS`)).not.toContain(
      secret.slice(6),
    );
    for (const p of stack.processes) expect(p.logs()).not.toContain(secret.slice(6));
    expect((await as(issuer, 'DELETE', `/v1/tenants/acme/webhooks/${created.body['id']}`)).status).toBe(204);
    expect((await as(reader, 'GET', '/v1/tenants/acme/webhooks')).body['webhooks']).toEqual([]);
  }, 120_000);

  it('Issue 11: a threshold alert reaches a receiver that fails, hangs and restarts: one webhook-id on every attempt, each signed per Standard Webhooks, retried with backoff by one replica at a time, recorded, and delivered once', async () => {
    const hook = await register('/flaky', ['budget.threshold_crossed']);
    receiver.script('/flaky', ['fail', 'hang']);
    const cap = await stack.issue([{ ...GRANT, max_total_cost_units: 100, alert_at_percent: [50] }]);
    const admitted = await stack.admit(admitPayload(cap['token'], 'crossing', 'standalone', { requested_cost: 60 }));
    expect(admitted['verdict']).toBe('allow');

    // The hang ends at the call's timeout; then the receiver goes away and calls are refused.
    await eventually(
      async () => receiver.callsTo('/flaky').length,
      (n) => n >= 2,
      60_000,
      'the hanging call',
    );
    const id = receiver.callsTo('/flaky')[0]!.id;
    await eventually(
      () => attempts(id),
      (a) => a.length >= 2,
      30_000,
      'the timed-out call',
    );
    await receiver.stop();
    await eventually(
      () => attempts(id),
      (a) => a.some((x) => x['error'] === 'connection_refused'),
      60_000,
      'a refused call',
    );
    await receiver.start();
    await eventually(async () => receiver.delivered.has(id), Boolean, 60_000, 'the delivery');

    const calls = receiver.callsTo('/flaky');
    expect(new Set(calls.map((c) => c.id))).toEqual(new Set([id]));
    expect(calls.every((c) => c.verified)).toBe(true);
    expect(calls.map((c) => c.body)).toEqual(calls.map(() => calls[0]!.body));
    const body = JSON.parse(calls[0]!.body) as Json;
    expect(body).toMatchObject({
      type: 'budget.threshold_crossed',
      data: { tenant_id: 'default', capability_id: cap['id'], grant_index: 0, percent: 50, limit_units: 100 },
    });
    expect(Date.parse(body['timestamp'])).toBeGreaterThan(0);
    expect(calls[1]!.atMs - calls[0]!.atMs).toBeLessThan(5_000);

    const recorded = await eventually(
      () => attempts(id),
      (a) => a.some((x) => x['outcome'] === 'delivered'),
      30_000,
      'the recorded delivery',
    );
    // Attempts are numbered 1, 2, 3 … with no number twice: one replica made each call.
    expect(recorded.map((a) => a['attempt'])).toEqual(recorded.map((_, i) => i + 1));
    expect(recorded[0]).toMatchObject({ outcome: 'failed', status: 500, endpoint_id: hook['id'] });
    expect(recorded[1]).toMatchObject({ outcome: 'failed', error: 'timeout' });
    expect(recorded.at(-1)).toMatchObject({ outcome: 'delivered', status: 204 });
    expect(recorded.slice(0, -1).every((a) => a['retry_in_ms'] > 0)).toBe(true);
    expect(JSON.stringify(recorded)).not.toContain('a body Tally must not keep');
    // The tries are counted in the delivery series of the replicas that made them.
    const metrics = (
      await Promise.all(stack.processes.map(async (p) => (await fetch(`${p.metricsUrl}/metrics`)).text()))
    ).join('\n');
    expect(sumOf(metrics, 'tally_webhook_deliveries_total', 'outcome="delivered"')).toBeGreaterThanOrEqual(1);
    expect(sumOf(metrics, 'tally_webhook_delivery_failures_total', 'reason="status_5xx"')).toBeGreaterThanOrEqual(1);
    expect(sumOf(metrics, 'tally_webhook_delivery_failures_total', 'reason="timeout"')).toBeGreaterThanOrEqual(1);
    // The alert never comes again.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(receiver.callsTo('/flaky').filter((c) => c.behaviour === 'ok')).toHaveLength(1);
  }, 180_000);

  it('Issue 11: a message that never gets a 2xx (an endpoint that keeps failing, a redirect that is not followed) is dead-lettered after attempts_max and listed for the tenant', async () => {
    receiver.script('/down', Array(10).fill('fail'));
    receiver.script('/moved', Array(10).fill('redirect'));
    const down = await register('/down', ['budget.exhausted']);
    const moved = await register('/moved', ['budget.exhausted']);
    // Alerts (exhaustion among them) are sent for grants that ask for them with alert_at_percent.
    const cap = await stack.issue([{ ...GRANT, max_total_cost_units: 50, alert_at_percent: [90] }]);
    const admitted = await stack.admit(admitPayload(cap['token'], 'exhaust', 'standalone', { requested_cost: 50 }));
    expect(admitted['verdict']).toBe('allow');
    const dead = await eventually(
      async () =>
        ((await stack.ok('GET', '/v1/tenants/default/webhooks/dead-letters'))['dead_letters'] as Json[]).filter(
          (d) => d['type'] === 'budget.exhausted',
        ),
      (d) => d.length === 2,
      90_000,
      'two dead letters',
    );
    const byEndpoint = new Map(dead.map((d) => [d['endpoint_id'], d]));
    expect(byEndpoint.get(down['id'])).toMatchObject({
      reason: 'attempts_exhausted',
      attempts: 5,
      last_error: 'http_5xx',
    });
    expect(byEndpoint.get(moved['id'])).toMatchObject({
      reason: 'attempts_exhausted',
      attempts: 5,
      last_error: 'redirect',
    });
    expect(JSON.parse(byEndpoint.get(down['id'])!['body'] as string)).toMatchObject({
      type: 'budget.exhausted',
      data: { capability_id: cap['id'] },
    });
    expect(receiver.callsTo('/down')).toHaveLength(5);
    expect(receiver.callsTo('/moved')).toHaveLength(5);
    expect(receiver.callsTo('/redirected')).toHaveLength(0);
  }, 180_000);
});

describe('the other tenant webhook events (issue 11)', () => {
  it('Issue 11: an uncaptured hold that expires is sent as hold.expired and a revocation as capability.revoked, each signed, to the endpoint that asked for them', async () => {
    await register('/lifecycle', ['hold.expired', 'capability.revoked']);
    const cap = await stack.issue([{ ...GRANT, max_total_cost_units: 1000 }]);
    // An admission stalled at the (test-only) admission hook leaves its hold uncaptured until it expires.
    await stack.faults({ hook: { block: true } });
    const stalled = stack.admit(admitPayload(cap['token'], 'left-open', 'standalone', { requested_cost: 5 }));
    const holdId = holdIdOf('left-open', cap['id'] as string);
    const expired = await eventually(
      async () => receiver.callsTo('/lifecycle').map((c) => JSON.parse(c.body) as Json),
      (bodies) => bodies.some((b) => b['type'] === 'hold.expired' && b['data']['hold_id'] === holdId),
      60_000,
      'hold.expired',
    );
    expect(expired.find((b) => b['type'] === 'hold.expired')!['data']).toMatchObject({
      tenant_id: 'default',
      capability_id: cap['id'],
      grant_index: 0,
    });
    await stack.faults({ hook: { block: false } });
    expect((await stalled)['verdict']).toBe('deny');
    await stack.ok('POST', `/v1/capabilities/${cap['id']}/revoke`);
    const revoked = await eventually(
      async () => receiver.callsTo('/lifecycle').map((c) => JSON.parse(c.body) as Json),
      (bodies) => bodies.some((b) => b['type'] === 'capability.revoked'),
      60_000,
      'capability.revoked',
    );
    expect(revoked.find((b) => b['type'] === 'capability.revoked')!['data']).toMatchObject({
      capability_id: cap['id'],
      revoked_ids: [cap['id']],
    });
    expect(receiver.callsTo('/lifecycle').every((c) => c.verified)).toBe(true);
  }, 120_000);
});

describe('webhooks are per tenant (issue 11)', () => {
  it("Issue 11: a tenant's endpoint hears its own tenant's alerts and no other tenant's", async () => {
    await stack.ok('POST', '/v1/tenants', { id: 'globex' });
    await register('/globex', ['budget.threshold_crossed'], 'globex');
    await register('/default-tenant', ['budget.threshold_crossed']);
    const grant = { ...GRANT, max_total_cost_units: 100, alert_at_percent: [10] };
    const theirs = await stack.issue([grant], { tenant_id: 'globex' });
    const others = await stack.issue([grant]);
    for (const [cap, label] of [
      [others, 'default-crossing'],
      [theirs, 'globex-crossing'],
    ] as const)
      expect(
        (await stack.admit(admitPayload(cap['token'], label, 'standalone', { requested_cost: 20 })))['verdict'],
      ).toBe('allow');
    await eventually(
      async () => receiver.callsTo('/globex').length,
      (n) => n >= 1,
      60_000,
      "globex's alert",
    );
    // The default tenant's alert reached its own endpoint, so anything for globex has been sent by now.
    await eventually(
      async () => receiver.callsTo('/default-tenant').filter((c) => c.body.includes(others['id'] as string)).length,
      (n) => n >= 1,
      60_000,
      "the default tenant's alert",
    );
    const bodies = receiver.callsTo('/globex').map((c) => JSON.parse(c.body) as Json);
    expect(bodies).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ tenant_id: 'globex', capability_id: theirs['id'] }) }),
    ]);
    expect(receiver.callsTo('/globex')[0]!.verified).toBe(true);
    expect(receiver.callsTo('/default-tenant').some((c) => c.body.includes(theirs['id'] as string))).toBe(false);
  }, 120_000);
});

/** The sum of a Prometheus series' samples whose labels include `label`. */
function sumOf(text: string, name: string, label: string): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(label))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** Every message of a stream as text, to prove what it does not hold. */
async function streamText(stream: string): Promise<string> {
  const nc = await connect({ servers: sharedNatsUrl(), timeout: 5_000 });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    const parts: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const msg = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (msg) parts.push(Buffer.from(msg.data).toString('utf8'));
    }
    return parts.join('\n');
  } finally {
    await nc.close();
  }
}
