// Proves that a webhook alert survives a crash of the authority (issue 11): a replica SIGKILLed
// after a threshold was crossed but before the alert went out, and one SIGKILLed in the middle
// of the call, both leave the alert to the next replica, which delivers it under the same
// webhook-id; a receiver that dedupes by that id counts exactly one logical alert.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { admitPayload, AuthorityStack, eventually, type Json } from './support/authority-stack.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const GRANT = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: 100, currency: 'USD' };

let stack: AuthorityStack;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  stack = await AuthorityStack.create('bhookkill', {
    env: {
      TALLY__WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'true',
      TALLY__WEBHOOKS__TIMEOUT_MS: '1500',
      TALLY__WEBHOOKS__RETRY_BASE_MS: '200',
    },
  });
}, 120_000);
afterAll(async () => {
  await stack?.dispose();
  await receiver?.stop();
}, 120_000);

async function register(path: string): Promise<Json> {
  const url = `${receiver.url}${path}`;
  const created = await stack.ok('POST', '/v1/tenants/default/webhooks', { url, events: ['budget.threshold_crossed'] });
  receiver.secret(path, created['secret'] as string);
  return created;
}

async function crossThreshold(label: string): Promise<Json> {
  const cap = await stack.issue([{ ...GRANT, max_total_cost_units: 100, alert_at_percent: [50] }]);
  const admitted = await stack.admit(admitPayload(cap['token'], label, 'standalone', { requested_cost: 60 }));
  expect(admitted['verdict']).toBe('allow');
  return cap;
}

/** One endpoint's attempts at one message (every endpoint that asked for the type gets the same message). */
async function attemptsOf(webhookId: string, endpoint: Json): Promise<Json[]> {
  const body = await stack.ok('GET', `/v1/tenants/default/webhooks/attempts?webhook_id=${webhookId}`);
  return (body['attempts'] as Json[]).filter((a) => a['endpoint_id'] === endpoint['id']);
}

describe('webhook alerts survive a SIGKILLed authority (issue 11)', () => {
  it('Issue 11: an authority SIGKILLed between crossing a threshold and delivering the alert still delivers it exactly once, under one webhook-id', async () => {
    // This replica records the crossing but does not deliver, so it dies with the alert unsent.
    const recorder = await stack.start({ TALLY__WEBHOOKS__DELIVER: 'false' });
    const endpoint = await register('/after-crash');
    const cap = await crossThreshold('before-kill');
    // The admission's answer means its commit, the crossing with it, is in the ledger.
    await recorder.stop('SIGKILL');
    expect(receiver.callsTo('/after-crash')).toHaveLength(0);

    await stack.start();
    await eventually(
      async () => receiver.callsTo('/after-crash').length,
      (n) => n >= 1,
      60_000,
      'the alert',
    );
    const [call] = receiver.callsTo('/after-crash');
    expect(call!.verified).toBe(true);
    expect(JSON.parse(call!.body)).toMatchObject({
      type: 'budget.threshold_crossed',
      data: { capability_id: cap['id'], percent: 50 },
    });
    // Nothing comes again: one call, one logical alert.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(receiver.callsTo('/after-crash')).toHaveLength(1);
    expect(await attemptsOf(call!.id, endpoint)).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'delivered' }),
    ]);
  }, 180_000);

  it('Issue 11: an authority SIGKILLed in the middle of the call leaves the alert to the next replica, which sends it again under the same webhook-id; the receiver dedupes to one logical alert', async () => {
    receiver.script('/mid-call', ['hang']);
    const endpoint = await register('/mid-call');
    await crossThreshold('mid-call');
    await eventually(
      async () => receiver.callsTo('/mid-call').length,
      (n) => n >= 1,
      60_000,
      'the first call',
    );
    for (const p of stack.processes) await p.stop('SIGKILL');

    await stack.start();
    await eventually(
      async () => receiver.callsTo('/mid-call').length,
      (n) => n >= 2,
      90_000,
      'the call again',
    );
    const calls = receiver.callsTo('/mid-call');
    expect(calls).toHaveLength(2);
    expect(calls[1]!.id).toBe(calls[0]!.id);
    expect(calls.every((c) => c.verified)).toBe(true);
    expect(calls[1]!.body).toBe(calls[0]!.body);
    expect([...receiver.delivered].filter((id) => id === calls[0]!.id)).toHaveLength(1);
    // The killed replica never recorded its call; the next one's is the second delivery of the message.
    const recorded = await eventually(
      () => attemptsOf(calls[0]!.id, endpoint),
      (a) => a.length >= 1,
      30_000,
      'the recorded delivery',
    );
    expect(recorded).toEqual([expect.objectContaining({ attempt: 2, outcome: 'delivered', status: 204 })]);
  }, 180_000);
});
